// save_weights and load_weights: a model's parameters and buffers in safetensors, under PyTorch's
// state_dict names.

#include <accrue/config.hpp>
#include "model.hpp"
#include "../framework/serialization/checkpoint.hpp"

namespace accrue {

void Model::save_weights(const std::string& path) const {
  ACCRUE_CHECK(built_, "save_weights: model '{}' is not built yet, so it has no weights", name_);
  serialization::save_safetensors(path, named_state(), {{"format", "pt"}, {"producer", "accrue " ACCRUE_VERSION}});
}

void Model::load_weights(const std::string& path) {
  ACCRUE_CHECK(built_, "load_weights: build model '{}' first (layers::Input, build(shape)) so its weights exist", name_);
  serialization::SafetensorsFile file = serialization::load_safetensors(path);
  if (serialization::is_training_checkpoint(file)) {
    // The weights of a training checkpoint: its "model." tensors, once the checksum is verified.
    serialization::NamedTensors weights;
    for (auto& [name, t] : serialization::verify_checkpoint(path, std::move(file)).tensors)
      if (name.starts_with("model.")) weights.emplace_back(name.substr(6), std::move(t));
    file.tensors = std::move(weights);
  }
  serialization::TensorMatch found;
  if (!found.copy_all(named_state(), file.tensors, "the file"))
    throw ValueError(fmt::format("load_weights: {} does not fit model '{}' ({} problem{}); nothing was loaded:{}", path,
                                 name_, found.problems.size(), found.problems.size() == 1 ? "" : "s",
                                 found.problem_lines()));
}

}  // namespace accrue
