// save_weights and load_weights: a model's parameters and buffers under PyTorch's state_dict
// names, in safetensors; read also from training checkpoints and from files torch.save wrote.

#include <accrue/config.hpp>
#include <unordered_map>

#include "layers/batch_norm.hpp"
#include "model.hpp"
#include "../framework/autograd/autograd.hpp"
#include "../framework/ops/ops.hpp"
#include "../framework/serialization/checkpoint.hpp"
#include "../framework/serialization/pytorch_file.hpp"

namespace accrue {
namespace {

// The tensors of the weights file at `path`, whatever its format.
serialization::NamedTensors read_weights_file(const std::string& path, const LoadWeightsOptions& options) {
  if (serialization::is_pytorch_file(path)) return serialization::load_pytorch(path, options.entry);
  ACCRUE_CHECK(options.entry.empty(), "load_weights: .entry = '{}' names a dict inside a file torch.save wrote; {} is "
               "a safetensors file, a flat list of tensors", options.entry, path);
  serialization::SafetensorsFile file = serialization::load_safetensors(path);
  if (!serialization::is_training_checkpoint(file)) return std::move(file.tensors);
  // The weights of a training checkpoint: its "model." tensors, once the checksum is verified.
  serialization::NamedTensors weights;
  for (auto& [name, t] : serialization::verify_checkpoint(path, std::move(file)).tensors)
    if (name.starts_with("model.")) weights.emplace_back(name.substr(6), std::move(t));
  return weights;
}

// Each BatchNorm inside `layer` (itself included) under the name PyTorch gives its
// num_batches_tracked ("layer1.0.bn1.num_batches_tracked"), which Accrue keeps as a counter rather
// than a tensor: found as the buffer that is the BatchNorm's running mean, renamed.
void add_batch_norms(Layer& layer, const std::string& key, std::unordered_map<std::string, layers::BatchNorm*>& out) {
  layer.for_each_layer([&](Layer& l) {
    auto* bn = dynamic_cast<layers::BatchNorm*>(&l);
    if (bn == nullptr || !bn->options().track_running_stats) return;
    for (const auto& [name, buffer] : layer.named_buffers())
      if (buffer.data_ptr() == bn->running_mean().data_ptr() && name.ends_with("running_mean"))
        out.emplace(fmt::format("{}.{}num_batches_tracked", key, name.substr(0, name.size() - 12)), bn);
  });
}

// What load_weights will copy where, found before anything is copied.
struct WeightsMatch {
  LoadReport report;
  std::vector<std::pair<Tensor, Tensor>> copies;  // (the model's tensor, the file's in its dtype)
  std::vector<std::pair<layers::BatchNorm*, std::int64_t>> counts;
};

WeightsMatch match_weights(const serialization::NamedTensors& model, const serialization::NamedTensors& file,
                           const std::unordered_map<std::string, layers::BatchNorm*>& counters) {
  std::unordered_map<std::string, std::size_t> in_file;
  for (std::size_t i = 0; i < file.size(); ++i) in_file.emplace(file[i].first, i);
  WeightsMatch m;
  std::vector<bool> claimed(file.size(), false);
  for (const auto& [name, into] : model) {
    const auto found = in_file.find(name);
    if (found == in_file.end()) {
      m.report.missing.push_back(fmt::format("'{}' {}", name, into.shape()));
      continue;
    }
    claimed[found->second] = true;
    const Tensor& from = file[found->second].second;
    const bool convertible = from.dtype() == into.dtype() || (is_floating(from.dtype()) && is_floating(into.dtype()));
    if (!(from.shape() == into.shape()) || !convertible) {
      m.report.mismatched.push_back(fmt::format("'{}' is {} {} in the file but {} {} in the model", name,
                                                dtype_name(from.dtype()), from.shape(), dtype_name(into.dtype()), into.shape()));
      continue;
    }
    m.copies.emplace_back(into, from.dtype() == into.dtype() ? from : ops::cast(from, into.dtype()));
    m.report.loaded.push_back(name);
  }
  for (std::size_t i = 0; i < file.size(); ++i) {
    if (claimed[i]) continue;
    const auto& [name, t] = file[i];
    if (const auto bn = counters.find(name); bn != counters.end() && t.dtype() == DType::i32 && t.numel() == 1) {
      m.counts.emplace_back(bn->second, t.to_vector<std::int32_t>().front());
      m.report.loaded.push_back(name);
    } else {
      m.report.unexpected.push_back(fmt::format("'{}' {}", name, t.shape()));
    }
  }
  return m;
}

}  // namespace

std::string LoadReport::str() const {
  std::string out = fmt::format("loaded {} tensor{}", loaded.size(), loaded.size() == 1 ? "" : "s");
  for (const auto& [what, names] : {std::pair{"missing", &missing}, {"unexpected", &unexpected}, {"mismatched", &mismatched}})
    if (!names->empty()) out += fmt::format("; {}: {}", what, fmt::join(*names, ", "));
  return out;
}

void Model::save_weights(const std::string& path) const {
  ACCRUE_CHECK(built_, "save_weights: model '{}' is not built yet, so it has no weights", name_);
  serialization::save_safetensors(path, named_state(), {{"format", "pt"}, {"producer", "accrue " ACCRUE_VERSION}});
}

LoadReport Model::load_weights(const std::string& path, const LoadWeightsOptions& options) {
  ACCRUE_CHECK(built_, "load_weights: build model '{}' first (layers::Input, build(shape)) so its weights exist", name_);
  serialization::NamedTensors file = read_weights_file(path, options);
  if (!options.strip_prefix.empty())
    for (auto& [name, t] : file)
      if (name.starts_with(options.strip_prefix)) name.erase(0, options.strip_prefix.size());
  std::unordered_map<std::string, layers::BatchNorm*> counters;
  for (std::size_t i = 0; i < layers_.size(); ++i) add_batch_norms(*layers_[i], keys_[i], counters);
  WeightsMatch match = match_weights(named_state(), file, counters);
  const LoadReport& r = match.report;
  if (options.strict && !r.complete()) {
    std::string problems;
    for (const std::string& p : r.missing) problems += "\n  missing " + p;
    for (const std::string& p : r.unexpected) problems += "\n  unexpected " + p;
    for (const std::string& p : r.mismatched) problems += "\n  " + p;
    const std::size_t n = r.missing.size() + r.unexpected.size() + r.mismatched.size();
    throw ValueError(fmt::format("load_weights: {} does not fit model '{}' ({} problem{}); nothing was loaded "
                                 "(LoadWeightsOptions::strict = false loads what matches):{}",
                                 path, name_, n, n == 1 ? "" : "s", problems));
  }
  const NoGradGuard no_grad;
  for (auto& [into, from] : match.copies) into.copy_(from);
  for (const auto& [bn, count] : match.counts) bn->set_batches_tracked(count);
  return std::move(match.report);
}

}  // namespace accrue
