// Batch normalization over cuDNN, in its spatial mode: an (N, C, L) tensor is NCHW (N, C, L, 1),
// statistics per channel. cuDNN keeps the running variance unbiased and takes the momentum as
// the weight of the new value, as PyTorch.

#include <string>

#include "accrue/kernels/cuda/check.hpp"
#include "accrue/kernels/cuda/context.hpp"
#include "accrue/kernels/cuda/cudnn_descriptors.hpp"
#include "accrue/kernels/cuda/launchers.hpp"

namespace accrue::kernels::cuda {
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
