// NumPy .npz archives: the ZIP end records (ZIP64 included), the central directory, local headers,
// stored and deflated members, their checksums, and each member as a .npy file.
#include <accrue/accrue.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto arrays = accrue::datasets::npz_from_memory({reinterpret_cast<const char*>(data), size}, "fuzz.npz",
                                                          {.max_bytes = std::uint64_t{16} << 20});
    for (const auto& [name, t] : arrays)
      if (t.numel() > 0 && t.dtype() != accrue::DType::i32) (void)t.to_vector<float>();
  } catch (const accrue::Error&) {
  }
  return 0;
}
