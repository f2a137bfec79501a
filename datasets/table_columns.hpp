#pragma once
// Which columns of a table make one input and how their fields were read: what datasets::csv
// records for each input it makes (Dataset::table_columns), fit gives to the model, and the model's
// file keeps (InputSignature::table), so that a program that serves the model reads any file's rows
// as training read them (ModelSignature::csv_options).

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace accrue {

struct TableColumns {
  /// By the header's names; by position (0 first) in a file read without a header.
  std::vector<std::variant<std::string, int>> columns = {};
  /// The fields as UTF-8 bytes, `text_bytes` wide (datasets::ColumnGroup::text); else numbers.
  bool text = false;
  std::int64_t text_bytes = 0;
  /// The number an empty field, or one of `missing_values`, became; none: such a field is an error.
  std::optional<float> missing = {};
  std::vector<std::string> missing_values = {};

  bool operator==(const TableColumns&) const = default;
};

}  // namespace accrue
