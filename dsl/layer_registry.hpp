#pragma once
// The layer types a saved model can name: each type's name (Layer::type_name()) and how to make
// one from its configuration (Layer::config()), as Keras's get_config/from_config and its
// registry of serializable classes. Every built-in layer is registered; a layer of your own
// registers itself with one line beside its definition:
//
//   class Scale final : public LayerBase<Scale, "Scale"> {
//    public:
//     explicit Scale(double factor) : factor_(factor) {}
//     static Scale from_config(const ConfigReader& c) { return Scale{c.number("factor")}; }
//     LayerConfig config() const override { return {{"factor", factor_}}; }
//     ...
//   };
//   ACCRUE_REGISTER_LAYER(Scale);

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "layer.hpp"

namespace accrue {

/// A layer's configuration being read back; each accessor throws ValueError naming the layer type
/// and the option when it is absent or of another kind.
class ConfigReader {
 public:
  ConfigReader(std::string type, const LayerConfig& config) : type_(std::move(type)), config_(config) {}
  const std::string& type() const { return type_; }
  bool has(std::string_view name) const;
  /// The option's value as saved.
  const ConfigValue& value(std::string_view name) const;
  /// Whether the option is present and set (not "none").
  bool is_set(std::string_view name) const;
  bool flag(std::string_view name) const;
  std::int64_t integer(std::string_view name) const;
  /// A whole number too, as a number.
  double number(std::string_view name) const;
  float real(std::string_view name) const { return static_cast<float>(number(name)); }
  std::string text(std::string_view name) const;
  std::vector<std::int64_t> integers(std::string_view name) const;
  std::vector<std::string> texts(std::string_view name) const;
  /// (height, width), written as size_option() writes it.
  Size2 size(std::string_view name) const;

 private:
    std::string type_;
  const LayerConfig& config_;
};

/// Makes a layer of one type from its configuration and, for a layer made of given layers
/// (Residual), those layers, read from the file before it.
using LayerFactory = std::function<std::unique_ptr<Layer>(const ConfigReader&, std::vector<std::unique_ptr<Layer>>)>;

/// Registers (or replaces) the factory of `type`; returns true, so that it can initialise a static.
bool register_layer_type(const std::string& type, LayerFactory factory);
/// Registers L, which has `static L from_config(const ConfigReader&)`, under `type`.
template <class L>
bool register_layer(const std::string& type) {
  return register_layer_type(type, [](const ConfigReader& c, std::vector<std::unique_ptr<Layer>>) -> std::unique_ptr<Layer> {
    return std::make_unique<L>(L::from_config(c));
  });
}
/// Whether a saved model may name `type`.
bool layer_type_registered(const std::string& type);
/// The registered type names, sorted.
std::vector<std::string> registered_layer_types();
/// A new layer of `type` from `config`; throws ValueError naming the type, and how to register
/// it, when no such type is registered.
std::unique_ptr<Layer> make_layer(const std::string& type, const LayerConfig& config,
                                  std::vector<std::unique_ptr<Layer>> children = {});

namespace detail {
/// The built-in layer types (builtin_layers.cpp), listed there rather than registered from their
/// own files: a static library leaves out object files nothing refers to, and registrations with them.
std::map<std::string, LayerFactory> builtin_layers();
}  // namespace detail

}  // namespace accrue

/// Registers the layer class `Type` (with `static Type from_config(const ConfigReader&)`) under
/// its own name, at namespace scope in the file that defines it, so that load_model can make it.
/// Its type_name() must be that name; a layer named otherwise calls register_layer<L>("its name").
#define ACCRUE_REGISTER_LAYER(Type) \
  [[maybe_unused]] static const bool accrue_layer_registered_##Type = ::accrue::register_layer<Type>(#Type)
