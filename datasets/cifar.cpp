#include "cifar.hpp"

#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "../framework/core/error.hpp"
#include "../framework/core/files.hpp"
#include "../framework/core/memory.hpp"

namespace accrue::datasets {
namespace {

constexpr std::size_t image_bytes = 3 * 32 * 32;

// The records of one or more files, kept as bytes; sample i's pixels become floats when read.
class CifarSource final : public SampleSource {
 public:
  CifarSource(std::string bytes, std::size_t label_bytes, std::size_t label_at, std::string name)
      : bytes_(std::move(bytes)), label_bytes_(label_bytes), label_at_(label_at), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::int64_t size() const override { return static_cast<std::int64_t>(bytes_.size() / record()); }
  SampleLayout layout() const override { return {{{3, 32, 32}, DType::f32}, {Shape{}, DType::i32}}; }
  void read(std::int64_t i, const ReadContext&, const SampleBuffers& out) const override {
    const auto* r = reinterpret_cast<const unsigned char*>(bytes_.data()) + static_cast<std::size_t>(i) * record();
    auto* pixels = static_cast<float*>(out.inputs[0]);
    for (std::size_t k = 0; k < image_bytes; ++k) pixels[k] = static_cast<float>(r[label_bytes_ + k]) / 255.0f;
    read_targets(i, out.targets);
  }
  void read_targets(std::int64_t i, std::span<void* const> targets) const override {
    const std::int32_t label = static_cast<unsigned char>(bytes_[static_cast<std::size_t>(i) * record() + label_at_]);
    std::memcpy(targets[0], &label, sizeof label);
  }
  std::string fingerprint() const override {
    const uLong crc = crc32_z(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(bytes_.data()), bytes_.size());
    return fmt::format("{} labels {}", crc32_fingerprint(static_cast<std::uint32_t>(crc)), label_at_);
  }

 private:
  std::size_t record() const { return label_bytes_ + image_bytes; }
  std::string bytes_;
  std::size_t label_bytes_, label_at_;
  std::string name_;
};

// The layout of a file's records: label bytes before each image, which one is the label, and
// how many classes each label byte counts.
struct Layout {
  std::size_t label_bytes, label_at;
  int classes;
  std::size_t record() const { return label_bytes + image_bytes; }
};

constexpr Layout cifar10_layout{1, 0, 10};
Layout cifar100_layout(bool fine_labels) { return {2, fine_labels ? std::size_t{1} : std::size_t{0}, 100}; }

// Throws IoError naming `name` (one file) unless `size` bytes are whole records.
void check_size(std::uint64_t size, const std::string& name, const Layout& layout) {
  if (size == 0 || size % layout.record() != 0)
    throw IoError(fmt::format("{}: {} bytes are not whole records of {} bytes ({} label byte{} and a 32x32x3 image): "
                              "truncated, or not CIFAR's binary version",
                              name, size, layout.record(), layout.label_bytes, layout.label_bytes == 1 ? "" : "s"));
}

// Throws IoError naming `name` (one file) and the byte of the first fault in `bytes`.
void check_records(std::string_view bytes, const std::string& name, const Layout& layout) {
  const std::size_t record = layout.record();
  check_size(bytes.size(), name, layout);
  for (std::size_t at = 0; at < bytes.size(); at += record)
    for (std::size_t l = 0; l < layout.label_bytes; ++l) {
      const int label = static_cast<unsigned char>(bytes[at + l]);
      const int limit = layout.label_bytes == 1 ? layout.classes : (l == 0 ? 20 : 100);
      if (label >= limit)
        throw IoError(fmt::format("{}: byte {}: label {} of record {} is not below {} (not CIFAR's binary version?)",
                                  name, at + l, label, at / record, limit));
    }
}

Dataset records(std::string bytes, const std::string& name, const Layout& layout) {
  check_records(bytes, name, layout);
  return Dataset{std::make_shared<const CifarSource>(std::move(bytes), layout.label_bytes, layout.label_at, name)};
}

// The largest CIFAR file is CIFAR-100's train.bin: 50,000 records of 3,074 bytes (154 MB).
constexpr std::uint64_t largest_cifar_file = std::uint64_t{256} << 20;

std::string path_of(const std::string& dir, const std::string& file) { return (std::filesystem::path(dir) / file).string(); }

// Each file checked before any is read: there, a regular file of whole records and at most a
// CIFAR file's size, and all of them within the memory this process may take.
void check_files(const std::string& dir, const std::vector<std::string>& files, const Layout& layout, const char* which) {
  std::uint64_t total = 0;
  for (const std::string& file : files) {
    const std::string path = path_of(dir, file);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      throw IoError(fmt::format("{}: not found. Download the {} binary version from https://www.cs.toronto.edu/~kriz/cifar.html "
                                "and unpack it; pass the folder that holds {}",
                                path, which, file));
    require_readable_file(path, "CIFAR file");  // not a folder, a FIFO or a device
    const std::uint64_t size = std::filesystem::file_size(path);
    if (size > largest_cifar_file)
      throw IoError(fmt::format("{}: {} bytes, more than any {} file holds", path, size, which));
    check_size(size, path, layout);
    total += size;
  }
  require_memory_for_file(total, fmt::format("{} ({} files)", dir, files.size()));
}

// The records of `files`, each checked and named by its file (data_batch_3.bin, byte 3073), as
// one dataset called `name`.
Dataset dataset_of(const std::string& dir, const std::vector<std::string>& files, const Layout& layout, const std::string& name) {
  std::string all;
  for (const std::string& file : files) {
    const std::string path = path_of(dir, file);
    const std::uint64_t size = std::filesystem::file_size(path);
    std::ifstream in(path, std::ios::binary);
    const std::size_t from = all.size();
    all.resize(from + size);
    in.read(all.data() + from, static_cast<std::streamsize>(size));
    if (static_cast<std::uint64_t>(in.gcount()) != size) throw IoError(fmt::format("{}: could not read it whole", path));
    check_records(std::string_view(all).substr(from), path, layout);
  }
  return Dataset{std::make_shared<const CifarSource>(std::move(all), layout.label_bytes, layout.label_at, name)};
}

// The class names in `file`, a line each, or numbers when it is absent or does not hold `count`
// lines. Only a regular file of a few kilobytes is read (100 class names are about 1 KB): a FIFO
// or a device under that name would never end.
std::vector<std::string> names(const std::string& dir, const std::string& file, int count) {
  std::vector<std::string> out;
  const std::string path = path_of(dir, file);
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) <= (64u << 10) && !ec) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line != "\r") out.push_back(line.back() == '\r' ? line.substr(0, line.size() - 1) : line);
  }
  if (static_cast<int>(out.size()) == count) return out;
  out.clear();
  for (int k = 0; k < count; ++k) out.push_back(std::to_string(k));
  return out;
}

// Both sets with the class names (Dataset::class_names).
Cifar named(Cifar cifar) {
  cifar.train = cifar.train.with_class_names(cifar.classes);
  cifar.test = cifar.test.with_class_names(cifar.classes);
  return cifar;
}

}  // namespace

Dataset cifar10_records(std::string bytes, const std::string& name) { return records(std::move(bytes), name, cifar10_layout); }

Dataset cifar100_records(std::string bytes, const std::string& name, bool fine_labels) {
  return records(std::move(bytes), name, cifar100_layout(fine_labels));
}

Cifar cifar10(const std::string& dir) {
  const std::vector<std::string> train = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                                          "data_batch_5.bin"};
  check_files(dir, {train[0], train[1], train[2], train[3], train[4], "test_batch.bin"}, cifar10_layout, "CIFAR-10");
  return named({dataset_of(dir, train, cifar10_layout, dir + " (CIFAR-10 training)"),
                dataset_of(dir, {"test_batch.bin"}, cifar10_layout, dir + " (CIFAR-10 test)"), names(dir, "batches.meta.txt", 10)});
}

Cifar cifar100(const std::string& dir, bool fine_labels) {
  const Layout layout = cifar100_layout(fine_labels);
  check_files(dir, {"train.bin", "test.bin"}, layout, "CIFAR-100");
  return named({dataset_of(dir, {"train.bin"}, layout, dir + " (CIFAR-100 training)"),
                dataset_of(dir, {"test.bin"}, layout, dir + " (CIFAR-100 test)"),
                fine_labels ? names(dir, "fine_label_names.txt", 100) : names(dir, "coarse_label_names.txt", 20)});
}

}  // namespace accrue::datasets
