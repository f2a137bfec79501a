// safetensors: round trips, the files PyTorch's tools write, and hostile headers.

#include "../test_util.hpp"

#include <filesystem>
#include <fstream>

using namespace accrue;
using namespace accrue::test;
namespace fs = std::filesystem;

namespace {
void write_raw(const std::string& path, const std::string& header, const std::vector<std::uint8_t>& data) {
  std::ofstream f(path, std::ios::binary);
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>(n >> (8 * i)));
  f << header;
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}
}  // namespace

BOOST_AUTO_TEST_CASE(round_trip_with_metadata) {
  TempDir dir{"safetensors"};
  const Tensor a = accrue::test::random_tensor({3, 4}, 1);
  const Tensor b = Tensor::from(std::vector<std::int32_t>{7, -1}, {2});
  serialization::save_safetensors(dir.file("t.safetensors"), {{"a", a}, {"labels", b}}, {{"note", "hello"}});
  const auto file = serialization::load_safetensors(dir.file("t.safetensors"));
  BOOST_REQUIRE(file.tensors.size() == 2u);
  BOOST_TEST(file.tensors[0].first == "a");
  check_close(file.tensors[0].second, a, 0, 0);
  BOOST_TEST(file.tensors[1].second.to_vector<std::int32_t>() == b.to_vector<std::int32_t>());
  BOOST_TEST(file.metadata.at("note") == "hello");
  // Data starts 8-byte aligned after the header, as the reference implementation writes it.
  std::ifstream f(dir.file("t.safetensors"), std::ios::binary);
  std::uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  BOOST_TEST(n % 8 == 0u);
}

BOOST_AUTO_TEST_CASE(hostile_files_are_refused) {
  TempDir dir{"safetensors"};
  const auto refuse = [&](const std::string& name, const std::string& header, const std::vector<std::uint8_t>& data,
                          std::initializer_list<std::string> parts) {
    write_raw(dir.file(name), header, data);
    BOOST_CHECK_EXCEPTION(serialization::load_safetensors(dir.file(name)), IoError, message_has(parts));
  };
  refuse("json.st", "{not json", {}, {"not valid JSON"});
  refuse("dtype.st", R"({"x":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", std::vector<std::uint8_t>(8), {"'x'", "F64"});
  refuse("range.st", R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", std::vector<std::uint8_t>(8),
         {"outside the 8 bytes"});
  refuse("size.st", R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::vector<std::uint8_t>(16),
         {"needs 12 bytes", "holds 8"});
  refuse("big.st", R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::vector<std::uint8_t>(8),
         {"more bytes than the file"});
  refuse("overflow.st", R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
         std::vector<std::uint8_t>(8), {"more bytes than the file"});
  refuse("overlap.st",
         R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
         std::vector<std::uint8_t>(12), {"overlap"});
  // Data the tensors do not cover: appended bytes, a gap between tensors.
  refuse("trailing.st", R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::vector<std::uint8_t>(11),
         {"3 bytes after the last tensor's data belong to no tensor"});
  refuse("gap.st",
         R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
         std::vector<std::uint8_t>(12), {"bytes [4, 8) before tensor 'y' belong to no tensor"});
  // Paths that are no file: each says what it is.
  BOOST_CHECK_EXCEPTION(serialization::load_safetensors(dir.path.string()), IoError, message_has({"is a folder, not a file"}));
  BOOST_CHECK_EXCEPTION(serialization::load_safetensors("/dev/null"), IoError, message_has({"/dev/null", "not a regular file"}));
  fs::create_symlink(dir.file("loop.st"), dir.file("loop.st"));
  BOOST_CHECK_EXCEPTION(serialization::load_safetensors(dir.file("loop.st")), IoError,
                        message_has({"loop.st cannot be read", "symbolic links"}));
  // A header length beyond the file.
  std::ofstream(dir.file("long.st"), std::ios::binary) << std::string("\xff\xff\xff\xff\xff\xff\x00\x00{}", 10);
  BOOST_CHECK_EXCEPTION(serialization::load_safetensors(dir.file("long.st")), IoError, message_has({"header claims"}));
  BOOST_CHECK_EXCEPTION(serialization::load_safetensors(dir.file("absent.st")), IoError, message_has({"absent.st does not exist"}));
}

BOOST_AUTO_TEST_CASE(load_weights_reports_every_mismatch_and_changes_nothing) {
  TempDir dir{"safetensors"};
  manual_seed(1);
  Sequential a{layers::Input{4}, layers::Dense{3}, layers::ReLU{}, layers::Dense{2}};
  a.save_weights(dir.file("a.safetensors"));
  manual_seed(2);
  Sequential same{layers::Input{4}, layers::Dense{3}, layers::ReLU{}, layers::Dense{2}};
  same.load_weights(dir.file("a.safetensors"));
  for (std::size_t i = 0; i < a.parameters().size(); ++i) check_close(same.parameters()[i], a.parameters()[i], 0, 0);

  Sequential other{layers::Input{4}, layers::Dense{5}, layers::ReLU{}, layers::Dense{2, {.bias = false}}, layers::Dense{1}};
  const auto before = other.parameters()[0].to_vector();
  BOOST_CHECK_EXCEPTION(other.load_weights(dir.file("a.safetensors")), ValueError,
                        message_has({"6 problems", "'0.weight' is float32 (3, 4) in the file but float32 (5, 4)",
                                     "missing '3.weight'", "unexpected '2.bias'", "nothing was loaded"}));
  BOOST_TEST(other.parameters()[0].to_vector() == before);
}
