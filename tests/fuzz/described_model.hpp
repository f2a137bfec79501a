#pragma once
// What the two fuzz targets of a model's description share (fuzz_model_file, fuzz_model_graph).

#include <accrue/accrue.hpp>
#include <accrue/framework/serialization/safetensors.hpp>

#include "fuzz_input.hpp"

namespace accrue::fuzz {
/// load_model of a file holding `weights` and the input as its model's description: it returns
/// or throws accrue::Error.
inline void load_described_model(const char* name, const std::vector<std::pair<std::string, Tensor>>& weights,
                                 const std::uint8_t* data, std::size_t size) {
  const std::string& path = input_path(name);
  try {
    serialization::save_safetensors(path, weights,
                                    {{"format", "pt"}, {"accrue.model", std::string(reinterpret_cast<const char*>(data), size)}});
    (void)load_model(path);
  } catch (const Error&) {
  }
}
}  // namespace accrue::fuzz
