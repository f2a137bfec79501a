#pragma once
// The safetensors format (github.com/huggingface/safetensors): an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range, then the raw
// little-endian data. PyTorch reads and writes it with the `safetensors` package.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "accrue/framework/tensor.hpp"

namespace accrue::serialization {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// Writes `tensors` (host copies are made of device tensors) with string `metadata`. The file is
/// written beside `path` under a temporary name, flushed and renamed over it, so a crash leaves
/// either the old file or the new one. Throws IoError naming the path.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsFile {
  NamedTensors tensors;
  std::map<std::string, std::string> metadata;
};

struct SafetensorsLimits {
  std::uint64_t max_header_bytes = 100u << 20;
  std::uint64_t max_file_bytes = std::uint64_t{64} << 30;
};

/// Reads a safetensors file into CPU tensors. Throws IoError naming the file and what is wrong: a
/// header length past the limit or the file, JSON that does not parse, an unknown dtype, a shape
/// whose size overflows or disagrees with its byte range, ranges outside the data or overlapping.
SafetensorsFile load_safetensors(const std::string& path, const SafetensorsLimits& limits = {});

}  // namespace accrue::serialization
