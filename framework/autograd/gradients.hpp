#pragma once
// Operations on a model's gradients as one vector: the global L2 norm and clipping, as
// torch.nn.utils.clip_grad_norm_ and clip_grad_value_ define them. Parameters without a gradient
// are left out.

#include <vector>

#include "../core/tensor.hpp"

namespace accrue {

/// The gradients of `parameters` that exist, in order.
std::vector<Tensor> defined_gradients(const std::vector<Tensor>& parameters);
/// The L2 norm of all gradients together; inf or NaN when any gradient holds them.
double gradient_norm(const std::vector<Tensor>& parameters);
/// Scales every gradient by min(1, max_norm / (norm + 1e-6)) given their global `norm`, and returns
/// the norm after scaling.
double clip_gradients_by_norm(const std::vector<Tensor>& parameters, double max_norm, double norm);
/// Clamps every gradient element to [-clip_value, clip_value].
void clip_gradients_by_value(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace accrue
