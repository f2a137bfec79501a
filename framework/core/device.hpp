#pragma once
// Where tensors live and kernels run.

#include <fmt/format.h>

#include "printable.hpp"

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace accrue {

enum class DeviceKind : std::uint8_t { cpu, cuda };

class Device {
 public:
  /// The host processor. Always available.
  static Device cpu() { return Device{DeviceKind::cpu, 0}; }
  /// The CUDA device `index`. Throws DeviceError when this build has no CUDA backend, when no
  /// driver or GPU is present, or when `index` is out of range, saying which.
  static Device cuda(int index = 0);
  /// cuda:0 when a usable GPU exists, else the CPU; the fallback is logged once per process.
  static Device best();
  /// Number of usable CUDA devices (0 without a CUDA backend, driver or GPU).
  static int cuda_device_count();
  /// "cpu", "cuda", "cuda:N", or "best" (also "auto"), as a command line spells a device.
  /// Throws ValueError for other text, DeviceError for a GPU that is not there.
  static Device parse(std::string_view text);

  DeviceKind kind() const { return kind_; }
  int index() const { return index_; }
  bool is_cpu() const { return kind_ == DeviceKind::cpu; }
  bool is_cuda() const { return kind_ == DeviceKind::cuda; }
  /// "cpu" or "cuda:0".
  std::string str() const;

  friend bool operator==(const Device&, const Device&) = default;

 private:
  Device(DeviceKind kind, int index) : kind_(kind), index_(index) {}
  DeviceKind kind_;
  int index_;
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace accrue

template <>
struct fmt::formatter<accrue::Device> : accrue::StrFormatter<accrue::Device> {};
