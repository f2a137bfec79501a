// NumPy's .npy files: each dtype Accrue has in either byte order, C and Fortran order, header
// versions 1 and 2, a scalar, and every malformed case with its message. The files are written
// here byte by byte as numpy.lib.format lays them out.

#include <sys/stat.h>

#include <accrue/datasets/npy.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

struct NpyFile {
  std::string descr = "<f4";
  bool fortran = false;
  std::string shape = "(2, 3)";
  int version = 1;
  std::string header_override;     // the dict literal as given, when set
  std::string data;                // the element bytes as stored
};

// Writes `f` as np.save would and returns its path.
std::string write_npy(const std::string& name, const NpyFile& f) {
  std::string dict = f.header_override.empty()
                         ? "{'descr': '" + f.descr + "', 'fortran_order': " + (f.fortran ? "True" : "False") +
                               ", 'shape': " + f.shape + ", }"
                         : f.header_override;
  const std::size_t lead = f.version == 1 ? 10 : 12;
  while ((lead + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string bytes = std::string("\x93NUMPY", 6) + static_cast<char>(f.version) + '\0';
  const std::uint32_t n = static_cast<std::uint32_t>(dict.size());
  for (std::size_t i = 0; i < lead - 8; ++i) bytes += static_cast<char>((n >> (8 * i)) & 0xFF);
  bytes += dict + f.data;
  const std::string path = (std::filesystem::temp_directory_path() / ("accrue_test_" + name + ".npy")).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

template <class T>
std::string raw(const std::vector<T>& values, bool big_endian = false) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  if (big_endian)
    for (std::size_t i = 0; i < values.size(); ++i) std::reverse(out.begin() + i * sizeof(T), out.begin() + (i + 1) * sizeof(T));
  return out;
}

const std::vector<float> six = {1.5f, -2.0f, 3.25f, 4.0f, -5.5f, 6.0f};

}  // namespace

BOOST_AUTO_TEST_CASE(float32_in_either_byte_order) {
  for (bool big : {false, true}) {
    const Tensor t = datasets::npy(write_npy("f4", {.descr = big ? ">f4" : "<f4", .data = raw(six, big)}));
    BOOST_TEST(t.dtype() == DType::f32);
    BOOST_TEST(t.shape() == Shape({2, 3}));
    BOOST_TEST(t.to_vector() == six, boost::test_tools::per_element());
    BOOST_TEST(t.category() == MemoryCategory::data);
  }
}

BOOST_AUTO_TEST_CASE(fortran_order_comes_back_in_c_order) {
  // The 2 x 3 array [[1.5, -2, 3.25], [4, -5.5, 6]] stored column by column.
  const std::vector<float> columns = {1.5f, 4.0f, -2.0f, -5.5f, 3.25f, 6.0f};
  const Tensor t = datasets::npy(write_npy("fortran", {.fortran = true, .data = raw(columns)}));
  BOOST_TEST(t.shape() == Shape({2, 3}));
  BOOST_TEST(t.to_vector() == six, boost::test_tools::per_element());
  // Three dimensions: element (i, j, k) of a 2 x 3 x 4 array at i + 2 j + 6 k.
  std::vector<std::int32_t> f(24), c(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        const int value = 100 * i + 10 * j + k;
        f[static_cast<std::size_t>(i + 2 * j + 6 * k)] = value;
        c[static_cast<std::size_t>(12 * i + 4 * j + k)] = value;
      }
  const Tensor t3 = datasets::npy(write_npy("fortran3", {.descr = "<i4", .fortran = true, .shape = "(2, 3, 4)", .data = raw(f)}));
  BOOST_TEST(t3.to_vector<std::int32_t>() == c, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(int32_float16_version_2_and_a_scalar) {
  const std::vector<std::int32_t> labels = {3, -1, 70000, 0};
  const Tensor i = datasets::npy(write_npy("i4", {.descr = ">i4", .shape = "(4,)", .version = 2, .data = raw(labels, true)}));
  BOOST_TEST(i.dtype() == DType::i32);
  BOOST_TEST(i.to_vector<std::int32_t>() == labels, boost::test_tools::per_element());
  // float16 1.0, -2.0, 0.5: 0x3C00, 0xC000, 0x3800.
  const std::vector<std::uint16_t> halves = {0x3C00, 0xC000, 0x3800};
  const Tensor h = datasets::npy(write_npy("f2", {.descr = "<f2", .shape = "(3,)", .data = raw(halves)}));
  BOOST_TEST(h.dtype() == DType::f16);
  BOOST_TEST(h.to_vector() == std::vector<float>({1.0f, -2.0f, 0.5f}), boost::test_tools::per_element());
  const Tensor s = datasets::npy(write_npy("scalar", {.shape = "()", .data = raw(std::vector<float>{7.0f})}));
  BOOST_TEST(s.shape() == Shape{});
  BOOST_TEST(s.item() == 7.0f);
  const Tensor empty = datasets::npy(write_npy("empty", {.shape = "(0, 5)"}));
  BOOST_TEST(empty.shape() == Shape({0, 5}));
}

BOOST_AUTO_TEST_CASE(float64_and_int64_are_read_as_float32_and_int32) {
  // NumPy's defaults, in both byte orders and Fortran order: the values as float32 and int32.
  const std::vector<double> d = {0.5, -1.25, 3e20, 7.0, 1e-50, -9.0};
  for (const bool big : {false, true}) {
    const Tensor f = datasets::npy(write_npy("f8", {.descr = big ? ">f8" : "<f8", .fortran = true, .shape = "(2, 3)", .data = raw(d, big)}));
    BOOST_TEST(f.dtype() == DType::f32);
    BOOST_TEST(f.shape() == Shape({2, 3}));
    // Fortran order: element (r, c) is d[c * 2 + r].
    BOOST_TEST(f.to_vector() == std::vector<float>({0.5f, 3e20f, 1e-50f, -1.25f, 7.0f, -9.0f}), boost::test_tools::per_element());
  }
  const std::vector<std::int64_t> q = {3, -2147483648LL, 2147483647LL, 0};
  const Tensor i = datasets::npy(write_npy("i8", {.descr = ">i8", .shape = "(4,)", .data = raw(q, true)}));
  BOOST_TEST(i.dtype() == DType::i32);
  BOOST_TEST(i.to_vector<std::int32_t>() == std::vector<std::int32_t>({3, -2147483647 - 1, 2147483647, 0}), boost::test_tools::per_element());
  // Values the narrower type cannot hold, named by their index.
  BOOST_CHECK_EXCEPTION(datasets::npy(write_npy("i8big", {.descr = "<i8", .shape = "(2,)", .data = raw(std::vector<std::int64_t>{1, 1LL << 31})})),
                        IoError, message_has({"element 1", "2147483648", "int32"}));
  BOOST_CHECK_EXCEPTION(datasets::npy(write_npy("f8big", {.descr = "<f8", .shape = "(2,)", .data = raw(std::vector<double>{1, -1e300})})),
                        IoError, message_has({"element 1", "-1e+300", "float32"}));
}

BOOST_AUTO_TEST_CASE(malformed_files_are_named_with_what_is_wrong) {
  const auto refused = [](const std::string& path, std::initializer_list<std::string> words) {
    BOOST_CHECK_EXCEPTION(datasets::npy(path), IoError, message_has(words));
  };
  refused("/nonexistent/a.npy", {"/nonexistent/a.npy"});
  refused(std::filesystem::temp_directory_path().string(), {"is a folder, not a file"});
  refused("/dev/null", {"/dev/null", "not a regular file"});
  const std::string fifo = (std::filesystem::temp_directory_path() / "accrue_test_fifo.npy").string();
  std::filesystem::remove(fifo);
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  refused(fifo, {fifo, "not a regular file"});  // refused at once, not waiting for a writer
  std::filesystem::remove(fifo);
  const std::string text = (std::filesystem::temp_directory_path() / "accrue_test_text.npy").string();
  std::ofstream(text) << "x,y\n1,2\n";
  refused(text, {text, "not a .npy file"});
  refused(write_npy("c8", {.descr = "<c8", .data = std::string(48, '\0')}), {"'<c8'", "astype(numpy.float32)"});
  refused(write_npy("u8", {.descr = "<u8", .data = std::string(48, '\0')}), {"'<u8'", "astype(numpy.int32)"});
  refused(write_npy("short", {.data = raw(six).substr(0, 20)}), {"needs 24 bytes", "has 20", "truncated"});
  refused(write_npy("long", {.data = raw(six) + "xx"}), {"needs 24 bytes", "has 26"});
  refused(write_npy("negative", {.shape = "(-2, 3)", .data = raw(six)}), {"byte", "not a non-negative whole number"});
  refused(write_npy("huge", {.shape = "(4294967296, 4294967296)"}), {"64-bit"});
  refused(write_npy("over", {.shape = "(1000000000, 1000)"}), {"over the limit"});
  refused(write_npy("notdict", {.header_override = "['descr', '<f4']"}), {"byte 10 of the .npy header", "'{'"});
  refused(write_npy("nokey", {.header_override = "{'descr': '<f4', 'shape': (6,), }", .data = raw(six)}),
          {"lacks descr, fortran_order or shape"});
  refused(write_npy("v9", {.version = 9, .data = raw(six)}), {"version 9"});
}
