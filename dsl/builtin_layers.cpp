// The built-in layer types and how each is made from its configuration.

#include "layer_registry.hpp"
#include "layers/activation.hpp"
#include "layers/attention.hpp"
#include "layers/augmentation.hpp"
#include "layers/batch_norm.hpp"
#include "layers/conv2d.hpp"
#include "layers/dense.hpp"
#include "layers/dropout.hpp"
#include "layers/embedding.hpp"
#include "layers/flatten.hpp"
#include "layers/group_norm.hpp"
#include "layers/layer_norm.hpp"
#include "layers/lookup.hpp"
#include "layers/merge.hpp"
#include "layers/reshape.hpp"
#include "layers/normalization.hpp"
#include "layers/pooling.hpp"
#include "layers/preprocessing.hpp"
#include "layers/recurrent.hpp"
#include "layers/recompute.hpp"
#include "layers/residual.hpp"
#include "../framework/core/error.hpp"

namespace accrue {
namespace {

template <class L, class... A>
std::unique_ptr<Layer> made(A&&... args) {
  return std::make_unique<L>(std::forward<A>(args)...);
}

// Keras's merge layers (layers/merge.hpp).
void add_merge_layers(std::map<std::string, LayerFactory>& table) {
  table["Add"] = [](const ConfigReader&, auto) { return made<layers::Add>(); };
  table["Subtract"] = [](const ConfigReader&, auto) { return made<layers::Subtract>(); };
  table["Multiply"] = [](const ConfigReader&, auto) { return made<layers::Multiply>(); };
  table["Average"] = [](const ConfigReader&, auto) { return made<layers::Average>(); };
  table["Maximum"] = [](const ConfigReader&, auto) { return made<layers::Maximum>(); };
  table["Minimum"] = [](const ConfigReader&, auto) { return made<layers::Minimum>(); };
  table["Concatenate"] = [](const ConfigReader& c, auto) {
    return made<layers::Concatenate>(layers::Concatenate::from_config(c));
  };
}

// Keras's preprocessing layers (layers/preprocessing.hpp, layers/augmentation.hpp, layers/lookup.hpp).
void add_preprocessing_layers(std::map<std::string, LayerFactory>& table) {
  const auto add = [&]<class L>(const char* type, std::type_identity<L>) {
    table[type] = [](const ConfigReader& c, auto) { return made<L>(L::from_config(c)); };
  };
  add("Rescaling", std::type_identity<layers::Rescaling>{});
  add("Resizing", std::type_identity<layers::Resizing>{});
  add("CenterCrop", std::type_identity<layers::CenterCrop>{});
  add("RandomFlip", std::type_identity<layers::RandomFlip>{});
  add("RandomCrop", std::type_identity<layers::RandomCrop>{});
  add("RandomRotation", std::type_identity<layers::RandomRotation>{});
  add("RandomZoom", std::type_identity<layers::RandomZoom>{});
  add("RandomContrast", std::type_identity<layers::RandomContrast>{});
  add("RandomBrightness", std::type_identity<layers::RandomBrightness>{});
  add("StringLookup", std::type_identity<layers::StringLookup>{});
  add("IntegerLookup", std::type_identity<layers::IntegerLookup>{});
  add("CategoryEncoding", std::type_identity<layers::CategoryEncoding>{});
  add("Hashing", std::type_identity<layers::Hashing>{});
}

}  // namespace

namespace detail {

std::map<std::string, LayerFactory> builtin_layers() {
  std::map<std::string, LayerFactory> table;
  table["Dense"] = [](const ConfigReader& c, auto) { return made<layers::Dense>(layers::Dense::from_config(c)); };
  table["Conv2d"] = [](const ConfigReader& c, auto) { return made<layers::Conv2d>(layers::Conv2d::from_config(c)); };
  table["BatchNorm1d"] = [](const ConfigReader& c, auto) {
    return made<layers::BatchNorm1d>(layers::BatchNorm::options_from_config(c));
  };
  table["BatchNorm2d"] = [](const ConfigReader& c, auto) {
    return made<layers::BatchNorm2d>(layers::BatchNorm::options_from_config(c));
  };
  table["GroupNorm"] = [](const ConfigReader& c, auto) { return made<layers::GroupNorm>(layers::GroupNorm::from_config(c)); };
  table["LayerNorm"] = [](const ConfigReader& c, auto) { return made<layers::LayerNorm>(layers::LayerNorm::from_config(c)); };
  table["Dropout"] = [](const ConfigReader& c, auto) { return made<layers::Dropout>(c.real("rate")); };
  table["Embedding"] = [](const ConfigReader& c, auto) { return made<layers::Embedding>(layers::Embedding::from_config(c)); };
  table["PositionalEmbedding"] = [](const ConfigReader& c, auto) {
    return made<layers::PositionalEmbedding>(c.integer("max_length"));
  };
  table["SinusoidalEncoding"] = [](const ConfigReader& c, auto) {
    return made<layers::SinusoidalEncoding>(c.integer("max_length"));
  };
  table["ReLU"] = [](const ConfigReader&, auto) { return made<layers::ReLU>(); };
  table["Sigmoid"] = [](const ConfigReader&, auto) { return made<layers::Sigmoid>(); };
  table["Tanh"] = [](const ConfigReader&, auto) { return made<layers::Tanh>(); };
  table["GELU"] = [](const ConfigReader& c, auto) {
    return made<layers::GELU>(layers::GELUOptions{.tanh_approximation = c.flag("tanh_approximation")});
  };
  table["Softmax"] = [](const ConfigReader& c, auto) { return made<layers::Softmax>(static_cast<int>(c.integer("dim"))); };
  table["Flatten"] = [](const ConfigReader&, auto) { return made<layers::Flatten>(); };
  table["Reshape"] = [](const ConfigReader& c, auto) { return made<layers::Reshape>(layers::Reshape::from_config(c)); };
  table["Slice"] = [](const ConfigReader& c, auto) { return made<layers::Slice>(layers::Slice::from_config(c)); };
  table["MaxPool2d"] = [](const ConfigReader& c, auto) { return made<layers::MaxPool2d>(layers::MaxPool2d::from_config(c)); };
  table["AvgPool2d"] = [](const ConfigReader& c, auto) { return made<layers::AvgPool2d>(layers::AvgPool2d::from_config(c)); };
  table["GlobalAvgPool2d"] = [](const ConfigReader&, auto) { return made<layers::GlobalAvgPool2d>(); };
  table["Normalization"] = [](const ConfigReader& c, auto) {
    return made<layers::Normalization>(layers::NormalizationOptions{.axis = static_cast<int>(c.integer("axis"))});
  };
  table["LSTM"] = [](const ConfigReader& c, auto) {
    return made<layers::LSTM>(c.integer("hidden_size"), layers::Recurrent::options_from_config(c));
  };
  table["GRU"] = [](const ConfigReader& c, auto) {
    return made<layers::GRU>(c.integer("hidden_size"), layers::Recurrent::options_from_config(c));
  };
  table["MultiHeadAttention"] = [](const ConfigReader& c, auto) {
    return made<layers::MultiHeadAttention>(layers::MultiHeadAttention::from_config(c));
  };
  table["TransformerBlock"] = [](const ConfigReader& c, auto) {
    return made<layers::TransformerBlock>(layers::TransformerBlock::from_config(c));
  };
  add_merge_layers(table);
  add_preprocessing_layers(table);
  table["Residual"] = [](const ConfigReader&, std::vector<std::unique_ptr<Layer>> inner) {
    ACCRUE_CHECK(!inner.empty(), "a saved Residual holds no layers");
    return made<layers::Residual>(std::move(inner));
  };
  table["Recompute"] = [](const ConfigReader&, std::vector<std::unique_ptr<Layer>> inner) {
    ACCRUE_CHECK(!inner.empty(), "a saved Recompute holds no layers");
    return made<layers::Recompute>(std::move(inner));
  };
  return table;
}

}  // namespace detail
}  // namespace accrue
