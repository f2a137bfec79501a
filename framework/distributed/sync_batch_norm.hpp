#pragma once
// Synchronized batch normalization (PyTorch's SyncBatchNorm): in a distributed run each channel is
// normalized by the mean and variance of every process's micro-batch together, as one process
// would with the global micro-batch. Written with differentiable ops around allreduce_sum, whose
// backward is again an allreduce: every process's loss depends on every process's inputs through
// the shared statistics.
//
// Every process of the run must call these in the same order, also a process whose share of a
// micro-batch is empty (it contributes nothing to the sums): a distributed fit runs such a share
// through the model for that reason.

#include "../core/non_copyable.hpp"
#include "communicator.hpp"
#include "../core/tensor.hpp"

namespace accrue::distributed {

/// x summed over the processes of `communicator`, as a new tensor (float32). The gradient of the
/// result is summed over the processes too.
Tensor allreduce_sum(const Tensor& x, Communicator& communicator);

/// F.batch_norm in training, with the statistics of x (N, C, ...) on all processes of
/// `communicator` together: their mean and biased variance normalize, and running_mean and
/// running_var, when defined, move towards them by `momentum` (the variance unbiased over all
/// processes' values). weight and bias (C) may be undefined.
Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, float momentum, float eps, Communicator& communicator);

/// The processes with which layers that share batch statistics (BatchNorm{{.sync = true}}) compute
/// them on this thread: set by a distributed fit while it trains; null otherwise (those layers then
/// use their own batch).
Communicator* statistics_group();

/// Sets statistics_group() for its lifetime.
class ShareBatchStatistics : NonCopyable {
 public:
  explicit ShareBatchStatistics(Communicator* group);
  ~ShareBatchStatistics();

 private:
  Communicator* previous_;
};

}  // namespace accrue::distributed
