// Model::memory_plan: a walk through one training step over sizes only, node by node of the
// model's graph. Each layer says what it keeps for backward and what it allocates on the way
// (Layer::memory_use); the walk tracks the storage of every value of the graph (a view shares its
// input's), frees what nobody keeps once its last reader is done (a skip connection's tensor lives
// until its merge), and records the peak of each category and of the total at every point where
// memory is allocated: each node's forward, the loss, each node's backward, and the optimizer step.

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "memory_plan.hpp"
#include "model.hpp"
#include "../framework/distributed/shard_plan.hpp"

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
  bool data = false;   // a batch's input: data, never freed by the step
  bool kept = false;   // saved for backward: an activation until its last user's backward
  bool alive = true;
};

// What lives through the whole step: the parameters and buffers, and the float32 gradients of each
// layer (of_layer[i] for layer i, 1-based).
struct ParameterBytes {
  std::size_t parameters = 0, gradients = 0;
  std::vector<std::size_t> of_layer;
};

ParameterBytes parameter_bytes(const std::vector<std::shared_ptr<Layer>>& layers) {
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

// The graph's values (0..inputs-1 the batch's inputs, inputs+k the output of node k) and what each
// node's layer does with them at one micro-batch. A Sequential is the chain where node k reads
// value k.
struct PlannedGraph {
  std::int64_t micro_batch = 0;
  std::size_t inputs = 1;
  std::vector<std::vector<std::size_t>> reads;  // per node: the values it reads
  std::vector<std::size_t> layer_of;            // per node: its layer (1-based, as ParameterBytes)
  std::vector<LayerMemoryUse> uses;             // per node
  std::vector<Shape> shapes;                    // per value
  std::vector<DType> dtypes;
  std::vector<bool> needs_grad;
  std::vector<std::size_t> outputs;  // values

  std::size_t nodes() const { return uses.size(); }
  std::size_t value(std::size_t node) const { return inputs + node; }
  std::size_t bytes(std::size_t v) const {
    return static_cast<std::size_t>(micro_batch * shapes[v].numel()) * dtype_size(dtypes[v]);
  }
  // A node's output and its (first) input.
  std::size_t out_bytes(std::size_t node) const { return bytes(value(node)); }
  std::size_t in_bytes(std::size_t node) const { return bytes(reads[node][0]); }
  bool input_needs_grad(std::size_t node) const {
    return std::any_of(reads[node].begin(), reads[node].end(), [&](std::size_t v) { return needs_grad[v]; });
  }
};

// A recomputed segment, nodes first..last of a chain in the graph (Model::recompute): forward keeps
// only its input; inside its backward its layers' forward runs again, node j's scratch and output
// beside the activations of nodes first..j-1 made again so far (the segment's last node records
// that forward's largest moment), then those of nodes first..j are alive while node j's backward
// runs; the recomputed output lives through the whole segment's backward.
void recompute_segment(PlannedGraph& g, std::size_t first, std::size_t last) {
  const std::vector<LayerMemoryUse> original(g.uses.begin() + static_cast<std::ptrdiff_t>(first),
                                             g.uses.begin() + static_cast<std::ptrdiff_t>(last + 1));
  const auto before = [&](std::size_t j) -> const LayerMemoryUse& { return original[j - first]; };
  std::size_t alive = 0, forward_kept = 0, forward_scratch = 0, largest_forward = 0;
  bool input_kept = true;  // the segment's input is the node's
  for (std::size_t j = first; j <= last; ++j) {
    const LayerMemoryUse& o = before(j);
    // Node j's forward: its scratch and output, and its input while it runs when nothing keeps it.
    const std::size_t scratch = o.forward_scratch + g.out_bytes(j) + (input_kept || o.output_is_view ? 0 : g.in_bytes(j));
    if (alive + scratch > forward_kept + forward_scratch) forward_kept = alive, forward_scratch = scratch;
    largest_forward = std::max(largest_forward, o.forward_scratch + g.out_bytes(j));
    const bool output_kept = !o.output_is_view && (o.keeps_output || (j < last && before(j + 1).keeps_input));
    input_kept = output_kept || o.output_is_view;
    alive += o.kept_other + (output_kept ? g.out_bytes(j) : 0);
    LayerMemoryUse& u = g.uses[j];
    u.recomputed = g.needs_grad[g.value(j)] ? alive : 0;
    u.kept_other = u.kept_released_early = 0;
    u.keeps_output = false;
    u.keeps_input = j == first;  // the node keeps the segment's input, whatever its first layer keeps
  }
  LayerMemoryUse& end = g.uses[last];
  if (g.needs_grad[g.value(last)]) end.recompute_forward_kept = forward_kept, end.recompute_forward_scratch = forward_scratch;
  if (before(last).keeps_output || before(last).output_is_view) return;
  // Measured (test_memory_plan, the MLP's and the CNN's segments ending in Dense or Conv2d): when the
  // last layer does not keep its output, the last layer's backward runs beside as much again as the
  // recomputed forward's largest step, besides that output, which lives through the segment's
  // backward.
  end.backward_scratch = std::max(end.backward_scratch, largest_forward);
  end.input_gradient_scratch = std::max(end.input_gradient_scratch, largest_forward);
  for (std::size_t j = first; j <= last; ++j) {
    g.uses[j].backward_scratch += g.out_bytes(last);
    if (g.uses[j].input_gradient_scratch > 0) g.uses[j].input_gradient_scratch += g.out_bytes(last);
  }
}

// The walk: the bytes of each category now, the storage of every value, the gradients waiting for
// their values' nodes, and the peaks recorded into the plan.
class StepWalk {
 public:
  StepWalk(MemoryPlan& plan, const PlannedGraph& graph, std::array<std::size_t, memory_category_count> at_start)
      : now_(at_start), plan_(plan), g_(graph), storage_of_(graph.inputs + graph.nodes()), grad_(storage_of_.size(), 0) {
    // The batch's inputs are data, whoever keeps them; a view shares its input's storage.
    for (std::size_t v = 0; v < g_.inputs; ++v) {
      storages_.push_back({.bytes = g_.bytes(v), .data = true});
      storage_of_[v] = v;
    }
    for (std::size_t k = 0; k < g_.nodes(); ++k) {
      if (g_.uses[k].output_is_view) {
        storage_of_[g_.value(k)] = storage_of_[g_.reads[k][0]];
      } else {
        storages_.push_back({.bytes = g_.out_bytes(k)});
        storage_of_[g_.value(k)] = storages_.size() - 1;
      }
    }
    // Who keeps which storage: a node its output or inputs, the loss the outputs (a converted copy
    // when they are not float32); when its last reader is done (the loss for an output).
    last_reader_.assign(storages_.size(), 0);
    for (std::size_t k = 0; k < g_.nodes(); ++k) {
      if (g_.uses[k].keeps_output) storages_[storage_of_[g_.value(k)]].kept = true;
      for (const std::size_t v : g_.reads[k]) {
        if (g_.uses[k].keeps_input) storages_[storage_of_[v]].kept = true;
        last_reader_[storage_of_[v]] = std::max(last_reader_[storage_of_[v]], k);
      }
    }
    for (const std::size_t v : g_.outputs) {
      if (!converts(v)) storages_[storage_of_[v]].kept = true;
      last_reader_[storage_of_[v]] = g_.nodes();
    }
    for (PlannedStorage& s : storages_)
      if (s.data) s.kept = false;
  }

  // Each node's forward: its scratch and output are temporaries while it runs; what it keeps
  // besides is an activation. An input's storage goes after its last reader when nothing keeps it.
  void forward() {
    plan_.kept_by_layer.assign(g_.nodes(), 0);
    for (std::size_t k = 0; k < g_.nodes(); ++k) {
      const LayerMemoryUse& u = g_.uses[k];
      const PlannedStorage& out = storages_[storage_of_[g_.value(k)]];
      const bool new_storage = !u.output_is_view;
      now_[kActivations] += u.kept_other;
      record(u.forward_scratch + (new_storage ? out.bytes : 0));
      if (new_storage) now_[out.kept ? kActivations : kTemporaries] += out.bytes;
      plan_.kept_by_layer[k] = u.kept_other + (new_storage && out.kept ? out.bytes : 0);
      for (const std::size_t v : g_.reads[k])
        if (last_reader_[storage_of_[v]] == k) free_if_unkept(storage_of_[v]);
    }
  }

  // The loss keeps `kept` bytes until backward reaches it; its output is a scalar.
  void loss(std::size_t kept) {
    loss_kept_ = kept;
    now_[kActivations] += kept;
    record();
    for (const std::size_t v : g_.outputs) free_if_unkept(storage_of_[v]);
  }

  // Backward, from the loss: the gradient of each output's logits in float32 (`logits_f32` bytes
  // each), then each node's, in reverse; a value read by several nodes gathers their gradients in
  // one buffer, which lives until its own node's backward. A layer's float32 gradients appear with
  // its (first) backward unless `accumulating` already has them.
  void backward(const std::vector<std::size_t>& logits_f32, const ParameterBytes& parameters, bool accumulating) {
    std::size_t logits = 0;
    for (const std::size_t b : logits_f32) logits += b;
    record(logits);
    now_[kActivations] -= loss_kept_;
    for (std::size_t o = 0; o < g_.outputs.size(); ++o) {
      const std::size_t v = g_.outputs[o];
      grad_[v] = converts(v) ? storages_[storage_of_[v]].bytes : logits_f32[o];  // cast back to the logits' dtype
    }
    std::vector<bool> has_gradients(parameters.of_layer.size(), false);
    for (std::size_t k = g_.nodes(); k-- > 0;) {
      const LayerMemoryUse& u = g_.uses[k];
      const std::size_t v = g_.value(k);
      const std::size_t layer = g_.layer_of[k];
      if (!accumulating && !has_gradients[layer]) now_[kGradients] += parameters.of_layer[layer];
      has_gradients[layer] = true;
      const std::size_t grad_out = grad_[v];
      std::size_t others = 0;
      for (const std::size_t w : grad_) others += w;
      others -= grad_out;
      // The gradients of the inputs: none for the batch, a view for a view.
      const bool input_gradient = g_.input_needs_grad(k);
      std::size_t grad_in = 0;
      if (!u.output_is_view)
        for (const std::size_t r : distinct(g_.reads[k]))
          if (g_.needs_grad[r]) grad_in += g_.bytes(r);
      now_[kActivations] -= u.kept_released_early;
      // An output the node does not keep went with the backward of its readers, which kept it.
      if (!u.output_is_view && !u.keeps_output) release(storages_[storage_of_[v]]);
      const std::size_t scratch = input_gradient ? u.scratch_with_input_gradient() : u.backward_scratch;
      if (u.recompute_forward_scratch > 0) {  // a segment's forward made again, beside the output's gradient
        now_[kActivations] += u.recompute_forward_kept;
        record(others + grad_out + u.recompute_forward_scratch);
        now_[kActivations] -= u.recompute_forward_kept;
      }
      now_[kActivations] += u.recomputed;
      if (g_.needs_grad[v]) record(others + grad_out + grad_in + scratch);
      now_[kActivations] -= u.recomputed;
      // Its saved tensors are released; its output's last user is done.
      now_[kActivations] -= u.kept_other - u.kept_released_early;
      grad_[v] = 0;
      if (!u.output_is_view) {
        release(storages_[storage_of_[v]]);
        for (const std::size_t r : g_.reads[k])
          if (g_.needs_grad[r]) grad_[r] = g_.bytes(r);
      } else if (grad_[g_.reads[k][0]] == 0) {
        grad_[g_.reads[k][0]] = grad_out;
      }
    }
  }

  // A moment of the window's close and optimizer step, with `gradients` bytes of them and
  // `temporaries`: state created at the first step, then updated in place.
  void step(std::size_t gradients, std::size_t temporaries = 0) {
    now_[kActivations] = 0;
    now_[kTemporaries] = temporaries;
    now_[kGradients] = gradients;
    record();
  }

 private:
  bool converts(std::size_t v) const { return g_.dtypes[v] != DType::f32; }

  static std::vector<std::size_t> distinct(std::vector<std::size_t> values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
  }

  void release(PlannedStorage& s) {
    if (!s.alive || s.data) return;
    now_[s.kept ? kActivations : kTemporaries] -= s.bytes;
    s.alive = false;
  }

  // A storage no one keeps goes once its last reader is done (never the batch's: it is data).
  void free_if_unkept(std::size_t storage) {
    PlannedStorage& s = storages_[storage];
    if (s.data || s.kept || !s.alive) return;
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
  const PlannedGraph& g_;
  std::vector<PlannedStorage> storages_;
  std::vector<std::size_t> storage_of_;   // per value
  std::vector<std::size_t> last_reader_;  // per storage: the last node reading it (nodes(): the loss)
  std::vector<std::size_t> grad_;         // per value: the bytes of its gradient waiting for its node
  std::size_t loss_kept_ = 0;
};

// The graph of `nodes` over `inputs` (Model's), each node's memory use asked with `query` for its
// (first) input. A layer records its backward (and keeps anything) only when an input needs a
// gradient or it has parameters that do; the batch needs none.
PlannedGraph planned_graph(const std::vector<std::shared_ptr<Layer>>& layers, const std::vector<detail::GraphInput>& inputs,
                           const std::vector<detail::GraphNode>& nodes,
                           const std::vector<std::size_t>& outputs, const ParameterBytes& parameters,
                           LayerMemoryQuery query) {
  PlannedGraph graph{.micro_batch = query.batch, .inputs = inputs.size(), .outputs = outputs};
  for (const auto& in : inputs) {
    graph.shapes.push_back(*in.shape);
    graph.dtypes.push_back(DType::f32);  // as the batch arrives; an int32 input is 4 bytes too
    graph.needs_grad.push_back(false);
  }
  for (const auto& node : nodes) {
    const Layer& layer = *layers[node.layer];
    query.input_shape = graph.shapes[node.inputs[0]];
    query.input_dtype = graph.dtypes[node.inputs[0]];
    LayerMemoryUse use = layer.memory_use(query);
    bool needs_grad = parameters.of_layer[node.layer + 1] > 0;
    for (const std::size_t v : node.inputs) needs_grad = needs_grad || graph.needs_grad[v];
    if (!needs_grad) {
      use.keeps_input = use.keeps_output = false;
      use.kept_other = use.recomputed = 0;
      use.backward_scratch = 0;
    }
    graph.reads.push_back(node.inputs);
    graph.layer_of.push_back(node.layer + 1);
    graph.uses.push_back(use);
    graph.shapes.push_back(layer.output_shape());
    graph.dtypes.push_back(use.output_dtype);
    graph.needs_grad.push_back(needs_grad);
  }
  return graph;
}

// What accumulating keeps through each window: the weights' low-precision packs, and the rows
// their float32 gradients wait for when `defers`; once per layer, however often the graph calls it.
struct WindowKept {
  std::size_t packs = 0, waiting_rows = 0;
};

WindowKept window_kept(const PlannedGraph& graph, const ParameterBytes& parameters, bool defers) {
  WindowKept kept;
  std::vector<bool> counted(parameters.of_layer.size(), false);
  for (std::size_t k = 0; k < graph.nodes(); ++k) {
    const std::size_t l = graph.layer_of[k];
    if (counted[l]) continue;
    counted[l] = true;
    const LayerMemoryUse& u = graph.uses[k];
    kept.packs += u.kept_packs + (graph.input_needs_grad(k) ? u.kept_packs_for_input_gradient : 0);
    if (parameters.of_layer[l] > 0 && defers) kept.waiting_rows += u.deferred_gradient_rows;
  }
  return kept;
}

// The loss's share, over the outputs: their targets (data), what it keeps until backward, and
// each output's gradient of float32 logits.
struct LossBytes {
  std::size_t targets = 0, kept = 0;
  std::vector<std::size_t> logits_f32;
};

LossBytes loss_bytes(const PlannedGraph& graph, const std::vector<bool>& cross_entropy_of) {
  LossBytes bytes;
  const auto batch = static_cast<std::size_t>(graph.micro_batch);
  for (std::size_t o = 0; o < graph.outputs.size(); ++o) {
    const std::size_t v = graph.outputs[o];
    const bool cross_entropy = o < cross_entropy_of.size() && cross_entropy_of[o];
    const Shape& output = graph.shapes[v];
    // Cross-entropy has a label and a log-sum-exp per row of logits: one per sample, or per token.
    const std::int64_t rows_per_sample = output.rank() == 0 || output[-1] == 0 ? 1 : output.numel() / output[-1];
    bytes.targets += batch * (cross_entropy ? 4 * static_cast<std::size_t>(rows_per_sample) : static_cast<std::size_t>(output.numel()) * 4);
    bytes.logits_f32.push_back(batch * static_cast<std::size_t>(output.numel()) * 4);
    // The loss keeps float32 logits (converting them when needed) and each row's log-sum-exp.
    bytes.kept += batch * static_cast<std::size_t>(rows_per_sample) * 4 + (graph.dtypes[v] != DType::f32 ? bytes.logits_f32.back() : 0);
  }
  return bytes;
}

// The gradients of one process alone (`gradients` bytes, freed after each step), or one process's
// buffers for the gradients' reduction and the parameters' gather in a data-parallel run, at the
// moments of a step, as its distributed::Reducer and ShardedParameters make them:
// unsharded and stage 1 the buckets (the flat space, padding included) and the flags for the
// whole run; stage 2 at the window's close the buckets through the window, its part of the sums
// from the close to the step, the largest bucket's gather buffer; stage 2 each micro-batch its
// part through the window and the buckets backward fills (at most two next to each other).
struct ProcessBuffers {
  std::size_t stepped_bytes = 0;  // float32 bytes of the elements the process steps
  std::size_t through_window = 0, at_close = 0, stepping = 0, gather = 0, between_windows = 0;
  std::size_t most() const { return std::max({through_window, at_close, stepping + gather}); }
};

bool reduces_each_micro_batch(const DataParallel& p) {
  return p.processes > 1 && p.shard == Shard::gradients && p.accumulation == ShardAccumulation::reduce_each_micro_batch;
}

ProcessBuffers process_buffers(const Model& model, const DataParallel& p, bool accumulates, std::size_t gradients) {
  if (p.processes <= 1)
    return {.stepped_bytes = gradients, .through_window = accumulates ? gradients : 0, .at_close = gradients,
            .stepping = gradients};
  std::vector<std::int64_t> sizes;
  for (const auto& [name, t] : model.trainable_parameters()) sizes.push_back(t.numel());
  const distributed::BucketPlan buckets{sizes, sizeof(float), p.bucket_bytes};
  const distributed::ShardPlan shards{buckets, p.processes};
  constexpr std::size_t flags = 3 * sizeof(float);
  const auto bytes = [](std::int64_t elements) { return static_cast<std::size_t>(elements) * sizeof(float); };
  int rank = p.rank;
  if (rank < 0)
    for (int r = 0; r < p.processes; ++r)
      if (rank < 0 || shards.end(r) - shards.begin(r) > shards.end(rank) - shards.begin(rank)) rank = r;
  const std::size_t space = bytes(shards.elements()), range = bytes(shards.end(rank) - shards.begin(rank));
  std::size_t largest = 0, adjacent = 0;
  const auto& all = buckets.buckets();
  for (std::size_t b = 0; b < all.size(); ++b) {
    largest = std::max(largest, bytes(all[b].elements));
    adjacent = std::max(adjacent, bytes(all[b].elements + (b + 1 < all.size() ? all[b + 1].elements : 0)));
  }
  ProcessBuffers out;
  if (p.shard == Shard::none)
    for (const std::int64_t n : sizes) out.stepped_bytes += bytes(n);
  else
    for (const distributed::ShardPlan::Piece& piece : shards.pieces(rank)) out.stepped_bytes += bytes(piece.elements);
  if (p.shard != Shard::gradients) {
    out.through_window = out.at_close = out.stepping = out.between_windows = space + flags;
  } else if (p.accumulation == ShardAccumulation::reduce_at_window_close) {
    out.through_window = space + flags;
    out.at_close = space + range + flags;
    out.stepping = range + flags;
    out.gather = largest;
    out.between_windows = flags;
  } else {  // reduces_each_micro_batch
    out.through_window = (accumulates ? range : 0) + adjacent + flags;
    out.at_close = range + adjacent + flags;
    out.stepping = range + flags;
    out.gather = largest;
    out.between_windows = flags;
  }
  return out;
}

}  // namespace

MemoryPlan Model::memory_plan(std::int64_t micro_batch) const {
  return memory_plan(micro_batch, compiled() && recipe_.accumulates());
}

MemoryPlan Model::memory_plan(std::int64_t micro_batch, const DataParallel& processes) const {
  return memory_plan(micro_batch, compiled() && recipe_.accumulates(), false, 0, processes);
}

std::optional<std::int64_t> Model::fitting_micro_batch(std::int64_t micro_batch, std::size_t limit,
                                                            std::size_t live_besides, std::int64_t read_ahead) const {
  for (std::int64_t m = micro_batch / 2; m >= 1; m /= 2)
    if (memory_plan(m, /*accumulating=*/true, /*under_limit=*/true, read_ahead).peak_total + live_besides <= limit)
      return m;
  return std::nullopt;
}

bool Model::defers_weight_gradients(bool accumulating, const AccumulateOptions& options) const {
  const bool capped = (compiled() && recipe_.memory_budget()) || memory_stats(device_).limit != 0;
  return accumulating && options.weight_gradients == WeightGradients::per_window && !capped;
}

MemoryPlan Model::memory_plan(std::int64_t micro_batch, bool accumulates, bool under_limit,
                                   std::int64_t read_ahead, const DataParallel& processes) const {
  return plan_memory(micro_batch, accumulates, under_limit, read_ahead,
                     compiled() ? recipe_.amp_dtype(device_) : std::nullopt, processes);
}

PrecisionEffect Model::precision_effect(std::int64_t micro_batch, bool accumulating, bool under_limit,
                                        const DataParallel& processes) const {
  return {memory_plan(micro_batch, accumulating, under_limit, 0, processes),
          plan_memory(micro_batch, accumulating, under_limit, 0, {}, processes)};
}

// The plan with `autocast` (the compiled recipe's, or none for float32).
MemoryPlan Model::plan_memory(std::int64_t micro_batch, bool accumulates, bool under_limit,
                                   std::int64_t read_ahead, std::optional<DType> autocast,
                                   const DataParallel& processes) const {
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
  PlannedGraph graph = planned_graph(layers_, inputs_, nodes_, outputs_, parameters,
                                     {.batch = micro_batch, .autocast = autocast, .device = device_, .keeps_packs = accumulates});
  for (const auto& [begin, end] : segments_) recompute_segment(graph, begin, end - 1);
  const AccumulateOptions options = compiled() ? recipe_.accumulate_options() : AccumulateOptions{};
  // Reduced every micro-batch, each micro-batch's weight gradients are multiplied at once.
  const bool defers = !under_limit && !reduces_each_micro_batch(processes) && defers_weight_gradients(accumulates, options);
  const WindowKept window = accumulates ? window_kept(graph, parameters, defers) : WindowKept{};
  std::vector<bool> cross_entropy;
  for (const CompiledLoss& l : losses_) cross_entropy.push_back(l.loss.name() == "CrossEntropy");
  const LossBytes loss = loss_bytes(graph, cross_entropy);
  std::size_t input_bytes = 0;
  for (const GraphInput& in : inputs_) input_bytes += static_cast<std::size_t>(micro_batch * in.shape->numel()) * 4;

  // The optimizer's state per parameter, and the weights' moving average (.ema(), .swa()).
  const int state_tensors =
      compiled() ? recipe_.optimizer().state_tensors().value_or(0) + (recipe_.weight_average() ? 1 : 0) : 0;
  std::array<std::size_t, memory_category_count> at_start{};
  at_start[kParameters] = parameters.parameters + window.packs;
  const ProcessBuffers buffers = process_buffers(*this, processes, accumulates, parameters.gradients);
  at_start[kOptimizer] = static_cast<std::size_t>(state_tensors) * buffers.stepped_bytes;
  // The micro-batch training, and those a background queue holds ready.
  at_start[kData] = static_cast<std::size_t>(1 + read_ahead) * (input_bytes + loss.targets);
  at_start[kGradients] = buffers.through_window + window.waiting_rows;
  plan.data_parallel = processes;
  plan.communication = processes.processes > 1 ? buffers.most() : 0;
  plan.gradients_between_windows = buffers.between_windows;

  StepWalk walk(plan, graph, at_start);
  walk.forward();
  walk.loss(loss.kept);
  // One process's gradients appear with each layer's backward unless accumulating (then the earlier
  // micro-batches' are there from the start); a data-parallel process's buffers hold them all.
  walk.backward(loss.logits_f32, parameters, accumulates || processes.processes > 1);
  walk.step(buffers.at_close + window.waiting_rows);
  walk.step(buffers.stepping, buffers.gather);
  return plan;
}

}  // namespace accrue
