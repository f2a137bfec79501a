// A whole model's description (the JSON Model::save writes in a safetensors file's metadata):
// layer types, options, nesting, the compile settings and the vocabulary, beside the weights of a
// small MLP. load_model must return or throw accrue::Error, never crash, hang or take memory the
// weights do not need.
#include "described_model.hpp"

namespace {

// The state of Input{4}, Dense{3}, ReLU, Dense{2}: the tensors every input is loaded beside.
const std::vector<std::pair<std::string, accrue::Tensor>>& weights() {
  static const auto state = [] {
    accrue::Sequential mlp{accrue::layers::Input{4}, accrue::layers::Dense{3}, accrue::layers::ReLU{},
                           accrue::layers::Dense{2}};
    return mlp.named_state();
  }();
  return state;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  accrue::fuzz::load_described_model("model_file", weights(), data, size);
  return 0;
}
