// End-to-end parity with PyTorch: a small MLP with PyTorch's initial weights is trained by fit()
// exactly as tests/data/make_pytorch_reference.py trains it, for SGD (Nesterov, weight decay), Adam
// and AdamW (amsgrad); the epoch losses and final weights must match PyTorch's to float32 tolerance.

#include "../test_util.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

using namespace accrue;
using namespace accrue::test;
using json = nlohmann::json;

namespace {

json reference() {
  std::ifstream f(std::string(ACCRUE_TEST_DATA_DIR) + "/pytorch_reference.json");
  BOOST_REQUIRE_MESSAGE(f, "tests/data/pytorch_reference.json is missing");
  return json::parse(f);
}

Sequential model_with(const json& weights) {
  Sequential model{layers::Input{8}, layers::Dense{16}, layers::ReLU{}, layers::Dense{16}, layers::GELU{},
                   layers::Dense{4}};
  for (auto& [name, p] : model.named_parameters()) {
    const std::vector<float> v = weights.at(name).get<std::vector<float>>();
    p.copy_(Tensor::from(v, p.shape()));
  }
  return model;
}

}  // namespace

BOOST_AUTO_TEST_CASE(training_matches_pytorch) {
  const json ref = reference();
  const auto shape = ref["shape"].get<std::vector<std::int64_t>>();
  const Tensor x = Tensor::from(ref["x"].get<std::vector<float>>(), {shape[0], shape[1]});
  const Tensor y = Tensor::from(ref["y"].get<std::vector<std::int32_t>>(), {shape[0]});
  const Dataset data{x, y, "reference"};

  {
    Sequential model = model_with(ref["initial"]);
    check_close(model(x), ref["initial_logits"].get<std::vector<float>>(), 1e-5, 1e-5, "initial logits");
    const float smoothed = ops::cross_entropy(model(x), y, Reduction::mean, 0.1f).item();
    BOOST_TEST(smoothed == ref["label_smoothing_loss"].get<float>(), boost::test_tools::tolerance(1e-5f));
  }

  const std::vector<std::pair<std::string, optim::AnyOptimizer>> cases = {
      {"sgd", optim::SGD{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true}},
      {"adam", optim::Adam{.lr = 1e-2}},
      {"adamw", optim::AdamW{.lr = 1e-2, .weight_decay = 0.05, .amsgrad = true}},
  };
  for (const auto& [name, opt] : cases) {
    Sequential model = model_with(ref["initial"]);
    model.compile(opt, losses::CrossEntropy{});
    const History h = model.fit(data, {.epochs = ref["epochs"].get<int>(), .batch_size = ref["batch_size"].get<std::int64_t>(),
                                       .shuffle = false, .verbose = 0});
    const json& expected = ref["cases"][name];
    const auto losses = expected["epoch_losses"].get<std::vector<double>>();
    for (std::size_t e = 0; e < losses.size(); ++e)
      BOOST_TEST(h["loss"][e] == losses[e], boost::test_tools::tolerance(1e-5));
    for (const auto& [pname, p] : model.named_parameters())
      check_close(p, expected["final"].at(pname).get<std::vector<float>>(), 2e-5, 1e-4, name + " " + pname);
  }
}
