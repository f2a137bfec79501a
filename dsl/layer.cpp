#include "layer.hpp"

#include <limits>

#include "../framework/core/error.hpp"
#include "../framework/core/random.hpp"

namespace accrue {

Layer::Layer(const Layer& other)
    : name_(other.name_),
      input_shapes_(other.input_shapes_),
      output_shape_(other.output_shape_),
      built_(other.built_),
      training_(other.training_),
      trainable_(other.trainable_) {
  // Parameters are deep-copied: a copied layer shares nothing with the original. A child's are
  // the copied child's own.
  for (const auto& [name, c] : other.children_) children_.emplace_back(name, c->clone());
  const auto copy_list = [&](const auto& from, const auto& origins, auto& to, bool parameters) {
    for (std::size_t i = 0; i < from.size(); ++i) {
      const Origin o = origins[i];
      Tensor copy;
      if (o.child >= 0) {
        const Layer& c = *children_[static_cast<std::size_t>(o.child)].second;
        copy = (parameters ? c.parameters_ : c.buffers_)[o.index].second;
      } else {
        copy = from[i].second.detach().clone();
        copy.storage()->set_category(MemoryCategory::parameters);
        if (parameters) copy.set_requires_grad(from[i].second.requires_grad());
      }
      to.emplace_back(from[i].first, std::move(copy));
    }
  };
  copy_list(other.parameters_, other.parameter_origins_, parameters_, true);
  copy_list(other.buffers_, other.buffer_origins_, buffers_, false);
  parameter_origins_ = other.parameter_origins_;
  buffer_origins_ = other.buffer_origins_;
}

namespace {
thread_local int evaluation_depth = 0;
thread_local int replay_depth = 0;
}  // namespace

std::string config_value_str(const ConfigValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) return "none";
        else if constexpr (std::is_same_v<V, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<V, std::string>) return v;
        else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) return fmt::format("({})", fmt::join(v, ", "));
        else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
          std::string s;
          for (const std::string& t : v) s += fmt::format("{}\"{}\"", s.empty() ? "" : ", ", t);
          return "[" + s + "]";
        }
        else return fmt::format("{}", v);
      },
      value);
}

ConfigValue float_option(float value) { return std::stod(fmt::format("{}", value)); }

ConfigValue size_option(Size2 size) { return std::vector<std::int64_t>{size.h, size.w}; }

std::vector<std::string> Layer::config_lines() const {
  std::vector<std::string> lines{"type=" + type_name()};
  for (const auto& [option, value] : config()) lines.push_back(option + "=" + config_value_str(value));
  for (const auto& [name, c] : children_)
    for (const std::string& line : c->config_lines()) lines.push_back(name + "." + line);
  return lines;
}

ReplayScope::ReplayScope() { ++replay_depth; }
ReplayScope::~ReplayScope() { --replay_depth; }
bool ReplayScope::active() { return replay_depth > 0; }

EvaluationScope::EvaluationScope() { ++evaluation_depth; }
EvaluationScope::~EvaluationScope() { --evaluation_depth; }
bool EvaluationScope::active() { return evaluation_depth > 0; }

bool Layer::training() const { return training_ && evaluation_depth == 0; }

void Layer::set_training(bool training) {
  training_ = training;
  for (auto& [name, c] : children_) c->set_training(training);
}

void Layer::set_generator(Generator* generator) {
  generator_ = generator;
  for (auto& [name, c] : children_) c->set_generator(generator);
}

std::size_t Layer::add_child(std::string name, std::unique_ptr<Layer> child) {
  for (const auto& [existing, c] : children_)
    ACCRUE_CHECK(existing != name, "{}: a second sub-layer named '{}'", describe(), name);
  child->set_name(name);
  child->set_training(training_);
  child->set_generator(generator_);
  children_.emplace_back(std::move(name), std::move(child));
  return children_.size() - 1;
}

Shape Layer::build_child(std::size_t i, const Shape& input_shape, Generator& generator) {
  auto& [name, c] = children_.at(i);
  c->ensure_built(input_shape, generator);
  for (std::size_t k = 0; k < c->parameters_.size(); ++k) {
    parameters_.emplace_back(fmt::format("{}.{}", name, c->parameters_[k].first), c->parameters_[k].second);
    parameter_origins_.push_back({static_cast<int>(i), k});
  }
  for (std::size_t k = 0; k < c->buffers_.size(); ++k) {
    buffers_.emplace_back(fmt::format("{}.{}", name, c->buffers_[k].first), c->buffers_[k].second);
    buffer_origins_.push_back({static_cast<int>(i), k});
  }
  return c->output_shape();
}

Shape Layer::build(const Shape& input_shape, Generator& /*generator*/) { return input_shape; }

LayerMemoryUse Layer::memory_use(const LayerMemoryQuery& q) const { return {.output_dtype = q.input_dtype}; }

std::int64_t Layer::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters_) n += p.second.numel();
  return n;
}

namespace {
std::string shapes_str(const std::vector<Shape>& shapes) {
  if (shapes.size() == 1) return shapes[0].str();
  std::vector<std::string> each;
  for (const Shape& s : shapes) each.push_back(s.str());
  return fmt::format("{}", fmt::join(each, " and "));
}
}  // namespace

std::string InputCount::str() const {
  if (min == max) return std::to_string(min);
  if (max == std::numeric_limits<std::size_t>::max()) return fmt::format("{} or more", min);
  return fmt::format("{} to {}", min, max);
}

const Shape& Layer::input_shape() const {
  static const Shape none;
  return input_shapes_.empty() ? none : input_shapes_.front();
}

void Layer::ensure_built(const Shape& input_shape, Generator& generator) {
  ensure_built_inputs({input_shape}, generator);
}

void Layer::ensure_built_inputs(const std::vector<Shape>& input_shapes, Generator& generator) {
  const std::string samples = input_shapes.size() == 1 ? "input samples" : "inputs' samples";
  if (built_) {
    if (input_shapes != input_shapes_)
      throw ShapeError(fmt::format("{} was built for {} of shape {} and now gets {}", describe(), samples,
                                   shapes_str(input_shapes_), shapes_str(input_shapes)));
    return;
  }
  ACCRUE_CHECK_SHAPE(input_count().admits(input_shapes.size()), "{} takes {} input{}, not {}", describe(),
                     input_count().str(), input_count().max == 1 ? "" : "s", input_shapes.size());
  try {
    output_shape_ = build_inputs(input_shapes, generator);
  } catch (Error& e) {
    e.prepend(fmt::format("building {} for {} of shape {}: ", describe(), samples, shapes_str(input_shapes)));
    throw;
  }
  input_shapes_ = input_shapes;
  built_ = true;
}

Shape Layer::build_inputs(const std::vector<Shape>& input_shapes, Generator& generator) {
  return build(input_shapes.at(0), generator);
}

Tensor Layer::forward_inputs(const std::vector<Tensor>& xs) {
  ACCRUE_CHECK(xs.size() == 1, "{} takes one input, not {}", describe(), xs.size());
  return forward(xs[0]);
}

std::string Layer::to_onnx_inputs(onnx::Graph& graph, const std::vector<std::string>& xs) const {
  ACCRUE_CHECK(xs.size() == 1, "{} takes one input, not {}", describe(), xs.size());
  return to_onnx(graph, xs[0]);
}

Symbol Layer::operator()(const Symbol& x) { return (*this)(std::vector<Symbol>{x}); }

Symbol Layer::operator()(const std::vector<Symbol>& xs) {
  if (!called_) called_ = std::shared_ptr<Layer>(clone());
  return detail::call_layer(called_, xs);
}

// Put in a Sequential: one input, which ensure_built and forward_inputs refuse with the count.
Shape MultiInputLayer::build(const Shape& input_shape, Generator& generator) {
  return build_inputs({input_shape}, generator);
}

Tensor MultiInputLayer::forward(const Tensor& x) { return forward_inputs({x}); }

Shape MultiInputLayer::build_inputs(const std::vector<Shape>& input_shapes, Generator& generator) {
  ACCRUE_CHECK_SHAPE(input_count().admits(input_shapes.size()), "{} takes {} inputs, not {}", describe(),
                     input_count().str(), input_shapes.size());
  return build(input_shapes, generator);
}

Tensor MultiInputLayer::forward_inputs(const std::vector<Tensor>& xs) {
  ACCRUE_CHECK(input_count().admits(xs.size()), "{} takes {} inputs, not {}", describe(), input_count().str(), xs.size());
  return forward(xs);
}

std::string Layer::describe() const {
  return name_.empty() ? fmt::format("layer ({})", type_name()) : fmt::format("layer '{}' ({})", name_, type_name());
}

std::string Layer::to_onnx(onnx::Graph&, const std::string&) const {
  throw ValueError(fmt::format("{} has no ONNX form: a layer of your own is exported once it overrides "
                               "Layer::to_onnx (accrue/dsl/onnx.hpp), writing its nodes with onnx::Graph",
                               describe()));
}

Layer& Layer::trainable(bool trainable) {
  trainable_ = trainable;
  for (auto& [name, c] : children_) c->trainable(trainable);
  for (auto& [name, p] : parameters_) {
    if (!trainable) p.set_grad(Tensor());  // a gradient already there would otherwise still be applied
    p.set_requires_grad(trainable);
  }
  return *this;
}

void Layer::for_each_layer(const std::function<void(Layer&)>& f) {
  f(*this);
  for (auto& [name, c] : children_) c->for_each_layer(f);
}

Tensor& Layer::add_parameter(std::string name, Tensor value) {
  if (value.category() != MemoryCategory::parameters) value.storage()->set_category(MemoryCategory::parameters);
  if (value.requires_grad() != trainable_) value.set_requires_grad(trainable_);
  parameters_.emplace_back(std::move(name), std::move(value));
  parameter_origins_.push_back({});
  return parameters_.back().second;
}

Tensor& Layer::add_buffer(std::string name, Tensor value) {
  if (value.category() != MemoryCategory::parameters) value.storage()->set_category(MemoryCategory::parameters);
  buffers_.emplace_back(std::move(name), std::move(value));
  buffer_origins_.push_back({});
  return buffers_.back().second;
}

namespace detail {

Symbol call_layer(const std::shared_ptr<Layer>& layer, const std::vector<Symbol>& inputs, std::string key) {
  std::vector<Shape> shapes;
  std::vector<std::string> described;
  for (const Symbol& s : inputs) {
    ACCRUE_CHECK(s.node() != nullptr, "{} called on a symbol that was moved from", layer->describe());
    shapes.push_back(s.shape());
    described.push_back(s.describe());
  }
  try {
    ACCRUE_CHECK_SHAPE(!inputs.empty(), "called on no inputs");
    layer->ensure_built_inputs(shapes, default_generator());
  } catch (Error& e) {
    e.prepend(fmt::format("{} called on {}: ", layer->describe(), fmt::join(described, " and ")));
    throw;
  }
  auto node = std::make_shared<SymbolNode>();
  node->layer = layer;
  node->inputs = inputs;
  node->shape = layer->output_shape();
  node->key = std::move(key);
  node->made_by = layer->describe();
  return Symbol(std::move(node));
}

}  // namespace detail

}  // namespace accrue
