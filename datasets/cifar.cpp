#include "accrue/datasets/cifar.hpp"

#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "accrue/framework/error.hpp"
#include "accrue/framework/files.hpp"

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
  void read(std::int64_t i, const ReadContext&, void* input, void* target) const override {
    const auto* r = reinterpret_cast<const unsigned char*>(bytes_.data()) + static_cast<std::size_t>(i) * record();
    auto* out = static_cast<float*>(input);
    for (std::size_t k = 0; k < image_bytes; ++k) out[k] = static_cast<float>(r[label_bytes_ + k]) / 255.0f;
    read_target(i, target);
  }
  void read_target(std::int64_t i, void* target) const override {
    const std::int32_t label = static_cast<unsigned char>(bytes_[static_cast<std::size_t>(i) * record() + label_at_]);
    std::memcpy(target, &label, sizeof label);
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

Dataset records(std::string bytes, const std::string& name, std::size_t label_bytes, std::size_t label_at, int classes) {
  const std::size_t record = label_bytes + image_bytes;
  if (bytes.empty() || bytes.size() % record != 0)
    throw IoError(fmt::format("{}: {} bytes are not whole records of {} bytes ({} label byte{} and a 32x32x3 image): "
                              "truncated, or not CIFAR's binary version",
                              name, bytes.size(), record, label_bytes, label_bytes == 1 ? "" : "s"));
  for (std::size_t at = 0; at < bytes.size(); at += record)
    for (std::size_t l = 0; l < label_bytes; ++l) {
      const int label = static_cast<unsigned char>(bytes[at + l]);
      const int limit = label_bytes == 1 ? classes : (l == 0 ? 20 : 100);
      if (label >= limit)
        throw IoError(fmt::format("{}: byte {}: label {} of record {} is not below {} (not CIFAR's binary version?)",
                                  name, at + l, label, at / record, limit));
    }
  return Dataset{std::make_shared<const CifarSource>(std::move(bytes), label_bytes, label_at, name)};
}

std::string read_all(const std::string& dir, const std::string& file, const char* which) {
  const std::string path = (std::filesystem::path(dir) / file).string();
  if (std::filesystem::exists(path)) require_readable_file(path, "CIFAR file");  // not a folder, a FIFO or a device
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw IoError(fmt::format("{}: not found. Download the {} binary version from https://www.cs.toronto.edu/~kriz/cifar.html "
                              "and unpack it; pass the folder that holds {}",
                              path, which, file));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> names(const std::string& dir, const std::string& file, int count) {
  std::vector<std::string> out;
  std::ifstream in((std::filesystem::path(dir) / file).string());
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line != "\r") out.push_back(line.back() == '\r' ? line.substr(0, line.size() - 1) : line);
  if (static_cast<int>(out.size()) == count) return out;
  out.clear();
  for (int k = 0; k < count; ++k) out.push_back(std::to_string(k));
  return out;
}

}  // namespace

Dataset cifar10_records(std::string bytes, const std::string& name) { return records(std::move(bytes), name, 1, 0, 10); }

Dataset cifar100_records(std::string bytes, const std::string& name, bool fine_labels) {
  return records(std::move(bytes), name, 2, fine_labels ? 1 : 0, 100);
}

Cifar cifar10(const std::string& dir) {
  std::string train;
  for (int b = 1; b <= 5; ++b) train += read_all(dir, fmt::format("data_batch_{}.bin", b), "CIFAR-10");
  return {cifar10_records(std::move(train), dir + " (CIFAR-10 training)"),
          cifar10_records(read_all(dir, "test_batch.bin", "CIFAR-10"), dir + " (CIFAR-10 test)"),
          names(dir, "batches.meta.txt", 10)};
}

Cifar cifar100(const std::string& dir, bool fine_labels) {
  return {cifar100_records(read_all(dir, "train.bin", "CIFAR-100"), dir + " (CIFAR-100 training)", fine_labels),
          cifar100_records(read_all(dir, "test.bin", "CIFAR-100"), dir + " (CIFAR-100 test)", fine_labels),
          fine_labels ? names(dir, "fine_label_names.txt", 100) : names(dir, "coarse_label_names.txt", 20)};
}

}  // namespace accrue::datasets
