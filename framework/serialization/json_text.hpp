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

#include "../core/error.hpp"
#include "../core/utf8.hpp"

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

namespace detail {

/// nlohmann's DOM builder, refusing to nest deeper than `max_depth` and noting the last key read.
/// (Its parser with a callback would do the first too, but walks a parent's elements after each
/// child: a model file of 100,000 layers then took seconds per thousand.)
template <class Json>
class DepthLimitedDom {
 public:
  struct TooDeep {};
  DepthLimitedDom(Json& result, int max_depth) : dom_(result, true), max_depth_(max_depth) {}
  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(typename Json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(typename Json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(typename Json::number_float_t v, const typename Json::string_t& s) { return dom_.number_float(v, s); }
  bool string(typename Json::string_t& v) { return dom_.string(v); }
  bool binary(typename Json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return deeper() && dom_.start_object(n); }
  bool key(typename Json::string_t& k) {
    last_key = k;
    return dom_.key(k);
  }
  bool end_object() { return --depth_, dom_.end_object(); }
  bool start_array(std::size_t n) { return deeper() && dom_.start_array(n); }
  bool end_array() { return --depth_, dom_.end_array(); }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
    return dom_.parse_error(position, token, e);
  }
  std::string last_key;

 private:
  bool deeper() {
    if (++depth_ > max_depth_) throw TooDeep{};
    return true;
  }
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  int max_depth_, depth_ = 0;
};

}  // namespace detail

/// `text` as JSON (Json: nlohmann::json or nlohmann::ordered_json), refused as soon as it nests
/// deeper than `max_depth`, before anything deeper is built. Throws JsonError "<what>: <reason>"; a
/// number past a double's range names its key ("lr: a number too large for a double").
template <class Json = nlohmann::json>
Json parse_json(std::string_view text, std::string_view what, int max_depth = max_json_depth) {
  Json result;
  detail::DepthLimitedDom<Json> dom{result, max_depth};
  std::string reason;
  try {
    Json::sax_parse(text, &dom);
    return result;
  } catch (const typename detail::DepthLimitedDom<Json>::TooDeep&) {
    reason = fmt::format("nested more than {} deep", max_depth);
  } catch (const nlohmann::json::out_of_range&) {
    reason = (dom.last_key.empty() ? "" : printable_name(dom.last_key) + ": ") + "a number too large for a double";
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
