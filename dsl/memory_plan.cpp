#include "memory_plan.hpp"

#include <cstdlib>

#include "../framework/distributed/reducer.hpp"

namespace accrue {

std::string MemoryPlan::str() const {
  std::string out = fmt::format("Memory plan: micro-batch {} on {}, {}\n", micro_batch, device, precision);
  for (int i = 0; i < memory_category_count; ++i)
    out += fmt::format("  {:<16} {:>12}{}\n", category_name(static_cast<MemoryCategory>(i)), format_bytes(peak[i]),
                       i != static_cast<int>(MemoryCategory::data) ? std::string{}
                       : read_ahead > 0 ? fmt::format("  (the micro-batch and {} read ahead; the dataset not included)", read_ahead)
                                        : std::string{"  (one micro-batch; the dataset not included)"});
  out += fmt::format("  {:<16} {:>12}  (peak of the sum)", "total", format_bytes(peak_total));
  if (data_parallel.processes > 1)
    out += fmt::format("\n  one process of {} (rank {}), sharding: {}; communication buffers {} of the gradients and "
                       "temporaries at most, gradients kept between windows {}",
                       data_parallel.processes, data_parallel.rank, distributed::sharding_name(reducer_sharding(data_parallel.shard, data_parallel.accumulation)),
                       format_bytes(communication), format_bytes(gradients_between_windows));
  return out;
}

}  // namespace accrue

namespace accrue {

namespace {

std::string signed_bytes(std::int64_t bytes) {
  return (bytes < 0 ? "-" : "+") + format_bytes(static_cast<std::size_t>(bytes < 0 ? -bytes : bytes));
}

// What a category's change under mixed precision is, in words.
std::string category_change(MemoryCategory c, std::int64_t delta, const std::string& dtype) {
  const std::string bytes = signed_bytes(delta);
  switch (c) {
    case MemoryCategory::parameters:
      return fmt::format("the {} copies of the weights kept through each window (parameters {})", dtype, bytes);
    case MemoryCategory::activations:
      return fmt::format("the activations kept for backward in {} ({})", dtype, bytes);
    case MemoryCategory::temporaries:
      return delta > 0 ? fmt::format("its {} copies of the weights and inputs for the matrix products (temporaries {})",
                                     dtype, bytes)
                       : fmt::format("smaller temporaries ({})", bytes);
    default:
      return fmt::format("{} ({})", category_name(c), bytes);
  }
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

}  // namespace

std::string PrecisionEffect::str() const {
  if (mixed.precision == float32.precision) return {};
  const std::string dtype = mixed.precision.substr(0, mixed.precision.find(' '));
  std::vector<std::string> ups, downs;
  for (int i = 0; i < memory_category_count; ++i) {
    const std::int64_t delta = static_cast<std::int64_t>(mixed.peak[i]) - static_cast<std::int64_t>(float32.peak[i]);
    if (std::abs(delta) < 1024) continue;
    (delta > 0 ? ups : downs).push_back(category_change(static_cast<MemoryCategory>(i), delta, dtype));
  }
  const std::int64_t delta = static_cast<std::int64_t>(mixed.peak_total) - static_cast<std::int64_t>(float32.peak_total);
  if (std::abs(delta) < 1024)
    return fmt::format("{} leaves the planned peak at {}: what it adds and what it saves cancel out, or nothing here "
                       "runs in {}.", mixed.precision, format_bytes(mixed.peak_total), dtype);
  const std::string head = fmt::format("{} {} the planned peak from {} to {} ({})", mixed.precision,
                                       delta > 0 ? "raises" : "lowers", format_bytes(float32.peak_total),
                                       format_bytes(mixed.peak_total), signed_bytes(delta));
  const std::vector<std::string>& more = delta > 0 ? ups : downs;
  const std::vector<std::string>& less = delta > 0 ? downs : ups;
  if (more.empty()) return head + ".";
  if (less.empty()) return fmt::format("{}: {}.", head, joined(more));
  return fmt::format("{}: {} outweigh {}.", head, joined(more), joined(less));
}

}  // namespace accrue
