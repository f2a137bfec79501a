#pragma once
// Finite-difference gradient checks, for Accrue's own tests and for users' custom ops, layers and
// losses: compares the gradients autograd computes with central differences.

#include <functional>
#include <string>
#include <vector>

#include "../core/tensor.hpp"

namespace accrue {

struct GradcheckOptions {
  /// Step of the central difference (x + eps, x - eps).
  double eps = 1e-2;
  /// An element passes when |numeric - analytic| <= atol + rtol * |numeric|.
  double atol = 2e-3;
  double rtol = 1e-2;
  /// Elements checked per input at most (chosen evenly spread when there are more).
  std::int64_t max_elements = 256;
  /// Seed of the random weights that reduce the output to a scalar.
  std::uint64_t seed = 1234;
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0.0;
  /// One line per failing element (input, flat index, numeric, analytic), at most 20.
  std::string report;
};

/// Checks d/dx of L = sum(f(inputs) * w), w fixed random weights, for every input that requires
/// grad. f must be deterministic (no dropout) and is evaluated in float32, so keep inputs away
/// from kinks (ReLU at 0) by more than eps.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace accrue
