// Tensor's members that are ops (reshape, narrow, clone: recorded for autograd) and backward.

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "../core/tensor.hpp"

namespace accrue {

void Tensor::backward(bool retain_graph) const {
  ACCRUE_CHECK(numel() == 1,
               "backward() without a gradient needs a one-element tensor (a loss), got shape {}; pass a gradient of "
               "that shape",
               shape());
  run_backward(*this, Tensor::ones(shape(), {.dtype = dtype(), .device = device()}), retain_graph);
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  ACCRUE_CHECK_SHAPE(gradient.shape() == shape(), "backward: gradient of shape {} for a tensor of shape {}",
                     gradient.shape(), shape());
  run_backward(*this, gradient, retain_graph);
}

Tensor Tensor::reshape(const Shape& shape) const { return ops::reshape(*this, shape); }

Tensor Tensor::narrow(std::int64_t begin, std::int64_t end) const { return ops::narrow(*this, begin, end); }

Tensor Tensor::clone() const { return ops::clone(*this); }

}  // namespace accrue
