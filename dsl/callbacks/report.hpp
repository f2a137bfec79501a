#pragma once
// Report: one self-contained HTML page of a run, rewritten atomically at every epoch's end (refresh
// it during training) and at the end:
//   - the banner (data, effective batch, accumulation, optimizer steps, schedule, device,
//     precision, clipping), the model summary and its memory plan;
//   - loss and the metrics per optimizer step and per epoch, training and validation;
//   - the learning rate of every optimizer step (warmup included) and the gradient's global norm
//     before and after clipping;
//   - the accumulation strip: each micro-batch's place in its window, the steps applied and
//     skipped, the loss scale;
//   - memory over the run by category, stacked (each micro-batch's highest point; datasets held in
//     memory left out, as the plan leaves them out), against the plan's peak and the memory cap;
//   - the time of every optimizer step.
// Charts are drawn by uPlot (MIT), vendored in dsl/callbacks/report/uplot and inlined into the
// file: the page needs no network. The same data is written as JSON lines beside the page
// ("run.jsonl" for "run.html"): one "run" line, then "micro_batch", "step" and "epoch" lines.
// In a distributed run rank 0 writes both. A resumed run reports from where it resumed.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "../callbacks.hpp"

namespace accrue::callbacks {

struct ReportOptions {
  /// The JSON lines file; empty: the page's path with ".jsonl" for its extension.
  std::string json_lines = {};
  /// The page's title (the run's name: the program and its settings); empty: the model's name.
  std::string title = {};
};

class Report final : public Callback {
 public:
  /// `callbacks::Report{"run.html"}`. Checks that the page and the JSON lines can be written
  /// before training starts.
  explicit Report(std::string path, ReportOptions options = {});
  void on_train_begin(TrainingContext& context) override;
  void on_epoch_begin(int epoch) override;
  void on_micro_batch_end(const StepRecord& record, const Logs& running) override;
  void on_optimizer_step(const StepRecord& record) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  bool needs_grad_norm() const override { return true; }
  /// Lists `path` under "Files" on the page as `label` ("ONNX model"), linked relative to the
  /// page's folder, and writes the page again when training wrote it already: a file made after
  /// training (an exported or saved model) is found from its run's report. Give fit the Report as
  /// a shared_ptr to call this on the one that trained.
  void link(std::string label, const std::string& path);
  /// Shows `value` in the page's header as `label` ("test accuracy": 0.843 is shown as 84.3%, as
  /// is every label with "acc" in it), and as a "result" line of the JSON lines; writes the page
  /// again when training wrote it already. For what a program measures after training.
  void result(std::string label, double value);

  const std::string& path() const { return path_; }
  const std::string& json_lines_path() const { return json_lines_; }
  /// The page as it would be written now.
  std::string html() const;
  /// The JSON lines as they would be written now.
  std::string json_lines() const;

 private:
  using Clock = std::chrono::steady_clock;
  void write() const;
  std::string data_json() const;
  // The columns after data_json's head: per micro-batch and memory sample, then per step.
  void put_micro_batches_and_memory(std::string& out) const;
  void put_steps(std::string& out) const;
  double seconds() const;

  std::string path_, json_lines_, title_;
  const TrainingContext* context_ = nullptr;
  bool writes_ = true;
  bool finished_ = false;
  Clock::time_point start_, last_step_;
  std::string banner_, summary_;
  // The files linked (label, path relative to the page), and the run's seconds once it finished.
  std::vector<std::pair<std::string, std::string>> links_;
  double finished_seconds_ = 0.0;
  // From the training context, which lives only while fit runs.
  std::int64_t micro_batch_ = 0;
  bool clipping_ = false;
  // The memory plan at the run's micro-batch: its peak, each category's part, and the cap.
  std::size_t plan_peak_ = 0, limit_ = 0, datasets_ = 0;
  std::vector<std::size_t> plan_parts_;
  // The memory planner's candidates under a budget, as JSON rows (empty without one).
  std::string planner_;
  // Why mixed precision moved the plan's peak against float32 (PrecisionEffect::str; empty in float32).
  std::string precision_effect_;
  std::vector<std::pair<std::string, double>> results_;
  // Per micro-batch.
  std::vector<double> micro_loss_;
  std::vector<std::int64_t> micro_samples_, micro_window_;
  std::vector<int> micro_position_;
  // Memory at each micro-batch's highest point, kept where it changes: (micro-batch, total, parts).
  struct MemorySample {
    std::size_t micro_batch, total;
    std::vector<std::size_t> parts;
  };
  std::vector<MemorySample> memory_;
  // Per window closed: the micro-batch that closed it, applied or not, and its numbers.
  std::vector<std::int64_t> step_micro_;
  std::vector<int> step_epoch_, step_micro_batches_;
  std::vector<bool> step_applied_;
  std::vector<double> step_time_, step_loss_, step_lr_, step_norm_before_, step_norm_after_, step_scale_;
  std::map<std::string, std::vector<double>> step_running_;  // the epoch's running metrics at the step
  Logs last_running_;
  // Per epoch: its logs and the number of windows closed by its end.
  std::vector<Logs> epoch_logs_;
  std::vector<std::size_t> epoch_steps_;
  std::vector<double> epoch_time_;
  // Seconds the trainer waited for data (StepRecord::data_wait): per epoch, and in the current one.
  std::vector<double> epoch_data_wait_;
  double data_wait_ = 0.0;
};

/// A self-contained page from `page_template` (HTML): its marker <!--PAGE_HEAD--> (first in the
/// head) becomes the character set, the viewport, the vendored uPlot's styles and those Accrue's
/// pages share (dsl/callbacks/report/page.css); /*PAGE_JS*/ (first in the body) the script they
/// share (script errors counted in the body's data-errors, chart helpers: page.js);
/// <!--PAGE_DATA--> uPlot's script and `data_json` (JSON), which the page's own script reads with
/// accrue.data(); /*TITLE*/ `title` as a JSON string. Each is made safe inside `<script>`. Report's
/// page is made with it, and so can a program's own page (04_memory_comparison's, the
/// playground's). Throws when a marker is missing.
std::string fill_report_page(std::string_view page_template, std::string_view title, std::string_view data_json);

}  // namespace accrue::callbacks
