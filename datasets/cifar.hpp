#pragma once
// CIFAR-10 and CIFAR-100 in their binary versions (https://www.cs.toronto.edu/~kriz/cifar.html,
// "CIFAR-10 binary version (suitable for C programs)"): records of a label byte (CIFAR-100: a
// coarse and a fine one) and 3072 bytes of a 32 x 32 image, red, green and blue planes. The files
// stay bytes in memory (150 MiB for CIFAR-10's training set) and each sample becomes float32
// (3, 32, 32) in [0, 1] as it is read, as torchvision's CIFAR10 with ToTensor gives it.
//
//   auto cifar = datasets::cifar10("cifar-10-batches-bin");
//   auto train = cifar.train.map({transforms::RandomCrop{32, {.padding = {4}}}, transforms::RandomHorizontalFlip{}});

#include <string>
#include <vector>

#include "dataset.hpp"

namespace accrue::datasets {

struct Cifar {
  Dataset train, test;
  /// The class names, from the folder's batches.meta.txt (CIFAR-10) or fine_label_names.txt /
  /// coarse_label_names.txt (CIFAR-100); numbers when the file is absent.
  std::vector<std::string> classes;
};

/// `dir` holds data_batch_1.bin ... data_batch_5.bin and test_batch.bin. Throws IoError naming a
/// missing file (and where the files come from), or a file whose size is not whole records, or a
/// label out of range with its byte offset.
Cifar cifar10(const std::string& dir);
/// `dir` holds train.bin and test.bin; labels are the 100 fine classes, or the 20 coarse ones.
Cifar cifar100(const std::string& dir, bool fine_labels = true);
/// Records of CIFAR-10's binary layout in memory (a fuzz target's entry): `name` names them in
/// errors. cifar100_records reads the two-label layout.
Dataset cifar10_records(std::string bytes, const std::string& name);
Dataset cifar100_records(std::string bytes, const std::string& name, bool fine_labels = true);

}  // namespace accrue::datasets
