#pragma once
// Symbol: a tensor of a model being written with Keras's functional API (model.hpp). It holds no
// values, only what the graph needs: its sample shape, and the layer call that makes it from other
// symbols. layers::Input makes the first ones; a layer called on symbols makes the next:
//
//   layers::Input image{{1, 28, 28}, {.name = "image"}};
//   Symbol x = layers::Flatten{}(image);
//   x = layers::Dense{64}(x);
//
// Symbols are cheap to copy (they share their node) and never change, so a graph written with them
// has no cycles.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../framework/core/dtype.hpp"
#include "../framework/core/shape.hpp"

namespace accrue {

class Layer;
class Symbol;

namespace detail {
// What makes a symbol: a model's input (no layer), or `layer` called on `inputs`.
struct SymbolNode {
  std::shared_ptr<Layer> layer;
  std::vector<Symbol> inputs;
  Shape shape;
  DType dtype = DType::f32;
  // An input's name as given (empty: the model names it).
  std::string input_name;
  // Where the layer's parameters are named inside the model: empty for a layer called directly
  // (its own name), "encoder.0" for layer 0 of a nested model "encoder".
  std::string key;
  // The layer as messages name it ("layer 'dense' (Dense)"), when it was called.
  std::string made_by;
};
}  // namespace detail

class Symbol {
 public:
  /// The shape of one sample (no batch dimension).
  const Shape& shape() const;
  /// The dtype of its values: an input's as declared; float32 for what layers make.
  DType dtype() const;
  /// Whether it is a model's input (layers::Input) rather than a layer's output.
  bool is_input() const;
  /// The layer that makes it (null for an input).
  const std::shared_ptr<Layer>& layer() const;
  /// "input 'image' (1, 28, 28)" or "'dense_1' (Dense) (64)", for messages.
  std::string describe() const;

  const std::shared_ptr<const detail::SymbolNode>& node() const { return node_; }
  explicit Symbol(std::shared_ptr<const detail::SymbolNode> node) : node_(std::move(node)) {}

 protected:
  Symbol() = default;
  std::shared_ptr<const detail::SymbolNode> node_;
};

}  // namespace accrue
