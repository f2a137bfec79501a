#include "device.hpp"

#include <mutex>

#include <accrue/config.hpp>
#include "error.hpp"
#include "log.hpp"
#include "device_query.hpp"

namespace accrue {

std::string Device::str() const { return is_cpu() ? std::string{"cpu"} : fmt::format("cuda:{}", index_); }

int Device::cuda_device_count() { return kernels::cuda_device_count().count; }

Device Device::cuda(int index) {
  const auto query = kernels::cuda_device_count();
  if (query.count == 0) throw DeviceError(fmt::format("cuda:{} was asked for, but {}", index, query.reason));
  if (index < 0 || index >= query.count)
    throw DeviceError(fmt::format("cuda:{} was asked for, but this machine has {} CUDA device(s) (cuda:0..cuda:{})", index,
                                  query.count, query.count - 1));
  return Device{DeviceKind::cuda, index};
}

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "best" || text == "auto") return best();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:") && text.size() > 5) {
    int index = 0;
    for (char c : text.substr(5)) {
      if (c < '0' || c > '9' || index > 1000)
        throw ValueError(fmt::format("device '{}': expected cpu, cuda, cuda:N or best", text));
      index = index * 10 + (c - '0');
    }
    return cuda(index);
  }
  throw ValueError(fmt::format("device '{}': expected cpu, cuda, cuda:N or best", text));
}

Device Device::best() {
  const auto query = kernels::cuda_device_count();
  if (query.count > 0) return Device{DeviceKind::cuda, 0};
  static std::once_flag once;
  std::call_once(once, [&] { log::info("no usable GPU ({}); training on the CPU", query.reason); });
  return cpu();
}

}  // namespace accrue
