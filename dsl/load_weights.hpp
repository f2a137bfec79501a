#pragma once
// How Model::load_weights matches the tensors of a file to the model's, as PyTorch's
// load_state_dict does, and what it reports.

#include <string>
#include <vector>

namespace accrue {

struct LoadWeightsOptions {
  /// PyTorch's `strict`: every tensor of the model must be in the file with its shape, and the file
  /// must hold nothing else; otherwise nothing is loaded and the error names every problem. With
  /// false, the tensors whose names and shapes match are loaded and the rest are reported: a
  /// backbone into a model whose head has another size (LoadReport says what was left).
  bool strict = true;
  /// For a PyTorch file holding a dict around its state_dict (a Lightning checkpoint), the key
  /// the state_dict is under: "state_dict".
  std::string entry = {};
  /// Taken off the front of the file's names that start with it before matching: "model." when
  /// the weights were saved from an attribute `model` of a Lightning module.
  std::string strip_prefix = {};
};

/// What load_weights did: PyTorch's missing_keys and unexpected_keys, and the tensors whose shape
/// differs, which strict loading refuses and non-strict loading leaves as they were.
struct LoadReport {
  /// Names loaded, in the model's order.
  std::vector<std::string> loaded;
  /// The model's tensors the file does not have: "'fc.weight' (5, 512)".
  std::vector<std::string> missing;
  /// The file's tensors the model has no place for: "'fc2.bias' (10,)".
  std::vector<std::string> unexpected;
  /// "'fc.weight' is float32 (1000, 512) in the file but float32 (5, 512) in the model".
  std::vector<std::string> mismatched;

  /// Whether everything was loaded and nothing was left over.
  bool complete() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  /// "loaded 120 tensors; missing: 'fc.weight' (5, 512), 'fc.bias' (5,); mismatched: ...".
  std::string str() const;
};

}  // namespace accrue
