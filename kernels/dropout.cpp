#include "dropout.hpp"

#include "cpu/dropout.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/dropout.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

namespace {

// Forward and backward are one kernel: `out` (+)= `in` where the mask keeps, scaled by 1 / (1 - p).
void dropout_apply(const char* name, const Tensor& in, const Tensor& out, float p, std::uint64_t seed,
                   std::uint64_t offset, bool accumulate) {
  expect_tensors(name, out.device(), out.dtype(), {&in, &out});
  ACCRUE_ASSERT(in.numel() == out.numel() && p >= 0.0f && p < 1.0f && is_floating(out.dtype()));
  out.bump_version();
  return dispatch(
      Op::dropout, out.device(), out.dtype(),
      [&] {
        return cpu::dropout_apply(out.dtype(), in.data_ptr(), out.data_ptr(), out.numel(), p, seed, offset, accumulate);
      },
      [&](int index) {
        return ACCRUE_CUDA(dropout_apply)(index, out.dtype(), in.data_ptr(), out.data_ptr(), out.numel(), p, seed,
                                          offset, accumulate);
      });
}

}  // namespace

void dropout_forward(const Tensor& x, const Tensor& y, float p, std::uint64_t seed, std::uint64_t offset) {
  dropout_apply("dropout_forward", x, y, p, seed, offset, false);
}

void dropout_backward(const Tensor& dy, const Tensor& dx, float p, std::uint64_t seed, std::uint64_t offset,
                      bool accumulate) {
  dropout_apply("dropout_backward", dy, dx, p, seed, offset, accumulate);
}

}  // namespace accrue::kernels
