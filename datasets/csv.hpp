#pragma once
// Tables in CSV files (RFC 4180): fields separated by a delimiter, records by LF or CRLF, a field
// in double quotes may hold the delimiter, line breaks and "" for a quote. Numbers are parsed
// without the locale (std::from_chars). With tf.data's make_csv_dataset's defaults: a header row,
// ',' between fields, an empty field a missing value.
//
//   auto table = datasets::csv("breast_cancer.csv", {.header = false, .skip_rows = 1});
//
// reads scikit-learn's tables as they ship (a first line of counts and class names, then rows
// whose last field is the class).

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "dataset.hpp"

namespace accrue::datasets {

/// A column: its name in the header, or its position (0 first, -1 last).
struct Column {
  std::variant<std::string, int> ref;
  Column(int index) : ref(index) {}                   // NOLINT: -1 reads as the last column
  Column(const char* name) : ref(std::string(name)) {}  // NOLINT: "age" reads as a column
  Column(std::string name) : ref(std::move(name)) {}    // NOLINT
};

/// Feature columns that make one input of their own, named: a wide-and-deep model's numbers and
/// its categories, from one table (Keras's dict of inputs).
struct ColumnGroup {
  /// The model input it goes to.
  std::string name;
  std::vector<Column> columns;
  /// int32 for categories an Embedding looks up (listed in .categorical, with .one_hot = false) or
  /// other whole numbers; float32 otherwise.
  DType dtype = DType::f32;
  /// The columns' fields as text, for a model that looks them up itself (layers::StringLookup,
  /// layers::Hashing), so that its answer does not depend on which categories a file holds: each
  /// field's bytes as int32 (1 to 255), zeros after them, CsvOptions::max_text_bytes wide; a sample
  /// is (columns, max_text_bytes), int32.
  bool text = false;
};

struct CsvOptions {
  /// The column the model predicts; none: every target is 0.
  std::optional<Column> target = Column{-1};
  /// The first row (after skip_rows) names the columns.
  bool header = true;
  char delimiter = ',';
  /// Rows skipped before the header or the data.
  int skip_rows = 0;
  /// The feature columns, in this order; empty: every column but the target.
  std::vector<Column> columns = {};
  /// The features as several inputs, one per group in this order, named after the groups (fit
  /// gives each to the model's input of its name). Instead of `columns`.
  std::vector<ColumnGroup> groups = {};
  /// Feature columns whose values are categories (any text): each becomes one-hot columns, one per
  /// distinct value in sorted order, or with one_hot = false a single column of the value's index.
  std::vector<Column> categorical = {};
  bool one_hot = true;
  /// The target is a class: an int32 index. Labels are all whole numbers from 0 or all names (a
  /// mix is an error naming the line): numbers 0 to K-1 stay as they are; other numbers (1, 2, 3,
  /// or a stray 100000) are numbered in order as classes 0 to (their count - 1), with a warning,
  /// unless num_classes is given; names are numbered in sorted order. csv_classes() says what each
  /// index stands for. Otherwise a float32 value of shape (1,), for regression.
  bool classes = true;
  /// The number of classes: number labels are kept as they are and must be below it. None: the
  /// number of distinct labels.
  std::optional<std::int64_t> num_classes = {};
  /// A column of per-sample weights (Dataset::with_sample_weights): numbers >= 0, left out of the
  /// features; none: unweighted.
  std::optional<Column> sample_weight = {};
  /// The value an empty numeric field takes; none: an empty field is an error naming its place.
  std::optional<float> missing = {};
  /// Fields that stand for a missing value as an empty one does ("NA" as R writes it, "?"): in a
  /// numeric column they take `missing`; in a categorical column they are a category as any text.
  std::vector<std::string> missing_values = {};
  /// The width of text groups' fields: a longer field is an error naming its place.
  std::int64_t max_text_bytes = 32;
  /// Files larger than this are refused before they are read.
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
};

/// The table in `path` as a dataset in memory: inputs (rows, features) float32 (or one input per
/// group), targets (rows,) int32 classes or (rows, 1) float32 values. Throws IoError naming the file, the line and the
/// column (by name when there is a header) for a malformed record, a field that is not a number
/// or is beyond float32's range (1e39), a missing value without a fill, labels that mix numbers
/// and names, or a column that does not exist; and before allocating, when the tensors would not
/// fit in the memory this process may take (a one-hot column of 30,000 categories).
Dataset csv(const std::string& path, const CsvOptions& options = {});

/// The names of the input features csv() makes with `options` (one per one-hot column:
/// "colour=red"), in the order of the inputs' columns.
std::vector<std::string> csv_features(const std::string& path, const CsvOptions& options = {});

/// What each class index of csv()'s targets stands for: the label as the file writes it ("yes",
/// "3"); as many as there are classes (num_classes when given). The model's output size for
/// `options` is its size().
std::vector<std::string> csv_classes(const std::string& path, const CsvOptions& options = {});

}  // namespace accrue::datasets
