// save_weights and load_weights: a model's parameters and buffers in safetensors, under PyTorch's
// state_dict names.

#include <algorithm>

#include "accrue/config.hpp"
#include "accrue/dsl/sequential.hpp"
#include "accrue/framework/autograd.hpp"
#include "accrue/framework/serialization/checkpoint.hpp"

namespace accrue {

void Sequential::save_weights(const std::string& path) const {
  ACCRUE_CHECK(built_, "save_weights: model '{}' is not built yet, so it has no weights", name_);
  serialization::save_safetensors(path, named_state(), {{"format", "pt"}, {"producer", "accrue " ACCRUE_VERSION}});
}

void Sequential::load_weights(const std::string& path) {
  ACCRUE_CHECK(built_, "load_weights: build model '{}' first (layers::Input, build(shape)) so its weights exist", name_);
  serialization::SafetensorsFile file = serialization::load_safetensors(path);
  if (serialization::is_training_checkpoint(file)) {
    // The weights of a training checkpoint: its "model." tensors, once the checksum is verified.
    file.tensors.clear();
    for (auto& [name, t] : serialization::load_checkpoint(path).tensors)
      if (name.rfind("model.", 0) == 0) file.tensors.emplace_back(name.substr(6), std::move(t));
  }
  std::vector<std::string> problems;
  std::vector<std::pair<Tensor, const Tensor*>> copies;
  for (const auto& entry : named_state()) {
    const std::string& name = entry.first;
    const Tensor& p = entry.second;
    const auto it = std::find_if(file.tensors.begin(), file.tensors.end(), [&](const auto& e) { return e.first == name; });
    if (it == file.tensors.end()) {
      problems.push_back(fmt::format("missing '{}' {}", name, p.shape()));
      continue;
    }
    if (!(it->second.shape() == p.shape()) || it->second.dtype() != p.dtype()) {
      problems.push_back(fmt::format("'{}' is {} {} in the file but {} {} in the model", name, dtype_name(it->second.dtype()),
                                     it->second.shape(), dtype_name(p.dtype()), p.shape()));
      continue;
    }
    copies.emplace_back(p, &it->second);
  }
  const auto params = named_state();
  for (const auto& entry : file.tensors) {
    const std::string& name = entry.first;
    if (std::none_of(params.begin(), params.end(), [&](const auto& p) { return p.first == name; }))
      problems.push_back(fmt::format("unexpected '{}' {}", name, entry.second.shape()));
  }
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += "\n  " + p;
    throw ValueError(fmt::format("load_weights: {} does not fit model '{}' ({} problem{}); nothing was loaded:{}", path,
                                 name_, problems.size(), problems.size() == 1 ? "" : "s", all));
  }
  const NoGradGuard no_grad;
  for (auto& [param, value] : copies) param.copy_(*value);
}

}  // namespace accrue
