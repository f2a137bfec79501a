// The graph part of a whole model's description (what Model::save writes for a functional model:
// its inputs, each node's layer and the values it reads, its outputs), beside the weights of a
// small graph of two inputs, a shared Dense, a merge and two outputs. load_model must return or
// throw accrue::Error, never crash, hang, recurse without end or take memory the weights do not
// need, whatever the nodes say (cycles, values not made yet, a million nodes).
#include "described_model.hpp"

namespace {

// The model of seeds/model_graph/two_inputs.json: its state is what every input is loaded beside.
const std::vector<std::pair<std::string, accrue::Tensor>>& weights() {
  static const auto state = [] {
    using namespace accrue;
    layers::Input left{{4}, {.name = "left"}}, right{{4}, {.name = "right"}};
    layers::Dense shared{3};
    const Symbol both = layers::Add{}({shared(left), shared(right)});
    Model graph{{left, right}, {layers::Dense{2, {.name = "label"}}(both), layers::Dense{1, {.name = "score"}}(both)}};
    return graph.named_state();
  }();
  return state;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  accrue::fuzz::load_described_model("model_graph", weights(), data, size);
  return 0;
}
