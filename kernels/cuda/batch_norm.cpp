// Batch normalisation over cuDNN, in its spatial mode: an (N, C, L) tensor is NCHW (N, C, L, 1),
// statistics per channel. cuDNN keeps the running variance unbiased and takes the momentum as
// the weight of the new value, as PyTorch.

#include "accrue/kernels/cuda/check.hpp"
#include "accrue/kernels/cuda/context.hpp"
#include "accrue/kernels/cuda/cudnn_descriptors.hpp"
#include "accrue/kernels/cuda/launchers.hpp"

namespace accrue::kernels::cuda {

void batch_norm_forward_training(int device, const float* x, const float* gamma, const float* beta, float* y,
                                 float* mean, float* rstd, float* running_mean, float* running_var, std::int64_t N,
                                 std::int64_t C, std::int64_t L, float momentum, float eps) {
  if (N * C * L == 0) return;
  if (eps < CUDNN_BN_MIN_EPSILON)
    throw_error(CUDNN_STATUS_BAD_PARAM, "batch normalisation with eps below cuDNN's minimum of 1e-5", __FILE__,
                __LINE__);
  const TensorDescriptor xd{N, C, L, 1}, pd{1, C, 1, 1};
  const float one = 1.0f, zero = 0.0f;
  ACCRUE_CUDA_CHECK(cudnnBatchNormalizationForwardTraining(context(device).cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                           xd.get(), x, xd.get(), y, pd.get(), gamma, beta, momentum,
                                                           running_mean, running_var, eps, mean, rstd));
}

void batch_norm_backward(int device, const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                         std::int64_t L) {
  if (N * C * L == 0) return;
  const TensorDescriptor xd{N, C, L, 1}, pd{1, C, 1, 1};
  const float one = 1.0f, zero = 0.0f;
  // eps is not used when the saved statistics are given, but must still be valid.
  ACCRUE_CUDA_CHECK(cudnnBatchNormalizationBackward(context(device).cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one,
                                                    &zero, xd.get(), x, xd.get(), dy, xd.get(), dx, pd.get(), gamma,
                                                    dgamma, dbeta, CUDNN_BN_MIN_EPSILON, mean, rstd));
}

}  // namespace accrue::kernels::cuda
