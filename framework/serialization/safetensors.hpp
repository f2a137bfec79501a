#pragma once
// The safetensors format (github.com/huggingface/safetensors): an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range, then the raw
// little-endian data. PyTorch reads and writes it with the `safetensors` package.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../core/tensor.hpp"

namespace accrue::serialization {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// Writes `tensors` (host copies are made of device tensors) with string `metadata`. The file is
/// written beside `path` under a temporary name, flushed and renamed over it, so a crash leaves
/// either the old file or the new one. Throws IoError naming the path.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// The tensor named `name` in `tensors`, or null.
const Tensor* find_tensor(const NamedTensors& tensors, const std::string& name);

/// Pairs tensors read from a file with the tensors they are to be copied into, collecting every
/// problem first so that a caller can refuse the whole file before changing anything.
struct TensorMatch {
  /// "missing 'name' (3,)", "'name' is float32 (4,) in <file> but float32 (3,) in the model", ...
  std::vector<std::string> problems;
  /// Names in the file that found a tensor to go into (matching or not).
  std::vector<std::string> claimed;

  /// Finds `prefix` + name in `file` for each of `into` and returns the (into, from the file)
  /// pairs of the same shape and dtype; a missing one is a problem when `required`. `file_kind`
  /// names the file in the messages ("the file", "the checkpoint").
  std::vector<std::pair<Tensor, Tensor>> match(const NamedTensors& into, const NamedTensors& file,
                                               const std::string& prefix, bool required, const std::string& file_kind);
  /// Adds "unexpected 'name' shape" for each tensor of `file` nobody claimed.
  void add_unexpected(const NamedTensors& file);
  /// Copies each tensor of `file` into its namesake in `into` when every one of `into` is there
  /// with its shape and dtype and `file` holds nothing else; otherwise copies nothing, and the
  /// problems say why. Returns whether it copied.
  bool copy_all(const NamedTensors& into, const NamedTensors& file, const std::string& file_kind);
  /// The problems, one per line, each indented by two spaces.
  std::string problem_lines() const;
};

struct SafetensorsFile {
  NamedTensors tensors;
  std::map<std::string, std::string> metadata;
};

struct SafetensorsLimits {
  std::uint64_t max_header_bytes = 100u << 20;
  std::uint64_t max_file_bytes = std::uint64_t{64} << 30;
};

/// Reads a safetensors file into CPU tensors (I64 ones, as PyTorch's num_batches_tracked, into
/// int32, refusing values past its range). Throws IoError naming the file and what is wrong: a
/// header length past the limit or the file, JSON that does not parse, an unknown dtype, a shape
/// whose size overflows or disagrees with its byte range, ranges outside the data or overlapping.
SafetensorsFile load_safetensors(const std::string& path, const SafetensorsLimits& limits = {});

}  // namespace accrue::serialization
