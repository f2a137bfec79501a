// CIFAR-10 and CIFAR-100 binary records: whole records, labels in range, and every sample read.
#include <accrue/accrue.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes{reinterpret_cast<const char*>(data), size};
  for (const bool hundred : {false, true}) {
    try {
      const accrue::Dataset d = hundred ? accrue::datasets::cifar100_records(bytes, "fuzz", (size & 1) != 0)
                                        : accrue::datasets::cifar10_records(bytes, "fuzz");
      (void)d.slice(0, d.size()).target().to_vector<std::int32_t>();
    } catch (const accrue::Error&) {
    }
  }
  return 0;
}
