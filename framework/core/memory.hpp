#pragma once
// Memory accounting. Every byte a tensor holds is counted under one category on its device, live
// and at its peak, so a user sees what training costs and where: parameters, their gradients,
// optimizer state, activations kept for backward, temporaries, and data (datasets and batches).

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "device.hpp"
#include "non_copyable.hpp"

namespace accrue {

enum class MemoryCategory : std::uint8_t { parameters, gradients, optimizer_state, activations, temporaries, data };
inline constexpr int memory_category_count = 6;

/// "parameters", "gradients", "optimizer_state", "activations", "temporaries", "data".
std::string_view category_name(MemoryCategory c);
/// Every category's name, in the order of MemoryCategory (and of MemoryStats' arrays).
std::array<std::string_view, memory_category_count> category_names();

struct MemoryStats {
  std::array<std::size_t, memory_category_count> live{};
  /// Peak of each category on its own since the last reset_peak().
  std::array<std::size_t, memory_category_count> peak{};
  std::size_t live_total = 0;
  /// Peak of the sum of all categories since the last reset_peak().
  std::size_t peak_total = 0;
  /// Bytes the allocator holds from the system, live or cached for reuse.
  std::size_t reserved = 0;
  /// Allocation limit in bytes; 0 when there is none.
  std::size_t limit = 0;

  std::size_t live_of(MemoryCategory c) const { return live[static_cast<int>(c)]; }
  std::size_t peak_of(MemoryCategory c) const { return peak[static_cast<int>(c)]; }
  /// One line per category: live and peak.
  std::string str() const;
};

inline std::ostream& operator<<(std::ostream& os, MemoryCategory c) { return os << category_name(c); }

/// The highest point of live memory over an interval, and what each category held then: the
/// parts sum to the total, so they stack (a memory timeline).
struct MemoryPeak {
  std::size_t total = 0;
  std::array<std::size_t, memory_category_count> parts{};
};

/// "1.53 MiB": bytes in binary units, as summary() and the memory reports print them.
std::string format_bytes(std::size_t bytes);
/// "669,706": a count with thousands separators, as summary() and the progress banner print them.
std::string format_count(std::int64_t n);

/// Hands out device memory and keeps the accounting. One allocator per device, shared by every
/// tensor on it; thread-safe.
class Allocator : NonCopyable {
 public:
  explicit Allocator(Device device) : device_(device) {}
  virtual ~Allocator() = default;

  Device device() const { return device_; }
  /// `bytes` of storage aligned to 64 bytes, counted under `category`. Throws OutOfMemory when a
  /// limit is set and the live total would pass it, or when the system refuses.
  void* allocate(std::size_t bytes, MemoryCategory category);
  void deallocate(void* ptr, std::size_t bytes, MemoryCategory category) noexcept;
  /// Moves `bytes` of live memory from one category to another (a temporary kept for backward
  /// becomes an activation).
  void recategorize(std::size_t bytes, MemoryCategory from, MemoryCategory to) noexcept;

  MemoryStats stats() const;
  /// Starts the peaks again from the live values.
  void reset_peak();
  /// The highest point since the previous call (or since the allocator began), then starts the
  /// next interval from what is live now. Independent of reset_peak(); for one observer per device
  /// (callbacks::Report samples it at every micro-batch).
  MemoryPeak take_interval_peak();
  /// Caps the live total at `bytes` (0 removes the cap).
  void set_limit(std::size_t bytes);
  /// Returns cached, unused blocks to the system.
  void empty_cache();

 protected:
  /// nullptr when the system has no memory to give.
  virtual void* raw_allocate(std::size_t bytes) = 0;
  virtual void raw_deallocate(void* ptr, std::size_t bytes) noexcept = 0;
  virtual std::size_t reserved_bytes() const = 0;
  virtual void release_cached() noexcept = 0;
  /// What the system could still give, for the message when it refuses; none when unknown.
  virtual std::optional<std::size_t> system_available() const { return std::nullopt; }

 private:
  void add_live(MemoryCategory c, std::size_t bytes);

  Device device_;
  mutable std::mutex mutex_;
  MemoryStats stats_;
  MemoryPeak interval_;
};

/// Host memory this process can still take without the kernel's out-of-memory killer ending it:
/// MemAvailable of /proc/meminfo, or less where a control group on the way from the process's own
/// up to the root has a limit (cgroup v2 memory.max less memory.current, v1 memory.limit_in_bytes
/// less memory.usage_in_bytes; the least of them). None where neither can be read.
std::optional<std::size_t> available_system_memory();

/// Throws IoError "<what> needs 8.00 GiB once read; this process may take 1.50 GiB more" when
/// `bytes` exceed available_system_memory(), or what is left of the CPU's memory limit
/// (set_memory_limit, ACCRUE_MEMORY_LIMIT) when that is less. Readers call it with the total a file asks for before
/// allocating any of it: a file of a few bytes can claim gigabytes, and the kernel would end the
/// process when the pages are filled rather than refuse the allocation.
void require_memory_for_file(std::size_t bytes, std::string_view what);

namespace detail {
/// available_system_memory's reading of the control groups: `proc_self_cgroup` is
/// /proc/self/cgroup's text, `root` where the hierarchies are mounted (/sys/fs/cgroup).
std::optional<std::size_t> cgroup_room(std::string_view proc_self_cgroup, const std::string& root);
}  // namespace detail

/// While one lives, an allocation on this thread larger than `bytes`, or one that takes the bytes
/// allocated on this thread since it began past `total`, fails at once with OutOfMemory saying
/// `why`, whatever the memory free (0: no bound). load_model builds the model a file describes
/// under the size of the file's largest tensor and a small multiple of all of them: a damaged
/// description (2,000 layers of 4 MiB for 8 GiB) cannot make it take memory that the weights it
/// must match never need.
class AllocationCeiling : NonCopyable {
 public:
  AllocationCeiling(std::size_t bytes, std::size_t total, std::string why);
  ~AllocationCeiling();

 private:
  std::size_t previous_bytes_, previous_total_, previous_taken_;
  std::string previous_why_;
};

/// The allocator of `device`. Throws DeviceError for a device without a backend in this build.
Allocator& allocator(Device device);

/// Shorthands for `allocator(device).stats()`, `.reset_peak()` and `.set_limit(bytes)`.
MemoryStats memory_stats(Device device = Device::cpu());
void reset_peak_memory(Device device = Device::cpu());
void set_memory_limit(Device device, std::size_t bytes);

/// "512MiB", "1.5 GiB", "200MB", "2G", "1048576": a number of bytes with an optional unit (KiB,
/// MiB, GiB, TiB and K, M, G, T are powers of 1024; KB, MB, GB, TB of 1000; B or none is bytes).
/// Throws ValueError naming the text.
std::size_t parse_byte_size(std::string_view text);

/// The limit ACCRUE_MEMORY_LIMIT sets for the device named `device` ("cpu", "cuda:0"), if any:
/// one size for every device ("512MiB"), or a list of device=size ("cpu=512MiB,cuda:0=8GiB";
/// "cuda=" for every GPU, where "cuda:N=" wins for GPU N; a device named twice is an error). The allocator of a device applies it when first used. Throws
/// ValueError naming the variable.
std::optional<std::size_t> env_memory_limit(std::string_view device);

}  // namespace accrue
