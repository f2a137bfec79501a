#include "logs.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "../core/error.hpp"

namespace accrue {

namespace {

// Named values in the order they were first set: `name`'s replaced in place, or added at the end.
template <class T>
void set_named(std::vector<std::pair<std::string, T>>& items, const std::string& name, T value) {
  const auto it = std::find_if(items.begin(), items.end(), [&](const auto& item) { return item.first == name; });
  if (it != items.end()) it->second = std::move(value);
  else items.emplace_back(name, std::move(value));
}

template <class T>
const T* find_named(const std::vector<std::pair<std::string, T>>& items, const std::string& name) {
  const auto it = std::find_if(items.begin(), items.end(), [&](const auto& item) { return item.first == name; });
  return it == items.end() ? nullptr : &it->second;
}

}  // namespace

void Logs::set(const std::string& name, double value) { set_named(items_, name, value); }

std::optional<double> Logs::get(const std::string& name) const {
  const double* v = find_named(items_, name);
  return v != nullptr ? std::optional{*v} : std::nullopt;
}

double Logs::at(const std::string& name) const {
  if (auto v = get(name)) return *v;
  std::string names;
  for (const auto& item : items_) names += (names.empty() ? "" : ", ") + item.first;
  throw ValueError(fmt::format("no value named '{}' in the logs (there are: {})", name, names.empty() ? "none" : names));
}

std::string Logs::str() const {
  std::string s;
  for (const auto& [n, v] : items_) s += fmt::format("{}{}: {:.4f}", s.empty() ? "" : " - ", n, v);
  return s;
}

void Logs::set_table(const std::string& name, CountTable table) { set_named(tables_, name, std::move(table)); }

const CountTable* Logs::table(const std::string& name) const { return find_named(tables_, name); }

void Logs::set_all(const Logs& other, const std::string& prefix) {
  for (const auto& [name, value] : other.items()) set(prefix + name, value);
  for (const auto& [name, table] : other.tables()) set_table(prefix + name, table);
}

std::string CountTable::str() const {
  std::size_t width = 1;
  for (const std::string& l : labels) width = std::max(width, l.size());
  for (const std::int64_t c : counts) width = std::max(width, fmt::formatted_size("{}", c));
  std::string s = fmt::format("{:>{}}", "", width);
  for (const std::string& l : labels) s += fmt::format(" {:>{}}", l, width);
  for (std::size_t r = 0; r < labels.size(); ++r) {
    s += fmt::format("\n{:>{}}", labels[r], width);
    for (std::size_t c = 0; c < labels.size(); ++c) s += fmt::format(" {:>{}}", at(r, c), width);
  }
  return s;
}

void LogDirections::set(const std::string& name, Direction direction) { set_named(items_, name, direction); }

std::optional<Direction> LogDirections::get(const std::string& name) const {
  const Direction* d = find_named(items_, name);
  return d != nullptr ? std::optional{*d} : std::nullopt;
}

std::string LogDirections::str() const {
  std::string s;
  for (const auto& [n, d] : items_) s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", n, d == Direction::higher ? "higher" : "lower");
  return s.empty() ? "none" : s;
}

namespace {

[[noreturn]] void unknown_direction(const std::string& who, const std::string& monitor, const std::string& known) {
  throw ValueError(fmt::format("{}: cannot tell whether '{}' is better higher or lower (the run's metrics say: {}); "
                               "give mode = \"max\" or mode = \"min\"",
                               who, monitor, known));
}

}  // namespace

BestValue::BestValue(std::string monitor, const std::string& mode, double min_delta, std::string who)
    : monitor_(std::move(monitor)), who_(std::move(who)), min_delta_(min_delta) {
  ACCRUE_CHECK(mode == "min" || mode == "max" || mode == "auto", "{}: mode must be \"min\", \"max\" or \"auto\", got \"{}\"",
               who_, mode);
  if (mode == "max") direction_ = Direction::higher;
  if (mode == "min" || (mode == "auto" && (monitor_ == "loss" || monitor_ == "val_loss"))) direction_ = Direction::lower;
  auto_ = mode == "auto";
}

void BestValue::resolve(const LogDirections& directions) {
  if (!auto_) return;
  if (monitor_ == "loss" || monitor_ == "val_loss") return;
  direction_ = directions.get(monitor_);
  if (!direction_) unknown_direction(who_, monitor_, directions.str());
}

std::optional<bool> BestValue::maximizes() const {
  if (!direction_) return std::nullopt;
  return *direction_ == Direction::higher;
}

bool BestValue::improves(double value) const {
  if (!direction_) unknown_direction(who_, monitor_, "nothing yet: the direction is resolved when training begins");
  if (!best_) return true;
  // Keras: min_delta counts towards improvement in the monitored direction.
  return *direction_ == Direction::higher ? value - min_delta_ > *best_ : value + min_delta_ < *best_;
}

std::vector<double> History::operator[](const std::string& name) const {
  std::vector<double> values;
  values.reserve(epochs_.size());
  for (const Logs& e : epochs_) values.push_back(e.at(name));
  return values;
}

std::string History::str() const {
  if (epochs_.empty()) return "History (no epoch)";
  std::string s = fmt::format("History ({} epoch{})", epochs_.size(), epochs_.size() == 1 ? "" : "s");
  for (std::size_t e = 0; e < epochs_.size(); ++e) s += fmt::format("\n  epoch {}: {}", e + 1, epochs_[e].str());
  return s;
}

double History::last(const std::string& name) const {
  ACCRUE_CHECK(!epochs_.empty(), "the history is empty: no epoch has finished");
  return epochs_.back().at(name);
}

}  // namespace accrue
