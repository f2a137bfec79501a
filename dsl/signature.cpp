// ModelSignature's text, as summary() shows it (Model::signature is in model_signature.cpp).

#include "signature.hpp"

#include <fmt/format.h>

#include "../framework/core/utf8.hpp"

namespace accrue {
namespace {

std::string shape_str(const InputSignature& in) {
  if (!in.any_image_size) return in.shape.str();
  return fmt::format("({}, any, any)", in.shape[0]);
}

}  // namespace

std::string ModelSignature::str() const {
  std::string out;
  for (const InputSignature& in : inputs) {
    out += fmt::format("input '{}': {} {}, {}", printable_name(in.name), dtype_name(in.dtype), shape_str(in), in.layout);
    if (in.range) out += fmt::format(", values in [{}, {}]", in.range->first, in.range->second);
    if (in.resized_to) out += fmt::format(", resized inside the model to {}", in.resized_to->str());
    out += "\n";
  }
  for (const OutputSignature& o : outputs) {
    out += fmt::format("output '{}': {} {}", printable_name(o.name), o.shape.str(), o.meaning);
    // Names from a folder or a file: escaped, so that none moves a terminal's cursor.
    for (std::size_t k = 0; k < o.class_names.size(); ++k) out += (k == 0 ? " of " : ", ") + printable_name(o.class_names[k]);
    out += "\n";
  }
  return out;
}

}  // namespace accrue
