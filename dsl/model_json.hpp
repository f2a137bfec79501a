#pragma once
// Inside Model::save and load_model (model_file.cpp): configurations as JSON, the errors of a
// file being read, and the compile settings (optimizer, accumulation, clipping, precision, loss,
// metrics) written and read back. Not installed: it includes nlohmann's JSON.

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "layer.hpp"
#include "loss.hpp"
#include "metrics.hpp"
#include "signature.hpp"
#include "../framework/optim/recipe.hpp"

namespace accrue {
class Model;
}

namespace accrue::detail {

using nlohmann::ordered_json;

ordered_json json_of(const ConfigValue& value);
ordered_json json_of(const LayerConfig& config);

/// Errors while reading name the file and the place: "m.safetensors: layer 3 (Dense): ...".
struct Reading {
  const std::string& path;
  std::string where;
  [[noreturn]] void fail(const std::string& what) const;
  /// The same reader one level in: "layer 3", then "layer 3, inner layer 0".
  Reading at(const std::string& place) const { return {path, where.empty() ? place : where + ", " + place}; }
};

ConfigValue config_value(const ordered_json& j, const Reading& r, const std::string& option);
/// An object's options in order; fails naming the place when it is not an object.
LayerConfig config_of(const ordered_json& j, const Reading& r);

/// The compile settings as JSON: "recipe" (its str(), for people), then each part as a type and a
/// configuration; the parts a file cannot hold (a loss or metric of your own, an optimizer not
/// built in, a schedule given as a function) are listed under "not_saved" instead. A model of
/// several outputs has "losses" (each output's loss and weight) instead of "loss", and each metric
/// names its output.
ordered_json compile_json(const Model& model);
/// Compiles `model` as compile_json described, when every part was saved; otherwise leaves it
/// uncompiled and returns why (empty once compiled). Fails naming the option that is damaged.
std::string compile_from_json(Model& model, const ordered_json& j, const Reading& r);

/// InputSignature::layout for samples of `sample`: "NCHW", "NC", "NT" or "N...".
std::string sample_layout(const Shape& sample, DType dtype);
/// The signature as a model file keeps it (signature.cpp): every part, for readers of the file.
ordered_json signature_json(const ModelSignature& signature);
/// A signature as signature_json wrote it; fails naming the part that is damaged.
ModelSignature signature_of_json(const ordered_json& j, const Reading& r);
/// Gives `model` what a user stated in a saved signature: input ranges and class names. Fails
/// naming the part that is damaged or does not fit the model.
void apply_signature_json(Model& model, const ordered_json& j, const Reading& r);

}  // namespace accrue::detail
