#include "accrue/dsl/progress_bar.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace accrue::callbacks {

ProgressBar::ProgressBar(ProgressBarOptions options) : options_(options) {}

void ProgressBar::on_train_begin(const TrainInfo& info) {
  info_ = info;
  out_ = options_.stream != nullptr ? options_.stream : stdout;
  switch (options_.mode) {
    case ProgressBarOptions::Mode::bar: live_ = true; break;
    case ProgressBarOptions::Mode::lines: live_ = false; break;
    case ProgressBarOptions::Mode::automatic: live_ = isatty(fileno(out_)) != 0; break;
  }
}

void ProgressBar::on_epoch_begin(int epoch) {
  epoch_ = epoch;
  epoch_start_ = last_draw_ = Clock::now();
  samples_seen_ = 0;
  batches_seen_ = 0;
  if (live_) {
    fmt::print(out_, "Epoch {}/{}\n", epoch + 1, info_.epochs);
    std::fflush(out_);
  }
}

std::string ProgressBar::timing(std::int64_t batches, double seconds) const {
  const double per_step = batches > 0 ? seconds / static_cast<double>(batches) : 0.0;
  const std::string step = per_step >= 1.0 ? fmt::format("{:.0f}s/step", per_step)
                           : per_step >= 1e-3 ? fmt::format("{:.0f}ms/step", per_step * 1e3)
                                              : fmt::format("{:.0f}us/step", per_step * 1e6);
  const double rate = seconds > 0.0 ? static_cast<double>(samples_seen_) / seconds : 0.0;
  return fmt::format("{}s {} - {:.0f} samples/s", seconds >= 10.0 ? std::round(seconds) : std::round(seconds * 10) / 10,
                     step, rate);
}

void ProgressBar::draw(std::int64_t batches, const Logs& logs, bool final) {
  const double seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  const std::int64_t total = info_.steps_per_epoch;
  const int width = 20;
  const int done = total > 0 ? static_cast<int>(width * std::min<std::int64_t>(batches, total) / total) : width;
  std::string bar;
  for (int i = 0; i < done; ++i) bar += "━";
  if (done < width) {
    bar += "\x1b[2m";
    for (int i = done; i < width; ++i) bar += "━";
    bar += "\x1b[0m";
  }
  const int digits = static_cast<int>(std::to_string(total).size());
  fmt::print(out_, "\r{:>{}}/{} {} {} - {}\x1b[K{}", batches, digits, total, bar, timing(batches, seconds), logs.str(),
             final ? "\n" : "");
  std::fflush(out_);
}

void ProgressBar::on_batch_end(std::int64_t batch, const Logs& logs) {
  batches_seen_ = batch + 1;
  samples_seen_ = std::min((batch + 1) * info_.batch_size, info_.samples_per_epoch);
  if (!live_) return;
  const auto now = Clock::now();
  // Redraw at most ten times a second: printing every step of a fast epoch would cost more than the step.
  if (batch + 1 < info_.steps_per_epoch && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(batch + 1, logs, false);
}

void ProgressBar::on_epoch_end(int epoch, const Logs& logs) {
  if (live_) {
    draw(batches_seen_, logs, true);
    return;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  fmt::print(out_, "Epoch {}/{} - {}/{} - {} - {}\n", epoch + 1, info_.epochs, batches_seen_, info_.steps_per_epoch,
             timing(batches_seen_, seconds), logs.str());
  std::fflush(out_);
}

}  // namespace accrue::callbacks
