// NumPy .npy files: the header's dict literal, the dtype, the shape and the data's length.
#include <accrue/accrue.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = accrue::fuzz::write_input("npy", data, size);
  try {
    // A limit far below the default, so that a header claiming gigabytes is refused, not allocated.
    const accrue::Tensor t = accrue::datasets::npy(path, {.max_bytes = std::uint64_t{64} << 20});
    if (t.numel() > 0 && t.dtype() != accrue::DType::i32) (void)t.to_vector<float>();
  } catch (const accrue::Error&) {
  }
  return 0;
}
