#include "accrue/dsl/memory_plan.hpp"

namespace accrue {

std::string MemoryPlan::str() const {
  std::string out = fmt::format("Memory plan: micro-batch {} on {}, {}\n", micro_batch, device, precision);
  for (int i = 0; i < memory_category_count; ++i)
    out += fmt::format("  {:<16} {:>12}{}\n", category_name(static_cast<MemoryCategory>(i)), format_bytes(peak[i]),
                       i != static_cast<int>(MemoryCategory::data) ? std::string{}
                       : read_ahead > 0 ? fmt::format("  (the micro-batch and {} read ahead; the dataset not included)", read_ahead)
                                        : std::string{"  (one micro-batch; the dataset not included)"});
  out += fmt::format("  {:<16} {:>12}  (peak of the sum)", "total", format_bytes(peak_total));
  return out;
}

}  // namespace accrue
