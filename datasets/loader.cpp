#include "accrue/datasets/loader.hpp"

#include <numeric>
#include <span>

#include "accrue/framework/random.hpp"

namespace accrue {
namespace {
// SplitMix64: spreads (seed, epoch) over the whole seed space, so nearby seeds and epochs give
// unrelated permutations.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

DataLoader::DataLoader(Dataset dataset, LoaderOptions options) : dataset_(std::move(dataset)), options_(options) {
  ACCRUE_CHECK(options_.batch_size >= 1, "DataLoader: batch_size must be at least 1, got {}", options_.batch_size);
  set_epoch(0);
}

std::int64_t DataLoader::size() const {
  const std::int64_t n = dataset_.size(), b = options_.batch_size;
  return options_.drop_last ? n / b : ceil_div(n, b);
}

void DataLoader::set_epoch(std::int64_t epoch) {
  epoch_ = epoch;
  if (!options_.shuffle) return;
  order_.resize(static_cast<std::size_t>(dataset_.size()));
  std::iota(order_.begin(), order_.end(), 0);
  Generator gen{mix(options_.seed ^ mix(static_cast<std::uint64_t>(epoch)))};
  for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[gen.below(i)]);
}

Batch DataLoader::operator[](std::int64_t i) const {
  ACCRUE_CHECK(i >= 0 && i < size(), "DataLoader: batch {} is outside [0, {})", i, size());
  const std::int64_t begin = i * options_.batch_size;
  const std::int64_t end = begin + std::min(options_.batch_size, dataset_.size() - begin);
  const Example e = options_.shuffle
                        ? dataset_.gather(std::span<const std::int64_t>(order_).subspan(
                              static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin)))
                        : dataset_.slice(begin, end);
  return Batch{e.inputs, e.targets, i};
}

}  // namespace accrue
