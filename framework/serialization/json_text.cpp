#include "json_text.hpp"

#include <fmt/format.h>

#include "../core/utf8.hpp"

namespace accrue {

namespace detail {

std::string json_reason(const std::exception& e) {
  std::string reason = e.what();
  reason = reason.substr(0, reason.find("; last read"));
  if (const std::size_t p = reason.find("] "); reason.starts_with("[json.exception.") && p != std::string::npos)
    reason = reason.substr(p + 2);
  return reason;
}

}  // namespace detail

namespace {

template <class Json>
std::string excerpt(const Json& value, std::size_t max_chars) {
  switch (value.type()) {
    case Json::value_t::string: {
      const std::string& s = value.template get_ref<const std::string&>();
      if (s.size() > max_chars) return fmt::format("a text of {} bytes", s.size());
      return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    case Json::value_t::array: return fmt::format("an array of {} item{}", value.size(), value.size() == 1 ? "" : "s");
    case Json::value_t::object: return fmt::format("an object of {} key{}", value.size(), value.size() == 1 ? "" : "s");
    default: return value.dump();  // a number, true, false or null: short
  }
}

}  // namespace

std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars) { return excerpt(value, max_chars); }
std::string json_excerpt(const nlohmann::ordered_json& value, std::size_t max_chars) { return excerpt(value, max_chars); }

}  // namespace accrue
