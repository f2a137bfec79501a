#pragma once
// The IDX format of MNIST and FashionMNIST (http://yann.lecun.com/exdb/mnist/): a magic number
// giving the element type and the number of dimensions, the dimensions as big-endian 32-bit
// integers, then the elements in row-major order, big-endian. Files may be gzip-compressed.

#include <cstdint>
#include <string>
#include <vector>

#include "../framework/core/shape.hpp"
#include "../framework/core/tensor.hpp"

namespace accrue::datasets {

enum class IdxType : std::uint8_t { u8 = 0x08, i8 = 0x09, i16 = 0x0B, i32 = 0x0C, f32 = 0x0D, f64 = 0x0E };

struct IdxArray {
  IdxType type = IdxType::u8;
  Shape shape;
  /// Elements in host byte order, packed.
  std::vector<std::uint8_t> bytes;
};

/// Limits that keep a hostile file from making the reader allocate absurd amounts.
struct IdxLimits {
  std::uint64_t max_bytes = std::uint64_t{4} << 30;
};

/// Reads a raw or gzip-compressed IDX file. Throws IoError naming the file and what is wrong:
/// missing, not IDX (wrong magic), an unknown element type, too many dimensions, a size that
/// overflows or passes the limit, truncated data, or bytes after the data.
IdxArray read_idx(const std::string& path, const IdxLimits& limits = {});

/// The array as float32 with each element multiplied by `scale` (1/255 gives pixels in [0, 1]).
Tensor idx_to_float(const IdxArray& array, float scale, const TensorOptions& options = {.category = MemoryCategory::data});
/// The array as int32 (labels); throws for floating-point element types.
Tensor idx_to_int(const IdxArray& array, const TensorOptions& options = {.dtype = DType::i32,
                                                                        .category = MemoryCategory::data});

}  // namespace accrue::datasets
