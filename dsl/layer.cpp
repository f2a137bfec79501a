#include "accrue/dsl/layer.hpp"

#include "accrue/framework/error.hpp"

namespace accrue {

Layer::Layer(const Layer& other)
    : name_(other.name_),
      input_shape_(other.input_shape_),
      output_shape_(other.output_shape_),
      built_(other.built_),
      training_(other.training_) {
  // Parameters are deep-copied: a copied layer shares nothing with the original.
  for (const auto& [name, value] : other.parameters_) {
    Tensor copy = value.detach().clone();
    copy.storage()->set_category(MemoryCategory::parameters);
    copy.set_requires_grad(value.requires_grad());
    parameters_.emplace_back(name, std::move(copy));
  }
  for (const auto& [name, value] : other.buffers_) {
    Tensor copy = value.detach().clone();
    copy.storage()->set_category(MemoryCategory::parameters);
    buffers_.emplace_back(name, std::move(copy));
  }
}

Shape Layer::build(const Shape& input_shape, Generator& /*generator*/) { return input_shape; }

LayerMemoryUse Layer::memory_use(const LayerMemoryQuery& q) const { return {.output_dtype = q.input_dtype}; }

std::int64_t Layer::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters_) n += p.second.numel();
  return n;
}

void Layer::ensure_built(const Shape& input_shape, Generator& generator) {
  if (built_) {
    if (!(input_shape == input_shape_))
      throw ShapeError(fmt::format("{} was built for input samples of shape {} and now gets {}", describe(),
                                   input_shape_, input_shape));
    return;
  }
  try {
    output_shape_ = build(input_shape, generator);
  } catch (Error& e) {
    e.prepend(fmt::format("building {} for input samples of shape {}: ", describe(), input_shape));
    throw;
  }
  input_shape_ = input_shape;
  built_ = true;
}

std::string Layer::describe() const {
  return name_.empty() ? fmt::format("layer ({})", type_name()) : fmt::format("layer '{}' ({})", name_, type_name());
}

Tensor& Layer::add_parameter(std::string name, Tensor value) {
  if (value.category() != MemoryCategory::parameters) value.storage()->set_category(MemoryCategory::parameters);
  if (!value.requires_grad()) value.set_requires_grad(true);
  parameters_.emplace_back(std::move(name), std::move(value));
  return parameters_.back().second;
}

Tensor& Layer::add_buffer(std::string name, Tensor value) {
  if (value.category() != MemoryCategory::parameters) value.storage()->set_category(MemoryCategory::parameters);
  buffers_.emplace_back(std::move(name), std::move(value));
  return buffers_.back().second;
}

}  // namespace accrue
