// IDX files, raw or gzipped (the reader decompresses what starts with gzip's magic).
#include <accrue/accrue.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = accrue::fuzz::write_input("idx", data, size);
  try {
    // A limit far below the default, so that a header claiming gigabytes is refused, not allocated.
    const auto array = accrue::datasets::read_idx(path, {.max_bytes = std::uint64_t{64} << 20});
    if (!array.bytes.empty()) (void)accrue::datasets::idx_to_float(array, 1.0f / 255);
  } catch (const accrue::Error&) {
  }
  return 0;
}
