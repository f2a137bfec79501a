#include "explain.hpp"

#include <fmt/format.h>

#include "../model.hpp"
#include "../../framework/optim/layerwise.hpp"
#include "../../framework/optim/optimizer.hpp"
#include "../../framework/optim/recipe.hpp"

namespace accrue::callbacks {
namespace {

// "; trust ratios 0.weight 0.0213, 0.bias excluded, ..." for LARS and LAMB, nothing otherwise.
std::string trust_ratios(const optim::Optimizer* optimizer) {
  const auto* layerwise = dynamic_cast<const optim::LayerwiseOptimizer*>(optimizer);
  if (layerwise == nullptr) return {};
  std::string s = "; trust ratios";
  for (std::size_t i = 0; i < layerwise->trust_ratios().size(); ++i) {
    const std::string name = layerwise->parameter_name(i).empty() ? std::to_string(i) : layerwise->parameter_name(i);
    if (layerwise->excluded(i)) s += fmt::format("{} {} excluded", i == 0 ? "" : ",", name);
    else s += fmt::format("{} {} {:.4g}", i == 0 ? "" : ",", name, layerwise->trust_ratios()[i]);
  }
  return s;
}

}  // namespace

void Explain::on_train_begin(TrainingContext& context) {
  context_ = &context;
  out_ = options_.stream != nullptr ? options_.stream : stdout;
  const Model& model = *context.model;
  if (model.recomputed_segments().empty()) return;
  std::string segments;
  for (const auto& [begin, end] : model.recomputed_segments()) {
    segments += fmt::format("{} {}", segments.empty() ? "" : ",", model.layer(begin).name());
    if (end > begin + 1) segments += fmt::format(" to {}", model.layer(end - 1).name());
  }
  fmt::print(out_,
             "recomputed ({}):{}; each segment keeps only its input in forward and runs its forward again inside its "
             "backward\n",
             model.recompute_policy().str(), segments);
}

void Explain::on_micro_batch_end(const StepRecord& r, const Logs&) {
  if (r.window >= options_.windows) return;
  if (r.position == 0)
    fmt::print(out_, "window {} (optimizer step {}): {} micro-batch{}, {} samples\n", r.window + 1, r.window + 1,
               r.window_micro_batches, r.window_micro_batches == 1 ? "" : "es", r.window_samples);
  if (r.micro_batch_samples == 0) {
    fmt::print(out_, "  micro-batch {}/{}: skipped (a non-finite loss earlier in the window)\n", r.position + 1,
               r.window_micro_batches);
    return;
  }
  const std::string weights =
      r.sample_weight_sum ? fmt::format(" (each sample's loss times its weight; the weights sum to {:.6g})", *r.sample_weight_sum) : "";
  fmt::print(out_,
             "  micro-batch {}/{}: forward {} samples, mean loss {:.4f}{}; backward adds its gradient into .grad(), its "
             "summed loss weighted {:.6g} (1/{:.6g})\n",
             r.position + 1, r.window_micro_batches, r.micro_batch_samples, r.loss, weights, r.loss_weight,
             1.0 / r.loss_weight);
}

void Explain::on_optimizer_step(const StepRecord& r) {
  if (r.window >= options_.windows) return;
  std::string what = "  step: ";
  if (r.loss_scale) what += fmt::format("gradients unscaled by 1/{:g}; ", *r.loss_scale);
  if (r.grad_norm_before) {
    what += fmt::format("gradient norm {:.4f}", *r.grad_norm_before);
    if (r.grad_norm_after && *r.grad_norm_after != *r.grad_norm_before)
      what += fmt::format(", clipped to {:.4f}", *r.grad_norm_after);
    what += "; ";
  }
  if (r.status == StepRecord::Status::applied)
    what += fmt::format("{} steps with lr {:.6g}{}", context_->recipe->optimizer().str(), r.lr,
                        trust_ratios(context_->optimizer));
  else
    what += "skipped: inf or NaN in the loss or gradients, parameters unchanged";
  fmt::print(out_, "{}; .grad() zeroed\n", what);
  std::fflush(out_);
}

}  // namespace accrue::callbacks
