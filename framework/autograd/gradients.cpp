#include "gradients.hpp"

#include <cmath>

#include "../../kernels/elementwise.hpp"
#include "../../kernels/reduce.hpp"

namespace accrue {

std::vector<Tensor> defined_gradients(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (Tensor g = p.grad(); g.defined()) grads.push_back(std::move(g));
  return grads;
}

double gradient_norm(const std::vector<Tensor>& parameters) {
  return std::sqrt(kernels::sum_of_squares(defined_gradients(parameters)));
}

double clip_gradients_by_norm(const std::vector<Tensor>& parameters, double max_norm, double norm) {
  // PyTorch's coefficient: max_norm / (norm + 1e-6), never above 1.
  const double coefficient = std::min(1.0, max_norm / (norm + 1e-6));
  if (coefficient < 1.0)
    kernels::unary_in_place(kernels::UnaryOp::affine, {static_cast<float>(coefficient), 0.0f}, defined_gradients(parameters));
  return norm * coefficient;
}

void clip_gradients_by_value(const std::vector<Tensor>& parameters, double clip_value) {
  const float v = static_cast<float>(clip_value);
  kernels::unary_in_place(kernels::UnaryOp::clamp, {-v, v}, defined_gradients(parameters));
}

}  // namespace accrue
