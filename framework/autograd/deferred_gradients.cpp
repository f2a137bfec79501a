#include "deferred_gradients.hpp"

#include <algorithm>
#include <functional>

#include "../../kernels/elementwise.hpp"
#include "../../kernels/gemm.hpp"

namespace accrue {
namespace {
thread_local DeferredWeightGradients* open_deferral = nullptr;
}  // namespace

DeferredWeightGradients::DeferredWeightGradients() : previous_(open_deferral) { open_deferral = this; }

DeferredWeightGradients::~DeferredWeightGradients() { open_deferral = previous_; }

std::int64_t DeferredWeightGradients::capacity_rows(Device device, std::int64_t rows, std::int64_t in,
                                                    std::int64_t out) {
  if (rows <= 0 || in <= 0 || out <= 0) return 0;
  const std::int64_t capacity = std::min(kernels::gemm_in_order_depth(device), in * out / (2 * (in + out)));
  return capacity >= 2 * rows ? capacity : 0;
}

// The target is asked for only when rows wait: asking makes a leaf's .grad().
void DeferredWeightGradients::multiply(Waiting& w, const std::function<GradSink::Target()>& target) {
  if (w.rows == 0) return;
  const auto [grad, accumulate] = target();
  kernels::gemm(true, false, 1.0f, w.dy.narrow(0, w.rows), w.x.narrow(0, w.rows), accumulate ? 1.0f : 0.0f, grad);
  w.rows = 0;
}

bool DeferredWeightGradients::take(const Edge& weight, const Tensor& x, const Tensor& dy, GradSink& sink,
                                   std::size_t input) {
  DeferredWeightGradients* self = open_deferral;
  if (self == nullptr || weight.leaf == nullptr || x.dtype() != DType::f32 || dy.dtype() != DType::f32) return false;
  const std::int64_t in = x.size(-1), out = dy.size(-1), rows = in == 0 ? 0 : x.numel() / in;
  auto [it, created] = self->waiting_.try_emplace(weight.leaf.get());
  Waiting& w = it->second;
  if (created) {
    w.weight = weight;
    w.capacity = capacity_rows(x.device(), rows, in, out);
    if (w.capacity > 0) {
      const TensorOptions gradients{.device = x.device(), .category = MemoryCategory::gradients};
      w.x = Tensor::empty({w.capacity, in}, gradients);
      w.dy = Tensor::empty({w.capacity, out}, gradients);
    }
  }
  const auto into_sink = [&] { return sink.target(input); };
  if (rows == 0 || rows > w.capacity) {
    multiply(w, into_sink);  // what waits comes first, in order; the caller adds this one
    return false;
  }
  if (w.rows + rows > w.capacity) multiply(w, into_sink);
  kernels::copy(x.view_as_shape({rows, in}), w.x.narrow(w.rows, w.rows + rows));
  kernels::copy(dy.view_as_shape({rows, out}), w.dy.narrow(w.rows, w.rows + rows));
  w.rows += rows;
  if (self->closing_) multiply(w, into_sink);
  return true;
}

void DeferredWeightGradients::flush() {
  for (auto& entry : waiting_) {
    Waiting& w = entry.second;  // a named reference: clang 14's lambdas cannot capture structured bindings
    multiply(w, [&] { return leaf_gradient_target(w.weight, w.x.device()); });
  }
}

void DeferredWeightGradients::discard() {
  for (auto& [leaf, w] : waiting_) w.rows = 0;
}

}  // namespace accrue
