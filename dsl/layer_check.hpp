#pragma once
// check_layer(): one call that tests a layer's contract, for Accrue's layers and for users'
// own: shape inference, parameters, gradients against finite differences (input and every
// parameter), copies, and that one optimizer step on its parameters lowers a loss.

#include <string>

#include "layer.hpp"
#include "../framework/ops/gradcheck.hpp"

namespace accrue {

struct LayerCheckOptions {
  std::int64_t batch = 3;
  std::uint64_t seed = 7;
  /// Inputs are drawn uniformly from [low, high] with |x| >= gap, away from kinks such as ReLU's.
  float low = -1.5f, high = 1.5f, gap = 0.05f;
  /// Instead, distinct values three finite-difference steps apart in random order, for layers that
  /// pick one input among several (max pooling), whose gradient jumps where two inputs tie.
  bool distinct = false;
  GradcheckOptions gradcheck = {};
};

struct LayerCheckResult {
  bool ok = true;
  /// What failed, one line each.
  std::string report;
};

/// Runs the contract checks on a fresh copy of `prototype` built for samples of `sample_shape`.
LayerCheckResult check_layer(const Layer& prototype, const Shape& sample_shape, const LayerCheckOptions& options = {});

}  // namespace accrue
