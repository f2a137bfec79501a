#include "concat.hpp"

#include "cpu/concat.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/concat.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

void copy_columns(const Tensor& src, std::int64_t src_cols, std::int64_t src_offset, const Tensor& dst,
                  std::int64_t dst_cols, std::int64_t dst_offset, std::int64_t rows, std::int64_t width,
                  bool accumulate) {
  expect_tensors("copy_columns", dst.device(), src.dtype(), {&src, &dst});
  ACCRUE_ASSERT(!accumulate || is_floating(dst.dtype()));
  ACCRUE_ASSERT(src_offset + width <= src_cols && dst_offset + width <= dst_cols);
  ACCRUE_ASSERT(rows * src_cols <= src.numel() && rows * dst_cols <= dst.numel());
  const common::ColumnBlock block{src_cols, src_offset, dst_cols, dst_offset, width};
  dst.bump_version();
  if (rows == 0 || width == 0) return;
  return dispatch(
      Op::copy_columns, dst.device(), dst.dtype(),
      [&] { cpu::copy_columns(dst.dtype(), src.data_ptr(), dst.data_ptr(), rows, block, accumulate); },
      [&](int device) {
        ACCRUE_CUDA(copy_columns)(device, dst.dtype(), src.data_ptr(), dst.data_ptr(), rows, block, accumulate);
      });
}

}  // namespace accrue::kernels
