// Conv2d, pooling and normalization layers against PyTorch: the same inputs and weights give the
// same outputs and gradients (tests/data/pytorch_cnn_layers.json, made by
// tests/data/make_cnn_layer_reference.py), and batch normalization the same running statistics
// and evaluation output. Then what the layers add to a model: shapes, summary rows, the warning
// under accumulation.

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "../pytorch_reference.hpp"

using namespace accrue;
using json = nlohmann::json;
using namespace accrue::test;

namespace {

Size2 size2(const json& j) { return {j[0].get<std::int64_t>(), j[1].get<std::int64_t>()}; }

std::unique_ptr<Layer> make_layer(const json& c, const Shape& sample) {
  const std::string type = c["type"];
  if (type == "conv2d")
    return std::make_unique<layers::Conv2d>(
        c["filters"].get<std::int64_t>(), size2(c["kernel"]),
        layers::Conv2dOptions{.stride = size2(c["stride"]), .padding = layers::Padding{size2(c["padding"])},
                              .dilation = size2(c["dilation"]), .groups = c["groups"], .bias = c["bias"]});
  if (type == "max_pool2d")
    return std::make_unique<layers::MaxPool2d>(size2(c["kernel"]),
                                               layers::Pool2dOptions{.stride = size2(c["stride"]), .padding = size2(c["padding"])});
  if (type == "avg_pool2d")
    return std::make_unique<layers::AvgPool2d>(
        size2(c["kernel"]), layers::Pool2dOptions{.stride = size2(c["stride"]), .padding = size2(c["padding"]),
                                                  .count_include_pad = c["count_include_pad"]});
  if (type == "batch_norm") {
    const layers::BatchNormOptions o{.momentum = c["momentum"].get<float>(), .eps = c["eps"], .affine = c["affine"]};
    if (sample.rank() == 3) return std::make_unique<layers::BatchNorm2d>(o);
    return std::make_unique<layers::BatchNorm1d>(o);
  }
  if (type == "group_norm")
    return std::make_unique<layers::GroupNorm>(c["groups"].get<std::int64_t>(),
                                               layers::GroupNormOptions{.eps = c["eps"], .affine = c["affine"]});
  if (type == "layer_norm")
    return std::make_unique<layers::LayerNorm>(
        layers::LayerNormOptions{.dims = c["dims"], .eps = c["eps"], .affine = c["affine"]});
  BOOST_FAIL("unknown layer type " << type);
  return nullptr;
}

}  // namespace

BOOST_AUTO_TEST_CASE(layers_match_pytorch_forward_and_backward) {
  const json ref = accrue::test::pytorch_reference("pytorch_cnn_layers.json");
  BOOST_TEST_MESSAGE("reference made with torch " << ref["torch"].get<std::string>());
  for (const json& c : ref["cases"]) {
    const std::string name = c["name"];
    Tensor x = tensor_of(c["x"]);
    x.set_requires_grad(true);
    const Shape sample = x.shape().drop_front();
    std::unique_ptr<Layer> layer = make_layer(c["config"], sample);
    Generator gen{1};
    layer->ensure_built(sample, gen);
    {
      const NoGradGuard no_grad;
      for (const auto& [pname, p] : layer->named_parameters()) {
        BOOST_REQUIRE_MESSAGE(c["params"].contains(pname), name << ": PyTorch has no parameter " << pname);
        Tensor{p}.copy_(tensor_of(c["params"][pname]));
      }
    }
    BOOST_REQUIRE_EQUAL(layer->named_parameters().size(), c["params"].size());
    layer->set_training(true);
    const Tensor y = layer->forward(x);
    expect_close(y, c["y"], name + " output");
    ops::sum(y * tensor_of(c["g"])).backward();
    expect_close(x.grad(), c["grad_x"], name + " input gradient", 5e-5);
    for (const auto& [pname, p] : layer->named_parameters())
      expect_close(p.grad(), c["grad_params"][pname], name + " gradient of " + pname, 5e-5);
    if (c.contains("buffers_after")) {
      for (const auto& [bname, b] : layer->named_buffers())
        expect_close(b, c["buffers_after"][bname], name + " " + bname + " after one step");
      layer->set_training(false);
      const NoGradGuard no_grad;
      expect_close(layer->forward(x), c["y_eval"], name + " evaluation output");
    }
  }
}

BOOST_AUTO_TEST_CASE(a_cnn_infers_its_shapes_and_summarises_them) {
  manual_seed(0);
  Sequential model{layers::Input{1, 28, 28},
                   layers::Conv2d{32, 3, {.padding = 1}},
                   layers::BatchNorm2d{},
                   layers::ReLU{},
                   layers::MaxPool2d{2},
                   layers::Conv2d{64, 3, {.padding = layers::same}},
                   layers::GroupNorm{8},
                   layers::ReLU{},
                   layers::MaxPool2d{2},
                   layers::Flatten{},
                   layers::Dense{128},
                   layers::LayerNorm{},
                   layers::Dense{10}};
  BOOST_TEST(model.output_shape() == (Shape{10}));
  BOOST_TEST(model.layer(3).output_shape() == (Shape{32, 14, 14}));
  BOOST_TEST(model.layer(7).output_shape() == (Shape{64, 7, 7}));
  const std::string s = model.summary_str();
  BOOST_TEST_MESSAGE(s);
  BOOST_TEST(s.find("conv2d (Conv2d)") != std::string::npos);
  BOOST_TEST(s.find("(None, 32, 28, 28)") != std::string::npos);
  BOOST_TEST(s.find("(None, 64, 7, 7)") != std::string::npos);
  // Conv2d 1->32: 32*9 + 32 = 320; BatchNorm2d(32): 64 trainable + 64 running statistics (Keras counts both).
  BOOST_TEST(s.find("320") != std::string::npos);
  const std::int64_t trainable = 320 + 64 + (64 * 32 * 9 + 64) + 128 + (3136 * 128 + 128) + 256 + (128 * 10 + 10);
  BOOST_TEST(model.parameter_count() == trainable);
  BOOST_TEST(s.find("Non-trainable params: 64 ") != std::string::npos);
  // PyTorch's state_dict names, buffers included.
  const auto state = model.named_state();
  BOOST_TEST(state[2].first == "1.weight");
  BOOST_TEST(state[4].first == "1.running_mean");
  BOOST_TEST(state[5].first == "1.running_var");
}

BOOST_AUTO_TEST_CASE(batch_norm_under_accumulation_is_named_in_a_warning) {
  std::vector<std::string> lines;
  log::set_sink([&](log::Level, std::string_view line) { lines.emplace_back(line); });
  const Dataset data = test::blobs(64, 3);
  for (bool group : {false, true}) {
    lines.clear();
    manual_seed(1);
    Sequential model{layers::Input{6}, layers::Dense{8}};
    if (group)
      model.add(layers::GroupNorm{2, {.name = "gn"}});
    else
      model.add(layers::BatchNorm1d{{.name = "bn"}});
    model.add(layers::ReLU{});
    model.add(layers::Dense{4});
    model.compile(optim::SGD{.lr = 0.05}.accumulate(4), losses::CrossEntropy{});
    model.fit(data, {.epochs = 1, .batch_size = 8, .verbose = 0});
    const bool warned = std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
      return l.find("'bn' (BatchNorm1d)") != std::string::npos && l.find("micro-batch of 8") != std::string::npos &&
             l.find("GroupNorm") != std::string::npos;
    });
    BOOST_TEST(warned == !group, (group ? "GroupNorm" : "BatchNorm1d"));
  }
  log::set_sink({});
}
