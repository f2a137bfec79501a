#pragma once
// JSON read from files and clients Accrue does not control (safetensors headers, model files,
// checkpoints' state, run logs, a browser's settings): nested at most max_json_depth deep, and
// quoted in error messages only in part. nlohmann's parser builds any depth, but copying,
// comparing and printing a value recurse: a 300 KB header nested 100,000 deep overflowed the stack
// when an error message printed it. Bounding the depth where text is parsed makes every later use
// safe.

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "accrue/framework/error.hpp"
#include "accrue/framework/utf8.hpp"

namespace accrue {

/// Deeper than any file Accrue writes (a model file nests 4 levels, and 2 more for each layer
/// inside a layer, which it allows 64 of), shallow enough for every recursion over the value.
inline constexpr int max_json_depth = 256;

/// Thrown by parse_json: the text is not JSON or nests too deep. `reason()` is the cause without
/// the place's name, for callers that raise their own kind of error.
class JsonError : public IoError {
 public:
  JsonError(const std::string& what, std::string reason) : IoError(what), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

namespace detail {
/// nlohmann's message without its "[json.exception.parse_error.101] " prefix and without its quote
/// of the bytes read ("; last read: '...'"), which may be a whole hostile file.
std::string json_reason(const std::exception& e);
}  // namespace detail

/// `text` as JSON (Json: nlohmann::json or nlohmann::ordered_json), refused as soon as it nests
/// deeper than `max_depth`, before anything deeper is built. Throws JsonError "<what>: <reason>"; a
/// number past a double's range names its key ("lr: a number too large for a double").
template <class Json = nlohmann::json>
Json parse_json(std::string_view text, std::string_view what, int max_depth = max_json_depth) {
  struct TooDeep {};
  std::string key;  // the last key read, so that a value's fault names its field
  const typename Json::parser_callback_t depth = [max_depth, &key](int level, typename Json::parse_event_t event, Json& parsed) {
    if (level > max_depth) throw TooDeep{};
    if (event == Json::parse_event_t::key && parsed.is_string()) key = parsed.template get_ref<const std::string&>();
    return true;
  };
  std::string reason;
  try {
    return Json::parse(text, depth);
  } catch (const TooDeep&) {
    reason = fmt::format("nested more than {} deep", max_depth);
  } catch (const nlohmann::json::out_of_range&) {
    reason = (key.empty() ? "" : printable_name(key) + ": ") + "a number too large for a double";
  } catch (const nlohmann::json::exception& e) {
    reason = "not valid JSON: " + detail::json_reason(e);
  }
  throw JsonError(fmt::format("{}: {}", what, reason), reason);
}

/// A JSON value for an error message, so that a message never grows with what a file or a client
/// holds: numbers, flags and texts of at most `max_chars` bytes as they are (quoted, bytes that are
/// not UTF-8 replaced); a longer text, an array or an object by its kind and size ("a text of 3000
/// bytes", "an array of 3 items").
std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars = 40);
std::string json_excerpt(const nlohmann::ordered_json& value, std::size_t max_chars = 40);

}  // namespace accrue
