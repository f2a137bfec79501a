#pragma once
// Element-wise functions of one tensor and their derivatives, written once for both backends.
// The derivative takes the input x and the output y and each op reads only one of them (see
// unary_grad_reads_input), so autograd keeps only that one for backward: ReLU, sigmoid, tanh,
// exp and sqrt keep their output, which the next layer keeps anyway; the others keep their input.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "branchless_math.hpp"
#include "../../framework/core/macros.hpp"

namespace accrue::kernels {

enum class UnaryOp : std::uint8_t {
  relu,
  gelu,       // exact: 0.5 x (1 + erf(x / sqrt 2)), PyTorch's default
  gelu_tanh,  // the tanh approximation, PyTorch's approximate="tanh"
  sigmoid,
  tanh,
  exp,
  log,
  neg,
  square,
  sqrt,
  abs,
  pow,     // x^a
  affine,  // a x + b
  clamp,   // min(max(x, a), b)
};

/// Calls f with `op` as a compile-time constant, so that each backend instantiates one loop or
/// kernel per op.
template <class F>
void with_unary_op(UnaryOp op, F&& f) {
  switch (op) {
#define ACCRUE_UNARY_CASE(name) \
  case UnaryOp::name: return f(std::integral_constant<UnaryOp, UnaryOp::name>{});
    ACCRUE_UNARY_CASE(relu)
    ACCRUE_UNARY_CASE(gelu)
    ACCRUE_UNARY_CASE(gelu_tanh)
    ACCRUE_UNARY_CASE(sigmoid)
    ACCRUE_UNARY_CASE(tanh)
    ACCRUE_UNARY_CASE(exp)
    ACCRUE_UNARY_CASE(log)
    ACCRUE_UNARY_CASE(neg)
    ACCRUE_UNARY_CASE(square)
    ACCRUE_UNARY_CASE(sqrt)
    ACCRUE_UNARY_CASE(abs)
    ACCRUE_UNARY_CASE(pow)
    ACCRUE_UNARY_CASE(affine)
    ACCRUE_UNARY_CASE(clamp)
#undef ACCRUE_UNARY_CASE
  }
}

/// The parameters of pow (a), affine (a, b) and clamp (a, b); unused by the others.
struct UnaryParams {
  float a = 0.0f;
  float b = 0.0f;
};

/// Whether the derivative of `op` reads x (true) or y (false); neg and affine read neither.
constexpr bool unary_grad_reads_input(UnaryOp op) {
  switch (op) {
    case UnaryOp::relu:
    case UnaryOp::sigmoid:
    case UnaryOp::tanh:
    case UnaryOp::exp:
    case UnaryOp::sqrt:
    case UnaryOp::neg:
    case UnaryOp::affine: return false;
    case UnaryOp::clamp: return true;
    default: return true;
  }
}
constexpr bool unary_grad_reads_output(UnaryOp op) {
  return op == UnaryOp::relu || op == UnaryOp::sigmoid || op == UnaryOp::tanh || op == UnaryOp::exp ||
         op == UnaryOp::sqrt;
}

namespace common {

constexpr float inv_sqrt2 = 0.70710678118654752440f;
constexpr float inv_sqrt_2pi = 0.39894228040143267794f;
constexpr float sqrt_2_over_pi = 0.79788456080286535588f;
constexpr float gelu_tanh_c = 0.044715f;

template <UnaryOp Op>
ACCRUE_HD float unary_apply(float x, UnaryParams p) {
  if constexpr (Op == UnaryOp::relu) return x < 0.0f ? 0.0f : x;  // NaN passes through, as in PyTorch
  if constexpr (Op == UnaryOp::gelu) return 0.5f * x * (1.0f + vector_erf(x * inv_sqrt2));
  if constexpr (Op == UnaryOp::gelu_tanh) {
    const float inner = sqrt_2_over_pi * (x + gelu_tanh_c * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
  }
  if constexpr (Op == UnaryOp::sigmoid) {
    // Split by sign so exp never overflows.
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);
    return e / (1.0f + e);
  }
  if constexpr (Op == UnaryOp::tanh) return tanhf(x);
  if constexpr (Op == UnaryOp::exp) return expf(x);
  if constexpr (Op == UnaryOp::log) return logf(x);
  if constexpr (Op == UnaryOp::neg) return -x;
  if constexpr (Op == UnaryOp::square) return x * x;
  if constexpr (Op == UnaryOp::sqrt) return sqrtf(x);
  if constexpr (Op == UnaryOp::abs) return fabsf(x);
  if constexpr (Op == UnaryOp::pow) return powf(x, p.a);
  if constexpr (Op == UnaryOp::affine) return p.a * x + p.b;
  if constexpr (Op == UnaryOp::clamp) return x < p.a ? p.a : (x > p.b ? p.b : x);  // NaN passes through
  return 0.0f;
}

/// dL/dx given x, y = f(x) and dL/dy.
template <UnaryOp Op>
ACCRUE_HD float unary_grad(float x, float y, float dy, UnaryParams p) {
  if constexpr (Op == UnaryOp::relu) return y <= 0.0f ? 0.0f : dy;
  if constexpr (Op == UnaryOp::gelu) {
    const float cdf = 0.5f * (1.0f + vector_erf(x * inv_sqrt2));
    const float pdf = inv_sqrt_2pi * vector_exp_nonpositive(-0.5f * x * x);
    return dy * (cdf + x * pdf);
  }
  if constexpr (Op == UnaryOp::gelu_tanh) {
    const float x2 = x * x;
    const float t = tanhf(sqrt_2_over_pi * (x + gelu_tanh_c * x2 * x));
    const float dinner = sqrt_2_over_pi * (1.0f + 3.0f * gelu_tanh_c * x2);
    return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner);
  }
  if constexpr (Op == UnaryOp::sigmoid) return dy * y * (1.0f - y);
  if constexpr (Op == UnaryOp::tanh) return dy * (1.0f - y * y);
  if constexpr (Op == UnaryOp::exp) return dy * y;
  if constexpr (Op == UnaryOp::log) return dy / x;
  if constexpr (Op == UnaryOp::neg) return -dy;
  if constexpr (Op == UnaryOp::square) return dy * 2.0f * x;
  if constexpr (Op == UnaryOp::sqrt) return dy * 0.5f / y;
  if constexpr (Op == UnaryOp::abs) return x > 0.0f ? dy : (x < 0.0f ? -dy : 0.0f);
  if constexpr (Op == UnaryOp::pow) return p.a == 0.0f ? 0.0f : dy * p.a * powf(x, p.a - 1.0f);
  if constexpr (Op == UnaryOp::affine) return dy * p.a;
  if constexpr (Op == UnaryOp::clamp) return x < p.a || x > p.b ? 0.0f : dy;  // PyTorch: bounds included
  return 0.0f;
}

}  // namespace common
}  // namespace accrue::kernels
