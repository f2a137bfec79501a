// Weights between Accrue and PyTorch through safetensors under PyTorch's state_dict names: a model
// trained a few steps by Accrue, loaded into PyTorch, gives the same logits; weights made by
// PyTorch, loaded into Accrue, too. tests/data/interop.py is the PyTorch side. Without Debian's
// python3-torch the test is reported as skipped, with the reason.

#include <boost/test/unit_test.hpp>

#include <accrue/accrue.hpp>
#include <accrue/framework/serialization/safetensors.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "../python_side.hpp"
#include "../test_util.hpp"

using namespace accrue;

namespace {

std::string run_python(const std::string& args) { return test::run_python_script("interop.py", args); }

// The layers of interop.py's model, in the same order.
Sequential interop_model() {
  return Sequential{layers::Input{1, 8, 8},      layers::Conv2d{4, 3, {.padding = 1}}, layers::BatchNorm2d{},
                    layers::ReLU{},               layers::MaxPool2d{2},                 layers::Flatten{},
                    layers::Dense{16},            layers::ReLU{},                       layers::Dense{3}};
}

std::filesystem::path scratch(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("accrue-interop-" + std::to_string(::getpid()) + "-" + name);
}

Tensor logits_in(const std::filesystem::path& path) {
  for (auto& [name, t] : serialization::load_safetensors(path.string()).tensors)
    if (name == "logits") return t;
  BOOST_FAIL("no logits in " << path);
  return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(accrue_weights_give_pytorch_the_same_logits) {
  Generator gen{4};
  const Tensor x = Tensor::uniform({5, 1, 8, 8}, -1, 1, &gen);
  std::vector<std::int32_t> labels(40);
  for (auto& l : labels) l = static_cast<std::int32_t>(gen.below(3));
  const Dataset data{Tensor::uniform({40, 1, 8, 8}, -1, 1, &gen), Tensor::from(labels, {40}), "images"};
  manual_seed(2);
  Sequential model = interop_model();
  model.compile(optim::Adam{.lr = 1e-2}, losses::CrossEntropy{});
  model.fit(data, {.epochs = 2, .batch_size = 8, .verbose = 0});  // a few steps: weights and running statistics move
  const auto weights = scratch("accrue.safetensors"), input = scratch("x.safetensors"), out = scratch("logits.safetensors");
  model.save_weights(weights.string());
  serialization::save_safetensors(input.string(), {{"x", x}});
  run_python(fmt::format("to_torch {} {} {}", weights.string(), input.string(), out.string()));
  test::check_close(logits_in(out), model.predict(x), 1e-5, 1e-4, "PyTorch's logits with Accrue's weights");
  for (const auto& p : {weights, input, out}) std::filesystem::remove(p);
}

BOOST_AUTO_TEST_CASE(pytorch_weights_give_accrue_the_same_logits) {
  Generator gen{5};
  const Tensor x = Tensor::uniform({5, 1, 8, 8}, -1, 1, &gen);
  const auto input = scratch("x2.safetensors"), out = scratch("torch.safetensors");
  serialization::save_safetensors(input.string(), {{"x", x}});
  run_python(fmt::format("from_torch 7 {} {}", input.string(), out.string()));
  // The file holds PyTorch's logits beside its weights: load the weights from a copy without them.
  auto file = serialization::load_safetensors(out.string());
  serialization::NamedTensors weights;
  Tensor expected;
  for (auto& [name, t] : file.tensors) {
    if (name == "logits") expected = t;
    else weights.emplace_back(name, t);
  }
  const auto weights_path = scratch("torch-weights.safetensors");
  serialization::save_safetensors(weights_path.string(), weights);
  manual_seed(3);
  Sequential model = interop_model();
  model.load_weights(weights_path.string());
  test::check_close(model.predict(x), expected, 1e-5, 1e-4, "Accrue's logits with PyTorch's weights");
  for (const auto& p : {input, out, weights_path}) std::filesystem::remove(p);
}

int main(int argc, char* argv[]) {
  return test::main_with_python(argc, argv, "test_interop", "torch", "python3-torch");
}
