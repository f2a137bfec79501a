#pragma once
// Text for language models: a file or a folder of files read as one text, cut into blocks of
// tokens where each position's target is the next token (input [i, i + T), target [i + 1, i + T + 1)),
// with a vocabulary that turns tokens back into text. Debian's `fortunes` package is the default
// corpus (datasets::fortunes()).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dataset.hpp"

namespace accrue::datasets {

/// How text becomes tokens: one per byte (256 tokens), or one per character (UTF-8 code point),
/// the vocabulary being the characters the text holds.
enum class Tokenizer { byte, character };

/// Tokens and their text, for encoding prompts and printing what a model generates.
class Vocabulary {
 public:
  Vocabulary() = default;
  /// The characters of `text` (code points, sorted), or all 256 bytes.
  Vocabulary(std::string_view text, Tokenizer tokenizer);

  std::int64_t size() const;
  Tokenizer tokenizer() const { return tokenizer_; }
  /// Tokens of `text`; a character the vocabulary lacks throws ValueError naming it and its place.
  std::vector<std::int32_t> encode(std::string_view text) const;
  /// The text of `tokens`; a token outside [0, size()) throws ValueError.
  std::string decode(const std::vector<std::int32_t>& tokens) const;
  /// Character i as UTF-8 (for printing a vocabulary).
  std::string token_text(std::int32_t token) const;
  /// Every character in token order, as UTF-8 (empty for bytes): Vocabulary(characters(),
  /// Tokenizer::character) is this vocabulary again (a saved model stores it so).
  std::string characters() const;
  friend bool operator==(const Vocabulary&, const Vocabulary&) = default;

 private:
  Tokenizer tokenizer_ = Tokenizer::byte;
  std::vector<char32_t> characters_;  // sorted; empty for bytes
};

struct TextOptions {
  /// Tokens per sample (the model's context).
  std::int64_t block_size = 128;
  Tokenizer tokenizer = Tokenizer::character;
  /// Tokens between the starts of consecutive blocks; block_size (no overlap) when 0.
  std::int64_t stride = 0;
  /// The share of the text, at its end, held out for validation.
  double validation_fraction = 0.1;
};

/// Blocks of a text for next-token prediction: inputs and targets int32 (N, block_size).
struct TextData {
  Dataset train;
  Dataset validation;
  Vocabulary vocabulary;
  /// Characters (or bytes) read.
  std::int64_t tokens = 0;
};

/// Reads `path` (a file, or a folder whose regular files are read in name order, symbolic links
/// and fortune's *.dat index files left out) and cuts it into blocks. Throws IoError naming a
/// missing or unreadable path, or one that is no regular file (/dev/zero, a pipe: they have no
/// end to read to); ValueError for options that give no block.
TextData text_file(const std::string& path, const TextOptions& options = {});
/// The same from text in memory, named `name` in messages.
TextData text(std::string_view text, const TextOptions& options = {}, const std::string& name = "text");

/// One fortune (a quotation) and the file it comes from ("computers", "science", ...).
struct Fortune {
  std::string file;
  std::string text;
};

/// Where datasets::fortunes reads: $ACCRUE_FORTUNES_DIR when set, else /usr/share/games/fortunes.
std::string fortunes_folder();
/// Every fortune of the folder's files, in file and then file order (fortune's format: quotations
/// separated by lines holding "%"). Throws IoError naming the folder and Debian's package when it
/// is missing.
std::vector<Fortune> read_fortunes(const std::string& folder = "");
/// The fortunes as one text (each followed by a blank line), cut into blocks: the corpus of
/// examples/07_char_lm, about 2.5 million characters.
TextData fortunes(const TextOptions& options = {}, const std::string& folder = "");

}  // namespace accrue::datasets
