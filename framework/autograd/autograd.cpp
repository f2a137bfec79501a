#include "autograd.hpp"

#include <unordered_map>
#include <unordered_set>

#include "../../kernels/elementwise.hpp"

namespace accrue {

namespace {
thread_local bool grad_enabled = true;
thread_local LeafGradientObserver* leaf_observer = nullptr;
}  // namespace

ObserveLeafGradients::ObserveLeafGradients(LeafGradientObserver& observer) : previous_(leaf_observer) {
  leaf_observer = &observer;
}
ObserveLeafGradients::~ObserveLeafGradients() { leaf_observer = previous_; }

PauseLeafObservation::PauseLeafObservation() : previous_(leaf_observer) { leaf_observer = nullptr; }
PauseLeafObservation::~PauseLeafObservation() { leaf_observer = previous_; }

bool GradMode::enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

// Saved detached: backward reads only the values, and a node that saved its own output through the
// output itself would hold its own grad_fn, a cycle that leaks the whole graph whenever backward
// does not run (an exception, a forward with grad mode on that is never differentiated).
SavedTensor::SavedTensor(const Tensor& t) : tensor_(t.detach()), version_(t.storage()->version()) {
  if (t.category() == MemoryCategory::temporaries) t.storage()->set_category(MemoryCategory::activations);
}

const Tensor& SavedTensor::get(std::string_view op) const {
  if (!tensor_.defined())
    throw ValueError(fmt::format("backward of {} needs tensors that an earlier backward() already freed; call "
                                 "backward(/*retain_graph=*/true) to go backward through a graph twice",
                                 op));
  if (tensor_.storage()->version() != version_)
    throw ValueError(fmt::format("a tensor that {} saved for backward was modified in place after the forward pass "
                                 "(version {} became {}); its gradient would be wrong",
                                 op, version_, tensor_.storage()->version()));
  return tensor_;
}

bool needs_grad(std::span<const Tensor* const> inputs) {
  if (!GradMode::enabled()) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

void record(const std::shared_ptr<Node>& node, const Tensor& output, std::span<const Tensor* const> inputs) {
  node->edges.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    Edge e;
    if (t->defined() && t->requires_grad()) {
      if (t->grad_fn())
        e.node = t->grad_fn();
      else
        e.leaf = t->impl();
      e.shape = t->shape();
      e.dtype = t->dtype();
    }
    node->edges.push_back(std::move(e));
  }
  auto& impl = *output.impl();
  impl.grad_fn = node;
  impl.requires_grad = true;
}

namespace {

// The gradient of every node's output, gathered while its consumers run.
using Pending = std::unordered_map<Node*, Tensor>;

Tensor new_grad_buffer(const Edge& e, Device device, MemoryCategory category) {
  return Tensor::empty(e.shape, {.dtype = e.dtype, .device = device, .category = category});
}

// Adopts `grad` as a fresh gradient slot when nobody else can see its storage, else copies it.
Tensor adopt(Tensor grad, const Edge& e, MemoryCategory category) {
  if (grad.is_exclusive() && grad.shape() == e.shape) {
    if (grad.category() != category) grad.storage()->set_category(category);
    return grad.detach();
  }
  Tensor copy = new_grad_buffer(e, grad.device(), category);
  kernels::copy(grad, copy);
  return copy;
}

// Makes `grad` the first gradient of `leaf` this pass: written into its gradient place when it has
// one, else taken over (or copied when someone else holds it).
void set_first_leaf_gradient(detail::TensorImpl& leaf, Tensor grad, const Edge& e) {
  if (!leaf.grad_place && leaf_observer != nullptr) leaf_observer->before_first_gradient(leaf);
  if (leaf.grad_place) {
    kernels::copy(grad, Tensor{leaf.grad_place});
    leaf.grad = leaf.grad_place;
  } else {
    leaf.grad = adopt(std::move(grad), e, MemoryCategory::gradients).impl();
  }
}

}  // namespace

GradSink::Target leaf_gradient_target(const Edge& e, Device device) {
  ACCRUE_ASSERT(e.leaf != nullptr);
  if (e.leaf->grad) return {Tensor{e.leaf->grad}, true};
  if (!e.leaf->grad_place && leaf_observer != nullptr) leaf_observer->before_first_gradient(*e.leaf);
  e.leaf->grad = e.leaf->grad_place ? e.leaf->grad_place : new_grad_buffer(e, device, MemoryCategory::gradients).impl();
  return {Tensor{e.leaf->grad}, false};
}

namespace {

class EngineSink final : public GradSink {
 public:
  EngineSink(Node& node, Pending& pending, Device device) : node_(node), pending_(pending), device_(device) {}

  bool needs(std::size_t i) const override { return i < node_.edges.size() && node_.edges[i].defined(); }

  Target target(std::size_t i) override {
    const Edge& e = edge(i);
    if (e.leaf) return leaf_gradient_target(e, device_);
    Tensor& slot = pending_[e.node.get()];
    if (slot.defined()) return {slot, true};
    slot = new_grad_buffer(e, device_, MemoryCategory::temporaries);
    return {slot, false};
  }

  void add(std::size_t i, Tensor grad) override {
    const Edge& e = edge(i);
    if (!(grad.shape() == e.shape))
      throw InternalError(fmt::format("internal error (a bug in Accrue): backward of {} gave input {} a gradient of "
                                      "shape {} for shape {}",
                                      node_.name(), i, grad.shape(), e.shape));
    if (e.leaf) {
      if (e.leaf->grad)
        kernels::add_into(Tensor{e.leaf->grad}, grad);
      else
        set_first_leaf_gradient(*e.leaf, std::move(grad), e);
      return;
    }
    Tensor& slot = pending_[e.node.get()];
    if (slot.defined())
      kernels::add_into(slot, grad);
    else
      slot = adopt(std::move(grad), e, MemoryCategory::temporaries);
  }

 private:
  const Edge& edge(std::size_t i) const {
    ACCRUE_ASSERT(needs(i));
    return node_.edges[i];
  }
  Node& node_;
  Pending& pending_;
  Device device_;
};

// Nodes reachable from `root`, each after every node that consumes its output.
std::vector<Node*> topological_order(Node* root) {
  std::vector<Node*> post;
  std::unordered_set<Node*> seen{root};
  std::vector<std::pair<Node*, std::size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->edges.size()) {
      Node* child = node->edges[next++].node.get();
      if (child != nullptr && seen.insert(child).second) stack.emplace_back(child, 0);
    } else {
      post.push_back(node);
      stack.pop_back();
    }
  }
  return {post.rbegin(), post.rend()};
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_root, bool retain_graph) {
  ACCRUE_CHECK(root.requires_grad(),
               "backward() on a tensor that does not require grad: no parameter or input with requires_grad took part "
               "in computing it (or it was computed under NoGradGuard)");
  ACCRUE_CHECK(grad_root.dtype() == root.dtype() && grad_root.device() == root.device(),
               "backward: the gradient is {} on {}, the tensor {} on {}", dtype_name(grad_root.dtype()),
               grad_root.device(), dtype_name(root.dtype()), root.device());
  const NoGradGuard no_grad;  // backward itself is never recorded
  if (!root.grad_fn()) {
    // A leaf: its gradient is the given one.
    auto& impl = *root.impl();
    if (impl.grad)
      kernels::add_into(Tensor{impl.grad}, grad_root);
    else
      set_first_leaf_gradient(impl, grad_root.clone(), Edge{nullptr, nullptr, root.shape(), root.dtype()});
    if (leaf_observer != nullptr) leaf_observer->on_leaf_gradient_ready(impl);
    return;
  }
  Node* root_node = root.grad_fn().get();
  Pending pending;
  pending[root_node] = grad_root;
  const std::vector<Node*> order = topological_order(root_node);
  // For the observer: how many nodes still to run feed each leaf.
  std::unordered_map<const detail::TensorImpl*, int> feeding;
  if (leaf_observer != nullptr)
    for (const Node* node : order)
      for (const Edge& e : node->edges)
        if (e.leaf) ++feeding[e.leaf.get()];
  const auto node_done = [&](const Node& node) {
    if (leaf_observer == nullptr) return;
    for (const Edge& e : node.edges)
      if (e.leaf && --feeding[e.leaf.get()] == 0 && e.leaf->grad) leaf_observer->on_leaf_gradient_ready(*e.leaf);
  };
  for (Node* node : order) {
    auto it = pending.find(node);
    if (it == pending.end()) {  // no gradient flowed into this node
      node_done(*node);
      continue;
    }
    if (node->released)
      throw ValueError(fmt::format("backward through the graph a second time (at {}): its saved tensors were freed by "
                                   "the first backward(); call backward(/*retain_graph=*/true) the first time",
                                   node->name()));
    Tensor grad = std::move(it->second);
    pending.erase(it);
    EngineSink sink{*node, pending, grad.device()};
    try {
      node->backward(std::move(grad), sink);
    } catch (Error& e) {
      e.prepend(fmt::format("in backward of {}: ", node->name()));
      throw;
    }
    if (!retain_graph) {
      node->release();
      node->released = true;
    }
    node_done(*node);
  }
}

}  // namespace accrue
