#pragma once
// Printing Accrue's values both ways their users print: `std::cout << x` and `fmt::print("{}", x)`,
// each the value's str(). A type opts in with the two lines its header ends with:
//
//   inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }
//   template <> struct fmt::formatter<accrue::Shape> : accrue::StrFormatter<accrue::Shape> {};

#include <fmt/format.h>

#include <string>

namespace accrue {

/// fmt's formatter for a type with str(); width and alignment apply as to a string ("{:>20}").
template <class T>
struct StrFormatter : fmt::formatter<std::string> {
  auto format(const T& value, fmt::format_context& ctx) const {
    return fmt::formatter<std::string>::format(value.str(), ctx);
  }
};

}  // namespace accrue
