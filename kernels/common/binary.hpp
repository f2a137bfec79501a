#pragma once
// Element-wise functions of two tensors and their partial derivatives.

#include <cstdint>
#include <type_traits>

#include "../../framework/core/macros.hpp"

namespace accrue::kernels {

enum class BinaryOp : std::uint8_t { add, sub, mul, div, maximum, minimum };

/// Calls f with `op` as a compile-time constant (see with_unary_op).
template <class F>
void with_binary_op(BinaryOp op, F&& f) {
  switch (op) {
    case BinaryOp::add: return f(std::integral_constant<BinaryOp, BinaryOp::add>{});
    case BinaryOp::sub: return f(std::integral_constant<BinaryOp, BinaryOp::sub>{});
    case BinaryOp::mul: return f(std::integral_constant<BinaryOp, BinaryOp::mul>{});
    case BinaryOp::div: return f(std::integral_constant<BinaryOp, BinaryOp::div>{});
    case BinaryOp::maximum: return f(std::integral_constant<BinaryOp, BinaryOp::maximum>{});
    case BinaryOp::minimum: return f(std::integral_constant<BinaryOp, BinaryOp::minimum>{});
  }
}

namespace common {

template <BinaryOp Op>
ACCRUE_HD float binary_apply(float a, float b) {
  if constexpr (Op == BinaryOp::add) return a + b;
  if constexpr (Op == BinaryOp::sub) return a - b;
  if constexpr (Op == BinaryOp::mul) return a * b;
  if constexpr (Op == BinaryOp::div) return a / b;
  // A NaN on either side is the result, as torch.maximum and torch.minimum give.
  if constexpr (Op == BinaryOp::maximum) return (a > b || a != a) ? a : b;
  if constexpr (Op == BinaryOp::minimum) return (a < b || a != a) ? a : b;
  return 0.0f;
}

// torch.maximum's and torch.minimum's gradient: to the side that is kept, halved between the two
// where they are equal; none to a side where the other alone is kept.
ACCRUE_HD float extreme_grad(bool other_kept, bool equal, float dy) {
  return other_kept ? 0.0f : (equal ? 0.5f * dy : dy);
}

/// dL/da given a, b and dL/dy.
template <BinaryOp Op>
ACCRUE_HD float binary_grad_a(float a, float b, float dy) {
  if constexpr (Op == BinaryOp::add || Op == BinaryOp::sub) return dy;
  if constexpr (Op == BinaryOp::mul) return dy * b;
  if constexpr (Op == BinaryOp::div) return dy / b;
  if constexpr (Op == BinaryOp::maximum) return extreme_grad(a < b, a == b, dy);
  if constexpr (Op == BinaryOp::minimum) return extreme_grad(a > b, a == b, dy);
  return 0.0f;
}

/// dL/db given a, b and dL/dy.
template <BinaryOp Op>
ACCRUE_HD float binary_grad_b(float a, float b, float dy) {
  if constexpr (Op == BinaryOp::add) return dy;
  if constexpr (Op == BinaryOp::sub) return -dy;
  if constexpr (Op == BinaryOp::mul) return dy * a;
  if constexpr (Op == BinaryOp::div) return -dy * a / (b * b);
  if constexpr (Op == BinaryOp::maximum) return extreme_grad(a > b, a == b, dy);
  if constexpr (Op == BinaryOp::minimum) return extreme_grad(a < b, a == b, dy);
  return 0.0f;
}

}  // namespace common
}  // namespace accrue::kernels
