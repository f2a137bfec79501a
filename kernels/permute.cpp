#include "permute.hpp"

#include "cpu/permute.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/permute.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

void permute(const Tensor& x, const Tensor& y, std::span<const int> order, bool accumulate) {
  expect_tensors("permute", y.device(), x.dtype(), {&x, &y});
  const int rank = x.rank();
  ACCRUE_ASSERT(static_cast<int>(order.size()) == rank && y.rank() == rank && rank <= common::permute_max_rank);
  ACCRUE_ASSERT(!accumulate || is_floating(y.dtype()));
  common::PermuteIndex index;
  index.rank = rank;
  std::int64_t x_strides[common::permute_max_rank] = {};
  std::int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    x_strides[d] = stride;
    stride *= x.size(d);
  }
  for (int d = 0; d < rank; ++d) {
    ACCRUE_ASSERT(y.size(d) == x.size(order[d]));
    index.out[d] = y.size(d);
    index.stride[d] = x_strides[order[d]];
  }
  y.bump_version();
  const std::int64_t n = y.numel();
  if (n == 0) return;
  return dispatch(
      Op::permute, y.device(), y.dtype(),
      [&] { return cpu::permute(y.dtype(), x.data_ptr(), y.data_ptr(), n, index, accumulate); },
      [&](int device) { return ACCRUE_CUDA(permute)(device, y.dtype(), x.data_ptr(), y.data_ptr(), n, index, accumulate); });
}

}  // namespace accrue::kernels
