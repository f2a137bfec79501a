#pragma once
// UTF-8 checks for names that end up in JSON (safetensors headers, reports): a name that is not
// UTF-8 is refused where it is given, not found out when a file is written after hours of work.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace accrue {

/// A UTF-8 sequence: its code point and its length in bytes.
struct Utf8Sequence {
  char32_t code_point;
  std::size_t length;
};

/// The sequence that starts at byte `at` of `text`, when its lead byte and continuation bytes have
/// the shape of one; none otherwise. Overlong forms, surrogates and values past U+10FFFF pass here
/// (readers that take any file accept them); first_invalid_utf8 refuses them.
std::optional<Utf8Sequence> utf8_sequence_at(std::string_view text, std::size_t at);

/// The offset of the first byte of `text` that starts no valid UTF-8 sequence (a stray
/// continuation byte, a cut or overlong sequence, a surrogate, past U+10FFFF); none when all of
/// it is UTF-8.
std::optional<std::size_t> first_invalid_utf8(std::string_view text);

/// `text` as an error message or a terminal may show it: in single quotes, control characters (a
/// terminal's escape sequences among them) and bytes that are not UTF-8 written as `\xNN`, and cut
/// after about `max_chars` characters with its length in bytes ("'abcd'... (10485760 bytes)"), so a
/// hostile file's field can neither flood a log nor move the cursor.
std::string printable_excerpt(std::string_view text, std::size_t max_chars = 40);

/// A name as a message shows it: as it is, unquoted, when it is at most `max_chars` bytes with
/// nothing printable_excerpt would escape; otherwise printable_excerpt's form.
std::string printable_name(std::string_view text, std::size_t max_chars = 40);

/// Throws ValueError "<what> is not UTF-8: byte 0xff at 3" unless `text` is UTF-8.
void require_utf8(std::string_view text, std::string_view what);

}  // namespace accrue
