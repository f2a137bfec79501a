// safetensors files: the JSON header, dtypes, shapes, offsets and data.
#include <accrue/accrue.hpp>
#include <accrue/framework/serialization/safetensors.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = accrue::fuzz::write_input("safetensors", data, size);
  try {
    (void)accrue::serialization::load_safetensors(path);
  } catch (const accrue::Error&) {
  }
  return 0;
}
