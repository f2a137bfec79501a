#include "accrue/datasets/text.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "accrue/framework/error.hpp"

namespace accrue::datasets {
namespace {

// Code points of UTF-8 text; a byte that starts no valid sequence stands for itself (as Latin-1
// would read it), so any file can be read.
std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int extra = b < 0x80 ? 0 : (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xE ? 2 : (b >> 3) == 0x1E ? 3 : -1;
    bool valid = extra >= 0 && i + static_cast<std::size_t>(extra) < s.size();
    char32_t c = extra == 0 ? b : extra == 1 ? (b & 0x1F) : extra == 2 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; valid && k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      valid = (next >> 6) == 0x2;
      c = (c << 6) | (next & 0x3F);
    }
    if (!valid) {
      out.push_back(b);
      ++i;
      continue;
    }
    out.push_back(c);
    i += static_cast<std::size_t>(extra) + 1;
  }
  return out;
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

std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError(fmt::format("cannot read {}", path.string()));
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The files a folder's text is read from, in name order.
std::vector<std::filesystem::path> text_files(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.is_regular_file() && !entry.is_symlink() && entry.path().extension() != ".dat")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Vocabulary::Vocabulary(std::string_view text, Tokenizer tokenizer) : tokenizer_(tokenizer) {
  if (tokenizer == Tokenizer::byte) return;
  characters_ = code_points(text);
  std::sort(characters_.begin(), characters_.end());
  characters_.erase(std::unique(characters_.begin(), characters_.end()), characters_.end());
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
  const std::vector<char32_t> chars = code_points(text);
  out.reserve(chars.size());
  for (std::size_t i = 0; i < chars.size(); ++i) {
    const auto it = std::lower_bound(characters_.begin(), characters_.end(), chars[i]);
    if (it == characters_.end() || *it != chars[i]) {
      std::string c;
      append_utf8(c, chars[i]);
      throw ValueError(fmt::format("character '{}' (U+{:04X}) at character {} is not in the vocabulary of {} characters",
                                   c, static_cast<std::uint32_t>(chars[i]), i, characters_.size()));
    }
    out.push_back(static_cast<std::int32_t>(it - characters_.begin()));
  }
  return out;
}

std::string Vocabulary::token_text(std::int32_t token) const {
  ACCRUE_CHECK(token >= 0 && token < size(), "token {} is outside the vocabulary [0, {})", token, size());
  if (tokenizer_ == Tokenizer::byte) return std::string(1, static_cast<char>(token));
  std::string out;
  append_utf8(out, characters_[static_cast<std::size_t>(token)]);
  return out;
}

std::string Vocabulary::decode(const std::vector<std::int32_t>& tokens) const {
  std::string out;
  for (const std::int32_t t : tokens) out += token_text(t);
  return out;
}

TextData text(std::string_view text, const TextOptions& options, const std::string& name) {
  const std::int64_t T = options.block_size, stride = options.stride == 0 ? options.block_size : options.stride;
  ACCRUE_CHECK(T >= 1 && stride >= 1, "{}: block_size and stride must be at least 1, got {} and {}", name, T, stride);
  ACCRUE_CHECK(options.validation_fraction >= 0.0 && options.validation_fraction < 1.0,
               "{}: validation_fraction must be in [0, 1), got {}", name, options.validation_fraction);
  TextData data;
  data.vocabulary = Vocabulary(text, options.tokenizer);
  const std::vector<std::int32_t> tokens = data.vocabulary.encode(text);
  data.tokens = static_cast<std::int64_t>(tokens.size());
  // The validation text is the end; each part is cut into its own blocks, so none crosses over.
  const auto split = static_cast<std::int64_t>(static_cast<double>(data.tokens) * (1.0 - options.validation_fraction));
  const auto blocks = [&](std::int64_t begin, std::int64_t end, const std::string& part) {
    std::vector<std::int32_t> x, y;
    std::int64_t n = 0;
    for (std::int64_t i = begin; i + T + 1 <= end; i += stride, ++n) {
      x.insert(x.end(), tokens.begin() + i, tokens.begin() + i + T);
      y.insert(y.end(), tokens.begin() + i + 1, tokens.begin() + i + T + 1);
    }
    return Dataset{Tensor::from(x, {n, T}), Tensor::from(y, {n, T}), fmt::format("{} ({})", name, part)};
  };
  data.train = blocks(0, split, "training");
  data.validation = blocks(split, data.tokens, "validation");
  ACCRUE_CHECK(!data.train.empty(), "{}: {} tokens make no training block of {} tokens and its next one", name,
               data.tokens, T);
  return data;
}

TextData text_file(const std::string& path, const TextOptions& options) {
  const std::filesystem::path p(path);
  if (!std::filesystem::exists(p)) throw IoError(fmt::format("text_file: {} does not exist", path));
  std::string all;
  if (std::filesystem::is_directory(p)) {
    for (const auto& f : text_files(p)) all += read_file(f);
    if (all.empty()) throw IoError(fmt::format("text_file: the folder {} holds no text", path));
  } else {
    all = read_file(p);
  }
  return text(all, options, path);
}

std::string fortunes_folder() {
  const char* env = std::getenv("ACCRUE_FORTUNES_DIR");
  return env != nullptr && *env != '\0' ? env : "/usr/share/games/fortunes";
}

std::vector<Fortune> read_fortunes(const std::string& folder_in) {
  const std::string folder = folder_in.empty() ? fortunes_folder() : folder_in;
  if (!std::filesystem::is_directory(folder))
    throw IoError(fmt::format("the fortunes folder {} does not exist: install Debian's fortunes package (apt-get install "
                              "fortunes) or set ACCRUE_FORTUNES_DIR",
                              folder));
  std::vector<Fortune> out;
  for (const auto& path : text_files(folder)) {
    std::istringstream in(read_file(path));
    std::string line, quote;
    const auto flush = [&] {
      if (!quote.empty()) out.push_back({path.filename().string(), std::move(quote)});
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
  return text(all, options, "fortunes");
}

}  // namespace accrue::datasets
