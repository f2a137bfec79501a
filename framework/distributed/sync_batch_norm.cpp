#include "sync_batch_norm.hpp"

#include "../autograd/autograd.hpp"
#include "../core/error.hpp"
#include "../ops/ops.hpp"

namespace accrue::distributed {
namespace {

// The sum over the processes is linear and every process's output is the same sum: the gradient
// of one process's input is the sum of every process's output gradient.
class AllreduceSumNode final : public Node {
 public:
  explicit AllreduceSumNode(Communicator& communicator) : communicator_(communicator) {}
  std::string_view name() const override { return "allreduce_sum"; }
  void backward(Tensor grad, GradSink& sink) override {
    Tensor summed = ops::clone(grad);
    communicator_.allreduce_sum(summed);
    sink.add(0, std::move(summed));
  }

 private:
  Communicator& communicator_;
};

thread_local Communicator* current_group = nullptr;

}  // namespace

Tensor allreduce_sum(const Tensor& x, Communicator& communicator) {
  Tensor summed = ops::clone(ops::float32(x).detach());
  communicator.allreduce_sum(summed);
  if (needs_grad({&x})) record(std::make_shared<AllreduceSumNode>(communicator), summed, {&x});
  return summed;
}

Tensor sync_batch_norm(const Tensor& x_in, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, float momentum, float eps, Communicator& communicator) {
  ACCRUE_CHECK(x_in.defined() && is_floating(x_in.dtype()), "sync_batch_norm: expects a floating-point input");
  ACCRUE_CHECK_SHAPE(x_in.rank() >= 2, "sync_batch_norm: expects input (N, C, ...), got shape {}", x_in.shape());
  ACCRUE_CHECK(eps > 0.0f, "sync_batch_norm: eps must be positive, got {}", eps);
  ACCRUE_CHECK(running_mean.defined() == running_var.defined(),
               "sync_batch_norm: running_mean and running_var go together (both or neither)");
  const Tensor x = ops::float32(x_in);
  const std::int64_t N = x.size(0), C = x.size(1);
  std::int64_t L = 1;
  for (int d = 2; d < x.rank(); ++d) L *= x.size(d);
  // Values per channel on all processes together; a process with no samples adds none.
  double count = static_cast<double>(N * L);
  communicator.allreduce_sum(std::span<double>(&count, 1));
  ACCRUE_CHECK_SHAPE(count > 1, "sync_batch_norm: training needs more than one value per channel over all {} processes, "
                                "got input {} here and {} values in all",
                     communicator.size(), x.shape(), count);
  // (N, C, L), and per-channel statistics broadcast as (1, C, 1). Two passes (the mean, then the
  // squared deviations from it) keep the variance as exact as one process's kernel.
  const Tensor x3 = ops::reshape(x, {N, C, L});
  const auto channel_sums = [&](const Tensor& t) { return ops::sum(ops::sum(t, 2), 0); };
  const Tensor mean = allreduce_sum(channel_sums(x3), communicator) / static_cast<float>(count);
  const Tensor centered = x3 - ops::reshape(mean, {1, C, 1});
  const Tensor var = allreduce_sum(channel_sums(ops::square(centered)), communicator) / static_cast<float>(count);
  const Tensor rstd = ops::pow(var + eps, -0.5f);
  Tensor y = centered * ops::reshape(rstd, {1, C, 1});
  if (weight.defined()) y = y * ops::reshape(weight, {1, C, 1});
  if (bias.defined()) y = y + ops::reshape(bias, {1, C, 1});
  if (running_mean.defined()) {
    const NoGradGuard no_grad;
    const float unbiased = static_cast<float>(count / (count - 1));
    Tensor{running_mean}.copy_(running_mean * (1.0f - momentum) + mean.detach() * momentum);
    Tensor{running_var}.copy_(running_var * (1.0f - momentum) + var.detach() * (momentum * unbiased));
  }
  return ops::reshape(y, x.shape());
}

Communicator* statistics_group() { return current_group; }

ShareBatchStatistics::ShareBatchStatistics(Communicator* group) : previous_(current_group) { current_group = group; }
ShareBatchStatistics::~ShareBatchStatistics() { current_group = previous_; }

}  // namespace accrue::distributed
