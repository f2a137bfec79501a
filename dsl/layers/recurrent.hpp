#pragma once
// Recurrent layers over samples (T, features), batch first: LSTM and GRU, as PyTorch's nn.LSTM and
// nn.GRU with batch_first=True, returning every step's hidden state or the last one.

#include "../layer.hpp"

namespace accrue::layers {

struct RecurrentOptions {
  /// Stacked layers, each reading the previous one's hidden states.
  int layers = 1;
  /// (T, hidden) of every step's last-layer hidden state; false: (hidden) of the last step's.
  bool return_sequences = true;
  bool bias = true;
  std::string name = {};
};

/// What LSTM and GRU share: the parameters, named weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k},
/// bias_hh_l{k} as PyTorch names them, uniform in +-1/sqrt(hidden) as PyTorch draws them, and the
/// walk over the steps. The cell is the only difference.
class Recurrent : public Layer {
 public:
  Shape build(const Shape& input_shape, Generator& generator) override;
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;
  LayerConfig config() const override;
  /// The options config() describes (layer_registry.hpp).
  static RecurrentOptions options_from_config(const ConfigReader& c);

  std::int64_t hidden() const { return hidden_; }

 protected:
  Recurrent(std::int64_t hidden, RecurrentOptions options, int gates);
  struct State {
    Tensor h, c;  // c: the LSTM's cell state (undefined for a GRU)
  };
  /// One step of layer k: the input's projection x W_ih^T + b_ih (batch, gates x hidden) already
  /// made for all steps at once, and the state before it.
  virtual State step(const Tensor& projected_input, const State& state, int k) = 0;
  /// The hidden-to-hidden product h W_hh^T + b_hh of layer k.
  Tensor hidden_product(const Tensor& h, int k) const;

 private:
  // Layer k's weight_ih (0), weight_hh (1), bias_ih (2) or bias_hh (3); undefined for a bias of a
  // layer without.
  Tensor parameter(int k, int which) const;
  std::int64_t hidden_;
  RecurrentOptions options_;
  int gates_;
};

/// Long short-term memory, nn.LSTM: gates input, forget, cell and output in PyTorch's order.
class LSTM final : public LayerBase<LSTM, "LSTM", Recurrent> {
 public:
  explicit LSTM(std::int64_t hidden, RecurrentOptions options = {}) : LayerBase(hidden, std::move(options), 4) {}

 private:
  State step(const Tensor& projected_input, const State& state, int k) override;
};

/// Gated recurrent unit, nn.GRU: gates reset, update and new in PyTorch's order, the reset gate
/// applied to the hidden product with its bias (PyTorch's formulation).
class GRU final : public LayerBase<GRU, "GRU", Recurrent> {
 public:
  explicit GRU(std::int64_t hidden, RecurrentOptions options = {}) : LayerBase(hidden, std::move(options), 3) {}

 private:
  State step(const Tensor& projected_input, const State& state, int k) override;
};

}  // namespace accrue::layers
