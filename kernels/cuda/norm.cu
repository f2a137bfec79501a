// Group, layer and batch normalization on the GPU. Group (and layer) normalization: one block per
// set of elements sharing statistics, with the shared math of kernels/common/norm.hpp; the parameter
// gradients one block per channel. Batch normalization is cuDNN's (at the end).

#include <string>

#include "../common/norm.hpp"
#include "launch.cuh"
#include "check.hpp"
#include "context.hpp"
#include "cudnn_descriptors.hpp"
#include "norm.hpp"

namespace accrue::kernels::cuda {
namespace {

constexpr int norm_threads = 256;

__device__ float gamma_at(const float* gamma, std::int64_t c) { return gamma != nullptr ? gamma[c] : 1.0f; }

__global__ void group_norm_forward_kernel(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                          float* rstd, std::int64_t C, std::int64_t L, std::int64_t groups,
                                          float eps) {
  const std::int64_t set = blockIdx.x, Cg = C / groups, M = Cg * L;
  const float* xs = x + set * M;
  float* ys = y + set * M;
  float sum = 0.0f;
  for (std::int64_t i = threadIdx.x; i < M; i += blockDim.x) sum += xs[i];
  const float m = block_all_reduce(sum, 0.0f, SumOp{}) / static_cast<float>(M);
  float sq = 0.0f;
  for (std::int64_t i = threadIdx.x; i < M; i += blockDim.x) sq += (xs[i] - m) * (xs[i] - m);
  const float r = common::norm_rstd(block_all_reduce(sq, 0.0f, SumOp{}) / static_cast<float>(M), eps);
  if (threadIdx.x == 0) {
    mean[set] = m;
    rstd[set] = r;
  }
  const std::int64_t c0 = (set % groups) * Cg;
  for (std::int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const std::int64_t c = c0 + i / L;
    ys[i] = (xs[i] - m) * r * gamma_at(gamma, c) + (beta != nullptr ? beta[c] : 0.0f);
  }
}

__global__ void group_norm_input_grad_kernel(const float* x, const float* gamma, const float* mean, const float* rstd,
                                             const float* dy, float* dx, std::int64_t C, std::int64_t L,
                                             std::int64_t groups) {
  const std::int64_t set = blockIdx.x, Cg = C / groups, M = Cg * L, c0 = (set % groups) * Cg;
  const float* xs = x + set * M;
  const float* ds = dy + set * M;
  float* dxs = dx + set * M;
  const float m = mean[set], r = rstd[set];
  float a = 0.0f, b = 0.0f;
  for (std::int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const float dxhat = ds[i] * gamma_at(gamma, c0 + i / L);
    a += dxhat;
    b += dxhat * ((xs[i] - m) * r);
  }
  const float mean_dxhat = block_all_reduce(a, 0.0f, SumOp{}) / static_cast<float>(M);
  const float mean_dxhat_xhat = block_all_reduce(b, 0.0f, SumOp{}) / static_cast<float>(M);
  for (std::int64_t i = threadIdx.x; i < M; i += blockDim.x)
    dxs[i] = common::norm_input_grad(ds[i] * gamma_at(gamma, c0 + i / L), (xs[i] - m) * r, r, mean_dxhat,
                                     mean_dxhat_xhat);
}

__global__ void group_norm_param_grad_kernel(const float* x, const float* mean, const float* rstd, const float* dy,
                                             float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                                             std::int64_t L, std::int64_t groups) {
  const std::int64_t c = blockIdx.x, Cg = C / groups;
  float dg = 0.0f, db = 0.0f;
  for (std::int64_t k = threadIdx.x; k < N * L; k += blockDim.x) {
    const std::int64_t n = k / L, l = k % L, set = n * groups + c / Cg, i = (n * C + c) * L + l;
    dg += dy[i] * ((x[i] - mean[set]) * rstd[set]);
    db += dy[i];
  }
  dg = block_all_reduce(dg, 0.0f, SumOp{});
  db = block_all_reduce(db, 0.0f, SumOp{});
  if (threadIdx.x == 0) {
    if (dgamma != nullptr) dgamma[c] = dg;
    if (dbeta != nullptr) dbeta[c] = db;
  }
}

// L == 1 (LayerNorm: N rows of C features), where a block per channel would read C floats apart:
// a block of 32 x 32 threads takes 32 neighbouring channels, each warp reading 32 consecutive floats
// of a row, 32 rows at a time; the 32 partial sums of a channel add up in shared memory.
constexpr int rows_param_grad_rows = 32;
__global__ void rows_param_grad_kernel(const float* x, const float* mean, const float* rstd, const float* dy,
                                       float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                                       std::int64_t groups) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * 32 + threadIdx.x, Cg = C / groups;
  float dg = 0.0f, db = 0.0f;
  if (c < C)
    for (std::int64_t n = threadIdx.y; n < N; n += rows_param_grad_rows) {
      const std::int64_t i = n * C + c, set = n * groups + c / Cg;
      dg += dy[i] * ((x[i] - mean[set]) * rstd[set]);
      db += dy[i];
    }
  __shared__ float partial_g[rows_param_grad_rows][32], partial_b[rows_param_grad_rows][32];
  partial_g[threadIdx.y][threadIdx.x] = dg;
  partial_b[threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
  for (int r = 1; r < rows_param_grad_rows; ++r) {
    dg += partial_g[r][threadIdx.x];
    db += partial_b[r][threadIdx.x];
  }
  if (dgamma != nullptr) dgamma[c] = dg;
  if (dbeta != nullptr) dbeta[c] = db;
}

}  // namespace

void group_norm_forward(int device, const float* x, const float* gamma, const float* beta, float* y, float* mean,
                        float* rstd, std::int64_t N, std::int64_t C, std::int64_t L, std::int64_t groups, float eps) {
  if (N * C * L == 0) return;
  group_norm_forward_kernel<<<grid_size(N * groups, "group_norm_forward: too many groups"), norm_threads, 0,
                              compute_stream(device)>>>(x, gamma, beta, y, mean, rstd, C, L, groups, eps);
  ACCRUE_CUDA_CHECK_LAUNCH("group_norm_forward");
}

void group_norm_backward(int device, const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                         std::int64_t L, std::int64_t groups) {
  if (N * C * L == 0) return;
  const cudaStream_t stream = compute_stream(device);
  if ((dgamma != nullptr || dbeta != nullptr) && L == 1) {
    rows_param_grad_kernel<<<grid_size((C + 31) / 32, "group_norm_backward: too many channels"),
                             dim3(32, rows_param_grad_rows), 0, stream>>>(x, mean, rstd, dy, dgamma, dbeta, N, C, groups);
    ACCRUE_CUDA_CHECK_LAUNCH("rows_param_grad");
  } else if (dgamma != nullptr || dbeta != nullptr) {
    group_norm_param_grad_kernel<<<grid_size(C, "group_norm_backward: too many channels"), norm_threads, 0, stream>>>(
        x, mean, rstd, dy, dgamma, dbeta, N, C, L, groups);
    ACCRUE_CUDA_CHECK_LAUNCH("group_norm_param_grad");
  }
  group_norm_input_grad_kernel<<<grid_size(N * groups, "group_norm_backward: too many groups"), norm_threads, 0, stream>>>(
      x, gamma, mean, rstd, dy, dx, C, L, groups);
  ACCRUE_CUDA_CHECK_LAUNCH("group_norm_input_grad");
}

// ---- Batch normalization over cuDNN, in its spatial mode: an (N, C, L) tensor is NCHW (N, C, L, 1),
// statistics per channel. cuDNN keeps the running variance unbiased and takes the momentum as
// the weight of the new value, as PyTorch.

namespace {
// cuDNN 9's minimum is 0 (CUDNN_BN_MIN_EPSILON); older ones had 1e-5.
void check_epsilon(float eps) {
  if (!(eps >= CUDNN_BN_MIN_EPSILON)) {
    static const std::string what = "batch normalization with eps below cuDNN's minimum of " + std::to_string(CUDNN_BN_MIN_EPSILON);
    throw_error(CUDNN_STATUS_BAD_PARAM, what.c_str(), __FILE__, __LINE__);
  }
}
}  // namespace

void batch_norm_forward_training(int device, const float* x, const float* gamma, const float* beta, float* y,
                                 float* mean, float* rstd, float* running_mean, float* running_var, std::int64_t N,
                                 std::int64_t C, std::int64_t L, float momentum, float eps) {
  if (N * C * L == 0) return;
  check_epsilon(eps);
  const TensorDescriptor xd{N, C, L, 1}, pd{1, C, 1, 1};
  const float one = 1.0f, zero = 0.0f;
  ACCRUE_CUDA_CHECK(cudnnBatchNormalizationForwardTraining(context(device).cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                           xd.get(), x, xd.get(), y, pd.get(), gamma, beta, momentum,
                                                           running_mean, running_var, eps, mean, rstd));
}

void batch_norm_backward(int device, const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                         std::int64_t L, float eps) {
  if (N * C * L == 0) return;
  check_epsilon(eps);
  const TensorDescriptor xd{N, C, L, 1}, pd{1, C, 1, 1};
  const float one = 1.0f, zero = 0.0f;
  // cuDNN asks for the forward pass's eps, also when it is handed the saved statistics.
  ACCRUE_CUDA_CHECK(cudnnBatchNormalizationBackward(context(device).cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one,
                                                    &zero, xd.get(), x, xd.get(), dy, xd.get(), dx, pd.get(), gamma,
                                                    dgamma, dbeta, eps, mean, rstd));
}

}  // namespace accrue::kernels::cuda
