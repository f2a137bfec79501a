#include "report_comparison.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <utility>
#include <nlohmann/json.hpp>

#include "report.hpp"
#include "../../framework/core/error.hpp"
#include "../../framework/core/files.hpp"
#include "../../framework/serialization/json_text.hpp"

namespace accrue::detail {
std::string_view comparison_template();  // dsl/callbacks/report/compare.html, compiled in by CMake
}

namespace accrue::callbacks {

namespace {

using json = nlohmann::json;

// What the loss curve gathers over a run's lines.
struct Steps {
  json loss = json::array(), lr = json::array(), samples = json::array(), applied = json::array();
  std::int64_t seen = 0, since_step = 0;
};

// One line of a run's JSON lines, of type `type`, into the run's record; nlohmann's exception for a
// field of another kind than Report writes.
void add_line(const json& j, const std::string& type, json& run, Steps& steps, std::size_t& peak) {
  if (type == "run") {
    run["title"] = j.value("title", run["file"].get<std::string>());
    run["banner"] = j.value("banner", "");
    run["precision_effect"] = j.value("precision_effect", "");
    run["plan_peak"] = j.value("plan_peak", 0);
  } else if (type == "micro_batch") {
    steps.since_step += j.value("samples", std::int64_t{0});
    if (j.contains("memory")) peak = std::max(peak, j["memory"].value("total", std::size_t{0}));
  } else if (type == "step") {
    steps.seen += std::exchange(steps.since_step, 0);
    steps.loss.push_back(j.value("loss", json(nullptr)));
    steps.lr.push_back(j.value("lr", json(nullptr)));
    steps.samples.push_back(steps.seen);
    steps.applied.push_back(j.value("applied", true));
  } else if (type == "epoch") {
    run["epochs"].push_back({{"steps", j.value("steps", 0)}, {"logs", j.value("logs", json::object())}});
  } else if (type == "result") {
    run["results"].push_back({{"label", j.value("label", "")}, {"value", j.value("value", json(nullptr))}});
  }
}

// One run, reduced to what the comparison draws: per optimizer step (loss, learning rate, samples
// seen by its end, applied), per epoch (its logs), the results and the highest memory.
json read_run(const std::string& path) {
  require_readable_file(path, "run");
  std::ifstream in{path};
  if (!in) throw IoError(fmt::format("{}: cannot be read", path));
  json run{{"file", std::filesystem::path(path).filename().string()}, {"epochs", json::array()},
           {"results", json::array()}, {"peak", 0}};
  Steps steps;
  std::int64_t line_number = 0;
  std::size_t peak = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.empty()) continue;
    json j;  // null when the line is not JSON: the first line then is no run's
    try {
      j = parse_json(line, "a line");
    } catch (const JsonError& e) {
      if (line_number > 1) throw ValueError(fmt::format("{}:{}: not a JSON object ({})", path, line_number, e.reason()));
    }
    const std::string type = j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
    if (line_number == 1 && type != "run")
      throw ValueError(fmt::format("{}:1: not a run's JSON lines (callbacks::Report writes them beside its page, "
                                   "\"run.jsonl\" for \"run.html\"): the first line is no {{\"type\": \"run\"}}",
                                   path));
    if (type.empty()) throw ValueError(fmt::format("{}:{}: not a JSON object with a \"type\"", path, line_number));
    try {
      add_line(j, type, run, steps, peak);
    } catch (const nlohmann::json::exception& e) {
      throw ValueError(fmt::format("{}:{}: a \"{}\" line with a field of another kind than Report writes ({})", path,
                                   line_number, printable_name(type), detail::json_reason(e)));
    }
  }
  run["steps"] = {{"loss", steps.loss}, {"lr", steps.lr}, {"samples", steps.samples}, {"applied", steps.applied}};
  run["peak"] = peak;
  return run;
}

}  // namespace

std::string comparison_page(const std::vector<std::string>& json_lines) {
  ACCRUE_CHECK(!json_lines.empty(), "comparison_page: no runs to compare; give the JSON lines of one or more");
  json runs = json::array();
  for (const std::string& path : json_lines) runs.push_back(read_run(path));
  std::string title = "Runs compared:";
  for (std::size_t i = 0; i < runs.size(); ++i) title += (i == 0 ? " " : " · ") + runs[i]["title"].get<std::string>();
  return fill_report_page(detail::comparison_template(), title,
                          json{{"runs", runs}}.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace accrue::callbacks
