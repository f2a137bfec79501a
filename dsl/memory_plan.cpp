// Sequential::memory_plan: a walk through one training step over sizes only. Each layer says what
// it keeps for backward and what it allocates on the way (Layer::memory_use); the walk tracks the
// storage of every tensor between layers (a view shares its input's), frees what nobody keeps, and
// records the peak of each category and of the total at every point where memory is allocated:
// each layer's forward, the loss, each layer's backward, and the optimizer step.

#include "accrue/dsl/memory_plan.hpp"

#include <algorithm>

#include "accrue/dsl/sequential.hpp"

namespace accrue {

std::string MemoryPlan::str() const {
  std::string out = fmt::format("Memory plan: micro-batch {} on {}, {}\n", micro_batch, device, precision);
  for (int i = 0; i < memory_category_count; ++i)
    out += fmt::format("  {:<16} {:>12}{}\n", category_name(static_cast<MemoryCategory>(i)), format_bytes(peak[i]),
                       i == static_cast<int>(MemoryCategory::data) ? "  (one micro-batch; the dataset not included)" : "");
  out += fmt::format("  {:<16} {:>12}  (peak of the sum)", "total", format_bytes(peak_total));
  return out;
}

namespace {

constexpr int kParameters = static_cast<int>(MemoryCategory::parameters);
constexpr int kGradients = static_cast<int>(MemoryCategory::gradients);
constexpr int kOptimizer = static_cast<int>(MemoryCategory::optimizer_state);
constexpr int kActivations = static_cast<int>(MemoryCategory::activations);
constexpr int kTemporaries = static_cast<int>(MemoryCategory::temporaries);
constexpr int kData = static_cast<int>(MemoryCategory::data);

struct PlannedStorage {
  std::size_t bytes = 0;
  bool kept = false;   // saved for backward: an activation until its last user's backward
  bool alive = true;
};

class Walk {
 public:
  std::array<std::size_t, memory_category_count> now{};
  MemoryPlan* plan;

  void record(std::size_t extra_temporaries = 0, std::size_t extra_activations = 0) {
    std::size_t total = 0;
    for (int i = 0; i < memory_category_count; ++i) {
      std::size_t v = now[i];
      if (i == kTemporaries) v += extra_temporaries;
      if (i == kActivations) v += extra_activations;
      plan->peak[i] = std::max(plan->peak[i], v);
      total += v;
    }
    plan->peak_total = std::max(plan->peak_total, total);
  }
};

}  // namespace

MemoryPlan Sequential::memory_plan(std::int64_t micro_batch) const {
  return memory_plan(micro_batch, compiled() && recipe_.accumulates());
}

std::optional<std::int64_t> Sequential::fitting_micro_batch(std::int64_t micro_batch, std::size_t limit,
                                                            std::size_t live_besides) const {
  for (std::int64_t m = micro_batch / 2; m >= 1; m /= 2)
    if (memory_plan(m, /*accumulating=*/true, /*under_limit=*/true).peak_total + live_besides <= limit) return m;
  return std::nullopt;
}

bool Sequential::defers_weight_gradients(bool accumulating, const AccumulateOptions& options) const {
  const bool capped = (compiled() && recipe_.memory_budget()) || memory_stats(device_).limit != 0;
  return accumulating && options.weight_gradients == WeightGradients::per_window && !capped;
}

MemoryPlan Sequential::memory_plan(std::int64_t micro_batch, bool accumulates, bool under_limit) const {
  ACCRUE_CHECK(micro_batch > 0, "memory_plan: the micro-batch must be positive, got {}", micro_batch);
  ACCRUE_CHECK(built_, "memory_plan: model '{}' is not built yet; declare layers::Input or call build(shape) first",
               name_);
  MemoryPlan plan;
  plan.micro_batch = micro_batch;
  plan.device = device_;
  const std::optional<DType> autocast = compiled() ? recipe_.amp_dtype(device_) : std::nullopt;
  plan.precision = autocast ? fmt::format("{} autocast", dtype_name(*autocast)) : "float32";

  // What lives through the whole step; layer_grads[i] is the float32 gradients of layer i (1-based).
  const std::size_t L = layers_.size();
  std::size_t params = 0, grads = 0;
  std::vector<std::size_t> layer_grads(L + 1, 0);
  for (std::size_t i = 1; i <= L; ++i) {
    for (const auto& [name, p] : layers_[i - 1]->named_parameters()) {
      params += p.nbytes();
      if (p.requires_grad()) layer_grads[i] += static_cast<std::size_t>(p.numel()) * 4;
    }
    for (const auto& [name, b] : layers_[i - 1]->named_buffers()) params += b.nbytes();
    grads += layer_grads[i];
  }
  const int state_tensors = compiled() ? recipe_.optimizer().state_tensors().value_or(0) : 0;
  const Shape output = layers_.back()->output_shape();
  const bool cross_entropy = compiled() && loss_.name() == "CrossEntropy";
  // Cross-entropy has a label and a log-sum-exp per row of logits: one per sample, or per token.
  const std::int64_t rows_per_sample = output.rank() == 0 || output[-1] == 0 ? 1 : output.numel() / output[-1];
  const std::size_t target_bytes = static_cast<std::size_t>(micro_batch) *
                                   (cross_entropy ? 4 * static_cast<std::size_t>(rows_per_sample)
                                                  : static_cast<std::size_t>(output.numel()) * 4);

  Walk walk;
  walk.plan = &plan;
  walk.now[kOptimizer] = static_cast<std::size_t>(state_tensors) * grads;
  walk.now[kData] = static_cast<std::size_t>(micro_batch * input_shape_->numel()) * 4 + target_bytes;
  // Accumulating, the gradients of earlier micro-batches are there from the start; otherwise each
  // layer's appear with its backward.
  walk.now[kGradients] = accumulates ? grads : 0;

  // Forward: the storage of each tensor between layers (0 is the batch itself, data).
  std::vector<LayerMemoryUse> uses(L + 1);
  std::vector<PlannedStorage> storages(1);
  std::vector<std::size_t> boundary(L + 1, 0);  // storage of the output of layer i (1-based); 0 is the input
  std::vector<DType> dtypes(L + 1, DType::f32);
  std::vector<Shape> shapes(L + 1);
  shapes[0] = *input_shape_;
  // A layer records its backward (and keeps anything) only when its input needs a gradient or it
  // has parameters that do; the batch needs none.
  std::vector<bool> needs_grad(L + 1, false);
  for (std::size_t i = 1; i <= L; ++i) {
    const Layer& layer = *layers_[i - 1];
    uses[i] = layer.memory_use({.input_shape = shapes[i - 1], .batch = micro_batch, .input_dtype = dtypes[i - 1],
                                .autocast = autocast, .device = device_});
    shapes[i] = layer.output_shape();
    dtypes[i] = uses[i].output_dtype;
    needs_grad[i] = needs_grad[i - 1] || layer_grads[i] > 0;
    if (!needs_grad[i]) {
      uses[i].keeps_input = uses[i].keeps_output = false;
      uses[i].kept_other = 0;
      uses[i].backward_scratch = 0;
    }
  }
  // Accumulating, fit keeps the weights' low-precision packs through each window, and the rows
  // their float32 gradients wait for.
  const bool defers =
      !under_limit && defers_weight_gradients(accumulates, compiled() ? recipe_.accumulate_options() : AccumulateOptions{});
  std::size_t waiting_rows = 0;
  if (accumulates)
    for (std::size_t i = 1; i <= L; ++i) {
      params += uses[i].kept_packs + (needs_grad[i - 1] ? uses[i].kept_packs_for_input_gradient : 0);
      if (layer_grads[i] > 0 && defers) waiting_rows += uses[i].deferred_gradient_rows;
    }
  walk.now[kParameters] = params;
  walk.now[kGradients] += waiting_rows;
  // Who keeps which storage: a layer its output or input, the loss the logits (a converted copy
  // when they are not float32).
  for (std::size_t i = 1; i <= L; ++i) {
    if (uses[i].output_is_view) {
      boundary[i] = boundary[i - 1];
    } else {
      storages.push_back({.bytes = static_cast<std::size_t>(micro_batch * shapes[i].numel()) * dtype_size(dtypes[i])});
      boundary[i] = storages.size() - 1;
    }
  }
  for (std::size_t i = 1; i <= L; ++i) {
    if (uses[i].keeps_output) storages[boundary[i]].kept = true;
    if (uses[i].keeps_input) storages[boundary[i - 1]].kept = true;
  }
  const bool loss_converts = dtypes[L] != DType::f32;
  if (!loss_converts) storages[boundary[L]].kept = true;
  storages[0].kept = false;  // the batch is data, whoever keeps it

  plan.kept_by_layer.assign(L, 0);
  for (std::size_t i = 1; i <= L; ++i) {
    const LayerMemoryUse& u = uses[i];
    const PlannedStorage& out = storages[boundary[i]];
    const bool new_storage = !u.output_is_view;
    const std::size_t out_bytes = new_storage ? out.bytes : 0;
    // During the layer: its scratch and output are temporaries; what it keeps besides is an activation.
    walk.now[kActivations] += u.kept_other;
    walk.record(u.forward_scratch + out_bytes);
    if (new_storage) walk.now[out.kept ? kActivations : kTemporaries] += out.bytes;
    plan.kept_by_layer[i - 1] = u.kept_other + (new_storage && out.kept ? out.bytes : 0);
    // The input's storage goes when nothing keeps it and no later tensor is a view of it.
    const std::size_t in = boundary[i - 1];
    if (in != 0 && in != boundary[i] && !storages[in].kept && storages[in].alive) {
      walk.now[kTemporaries] -= storages[in].bytes;
      storages[in].alive = false;
    }
  }
  // The loss: cross-entropy keeps float32 logits (converting when needed) and each row's
  // log-sum-exp; its output is a scalar.
  const std::size_t logits_f32 = static_cast<std::size_t>(micro_batch * output.numel()) * 4;
  const std::size_t loss_kept =
      static_cast<std::size_t>(micro_batch * rows_per_sample) * 4 + (loss_converts ? logits_f32 : 0);
  walk.now[kActivations] += loss_kept;
  walk.record();
  if (boundary[L] != 0 && !storages[boundary[L]].kept && storages[boundary[L]].alive) {
    walk.now[kTemporaries] -= storages[boundary[L]].bytes;
    storages[boundary[L]].alive = false;
  }

  // Backward, from the loss: the gradient of the logits, then each layer's.
  std::size_t grad_out = logits_f32;
  walk.record(grad_out);
  walk.now[kActivations] -= loss_kept;
  if (loss_converts) grad_out = storages[boundary[L]].bytes;  // cast back to the logits' dtype
  for (std::size_t i = L; i >= 1; --i) {
    const LayerMemoryUse& u = uses[i];
    if (!accumulates) walk.now[kGradients] += layer_grads[i];
    // The gradient of the input: none for the batch, a view for a view.
    const std::size_t grad_in = (!needs_grad[i - 1] || u.output_is_view)
                                    ? 0
                                    : static_cast<std::size_t>(micro_batch * shapes[i - 1].numel()) * dtype_size(dtypes[i - 1]);
    walk.now[kActivations] -= u.kept_released_early;
    const std::size_t scratch = std::max(u.backward_scratch, needs_grad[i - 1] ? u.input_gradient_scratch : 0);
    if (needs_grad[i]) walk.record(grad_out + grad_in + scratch);
    // Its saved tensors are released; its output's last user is done.
    walk.now[kActivations] -= u.kept_other - u.kept_released_early;
    PlannedStorage& out = storages[boundary[i]];
    if (!u.output_is_view && out.alive) {
      walk.now[out.kept ? kActivations : kTemporaries] -= out.bytes;
      out.alive = false;
    }
    if (!u.output_is_view) grad_out = grad_in;
  }
  // The optimizer step: state created at the first step, then updated in place.
  walk.now[kActivations] = 0;
  walk.now[kTemporaries] = 0;
  walk.now[kGradients] = grads + waiting_rows;
  walk.record();
  return plan;
}

}  // namespace accrue
