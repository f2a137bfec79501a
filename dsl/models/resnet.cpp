#include "resnet.hpp"

#include <cmath>

#include "../../framework/autograd/autograd.hpp"
#include "../layers/activation.hpp"
#include "../layers/batch_norm.hpp"
#include "../layers/conv2d.hpp"
#include "../layers/dense.hpp"
#include "../layers/input.hpp"
#include "../layers/merge.hpp"
#include "../layers/pooling.hpp"

namespace accrue::models {
namespace {

enum class Block { basic, bottleneck };

struct Architecture {
  const char* name;
  Block block;
  int blocks[4];
};

// Writes the graph, with each layer named as torchvision's module and each convolution initialized
// as torchvision's (He's normal, over the output's fan: std = sqrt(2 / (out_channels * kh * kw))).
class Builder {
 public:
  explicit Builder(const ResNetOptions& options) : options_(options) {}

  Symbol conv(const Symbol& x, std::int64_t filters, std::int64_t kernel, std::int64_t stride, const std::string& name) {
    layers::Conv2d layer{filters, kernel, {.stride = stride, .padding = kernel / 2, .bias = false, .name = name}};
    Symbol y = layer(x);
    convolutions_.push_back(y.layer());
    return y;
  }
  Symbol bn(const Symbol& x, const std::string& name, bool last_of_block = false) {
    Symbol y = layers::BatchNorm2d{{.name = name}}(x);
    if (last_of_block && options_.zero_init_residual) last_norms_.push_back(y.layer());
    return y;
  }
  static Symbol relu(const Symbol& x) { return layers::ReLU{}(x); }

  // torchvision's BasicBlock and Bottleneck (stride on the 3x3 convolution, as its v1.5).
  Symbol block(Block kind, const Symbol& x, std::int64_t width, std::int64_t stride, const std::string& name) {
    const std::int64_t out = kind == Block::basic ? width : 4 * width;
    Symbol y = x;
    if (kind == Block::basic) {
      y = relu(bn(conv(y, width, 3, stride, name + ".conv1"), name + ".bn1"));
      y = bn(conv(y, width, 3, 1, name + ".conv2"), name + ".bn2", true);
    } else {
      y = relu(bn(conv(y, width, 1, 1, name + ".conv1"), name + ".bn1"));
      y = relu(bn(conv(y, width, 3, stride, name + ".conv2"), name + ".bn2"));
      y = bn(conv(y, out, 1, 1, name + ".conv3"), name + ".bn3", true);
    }
    Symbol shortcut = x;
    if (stride != 1 || x.shape()[0] != out)
      shortcut = bn(conv(x, out, 1, stride, name + ".downsample.0"), name + ".downsample.1");
    return relu(layers::Add{{.name = name + ".add"}}({y, shortcut}));
  }

  Model build(const Architecture& a) {
    layers::Input image{options_.input_shape, {.name = "image"}};
    Symbol x = relu(bn(conv(image, 64, 7, 2, "conv1"), "bn1"));
    x = layers::MaxPool2d{3, {.stride = 2, .padding = 1, .name = "maxpool"}}(x);
    for (int stage = 0; stage < 4; ++stage)
      for (int b = 0; b < a.blocks[stage]; ++b)
        x = block(a.block, x, std::int64_t{64} << stage, b == 0 && stage > 0 ? 2 : 1, fmt::format("layer{}.{}", stage + 1, b));
    x = layers::GlobalAvgPool2d{}(x);
    if (options_.include_top) x = layers::Dense{options_.num_classes, {.name = "fc"}}(x);
    initialize();
    return Model{image, x, {.name = options_.name.empty() ? a.name : options_.name}};
  }

 private:
  void initialize() {
    const NoGradGuard no_grad;
    for (const auto& c : convolutions_) {
      Tensor w = c->named_parameters().at(0).second;
      const Shape& s = w.shape();
      const float stddev = std::sqrt(2.0f / static_cast<float>(s[0] * s[2] * s[3]));
      w.copy_(Tensor::normal(s, 0.0f, stddev, &default_generator()));
    }
    for (const auto& n : last_norms_) Tensor{n->named_parameters().at(0).second}.zero_();
  }

  ResNetOptions options_;
  std::vector<std::shared_ptr<Layer>> convolutions_, last_norms_;
};

Model resnet(const Architecture& a, const ResNetOptions& options) {
  ACCRUE_CHECK_SHAPE(options.input_shape.rank() == 3 && options.input_shape[1] >= 32 && options.input_shape[2] >= 32,
                     "{}: input_shape is (C, H, W) with H and W of 32 or more (five halvings to the last stage), got {}",
                     a.name, options.input_shape);
  ACCRUE_CHECK(!options.include_top || options.num_classes >= 1, "{}: num_classes must be at least 1, got {}", a.name,
               options.num_classes);
  return Builder{options}.build(a);
}

}  // namespace

Model resnet18(const ResNetOptions& options) { return resnet({"resnet18", Block::basic, {2, 2, 2, 2}}, options); }
Model resnet34(const ResNetOptions& options) { return resnet({"resnet34", Block::basic, {3, 4, 6, 3}}, options); }
Model resnet50(const ResNetOptions& options) { return resnet({"resnet50", Block::bottleneck, {3, 4, 6, 3}}, options); }

}  // namespace accrue::models
