// ModelSignature's text, as summary() shows it (Model::signature is in model_signature.cpp).

#include "signature.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

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
    out += fmt::format("input '{}': {} {}, {}", in.name, dtype_name(in.dtype), shape_str(in), in.layout);
    if (in.range) out += fmt::format(", values in [{}, {}]", in.range->first, in.range->second);
    if (in.resized_to) out += fmt::format(", resized inside the model to {}", in.resized_to->str());
    out += "\n";
  }
  for (const OutputSignature& o : outputs) {
    out += fmt::format("output '{}': {} {}", o.name, o.shape.str(), o.meaning);
    if (!o.class_names.empty()) out += fmt::format(" of {}", fmt::join(o.class_names, ", "));
    out += "\n";
  }
  return out;
}

}  // namespace accrue
