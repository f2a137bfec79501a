#pragma once
// Define-by-run automatic differentiation.
//
// An op that runs while grad mode is on and sees an input that requires grad records a Node: the
// function that turns the gradient of its output into gradients of its inputs, with the tensors
// it saved for that. backward() walks the recorded graph from a scalar in reverse topological
// order and *adds* each leaf's gradient into its .grad(), as PyTorch does: calling backward() on
// several micro-batches before an optimizer step sums their gradients, which is what gradient
// accumulation relies on.
//
// Writing a layer or a loss from existing ops needs none of this: ops record themselves. A new
// primitive op derives from Node (see ops/*.cpp for examples).

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "../core/non_copyable.hpp"
#include "../core/tensor.hpp"

namespace accrue {

/// Where an input's gradient goes: the next node (for an op result) or the leaf itself.
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<detail::TensorImpl> leaf;
  Shape shape;
  DType dtype = DType::f32;
  bool defined() const { return node != nullptr || leaf != nullptr; }
};

/// A saved tensor and the storage version it had, so that an in-place write between forward and
/// backward is reported instead of silently giving a wrong gradient.
class SavedTensor {
 public:
  SavedTensor() = default;
  /// Saves `t`; temporaries kept for backward are counted as activations from now on.
  explicit SavedTensor(const Tensor& t);
  /// The tensor; throws when it was released or modified in place since it was saved.
  const Tensor& get(std::string_view op) const;
  void reset() { tensor_ = Tensor(); }

 private:
  Tensor tensor_;
  std::uint64_t version_ = 0;
};

class GradSink;

class Node {
 public:
  virtual ~Node() = default;
  /// The op's name in error messages ("linear", "relu").
  virtual std::string_view name() const = 0;
  /// Computes the inputs' gradients from the gradient of the output and hands them to `sink`.
  virtual void backward(Tensor grad_output, GradSink& sink) = 0;
  /// Drops the saved tensors once backward has run (unless the graph is retained).
  virtual void release() {}

  /// One edge per input of the op, undefined for inputs that need no gradient.
  std::vector<Edge> edges;
  bool released = false;
};

/// Receives the gradients a Node computes. Kernels that can accumulate (GEMM with beta = 1) ask
/// for a target and add into it directly; others hand over a fresh tensor.
class GradSink {
 public:
  struct Target {
    Tensor tensor;
    /// true: add into `tensor`; false: overwrite it (its contents are undefined).
    bool accumulate;
  };

  virtual ~GradSink() = default;
  /// Whether input `i` needs a gradient at all.
  virtual bool needs(std::size_t i) const = 0;
  /// The tensor that receives input i's gradient.
  virtual Target target(std::size_t i) = 0;
  /// Adds `grad` as input i's gradient, taking it over without a copy when nobody else holds it.
  virtual void add(std::size_t i, Tensor grad) = 0;
};

/// The .grad() of edge `e`'s leaf as a GradSink target: the gradient so far (accumulate), or a new
/// one (its gradient place when it has one) to overwrite. For gradients added outside a backward
/// pass (DeferredWeightGradients::flush).
GradSink::Target leaf_gradient_target(const Edge& e, Device device);

/// Whether ops record the graph; on by default, per thread.
class GradMode {
 public:
  static bool enabled();
  static void set_enabled(bool enabled);
};

/// Sets recording on or off for its scope and restores it after. On: inside backward (which runs
/// with it off), a recomputed forward pass records the graph its own backward then walks.
class GradModeGuard : NonCopyable {
 public:
  explicit GradModeGuard(bool enabled) : previous_(GradMode::enabled()) { GradMode::set_enabled(enabled); }
  ~GradModeGuard() { GradMode::set_enabled(previous_); }

 private:
  bool previous_;
};

/// Turns recording off for its scope: evaluation, metrics, optimizer updates.
class NoGradGuard : public GradModeGuard {
 public:
  NoGradGuard() : GradModeGuard(false) {}
};

/// True when an op with these inputs must record a node.
bool needs_grad(std::span<const Tensor* const> inputs);
inline bool needs_grad(std::initializer_list<const Tensor*> inputs) { return needs_grad(std::span{inputs.begin(), inputs.size()}); }

/// Connects `node` to `inputs` and makes it the grad_fn of `output`, which then requires grad.
void record(const std::shared_ptr<Node>& node, const Tensor& output, std::span<const Tensor* const> inputs);
inline void record(const std::shared_ptr<Node>& node, const Tensor& output, std::initializer_list<const Tensor*> inputs) {
  record(node, output, std::span{inputs.begin(), inputs.size()});
}

/// Runs backward from `root` with `grad_root` as its gradient (see Tensor::backward).
void run_backward(const Tensor& root, const Tensor& grad_root, bool retain_graph);

/// Told during a backward pass on this thread as soon as a leaf (a parameter) has received every
/// gradient that pass gives it, while backward goes on through the layers before it: data-parallel
/// training starts reducing those gradients then, as PyTorch's DDP does from its autograd hooks.
class LeafGradientObserver {
 public:
  virtual ~LeafGradientObserver() = default;
  /// `leaf`'s .grad() holds its final value for this pass (leaves the pass does not reach are not
  /// reported).
  virtual void on_leaf_gradient_ready(const detail::TensorImpl& leaf) = 0;
  /// Just before `leaf`, without a gradient or a gradient place, gets its first gradient of the
  /// pass: the observer may give it a place now (Tensor::set_grad_place), in memory made when the
  /// pass needs it.
  virtual void before_first_gradient(detail::TensorImpl& /*leaf*/) {}
};

/// Hides this thread's observer while in scope: a backward pass run inside a node of another
/// (recomputation) leaves its leaves to the outer pass, which reports each once.
class PauseLeafObservation : NonCopyable {
 public:
  PauseLeafObservation();
  ~PauseLeafObservation();

 private:
  LeafGradientObserver* previous_;
};

/// Makes `observer` watch this thread's backward passes while in scope.
class ObserveLeafGradients : NonCopyable {
 public:
  explicit ObserveLeafGradients(LeafGradientObserver& observer);
  ~ObserveLeafGradients();

 private:
  LeafGradientObserver* previous_;
};

}  // namespace accrue
