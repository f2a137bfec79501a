#include "accrue/datasets/csv.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "accrue/framework/files.hpp"

namespace accrue::datasets {
namespace {

struct Record {
  std::int64_t line;  // where it starts, from 1
  std::vector<std::string> fields;
};

// RFC 4180 records of `text`; completely empty lines are skipped.
class CsvParser {
 public:
  CsvParser(const std::string& path, std::string_view text, char delimiter)
      : path_(path), text_(text), delimiter_(delimiter) {
    if (text_.starts_with("\xEF\xBB\xBF")) text_.remove_prefix(3);  // a UTF-8 byte order mark
  }

  std::vector<Record> records() {
    std::vector<Record> out;
    while (at_ < text_.size()) {
      if (text_[at_] == '\n' || text_.substr(at_).starts_with("\r\n")) {  // an empty line
        at_ += text_[at_] == '\n' ? 1 : 2;
        ++line_;
        continue;
      }
      out.push_back(record());
    }
    return out;
  }

 private:
  [[noreturn]] void fail(std::int64_t line, std::size_t field, const std::string& what) const {
    throw IoError(fmt::format("{}: line {}, column {}: {}", path_, line, field + 1, what));
  }

  Record record() {
    Record r{line_, {}};
    for (;;) {
      r.fields.push_back(field(r));
      if (at_ >= text_.size()) return r;
      const char c = text_[at_];
      if (c == delimiter_) {
        ++at_;
        if (at_ >= text_.size()) {  // a delimiter at the very end: one more, empty field
          r.fields.emplace_back();
          return r;
        }
        continue;
      }
      at_ += c == '\n' ? 1 : 2;  // field() stops only at the delimiter, \n or \r\n
      ++line_;
      return r;
    }
  }

  std::string field(const Record& r) {
    const std::size_t column = r.fields.size();
    if (at_ < text_.size() && text_[at_] == '"') return quoted(r.line, column);
    const std::size_t start = at_;
    while (at_ < text_.size() && text_[at_] != delimiter_ && text_[at_] != '\n' &&
           !text_.substr(at_).starts_with("\r\n")) {
      if (text_[at_] == '"')
        fail(line_, column, "a quote inside a field that does not start with one (quote the whole field and double "
                            "the quotes inside it)");
      ++at_;
    }
    return std::string(text_.substr(start, at_ - start));
  }

  std::string quoted(std::int64_t line, std::size_t column) {
    const std::int64_t opened = line_;
    ++at_;
    std::string out;
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
        fail(line_, column, fmt::format("'{}' after the closing quote of a field (a field ends at its closing quote)",
                                        text_[at_]));
      return out;
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

// The table: its records after skip_rows, the header's names, and where each column is.
struct Table {
  std::string path;
  std::vector<std::string> names;  // empty without a header
  std::vector<Record> rows;
  std::size_t columns = 0;

  std::string column_name(std::size_t c) const {
    return names.empty() ? fmt::format("column {}", c + 1) : fmt::format("column {} ('{}')", c + 1, names[c]);
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
    if (it == names.end())
      throw IoError(fmt::format("{}: there is no column '{}'; the header has: {}", path, name, fmt::join(names, ", ")));
    return static_cast<std::size_t>(it - names.begin());
  }
};

Table read_table(const std::string& path, const CsvOptions& options) {
  require_readable_file(path, "CSV file");
  ACCRUE_CHECK(options.skip_rows >= 0, "csv: skip_rows {} is negative", options.skip_rows);
  ACCRUE_CHECK(options.delimiter != '"' && options.delimiter != '\n' && options.delimiter != '\r',
               "csv: the delimiter cannot be a quote or a line break");
  const std::uint64_t size = std::filesystem::file_size(path);
  if (size > options.max_bytes)
    throw IoError(fmt::format("{}: {} bytes, over the limit of {} (CsvOptions::max_bytes)", path, size, options.max_bytes));
  std::string text(size, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uint64_t>(in.gcount()) != size) throw IoError(fmt::format("{}: could not read it whole", path));
  std::vector<Record> records = CsvParser{path, text, options.delimiter}.records();
  Table t{path, {}, {}, 0};
  std::size_t first = std::min(records.size(), static_cast<std::size_t>(options.skip_rows));
  if (options.header) {
    if (first >= records.size()) throw IoError(fmt::format("{}: no header row (after {} skipped)", path, options.skip_rows));
    t.names = std::move(records[first].fields);
    for (std::string& name : t.names) name = std::string(trimmed(name));
    ++first;
  }
  t.rows.assign(std::make_move_iterator(records.begin() + static_cast<std::ptrdiff_t>(first)),
                std::make_move_iterator(records.end()));
  if (t.rows.empty()) throw IoError(fmt::format("{}: no data rows", path));
  t.columns = options.header ? t.names.size() : t.rows.front().fields.size();
  for (const Record& r : t.rows)
    if (r.fields.size() != t.columns)
      throw IoError(fmt::format("{}: line {} has {} fields, {} {}", path, r.line, r.fields.size(),
                                options.header ? "the header has" : "the first row has", t.columns));
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
  for (const std::size_t c : p.columns) {
    if (!categorical.contains(c)) {
      p.categories.emplace_back();
      continue;
    }
    std::set<std::string> values;
    for (const Record& r : t.rows) values.insert(std::string(trimmed(r.fields[c])));
    p.categories.emplace_back(std::vector<std::string>(values.begin(), values.end()));
  }
  return p;
}

Tensor targets_of(const Table& t, std::size_t c, const CsvOptions& options) {
  const auto n = static_cast<std::int64_t>(t.rows.size());
  for (const Record& r : t.rows)
    if (trimmed(r.fields[c]).empty()) t.fail(r, c, "the target is missing");
  if (!options.classes) {
    std::vector<float> y;
    for (const Record& r : t.rows) {
      const auto v = number(r.fields[c]);
      if (!v) t.fail(r, c, fmt::format("the target '{}' is not a number (set .classes for class names)", r.fields[c]));
      y.push_back(static_cast<float>(*v));
    }
    return Tensor::from(y, {n, 1});
  }
  const bool numeric = std::all_of(t.rows.begin(), t.rows.end(), [&](const Record& r) { return number(r.fields[c]).has_value(); });
  std::vector<std::int32_t> y;
  if (numeric) {
    for (const Record& r : t.rows) {
      const double v = *number(r.fields[c]);
      if (v < 0 || v != std::floor(v) || v > 1e9)
        t.fail(r, c, fmt::format("the class '{}' is not a whole number from 0 (set .classes = false for values)", r.fields[c]));
      y.push_back(static_cast<std::int32_t>(v));
    }
  } else {
    std::map<std::string, std::int32_t> index;
    for (const Record& r : t.rows) index.emplace(std::string(trimmed(r.fields[c])), 0);
    std::int32_t k = 0;
    for (auto& [name, i] : index) i = k++;
    for (const Record& r : t.rows) y.push_back(index.at(std::string(trimmed(r.fields[c]))));
  }
  return Tensor::from(y, {n});
}

std::vector<float> weights_of(const Table& t, std::size_t c) {
  std::vector<float> w;
  for (const Record& r : t.rows) {
    const auto v = number(r.fields[c]);
    if (!v || !std::isfinite(*v) || *v < 0)
      t.fail(r, c, fmt::format("the sample weight '{}' is not a number >= 0", r.fields[c]));
    w.push_back(static_cast<float>(*v));
  }
  return w;
}

}  // namespace

Dataset csv(const std::string& path, const CsvOptions& options) {
  const Table t = read_table(path, options);
  const NonFeatures other = non_features(t, options);
  const FeaturePlan p = plan_features(t, options, other);
  std::size_t width = 0;
  for (const auto& categories : p.categories) width += categories && options.one_hot ? categories->size() : 1;
  ACCRUE_CHECK(width > 0, "{}: no feature columns are left besides the target", path);
  const auto n = static_cast<std::int64_t>(t.rows.size());
  std::vector<float> x(static_cast<std::size_t>(n) * width, 0.0f);
  for (std::size_t row = 0; row < t.rows.size(); ++row) {
    const Record& r = t.rows[row];
    float* out = &x[row * width];
    for (std::size_t k = 0; k < p.columns.size(); ++k) {
      const std::size_t c = p.columns[k];
      if (const auto& categories = p.categories[k]) {
        const auto at = std::lower_bound(categories->begin(), categories->end(), std::string(trimmed(r.fields[c])));
        const auto index = static_cast<std::size_t>(at - categories->begin());
        if (options.one_hot) {
          out[index] = 1.0f;
          out += categories->size();
        } else {
          *out++ = static_cast<float>(index);
        }
        continue;
      }
      const std::string_view field = trimmed(r.fields[c]);
      if (field.empty()) {
        if (!options.missing) t.fail(r, c, "the value is missing (give CsvOptions::missing a value to fill it with)");
        *out++ = *options.missing;
        continue;
      }
      const auto v = number(field);
      if (!v) t.fail(r, c, fmt::format("'{}' is not a number (list the column in .categorical if it holds categories)", field));
      *out++ = static_cast<float>(*v);
    }
  }
  Tensor y = other.target ? targets_of(t, *other.target, options) : Tensor::zeros({n}, {.dtype = DType::i32});
  const Dataset data{Tensor::from(x, {n, static_cast<std::int64_t>(width)}), y,
                     std::filesystem::path(path).filename().string()};
  return other.weight ? data.with_sample_weights(weights_of(t, *other.weight)) : data;
}

std::vector<std::string> csv_features(const std::string& path, const CsvOptions& options) {
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

}  // namespace accrue::datasets
