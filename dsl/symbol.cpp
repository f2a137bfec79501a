#include "symbol.hpp"

#include "../framework/core/error.hpp"

namespace accrue {

const Shape& Symbol::shape() const { return node_->shape; }
DType Symbol::dtype() const { return node_->dtype; }
bool Symbol::is_input() const { return node_->layer == nullptr; }
const std::shared_ptr<Layer>& Symbol::layer() const { return node_->layer; }

std::string Symbol::describe() const {
  if (is_input())
    return node_->input_name.empty() ? fmt::format("an input {}", node_->shape)
                                     : fmt::format("input '{}' {}", node_->input_name, node_->shape);
  return fmt::format("the output {} of {}", node_->shape, node_->made_by);
}

}  // namespace accrue
