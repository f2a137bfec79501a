// Text into blocks of tokens for language models: vocabularies of characters and bytes, the blocks
// and their next-token targets, the validation split, errors that name what is wrong, and Debian's
// fortunes as the corpus.

#include <filesystem>
#include <fstream>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

BOOST_AUTO_TEST_CASE(vocabularies_encode_and_decode_characters_and_bytes) {
  const std::string s = "naïve café, 50 €";
  const datasets::Vocabulary chars{s, datasets::Tokenizer::character};
  BOOST_TEST(chars.size() == 13);  // n a ï v e space c f é , 5 0 €
  BOOST_TEST(chars.decode(chars.encode(s)) == s);
  BOOST_TEST(chars.encode("a").at(0) < chars.encode("é").at(0));
  BOOST_TEST(chars.encode(s).size() == 16u);  // characters, not bytes
  BOOST_CHECK_EXCEPTION(chars.encode("nah!"), ValueError, message_has({"'h'", "character 2"}));
  BOOST_CHECK_THROW(chars.decode({99}), Error);
  const datasets::Vocabulary bytes{s, datasets::Tokenizer::byte};
  BOOST_TEST(bytes.size() == 256);
  BOOST_TEST(bytes.encode(s).size() == s.size());
  BOOST_TEST(bytes.decode(bytes.encode(s)) == s);
}

BOOST_AUTO_TEST_CASE(text_becomes_blocks_whose_targets_are_the_next_tokens) {
  std::string s;
  for (int i = 0; i < 50; ++i) s += static_cast<char>('a' + i % 26);
  const datasets::TextData d = datasets::text(s, {.block_size = 8, .validation_fraction = 0.2});
  BOOST_TEST(d.tokens == 50);
  // 40 training tokens: blocks at 0, 8, 16, 24 (the next would need token 40); 10 for validation.
  BOOST_TEST(d.train.size() == 4);
  BOOST_TEST(d.validation.size() == 1);
  BOOST_TEST(d.train.inputs().shape() == Shape({4, 8}));
  BOOST_TEST(d.train.inputs().dtype() == DType::i32);
  const auto x = d.train.inputs().to_vector<std::int32_t>(), y = d.train.targets().to_vector<std::int32_t>();
  for (std::size_t i = 0; i < 8; ++i) BOOST_TEST(y[8 + i] == x[8 + i + 1 < 16 ? 8 + i + 1 : 16]);
  BOOST_TEST(d.vocabulary.decode(std::vector<std::int32_t>(x.begin() + 8, x.begin() + 16)) == s.substr(8, 8));
  BOOST_TEST(d.vocabulary.decode(d.validation.inputs().to_vector<std::int32_t>()) == s.substr(40, 8));
  // Overlapping blocks with a stride.
  BOOST_TEST(datasets::text(s, {.block_size = 8, .stride = 2, .validation_fraction = 0.0}).train.size() == 21);
  BOOST_CHECK_EXCEPTION(datasets::text("abc", {.block_size = 8}), ValueError, message_has({"no training block"}));
  BOOST_CHECK_EXCEPTION(datasets::text_file("/nonexistent/corpus.txt"), IoError, message_has({"/nonexistent/corpus.txt"}));
}

BOOST_AUTO_TEST_CASE(a_folder_is_read_in_name_order_without_index_files) {
  const auto dir = std::filesystem::temp_directory_path() / ("accrue_text_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "b") << "%\nsecond one\n%\nthird\n";
  std::ofstream(dir / "a") << "first\nquote\n";
  std::ofstream(dir / "a.dat") << "binary index";
  std::filesystem::create_symlink(dir / "a", dir / "a.u8");
  const datasets::TextData d = datasets::text_file(dir.string(), {.block_size = 4, .validation_fraction = 0.0});
  BOOST_TEST(d.tokens == static_cast<std::int64_t>(std::string("first\nquote\n%\nsecond one\n%\nthird\n").size()));
  const std::vector<datasets::Fortune> f = datasets::read_fortunes(dir.string());
  BOOST_REQUIRE_EQUAL(f.size(), 3u);
  BOOST_TEST(f[0].file == "a");
  BOOST_TEST(f[0].text == "first\nquote\n");
  BOOST_TEST(f[1].file == "b");
  BOOST_TEST(f[2].text == "third\n");
  std::filesystem::remove_all(dir);
  BOOST_CHECK_EXCEPTION(datasets::read_fortunes(dir.string()), IoError, message_has({"apt-get install fortunes"}));
}

BOOST_AUTO_TEST_CASE(fortunes_are_the_default_corpus, *boost::unit_test::precondition(accrue::test::requires_fortunes)) {
  const datasets::TextData d = datasets::fortunes({.block_size = 128});
  BOOST_TEST(d.tokens > 2'000'000);  // about 2.5 million characters
  BOOST_TEST(d.vocabulary.size() < 300);
  BOOST_TEST(d.train.size() == (d.tokens * 9 / 10 - 1) / 128);
  BOOST_TEST_MESSAGE("fortunes: " << d.tokens << " characters, vocabulary " << d.vocabulary.size() << ", "
                                  << d.train.size() << " training and " << d.validation.size() << " validation blocks");
}
