#include "gemm.hpp"

#include "cast.hpp"
#include "cpu/gemm.hpp"
#include "cpu/gemm/skinny.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/gemm.hpp"
#include "dispatch.hpp"
#include "reduce.hpp"

namespace accrue::kernels {
namespace {
struct Matrix {
  std::int64_t rows, cols;
};
Matrix as_matrix(const Tensor& t) {
  std::int64_t rows = 1;
  for (int i = 0; i + 1 < t.rank(); ++i) rows *= t.size(i);
  return {rows, t.rank() == 0 ? 1 : t.size(-1)};
}
}  // namespace

using cpu::parameter_operand;

PackedParameters::PackedParameters() { cpu::open_parameter_packs(); }
PackedParameters::~PackedParameters() { cpu::close_parameter_packs(); }

void gemm(bool trans_a, bool trans_b, float alpha, const Tensor& A, const Tensor& B, float beta, const Tensor& C,
          DType compute) {
  const auto fits = [&](const Tensor& t) { return t.dtype() == DType::f32 || t.dtype() == compute; };
  ACCRUE_CHECK(is_floating(compute) && fits(A) && fits(B) && fits(C),
               "gemm computed in {}: operands of dtypes {}, {} and {}; each must be float32 or {}", dtype_name(compute),
               dtype_name(A.dtype()), dtype_name(B.dtype()), dtype_name(C.dtype()), dtype_name(compute));
  ACCRUE_ASSERT(A.device() == C.device() && B.device() == C.device());
  const Matrix a = as_matrix(A), b = as_matrix(B), c = as_matrix(C);
  const std::int64_t M = trans_a ? a.cols : a.rows, K = trans_a ? a.rows : a.cols;
  const std::int64_t Kb = trans_b ? b.cols : b.rows, N = trans_b ? b.rows : b.cols;
  if (K != Kb || c.rows != M || c.cols != N)
    throw ShapeError(fmt::format("gemm: op(A) is ({}, {}), op(B) is ({}, {}) and C is ({}, {}); they do not multiply",
                                 M, K, Kb, N, c.rows, c.cols));
  C.bump_version();
  return dispatch(
      Op::gemm, C.device(), compute,
      [&] {
        if (compute == DType::f32)
          cpu::gemm(trans_a, trans_b, M, N, K, alpha, A.data<float>(), a.cols, B.data<float>(), b.cols, beta, C.data<float>(),
                    c.cols);
        else {
          const auto a_param = parameter_operand(A), b_param = parameter_operand(B);
          cpu::gemm_low_precision(trans_a, trans_b, M, N, K, alpha, compute, A.data_ptr(), A.dtype(), a.cols, B.data_ptr(),
                                  B.dtype(), b.cols, beta, C.dtype(), C.data_ptr(), c.cols, nullptr,
                                  a_param ? &*a_param : nullptr, b_param ? &*b_param : nullptr);
        }
        return;
      },
      [&](int index) {
        const int device = index;
        if (compute == DType::f32)
          return ACCRUE_CUDA(gemm_f32)(device, trans_a, trans_b, M, N, K, alpha, ptr<float>(A), a.cols, ptr<float>(B), b.cols, beta,
                                ptr<float>(C), c.cols);
        // cuBLAS multiplies operands of one type: float32 ones (master weights) are rounded to the
        // compute type first, as autocast does.
        const auto low = [&](const Tensor& t) {
          if (t.dtype() == compute) return t;
          Tensor rounded = Tensor::empty(t.shape(), {.dtype = compute, .device = t.device()});
          cast(t, rounded);
          return rounded;
        };
        const Tensor a_low = low(A), b_low = low(B);
        return ACCRUE_CUDA(gemm_low_precision)(device, trans_a, trans_b, M, N, K, alpha, compute, a_low.data_ptr(), a.cols,
                                        b_low.data_ptr(), b.cols, beta, C.dtype(), C.data_ptr(), c.cols);
      });
}

void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, DType compute) {
  ACCRUE_CHECK(is_floating(compute) && y.dtype() == compute,
               "linear computes in float32, float16 or bfloat16 into a tensor of that type, got {} into {}",
               dtype_name(compute), dtype_name(y.dtype()));
  const Matrix a = as_matrix(x), b = as_matrix(w), c = as_matrix(y);
  ACCRUE_ASSERT(a.cols == b.cols && c.rows == a.rows && c.cols == b.rows);
  ACCRUE_ASSERT(!bias.defined() || (bias.dtype() == DType::f32 && bias.numel() == c.cols));
  // y, or its float32 accumulator, filled with the bias and the product added onto it.
  const auto bias_then_product = [&](const Tensor& into) {
    if (bias.defined()) expand_dim(bias, 1, c.rows, c.cols, 1.0f, into, false);
    gemm(false, true, 1.0f, x, w, bias.defined() ? 1.0f : 0.0f, into, compute);
  };
  return dispatch(
      Op::gemm, y.device(), compute,
      [&] {
        const float* column_bias = bias.defined() ? bias.data<float>() : nullptr;
        if (compute == DType::f32) {
          if (!cpu::skinny_gemm_applies(false, true, c.rows, c.cols, a.cols)) return bias_then_product(y);
          y.bump_version();
          return cpu::skinny_linear(c.rows, c.cols, a.cols, x.data<float>(), w.data<float>(), column_bias,
                                    y.data<float>());
        }
        y.bump_version();
        const auto x_param = parameter_operand(x), w_param = parameter_operand(w);
        cpu::gemm_low_precision(false, true, c.rows, c.cols, a.cols, 1.0f, compute, x.data_ptr(), x.dtype(), a.cols,
                                w.data_ptr(), w.dtype(), b.cols, 0.0f, y.dtype(), y.data_ptr(), c.cols, column_bias,
                                x_param ? &*x_param : nullptr, w_param ? &*w_param : nullptr);
      },
      [&](int) {
        if (compute == DType::f32) return bias_then_product(y);
        const Tensor accumulator = Tensor::empty(y.shape(), {.device = y.device()});
        bias_then_product(accumulator);
        cast(accumulator, y);
      });
}

namespace {
// Matrix i of t's `batch` (rows, cols) matrices, as a 2-D view.
Tensor matrix(const Tensor& t, std::int64_t i, std::int64_t batch) {
  const std::int64_t rows = t.rank() >= 2 ? t.size(-2) : 1, cols = t.rank() >= 1 ? t.size(-1) : 1;
  ACCRUE_ASSERT(rows * cols * batch == t.numel());
  Tensor m = t.detach();
  m.impl()->offset += i * rows * cols;
  m.impl()->shape = Shape{rows, cols};
  return m;
}
}  // namespace

// One gemm per matrix: each runs on the whole thread pool (or one cuBLAS call), which suits
// attention's matrices of a sequence's length; a strided-batched call is the next step for many
// small ones.
void gemm_batched(bool trans_a, bool trans_b, float alpha, const Tensor& A, const Tensor& B, float beta, const Tensor& C,
                  std::int64_t batch, DType compute) {
  ACCRUE_ASSERT(batch >= 0);
  for (std::int64_t i = 0; i < batch; ++i)
    gemm(trans_a, trans_b, alpha, matrix(A, i, batch), matrix(B, i, batch), beta, matrix(C, i, batch), compute);
  if (batch == 0) C.bump_version();
}

std::int64_t gemm_in_order_depth(Device device) { return device.is_cpu() ? cpu::skinny_in_order_depth() : 0; }

std::size_t gemm_kept_parameter_bytes(Device device, DType compute, std::int64_t K, std::int64_t N, bool another_layout) {
  if (!device.is_cpu() || compute != DType::bf16) return 0;
  if (cpu::bf16_kernel() == cpu::Bf16Kernel::none) return another_layout ? 0 : static_cast<std::size_t>(K * N) * 4;
  return cpu::bf16_pack_bytes(K, N);
}

bool gemm_low_precision_native(Device device, DType compute) {
  return !device.is_cpu() || (compute == DType::bf16 && cpu::bf16_kernel() != cpu::Bf16Kernel::none);
}

std::string gemm_low_precision_engine(Device device, DType compute) {
  if (!device.is_cpu()) return "cuBLAS";
  if (gemm_low_precision_native(device, compute)) return cpu::bf16_kernel_name(cpu::bf16_kernel());
  return fmt::format("float32 on {}-rounded operands: no {} arithmetic on this processor", dtype_name(compute),
                     dtype_name(compute));
}

std::size_t gemm_workspace_bytes(Device device, DType compute, std::int64_t M, std::int64_t N, std::int64_t K,
                                 DType a_type, DType b_type, DType c_type, bool b_kept) {
  if (compute == DType::f32 || M == 0 || N == 0 || K == 0) return 0;
  if (device.is_cpu()) return cpu::gemm_low_precision_workspace_bytes(M, N, K, compute, c_type, b_kept);
  std::size_t bytes = 0;
  if (a_type != compute) bytes += static_cast<std::size_t>(M * K) * dtype_size(compute);
  if (b_type != compute) bytes += static_cast<std::size_t>(K * N) * dtype_size(compute);
  return bytes;
}

}  // namespace accrue::kernels
