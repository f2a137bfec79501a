#include "mnist.hpp"

#include <cstdlib>
#include <filesystem>

#include "idx.hpp"
#include "../framework/core/error.hpp"

namespace accrue::datasets {
namespace {

struct Source {
  const char* dataset;       // "FashionMNIST"
  const char* env;           // variable naming the folder
  const char* default_dir;   // where Debian's package puts it
  const char* how_to_get;    // what to do when missing
};

const Source fashion_source{"FashionMNIST", "ACCRUE_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist",
                            "install Debian's package dataset-fashion-mnist (apt-get install dataset-fashion-mnist)"};
const Source mnist_source{"MNIST", "ACCRUE_MNIST_DIR", "/usr/share/datasets/mnist",
                          "no Debian package provides MNIST: copy its four IDX files there"};

std::string resolve_folder(const Source& src, const std::string& folder) {
  if (!folder.empty()) return folder;
  if (const char* env = std::getenv(src.env); env != nullptr && *env != '\0') return env;
  return src.default_dir;
}

// The file `stem` in `folder`, gzipped or not. Something there that cannot be read (a folder, a
// loop of links, a folder that cannot be searched) is returned for read_idx to say why.
std::string find_file(const Source& src, const std::string& folder, const std::string& stem) {
  for (const std::string& candidate : {folder + "/" + stem + ".gz", folder + "/" + stem}) {
    std::error_code ec;
    if (std::filesystem::status(candidate, ec).type() != std::filesystem::file_type::not_found) return candidate;
  }
  throw IoError(fmt::format("{} file {}/{}(.gz) not found; {}, set {} to the folder holding it, or pass the folder", src.dataset,
                            folder, stem, src.how_to_get, src.env));
}

Dataset load_split(const Source& src, const std::string& folder, const char* prefix, const char* split_name) {
  const std::string images_path = find_file(src, folder, std::string(prefix) + "-images-idx3-ubyte");
  const std::string labels_path = find_file(src, folder, std::string(prefix) + "-labels-idx1-ubyte");
  const IdxArray images = read_idx(images_path);
  const IdxArray labels = read_idx(labels_path);
  if (images.type != IdxType::u8 || images.shape.rank() != 3)
    throw IoError(fmt::format("{}: expected unsigned-byte images (N, rows, cols), got shape {}", images_path, images.shape));
  if (labels.type != IdxType::u8 || labels.shape.rank() != 1)
    throw IoError(fmt::format("{}: expected unsigned-byte labels (N), got shape {}", labels_path, labels.shape));
  if (images.shape[0] != labels.shape[0])
    throw IoError(fmt::format("{} holds {} images but {} holds {} labels", images_path, images.shape[0], labels_path,
                              labels.shape[0]));
  for (std::size_t i = 0; i < labels.bytes.size(); ++i)
    if (labels.bytes[i] > 9)
      throw IoError(fmt::format("{}: label {} of sample {} is not a class 0..9", labels_path, labels.bytes[i], i));
  Tensor x = idx_to_float(images, 1.0f / 255.0f);
  x = x.view_as_shape({images.shape[0], 1, images.shape[1], images.shape[2]});
  return Dataset{x, idx_to_int(labels), fmt::format("{} {}", src.dataset, split_name)};
}

TrainTest load(const Source& src, const std::string& folder_arg) {
  const std::string folder = resolve_folder(src, folder_arg);
  return {load_split(src, folder, "train", "train"), load_split(src, folder, "t10k", "test")};
}

}  // namespace

TrainTest fashion_mnist(const std::string& folder) { return load(fashion_source, folder); }
TrainTest mnist(const std::string& folder) { return load(mnist_source, folder); }
std::string fashion_mnist_folder(const std::string& folder) { return resolve_folder(fashion_source, folder); }

const char* fashion_mnist_class_name(int label) {
  static constexpr const char* names[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return label >= 0 && label < 10 ? names[label] : "?";
}

}  // namespace accrue::datasets
