#pragma once
// The CUDA backend's kernels as host functions, one per CPU kernel in kernels/cpu, called by the
// dispatch in kernels/<op>.cpp with raw device pointers. Each runs on `device`'s compute stream
// and returns without waiting, except where it returns a value to the host.
//
// fmt-free, so the .cu files that define these include it.

#include <cstddef>
#include <cstdint>
#include <span>

#include "accrue/framework/dtype.hpp"
#include "accrue/kernels/common/binary.hpp"
#include "accrue/kernels/common/broadcast.hpp"
#include "accrue/kernels/common/conv_geometry.hpp"
#include "accrue/kernels/common/pool.hpp"
#include "accrue/kernels/common/optimizer_updates.hpp"
#include "accrue/kernels/common/unary.hpp"

namespace accrue::kernels::cuda {

// ---- copies (context.cpp): ordered on the compute stream; those that end on the host wait ----
void copy_host_to_device(int device, void* dst, const void* src, std::size_t bytes);
void copy_device_to_host(int device, void* dst, const void* src, std::size_t bytes);
void copy_device_to_device(int dst_device, void* dst, int src_device, const void* src, std::size_t bytes);

// ---- device memory behind the caching allocator (context.cpp) ----
/// cudaMalloc on `device`; nullptr when the device is out of memory (other failures throw).
void* device_malloc(int device, std::size_t bytes);
void device_free(int device, void* ptr) noexcept;

// ---- element-wise (elementwise.cu) ----
void unary_forward(int device, UnaryOp op, UnaryParams params, DType dtype, const void* x, void* y, std::int64_t n);
void unary_backward(int device, UnaryOp op, UnaryParams params, DType dtype, const void* x, const void* y,
                    const void* dy, void* dx, std::int64_t n, bool accumulate);
void binary_forward(int device, BinaryOp op, const float* a, const float* b, float* out, std::int64_t n,
                    const common::BroadcastIndex& index);
/// The gradient of operand `which` at every output element (d has the output's shape).
void binary_backward(int device, BinaryOp op, const float* a, const float* b, const float* dy, int which, float* d,
                     std::int64_t n, const common::BroadcastIndex& index, bool accumulate);
void fill(int device, DType dtype, void* t, std::int64_t n, float value);
void add_into(int device, DType dtype, void* dst, const void* src, std::int64_t n, float alpha);
void fill_uniform(int device, float* t, std::int64_t n, float low, float high, std::uint64_t seed, std::uint64_t offset);
void fill_normal(int device, float* t, std::int64_t n, float mean, float stddev, std::uint64_t seed,
                 std::uint64_t offset);
void cast(int device, const void* src, DType from, void* dst, DType to, std::int64_t n);
void dropout_apply(int device, DType dtype, const void* in, void* out, std::int64_t n, float p, std::uint64_t seed,
                   std::uint64_t offset, bool accumulate);

// ---- reductions (reduce.cu) ----
void sum_dim(int device, DType x_type, const void* x, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale,
             float* out, bool accumulate);
void expand_dim(int device, const float* g, std::int64_t outer, std::int64_t D, std::int64_t inner, float scale,
                float* out, bool accumulate);
void sum_to_shape(int device, const float* dy, float* d, std::int64_t d_numel, const common::SumToShapeIndex& index,
                  float scale, bool accumulate);
void argmax_rows(int device, const float* x, std::int64_t rows, std::int64_t C, std::int32_t* out);

// ---- softmax (softmax.cpp, over cuDNN) and cross-entropy (cross_entropy.cu) ----
void softmax_forward(int device, const float* x, float* y, std::int64_t outer, std::int64_t D, std::int64_t inner,
                     bool log);
void softmax_backward(int device, const float* y, const float* dy, float* dx, std::int64_t outer, std::int64_t D,
                      std::int64_t inner, bool log, bool accumulate);
/// Index of the first label outside [0, C), or -1; `scratch` is one device int. Waits for the device.
std::int64_t first_bad_label(int device, const std::int32_t* labels, std::int64_t B, std::int64_t C, int* scratch);
void cross_entropy_forward(int device, const float* logits, const std::int32_t* labels, std::int64_t B, std::int64_t C,
                           float smoothing, float* loss, float* lse);
void cross_entropy_backward(int device, const float* logits, const std::int32_t* labels, std::int64_t B,
                            std::int64_t C, float smoothing, const float* lse, const float* g, float* dlogits,
                            bool accumulate);

// ---- convolution (conv.cpp, over cuDNN) ----
void conv2d_forward(int device, const float* x, const float* w, const float* bias, float* y, const Window2d& g);
void conv2d_backward_data(int device, const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate);
void conv2d_backward_filter(int device, const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate);
void conv2d_backward_bias(int device, const float* dy, float* db, const Window2d& g, bool accumulate);

// ---- pooling (pool.cpp, over cuDNN) ----
void pool2d_forward(int device, const float* x, float* y, const Window2d& g, PoolMode mode);
void pool2d_backward(int device, const float* x, const float* y, const float* dy, float* dx, const Window2d& g,
                     PoolMode mode, bool accumulate);

// ---- normalization: group and layer (norm.cu), batch (batch_norm.cpp, over cuDNN) ----
// Tensors are (N, C, L); gamma, beta, dgamma and dbeta of group_norm may be null.
void group_norm_forward(int device, const float* x, const float* gamma, const float* beta, float* y, float* mean,
                        float* rstd, std::int64_t N, std::int64_t C, std::int64_t L, std::int64_t groups, float eps);
void group_norm_backward(int device, const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                         std::int64_t L, std::int64_t groups);
/// running_mean and running_var may both be null; eps at least CUDNN_BN_MIN_EPSILON (0 in cuDNN 9).
/// Backward takes the forward's eps, as cuDNN asks.
void batch_norm_forward_training(int device, const float* x, const float* gamma, const float* beta, float* y,
                                 float* mean, float* rstd, float* running_mean, float* running_var, std::int64_t N,
                                 std::int64_t C, std::int64_t L, float momentum, float eps);
void batch_norm_backward(int device, const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                         std::int64_t L, float eps);

// ---- GEMM (gemm.cpp, over cuBLAS) ----
void gemm_f32(int device, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
              const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc);
/// A and B both of type `low` (float16 or bfloat16), C float32 or `low`; float32 accumulation on
/// tensor cores.
void gemm_low_precision(int device, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                        float alpha, DType low, const void* A, std::int64_t lda, const void* B, std::int64_t ldb,
                        float beta, DType out, void* C, std::int64_t ldc);

// ---- multi-tensor kernels over many tensors in few launches (multi_tensor.cu) ----
struct SgdPointers {
  float* param;
  const float* grad;
  float* momentum_buffer;
  std::int64_t n;
};
struct AdamPointers {
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  float* max_exp_avg_sq;
  std::int64_t n;
};
void sgd_update(int device, std::span<const SgdPointers> tensors, const common::SgdHyper& hyper);
void adam_update(int device, std::span<const AdamPointers> tensors, const common::AdamHyper& hyper);
/// Blocks of partial sums sum_of_squares needs in its scratch, for tensors of these sizes.
std::int64_t sum_of_squares_partials(std::span<const std::int64_t> sizes);
/// sum of x^2 over all tensors, in double, in a fixed order; waits for the device.
double sum_of_squares(int device, std::span<const float* const> tensors, std::span<const std::int64_t> sizes,
                      double* scratch);
/// g *= inverse_scale over all tensors; true when any result is inf or NaN. `flag` is one device
/// int. Waits for the device.
bool unscale_and_check(int device, std::span<float* const> tensors, std::span<const std::int64_t> sizes,
                       float inverse_scale, int* flag);
/// t = f(t) in place over all tensors (clipping).
void unary_in_place(int device, UnaryOp op, UnaryParams params, std::span<float* const> tensors,
                    std::span<const std::int64_t> sizes);

}  // namespace accrue::kernels::cuda
