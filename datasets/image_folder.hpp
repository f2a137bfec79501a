#pragma once
// A folder of images sorted into one sub-folder per class, as Keras's
// image_dataset_from_directory(labels="inferred") and torchvision's ImageFolder read it:
//
//   flowers/daisy/1.jpg, flowers/daisy/2.png, flowers/rose/3.jpg ...
//   auto [train, val] = datasets::image_folder_split("flowers", {.image_size = 64, .validation_split = 0.2, .seed = 1});
//
// Labels are the sub-folders in sorted order (or class_names' order); files are found in each
// class folder and its sub-folders. Files whose names do not end in .png, .jpg or .jpeg (in any
// case) are skipped, as Keras skips what is not an image; a .bmp or .gif is skipped with a
// warning, since Accrue decodes PNG and JPEG only. Images are decoded on demand, sample by sample
// (image_files.hpp), converted to `channels`, resized with an antialiasing filter, and given as
// float32 (C, H, W) in [0, 1], torchvision's ToTensor layout, which its Normalize values assume
// (or in [0, 255] with .raw_pixels, for a model that rescales them itself). Dataset::class_names()
// names the labels.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataset.hpp"
#include "image_files.hpp"
#include "transforms.hpp"

namespace accrue::datasets {

enum class Subset { all, training, validation };

/// Keras's defaults: 256 x 256 RGB, bilinear, no validation split.
struct ImageFolderOptions {
  Size2 image_size = {256, 256};
  /// 1 grey, 3 RGB, 4 RGBA.
  int channels = 3;
  /// The share of the files set aside for validation (Keras's validation_split); with `subset`
  /// training or validation, one side of it. The files are shuffled with `seed` first.
  double validation_split = 0.0;
  Subset subset = Subset::all;
  std::uint64_t seed = 0;
  transforms::Interpolation interpolation = transforms::Interpolation::bilinear;
  /// Crop the largest central window of the target's aspect ratio before resizing, rather than
  /// stretching the image (Keras's crop_to_aspect_ratio).
  bool crop_to_aspect_ratio = false;
  /// Values as the file holds them, in [0, 255] (as Keras's image_dataset_from_directory gives
  /// them), for a model that scales them itself (layers::Rescaling) and so serves raw files;
  /// false: in [0, 1], as torchvision's ToTensor gives them.
  bool raw_pixels = false;
  /// The class folders to use, in label order; empty: every sub-folder, sorted.
  std::vector<std::string> class_names = {};
  bool follow_links = false;
  ImageLimits limits = {};
};

/// The images under `dir` (one sub-folder per class) as a dataset decoded on demand. Throws
/// IoError when the folder does not exist or holds no class folder or no image; a file that is
/// damaged or not really an image is an IoError naming it when its sample is read.
Dataset image_folder(const std::string& dir, const ImageFolderOptions& options = {});
/// Both sides of options.validation_split: (training, validation), as Keras's subset="both".
std::pair<Dataset, Dataset> image_folder_split(const std::string& dir, ImageFolderOptions options);
/// One image file as image_folder reads each sample: decoded, converted to options.channels, in
/// [0, 1], cropped and resized to options.image_size; a (C, H, W) float32 tensor (for predicting).
Tensor read_image_sample(const std::string& path, const ImageFolderOptions& options = {});
/// One image file as a model that takes images of any size reads it (Model::takes_any_image_size):
/// decoded, converted to `channels`, at its own size, values in [0, 255]; a (C, H, W) float32 tensor.
Tensor read_image_pixels(const std::string& path, int channels = 3, const ImageLimits& limits = {});
/// The class names image_folder gives labels 0, 1, ... to.
std::vector<std::string> image_folder_classes(const std::string& dir, const ImageFolderOptions& options = {});

}  // namespace accrue::datasets
