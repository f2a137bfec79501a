#include "accrue/framework/training/gradients.hpp"

#include <cmath>

#include "accrue/kernels/elementwise.hpp"
#include "accrue/kernels/reduce.hpp"

namespace accrue {

double gradient_norm(const std::vector<Tensor>& parameters) {
  double total = 0.0;
  for (const Tensor& p : parameters)
    if (const Tensor g = p.grad(); g.defined()) total += kernels::sum_of_squares(g);
  return std::sqrt(total);
}

double clip_gradients_by_norm(const std::vector<Tensor>& parameters, double max_norm, double norm) {
  // PyTorch's coefficient: max_norm / (norm + 1e-6), never above 1.
  const double coefficient = std::min(1.0, max_norm / (norm + 1e-6));
  if (coefficient < 1.0) {
    for (const Tensor& p : parameters)
      if (const Tensor g = p.grad(); g.defined())
        kernels::unary_forward(kernels::UnaryOp::affine, {static_cast<float>(coefficient), 0.0f}, g, g);
  }
  return norm * coefficient;
}

void clip_gradients_by_value(const std::vector<Tensor>& parameters, double clip_value) {
  const float v = static_cast<float>(clip_value);
  for (const Tensor& p : parameters)
    if (const Tensor g = p.grad(); g.defined()) kernels::unary_forward(kernels::UnaryOp::clamp, {-v, v}, g, g);
}

}  // namespace accrue
