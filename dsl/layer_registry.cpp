#include "layer_registry.hpp"

#include <cctype>
#include <algorithm>
#include <map>
#include <mutex>

#include "../framework/core/error.hpp"
#include "../framework/core/utf8.hpp"

namespace accrue {
namespace {

std::string kind_of(const ConfigValue& v) {
  constexpr const char* kinds[] = {"none",          "a flag", "a whole number", "a number", "a text", "whole numbers per axis",
                                   "a list of texts"};
  return kinds[v.index()];
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, LayerFactory> factories = detail::builtin_layers();
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool ConfigReader::has(std::string_view name) const {
  return std::any_of(config_.begin(), config_.end(), [&](const auto& e) { return e.first == name; });
}

bool ConfigReader::is_set(std::string_view name) const {
  return has(name) && !std::holds_alternative<std::monostate>(value(name));
}

const ConfigValue& ConfigReader::value(std::string_view name) const {
  for (const auto& [key, value] : config_)
    if (key == name) return value;
  throw ValueError(fmt::format("{}: the saved configuration has no option '{}'", type_, name));
}

bool ConfigReader::flag(std::string_view name) const {
  const ConfigValue& v = value(name);
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  throw ValueError(fmt::format("{}: option '{}' should be a flag, the file has {}", type_, name, kind_of(v)));
}

std::int64_t ConfigReader::integer(std::string_view name) const {
  const ConfigValue& v = value(name);
  if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return *i;
  throw ValueError(fmt::format("{}: option '{}' should be a whole number, the file has {}", type_, name, kind_of(v)));
}

double ConfigReader::number(std::string_view name) const {
  const ConfigValue& v = value(name);
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  throw ValueError(fmt::format("{}: option '{}' should be a number, the file has {}", type_, name, kind_of(v)));
}

std::string ConfigReader::text(std::string_view name) const {
  const ConfigValue& v = value(name);
  if (const std::string* s = std::get_if<std::string>(&v)) return *s;
  throw ValueError(fmt::format("{}: option '{}' should be a text, the file has {}", type_, name, kind_of(v)));
}

std::vector<std::int64_t> ConfigReader::integers(std::string_view name) const {
  const ConfigValue& v = value(name);
  if (const auto* s = std::get_if<std::vector<std::int64_t>>(&v)) return *s;
  if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return {*i};
  throw ValueError(fmt::format("{}: option '{}' should be whole numbers per axis, the file has {}", type_, name, kind_of(v)));
}

std::vector<std::string> ConfigReader::texts(std::string_view name) const {
  const ConfigValue& v = value(name);
  if (const auto* s = std::get_if<std::vector<std::string>>(&v)) return *s;
  // An empty list reads back as no whole numbers.
  if (const auto* i = std::get_if<std::vector<std::int64_t>>(&v); i != nullptr && i->empty()) return {};
  throw ValueError(fmt::format("{}: option '{}' should be a list of texts, the file has {}", type_, name, kind_of(v)));
}

Size2 ConfigReader::size(std::string_view name) const {
  const std::vector<std::int64_t> v = integers(name);
  if (v.size() == 1) return Size2{v[0]};
  if (v.size() == 2) return Size2{v[0], v[1]};
  throw ValueError(fmt::format("{}: option '{}' should be (height, width), the file has {} values", type_, name, v.size()));
}

bool register_layer_type(const std::string& type, LayerFactory factory) {
  ACCRUE_CHECK(!type.empty() && factory, "register_layer_type: a layer type needs a name and a factory");
  Registry& r = registry();
  const std::lock_guard lock{r.mutex};
  r.factories[type] = std::move(factory);
  return true;
}

bool layer_type_registered(const std::string& type) {
  Registry& r = registry();
  const std::lock_guard lock{r.mutex};
  return r.factories.contains(type);
}

std::vector<std::string> registered_layer_types() {
  Registry& r = registry();
  const std::lock_guard lock{r.mutex};
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

std::unique_ptr<Layer> make_layer(const std::string& type, const LayerConfig& config, std::vector<std::unique_ptr<Layer>> children) {
  LayerFactory factory;
  {
    Registry& r = registry();
    const std::lock_guard lock{r.mutex};
    const auto it = r.factories.find(type);
    if (it == r.factories.end()) {
      // Only a C++ name can be a class of the user's: anything else is printed cut and escaped.
      const bool name = !type.empty() && type.size() <= 128 && std::isdigit(static_cast<unsigned char>(type[0])) == 0 &&
                        std::all_of(type.begin(), type.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; });
      if (!name) throw ValueError(fmt::format("the model names a layer type {}, which no program can register", printable_excerpt(type)));
      throw ValueError(fmt::format(
          "the model names a layer type '{}' that this program has not registered: define the class and write "
          "ACCRUE_REGISTER_LAYER({}); beside it (with a static {} from_config(const ConfigReader&)), or call "
          "accrue::register_layer<{}>(\"{}\") before loading",
          type, type, type, type, type));
    }
    factory = it->second;
  }
  std::unique_ptr<Layer> layer = factory(ConfigReader{type, config}, std::move(children));
  ACCRUE_CHECK(layer && layer->type_name() == type, "the factory registered for layer type '{}' made a '{}'", type,
                     layer ? layer->type_name() : std::string{"nothing"});
  return layer;
}

}  // namespace accrue
