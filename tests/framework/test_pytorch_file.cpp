// Files torch.save wrote, read by serialization::load_pytorch: the tensors of a state_dict with
// their dtypes, strides and offsets, the dict of a Lightning checkpoint, and the hostile files it
// must refuse without running anything (pickles that call os.system or eval), cut short, reaching
// past their storages, claiming gigabytes, or nested a million levels deep.

#include "../test_util.hpp"
#include "pytorch_file_maker.hpp"

#include <accrue/framework/serialization/pytorch_file.hpp>
#include <filesystem>
#include <fstream>

using namespace accrue;
using namespace accrue::test;

namespace {

std::string write_file(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// A state_dict file "m.pth" holding `pickle` and storages `storages` (key, bytes).
std::string pth(const TempDir& dir, const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& storages) {
  std::vector<std::pair<std::string, std::string>> entries{{"m/data.pkl", pickle}};
  for (const auto& [key, bytes] : storages) entries.emplace_back("m/data/" + key, bytes);
  entries.emplace_back("m/version", "3\n");
  return write_file(dir, "m.pth", zip_of(entries));
}

const std::vector<float> six = {0, 1, 2, 3, 4, 5};

// One tensor 'w' viewing storage "0" (six float32 values) with the given sizes, strides and offset.
std::string one_view(const TempDir& dir, const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& strides,
                     std::int64_t offset, std::int64_t count = 6) {
  PickleWriter p;
  p.ordered_dict().op('(').text("w").tensor("FloatStorage", "0", count, offset, sizes, strides).op('u');
  return pth(dir, p.done(), {{"0", storage_bytes(six)}});
}

}  // namespace

BOOST_AUTO_TEST_CASE(tensors_keep_their_dtype_strides_and_offset) {
  TempDir dir{"pth_read"};
  PickleWriter p;
  p.ordered_dict().op('(');
  p.text("transposed").tensor("FloatStorage", "0", 6, 0, {3, 2}, {1, 3});
  p.text("every_other").tensor("FloatStorage", "0", 6, 1, {2}, {2});
  p.text("half").tensor("HalfStorage", "1", 2, 0, {2}, {1});
  p.text("brain").tensor("BFloat16Storage", "2", 2, 0, {1, 2}, {2, 1});
  p.text("num_batches_tracked").tensor("LongStorage", "3", 1, 0, {}, {});
  p.op('u');
  const std::vector<std::uint16_t> half = {0x3c00, 0xc000}, brain = {0x3f80, 0x4040};  // 1, -2; 1, 3
  const std::string path = pth(dir, p.done(), {{"0", storage_bytes(six)}, {"1", storage_bytes(half)},
                                              {"2", storage_bytes(brain)}, {"3", storage_bytes(std::vector<std::int64_t>{7})}});
  const auto tensors = serialization::load_pytorch(path);
  BOOST_REQUIRE(tensors.size() == 5u);
  BOOST_TEST(tensors[0].first == "transposed");
  BOOST_TEST(tensors[0].second.shape() == Shape({3, 2}));
  BOOST_TEST(tensors[0].second.to_vector<float>() == std::vector<float>({0, 3, 1, 4, 2, 5}), boost::test_tools::per_element());
  BOOST_TEST(tensors[1].second.to_vector<float>() == std::vector<float>({1, 3}), boost::test_tools::per_element());
  BOOST_TEST(tensors[2].second.dtype() == DType::f16);
  BOOST_TEST(ops::cast(tensors[2].second, DType::f32).to_vector<float>() == std::vector<float>({1, -2}), boost::test_tools::per_element());
  BOOST_TEST(tensors[3].second.dtype() == DType::bf16);
  BOOST_TEST(ops::cast(tensors[3].second, DType::f32).to_vector<float>() == std::vector<float>({1, 3}), boost::test_tools::per_element());
  BOOST_TEST(tensors[4].second.dtype() == DType::i32);
  BOOST_TEST(tensors[4].second.shape().rank() == 0);
  BOOST_TEST(tensors[4].second.to_vector<std::int32_t>() == std::vector<std::int32_t>({7}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_lightning_checkpoint_is_read_by_the_key_of_its_state_dict) {
  TempDir dir{"pth_lightning"};
  PickleWriter p;
  p.op('}').op('(').text("epoch").integer(3).text("pytorch-lightning_version").text("2.1.0");
  p.text("state_dict").ordered_dict().op('(').text("model.w").tensor("FloatStorage", "0", 6, 0, {6}, {1}).op('u');
  p.text("optimizer_states").op(']').op('u');
  const std::string path = pth(dir, p.done(), {{"0", storage_bytes(six)}});
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(path), IoError,
                        message_has({"m.pth", "'epoch' is an integer, not a tensor", ".entry = \"state_dict\""}));
  const auto tensors = serialization::load_pytorch(path, "state_dict");
  BOOST_REQUIRE(tensors.size() == 1u);
  BOOST_TEST(tensors[0].first == "model.w");
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(path, "model"), IoError,
                        message_has({"no dict under 'model'", "'epoch', 'pytorch-lightning_version', 'state_dict'"}));
}

BOOST_AUTO_TEST_CASE(pickles_that_would_run_code_are_refused_and_nothing_runs) {
  TempDir dir{"pth_code"};
  const std::string witness = dir.file("ran");
  const auto calls = [&](const std::string& module, const std::string& name) {
    PickleWriter p;
    p.global(module, name).op('(').text("touch " + witness).op('t').op('R');
    return pth(dir, p.done(), {});
  };
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(calls("os", "system")), IoError,
                        message_has({"m.pth", "data.pkl", "global 'os.system' is refused", "at byte 2", "nothing in the file was run"}));
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(calls("builtins", "eval")), IoError, message_has({"global 'builtins.eval' is refused"}));
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(calls("posix", "system")), IoError, message_has({"'posix.system'"}));
  BOOST_TEST(!std::filesystem::exists(witness));
  // A global it accepts, called as no state_dict calls it; an opcode it does not know (INST).
  PickleWriter storage_call;
  storage_call.global("torch", "FloatStorage").op(')').op('R');
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(pth(dir, storage_call.done(), {})), IoError,
                        message_has({"REDUCE calls a global torch.FloatStorage"}));
  PickleWriter inst;
  inst.op('i').bytes += "os\nsystem\n";
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(pth(dir, inst.done(), {})), IoError,
                        message_has({"opcode 0x69", "at byte 2"}));
}

BOOST_AUTO_TEST_CASE(views_past_their_storage_are_refused) {
  TempDir dir{"pth_views"};
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(one_view(dir, {3, 2}, {2, 3}, 0)), IoError,
                        message_has({"tensor 'w'", "strides (2, 3)", "reaches element 7 of a storage of 6"}));
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(one_view(dir, {1}, {1}, 6)), IoError,
                        message_has({"offset 6", "reaches element 6"}));
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(one_view(dir, {2, 3}, {3}, 0)), IoError,
                        message_has({"2 sizes but 1 strides"}));
  // A storage of 10 GB claimed by 24 bytes: refused before anything is allocated.
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(one_view(dir, {6}, {1}, 0, 2'500'000'000)), IoError,
                        message_has({"claims 2500000000 elements of 4 bytes, its entry holds 24 bytes"}));
  // Views of one storage are each copied: 3000 views of 256 KiB are bounded by the file's size.
  PickleWriter p;
  p.ordered_dict().op('(');
  for (int i = 0; i < 3000; ++i) p.text(fmt::format("v{}", i)).tensor("FloatStorage", "0", 65536, 0, {65536}, {1});
  p.op('u');
  const std::string many = pth(dir, p.done(), {{"0", std::string(262144, '\0')}});
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(many), IoError, message_has({"its tensors would take more than", "four times the file's size"}));
}

BOOST_AUTO_TEST_CASE(damaged_and_deep_files_are_refused_naming_the_file) {
  TempDir dir{"pth_damaged"};
  const std::string whole = [&] {
    std::ifstream in(one_view(dir, {6}, {1}, 0), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  BOOST_TEST(serialization::load_pytorch(write_file(dir, "whole.pth", whole)).size() == 1u);
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(write_file(dir, "cut.pth", whole.substr(0, whole.size() - 30))), IoError,
                        message_has({"cut.pth", "not a ZIP archive, or one cut short"}));
  std::string flipped = whole;
  flipped[whole.find("data/0") + 6 + 3] ^= 0x40;  // a byte of the storage: its CRC-32 fails
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(write_file(dir, "flipped.pth", flipped)), IoError,
                        message_has({"flipped.pth", "'m/data/0'", "CRC-32"}));
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(write_file(dir, "text.pth", "PK\3\4 but nothing of a ZIP after it")), IoError,
                        message_has({"text.pth", "not a ZIP archive"}));
  // A million nested lists: read without recursion, refused as what it is, in bounded memory.
  const std::string deep = "\x80\x02" + std::string(1'000'000, ']') + std::string(999'999, 'a') + ".";
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(pth(dir, deep, {})), IoError,
                        message_has({"it holds a list, not a dict of tensors"}));
  const std::string marks = "\x80\x02" + std::string(1'000'000, '(') + std::string(1'000'000, 't') + ".";
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(pth(dir, marks, {})), IoError, message_has({"it holds a tuple"}));
  // An int64 past int32, and a storage that is not in the archive.
  PickleWriter big;
  big.ordered_dict().op('(').text("n").tensor("LongStorage", "0", 1, 0, {}, {}).op('u');
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(pth(dir, big.done(), {{"0", storage_bytes(std::vector<std::int64_t>{1ll << 40})}})),
                        IoError, message_has({"tensor 'n'", "1099511627776", "int32"}));
  BOOST_CHECK_EXCEPTION(serialization::load_pytorch(pth(dir, big.done(), {})), IoError,
                        message_has({"storage 'data/0' is not in the archive"}));
}
