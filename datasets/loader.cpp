#include "loader.hpp"

#include <limits>
#include <numeric>

#include "../framework/core/random.hpp"

namespace accrue {

DataLoader::DataLoader(Dataset dataset, LoaderOptions options) : dataset_(std::move(dataset)), options_(options) {
  ACCRUE_CHECK(options_.batch_size >= 1, "DataLoader: batch_size must be at least 1, got {}", options_.batch_size);
  ACCRUE_CHECK(options_.shards >= 1 && options_.shard >= 0 && options_.shard < options_.shards,
               "DataLoader: shard {} of {} does not exist", options_.shard, options_.shards);
  ACCRUE_CHECK(options_.batch_size <= std::numeric_limits<std::int64_t>::max() / options_.shards,
               "DataLoader: batch_size {} x {} shards overflows", options_.batch_size, options_.shards);
  set_epoch(0);
}

std::int64_t DataLoader::size() const {
  const std::int64_t n = dataset_.size(), b = options_.batch_size * options_.shards;
  return options_.drop_last ? n / b : ceil_div(n, b);
}

void DataLoader::set_epoch(std::int64_t epoch) {
  epoch_ = epoch;
  if (!options_.shuffle) return;
  order_.resize(static_cast<std::size_t>(dataset_.size()));
  std::iota(order_.begin(), order_.end(), 0);
  Generator gen{splitmix64(options_.seed ^ splitmix64(static_cast<std::uint64_t>(epoch)))};
  for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[gen.below(i)]);
}

std::pair<std::int64_t, std::int64_t> DataLoader::positions(std::int64_t i, bool all_shards) const {
  ACCRUE_CHECK(i >= 0 && i < size(), "DataLoader: batch {} is outside [0, {})", i, size());
  // This shard's part of global batch i: part `shard` of its samples split into `shards` parts.
  const std::int64_t global = options_.batch_size * options_.shards;
  const std::int64_t global_begin = i * global;
  const std::int64_t count = std::min(global, dataset_.size() - global_begin);
  if (all_shards) return {global_begin, global_begin + count};
  const auto [first, end] = shard_of_batch(count, options_.shard, options_.shards);
  return {global_begin + first, global_begin + end};
}

std::pair<std::int64_t, std::int64_t> shard_of_batch(std::int64_t count, int shard, int shards) {
  return {count * shard / shards, count * (shard + 1) / shards};
}

std::vector<std::int64_t> DataLoader::sample_indices(std::int64_t i, bool all_shards) const {
  const auto [begin, end] = positions(i, all_shards);
  std::vector<std::int64_t> out(static_cast<std::size_t>(end - begin));
  for (std::int64_t p = begin; p < end; ++p)
    out[static_cast<std::size_t>(p - begin)] = options_.shuffle ? order_[static_cast<std::size_t>(p)] : p;
  return out;
}

Batch DataLoader::operator[](std::int64_t i) const {
  const auto [begin, end] = positions(i, false);
  std::vector<std::int64_t> samples = sample_indices(i);
  Example e = options_.shuffle ? dataset_.gather(samples, context()) : dataset_.slice(begin, end, context());
  return Batch{std::move(e.inputs), std::move(e.targets), i, std::move(samples)};
}

const Tensor& Batch::input() const { return detail::only_tensor(inputs, "input"); }
const Tensor& Batch::target() const { return detail::only_tensor(targets, "target"); }

}  // namespace accrue
