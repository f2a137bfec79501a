#include "accrue/framework/memory.hpp"

#include <fmt/format.h>

#include "accrue/config.hpp"
#include "accrue/framework/cpu_allocator.hpp"
#if ACCRUE_WITH_CUDA
#include "accrue/framework/cuda_allocator.hpp"
#endif
#include "accrue/framework/error.hpp"

namespace accrue {

std::string_view category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::parameters: return "parameters";
    case MemoryCategory::gradients: return "gradients";
    case MemoryCategory::optimizer_state: return "optimizer_state";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::temporaries: return "temporaries";
    case MemoryCategory::data: return "data";
  }
  return "?";
}

std::string format_bytes(std::size_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", value, units[unit]);
}

std::string format_count(std::int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string MemoryStats::str() const {
  std::string out;
  for (int i = 0; i < memory_category_count; ++i) {
    out += fmt::format("  {:<16} live {:>12}  peak {:>12}\n", category_name(static_cast<MemoryCategory>(i)),
                       format_bytes(live[i]), format_bytes(peak[i]));
  }
  out += fmt::format("  {:<16} live {:>12}  peak {:>12}", "total", format_bytes(live_total), format_bytes(peak_total));
  if (limit != 0) out += fmt::format("  (limit {})", format_bytes(limit));
  return out;
}

void Allocator::add_live(MemoryCategory c, std::size_t bytes) {
  const int i = static_cast<int>(c);
  stats_.live[i] += bytes;
  stats_.live_total += bytes;
  if (stats_.live[i] > stats_.peak[i]) stats_.peak[i] = stats_.live[i];
  if (stats_.live_total > stats_.peak_total) stats_.peak_total = stats_.live_total;
}

void* Allocator::allocate(std::size_t bytes, MemoryCategory category) {
  std::lock_guard lock{mutex_};
  if (stats_.limit != 0 && stats_.live_total + bytes > stats_.limit) {
    throw OutOfMemory(fmt::format("out of memory on {}: allocating {} ({}) would pass the limit of {} with {} live:\n{}",
                                  device_, format_bytes(bytes), category_name(category), format_bytes(stats_.limit),
                                  format_bytes(stats_.live_total), stats_.str()));
  }
  void* ptr = raw_allocate(bytes);
  if (ptr == nullptr) {
    throw OutOfMemory(fmt::format("out of memory on {}: the system refused {} ({}) with {} live:\n{}", device_,
                                  format_bytes(bytes), category_name(category), format_bytes(stats_.live_total),
                                  stats_.str()));
  }
  add_live(category, bytes);
  return ptr;
}

void Allocator::deallocate(void* ptr, std::size_t bytes, MemoryCategory category) noexcept {
  std::lock_guard lock{mutex_};
  raw_deallocate(ptr, bytes);
  stats_.live[static_cast<int>(category)] -= bytes;
  stats_.live_total -= bytes;
}

void Allocator::recategorize(std::size_t bytes, MemoryCategory from, MemoryCategory to) noexcept {
  if (from == to) return;
  std::lock_guard lock{mutex_};
  stats_.live[static_cast<int>(from)] -= bytes;
  stats_.live_total -= bytes;
  add_live(to, bytes);
}

MemoryStats Allocator::stats() const {
  std::lock_guard lock{mutex_};
  MemoryStats s = stats_;
  s.reserved = reserved_bytes();
  return s;
}

void Allocator::reset_peak() {
  std::lock_guard lock{mutex_};
  stats_.peak = stats_.live;
  stats_.peak_total = stats_.live_total;
}

void Allocator::empty_cache() {
  std::lock_guard lock{mutex_};
  release_cached();
}

void Allocator::set_limit(std::size_t bytes) {
  std::lock_guard lock{mutex_};
  stats_.limit = bytes;
}

Allocator& allocator(Device device) {
  if (device.is_cpu()) {
    static CpuAllocator cpu;
    return cpu;
  }
#if ACCRUE_WITH_CUDA
  return cuda_allocator(device.index());
#else
  throw DeviceError(fmt::format("no allocator for {}: this build of Accrue has no CUDA backend", device));
#endif
}

MemoryStats memory_stats(Device device) { return allocator(device).stats(); }
void reset_peak_memory(Device device) { allocator(device).reset_peak(); }

}  // namespace accrue
