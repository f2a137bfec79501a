#include "batch_norm.hpp"
#include "../layer_registry.hpp"

#include "normalization_memory.hpp"
#include "../../framework/distributed/sync_batch_norm.hpp"
#include "../../framework/autograd/autograd.hpp"
#include "../../framework/ops/ops.hpp"
#include "../onnx.hpp"

namespace accrue::layers {

BatchNorm::BatchNorm(BatchNormOptions options) : options_(std::move(options)) {
  ACCRUE_CHECK(options_.eps > 0.0f, "BatchNorm needs a positive eps, got {}", options_.eps);
  if (options_.momentum)
    ACCRUE_CHECK(*options_.momentum >= 0.0f && *options_.momentum <= 1.0f, "BatchNorm momentum must be in [0, 1], got {}",
                 *options_.momentum);
  if (!options_.name.empty()) set_name(options_.name);
}

Shape BatchNorm::build(const Shape& input_shape, Generator& /*generator*/) {
  check_sample_shape(input_shape);
  const std::int64_t C = input_shape[0];
  const TensorOptions param{.category = MemoryCategory::parameters};
  if (options_.affine) {
    add_parameter("weight", Tensor::ones({C}, param));
    add_parameter("bias", Tensor::zeros({C}, param));
  }
  if (options_.track_running_stats) {
    add_buffer("running_mean", Tensor::zeros({C}, param));
    add_buffer("running_var", Tensor::ones({C}, param));
  }
  return input_shape;
}

Tensor BatchNorm::running_mean() const {
  return options_.track_running_stats ? named_buffers().at(0).second : Tensor();
}
Tensor BatchNorm::running_var() const {
  return options_.track_running_stats ? named_buffers().at(1).second : Tensor();
}

void BatchNorm::recompute_statistics(bool on) {
  recomputing_ = on && options_.track_running_stats;
  if (!recomputing_) return;
  const NoGradGuard no_grad;
  running_mean().copy_(Tensor::zeros(running_mean().shape()));
  running_var().copy_(Tensor::ones(running_var().shape()));
  batches_tracked_ = 0;
}

Tensor BatchNorm::forward(const Tensor& x) {
  const Tensor weight = options_.affine ? named_parameters().at(0).second : Tensor();
  const Tensor bias = options_.affine ? named_parameters().at(1).second : Tensor();
  float momentum = 0.0f;
  // A recomputed forward (ReplayScope) normalizes as the first did and leaves the statistics alone.
  const bool batch_statistics = training() && trainable();
  const bool replay = ReplayScope::active() && batch_statistics;
  const Tensor mean = replay ? Tensor() : running_mean(), var = replay ? Tensor() : running_var();
  if (batch_statistics && options_.track_running_stats && !replay) {
    ++batches_tracked_;
    momentum = options_.momentum && !recomputing_ ? *options_.momentum : 1.0f / static_cast<float>(batches_tracked_);
  }
  if (options_.sync && batch_statistics)
    if (distributed::Communicator* group = distributed::statistics_group(); group != nullptr && group->size() > 1)
      return distributed::sync_batch_norm(x, mean, var, weight, bias, momentum, options_.eps, *group);
  return ops::batch_norm(x, mean, var, weight, bias, batch_statistics, momentum, options_.eps);
}

void BatchNorm1d::check_sample_shape(const Shape& input_shape) const {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 1 || input_shape.rank() == 2,
                     "BatchNorm1d takes samples of features (C) or sequences (C, L), got {}; use BatchNorm2d for "
                     "images",
                     input_shape);
}

void BatchNorm2d::check_sample_shape(const Shape& input_shape) const {
  ACCRUE_CHECK_SHAPE(input_shape.rank() == 3,
                     "BatchNorm2d takes image samples (channels, height, width), got {}; use BatchNorm1d for features",
                     input_shape);
}


LayerMemoryUse BatchNorm::memory_use(const LayerMemoryQuery& q) const {
  return normalization_memory_use(q, q.input_shape[0], q.input_shape[0]);
}

LayerConfig BatchNorm::config() const {
  const BatchNormOptions& o = options_;
  return {{"momentum", o.momentum ? float_option(*o.momentum) : ConfigValue{}},
          {"eps", float_option(o.eps)},
          {"affine", o.affine},
          {"track_running_stats", o.track_running_stats},
          {"sync", o.sync}};
}

BatchNormOptions BatchNorm::options_from_config(const ConfigReader& c) {
  return {.momentum = c.is_set("momentum") ? std::optional<float>{c.real("momentum")} : std::nullopt,
          .eps = c.real("eps"),
          .affine = c.flag("affine"),
          .track_running_stats = c.flag("track_running_stats"),
          .sync = c.flag("sync")};
}

// Inference form: BatchNormalization on the running statistics. Without running statistics
// PyTorch normalizes by the batch's own in evaluation too, and so does the export: the mean and
// (biased) variance over the batch and every position, then the affine part per channel.
std::string BatchNorm::to_onnx(onnx::Graph& g, const std::string& x) const {
  const std::int64_t C = input_shape()[0];
  const int rank = input_shape().rank();
  const Tensor weight = options_.affine ? named_parameters().at(0).second : Tensor::ones({C});
  const Tensor bias = options_.affine ? named_parameters().at(1).second : Tensor::zeros({C});
  if (options_.track_running_stats)
    return g.node("BatchNormalization",
                  {x, g.weight("weight", weight), g.weight("bias", bias), g.weight("running_mean", running_mean()),
                   g.weight("running_var", running_var())},
                  {{"epsilon", options_.eps}});
  std::vector<std::int64_t> axes{0}, per_channel{C};
  for (int d = 1; d < rank; ++d) axes.push_back(d + 1), per_channel.push_back(1);
  const std::string mean = g.node("ReduceMean", {x}, {{"axes", axes}});
  const std::string centred = g.node("Sub", {x, mean});
  const std::string variance = g.node("ReduceMean", {g.node("Mul", {centred, centred})}, {{"axes", axes}});
  const std::string scale = g.node("Sqrt", {g.node("Add", {variance, g.scalar(options_.eps)})});
  const std::string normed = g.node("Div", {centred, scale});
  const std::string scaled = g.node("Mul", {normed, g.weight("weight", weight.to_vector<float>(), per_channel)});
  return g.node("Add", {scaled, g.weight("bias", bias.to_vector<float>(), per_channel)});
}

}  // namespace accrue::layers
