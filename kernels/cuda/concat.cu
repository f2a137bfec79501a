// copy_columns on the GPU: one thread per element of the block, placed by common/concat.hpp.

#include <cstdint>
#include <type_traits>

#include "../common/concat.hpp"
#include "concat.hpp"
#include "launch.cuh"

namespace accrue::kernels::cuda {
namespace {

template <class T>
struct CopyColumns {
  const T* src;
  T* dst;
  common::ColumnBlock block;
  bool accumulate;
  __device__ void operator()(std::int64_t e) const {
    common::store_or_add(dst[block.dst(e)], src[block.src(e)], accumulate);
  }
};

template <class T>
void run(int device, const void* src, void* dst, std::int64_t rows, const common::ColumnBlock& block, bool accumulate) {
  launch_elementwise(device, rows * block.width, "copy_columns",
                     CopyColumns<T>{static_cast<const T*>(src), static_cast<T*>(dst), block, accumulate});
}

}  // namespace

void copy_columns(int device, DType dtype, const void* src, void* dst, std::int64_t rows,
                  const common::ColumnBlock& block, bool accumulate) {
  if (dtype == DType::i32) return run<std::int32_t>(device, src, dst, rows, block, accumulate);
  with_float_type(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    run<T>(device, src, dst, rows, block, accumulate);
  });
}

}  // namespace accrue::kernels::cuda
