#pragma once
// Helpers shared by the test suites: tensor comparisons with dtype-derived tolerances and checks
// that an error names what it should.

#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <accrue/accrue.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace accrue::test {

/// |ref - got| <= atol + rtol * |ref| for every element, reporting the first few offenders.
inline void check_close(const std::vector<float>& got, const std::vector<float>& ref, double atol, double rtol,
                        const std::string& what = "") {
  BOOST_REQUIRE_MESSAGE(got.size() == ref.size(), what << ": " << got.size() << " values, expected " << ref.size());
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - ref[i]);
    const bool ok = err <= atol + rtol * std::abs(static_cast<double>(ref[i]));
    if (!ok && reported++ < 5)
      BOOST_ERROR(what << " element " << i << ": got " << got[i] << ", expected " << ref[i] << " (error " << err << ")");
  }
}

inline void check_close(const Tensor& got, const Tensor& ref, double atol = 1e-5, double rtol = 1e-5,
                        const std::string& what = "") {
  BOOST_REQUIRE_MESSAGE(got.shape() == ref.shape(), what << ": shape " << got.shape().str() << ", expected "
                                                         << ref.shape().str());
  check_close(got.to_vector<float>(), ref.to_vector<float>(), atol, rtol, what);
}

inline void check_close(const Tensor& got, const std::vector<float>& ref, double atol = 1e-5, double rtol = 1e-5,
                        const std::string& what = "") {
  check_close(got.to_vector<float>(), ref, atol, rtol, what);
}

/// A predicate for BOOST_CHECK_EXCEPTION: the message holds every one of `parts`.
inline auto message_has(std::vector<std::string> wanted) {
  return [wanted](const std::exception& e) {
    const std::string message = e.what();
    for (const auto& w : wanted) {
      if (message.find(w) == std::string::npos) {
        BOOST_TEST_MESSAGE("message lacks '" << w << "': " << message);
        return false;
      }
    }
    return true;
  };
}

/// Random float32 values in [low, high) from a fixed seed.
inline Tensor random_tensor(const Shape& shape, std::uint64_t seed, float low = -1.0f, float high = 1.0f) {
  Generator gen{seed};
  return Tensor::uniform(shape, low, high, &gen);
}

/// Random values whose magnitude is at least `gap`: inputs for functions with a kink at 0.
inline Tensor away_from_zero(const Shape& shape, std::uint64_t seed, float gap = 0.1f) {
  Generator gen{seed};
  std::vector<float> v = Tensor::uniform(shape, -1.0f, 1.0f, &gen).to_vector<float>();
  for (float& x : v) x = x < 0 ? x - gap : x + gap;
  return Tensor::from(v, shape);
}

/// Precondition of tests that read the real FashionMNIST files: skipped, with the reason, without them.
inline boost::test_tools::assertion_result requires_fashion_mnist(boost::unit_test::test_unit_id) {
  const char* env = std::getenv("ACCRUE_FASHION_MNIST_DIR");
  const std::string dir = env != nullptr ? env : "/usr/share/datasets/fashion-mnist";
  const bool present = std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz") ||
                       std::filesystem::exists(dir + "/train-images-idx3-ubyte");
  boost::test_tools::assertion_result result{present};
  result.message() << "FashionMNIST files absent from " << dir << ": install dataset-fashion-mnist";
  return result;
}

/// Precondition: Debian's fortunes package (datasets::fortunes_folder()) is there.
inline boost::test_tools::assertion_result requires_fortunes(boost::unit_test::test_unit_id) {
  const std::string dir = datasets::fortunes_folder();
  boost::test_tools::assertion_result result{std::filesystem::exists(dir + "/computers")};
  result.message() << "the fortunes files are absent from " << dir << ": install Debian's fortunes";
  return result;
}

/// FashionMNIST's four IDX files (not gzipped) in `dir`, of `train` and `test` random 28x28 images
/// and labels: what datasets::fashion_mnist(dir) reads, for programs that take a --data folder.
inline void write_fashion_mnist_files(const std::string& dir, std::int64_t train, std::int64_t test, std::uint64_t seed = 3) {
  std::filesystem::create_directories(dir);
  Generator gen{seed};
  const auto write = [&](const std::string& name, std::int64_t n, bool images) {
    std::vector<std::uint8_t> bytes{0, 0, 0x08, static_cast<std::uint8_t>(images ? 3 : 1)};
    std::vector<std::uint32_t> dims{static_cast<std::uint32_t>(n)};
    if (images) dims.insert(dims.end(), {28, 28});
    for (const std::uint32_t d : dims)
      for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<std::uint8_t>(d >> shift));
    for (std::int64_t i = 0; i < n * (images ? 28 * 28 : 1); ++i)
      bytes.push_back(static_cast<std::uint8_t>(gen.below(images ? 256 : 10)));
    std::ofstream{dir + "/" + name, std::ios::binary}.write(reinterpret_cast<const char*>(bytes.data()),
                                                           static_cast<std::streamsize>(bytes.size()));
  };
  write("train-images-idx3-ubyte", train, true);
  write("train-labels-idx1-ubyte", train, false);
  write("t10k-images-idx3-ubyte", test, true);
  write("t10k-labels-idx1-ubyte", test, false);
}

/// n random 28x28 images in [0, 1) with labels in [0, 10): FashionMNIST's shapes without the files.
inline Dataset random_images(std::int64_t n, std::uint64_t seed = 3) {
  Generator gen{seed};
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (auto& l : labels) l = static_cast<std::int32_t>(gen.below(10));
  return Dataset{Tensor::uniform({n, 1, 28, 28}, 0, 1, &gen), Tensor::from(labels, {n}), "images"};
}

/// The FashionMNIST tutorial network: Flatten, Dense 512, ReLU, Dense 512, ReLU, Dense 10.
inline Sequential tutorial_mlp() {
  return Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
                    layers::Dense{512},       layers::ReLU{},    layers::Dense{10}};
}

/// Four Gaussian blobs in 6 dimensions, one per class: a problem a small MLP learns in a few epochs.
inline Dataset blobs(std::int64_t n, std::uint64_t seed) {
  Generator gen{seed};
  std::vector<float> x(static_cast<std::size_t>(n * 6));
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  const auto noise = Tensor::normal({n, 6}, 0.0f, 0.6f, &gen).to_vector();
  for (std::int64_t i = 0; i < n; ++i) {
    const int label = static_cast<int>(gen.below(4));
    y[static_cast<std::size_t>(i)] = label;
    for (int j = 0; j < 6; ++j)
      x[static_cast<std::size_t>(i * 6 + j)] = noise[static_cast<std::size_t>(i * 6 + j)] + (j % 4 == label ? 2.0f : 0.0f);
  }
  return Dataset{Tensor::from(x, {n, 6}), Tensor::from(y, {n}), "blobs"};
}

/// A small network for blobs(): 6 features, 16 tanh units, 4 classes, its weights drawn from `seed`.
inline Sequential blobs_mlp(std::uint64_t seed) {
  manual_seed(seed);
  return Sequential{layers::Input{6}, layers::Dense{16}, layers::Tanh{}, layers::Dense{4}};
}

/// Small colour images (3, 8, 8) of four classes (a bright quadrant per class, noise besides),
/// through the augmentations of an image course: a padded random crop, flips and colour jitter.
/// Read sample by sample, as a folder of images would be.
inline Dataset augmented_images(std::int64_t n, std::uint64_t seed) {
  Generator gen{seed};
  std::vector<float> x = Tensor::uniform({n, 3, 8, 8}, 0.0f, 0.5f, &gen).to_vector();
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const int label = static_cast<int>(gen.below(4));
    y[static_cast<std::size_t>(i)] = label;
    for (int c = 0; c < 3; ++c)
      for (int r = 0; r < 4; ++r)
        for (int q = 0; q < 4; ++q)
          x[static_cast<std::size_t>(((i * 3 + c) * 8 + r + 4 * (label / 2)) * 8 + q + 4 * (label % 2))] += 0.5f;
  }
  const Dataset images{Tensor::from(x, {n, 3, 8, 8}), Tensor::from(y, {n}), "quadrants"};
  return images.map({transforms::RandomCrop{8, {.padding = {1}, .padding_mode = transforms::PaddingMode::reflect}},
                     transforms::RandomHorizontalFlip{}, transforms::ColorJitter{{.brightness = 0.3, .saturation = 0.3}}});
}

inline Tensor leaf(Tensor t) {
  t.set_requires_grad(true);
  return t;
}

/// What was written to an open file (a tmpfile a progress bar wrote to), from its start.
inline std::string read_file(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) s.append(buf, n);
  return s;
}

/// The bytes of a file ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// A fresh folder under the system's temporary directory, removed with everything in it at scope
/// exit; `name` and the process id keep parallel tests apart.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("accrue_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// While one lives, Accrue's log lines are kept (text()) instead of printed.
class CapturedLog {
 public:
  CapturedLog() {
    log::set_sink([this](log::Level, std::string_view line) {
      const std::lock_guard lock{mutex_};
      text_ += std::string(line) + "\n";
    });
  }
  ~CapturedLog() { log::set_sink({}); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  std::string text() const {
    const std::lock_guard lock{mutex_};
    return text_;
  }

 private:
  mutable std::mutex mutex_;
  std::string text_;
};

}  // namespace accrue::test
