#pragma once
// ResNets as torchvision builds them (torchvision.models.resnet18/34/50, the "v1.5" variant with
// the stride on the bottleneck's 3x3 convolution), written with the functional API, their layers
// named as torchvision's modules are: conv1, bn1, layer1.0.conv1, layer2.0.downsample.0, fc. So a
// state_dict of torchvision's (the ImageNet weights it downloads, resnet18-f37072fd.pth) loads as it
// is, and PyTorch loads what Accrue saves:
//
//   Model net = models::resnet18();                          // ImageNet's 1000 classes
//   net.load_weights("resnet18-f37072fd.pth");
//   Model features = models::resnet18({.include_top = false});  // 512 features per image
//
// torchvision's ImageNet weights expect images as it prepares them for evaluation: resized to 256,
// center-cropped to 224, normalized by ImageNet's mean and standard deviation per channel:
//
//   data.map({transforms::Resize{256}, transforms::CenterCrop{224},
//             transforms::Normalize{models::imagenet_mean, models::imagenet_std}});

#include <cstdint>
#include <string>
#include <vector>

#include "../model.hpp"

namespace accrue::models {

/// ImageNet's per-channel mean and standard deviation (RGB), which torchvision's weights were
/// trained with.
inline const std::vector<float> imagenet_mean = {0.485f, 0.456f, 0.406f};
inline const std::vector<float> imagenet_std = {0.229f, 0.224f, 0.225f};

struct ResNetOptions {
  /// Outputs of the classifier (fc): ImageNet's 1000 for torchvision's weights.
  std::int64_t num_classes = 1000;
  /// Keras's include_top: false leaves out the classifier, so that the model's output is the
  /// global average of the last stage's features (512 per image for ResNet-18 and 34, 2048 for 50).
  bool include_top = true;
  /// torchvision's zero_init_residual: each block's last BatchNorm starts with weight 0, so that
  /// every residual block starts as the identity.
  bool zero_init_residual = false;
  /// The shape of one image (C, H, W); ImageNet's weights were trained at 3 x 224 x 224, and any
  /// height and width of 32 or more work.
  Shape input_shape = {3, 224, 224};
  /// The model's name; empty gives "resnet18", "resnet34" or "resnet50".
  std::string name = {};
};

/// ResNet-18: BasicBlocks of two 3x3 convolutions, [2, 2, 2, 2] per stage; 11.7 million parameters.
Model resnet18(const ResNetOptions& options = {});
/// ResNet-34: BasicBlocks, [3, 4, 6, 3]; 21.8 million parameters.
Model resnet34(const ResNetOptions& options = {});
/// ResNet-50: Bottlenecks (1x1, 3x3, 1x1 to 4x the width), [3, 4, 6, 3]; 25.6 million parameters.
Model resnet50(const ResNetOptions& options = {});

}  // namespace accrue::models
