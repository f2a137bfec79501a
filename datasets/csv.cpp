#include "csv.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "../framework/core/files.hpp"
#include "../framework/core/log.hpp"
#include "../framework/core/memory.hpp"
#include "../framework/core/utf8.hpp"
#include "../framework/ops/ops.hpp"

namespace accrue::datasets {
namespace {

// One record: its first `count` fields (the vector keeps more, to reuse their storage).
struct Record {
  std::int64_t line = 0;  // where it starts, from 1
  std::size_t count = 0;
  std::vector<std::string> fields;
  std::string& next_field() {
    if (count == fields.size()) fields.emplace_back();
    return fields[count++];
  }
  const std::string& operator[](std::size_t c) const { return fields[c]; }
};

// RFC 4180 records of `text`, one at a time into a reused record (a file is read twice, once to
// learn its shape and once to fill the tensors, so that its fields never exist all at once: held
// as strings they took about 20 times the file); completely empty lines are skipped.
class CsvParser {
 public:
  CsvParser(const std::string& path, std::string_view text, char delimiter)
      : path_(path), text_(text), delimiter_(delimiter) {
    if (text_.starts_with("\xEF\xBB\xBF")) text_.remove_prefix(3);  // a UTF-8 byte order mark
  }

  // The next record into `r` (its fields' storage reused); false at the end of the text.
  bool next(Record& r) {
    while (at_ < text_.size() && (text_[at_] == '\n' || text_.substr(at_).starts_with("\r\n"))) {  // empty lines
      at_ += text_[at_] == '\n' ? 1 : 2;
      ++line_;
    }
    if (at_ >= text_.size()) return false;
    record(r);
    return true;
  }

 private:
  [[noreturn]] void fail(std::int64_t line, std::size_t field, const std::string& what) const {
    throw IoError(fmt::format("{}: line {}, column {}: {}", path_, line, field + 1, what));
  }

  void record(Record& r) {
    r.line = line_;
    r.count = 0;
    for (;;) {
      field(r);
      if (at_ >= text_.size()) return;
      const char c = text_[at_];
      if (c == delimiter_) {
        ++at_;
        if (at_ >= text_.size()) {  // a delimiter at the very end: one more, empty field
          r.next_field().clear();
          return;
        }
        continue;
      }
      at_ += c == '\n' ? 1 : 2;  // field() stops only at the delimiter, \n or \r\n
      ++line_;
      return;
    }
  }

  void field(Record& r) {
    const std::size_t column = r.count;
    std::string& out = r.next_field();
    out.clear();
    if (at_ < text_.size() && text_[at_] == '"') return quoted(r.line, column, out);
    const std::size_t start = at_;
    while (at_ < text_.size() && text_[at_] != delimiter_ && text_[at_] != '\n' &&
           !text_.substr(at_).starts_with("\r\n")) {
      if (text_[at_] == '"')
        fail(line_, column, "a quote inside a field that does not start with one (quote the whole field and double "
                            "the quotes inside it)");
      ++at_;
    }
    out.assign(text_.substr(start, at_ - start));
  }

  void quoted(std::int64_t line, std::size_t column, std::string& out) {
    const std::int64_t opened = line_;
    ++at_;
    for (;;) {
      if (at_ >= text_.size())
        fail(line, column, fmt::format("the quoted field opened on line {} is not closed before the end of the file", opened));
      const char c = text_[at_++];
      if (c == '\n') ++line_;
      if (c != '"') {
        out += c;
        continue;
      }
      if (at_ < text_.size() && text_[at_] == '"') {  // "" stands for one quote
        out += '"';
        ++at_;
        continue;
      }
      if (at_ < text_.size() && text_[at_] != delimiter_ && text_[at_] != '\n' && !text_.substr(at_).starts_with("\r\n"))
        fail(line_, column, fmt::format("{} after the closing quote of a field (a field ends at its closing quote)",
                                        printable_excerpt(text_.substr(at_, 1))));
      return;
    }
  }

  const std::string& path_;
  std::string_view text_;
  char delimiter_;
  std::size_t at_ = 0;
  std::int64_t line_ = 1;
};

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<double> number(std::string_view s) {
  s = trimmed(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || error != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The table: the file's text, its header's names and shape. Its rows are parsed again each time
// they are walked (each_row), so that the fields never exist all at once.
struct Table {
  std::string path;
  std::string text;
  const CsvOptions& options;
  std::vector<std::string> names;  // empty without a header
  std::size_t columns = 0;
  std::int64_t rows = 0;

  std::string column_name(std::size_t c) const {
    return names.empty() ? fmt::format("column {}", c + 1) : fmt::format("column {} ('{}')", c + 1, printable_name(names[c]));
  }
  [[noreturn]] void fail(const Record& r, std::size_t c, const std::string& what) const {
    throw IoError(fmt::format("{}: line {}, {}: {}", path, r.line, column_name(c), what));
  }
  std::size_t index_of(const Column& column) const {
    if (const int* i = std::get_if<int>(&column.ref)) {
      const std::int64_t k = *i < 0 ? static_cast<std::int64_t>(columns) + *i : *i;
      if (k < 0 || k >= static_cast<std::int64_t>(columns))
        throw IoError(fmt::format("{}: there is no column {} (the table has {} columns)", path, *i, columns));
      return static_cast<std::size_t>(k);
    }
    const std::string& name = std::get<std::string>(column.ref);
    if (names.empty())
      throw IoError(fmt::format("{}: column '{}': the file is read without a header; name columns by position", path, name));
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      std::string all;
      for (const std::string& n : names) all += (all.empty() ? "" : ", ") + printable_name(n);
      throw IoError(fmt::format("{}: there is no column '{}'; the header has: {}", path, name, all));
    }
    return static_cast<std::size_t>(it - names.begin());
  }
  // Calls f(record) for each data row, in order.
  template <class F>
  void each_row(F f) const {
    CsvParser parser{path, text, options.delimiter};
    Record r;
    for (std::int64_t k = 0; k < first_row_; ++k) parser.next(r);
    while (parser.next(r)) f(r);
  }

  std::int64_t first_row_ = 0;  // records before the data: skipped rows and the header
};

Table read_table(const std::string& path, const CsvOptions& options) {
  require_readable_file(path, "CSV file");
  ACCRUE_CHECK(options.skip_rows >= 0, "csv: skip_rows {} is negative", options.skip_rows);
  ACCRUE_CHECK(options.delimiter != '"' && options.delimiter != '\n' && options.delimiter != '\r',
               "csv: the delimiter cannot be a quote or a line break");
  const std::uint64_t size = std::filesystem::file_size(path);
  if (size > options.max_bytes)
    throw IoError(fmt::format("{}: {} bytes, over the limit of {} (CsvOptions::max_bytes)", path, size, options.max_bytes));
  require_memory_for_file(size, path);
  Table t{path, std::string(size, '\0'), options, {}, 0, 0};
  std::ifstream in(path, std::ios::binary);
  in.read(t.text.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uint64_t>(in.gcount()) != size) throw IoError(fmt::format("{}: could not read it whole", path));
  // The shape: skipped rows, the header, then every record's field count against the first's.
  CsvParser parser{path, t.text, options.delimiter};
  Record r;
  bool more = true;
  for (int k = 0; k < options.skip_rows && (more = parser.next(r)); ++k) ++t.first_row_;
  if (options.header) {
    if (!more || !parser.next(r)) throw IoError(fmt::format("{}: no header row (after {} skipped)", path, options.skip_rows));
    for (std::size_t c = 0; c < r.count; ++c) t.names.emplace_back(trimmed(r[c]));
    t.columns = t.names.size();
    ++t.first_row_;
  }
  while (more && parser.next(r)) {
    if (t.rows == 0 && !options.header) t.columns = r.count;
    if (r.count != t.columns)
      throw IoError(fmt::format("{}: line {} has {} fields, {} {}", path, r.line, r.count,
                                options.header ? "the header has" : "the first row has", t.columns));
    ++t.rows;
  }
  if (t.rows == 0) throw IoError(fmt::format("{}: no data rows", path));
  return t;
}

// What the inputs' columns are: the table's columns in order, numeric or categorical.
struct FeaturePlan {
  std::vector<std::size_t> columns;
  std::vector<std::optional<std::vector<std::string>>> categories;  // per column, sorted values
};

// The target's and the sample weights' columns, which are not features.
struct NonFeatures {
  std::optional<std::size_t> target, weight;
};

NonFeatures non_features(const Table& t, const CsvOptions& options) {
  NonFeatures n;
  if (options.target) n.target = t.index_of(*options.target);
  if (options.sample_weight) n.weight = t.index_of(*options.sample_weight);
  if (n.target && n.target == n.weight)
    throw IoError(fmt::format("{}: {} is the target and the sample weights", t.path, t.column_name(*n.target)));
  return n;
}

FeaturePlan plan_features(const Table& t, const CsvOptions& options, const NonFeatures& other) {
  FeaturePlan p;
  if (options.columns.empty()) {
    for (std::size_t c = 0; c < t.columns; ++c)
      if (c != other.target && c != other.weight) p.columns.push_back(c);
  } else {
    for (const Column& c : options.columns) {
      const std::size_t k = t.index_of(c);
      if (k == other.target || k == other.weight)
        throw IoError(fmt::format("{}: {} is the {} and a feature", t.path, t.column_name(k),
                                  k == other.target ? "target" : "sample weights"));
      p.columns.push_back(k);
    }
  }
  std::set<std::size_t> categorical;
  for (const Column& c : options.categorical) categorical.insert(t.index_of(c));
  std::map<std::size_t, std::set<std::string>> values;
  for (const std::size_t c : p.columns)
    if (categorical.contains(c)) values[c];
  if (!values.empty())
    t.each_row([&](const Record& r) {
      for (auto& [c, seen] : values) seen.emplace(trimmed(r[c]));
    });
  for (const std::size_t c : p.columns) {
    if (!categorical.contains(c)) {
      p.categories.emplace_back();
      continue;
    }
    const std::set<std::string>& seen = values.at(c);
    p.categories.emplace_back(std::vector<std::string>(seen.begin(), seen.end()));
  }
  return p;
}

// `field` of column c as a float32; IoError naming its place for a number beyond float32's range
// (1e39 would become infinity, and the loss NaN a batch later). `what` says what the column is.
std::optional<float> float32_of(const Table& t, const Record& r, std::size_t c, std::string_view field, const char* what) {
  const std::optional<double> v = number(field);
  if (!v) return std::nullopt;
  if (std::abs(*v) > static_cast<double>(std::numeric_limits<float>::max()))
    t.fail(r, c, fmt::format("{} {} is beyond float32's range (about 3.4e38)", what, printable_excerpt(trimmed(field))));
  return static_cast<float>(*v);
}

// How class labels become indices: whole numbers as they are (or, when sparse and the number of
// classes was not given, in numeric order), names in sorted order.
struct ClassPlan {
  bool numeric = true;
  std::int64_t count = 0;                       // the number of classes
  std::map<std::string, std::int32_t> by_name;  // names
  std::map<std::int64_t, std::int32_t> by_number;  // numbers renumbered; empty: kept
  std::vector<std::string> names;               // what each index stands for

  std::int32_t index(std::string_view label) const {
    if (!numeric) return by_name.at(std::string(label));
    const auto v = static_cast<std::int64_t>(*number(label));
    return by_number.empty() ? static_cast<std::int32_t>(v) : by_number.at(v);
  }
};

ClassPlan plan_classes(const Table& t, std::size_t c, const CsvOptions& options) {
  std::set<std::int64_t> numbers;
  std::set<std::string> names;
  // The first label, by which the others' kind is judged: numbers stay numbers, and one name
  // among them is an error rather than a reason to sort every label as text.
  std::optional<bool> first_numeric;
  std::int64_t first_line = 0;
  std::string first;
  t.each_row([&](const Record& r) {
    const std::string_view label = trimmed(r[c]);
    if (label.empty()) t.fail(r, c, "the target is missing");
    const std::optional<double> v = number(label);
    if (!first_numeric) {
      first_numeric = v.has_value();
      first_line = r.line;
      first = printable_excerpt(label);
    }
    if (v.has_value() != *first_numeric)
      t.fail(r, c, fmt::format("the class {} is {}, but the first label ({} on line {}) is {}: classes are all whole "
                               "numbers or all names",
                               printable_excerpt(label), v ? "a number" : "not a number", first, first_line,
                               *first_numeric ? "a number" : "a name"));
    if (!v) {
      names.emplace(label);
      return;
    }
    if (*v < 0 || *v != std::floor(*v) || *v > 1e9)
      t.fail(r, c, fmt::format("the class {} is not a whole number from 0 (set .classes = false for values)",
                               printable_excerpt(label)));
    if (options.num_classes && *v >= static_cast<double>(*options.num_classes))
      t.fail(r, c, fmt::format("the class {} is not below num_classes = {}", printable_excerpt(label), *options.num_classes));
    numbers.insert(static_cast<std::int64_t>(*v));
  });
  ClassPlan p;
  p.numeric = *first_numeric;
  if (!p.numeric) {
    for (const std::string& n : names) {
      p.by_name.emplace(n, static_cast<std::int32_t>(p.names.size()));
      p.names.push_back(n);
    }
    p.count = static_cast<std::int64_t>(names.size());
    return p;
  }
  const std::int64_t largest = *numbers.rbegin();
  if (options.num_classes || largest + 1 == static_cast<std::int64_t>(numbers.size())) {
    p.count = options.num_classes.value_or(largest + 1);
    for (std::int64_t k = 0; k < p.count; ++k) p.names.push_back(std::to_string(k));
    return p;
  }
  // Sparse labels (1, 2, 3; or 0, 1 and a stray 100000): as many classes as there are labels,
  // numbered in order, and said, since the model's outputs then are not the labels' numbers.
  std::string mapping;
  for (const std::int64_t v : numbers) {
    const auto index = static_cast<std::int32_t>(p.names.size());
    p.by_number.emplace(v, index);
    p.names.push_back(std::to_string(v));
    if (index < 8) mapping += fmt::format("{}{} -> {}", index == 0 ? "" : ", ", v, index);
  }
  p.count = static_cast<std::int64_t>(numbers.size());
  log::warning("{}: its {} distinct class labels are not 0 to {} (the largest is {}); they become classes 0 to {} in "
               "numeric order: {}{}. Give CsvOptions::num_classes to keep the labels as they are",
               t.path, p.count, p.count - 1, largest, p.count - 1, mapping, p.count > 8 ? ", ..." : "");
  return p;
}

// Whether `field` stands for a missing value: empty, or one of options.missing_values.
bool is_missing(std::string_view field, const CsvOptions& options) {
  return field.empty() ||
         std::find(options.missing_values.begin(), options.missing_values.end(), field) != options.missing_values.end();
}

// "the value is missing", or "the value "NA" is missing" for a marker.
std::string missing_str(const char* what, std::string_view field) {
  return field.empty() ? fmt::format("the {} is missing", what) : fmt::format("the {} {} is missing", what, printable_excerpt(field));
}

// The bytes the tensors will take; IoError before any is allocated when this process cannot hold
// them, naming a one-hot column of many categories when that is why.
void check_memory(const Table& t, const FeaturePlan& p, std::size_t width, const CsvOptions& options) {
  const auto rows = static_cast<std::size_t>(t.rows);
  const std::size_t bytes = rows * (width + 3) * sizeof(float);
  try {
    require_memory_for_file(bytes, fmt::format("{}: {} rows of {} features", t.path, rows, width));
  } catch (IoError& e) {
    std::size_t most = 0, at = 0;
    for (std::size_t k = 0; k < p.columns.size(); ++k)
      if (p.categories[k] && p.categories[k]->size() > most) most = p.categories[k]->size(), at = p.columns[k];
    if (options.one_hot && most > 256)
      e.append(fmt::format("; {} has {} categories, each a column of its own: .one_hot = false gives one column of "
                           "their index",
                           t.column_name(at), most));
    throw;
  }
}

// The features of `options.groups` as their inputs: the columns of each (one-hot ones as wide as
// their categories) cut out of `features`, in int32 where the group asks, checked whole.
std::vector<Tensor> group_inputs(const Table& t, const FeaturePlan& p, const Tensor& features, const CsvOptions& options) {
  std::vector<const ColumnGroup*> groups;
  for (const ColumnGroup& g : options.groups)
    if (!g.text) groups.push_back(&g);
  if (groups.empty()) return {};
  std::vector<std::int64_t> widths;
  std::size_t k = 0;
  for (const ColumnGroup* g : groups) {
    std::int64_t width = 0;
    for (std::size_t end = k + g->columns.size(); k < end; ++k)
      width += p.categories[k] && options.one_hot ? static_cast<std::int64_t>(p.categories[k]->size()) : 1;
    widths.push_back(width);
  }
  std::vector<Tensor> parts = ops::split(features, widths, 1);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const ColumnGroup& group = *groups[i];
    if (group.dtype == DType::f32) continue;
    ACCRUE_CHECK(group.dtype == DType::i32, "{}: group '{}' asks for {}; groups are float32 or int32", t.path, group.name,
                 dtype_name(group.dtype));
    const std::vector<float> values = parts[i].to_vector();
    std::vector<std::int32_t> whole(values.size());
    for (std::size_t v = 0; v < values.size(); ++v) {
      if (values[v] != std::trunc(values[v]) || std::abs(values[v]) > 16777216.0f)
        throw IoError(fmt::format("{}: group '{}' is read as int32 but row {} holds {} (int32 groups take categories "
                                  "with .one_hot = false, or whole numbers)",
                                  t.path, group.name, v / static_cast<std::size_t>(widths[i]) + 1, values[v]));
      whole[v] = static_cast<std::int32_t>(values[v]);
    }
    parts[i] = Tensor::from(whole, parts[i].shape(), {.dtype = DType::i32, .category = MemoryCategory::data});
  }
  return parts;
}

// The options with the columns of every group as the features, in order.
CsvOptions with_group_columns(const std::string& path, const CsvOptions& options) {
  if (options.groups.empty()) return options;
  ACCRUE_CHECK(options.columns.empty(), "csv {}: give .columns or .groups, not both (the groups name the features)", path);
  CsvOptions out = options;
  for (const ColumnGroup& g : options.groups) {
    ACCRUE_CHECK(!g.columns.empty(), "csv {}: group '{}' has no columns", path, g.name);
    if (!g.text) out.columns.insert(out.columns.end(), g.columns.begin(), g.columns.end());
  }
  return out;
}

// Whether the features are numbers at all: not when every group is text.
bool has_numeric_features(const CsvOptions& options) {
  return options.groups.empty() || std::any_of(options.groups.begin(), options.groups.end(), [](const ColumnGroup& g) { return !g.text; });
}

// A text group's fields as bytes: (rows, columns, max_text_bytes) int32, zeros after each field.
Tensor text_input(const Table& t, const ColumnGroup& g, const NonFeatures& other, const CsvOptions& options) {
  ACCRUE_CHECK(options.max_text_bytes >= 1 && options.max_text_bytes <= 4096, "csv {}: max_text_bytes {} is not 1 to 4096",
               t.path, options.max_text_bytes);
  std::vector<std::size_t> columns;
  for (const Column& c : g.columns) {
    const std::size_t k = t.index_of(c);
    if (k == other.target || k == other.weight)
      throw IoError(fmt::format("{}: {} is the {} and text of group '{}'", t.path, t.column_name(k),
                                k == other.target ? "target" : "sample weights", g.name));
    columns.push_back(k);
  }
  const std::int64_t width = options.max_text_bytes, k = static_cast<std::int64_t>(columns.size());
  require_memory_for_file(static_cast<std::uint64_t>(t.rows * k * width) * sizeof(std::int32_t),
                          fmt::format("{}: text group '{}'", t.path, g.name));
  Tensor out = Tensor::zeros({t.rows, k, width}, {.dtype = DType::i32, .category = MemoryCategory::data});
  auto* bytes = static_cast<std::int32_t*>(out.data_ptr());
  std::int64_t row = 0;
  t.each_row([&](const Record& r) {
    for (std::int64_t j = 0; j < k; ++j) {
      const std::string_view field = trimmed(r[columns[static_cast<std::size_t>(j)]]);
      if (static_cast<std::int64_t>(field.size()) > width)
        t.fail(r, columns[static_cast<std::size_t>(j)], fmt::format("the text {} is {} bytes, more than max_text_bytes ({})",
                                                                     printable_excerpt(field), field.size(), width));
      std::int32_t* at = bytes + (row * k + j) * width;
      for (std::size_t b = 0; b < field.size(); ++b) {
        if (field[b] == '\0') t.fail(r, columns[static_cast<std::size_t>(j)], "the text holds a NUL byte");
        at[b] = static_cast<unsigned char>(field[b]);
      }
    }
    ++row;
  });
  return out;
}

// Every group's input in the groups' order: the numeric ones cut from `features`, the text ones read.
std::vector<Tensor> grouped_inputs(const Table& t, const FeaturePlan& p, const Tensor& features, const NonFeatures& other,
                                   const CsvOptions& options) {
  std::vector<Tensor> numeric = features.defined() ? group_inputs(t, p, features, options) : std::vector<Tensor>{};
  std::vector<Tensor> out;
  std::size_t next = 0;
  for (const ColumnGroup& g : options.groups) out.push_back(g.text ? text_input(t, g, other, options) : numeric.at(next++));
  return out;
}

// How each input's fields were read (Dataset::table_columns), so that a model's file can say it;
// none for an input with categorical columns, whose numbering comes from this file's values.
std::vector<std::optional<TableColumns>> table_columns(const Table& t, const FeaturePlan& p, const CsvOptions& options) {
  const auto read_as = [&](const std::vector<std::size_t>& columns, bool text) {
    TableColumns out{.text = text, .text_bytes = text ? options.max_text_bytes : 0, .missing = options.missing,
                     .missing_values = options.missing_values};
    for (const std::size_t c : columns) {
      if (t.names.empty()) out.columns.emplace_back(static_cast<int>(c));
      else out.columns.emplace_back(t.names[c]);
    }
    return out;
  };
  std::set<std::size_t> categorical;
  for (const Column& c : options.categorical) categorical.insert(t.index_of(c));
  const auto numbers = [&](const std::vector<std::size_t>& columns) -> std::optional<TableColumns> {
    if (std::any_of(columns.begin(), columns.end(), [&](std::size_t c) { return categorical.contains(c); })) return {};
    return read_as(columns, false);
  };
  if (options.groups.empty()) return {numbers(p.columns)};
  std::vector<std::optional<TableColumns>> out;
  for (const ColumnGroup& g : options.groups) {
    std::vector<std::size_t> columns;
    for (const Column& c : g.columns) columns.push_back(t.index_of(c));
    out.push_back(g.text ? std::optional{read_as(columns, true)} : numbers(columns));
  }
  return out;
}

}  // namespace

Dataset csv(const std::string& path, const CsvOptions& given) {
  const CsvOptions options = with_group_columns(path, given);
  const Table t = read_table(path, options);
  const NonFeatures other = non_features(t, options);
  const bool numbers = has_numeric_features(options);
  const FeaturePlan p = numbers ? plan_features(t, options, other) : FeaturePlan{};
  std::size_t width = 0;
  for (const auto& categories : p.categories) width += categories && options.one_hot ? categories->size() : 1;
  ACCRUE_CHECK(width > 0 || !numbers, "{}: no feature columns are left besides the target", path);
  ACCRUE_CHECK(!options.num_classes || *options.num_classes >= 1, "csv: num_classes {} is not at least 1", *options.num_classes);
  const std::optional<ClassPlan> classes =
      other.target && options.classes ? std::optional{plan_classes(t, *other.target, options)} : std::nullopt;
  check_memory(t, p, width, options);
  const auto n = t.rows;
  // The inputs are written where the dataset keeps them: a copy would double the largest part.
  Tensor inputs = Tensor::zeros({n, static_cast<std::int64_t>(width)}, {.category = MemoryCategory::data});
  float* const x = static_cast<float*>(inputs.data_ptr());
  std::vector<float> values, weights;
  std::vector<std::int32_t> labels;
  std::size_t row = 0;
  t.each_row([&](const Record& r) {
    float* out = &x[row++ * width];
    for (std::size_t k = 0; k < p.columns.size(); ++k) {
      const std::size_t c = p.columns[k];
      if (const auto& categories = p.categories[k]) {
        const auto at = std::lower_bound(categories->begin(), categories->end(), trimmed(r[c]));
        const auto index = static_cast<std::size_t>(at - categories->begin());
        if (options.one_hot) {
          out[index] = 1.0f;
          out += categories->size();
        } else {
          *out++ = static_cast<float>(index);
        }
        continue;
      }
      const std::string_view field = trimmed(r[c]);
      if (is_missing(field, options)) {
        if (!options.missing)
          t.fail(r, c, fmt::format("{} (give CsvOptions::missing a value to fill it with)", missing_str("value", field)));
        *out++ = *options.missing;
        continue;
      }
      const std::optional<float> v = float32_of(t, r, c, field, "the value");
      if (!v)
        t.fail(r, c, fmt::format("{} is not a number (list the column in .categorical if it holds categories)",
                                 printable_excerpt(field)));
      *out++ = *v;
    }
    if (classes) labels.push_back(classes->index(trimmed(r[*other.target])));
    if (other.target && !options.classes) {
      const std::string_view field = trimmed(r[*other.target]);
      if (is_missing(field, options)) t.fail(r, *other.target, missing_str("target", field));
      const std::optional<float> v = float32_of(t, r, *other.target, field, "the target");
      if (!v)
        t.fail(r, *other.target, fmt::format("the target {} is not a number (set .classes for class names)", printable_excerpt(field)));
      values.push_back(*v);
    }
    if (other.weight) {
      const std::optional<float> v = float32_of(t, r, *other.weight, r[*other.weight], "the sample weight");
      if (!v || *v < 0)
        t.fail(r, *other.weight, fmt::format("the sample weight {} is not a number >= 0", printable_excerpt(trimmed(r[*other.weight]))));
      weights.push_back(*v);
    }
  });
  const Tensor y = classes            ? Tensor::from(labels, {n})
                   : other.target     ? Tensor::from(values, {n, 1})
                                      : Tensor::zeros({n}, {.dtype = DType::i32});
  const std::string name = std::filesystem::path(path).filename().string();
  Dataset data{std::move(inputs), y, name};
  if (!options.groups.empty()) {
    std::vector<std::string> names;
    for (const ColumnGroup& g : options.groups) names.push_back(g.name);
    data = Dataset{std::make_shared<const TensorSource>(grouped_inputs(t, p, numbers ? data.inputs() : Tensor{}, other, options),
                                                        std::vector<Tensor>{y},
                                                        name, std::move(names))};
  }
  if (classes) data = data.with_class_names(classes->names);
  data = data.with_table_columns(table_columns(t, p, options));
  return other.weight ? data.with_sample_weights(std::move(weights)) : data;
}

std::vector<std::string> csv_features(const std::string& path, const CsvOptions& given) {
  const CsvOptions options = with_group_columns(path, given);
  if (!has_numeric_features(options)) return {};
  const Table t = read_table(path, options);
  const FeaturePlan p = plan_features(t, options, non_features(t, options));
  std::vector<std::string> out;
  for (std::size_t k = 0; k < p.columns.size(); ++k) {
    const std::string name = t.names.empty() ? fmt::format("column {}", p.columns[k] + 1) : t.names[p.columns[k]];
    if (p.categories[k] && options.one_hot)
      for (const std::string& value : *p.categories[k]) out.push_back(name + "=" + value);
    else
      out.push_back(name);
  }
  return out;
}

std::vector<std::string> csv_classes(const std::string& path, const CsvOptions& given) {
  const CsvOptions options = with_group_columns(path, given);
  const Table t = read_table(path, options);
  const NonFeatures other = non_features(t, options);
  ACCRUE_CHECK(other.target && options.classes, "csv_classes: {} is read without class targets (.target, .classes)", path);
  return plan_classes(t, *other.target, options).names;
}

}  // namespace accrue::datasets
