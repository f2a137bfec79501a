#pragma once
// NumPy's .npy format (numpy.lib.format, versions 1 to 3): the magic "\x93NUMPY", a version, the
// header's length, a header that is a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 784), }
// and the elements. Accrue reads the dtypes it has: float32 ('f4'), float16 ('f2') and int32 ('i4'),
// and NumPy's defaults float64 ('f8', read as float32, as Keras casts inputs to its compute type)
// and int64 ('i8', read as int32 when every value fits; else an IoError naming the element),
// little- or big-endian, in C or Fortran order; another dtype is refused with the astype() that
// converts it.

#include <cstdint>
#include <string>
#include <string_view>

#include "../framework/core/tensor.hpp"

namespace accrue::datasets {

/// Limits that keep a hostile file from making the reader allocate absurd amounts.
struct NpyLimits {
  std::uint64_t max_bytes = std::uint64_t{4} << 30;
  std::uint32_t max_header_bytes = 1u << 20;
};

/// The array in `path` (np.save's file) as a CPU tensor of its dtype and shape, in C order, counted
/// as data. Throws IoError naming the file and what is wrong, with the byte offset in the header
/// where the header is malformed: not a .npy file, an unsupported version or dtype, a shape that
/// overflows or passes the limit, truncated data, or bytes after the data.
Tensor npy(const std::string& path, const NpyLimits& limits = {});
/// The same from the bytes of a .npy file in memory (a member of an .npz archive), `name` naming
/// it in errors.
Tensor npy_from_memory(std::string_view bytes, const std::string& name, const NpyLimits& limits = {});

}  // namespace accrue::datasets
