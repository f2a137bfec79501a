#pragma once
// Keras's image preprocessing layers, which put what a dataset transform did into the model, so
// that a saved or exported model takes images as they are read (any size, pixels in [0, 255]) and
// does to them exactly what training did:
//
//   Sequential model{layers::Input{3, 96, 96},
//                    layers::Resizing{{72, 72}, {.crop_to_aspect_ratio = true}}, layers::CenterCrop{64},
//                    layers::Rescaling{1.0f / 255}, layers::Normalization{{.axis = 0, .mean = ..., .variance = ...}},
//                    ...};
//
// Samples are (channels, height, width), as everywhere in Accrue. Each layer is a function of its
// input alone, the same in training and inference; it computes in float32 even under autocast
// (rounding pixels to bfloat16 would change what the model sees), and gradients pass through it.
// The random augmentation layers, active only in fit, are in augmentation.hpp.

#include <string>

#include "../../datasets/transforms.hpp"
#include "../layer.hpp"

namespace accrue::layers {

struct RescalingOptions {
  float offset = 0.0f;
  std::string name = {};
};

/// x * scale + offset: Keras's Rescaling. `Rescaling{1.0f / 255}` takes pixels in [0, 255] to
/// [0, 1]; `Rescaling{1.0f / 127.5f, {.offset = -1}}` to [-1, 1].
class Rescaling final : public LayerBase<Rescaling, "Rescaling"> {
 public:
  explicit Rescaling(float scale, RescalingOptions options = {});
  LayerConfig config() const override;
  static Rescaling from_config(const ConfigReader& c);
  float scale() const { return scale_; }
  float offset() const { return options_.offset; }

  Tensor forward(const Tensor& x) override;
  ImageSizes image_sizes() const override { return ImageSizes::follows; }
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  float scale_;
  RescalingOptions options_;
};

struct ResizingOptions {
  transforms::Interpolation interpolation = transforms::Interpolation::bilinear;
  /// Crop the largest central window of the target's aspect ratio first, rather than stretching
  /// (Keras's crop_to_aspect_ratio; datasets::image_folder's option of the same name).
  bool crop_to_aspect_ratio = false;
  /// When shrinking, average over each output pixel's whole footprint (PIL's and
  /// datasets::image_folder's resize, torch's antialias=True). Keras's Resizing does not by
  /// default; Accrue does, so that a model resizing a file sees what image_folder made of it.
  bool antialias = true;
  std::string name = {};
};

/// Each image resized to `size` (height, width): Keras's Resizing, computed as
/// transforms::functional::resize (the same taps), as two products with the taps' matrices.
class Resizing final : public LayerBase<Resizing, "Resizing"> {
 public:
  explicit Resizing(Size2 size, ResizingOptions options = {});
  LayerConfig config() const override;
  static Resizing from_config(const ConfigReader& c);
  Size2 size() const { return size_; }
  const ResizingOptions& options() const { return options_; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  ImageSizes image_sizes() const override { return ImageSizes::resizes; }
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  Size2 size_;
  ResizingOptions options_;
};

struct CenterCropOptions {
  std::string name = {};
};

/// The central (height, width) window of each image: Keras's CenterCrop, whose window starts at
/// ((H - height) / 2, (W - width) / 2) rounded down. An image smaller than the window either way
/// is resized to it instead, after cropping to its aspect ratio (Keras's rule).
class CenterCrop final : public LayerBase<CenterCrop, "CenterCrop"> {
 public:
  explicit CenterCrop(Size2 size, CenterCropOptions options = {});
  LayerConfig config() const override;
  static CenterCrop from_config(const ConfigReader& c);
  Size2 size() const { return size_; }

  Shape build(const Shape& input_shape, Generator& generator) override;
  ImageSizes image_sizes() const override { return ImageSizes::resizes; }
  Tensor forward(const Tensor& x) override;
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override;
  LayerMemoryUse memory_use(const LayerMemoryQuery& q) const override;

 private:
  Size2 size_;
};

namespace detail {
/// (N, C, H, W) images: their central window of `size`'s aspect ratio when `crop_to_aspect_ratio`,
/// resized to `size` as transforms::functional::resize does (in float32 whatever the autocast).
Tensor resize_images(const Tensor& x, Size2 size, transforms::Interpolation interpolation, bool antialias,
                     bool crop_to_aspect_ratio);
/// Writes resize_images's nodes for an input of sample shape (C, H, W) into `graph`.
std::string resize_images_onnx(onnx::Graph& graph, const std::string& x, const Shape& sample, Size2 size,
                               transforms::Interpolation interpolation, bool antialias, bool crop_to_aspect_ratio);
/// The same for images of any size (onnx::Graph::any_image_size): taps computed in the graph.
std::string resize_any_size_onnx(onnx::Graph& graph, const std::string& x, Size2 size,
                                 transforms::Interpolation interpolation, bool antialias, bool crop_to_aspect_ratio);
/// CenterCrop's nodes for images of any size.
std::string center_crop_any_size_onnx(onnx::Graph& graph, const std::string& x, Size2 size);
/// Checks a layer's output size (height, width): 1 to 65536 pixels each way; throws ValueError
/// naming `layer` otherwise.
void check_size(Size2 size, const char* layer);
/// Checks that `sample` is an image (C, H, W) for `layer`; throws ShapeError naming both otherwise.
void require_image(const Shape& sample, const Layer& layer);
/// "bilinear", and back (ValueError naming the choices).
std::string interpolation_name(transforms::Interpolation interpolation);
transforms::Interpolation interpolation_named(const std::string& name);
}  // namespace detail

}  // namespace accrue::layers
