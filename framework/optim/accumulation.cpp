#include "accumulation.hpp"

#include <fmt/format.h>

#include <limits>

#include "../core/error.hpp"

namespace accrue {

AccumulationSchedule::AccumulationSchedule(int steps) : kind_(Kind::constant), constant_(steps) {}

AccumulationSchedule::AccumulationSchedule(std::initializer_list<std::pair<int, int>> per_epoch) : kind_(Kind::per_epoch) {
  for (const auto& [epoch, n] : per_epoch) table_.emplace_back(epoch, n);
}

AccumulationSchedule AccumulationSchedule::per_epoch(const std::vector<std::pair<std::int64_t, int>>& keys) {
  AccumulationSchedule s{Kind::per_epoch};
  s.table_ = keys;
  return s;
}

AccumulationSchedule AccumulationSchedule::by_step(std::vector<std::pair<std::int64_t, int>> steps) {
  AccumulationSchedule s{Kind::per_step};
  s.table_ = std::move(steps);
  return s;
}

AccumulationSchedule AccumulationSchedule::effective_batch(std::int64_t samples) {
  AccumulationSchedule s{Kind::effective_batch};
  s.samples_ = samples;
  return s;
}

namespace {
int lookup(const std::vector<std::pair<std::int64_t, int>>& table, std::int64_t key) {
  int value = 1;
  for (const auto& [k, v] : table) {
    if (k > key) break;
    value = v;
  }
  return value;
}
}  // namespace

int AccumulationSchedule::steps_at(int epoch, std::int64_t step, std::int64_t micro_batch) const {
  switch (kind_) {
    case Kind::unset: return 1;
    case Kind::constant: return constant_;
    case Kind::per_epoch: return lookup(table_, epoch);
    case Kind::per_step: return lookup(table_, step);
    case Kind::effective_batch: return static_cast<int>(samples_ / micro_batch);
    case Kind::callable: {
      const int n = callable_(epoch);
      ACCRUE_CHECK(n >= 1, "the accumulation function returned {} for epoch {}; it must return at least 1", n, epoch);
      return n;
    }
  }
  return 1;
}

AccumulationSchedule::Span AccumulationSchedule::span_at(int epoch, std::int64_t step, int epoch_limit) const {
  constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();
  const auto next_key = [&](std::int64_t at) {
    for (const auto& entry : table_)
      if (entry.first > at) return entry.first;
    return never;
  };
  switch (kind_) {
    case Kind::unset:
    case Kind::constant:
    case Kind::effective_batch: return {never, never};
    case Kind::per_epoch: return {next_key(epoch), never};
    case Kind::per_step: return {never, next_key(step)};
    case Kind::callable: {
      const int value = callable_(epoch);
      int end = epoch + 1;
      while (end < epoch_limit && callable_(end) == value) ++end;
      return {end, never};
    }
  }
  return {epoch + 1, never};
}

void AccumulationSchedule::validate() const {
  switch (kind_) {
    case Kind::unset: break;
    case Kind::constant:
      ACCRUE_CHECK(constant_ >= 1, "accumulate({}): the number of micro-batches per optimizer step must be at least 1",
                   constant_);
      break;
    case Kind::per_epoch:
    case Kind::per_step: {
      const char* unit = kind_ == Kind::per_epoch ? "epoch" : "optimizer step";
      ACCRUE_CHECK(!table_.empty(), "accumulate: the {} dictionary is empty; give at least one {{key, value}}", unit);
      for (std::size_t i = 0; i < table_.size(); ++i) {
        const auto& [key, n] = table_[i];
        ACCRUE_CHECK(key >= 0, "accumulate: {} key {} is negative; {}s count from 0", unit, key, unit);
        ACCRUE_CHECK(n >= 1, "accumulate: the value {} at {} {} must be at least 1", n, unit, key);
        if (i > 0)
          ACCRUE_CHECK(key > table_[i - 1].first,
                       "accumulate: {} keys must increase, but {} comes after {}; write them in order", unit, key,
                       table_[i - 1].first);
      }
      break;
    }
    case Kind::effective_batch:
      ACCRUE_CHECK(samples_ >= 1, "accumulate(effective_batch({})): the effective batch must be at least 1", samples_);
      break;
    case Kind::callable:
      ACCRUE_CHECK(static_cast<bool>(callable_), "accumulate: the accumulation function is empty");
      break;
  }
}

void AccumulationSchedule::validate_for(std::int64_t micro_batch, int processes) const {
  validate();
  if (kind_ != Kind::effective_batch) return;
  const std::int64_t global = micro_batch * processes;
  if (samples_ % global != 0 || samples_ < global) {
    std::string valid;
    for (std::int64_t m = 1; m * processes <= samples_ && valid.size() < 200; ++m)
      if (samples_ % (m * processes) == 0) valid += fmt::format("{}{}", valid.empty() ? "" : ", ", m);
    const std::string on = processes > 1 ? fmt::format(" on each of {} processes", processes) : "";
    throw ValueError(fmt::format("accumulate(effective_batch({})): a micro-batch of {}{} does not divide it; {}",
                                 samples_, micro_batch, on,
                                 valid.empty() ? fmt::format("no micro-batch does{}: choose an effective batch that "
                                                             "is a multiple of {}", on, processes)
                                               : fmt::format("micro-batches that do{}: {}", on, valid)));
  }
  ACCRUE_CHECK(samples_ / global <= std::numeric_limits<int>::max(),
               "accumulate(effective_batch({})): {} micro-batches of {} per optimizer step are more than {} can count",
               samples_, samples_ / global, global, std::numeric_limits<int>::max());
}

AccumulationSchedule AccumulationSchedule::scaled(int factor) const {
  const auto times = [factor](int n) {
    int product = 0;
    ACCRUE_CHECK(!__builtin_mul_overflow(n, factor, &product),
                 "accumulation {} x {} after backing off is more micro-batches per step than an int counts", n, factor);
    return product;
  };
  AccumulationSchedule s = *this;
  switch (kind_) {
    case Kind::unset:
      s.kind_ = Kind::constant;
      s.constant_ = factor;
      break;
    case Kind::constant: s.constant_ = times(constant_); break;
    case Kind::per_epoch:
    case Kind::per_step:
      for (auto& entry : s.table_) entry.second = times(entry.second);
      break;
    case Kind::effective_batch: break;
    case Kind::callable: s.callable_ = [f = callable_, times](int epoch) { return times(f(epoch)); }; break;
  }
  return s;
}

std::string AccumulationSchedule::str() const {
  auto table = [&] {
    std::string s = "{";
    for (std::size_t i = 0; i < table_.size(); ++i) s += fmt::format("{}{}: {}", i ? ", " : "", table_[i].first, table_[i].second);
    return s + "}";
  };
  switch (kind_) {
    case Kind::unset: return "1";
    case Kind::constant: return std::to_string(constant_);
    case Kind::per_epoch: return table();
    case Kind::per_step: return "by step " + table();
    case Kind::effective_batch: return fmt::format("effective batch {}", samples_);
    case Kind::callable: return "callable";
  }
  return "?";
}

bool operator==(const AccumulationSchedule& a, const AccumulationSchedule& b) {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case AccumulationSchedule::Kind::unset: return true;
    case AccumulationSchedule::Kind::constant: return a.constant_ == b.constant_;
    case AccumulationSchedule::Kind::per_epoch:
    case AccumulationSchedule::Kind::per_step: return a.table_ == b.table_;
    case AccumulationSchedule::Kind::effective_batch: return a.samples_ == b.samples_;
    case AccumulationSchedule::Kind::callable: return false;
  }
  return false;
}

std::string_view last_window_name(LastWindow w) {
  switch (w) {
    case LastWindow::normalize: return "normalize";
    case LastWindow::drop: return "drop";
    case LastWindow::carry: return "carry";
  }
  return "?";
}

std::string_view normalization_name(Normalization n) {
  return n == Normalization::per_window ? "per_window" : "per_micro_batch";
}

double loss_weight(Normalization normalization, const MicroBatchShare& share) {
  if (share.units <= 0) return 0.0;
  if (normalization == Normalization::per_micro_batch)
    return (share.summed_loss ? 1.0 : 1.0 / static_cast<double>(share.units)) / share.window_micro_batches /
           share.processes;
  return share.summed_loss ? 1.0 : 1.0 / static_cast<double>(share.window_units);
}

std::int64_t window_units(std::int64_t start, int micro_batches, std::int64_t per_epoch,
                          const std::function<std::int64_t(std::int64_t, std::int64_t)>& units_of) {
  std::int64_t n = 0;
  for (int m = 0; m < micro_batches; ++m) {
    const std::int64_t at = start + m;
    const std::int64_t epochs_away = at >= 0 ? at / per_epoch : -((-at + per_epoch - 1) / per_epoch);
    n += units_of(epochs_away, at - epochs_away * per_epoch);
  }
  return n;
}

}  // namespace accrue
