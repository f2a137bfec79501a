#pragma once
// Named values of a batch, an epoch or an evaluation, in the order they were recorded: "loss",
// the metrics, then "val_loss" and the validation metrics, as Keras logs them.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../core/memory.hpp"
#include "../core/printable.hpp"

namespace accrue {

/// What a metric reports as a table of counts instead of one value (metrics::ConfusionMatrix):
/// rows and columns named by `labels`, the counts row by row.
struct CountTable {
  std::vector<std::string> labels;
  std::vector<std::int64_t> counts;
  std::int64_t at(std::size_t row, std::size_t column) const { return counts[row * labels.size() + column]; }
  /// The counts right-aligned under a header of the labels, a row per line, each led by its label.
  std::string str() const;
  friend bool operator==(const CountTable&, const CountTable&) = default;
};

class Logs {
 public:
  /// Sets `name` (replacing an earlier value, keeping its position).
  void set(const std::string& name, double value);
  std::optional<double> get(const std::string& name) const;
  /// The value of `name`; throws ValueError listing the names there are.
  double at(const std::string& name) const;
  bool contains(const std::string& name) const { return get(name).has_value(); }
  const std::vector<std::pair<std::string, double>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  /// "loss: 0.5234 - accuracy: 0.8123" (the values; tables are left out)
  std::string str() const;

  /// Sets the table `name` (replacing an earlier one).
  void set_table(const std::string& name, CountTable table);
  /// The table `name`, or null.
  const CountTable* table(const std::string& name) const;
  const std::vector<std::pair<std::string, CountTable>>& tables() const { return tables_; }
  /// Sets every value and table of `other`, each name behind `prefix` ("val_").
  void set_all(const Logs& other, const std::string& prefix = "");

 private:
  std::vector<std::pair<std::string, double>> items_;
  std::vector<std::pair<std::string, CountTable>> tables_;
};

/// Which way a logged value gets better.
enum class Direction { higher, lower };

/// The directions of the values a run logs, known before it starts: "loss" and "val_loss" lower,
/// each metric's own (metrics declare theirs) under its name and "val_" + its name.
class LogDirections {
 public:
  void set(const std::string& name, Direction direction);
  std::optional<Direction> get(const std::string& name) const;
  /// "loss (lower), val_auc (higher)"
  std::string str() const;

 private:
  std::vector<std::pair<std::string, Direction>> items_;
};

/// The best value so far of a monitored log entry, as EarlyStopping, ModelCheckpoint and
/// reduce-on-plateau keep it.
class BestValue {
 public:
  /// Larger values of `monitor` are better for `mode` "max", smaller for "min"; "auto" takes the
  /// direction the run's metric declares (resolve()), lower for "loss" and "val_loss" (as Keras 3,
  /// which refuses a name it cannot place rather than guessing from it). A value must beat the
  /// best by more than `min_delta`. Throws ValueError naming `who` for another mode.
  BestValue(std::string monitor, const std::string& mode, double min_delta, std::string who);
  /// In mode "auto", takes the monitored value's direction from `directions`; throws ValueError
  /// naming `who`, the monitored name and the directions known, asking for mode "min" or "max",
  /// when they do not have it. Nothing in mode "min" or "max".
  void resolve(const LogDirections& directions);
  /// Whether `value` beats the best (any value beats none). Throws ValueError as resolve() does
  /// when the direction is still unknown.
  bool improves(double value) const;
  /// Whether larger values are better, once the direction is known.
  std::optional<bool> maximizes() const;
  const std::optional<double>& best() const { return best_; }
  void set_best(std::optional<double> best) { best_ = best; }

 private:
  std::string monitor_, who_;
  std::optional<Direction> direction_;
  bool auto_ = false;
  double min_delta_;
  std::optional<double> best_;
};

/// What fit() returns: the logs of every epoch.
class History {
 public:
  void append(Logs epoch, MemoryStats memory = {}) {
    epochs_.push_back(std::move(epoch));
    memory_.push_back(memory);
  }
  std::size_t epochs() const { return epochs_.size(); }
  /// The per-epoch values of `name` ("loss", "val_accuracy"), as Keras's history.history[name];
  /// throws ValueError listing the names there are.
  std::vector<double> operator[](const std::string& name) const;
  /// The value of `name` in the last epoch.
  double last(const std::string& name) const;
  /// "History (2 epochs)" and a line per epoch: "  epoch 1: loss: 0.5312 - accuracy: 0.8125".
  std::string str() const;
  const std::vector<Logs>& logs() const { return epochs_; }
  /// Memory of each epoch's training on the model's device: peak_total and the peak of each
  /// category since the epoch began.
  const std::vector<MemoryStats>& memory() const { return memory_; }

 private:
  std::vector<Logs> epochs_;
  std::vector<MemoryStats> memory_;
};

inline std::ostream& operator<<(std::ostream& os, const Logs& l) { return os << l.str(); }
inline std::ostream& operator<<(std::ostream& os, const History& h) { return os << h.str(); }

}  // namespace accrue

template <>
struct fmt::formatter<accrue::Logs> : accrue::StrFormatter<accrue::Logs> {};
template <>
struct fmt::formatter<accrue::History> : accrue::StrFormatter<accrue::History> {};
