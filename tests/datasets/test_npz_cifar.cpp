// .npz archives as NumPy writes them (tests/data/make_npz_files.py), damaged archives, and
// CIFAR-10/100's binary records generated here in their layout.

#include <sys/stat.h>

#include <accrue/datasets/cifar.hpp>
#include <accrue/datasets/npz.hpp>
#include <filesystem>
#include <fstream>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

std::string data_file(const std::string& name) { return std::string(ACCRUE_TEST_DATA_DIR) + "/npz/" + name; }

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A ZIP archive of one local header and `data`, whose central directory lists `entries` members
// that all point at it, each claiming `compressed` and `uncompressed` bytes (deflated): what a
// crafted .npz can say without holding any of it.
std::string claiming_zip(int entries, std::uint32_t compressed, std::uint32_t uncompressed, const std::string& data) {
  const auto le = [](std::string& out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
  };
  std::string zip;
  le(zip, 0x04034b50, 4);
  le(zip, 20, 2), le(zip, 0, 2), le(zip, 8, 2), le(zip, 0, 4), le(zip, 0, 4);
  le(zip, compressed, 4), le(zip, uncompressed, 4), le(zip, 5, 2), le(zip, 0, 2);
  zip += "a.npy" + data;
  const std::size_t central = zip.size();
  for (int k = 0; k < entries; ++k) {
    const std::string name = fmt::format("m{}.npy", k);
    le(zip, 0x02014b50, 4);
    le(zip, 20, 2), le(zip, 20, 2), le(zip, 0, 2), le(zip, 8, 2), le(zip, 0, 4), le(zip, 0, 4);
    le(zip, compressed, 4), le(zip, uncompressed, 4), le(zip, name.size(), 2), le(zip, 0, 2), le(zip, 0, 2);
    le(zip, 0, 2), le(zip, 0, 2), le(zip, 0, 4), le(zip, 0, 4);
    zip += name;
  }
  const std::size_t size = zip.size() - central;
  le(zip, 0x06054b50, 4);
  le(zip, 0, 2), le(zip, 0, 2), le(zip, static_cast<std::uint64_t>(entries), 2), le(zip, static_cast<std::uint64_t>(entries), 2);
  le(zip, size, 4), le(zip, central, 4), le(zip, 0, 2);
  return zip;
}

// n CIFAR records: label (k * 7) % classes, pixel p of record k = (k + p) % 256.
std::string cifar_records(int n, int label_bytes) {
  std::string out;
  for (int k = 0; k < n; ++k) {
    if (label_bytes == 2) out += static_cast<char>(k % 20);
    out += static_cast<char>((k * 7) % (label_bytes == 2 ? 100 : 10));
    for (int p = 0; p < 3072; ++p) out += static_cast<char>((k + p) % 256);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(numpys_stored_and_compressed_archives) {
  for (const std::string file : {"stored.npz", "compressed.npz"}) {
    BOOST_TEST_CONTEXT(file) {
      const auto arrays = datasets::npz(data_file(file));
      const Tensor& x = arrays.at("x");
      BOOST_TEST(x.shape() == Shape({3, 4}));
      for (int k = 0; k < 12; ++k) BOOST_TEST(x.to_vector()[static_cast<std::size_t>(k)] == k * 0.5f - 1.0f);
      BOOST_TEST(arrays.at("y").to_vector<std::int32_t>() == std::vector<std::int32_t>({2, 0, 1}));
    }
  }
  // Big-endian float32 in Fortran order, and float16.
  const auto stored = datasets::npz(data_file("stored.npz"));
  BOOST_TEST(stored.at("z").to_vector() == std::vector<float>({0, 1, 2, 3, 4, 5}));
  BOOST_TEST(ops::cast(datasets::npz(data_file("compressed.npz")).at("h"), DType::f32).to_vector() ==
             std::vector<float>({1.5f, -2.25f}));
  // The arrays make a dataset.
  const Dataset d{stored.at("x"), stored.at("y"), "stored"};
  BOOST_TEST(d.size() == 3);
}

BOOST_AUTO_TEST_CASE(damaged_archives_are_named_with_their_member_and_offset) {
  test::TempDir dir{"npz_bad"};
  const std::string stored = bytes_of(data_file("stored.npz")), compressed = bytes_of(data_file("compressed.npz"));
  const auto refused = [&](const std::string& bytes, std::vector<std::string> parts) {
    const std::string path = (dir.path / "bad.npz").string();
    std::ofstream(path, std::ios::binary) << bytes;
    BOOST_CHECK_EXCEPTION(datasets::npz(path), IoError, message_has(parts));
  };
  refused("not a zip at all, just some text long enough", {"bad.npz", "not a ZIP archive"});
  refused(stored.substr(0, stored.size() / 2), {"bad.npz", "not a ZIP archive"});
  // A flipped byte inside x.npy's data fails its CRC; inside a deflated stream it fails to inflate.
  std::string flipped = stored;
  flipped[stored.find("\x93NUMPY") + 130] ^= 0x55;
  refused(flipped, {"bad.npz", "'x.npy'", "CRC-32"});
  std::string garbled = compressed;
  for (int k = 60; k < 90; ++k) garbled[static_cast<std::size_t>(k)] ^= 0x5A;
  refused(garbled, {"bad.npz", "byte"});
  // An unknown compression method in the central directory.
  std::string method = stored;
  const std::size_t central = method.find("PK\x01\x02");
  method[central + 10] = 12;  // bzip2
  refused(method, {"'x.npy'", "compression method 12"});
  // What members claim is checked before any is inflated: 4 GiB from 184 bytes is more than deflate
  // gives, and 40 names for one member of 1 GiB are 40 GiB in all.
  const std::string claim = claiming_zip(1, 20, 0xFFFFFFF0u, std::string(20, '\0'));
  BOOST_TEST(claim.size() < 200u);
  refused(claim, {"bad.npz", "'m0.npy'", "more than deflate can give"});
  refused(claiming_zip(40, 1u << 20, 1u << 30, std::string(1u << 20, '\0')), {"bad.npz", "40 members", "in all", "over the limit"});
}

BOOST_AUTO_TEST_CASE(numpys_float64_and_int64_read_member_by_member) {
  // float64 as float32 and int64 as int32, as Keras casts NumPy's defaults; each member its own.
  const auto arrays = datasets::npz(data_file("defaults.npz"));
  BOOST_TEST(arrays.at("x").dtype() == DType::f32);
  BOOST_TEST(arrays.at("x").to_vector() == std::vector<float>({0, 0.25f, 0.5f, 0.75f, 1, 1.25f}), boost::test_tools::per_element());
  BOOST_TEST(arrays.at("y").dtype() == DType::i32);
  BOOST_TEST(arrays.at("y").to_vector<std::int32_t>() == std::vector<std::int32_t>({1, 0}), boost::test_tools::per_element());
  BOOST_TEST(arrays.at("w").to_vector() == std::vector<float>({0.5f, 2.0f}), boost::test_tools::per_element());
  BOOST_TEST(datasets::npz(data_file("float64.npz")).at("d").to_vector() == std::vector<float>({0.1f, -2.5e30f, 3.0f}),
             boost::test_tools::per_element());
  // A value the narrower type cannot hold is refused by its member and index, not wrapped or made inf.
  BOOST_CHECK_EXCEPTION(datasets::npz(data_file("int64_big.npz")), IoError,
                        message_has({"int64_big.npz:'y.npy'", "element 1", "1099511627776", "int32"}));
  BOOST_CHECK_EXCEPTION(datasets::npz(data_file("float64_big.npz")), IoError,
                        message_has({"float64_big.npz:'d.npy'", "element 1", "1e+39", "float32"}));
}

BOOST_AUTO_TEST_CASE(cifar_records_read_as_torchvision_gives_them) {
  test::TempDir dir{"cifar"};
  for (int b = 1; b <= 5; ++b) std::ofstream((dir.path / fmt::format("data_batch_{}.bin", b)).string(), std::ios::binary) << cifar_records(4, 1);
  std::ofstream((dir.path / "test_batch.bin").string(), std::ios::binary) << cifar_records(3, 1);
  std::ofstream((dir.path / "batches.meta.txt").string()) << "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n";
  const datasets::Cifar c = datasets::cifar10(dir.path.string());
  BOOST_TEST(c.train.size() == 20);
  BOOST_TEST(c.test.size() == 3);
  BOOST_TEST(c.classes.at(9) == "truck");
  BOOST_TEST(c.train.sample_shape() == Shape({3, 32, 32}));
  BOOST_TEST(c.test.targets().to_vector<std::int32_t>() == std::vector<std::int32_t>({0, 7, 4}));
  const auto x = c.test[2].input().to_vector();  // record 2: red plane first, row-major
  BOOST_TEST(x[0] == 2 / 255.0f);
  BOOST_TEST(x[1024 + 5] == ((2 + 1024 + 5) % 256) / 255.0f);
  // CIFAR-100: fine or coarse labels.
  std::ofstream((dir.path / "train.bin").string(), std::ios::binary) << cifar_records(6, 2);
  std::ofstream((dir.path / "test.bin").string(), std::ios::binary) << cifar_records(2, 2);
  BOOST_TEST(datasets::cifar100(dir.path.string()).train.targets().to_vector<std::int32_t>() ==
             std::vector<std::int32_t>({0, 7, 14, 21, 28, 35}));
  BOOST_TEST(datasets::cifar100(dir.path.string(), false).train.targets().to_vector<std::int32_t>() ==
             std::vector<std::int32_t>({0, 1, 2, 3, 4, 5}));
  // Malformed: a missing file says where to get them, a truncated one its size, a label its offset.
  // A folder, a FIFO or a device where a file belongs is refused, not read (a FIFO would block).
  std::filesystem::remove(dir.path / "data_batch_2.bin");
  std::filesystem::create_directory(dir.path / "data_batch_2.bin");
  BOOST_CHECK_EXCEPTION(datasets::cifar10(dir.path.string()), IoError, message_has({"data_batch_2.bin", "folder"}));
  std::filesystem::remove(dir.path / "data_batch_2.bin");
  BOOST_REQUIRE(::mkfifo((dir.path / "data_batch_2.bin").c_str(), 0600) == 0);
  BOOST_CHECK_EXCEPTION(datasets::cifar10(dir.path.string()), IoError, message_has({"data_batch_2.bin"}));
  std::filesystem::remove(dir.path / "data_batch_2.bin");
  std::ofstream((dir.path / "data_batch_2.bin").string(), std::ios::binary) << cifar_records(4, 1);
  std::filesystem::remove(dir.path / "data_batch_3.bin");
  BOOST_CHECK_EXCEPTION(datasets::cifar10(dir.path.string()), IoError, message_has({"data_batch_3.bin", "cs.toronto.edu"}));
  BOOST_CHECK_EXCEPTION(datasets::cifar10_records(cifar_records(2, 1).substr(0, 5000), "part"), IoError,
                        message_has({"part", "5000 bytes", "3073"}));
  std::string bad = cifar_records(3, 1);
  bad[3073 * 2] = 10;
  BOOST_CHECK_EXCEPTION(datasets::cifar10_records(bad, "labels"), IoError, message_has({"labels", "byte 6146", "label 10"}));
  // In the folder, errors name the batch file and count its own bytes (not across the files).
  std::ofstream((dir.path / "data_batch_3.bin").string(), std::ios::binary) << bad;
  BOOST_CHECK_EXCEPTION(datasets::cifar10(dir.path.string()), IoError,
                        message_has({"data_batch_3.bin: byte 6146: label 10 of record 2"}));
  std::ofstream((dir.path / "data_batch_3.bin").string(), std::ios::binary) << cifar_records(4, 1);
  // A file larger than any CIFAR file is refused before it is read (sparse: no disk taken).
  std::filesystem::resize_file(dir.path / "data_batch_4.bin", std::uintmax_t{300} << 20);
  BOOST_CHECK_EXCEPTION(datasets::cifar10(dir.path.string()), IoError,
                        message_has({"data_batch_4.bin", "314572800 bytes, more than any CIFAR-10 file holds"}));
}
