// ModelSignature's text, as summary() shows it (Model::signature is in model_signature.cpp).

#include "signature.hpp"

#include <fmt/format.h>

#include "../datasets/csv.hpp"
#include "../framework/core/error.hpp"
#include "../framework/core/utf8.hpp"

namespace accrue {
namespace {

std::string shape_str(const InputSignature& in) {
  if (!in.any_image_size) return in.shape.str();
  return fmt::format("({}, any, any)", in.shape[0]);
}

// "'age', 'fare'", or "3, 4" for columns by position.
std::string columns_str(const TableColumns& t) {
  std::string out;
  for (const auto& c : t.columns) {
    if (!out.empty()) out += ", ";
    if (const std::string* name = std::get_if<std::string>(&c)) out += "'" + printable_name(*name) + "'";
    else out += std::to_string(std::get<int>(c));
  }
  return out;
}

datasets::Column column_of(const std::variant<std::string, int>& c) {
  if (const std::string* name = std::get_if<std::string>(&c)) return {*name};
  return {std::get<int>(c)};
}

}  // namespace

std::string ModelSignature::str() const {
  std::string out;
  for (const InputSignature& in : inputs) {
    out += fmt::format("input '{}': {} {}, {}", printable_name(in.name), in.uint8 ? "uint8" : dtype_name(in.dtype),
                       shape_str(in), in.layout);
    if (in.range) out += fmt::format(", values in [{}, {}]", in.range->first, in.range->second);
    if (in.resized_to) out += fmt::format(", resized inside the model to {}", in.resized_to->str());
    if (in.table)
      out += fmt::format(", from column{} {}{}", in.table->columns.size() == 1 ? "" : "s", columns_str(*in.table),
                         in.table->text ? " as text" : "");
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

// Every input's columns as a group of its own; the options every table states alike (they came
// from one file's reading) taken from the first.
datasets::CsvOptions ModelSignature::csv_options() const {
  datasets::CsvOptions options{.target = std::nullopt};
  bool first = true;
  for (const InputSignature& in : inputs) {
    ACCRUE_CHECK(in.table.has_value(),
                 "the model's input '{}' does not say which table columns it is read from: a model trained on "
                 "datasets::csv records them, except for an input with .categorical columns (their numbering comes from "
                 "the training file; read such columns with .text and look them up inside the model with StringLookup)",
                 printable_name(in.name));
    const TableColumns& t = *in.table;
    datasets::ColumnGroup group{.name = in.name, .dtype = in.dtype, .text = t.text};
    for (const auto& c : t.columns) group.columns.push_back(column_of(c));
    options.groups.push_back(std::move(group));
    if (first) {
      options.header = std::holds_alternative<std::string>(t.columns.front());
      options.missing = t.missing;
      options.missing_values = t.missing_values;
    }
    if (t.text) options.max_text_bytes = t.text_bytes;
    first = false;
  }
  return options;
}

}  // namespace accrue
