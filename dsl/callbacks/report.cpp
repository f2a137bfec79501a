#include "report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <utility>

#include "progress_bar.hpp"
#include "../plan_choice.hpp"
#include "../model.hpp"
#include "../../framework/core/files.hpp"
#include "../../framework/core/utf8.hpp"
#include "../../framework/core/log.hpp"

namespace accrue::detail {
// The page's template and the vendored uPlot, compiled in (CMake generates them from
// dsl/callbacks/report/).
std::string_view report_template();
std::string_view uplot_js();
std::string_view uplot_css();
std::string_view page_css();
std::string_view page_js();
}  // namespace accrue::detail

namespace accrue::callbacks {
namespace {

using json = nlohmann::ordered_json;

// {"budget", "effective_batch", "reason", "chosen", "candidates": [{micro_batch, accumulation,
// recompute, planned_peak, fits, seconds_per_sample}]}
json planner_json(const PlanChoice& choice) {
  json rows = json::array();
  for (const PlanCandidate& c : choice.candidates)
    rows.push_back({{"micro_batch", c.micro_batch}, {"accumulation", c.accumulation}, {"recompute", c.recompute.str()},
                    {"planned_peak", c.planned_peak}, {"fits", c.fits},
                    {"seconds_per_sample", c.seconds_per_sample ? json(*c.seconds_per_sample) : json(nullptr)}});
  return {{"budget", choice.budget}, {"budget_name", choice.budget_name}, {"effective_batch", choice.effective_batch},
          {"reason", choice.reason}, {"chosen", choice.chosen}, {"candidates", rows}};
}

// A number in JSON with `digits` significant digits; null for inf and NaN, which JSON lacks.
void put(std::string& out, double v, int digits = 5) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  fmt::format_to(std::back_inserter(out), "{:.{}g}", v, digits);
}

template <class Values>
void put_array(std::string& out, const Values& values, int digits = 5) {
  out += '[';
  bool first = true;
  for (const auto v : values) {
    if (!first) out += ',';
    first = false;
    put(out, static_cast<double>(v), digits);
  }
  out += ']';
}

// Runs of equal values as [value, count, value, count, ...].
template <class Values>
void put_runs(std::string& out, const Values& values) {
  out += '[';
  for (std::size_t i = 0; i < values.size();) {
    std::size_t j = i;
    while (j < values.size() && values[j] == values[i]) ++j;
    if (i > 0) out += ',';
    put(out, static_cast<double>(values[i]), 12);
    fmt::format_to(std::back_inserter(out), ",{}", j - i);
    i = j;
  }
  out += ']';
}

json logs_json(const Logs& logs) {
  json j = json::object();
  for (const auto& [name, value] : logs.items()) j[name] = std::isfinite(value) ? json(value) : json(nullptr);
  return j;
}

// A metric's tables (metrics::ConfusionMatrix): {"confusion_matrix": {"labels": [...], "counts": [[row], ...]}}.
json tables_json(const Logs& logs) {
  json j = json::object();
  for (const auto& [name, table] : logs.tables()) {
    json rows = json::array();
    const std::size_t n = table.labels.size();
    for (std::size_t r = 0; r < n; ++r)
      rows.push_back(std::vector<std::int64_t>(table.counts.begin() + static_cast<std::ptrdiff_t>(r * n),
                                               table.counts.begin() + static_cast<std::ptrdiff_t>((r + 1) * n)));
    j[name] = {{"labels", table.labels}, {"counts", rows}};
  }
  return j;
}

// Script code inside <script>: "</" would end the element. "<!--" and "<script" would start HTML's
// escaped script states, where "</script>" no longer ends it; the vendored scripts hold neither.
std::string script_safe(std::string text) {
  ACCRUE_CHECK(text.find("<!--") == std::string::npos && text.find("<script") == std::string::npos,
               "internal error: a page's script holds '<!--' or '<script'");
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3)) text.replace(at, 2, "<\\/");
  return text;
}

// JSON text inside <script>, whatever its strings hold: "<", ">" and "&" only occur inside JSON
// strings, where \u003c, \u003e and \u0026 mean the same characters, so no "</script>", "<!--" or
// "<script" can reach the HTML parser.
std::string json_script_safe(std::string_view json_text) {
  std::string out;
  out.reserve(json_text.size());
  for (const char c : json_text) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

// JSON of values that may hold any bytes (names of files, layers, metrics): what is not UTF-8 is
// replaced, never an error after an epoch of training.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string default_json_lines(const std::string& path) {
  return std::filesystem::path(path).replace_extension(".jsonl").string();
}

}  // namespace

Report::Report(std::string path, ReportOptions options)
    : path_(std::move(path)),
      json_lines_(options.json_lines.empty() ? default_json_lines(path_) : options.json_lines),
      title_(std::move(options.title)) {
  ACCRUE_CHECK(!path_.empty(), "callbacks::Report: the page's path is empty");
  require_utf8(title_, fmt::format("callbacks::Report: the title '{}'", title_));
  ACCRUE_CHECK(json_lines_ != path_, "callbacks::Report: the JSON lines would overwrite the page {}", path_);
}

void Report::on_train_begin(TrainingContext& context) {
  context_ = &context;
  micro_batch_ = context.batch_size;
  clipping_ = context.recipe->clip_norm().has_value();
  writes_ = context.rank == 0;
  if (!writes_) return;
  require_writable_file(path_, "report");
  require_writable_file(json_lines_, "report's JSON lines");
  start_ = last_step_ = Clock::now();
  const Model& model = *context.model;
  if (title_.empty()) title_ = model.name();
  banner_ = training_banner(context);
  summary_ = model.summary_str();
  const MemoryStats memory = memory_stats(model.device());
  limit_ = memory.limit;
  // Datasets held in memory are data from before the run; the plan leaves them out, and so does the
  // chart (it would dwarf the rest).
  datasets_ = memory.live_of(MemoryCategory::data);
  try {
    const PrecisionEffect effect =
        model.precision_effect(context.batch_size, context.recipe != nullptr && context.recipe->accumulates(), false,
                               context.data_parallel);
    plan_peak_ = effect.mixed.peak_total;
    plan_parts_.assign(effect.mixed.peak.begin(), effect.mixed.peak.end());
    precision_effect_ = effect.str();
  } catch (const Error& e) {
    log::warning("callbacks::Report: no memory plan for this run ({}); the memory chart shows measurements only",
                 e.what());
  }
  planner_ = context.memory_choice ? planner_json(*context.memory_choice).dump() : std::string{};
  allocator(model.device()).take_interval_peak();  // the next interval starts with training
}

void Report::on_epoch_begin(int /*epoch*/) { last_step_ = Clock::now(); }

void Report::on_micro_batch_end(const StepRecord& record, const Logs& running) {
  if (!writes_) return;
  micro_loss_.push_back(record.micro_batch_samples > 0 ? record.loss : NAN);
  micro_samples_.push_back(record.micro_batch_samples);
  micro_position_.push_back(record.position);
  data_wait_ += record.data_wait;
  const MemoryPeak peak = allocator(context_->model->device()).take_interval_peak();
  std::vector<std::size_t> parts(peak.parts.begin(), peak.parts.end());
  std::size_t& data = parts[static_cast<int>(MemoryCategory::data)];
  const std::size_t held = std::min(data, datasets_);
  data -= held;
  const std::size_t total = peak.total - held;
  if (memory_.empty() || memory_.back().total != total || memory_.back().parts != parts)
    memory_.push_back({micro_loss_.size() - 1, total, std::move(parts)});
  last_running_ = running;
}

void Report::on_optimizer_step(const StepRecord& record) {
  if (!writes_) return;
  const Clock::time_point now = Clock::now();
  // The window's loss: its micro-batches' mean losses weighted by their samples.
  double sum = 0, samples = 0;
  const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(record.window_micro_batches), micro_loss_.size());
  for (std::size_t i = micro_loss_.size() - n; i < micro_loss_.size(); ++i)
    if (micro_samples_[i] > 0) {
      sum += micro_loss_[i] * static_cast<double>(micro_samples_[i]);
      samples += static_cast<double>(micro_samples_[i]);
    }
  step_micro_.push_back(static_cast<std::int64_t>(micro_loss_.size()) - 1);
  step_epoch_.push_back(record.epoch);
  step_micro_batches_.push_back(record.window_micro_batches);
  step_applied_.push_back(record.status == StepRecord::Status::applied);
  step_time_.push_back(std::chrono::duration<double>(now - last_step_).count());
  last_step_ = now;
  step_loss_.push_back(samples > 0 ? sum / samples : NAN);
  step_lr_.push_back(record.lr);
  step_norm_before_.push_back(record.grad_norm_before.value_or(NAN));
  step_norm_after_.push_back(record.grad_norm_after.value_or(NAN));
  step_scale_.push_back(record.loss_scale.value_or(NAN));
  const std::size_t steps = step_lr_.size();
  for (const auto& [name, value] : last_running_.items()) {
    std::vector<double>& column = step_running_[name];
    column.resize(steps - 1, NAN);  // a metric that appears late
    column.push_back(value);
  }
  for (auto& [name, column] : step_running_) column.resize(steps, NAN);
}

void Report::on_epoch_end(int /*epoch*/, Logs& logs) {
  if (!writes_) return;
  epoch_logs_.push_back(logs);
  epoch_steps_.push_back(step_lr_.size());
  epoch_time_.push_back(seconds());
  epoch_data_wait_.push_back(std::exchange(data_wait_, 0.0));
  write();
}

void Report::on_train_end(const Logs& /*logs*/) {
  if (!writes_) return;
  finished_ = true;
  finished_seconds_ = seconds();
  write();
  // The context ends with fit; a page written again later (link) needs none of it.
  context_ = nullptr;
}

void Report::link(std::string label, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path folder = fs::absolute(fs::path(path_)).parent_path();
  const fs::path relative = fs::absolute(fs::path(path), error).lexically_relative(folder);
  links_.emplace_back(std::move(label), relative.empty() ? path : relative.generic_string());
  if (writes_ && !banner_.empty()) write();
}

void Report::result(std::string label, double value) {
  results_.emplace_back(std::move(label), value);
  if (writes_ && !banner_.empty()) write();
}

double Report::seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

std::string Report::data_json() const {
  json head;
  head["format"] = 1;
  head["title"] = title_;
  head["finished"] = finished_;
  head["seconds"] = finished_ ? finished_seconds_ : seconds();
  head["banner"] = banner_;
  head["summary"] = summary_;
  head["files"] = json::array();
  for (const auto& [label, href] : links_) head["files"].push_back({{"label", label}, {"href", href}});
  head["categories"] = category_names();
  head["plan"] = {{"micro_batch", micro_batch_}, {"peak", plan_peak_}, {"parts", plan_parts_}};
  if (!planner_.empty()) head["planner"] = json::parse(planner_);
  head["precision_effect"] = precision_effect_;
  head["results"] = json::array();
  for (const auto& [label, value] : results_) head["results"].push_back({{"label", label}, {"value", value}});
  head["limit"] = limit_;
  head["datasets"] = datasets_;
  head["clipping"] = clipping_;
  json epochs = json::array();
  for (std::size_t e = 0; e < epoch_logs_.size(); ++e)
    epochs.push_back({{"steps", epoch_steps_[e]},
                      {"seconds", epoch_time_[e]},
                      {"data_wait", epoch_data_wait_[e]},
                      {"logs", logs_json(epoch_logs_[e])},
                      {"tables", tables_json(epoch_logs_[e])}});
  head["epochs"] = epochs;
  std::string out = dump(head);
  out.pop_back();  // the closing brace: the columns follow
  put_micro_batches_and_memory(out);
  put_steps(out);
  return out;
}

void Report::put_micro_batches_and_memory(std::string& out) const {
  // What the page can derive is left out (windows give each micro-batch's place and each step's
  // micro-batch, the epochs each step's epoch), and runs of equal values are (value, count) pairs:
  // 20 epochs of the tutorial stay under 2 MB.
  const bool one_per_window = std::all_of(step_micro_batches_.begin(), step_micro_batches_.end(), [](int k) { return k == 1; });
  out += ",\"micro\":{\"loss\":";
  if (one_per_window) out += "null";  // the steps' losses
  else put_array(out, micro_loss_);
  out += ",\"samples\":";
  put_runs(out, micro_samples_);
  out += "},\"memory\":{\"at\":";
  std::vector<double> at, total;
  for (const MemorySample& m : memory_) at.push_back(static_cast<double>(m.micro_batch)), total.push_back(static_cast<double>(m.total));
  put_array(out, at, 12);
  out += ",\"total\":";
  put_array(out, total, 12);
  out += ",\"parts\":[";
  for (std::size_t i = 0; i < memory_.size(); ++i) {
    if (i > 0) out += ',';
    put_array(out, memory_[i].parts, 12);
  }
  out += "]}";
}

void Report::put_steps(std::string& out) const {
  out += ",\"steps\":{\"micro_batches\":";
  put_runs(out, step_micro_batches_);
  out += ",\"skipped\":";
  std::vector<std::size_t> skipped;
  for (std::size_t k = 0; k < step_applied_.size(); ++k)
    if (!step_applied_[k]) skipped.push_back(k);
  put_array(out, skipped, 12);
  out += ",\"seconds\":";
  put_array(out, step_time_, 4);
  out += ",\"loss\":";
  put_array(out, step_loss_);
  out += ",\"lr\":";
  put_array(out, step_lr_);
  out += ",\"norm_before\":";
  put_array(out, step_norm_before_);
  out += ",\"norm_after\":";
  put_array(out, step_norm_after_);
  out += ",\"scale\":";
  if (std::none_of(step_scale_.begin(), step_scale_.end(), [](double v) { return std::isfinite(v); })) out += "null";
  else put_array(out, step_scale_);
  out += ",\"running\":{";
  bool first = true;
  for (const auto& [name, column] : step_running_) {
    if (!first) out += ',';
    first = false;
    out += dump(json(name)) + ":";
    put_array(out, column);
  }
  out += "}}}";
}

std::string Report::html() const {
  return fill_report_page(detail::report_template(), title_, data_json());
}

std::string Report::json_lines() const {
  std::string out;
  json run{{"type", "run"}, {"title", title_}, {"banner", banner_}, {"summary", summary_},
           {"plan_peak", plan_peak_}, {"plan_parts", plan_parts_}, {"limit", limit_}, {"datasets", datasets_}};
  if (!planner_.empty()) run["planner"] = json::parse(planner_);
  if (!precision_effect_.empty()) run["precision_effect"] = precision_effect_;
  out += dump(run) + "\n";
  std::size_t memory = 0, step = 0, epoch = 0;
  for (std::size_t i = 0; i < micro_loss_.size(); ++i) {
    while (memory + 1 < memory_.size() && memory_[memory + 1].micro_batch <= i) ++memory;
    json mb{{"type", "micro_batch"}, {"index", i}, {"position", micro_position_[i]}, {"samples", micro_samples_[i]},
            {"loss", std::isfinite(micro_loss_[i]) ? json(micro_loss_[i]) : json(nullptr)}};
    if (!memory_.empty()) mb["memory"] = {{"total", memory_[memory].total}, {"parts", memory_[memory].parts}};
    out += dump(mb) + "\n";
    for (; step < step_micro_.size() && step_micro_[step] == static_cast<std::int64_t>(i); ++step) {
      const auto number = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
      json s{{"type", "step"}, {"index", step}, {"epoch", step_epoch_[step]}, {"micro_batches", step_micro_batches_[step]},
             {"applied", static_cast<bool>(step_applied_[step])}, {"seconds", step_time_[step]},
             {"loss", number(step_loss_[step])}, {"lr", step_lr_[step]}, {"norm_before", number(step_norm_before_[step])},
             {"norm_after", number(step_norm_after_[step])}, {"loss_scale", number(step_scale_[step])}};
      for (const auto& [name, column] : step_running_) s["running_" + name] = number(column[step]);
      out += dump(s) + "\n";
      for (; epoch < epoch_steps_.size() && epoch_steps_[epoch] == step + 1; ++epoch)
        out += dump(json{{"type", "epoch"}, {"epoch", epoch}, {"steps", epoch_steps_[epoch]},
                         {"seconds", epoch_time_[epoch]}, {"data_wait", epoch_data_wait_[epoch]},
                         {"logs", logs_json(epoch_logs_[epoch])}, {"tables", tables_json(epoch_logs_[epoch])}}) +
               "\n";
    }
  }
  for (const auto& [label, value] : results_) out += dump(json{{"type", "result"}, {"label", label}, {"value", value}}) + "\n";
  return out;
}

// A page that cannot be written (a full disk, a folder gone) is said and tried again at the next
// epoch's end; training, and the checkpoint that follows the epoch's end, go on.
void Report::write() const {
  try {
    write_text_atomically(path_, html());
    write_text_atomically(json_lines_, json_lines());
  } catch (const IoError& e) {
    log::warning("callbacks::Report: the report could not be written ({}); training goes on{}", e.what(),
                 finished_ ? "" : ", and the report is tried again at the next epoch's end");
  }
}

std::string fill_report_page(std::string_view page_template, std::string_view title, std::string_view data_json) {
  std::string page{page_template};
  const auto fill = [&](std::string_view marker, const std::string& with) {
    const std::size_t at = page.find(marker);
    ACCRUE_CHECK(at != std::string::npos, "a report page's template lacks {}", marker);
    page.replace(at, marker.size(), with);
  };
  // What every page's head and the end of its body hold, then what they name.
  fill("<!--PAGE_HEAD-->",
       "<meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<style>/*UPLOT_CSS*/</style>\n"
       "<style>/*PAGE_CSS*/</style>");
  fill("<!--PAGE_DATA-->",
       "<script>/*UPLOT_JS*/</script>\n"
       "<script id=\"accrue-data\" type=\"application/json\">/*DATA*/</script>");
  fill("/*UPLOT_CSS*/", std::string{detail::uplot_css()});
  fill("/*PAGE_CSS*/", std::string{detail::page_css()});
  fill("/*PAGE_JS*/", script_safe(std::string{detail::page_js()}));
  fill("/*UPLOT_JS*/", script_safe(std::string{detail::uplot_js()}));
  fill("/*TITLE*/", json_script_safe(dump(json(std::string{title}))));
  fill("/*DATA*/", json_script_safe(data_json));
  return page;
}

}  // namespace accrue::callbacks
