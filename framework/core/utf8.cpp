#include "utf8.hpp"

#include "error.hpp"

namespace accrue {

std::optional<Utf8Sequence> utf8_sequence_at(std::string_view text, std::size_t at) {
  const auto b = static_cast<unsigned char>(text[at]);
  const int extra = b < 0x80 ? 0 : (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xE ? 2 : (b >> 3) == 0x1E ? 3 : -1;
  if (extra < 0 || at + static_cast<std::size_t>(extra) >= text.size()) return std::nullopt;
  char32_t c = extra == 0 ? b : extra == 1 ? (b & 0x1F) : extra == 2 ? (b & 0x0F) : (b & 0x07);
  for (int k = 1; k <= extra; ++k) {
    const auto next = static_cast<unsigned char>(text[at + static_cast<std::size_t>(k)]);
    if ((next >> 6) != 0x2) return std::nullopt;
    c = (c << 6) | (next & 0x3F);
  }
  return Utf8Sequence{c, static_cast<std::size_t>(extra) + 1};
}

std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::optional<Utf8Sequence> s = utf8_sequence_at(text, i);
    if (!s) return i;
    // Overlong forms, surrogates and code points past Unicode's last are not UTF-8.
    static constexpr char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    const char32_t c = s->code_point;
    if (c < least[s->length] || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) return i;
    i += s->length;
  }
  return std::nullopt;
}

void require_utf8(std::string_view text, std::string_view what) {
  if (const std::optional<std::size_t> at = first_invalid_utf8(text))
    throw ValueError(fmt::format("{} is not UTF-8: byte 0x{:02x} at {}", what, static_cast<unsigned char>(text[*at]), *at));
}

std::string printable_name(std::string_view text, std::size_t max_chars) {
  std::string shown = printable_excerpt(text, max_chars);
  if (text.size() <= max_chars && shown.size() == text.size() + 2) return std::string{text};
  return shown;
}

std::string printable_excerpt(std::string_view text, std::size_t max_chars) {
  std::string out = "'";
  std::size_t shown = 0, at = 0;
  while (at < text.size() && shown < max_chars) {
    const std::optional<Utf8Sequence> s = utf8_sequence_at(text, at);
    const auto b = static_cast<unsigned char>(text[at]);
    if (!s || b < 0x20 || b == 0x7F || (s->code_point >= 0x80 && s->code_point < 0xA0)) {
      // One byte at a time: a C1 control character is two, each shown.
      for (std::size_t k = 0; k < (s && b >= 0x80 ? s->length : 1); ++k)
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[at + k]));
      at += s && b >= 0x80 ? s->length : 1;
    } else {
      out.append(text.substr(at, s->length));
      at += s->length;
    }
    ++shown;
  }
  out += "'";
  if (at < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

}  // namespace accrue
