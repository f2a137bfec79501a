#pragma once
// Sequential: a model that is a list of layers, each feeding the next (Model, model.hpp, with a
// chain for its graph):
//
//   Sequential model{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
//                    layers::Dense{10}};
//   model.compile(optim::SGD{.lr = 1e-3}, losses::CrossEntropy{}, {metrics::Accuracy{}});
//   model.summary();
//   History h = model.fit(train, {.epochs = 5, .batch_size = 64, .validation = test});
//   auto [loss, accuracy] = model.evaluate(test);
//
// Its parameters are named as PyTorch's nn.Sequential names them ("0.weight", "2.bias"). Without a
// layers::Input it is built by the first batch it sees (or build(shape)).

#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>

#include "model.hpp"

namespace accrue {

class Sequential : public Model {
 public:
  Sequential();
  /// Layers in order, moved or copied in; a layers::Input first declares the sample shape.
  template <class... Ls>
    requires(sizeof...(Ls) > 0 &&
             ((std::derived_from<std::decay_t<Ls>, Layer> || std::same_as<std::decay_t<Ls>, layers::Input>) && ...))
  explicit(false) Sequential(Ls&&... layers) : Sequential() {
    (add(std::forward<Ls>(layers)), ...);
  }

  /// Appends a layer (the model takes ownership) and returns the model. On a built model the new
  /// layer is built at once, and a compiled model's optimizer is created anew to include it.
  template <class L>
    requires std::derived_from<std::decay_t<L>, Layer>
  Sequential& add(L&& layer) {
    return add(std::unique_ptr<Layer>(std::make_unique<std::decay_t<L>>(std::forward<L>(layer))));
  }
  Sequential& add(std::unique_ptr<Layer> layer);
  /// Declares the input sample shape (only before other layers and before building).
  Sequential& add(const layers::Input& input);
};

}  // namespace accrue
