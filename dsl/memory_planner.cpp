// Sequential::memory_plan: a walk through one training step over sizes only. Each layer says what
// it keeps for backward and what it allocates on the way (Layer::memory_use); the walk tracks the
// storage of every tensor between layers (a view shares its input's), frees what nobody keeps, and
// records the peak of each category and of the total at every point where memory is allocated:
// each layer's forward, the loss, each layer's backward, and the optimizer step.

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "memory_plan.hpp"
#include "sequential.hpp"

namespace accrue {

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

// What lives through the whole step: the parameters and buffers, and the float32 gradients of each
// layer (of_layer[i] for layer i, 1-based).
struct ParameterBytes {
  std::size_t parameters = 0, gradients = 0;
  std::vector<std::size_t> of_layer;
};

ParameterBytes parameter_bytes(const std::vector<std::unique_ptr<Layer>>& layers) {
  ParameterBytes bytes;
  bytes.of_layer.assign(layers.size() + 1, 0);
  for (std::size_t i = 1; i <= layers.size(); ++i) {
    for (const auto& [name, p] : layers[i - 1]->named_parameters()) {
      bytes.parameters += p.nbytes();
      if (p.requires_grad()) bytes.of_layer[i] += static_cast<std::size_t>(p.numel()) * 4;
    }
    for (const auto& [name, b] : layers[i - 1]->named_buffers()) bytes.parameters += b.nbytes();
    bytes.gradients += bytes.of_layer[i];
  }
  return bytes;
}

// The tensors between layers (0 is the batch, i the output of layer i) and what each layer does
// with them at one micro-batch.
struct LayerChain {
  std::int64_t micro_batch = 0;
  std::vector<LayerMemoryUse> uses;  // uses[i] of layer i
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<bool> needs_grad;

  std::size_t layers() const { return uses.size() - 1; }
  std::size_t bytes(std::size_t i) const {
    return static_cast<std::size_t>(micro_batch * shapes[i].numel()) * dtype_size(dtypes[i]);
  }
};

// A recomputed segment, layers first..last of the chain (Sequential::recompute): forward keeps only
// its input; inside its backward its layers' forward runs again, layer j's scratch and output
// beside the activations of layers first..j-1 made again so far (the segment's last layer records
// that forward's largest moment), then those of layers first..j are alive while layer j's backward
// runs; the recomputed output lives through the whole segment's backward.
void recompute_segment(LayerChain& chain, std::size_t first, std::size_t last) {
  const std::vector<LayerMemoryUse> original(chain.uses.begin() + static_cast<std::ptrdiff_t>(first),
                                             chain.uses.begin() + static_cast<std::ptrdiff_t>(last + 1));
  const auto before = [&](std::size_t j) -> const LayerMemoryUse& { return original[j - first]; };
  std::size_t alive = 0, forward_kept = 0, forward_scratch = 0, largest_forward = 0;
  bool input_kept = true;  // the segment's input is the node's
  for (std::size_t j = first; j <= last; ++j) {
    const LayerMemoryUse& o = before(j);
    // Layer j's forward: its scratch and output, and its input while it runs when nothing keeps it.
    const std::size_t scratch = o.forward_scratch + chain.bytes(j) + (input_kept || o.output_is_view ? 0 : chain.bytes(j - 1));
    if (alive + scratch > forward_kept + forward_scratch) forward_kept = alive, forward_scratch = scratch;
    largest_forward = std::max(largest_forward, o.forward_scratch + chain.bytes(j));
    const bool output_kept = !o.output_is_view && (o.keeps_output || (j < last && before(j + 1).keeps_input));
    input_kept = output_kept || o.output_is_view;
    alive += o.kept_other + (output_kept ? chain.bytes(j) : 0);
    LayerMemoryUse& u = chain.uses[j];
    u.recomputed = chain.needs_grad[j] ? alive : 0;
    u.kept_other = u.kept_released_early = 0;
    u.keeps_output = false;
    u.keeps_input = j == first;  // the node keeps the segment's input, whatever its first layer keeps
  }
  LayerMemoryUse& end = chain.uses[last];
  if (chain.needs_grad[last]) end.recompute_forward_kept = forward_kept, end.recompute_forward_scratch = forward_scratch;
  if (before(last).keeps_output || before(last).output_is_view) return;
  // Measured (test_memory_plan, the MLP's and the CNN's segments ending in Dense or Conv2d): when the
  // last layer does not keep its output, the last layer's backward runs beside as much again as the
  // recomputed forward's largest step, besides that output, which lives through the segment's
  // backward.
  end.backward_scratch = std::max(end.backward_scratch, largest_forward);
  end.input_gradient_scratch = std::max(end.input_gradient_scratch, largest_forward);
  for (std::size_t j = first; j <= last; ++j) {
    chain.uses[j].backward_scratch += chain.bytes(last);
    if (chain.uses[j].input_gradient_scratch > 0) chain.uses[j].input_gradient_scratch += chain.bytes(last);
  }
}

LayerChain layer_chain(const std::vector<std::unique_ptr<Layer>>& layers, const Shape& input, std::int64_t micro_batch,
                       const std::optional<DType>& autocast, const Device& device, const ParameterBytes& parameters,
                       bool keeps_packs, const std::vector<std::pair<std::size_t, std::size_t>>& recomputed) {
  const std::size_t L = layers.size();
  LayerChain chain{.micro_batch = micro_batch,
                   .uses = std::vector<LayerMemoryUse>(L + 1),
                   .shapes = std::vector<Shape>(L + 1),
                   .dtypes = std::vector<DType>(L + 1, DType::f32),
                   .needs_grad = std::vector<bool>(L + 1, false)};
  chain.shapes[0] = input;
  for (std::size_t i = 1; i <= L; ++i) {
    const Layer& layer = *layers[i - 1];
    LayerMemoryUse& use = chain.uses[i];
    use = layer.memory_use({.input_shape = chain.shapes[i - 1],
                            .batch = micro_batch,
                            .input_dtype = chain.dtypes[i - 1],
                            .autocast = autocast,
                            .device = device,
                            .keeps_packs = keeps_packs});
    chain.shapes[i] = layer.output_shape();
    chain.dtypes[i] = use.output_dtype;
    // A layer records its backward (and keeps anything) only when its input needs a gradient or it
    // has parameters that do; the batch needs none.
    chain.needs_grad[i] = chain.needs_grad[i - 1] || parameters.of_layer[i] > 0;
    if (!chain.needs_grad[i]) {
      use.keeps_input = use.keeps_output = false;
      use.kept_other = use.recomputed = 0;
      use.backward_scratch = 0;
    }
  }
  for (const auto& [begin, end] : recomputed) recompute_segment(chain, begin + 1, end);
  return chain;
}

// The walk: the bytes of each category now, the storage of every tensor between layers, and the
// peaks recorded into the plan.
class StepWalk {
 public:
  StepWalk(MemoryPlan& plan, const LayerChain& chain, std::array<std::size_t, memory_category_count> at_start)
      : now_(at_start), plan_(plan), chain_(chain), boundary_(chain.layers() + 1, 0), storages_(1) {
    // Who keeps which storage: a layer its output or input, the loss the logits (a converted copy
    // when they are not float32).
    const std::size_t L = chain.layers();
    for (std::size_t i = 1; i <= L; ++i) {
      if (chain.uses[i].output_is_view) {
        boundary_[i] = boundary_[i - 1];
      } else {
        storages_.push_back({.bytes = chain.bytes(i)});
        boundary_[i] = storages_.size() - 1;
      }
    }
    for (std::size_t i = 1; i <= L; ++i) {
      if (chain.uses[i].keeps_output) storages_[boundary_[i]].kept = true;
      if (chain.uses[i].keeps_input) storages_[boundary_[i - 1]].kept = true;
    }
    if (!loss_converts()) storages_[boundary_[L]].kept = true;
    storages_[0].kept = false;  // the batch is data, whoever keeps it
  }

  // Each layer's forward: its scratch and output are temporaries while it runs; what it keeps
  // besides is an activation.
  void forward() {
    const std::size_t L = chain_.layers();
    plan_.kept_by_layer.assign(L, 0);
    for (std::size_t i = 1; i <= L; ++i) {
      const LayerMemoryUse& u = chain_.uses[i];
      const PlannedStorage& out = storages_[boundary_[i]];
      const bool new_storage = !u.output_is_view;
      now_[kActivations] += u.kept_other;
      record(u.forward_scratch + (new_storage ? out.bytes : 0));
      if (new_storage) now_[out.kept ? kActivations : kTemporaries] += out.bytes;
      plan_.kept_by_layer[i - 1] = u.kept_other + (new_storage && out.kept ? out.bytes : 0);
      // The input's storage goes when nothing keeps it and no later tensor is a view of it.
      if (boundary_[i - 1] != boundary_[i]) free_if_unkept(boundary_[i - 1]);
    }
  }

  // The loss keeps `kept` bytes until backward reaches it; its output is a scalar.
  void loss(std::size_t kept) {
    loss_kept_ = kept;
    now_[kActivations] += kept;
    record();
    free_if_unkept(boundary_[chain_.layers()]);
  }

  // Backward, from the loss: the gradient of the logits (`logits_f32` bytes), then each layer's;
  // layer i's float32 gradients appear with its backward unless `accumulating` already has them.
  void backward(std::size_t logits_f32, const ParameterBytes& parameters, bool accumulating) {
    std::size_t grad_out = logits_f32;
    record(grad_out);
    now_[kActivations] -= loss_kept_;
    if (loss_converts()) grad_out = storages_[boundary_[chain_.layers()]].bytes;  // cast back to the logits' dtype
    for (std::size_t i = chain_.layers(); i >= 1; --i) {
      const LayerMemoryUse& u = chain_.uses[i];
      if (!accumulating) now_[kGradients] += parameters.of_layer[i];
      // The gradient of the input: none for the batch, a view for a view.
      const bool input_gradient = chain_.needs_grad[i - 1];
      const std::size_t grad_in = !input_gradient || u.output_is_view ? 0 : chain_.bytes(i - 1);
      now_[kActivations] -= u.kept_released_early;
      // An output the layer does not keep went with the backward of the layer after it, which kept it.
      if (!u.output_is_view && !u.keeps_output) release(storages_[boundary_[i]]);
      const std::size_t scratch = input_gradient ? u.scratch_with_input_gradient() : u.backward_scratch;
      if (u.recompute_forward_scratch > 0) {  // a segment's forward made again, beside the output's gradient
        now_[kActivations] += u.recompute_forward_kept;
        record(grad_out + u.recompute_forward_scratch);
        now_[kActivations] -= u.recompute_forward_kept;
      }
      now_[kActivations] += u.recomputed;
      if (chain_.needs_grad[i]) record(grad_out + grad_in + scratch);
      now_[kActivations] -= u.recomputed;
      // Its saved tensors are released; its output's last user is done.
      now_[kActivations] -= u.kept_other - u.kept_released_early;
      if (!u.output_is_view) {
        release(storages_[boundary_[i]]);
        grad_out = grad_in;
      }
    }
  }

  // The optimizer step, with `gradients` bytes of them: state created at the first step, then
  // updated in place.
  void step(std::size_t gradients) {
    now_[kActivations] = 0;
    now_[kTemporaries] = 0;
    now_[kGradients] = gradients;
    record();
  }

 private:
  bool loss_converts() const { return chain_.dtypes[chain_.layers()] != DType::f32; }

  void release(PlannedStorage& s) {
    if (!s.alive) return;
    now_[s.kept ? kActivations : kTemporaries] -= s.bytes;
    s.alive = false;
  }

  // A storage no one keeps goes once its last reader is done (never the batch's: it is data).
  void free_if_unkept(std::size_t storage) {
    PlannedStorage& s = storages_[storage];
    if (storage == 0 || s.kept || !s.alive) return;
    now_[kTemporaries] -= s.bytes;
    s.alive = false;
  }

  // The peaks, with what is allocated now and `extra_temporaries` more.
  void record(std::size_t extra_temporaries = 0) {
    std::size_t total = 0;
    for (int i = 0; i < memory_category_count; ++i) {
      const std::size_t v = now_[i] + (i == kTemporaries ? extra_temporaries : 0);
      plan_.peak[i] = std::max(plan_.peak[i], v);
      total += v;
    }
    plan_.peak_total = std::max(plan_.peak_total, total);
  }

  std::array<std::size_t, memory_category_count> now_;
  MemoryPlan& plan_;
  const LayerChain& chain_;
  std::vector<std::size_t> boundary_;  // boundary_[i]: the storage of tensor i
  std::vector<PlannedStorage> storages_;
  std::size_t loss_kept_ = 0;
};

}  // namespace

MemoryPlan Sequential::memory_plan(std::int64_t micro_batch) const {
  return memory_plan(micro_batch, compiled() && recipe_.accumulates());
}

std::optional<std::int64_t> Sequential::fitting_micro_batch(std::int64_t micro_batch, std::size_t limit,
                                                            std::size_t live_besides, std::int64_t read_ahead) const {
  for (std::int64_t m = micro_batch / 2; m >= 1; m /= 2)
    if (memory_plan(m, /*accumulating=*/true, /*under_limit=*/true, read_ahead).peak_total + live_besides <= limit)
      return m;
  return std::nullopt;
}

bool Sequential::defers_weight_gradients(bool accumulating, const AccumulateOptions& options) const {
  const bool capped = (compiled() && recipe_.memory_budget()) || memory_stats(device_).limit != 0;
  return accumulating && options.weight_gradients == WeightGradients::per_window && !capped;
}

MemoryPlan Sequential::memory_plan(std::int64_t micro_batch, bool accumulates, bool under_limit,
                                   std::int64_t read_ahead) const {
  return plan_memory(micro_batch, accumulates, under_limit, read_ahead,
                     compiled() ? recipe_.amp_dtype(device_) : std::nullopt);
}

PrecisionEffect Sequential::precision_effect(std::int64_t micro_batch, bool accumulating, bool under_limit) const {
  return {memory_plan(micro_batch, accumulating, under_limit), plan_memory(micro_batch, accumulating, under_limit, 0, {})};
}

// The plan with `autocast` (the compiled recipe's, or none for float32).
MemoryPlan Sequential::plan_memory(std::int64_t micro_batch, bool accumulates, bool under_limit,
                                   std::int64_t read_ahead, std::optional<DType> autocast) const {
  ACCRUE_CHECK(micro_batch > 0, "memory_plan: the micro-batch must be positive, got {}", micro_batch);
  ACCRUE_CHECK(read_ahead >= 0, "memory_plan: read_ahead must not be negative, got {}", read_ahead);
  ACCRUE_CHECK(built_, "memory_plan: model '{}' is not built yet; declare layers::Input or call build(shape) first",
               name_);
  MemoryPlan plan;
  plan.micro_batch = micro_batch;
  plan.read_ahead = read_ahead;
  plan.device = device_;
  plan.precision = autocast ? fmt::format("{} autocast", dtype_name(*autocast)) : "float32";

  const ParameterBytes parameters = parameter_bytes(layers_);
  const LayerChain chain =
      layer_chain(layers_, *input_shape_, micro_batch, autocast, device_, parameters, accumulates, segments_);
  // Accumulating, fit keeps the weights' low-precision packs through each window, and the rows
  // their float32 gradients wait for.
  const AccumulateOptions options = compiled() ? recipe_.accumulate_options() : AccumulateOptions{};
  const bool defers = !under_limit && defers_weight_gradients(accumulates, options);
  std::size_t packs = 0, waiting_rows = 0;
  if (accumulates)
    for (std::size_t i = 1; i <= layers_.size(); ++i) {
      packs += chain.uses[i].kept_packs + (chain.needs_grad[i - 1] ? chain.uses[i].kept_packs_for_input_gradient : 0);
      if (parameters.of_layer[i] > 0 && defers) waiting_rows += chain.uses[i].deferred_gradient_rows;
    }

  const Shape output = layers_.back()->output_shape();
  const bool cross_entropy = compiled() && loss_.name() == "CrossEntropy";
  // Cross-entropy has a label and a log-sum-exp per row of logits: one per sample, or per token.
  const std::int64_t rows_per_sample = output.rank() == 0 || output[-1] == 0 ? 1 : output.numel() / output[-1];
  const std::size_t target_bytes = static_cast<std::size_t>(micro_batch) *
                                   (cross_entropy ? 4 * static_cast<std::size_t>(rows_per_sample)
                                                  : static_cast<std::size_t>(output.numel()) * 4);
  const std::size_t logits_f32 = static_cast<std::size_t>(micro_batch * output.numel()) * 4;
  // The loss keeps float32 logits (converting them when needed) and each row's log-sum-exp.
  const std::size_t loss_kept = static_cast<std::size_t>(micro_batch * rows_per_sample) * 4 +
                                (chain.dtypes.back() != DType::f32 ? logits_f32 : 0);

  // The optimizer's state per parameter, and the weights' moving average (.ema(), .swa()).
  const int state_tensors =
      compiled() ? recipe_.optimizer().state_tensors().value_or(0) + (recipe_.weight_average() ? 1 : 0) : 0;
  std::array<std::size_t, memory_category_count> at_start{};
  at_start[kParameters] = parameters.parameters + packs;
  at_start[kOptimizer] = static_cast<std::size_t>(state_tensors) * parameters.gradients;
  // The micro-batch training, and those a background queue holds ready.
  at_start[kData] = static_cast<std::size_t>(1 + read_ahead) *
                    (static_cast<std::size_t>(micro_batch * input_shape_->numel()) * 4 + target_bytes);
  // Accumulating, the gradients of earlier micro-batches are there from the start; otherwise each
  // layer's appear with its backward.
  at_start[kGradients] = (accumulates ? parameters.gradients : 0) + waiting_rows;

  StepWalk walk(plan, chain, at_start);
  walk.forward();
  walk.loss(loss_kept);
  walk.backward(logits_f32, parameters, accumulates);
  walk.step(parameters.gradients + waiting_rows);
  return plan;
}

}  // namespace accrue
