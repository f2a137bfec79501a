#include "progress_bar.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "../plan_choice.hpp"
#include "../model.hpp"
#include "../../framework/optim/recipe.hpp"
#include "../../framework/training/lr_schedule.hpp"
#include "../../kernels/cpu/capability.hpp"
#include "../../kernels/gemm.hpp"

namespace accrue::callbacks {

namespace {
// Keras 3 prints the values of a line sorted by name.
std::string sorted(const Logs& logs) {
  auto items = logs.items();
  std::sort(items.begin(), items.end());
  std::string s;
  for (const auto& [n, v] : items) s += fmt::format(" - {}: {:.4f}", n, v);
  return s;
}

// "learning rate scaled x8 to 0.8 for the effective batch 2048 against the reference 256: ...": what
// reference_batch() does to the learning rate, and why.
std::string batch_scaling_line(const TrainingContext& c) {
  const optim::Recipe& r = *c.recipe;
  const auto reference = r.reference_samples();
  if (!reference) return {};
  const std::int64_t effective = c.plan->max_effective_batch() * c.processes;
  const double factor = r.batch_scaling(effective);
  const bool linear = r.scaling_rule() == optim::ScalingRule::linear;
  const std::string why = r.reference_options().rule != optim::ScalingRule::automatic ? "as asked"
                          : linear ? "SGD and LARS's, Goyal et al."
                                   : "for optimizers that normalize by the gradient's scale";
  std::string out = fmt::format("\n  learning rate scaled x{:.4g} to {:g} for the effective batch {}{} against the reference "
                                "{}: the {} rule, lr x {} ({})",
                                factor, c.base_lr * factor, c.plan->spec().schedule.is_constant() ? "" : "up to ", effective,
                                *reference, linear ? "linear" : "square-root", linear ? "B/R" : "sqrt(B/R)", why);
  if (!c.plan->spec().schedule.is_constant()) out += "; each window by its own effective batch as the accumulation changes";
  if (r.reference_options().warmup_epochs > 0)
    out += fmt::format("; reached over the first {} optimizer steps ({:g} epochs, Goyal et al.'s gradual warmup from x1)",
                       format_count(c.plan->steps_after_epochs(r.reference_options().warmup_epochs)),
                       r.reference_options().warmup_epochs);
  return out;
}

}  // namespace

std::string training_banner(const TrainingContext& c) {
  const StepPlan& plan = *c.plan;
  const auto& spec = plan.spec();
  std::string accumulation = spec.schedule.str();
  const std::int64_t effective = plan.max_effective_batch();
  // A distributed run's effective batch has three factors: micro-batch x processes x accumulation.
  const std::string micro_batch =
      c.processes > 1 ? fmt::format("{} x {} processes", spec.micro_batch / c.processes, c.processes)
                      : fmt::format("{}", spec.micro_batch);
  std::string out = fmt::format("Training on {} samples for {} epoch{}: micro-batch {}, accumulation {}",
                                format_count(spec.dataset_size), c.epochs, c.epochs == 1 ? "" : "s", micro_batch,
                                accumulation);
  out += spec.schedule.is_constant() ? fmt::format(" (effective batch {})", effective)
                                     : fmt::format(" (effective batch up to {})", effective);
  out += fmt::format("; {} optimizer steps\n", format_count(plan.total_optimizer_steps()));
  if (c.tokens_per_epoch > 0)
    out += fmt::format("  loss per token: {} tokens counted per epoch, {:.0f} per full window on average; each "
                       "micro-batch weighted by one over its window's tokens\n",
                       format_count(c.tokens_per_epoch),
                       static_cast<double>(c.tokens_per_epoch) * static_cast<double>(effective) /
                           static_cast<double>(std::max<std::int64_t>(1, spec.dataset_size)));
  if (c.memory_choice) out += c.memory_choice->str();
  out += fmt::format("  optimizer {}; last window: {}", c.recipe->str(), last_window_name(spec.last_window));
  out += fmt::format("\n  learning rate {:g}, schedule {}", c.base_lr, c.schedule->str());
  if (c.schedule->warmup_steps() > 0) out += fmt::format(", warmup {} steps", format_count(c.schedule->warmup_steps()));
  out += batch_scaling_line(c);
  if (!c.sample_weighting.empty()) out += "\n  loss weighted by " + c.sample_weighting;
  out += fmt::format("\n  device {}", c.model->device());
  if (c.model->device().is_cpu()) out += fmt::format(" (kernels {})", kernels::cpu::capability_name(kernels::cpu::capability()));
  out += ", ";
  if (c.amp_dtype)
    out += fmt::format("precision {} autocast with float32 master weights (products: {}), {}", dtype_name(*c.amp_dtype),
                       kernels::gemm_low_precision_engine(c.model->device(), *c.amp_dtype),
                       c.scaler ? fmt::format("dynamic loss scaling from {:g}", c.scaler->scale()) : std::string{"no loss scaling"});
  else
    out += "precision float32";
  out += "; clipping ";
  if (c.recipe->clip_norm()) out += fmt::format("global L2 norm to {:g}", *c.recipe->clip_norm());
  else if (c.recipe->clip_value_limit()) out += fmt::format("each value to +-{:g}", *c.recipe->clip_value_limit());
  else out += "off";
  if (c.amp_dtype && !kernels::gemm_low_precision_native(c.model->device(), *c.amp_dtype))
    out += "\n  " + slow_mixed_precision_note(*c.amp_dtype);
  return out + "\n";
}

std::string slow_mixed_precision_note(DType compute) {
  return fmt::format("mixed precision on this processor saves memory (activations kept in {}) but runs slower than "
                     "float32: it has no {} arithmetic (AVX-512 BF16 or AMX), so each product rounds its operands and "
                     "multiplies in float32. Leave .amp() out for speed",
                     dtype_name(compute), dtype_name(compute));
}

bool shows_a_live_bar(std::FILE* out) {
  if (isatty(fileno(out)) == 0) return false;
  const char* term = std::getenv("TERM");
  if (term == nullptr || std::string_view{term} == "dumb") return false;
  // Launchers give their processes a pseudo-terminal whatever their own output goes to (Open MPI's
  // mpirun does; into a log, a bar's \r redraws were a megabyte an epoch): their processes print lines.
  for (const char* launched : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_STEP_ID"})
    if (std::getenv(launched) != nullptr) return false;
  return true;
}

ProgressBar::ProgressBar(ProgressBarOptions options) : options_(options) {}

void ProgressBar::on_train_begin(TrainingContext& context) {
  context_ = &context;
  total_steps_ = context.plan->total_optimizer_steps();
  skipped_ = 0;
  out_ = options_.stream != nullptr ? options_.stream : stdout;
  switch (options_.mode) {
    case ProgressBarOptions::Mode::bar: live_ = true; break;
    case ProgressBarOptions::Mode::lines: live_ = false; break;
    case ProgressBarOptions::Mode::automatic: live_ = shows_a_live_bar(out_); break;
  }
  if (options_.banner) {
    fmt::print(out_, "{}", training_banner(context));
    std::fflush(out_);
  }
}

void ProgressBar::on_epoch_begin(int epoch) {
  epoch_start_ = last_draw_ = Clock::now();
  samples_seen_ = 0;
  batches_seen_ = 0;
  data_wait_ = 0.0;
  position_ = 0;
  if (live_) {
    fmt::print(out_, "Epoch {}/{}\n", epoch + 1, context_->epochs);
    std::fflush(out_);
  }
}

std::string ProgressBar::timing(double seconds) const {
  const double per_step = batches_seen_ > 0 ? seconds / static_cast<double>(batches_seen_) : 0.0;
  const std::string step = per_step >= 1.0    ? fmt::format("{:.0f}s/step", per_step)
                           : per_step >= 1e-3 ? fmt::format("{:.0f}ms/step", per_step * 1e3)
                                              : fmt::format("{:.0f}us/step", per_step * 1e6);
  const double rate = seconds > 0.0 ? static_cast<double>(samples_seen_) / seconds : 0.0;
  std::string steps = fmt::format("opt_step {}/{}", context_->optimizer_steps, total_steps_);
  if (skipped_ > 0) steps += fmt::format(" - skipped {}", skipped_);
  if (context_->scaler) steps += fmt::format(" - loss_scale {:g}", context_->scaler->scale());
  if (context_->reads_data_ahead && seconds > 0.0)
    steps += fmt::format(" - data_wait {:.0f}%", 100.0 * std::min(1.0, data_wait_ / seconds));
  return fmt::format("{}s {} - {:.0f} samples/s - {}", seconds >= 10.0 ? std::round(seconds) : std::round(seconds * 10) / 10,
                     step, rate, steps);
}

namespace {

// The width of the terminal `out` shows on (read at every draw: windows are resized), else
// $COLUMNS, else 80.
int terminal_columns(std::FILE* out) {
  winsize size{};
  if (::ioctl(fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* env = std::getenv("COLUMNS"); env != nullptr && std::atoi(env) > 0) return std::atoi(env);
  return 80;
}

}  // namespace

void ProgressBar::draw(const Logs& logs, bool final) {
  const double seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  const std::int64_t total = context_->steps_per_epoch;
  const std::string position = fmt::format("{:>{}}/{} ", position_, std::to_string(total).size(), total);
  std::string rest = timing(seconds) + sorted(logs) + (final ? peak_memory() : "");
  // A live line redrawn with \r must fit on one row, or each redraw leaves the rows it wrapped
  // onto behind: the bar narrows first, then the line is cut (the epoch's last line, which stays,
  // is printed whole). The last column is left free, where terminals wrap early.
  int width = 20;
  if (!final) {
    const int room = terminal_columns(out_) - 1 - static_cast<int>(position.size());
    width = std::clamp(room - static_cast<int>(rest.size()) - 1, 0, 20);
    if (width < 5) width = 0;
    const int left = room - (width > 0 ? width + 1 : 0);
    if (static_cast<int>(rest.size()) > left) rest.resize(static_cast<std::size_t>(std::max(0, left)));
  }
  const int done = total > 0 ? static_cast<int>(width * std::min(position_, total) / total) : width;
  std::string bar;
  for (int i = 0; i < done; ++i) bar += "━";
  if (done < width) {
    bar += "\x1b[2m";
    for (int i = done; i < width; ++i) bar += "━";
    bar += "\x1b[0m";
  }
  fmt::print(out_, "\r{}{}{}{}\x1b[K{}", position, bar, width > 0 ? " " : "", rest, final ? "\n" : "");
  std::fflush(out_);
}

// The peak of the epoch's training on the model's device.
std::string ProgressBar::peak_memory() const {
  const MemoryStats& m = context_->epoch_memory;
  if (m.peak_total == 0) return {};
  return fmt::format(" - peak_mem: {}", format_bytes(m.peak_total));
}

void ProgressBar::on_optimizer_step(const StepRecord& record) {
  if (record.status == StepRecord::Status::skipped) ++skipped_;
}

void ProgressBar::on_micro_batch_end(const StepRecord& record, const Logs& running) {
  batches_seen_ += 1;
  samples_seen_ += record.micro_batch_samples;
  data_wait_ += record.data_wait;
  position_ = record.micro_batch + 1;  // a resumed epoch starts where its checkpoint was taken
  if (!live_) return;
  const auto now = Clock::now();
  // Redraw at most ten times a second: printing every step of a fast epoch would cost more than the step.
  if (position_ < context_->steps_per_epoch && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(running, false);
}

void ProgressBar::on_epoch_end(int epoch, Logs& logs) {
  if (live_) {
    draw(logs, true);
    return;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  fmt::print(out_, "Epoch {}/{} - {}/{} - {}{}{}\n", epoch + 1, context_->epochs, position_,
             context_->steps_per_epoch, timing(seconds), sorted(logs), peak_memory());
  std::fflush(out_);
}

}  // namespace accrue::callbacks
