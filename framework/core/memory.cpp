#include "memory.hpp"

#include <utility>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <array>
#include <mutex>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "error.hpp"

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

std::array<std::string_view, memory_category_count> category_names() {
  std::array<std::string_view, memory_category_count> names{};
  for (int c = 0; c < memory_category_count; ++c)
    names[static_cast<std::size_t>(c)] = category_name(static_cast<MemoryCategory>(c));
  return names;
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

namespace {

// The first number of the line of `file` that starts with `key` (meminfo's "MemAvailable:"), or
// the file's first number when `key` is empty; "max" (no limit) and a missing file give none.
std::optional<std::size_t> read_number(const std::string& file, std::string_view key = {}) {
  std::FILE* f = std::fopen(file.c_str(), "r");
  if (f == nullptr) return std::nullopt;
  char line[256];
  std::optional<std::size_t> out;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    const std::string_view l{line};
    if (!l.starts_with(key)) continue;
    const char* digits = line + key.size();
    while (*digits == ' ') ++digits;
    if (std::isdigit(static_cast<unsigned char>(*digits)) != 0) out = std::strtoull(digits, nullptr, 10);
    break;
  }
  std::fclose(f);
  return out;
}

// The room left under one hierarchy's groups: from the process's own group up to the hierarchy's
// root, each group that has both files giving its limit less its usage; the least of them. A limit
// on a parent binds its children too (cgroup v2's memory.max, v1 with use_hierarchy), and a
// container that sees the host's path of its group (v1 without a cgroup namespace) finds no folder
// there, so the walk reaches the group mounted at the root.
std::optional<std::size_t> room_up_from(const std::string& mount, std::string group, const char* limit_file,
                                        const char* usage_file) {
  std::optional<std::size_t> room;
  for (;;) {
    const std::string folder = mount + (group == "/" ? "" : group);
    const std::optional<std::size_t> l = read_number(folder + "/" + limit_file), u = read_number(folder + "/" + usage_file);
    if (l && u) room = std::min(room.value_or(SIZE_MAX), *l > *u ? *l - *u : 0);
    if (group.empty() || group == "/") return room;
    const std::size_t slash = group.find_last_of('/');
    group = slash == 0 || slash == std::string::npos ? "/" : group.substr(0, slash);
  }
}

}  // namespace

namespace detail {

std::optional<std::size_t> cgroup_room(std::string_view proc_self_cgroup, const std::string& root) {
  std::optional<std::size_t> room;
  const auto least = [&](std::optional<std::size_t> r) {
    if (r) room = std::min(room.value_or(SIZE_MAX), *r);
  };
  std::size_t at = 0;
  while (at < proc_self_cgroup.size()) {
    std::size_t end = proc_self_cgroup.find('\n', at);
    if (end == std::string_view::npos) end = proc_self_cgroup.size();
    const std::string_view line = proc_self_cgroup.substr(at, end - at);
    at = end + 1;
    // "hierarchy-id:controllers:path"; the path may hold ':' itself.
    const std::size_t a = line.find(':'), b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(a + 1, b - a - 1);
    const std::string group{line.substr(b + 1)};
    if (line.substr(0, a) == "0" && controllers.empty()) {
      // cgroup v2: mounted at the root, or at root/unified beside v1 hierarchies (hybrid).
      least(room_up_from(root, group, "memory.max", "memory.current"));
      least(room_up_from(root + "/unified", group, "memory.max", "memory.current"));
      continue;
    }
    for (std::size_t from = 0; from <= controllers.size();) {
      std::size_t comma = controllers.find(',', from);
      if (comma == std::string_view::npos) comma = controllers.size();
      if (controllers.substr(from, comma - from) == "memory")
        least(room_up_from(root + "/memory", group, "memory.limit_in_bytes", "memory.usage_in_bytes"));
      from = comma + 1;
    }
  }
  return room;
}

}  // namespace detail

namespace {

std::optional<std::size_t> cgroup_room() {
  static const std::string self = [] {  // read once: the groups do not change while Accrue runs
    std::string text;
    if (std::FILE* f = std::fopen("/proc/self/cgroup", "r")) {
      char buffer[4096];
      for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
      std::fclose(f);
    }
    return text;
  }();
  return detail::cgroup_room(self, "/sys/fs/cgroup");
}

}  // namespace

std::optional<std::size_t> available_system_memory() {
  std::optional<std::size_t> available = read_number("/proc/meminfo", "MemAvailable:");
  if (available) *available *= 1024;  // kB
  if (const std::optional<std::size_t> room = cgroup_room()) available = available ? std::min(*available, *room) : *room;
  return available;
}

void Allocator::add_live(MemoryCategory c, std::size_t bytes) {
  const int i = static_cast<int>(c);
  stats_.live[i] += bytes;
  stats_.live_total += bytes;
  if (stats_.live[i] > stats_.peak[i]) stats_.peak[i] = stats_.live[i];
  if (stats_.live_total > stats_.peak_total) stats_.peak_total = stats_.live_total;
  if (stats_.live_total > interval_.total) interval_ = {stats_.live_total, stats_.live};
}

void require_memory_for_file(std::size_t bytes, std::string_view what) {
  std::optional<std::size_t> room = available_system_memory();
  // Under a memory limit (set_memory_limit, ACCRUE_MEMORY_LIMIT) what is left of it, if less.
  const MemoryStats cpu = allocator(Device::cpu()).stats();
  const bool capped = cpu.limit != 0 && (!room || cpu.limit - std::min(cpu.limit, cpu.live_total) < *room);
  if (capped) room = cpu.limit - std::min(cpu.limit, cpu.live_total);
  if (room && bytes > *room)
    throw IoError(fmt::format("{} needs {} once read; this process may take {} more{}", what, format_bytes(bytes),
                              format_bytes(*room), capped ? fmt::format(" under its memory limit of {}", format_bytes(cpu.limit)) : ""));
}

namespace {
// AllocationCeiling's: 0 for none.
thread_local std::size_t ceiling_bytes = 0, ceiling_total = 0, ceiling_taken = 0;
thread_local std::string ceiling_why;
}  // namespace

AllocationCeiling::AllocationCeiling(std::size_t bytes, std::size_t total, std::string why)
    : previous_bytes_(ceiling_bytes),
      previous_total_(ceiling_total),
      previous_taken_(ceiling_taken),
      previous_why_(std::move(ceiling_why)) {
  ceiling_bytes = bytes;
  ceiling_total = total;
  ceiling_taken = 0;
  ceiling_why = std::move(why);
}

AllocationCeiling::~AllocationCeiling() {
  ceiling_bytes = previous_bytes_;
  ceiling_total = previous_total_;
  ceiling_taken = previous_taken_;
  ceiling_why = std::move(previous_why_);
}

void* Allocator::allocate(std::size_t bytes, MemoryCategory category) {
  if (ceiling_bytes != 0 && bytes > ceiling_bytes)
    throw OutOfMemory(fmt::format("allocating {} ({}) on {}: more than the {} allowed {}", format_bytes(bytes),
                                  category_name(category), device_, format_bytes(ceiling_bytes), ceiling_why));
  if (ceiling_total != 0 && bytes > ceiling_total - std::min(ceiling_total, ceiling_taken))
    throw OutOfMemory(fmt::format("allocating {} ({}) on {} after {}: more than the {} in all allowed {}",
                                  format_bytes(bytes), category_name(category), device_, format_bytes(ceiling_taken),
                                  format_bytes(ceiling_total), ceiling_why));
  if (ceiling_total != 0) ceiling_taken += bytes;
  std::lock_guard lock{mutex_};
  if (stats_.limit != 0 && stats_.live_total + bytes > stats_.limit) {
    throw OutOfMemory(fmt::format("out of memory on {}: allocating {} ({}) would pass the limit of {} with {} live:\n{}",
                                  device_, format_bytes(bytes), category_name(category), format_bytes(stats_.limit),
                                  format_bytes(stats_.live_total), stats_.str()));
  }
  void* ptr = raw_allocate(bytes);
  if (ptr == nullptr) {
    const std::optional<std::size_t> available = system_available();
    throw OutOfMemory(fmt::format("out of memory on {}: the system refused {} ({}) with {} live{}:\n{}", device_,
                                  format_bytes(bytes), category_name(category), format_bytes(stats_.live_total),
                                  available ? fmt::format("; the machine has {} available", format_bytes(*available))
                                            : std::string{},
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

MemoryPeak Allocator::take_interval_peak() {
  std::lock_guard lock{mutex_};
  return std::exchange(interval_, MemoryPeak{stats_.live_total, stats_.live});
}

void Allocator::empty_cache() {
  std::lock_guard lock{mutex_};
  release_cached();
}

void Allocator::set_limit(std::size_t bytes) {
  std::lock_guard lock{mutex_};
  stats_.limit = bytes;
}

std::size_t parse_byte_size(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return ValueError(fmt::format("'{}' is not a memory size ({}); write e.g. 512MiB, 1.5GiB, 200MB or 1048576", text,
                                  why));
  };
  std::size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  const std::size_t start = i;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  if (i == start) throw bad("no number");
  double value = 0;
  try {
    value = std::stod(std::string(text.substr(start, i - start)));
  } catch (const std::exception&) {
    throw bad("no number");
  }
  while (i < text.size() && text[i] == ' ') ++i;
  std::string unit;
  for (; i < text.size(); ++i)
    if (text[i] != ' ') unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else if (unit == "tb") scale = 1e12;
  else throw bad(fmt::format("unknown unit '{}'", unit));
  const double bytes = value * scale;
  if (!(bytes >= 0) || bytes > 1.8e19) throw bad("out of range");
  return static_cast<std::size_t>(bytes);
}

std::optional<std::size_t> env_memory_limit(std::string_view device) {
  const char* env = std::getenv("ACCRUE_MEMORY_LIMIT");
  if (env == nullptr || *env == '\0') return std::nullopt;
  const std::string_view text{env};
  try {
    if (text.find('=') == std::string_view::npos) return parse_byte_size(text);
    // A device's own entry (cuda:1) wins over the one for every GPU (cuda), whatever the order.
    std::optional<std::size_t> exact, every_gpu;
    std::vector<std::string_view> named;
    std::size_t pos = 0;
    while (pos <= text.size()) {
      const std::size_t comma = std::min(text.find(',', pos), text.size());
      const std::string_view item = text.substr(pos, comma - pos);
      const std::size_t eq = item.find('=');
      if (eq == std::string_view::npos) throw ValueError(fmt::format("'{}' is not device=size", item));
      const std::string_view name = item.substr(0, eq);
      if (name != "cpu" && name != "cuda" && name.substr(0, 5) != "cuda:")
        throw ValueError(fmt::format("'{}' names no device (cpu, cuda, cuda:N)", name));
      if (std::find(named.begin(), named.end(), name) != named.end())
        throw ValueError(fmt::format("{} is given more than once; give each device one limit", name));
      named.push_back(name);
      const std::size_t bytes = parse_byte_size(item.substr(eq + 1));
      if (name == device) exact = bytes;
      if (name == "cuda" && device.substr(0, 5) == "cuda:") every_gpu = bytes;
      pos = comma + 1;
    }
    return exact ? exact : every_gpu;
  } catch (Error& e) {
    e.prepend(fmt::format("ACCRUE_MEMORY_LIMIT='{}': ", text));
    throw;
  }
}

}  // namespace accrue
