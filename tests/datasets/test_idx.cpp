// The IDX reader on well-formed files (raw and gzip) and on every kind of bad file.

#include "../test_util.hpp"

#include <zlib.h>

#include <filesystem>
#include <fstream>

using namespace accrue;
using namespace accrue::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::uint8_t> idx_bytes(std::uint8_t type, const std::vector<std::uint32_t>& dims,
                                    const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> out = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims) {
    out.push_back(static_cast<std::uint8_t>(d >> 24));
    out.push_back(static_cast<std::uint8_t>(d >> 16));
    out.push_back(static_cast<std::uint8_t>(d >> 8));
    out.push_back(static_cast<std::uint8_t>(d));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void write_raw(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_gz(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::vector<std::uint8_t> images(std::uint32_t n) {
  std::vector<std::uint8_t> data(n * 4);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 37);
  return idx_bytes(0x08, {n, 2, 2}, data);
}

std::vector<std::uint8_t> labels(std::uint32_t n, std::uint8_t value = 3) {
  return idx_bytes(0x08, {n}, std::vector<std::uint8_t>(n, value));
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_raw_and_gzip) {
  TempDir dir{"idx"};
  write_raw(dir.file("a.idx"), images(3));
  write_gz(dir.file("a.idx.gz"), images(3));
  for (const auto& name : {"a.idx", "a.idx.gz"}) {
    const auto array = datasets::read_idx(dir.file(name));
    BOOST_TEST(array.shape.str() == "(3, 2, 2)");
    BOOST_TEST(array.bytes.size() == 12u);
    BOOST_TEST(array.bytes[1] == 37);
    const Tensor t = datasets::idx_to_float(array, 1.0f / 255.0f);
    BOOST_TEST(t.to_vector()[1] == 37.0f / 255.0f);
  }
  // Big-endian multi-byte elements come out in host order.
  write_raw(dir.file("i32.idx"), idx_bytes(0x0C, {2}, {0, 0, 1, 2, 0xFF, 0xFF, 0xFF, 0xFE}));
  BOOST_TEST(datasets::idx_to_int(datasets::read_idx(dir.file("i32.idx"))).to_vector<std::int32_t>() ==
                 (std::vector<std::int32_t>{258, -2}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(bad_files_are_refused_with_the_reason) {
  TempDir dir{"idx"};
  const auto check = [&](const std::string& name, const std::vector<std::uint8_t>& bytes,
                         std::initializer_list<std::string> parts) {
    write_raw(dir.file(name), bytes);
    BOOST_CHECK_EXCEPTION(datasets::read_idx(dir.file(name)), IoError, message_has(parts));
  };
  BOOST_CHECK_EXCEPTION(datasets::read_idx(dir.file("missing.idx")), IoError, message_has({"missing.idx does not exist"}));
  // A folder, or a loop of symbolic links, where the file belongs: said so, not "corrupt data".
  std::filesystem::create_directories(dir.file("folder.idx"));
  BOOST_CHECK_EXCEPTION(datasets::read_idx(dir.file("folder.idx")), IoError, message_has({"folder.idx is a folder, not a file"}));
  std::filesystem::create_symlink(dir.file("loop.idx"), dir.file("loop.idx"));
  BOOST_CHECK_EXCEPTION(datasets::read_idx(dir.file("loop.idx")), IoError,
                        message_has({"loop.idx cannot be read (Too many levels of symbolic links)"}));
  check("magic.idx", {0x1f, 0x00, 0x08, 0x01, 0, 0, 0, 1, 5}, {"magic.idx", "not an IDX file"});
  check("type.idx", {0, 0, 0x07, 1, 0, 0, 0, 1, 5}, {"type.idx", "unknown IDX element type"});
  check("rank.idx", {0, 0, 0x08, 9}, {"rank.idx", "9 dimensions"});
  check("zero_rank.idx", {0, 0, 0x08, 0}, {"0 dimensions"});
  check("short.idx", {0, 0}, {"short.idx", "too short"});
  check("header.idx", {0, 0, 0x08, 3, 0, 0, 0, 1}, {"header.idx", "truncated in the header"});
  check("overflow.idx", idx_bytes(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {}), {"overflow.idx", "bytes"});
  check("truncated.idx", idx_bytes(0x08, {10, 4}, std::vector<std::uint8_t>(39, 1)),
        {"truncated.idx", "truncated", "40 bytes", "has 39"});
  check("trailing.idx", idx_bytes(0x08, {2}, {1, 2, 3}), {"trailing.idx", "after the 2 bytes"});
  // A gzip stream cut short is corrupt, not silently short.
  std::vector<std::uint8_t> bytes = images(50);
  write_gz(dir.file("cut.idx.gz"), bytes);
  fs::resize_file(dir.file("cut.idx.gz"), fs::file_size(dir.file("cut.idx.gz")) / 2);
  BOOST_CHECK_THROW(datasets::read_idx(dir.file("cut.idx.gz")), IoError);
}

BOOST_AUTO_TEST_CASE(dataset_folder_errors) {
  TempDir dir{"idx"};
  BOOST_CHECK_EXCEPTION(datasets::fashion_mnist(dir.path.string()), IoError,
                        message_has({"train-images-idx3-ubyte", "dataset-fashion-mnist", "ACCRUE_FASHION_MNIST_DIR"}));
  write_gz(dir.file("train-images-idx3-ubyte.gz"), images(5));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), labels(4));
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), images(2));
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), labels(2));
  BOOST_CHECK_EXCEPTION(datasets::fashion_mnist(dir.path.string()), IoError,
                        message_has({"train-images-idx3-ubyte.gz holds 5 images", "4 labels"}));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), labels(5, 11));
  BOOST_CHECK_EXCEPTION(datasets::fashion_mnist(dir.path.string()), IoError, message_has({"label 11", "sample 0"}));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), labels(5));
  const auto [train, test] = datasets::fashion_mnist(dir.path.string());
  BOOST_TEST(train.size() == 5);
  BOOST_TEST(train.inputs().shape().str() == "(5, 1, 2, 2)");
  BOOST_TEST(test.size() == 2);
  // The environment variable is the fallback when no folder is given.
  setenv("ACCRUE_FASHION_MNIST_DIR", dir.path.c_str(), 1);
  BOOST_TEST(datasets::fashion_mnist().train.size() == 5);
  unsetenv("ACCRUE_FASHION_MNIST_DIR");
}
