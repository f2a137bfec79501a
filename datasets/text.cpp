#include "text.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "../framework/core/error.hpp"
#include "../framework/core/files.hpp"
#include "../framework/core/utf8.hpp"

namespace accrue::datasets {
namespace {

namespace fs = std::filesystem;

// Calls f(code point) for each character of UTF-8 text, in order; a byte that starts no sequence
// stands for itself (as Latin-1 would read it), so any file can be read.
template <class F>
void for_each_code_point(std::string_view s, F&& f) {
  for (std::size_t i = 0; i < s.size();) {
    if (const std::optional<Utf8Sequence> seq = utf8_sequence_at(s, i)) {
      f(seq->code_point);
      i += seq->length;
    } else {
      f(static_cast<char32_t>(static_cast<unsigned char>(s[i])));
      ++i;
    }
  }
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// A regular file's bytes (a device such as /dev/zero, a pipe or a folder is refused, named), read
// in one piece of the file's size.
void append_file(std::string& out, const std::string& path) {
  require_readable_file(path, "text file");
  std::ifstream f(path, std::ios::binary);
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!f || ec) throw IoError(fmt::format("text file {} cannot be read", path));
  const std::size_t at = out.size();
  out.resize(at + size);
  f.read(out.data() + at, static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(f.gcount()) != size)
    throw IoError(fmt::format("text file {}: {} of its {} bytes could be read", path, f.gcount(), size));
}

// The files a folder's text is read from, in name order: its regular files, not through symbolic
// links (a loop of links is passed over like any link), fortune's *.dat index files left out.
std::vector<std::string> text_files(const std::string& folder, std::string_view what) {
  std::vector<std::string> files;
  for (const std::string& entry : list_folder(folder, what)) {
    std::error_code ec;
    if (fs::symlink_status(entry, ec).type() == fs::file_type::regular && fs::path(entry).extension() != ".dat")
      files.push_back(entry);
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Vocabulary::Vocabulary(std::string_view text, Tokenizer tokenizer) : tokenizer_(tokenizer) {
  if (tokenizer == Tokenizer::byte) return;
  // The characters seen, without a copy of the text: a bit per character of the first 64 Ki, a
  // set beyond.
  std::vector<bool> seen(0x10000);
  std::set<char32_t> beyond;
  for_each_code_point(text, [&](char32_t c) {
    if (c < 0x10000) seen[c] = true;
    else beyond.insert(c);
  });
  for (char32_t c = 0; c < 0x10000; ++c)
    if (seen[c]) characters_.push_back(c);
  characters_.insert(characters_.end(), beyond.begin(), beyond.end());
}

std::int64_t Vocabulary::size() const {
  return tokenizer_ == Tokenizer::byte ? 256 : static_cast<std::int64_t>(characters_.size());
}

std::vector<std::int32_t> Vocabulary::encode(std::string_view text) const {
  std::vector<std::int32_t> out;
  if (tokenizer_ == Tokenizer::byte) {
    for (const char c : text) out.push_back(static_cast<unsigned char>(c));
    return out;
  }
  out.reserve(text.size());  // at most one token per byte
  for_each_code_point(text, [&](char32_t c) {
    const auto it = std::lower_bound(characters_.begin(), characters_.end(), c);
    if (it == characters_.end() || *it != c) {
      std::string shown;
      append_utf8(shown, c);
      throw ValueError(fmt::format("character '{}' (U+{:04X}) at character {} is not in the vocabulary of {} characters",
                                   shown, static_cast<std::uint32_t>(c), out.size(), characters_.size()));
    }
    out.push_back(static_cast<std::int32_t>(it - characters_.begin()));
  });
  out.shrink_to_fit();
  return out;
}

std::string Vocabulary::token_text(std::int32_t token) const {
  ACCRUE_CHECK(token >= 0 && token < size(), "token {} is outside the vocabulary [0, {})", token, size());
  if (tokenizer_ == Tokenizer::byte) return std::string(1, static_cast<char>(token));
  std::string out;
  append_utf8(out, characters_[static_cast<std::size_t>(token)]);
  return out;
}

std::string Vocabulary::characters() const {
  std::string out;
  for (const char32_t c : characters_) append_utf8(out, c);
  return out;
}

std::string Vocabulary::decode(const std::vector<std::int32_t>& tokens) const {
  std::string out;
  for (const std::int32_t t : tokens) out += token_text(t);
  return out;
}

namespace {

// Blocks of `tokens`: the text is read, then let go of before the blocks are made, so that at
// most the text and its tokens, or the tokens and the blocks, are held at once (about 12 bytes per
// character at the peak, where a copy of each step was held before).
TextData cut_into_blocks(std::string&& text, const TextOptions& options, const std::string& name) {
  const std::int64_t T = options.block_size, stride = options.stride == 0 ? options.block_size : options.stride;
  ACCRUE_CHECK(T >= 1 && stride >= 1, "{}: block_size and stride must be at least 1, got {} and {}", name, T, stride);
  ACCRUE_CHECK(options.validation_fraction >= 0.0 && options.validation_fraction < 1.0,
               "{}: validation_fraction must be in [0, 1), got {}", name, options.validation_fraction);
  TextData data;
  data.vocabulary = Vocabulary(text, options.tokenizer);
  const std::vector<std::int32_t> tokens = data.vocabulary.encode(text);
  std::string{}.swap(text);
  data.tokens = static_cast<std::int64_t>(tokens.size());
  // The validation text is the end; each part is cut into its own blocks, so none crosses over.
  const auto split = static_cast<std::int64_t>(static_cast<double>(data.tokens) * (1.0 - options.validation_fraction));
  const auto blocks = [&](std::int64_t begin, std::int64_t end, const std::string& part) {
    const std::int64_t n = end - begin >= T + 1 ? (end - begin - T - 1) / stride + 1 : 0;
    const TensorOptions i32{.dtype = DType::i32, .category = MemoryCategory::data};
    Tensor x = Tensor::empty({n, T}, i32), y = Tensor::empty({n, T}, i32);
    for (std::int64_t b = 0; b < n; ++b) {
      const auto from = tokens.begin() + begin + b * stride;
      std::copy(from, from + T, x.data<std::int32_t>() + b * T);
      std::copy(from + 1, from + T + 1, y.data<std::int32_t>() + b * T);
    }
    return Dataset{x, y, fmt::format("{} ({})", name, part)};
  };
  data.train = blocks(0, split, "training");
  data.validation = blocks(split, data.tokens, "validation");
  ACCRUE_CHECK(!data.train.empty(), "{}: {} tokens make no training block of {} tokens and its next one", name,
               data.tokens, T);
  return data;
}

}  // namespace

TextData text(std::string_view text, const TextOptions& options, const std::string& name) {
  return cut_into_blocks(std::string(text), options, name);
}

TextData text_file(const std::string& path, const TextOptions& options) {
  std::string all;
  if (is_folder(path, "text folder")) {
    for (const std::string& f : text_files(path, "text folder")) append_file(all, f);
    if (all.empty()) throw IoError(fmt::format("text_file: the folder {} holds no text", path));
  } else {
    append_file(all, path);
  }
  return cut_into_blocks(std::move(all), options, path);
}

std::string fortunes_folder() {
  const char* env = std::getenv("ACCRUE_FORTUNES_DIR");
  return env != nullptr && *env != '\0' ? env : "/usr/share/games/fortunes";
}

std::vector<Fortune> read_fortunes(const std::string& folder_in) {
  const std::string folder = folder_in.empty() ? fortunes_folder() : folder_in;
  std::error_code ec;
  const fs::file_type type = fs::status(folder, ec).type();
  if (type == fs::file_type::not_found)
    throw IoError(fmt::format("the fortunes folder {} does not exist: install Debian's fortunes package (apt-get install "
                              "fortunes) or set ACCRUE_FORTUNES_DIR",
                              folder));
  if (!is_folder(folder, "the fortunes folder"))
    throw IoError(fmt::format("the fortunes folder {} is not a folder; name the folder holding fortune's files", folder));
  std::vector<Fortune> out;
  for (const std::string& path : text_files(folder, "the fortunes folder")) {
    std::string text;
    append_file(text, path);
    std::istringstream in(std::move(text));
    std::string line, quote;
    const auto flush = [&] {
      if (!quote.empty()) out.push_back({fs::path(path).filename().string(), std::move(quote)});
      quote.clear();
    };
    while (std::getline(in, line)) {
      if (line == "%") flush();
      else quote += line + "\n";
    }
    flush();
  }
  if (out.empty()) throw IoError(fmt::format("the fortunes folder {} holds no fortunes", folder));
  return out;
}

TextData fortunes(const TextOptions& options, const std::string& folder) {
  std::string all;
  for (const Fortune& f : read_fortunes(folder)) all += f.text + "\n";
  return cut_into_blocks(std::move(all), options, "fortunes");
}

}  // namespace accrue::datasets
