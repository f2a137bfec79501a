#pragma once
// FashionMNIST and MNIST: 60,000 training and 10,000 test images of 28 x 28 pixels, as float32
// (N, 1, 28, 28) in [0, 1] (what torchvision's ToTensor gives) with int32 labels (N) in 0..9.

#include <string>

#include "dataset.hpp"

namespace accrue::datasets {

/// A train/test pair: `auto [train, test] = datasets::fashion_mnist();`.
struct TrainTest {
  Dataset train;
  Dataset test;
};

/// Reads FashionMNIST from `folder`; when empty, from $ACCRUE_FASHION_MNIST_DIR, else from
/// /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist). Files may be gzipped or
/// not. Throws IoError naming the missing file and the package that provides it, or what is
/// wrong with a file.
TrainTest fashion_mnist(const std::string& folder = "");

/// The folder fashion_mnist(folder) reads.
std::string fashion_mnist_folder(const std::string& folder = "");

/// Reads MNIST from `folder`; when empty, from $ACCRUE_MNIST_DIR, else /usr/share/datasets/mnist.
TrainTest mnist(const std::string& folder = "");

/// The ten FashionMNIST class names, for printing predictions.
const char* fashion_mnist_class_name(int label);

}  // namespace accrue::datasets
