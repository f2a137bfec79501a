// callbacks::Report: the page and its JSON lines after a short run (one step line per optimizer
// step, one epoch line per epoch, everything inlined, rewritten at each epoch's end), and the size
// of a run as long as 20 epochs of the tutorial (18,760 optimizer steps) stays under 2 MB.
// tests/browser/test_report.sh opens such pages in Chromium.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../test_util.hpp"
#include "model_zoo.hpp"

using namespace accrue;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_short_run_writes_the_page_and_its_json_lines) {
  test::TempDir dir{"report"};
  const std::string page = dir.file("run.html");
  manual_seed(1);
  Sequential model{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
  model.compile(optim::Recipe{optim::SGD{.lr = 0.1}}.accumulate(3).clip(0.5), losses::CrossEntropy{},
                {metrics::Accuracy{}, metrics::ConfusionMatrix{4}});
  std::int64_t steps = 0;
  std::size_t written_after_first_epoch = 0;
  model.fit(test::blobs(100, 3),
            {.epochs = 2, .batch_size = 8, .validation = test::blobs(30, 4),
             .callbacks = {callbacks::Report{page, {.title = "blobs </script>"}},
                           callbacks::Lambda{{.optimizer_step = [&](const StepRecord&) { ++steps; },
                                              .epoch_end = [&](int epoch, Logs&) {
                                                if (epoch == 0) written_after_first_epoch = read(page).size();
                                              }}}},
             .verbose = 0});
  BOOST_TEST(written_after_first_epoch > 0u, "the page is written at each epoch's end");
  const std::string html = read(page), lines = read(dir.file("run.jsonl"));
  // 100 samples in micro-batches of 8: 13 per epoch, windows of 3 with a short last one.
  BOOST_TEST(steps == 2 * 5);
  BOOST_TEST(count(lines, "{\"type\":\"step\"") == static_cast<std::size_t>(steps));
  BOOST_TEST(count(lines, "{\"type\":\"micro_batch\"") == 26u);
  BOOST_TEST(count(lines, "{\"type\":\"epoch\"") == 2u);
  BOOST_TEST(count(lines, "{\"type\":\"run\"") == 1u);
  // Clipping on: the norms before and after are there for every step.
  BOOST_TEST(count(lines, "\"norm_before\":null") == 0u);
  // Self-contained: uPlot inlined, nothing fetched, and the title cannot end the script element.
  BOOST_TEST(html.find("uPlot") != std::string::npos);
  BOOST_TEST(html.find("<script src") == std::string::npos);
  BOOST_TEST(html.find("<link") == std::string::npos);
  BOOST_TEST(html.find("blobs </script>") == std::string::npos);
  BOOST_TEST(html.find("\"finished\":true") != std::string::npos);
  BOOST_TEST(html.find("val_accuracy") != std::string::npos);
  // The confusion matrices of each epoch, as rows of counts: 100 training and 30 validation samples.
  BOOST_TEST(count(lines, "\"tables\":{\"confusion_matrix\":{\"labels\":[\"0\",\"1\",\"2\",\"3\"],\"counts\":[[") == 2u);
  BOOST_TEST(count(lines, "\"val_confusion_matrix\":{\"labels\":[\"0\",\"1\",\"2\",\"3\"],\"counts\":[[") == 2u);
  const std::size_t last = lines.rfind("{\"type\":\"epoch\"");
  const nlohmann::json epoch = nlohmann::json::parse(lines.substr(last, lines.find('\n', last) - last));
  std::int64_t training = 0, validation = 0;
  for (const auto& row : epoch["tables"]["confusion_matrix"]["counts"])
    for (const auto& c : row) training += c.get<std::int64_t>();
  for (const auto& row : epoch["tables"]["val_confusion_matrix"]["counts"])
    for (const auto& c : row) validation += c.get<std::int64_t>();
  BOOST_TEST(training == 100);
  BOOST_TEST(validation == 30);
}

// A graph of two inputs and two outputs: each epoch's line holds every output's loss and metric and
// their validation values, which the page charts by name, and the page's summary shows how the
// graph is connected.
BOOST_AUTO_TEST_CASE(a_graph_of_two_outputs_reports_each_output) {
  test::TempDir dir{"report_graph"};
  const test::zoo::TwoInputs t = test::zoo::two_inputs(40, 3), v = test::zoo::two_inputs(12, 4);
  Model model = test::zoo::two_headed();
  test::zoo::compile_two_headed(model, optim::SGD{.lr = 0.05});
  model.fit(Dataset{{t.left, t.right}, {t.labels, test::zoo::scores_of(t)}},
            {.epochs = 2, .batch_size = 8, .validation = Dataset{{v.left, v.right}, {v.labels, test::zoo::scores_of(v)}},
             .callbacks = {callbacks::Report{dir.file("run.html")}}, .verbose = 0});
  const std::string html = read(dir.file("run.html")), lines = read(dir.file("run.jsonl"));
  const std::size_t last = lines.rfind("{\"type\":\"epoch\"");
  const nlohmann::json epoch = nlohmann::json::parse(lines.substr(last, lines.find('\n', last) - last));
  for (const char* log : {"loss", "label_loss", "label_accuracy", "score_loss", "val_loss", "val_label_loss",
                          "val_label_accuracy", "val_score_loss"})
    BOOST_TEST(epoch.dump().find(fmt::format("\"{}\":", log)) != std::string::npos, log);
  BOOST_TEST(html.find("Connected to") != std::string::npos);
  BOOST_TEST(html.find("val_label_accuracy") != std::string::npos);
}

// A file made after training (an exported model) is linked from the page, relative to its folder,
// and the page written again keeps the run's time.
BOOST_AUTO_TEST_CASE(files_made_after_training_are_linked_from_the_page) {
  test::TempDir dir{"report_link"};
  const std::string page = dir.file("run.html");
  Sequential model{layers::Input{6}, layers::Dense{4}};
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  auto report = std::make_shared<callbacks::Report>(page);
  model.fit(test::blobs(16, 3), {.batch_size = 8, .callbacks = {report}, .verbose = 0});
  const std::string before = read(page);
  const std::size_t at = before.find("\"seconds\":");
  BOOST_REQUIRE(at != std::string::npos);
  const std::string seconds = before.substr(at, before.find(',', at) - at);
  std::filesystem::create_directories(dir.path / "models");
  model.export_onnx(dir.file("models/m.onnx"));
  report->link("ONNX model", dir.file("models/m.onnx"));
  const std::string after = read(page);
  BOOST_TEST(after.find(R"({"label":"ONNX model","href":"models/m.onnx"})") != std::string::npos);
  BOOST_TEST(after.find(seconds) != std::string::npos, "the run's time is kept: " << seconds);
  BOOST_TEST(after.find("<p id=\"files\" hidden>") != std::string::npos);
}

// Results measured after training reach the header and the JSON lines; a float16 run says why its
// plan's peak moved against float32.
BOOST_AUTO_TEST_CASE(results_and_the_precision_effect_reach_the_page) {
  test::TempDir dir{"report_result"};
  Sequential model{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
  model.compile(optim::Recipe{optim::SGD{.lr = 0.1}}.amp(dtype::bf16), losses::CrossEntropy{});
  auto report = std::make_shared<callbacks::Report>(dir.file("run.html"));
  model.fit(test::blobs(16, 3), {.batch_size = 8, .callbacks = {report}, .verbose = 0});
  report->result("test accuracy", 0.8125);
  const std::string html = read(dir.file("run.html")), lines = read(dir.file("run.jsonl"));
  BOOST_TEST(html.find(R"("results":[{"label":"test accuracy","value":0.8125}])") != std::string::npos);
  BOOST_TEST(lines.find(R"({"type":"result","label":"test accuracy","value":0.8125})") != std::string::npos);
  const std::string effect = model.precision_effect(8, false).str();
  BOOST_TEST(!effect.empty());
  BOOST_TEST(html.find(nlohmann::json(effect).dump()) != std::string::npos, effect);
}

// Several runs' JSON lines on one page; what is not a run's JSON lines is named with its line.
BOOST_AUTO_TEST_CASE(runs_compared_on_one_page) {
  test::TempDir dir{"report_compare"};
  std::vector<std::string> runs;
  for (const int k : {1, 4}) {
    manual_seed(1);
    Sequential model{layers::Input{6}, layers::Dense{4}};
    optim::Recipe recipe = optim::SGD{.lr = 0.1};
    if (k > 1) recipe = recipe.accumulate(k);
    model.compile(recipe, losses::CrossEntropy{}, {metrics::Accuracy{}});
    const std::string page = dir.file(fmt::format("run{}.html", k));
    model.fit(test::blobs(64, 3), {.epochs = 2, .batch_size = 16 / k, .validation = test::blobs(16, 4),
                                   .callbacks = {callbacks::Report{page, {.title = fmt::format("{} x {}", 16 / k, k)}}},
                                   .verbose = 0});
    runs.push_back(dir.file(fmt::format("run{}.jsonl", k)));
  }
  const std::string html = callbacks::comparison_page(runs);
  BOOST_TEST(html.find("\"title\":\"16 x 1\"") != std::string::npos);
  BOOST_TEST(html.find("\"title\":\"4 x 4\"") != std::string::npos);
  // Both runs saw 128 samples by their last step, in 8 and 8 windows of 16.
  BOOST_TEST(count(html, "\"samples\":[16,32,48,64,80,96,112,128]") == 2u);
  BOOST_TEST(html.find("<script src") == std::string::npos);
  std::ofstream{dir.file("not_a_run.jsonl")} << "{\"type\": \"step\"}\n";
  BOOST_CHECK_EXCEPTION(callbacks::comparison_page({runs[0], dir.file("not_a_run.jsonl")}), ValueError,
                        test::message_has({"not_a_run.jsonl:1", "not a run's JSON lines"}));
  std::ofstream{dir.file("broken.jsonl")} << read(runs[0]) << "{ broken\n";
  BOOST_CHECK_EXCEPTION(callbacks::comparison_page({dir.file("broken.jsonl")}), ValueError,
                        test::message_has({"broken.jsonl:", "not a JSON object"}));
  BOOST_CHECK_THROW(callbacks::comparison_page({dir.file("missing.jsonl")}), IoError);
}

// Names the page shows can hold anything a user types: nothing of them may reach the HTML parser as
// markup ("<!--<script" would start HTML's escaped script states, and the page's own </script>
// would no longer end its script), and a title that is not UTF-8 is refused before training.
BOOST_AUTO_TEST_CASE(titles_and_names_cannot_break_the_page) {
  test::TempDir dir{"report_names"};
  const std::string page = dir.file("run.html");
  layers::Dense named{4};
  named.set_name("<!--<script>x</script>");
  Sequential model{layers::Input{6}, layers::Dense{8}, std::move(named)};
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  model.fit(test::blobs(32, 3), {.batch_size = 8, .callbacks = {callbacks::Report{page, {.title = "a <!--<script title"}}},
                                 .verbose = 0});
  const std::string html = read(page);
  BOOST_TEST(html.find("<!--<script") == std::string::npos);
  BOOST_TEST(html.find("<script>x") == std::string::npos);
  BOOST_TEST(html.find("a \\u003c!--\\u003cscript title") != std::string::npos);
  // Every <script> of the page ends where it should: as many openings as closings.
  BOOST_TEST(count(html, "<script") == count(html, "</script>"));
  BOOST_CHECK_EXCEPTION(callbacks::Report(page, {.title = "run \xff"}), ValueError,
                        test::message_has({"the title", "is not UTF-8: byte 0xff at 4"}));
}

// A page that cannot be written (its folder removed during training) is said, and training goes on
// to its end with every checkpoint written.
BOOST_AUTO_TEST_CASE(a_report_that_cannot_be_written_does_not_stop_training) {
  test::TempDir dir{"report_gone"};
  const std::filesystem::path pages = dir.path / "pages";
  std::filesystem::create_directories(pages);
  Sequential model{layers::Input{6}, layers::Dense{4}};
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  std::vector<std::string> warnings;
  log::set_sink([&](log::Level level, std::string_view line) {
    if (level == log::Level::warning) warnings.emplace_back(line);
  });
  const History h = model.fit(
      test::blobs(32, 3),
      {.epochs = 2, .batch_size = 8,
       .callbacks = {callbacks::Report{(pages / "run.html").string()},
                     callbacks::Lambda{{.train_begin = [&](TrainingContext&) { std::filesystem::remove_all(pages); }}}},
       .verbose = 0, .checkpoint = {.dir = dir.file("ckpt")}});
  log::set_sink({});
  BOOST_TEST(h.epochs() == 2u);
  BOOST_TEST(std::distance(std::filesystem::directory_iterator{dir.file("ckpt")}, std::filesystem::directory_iterator{}) >= 2);
  // Each epoch's end and the run's end said it.
  BOOST_REQUIRE(warnings.size() == 3u);
  BOOST_TEST(warnings[0].find("the report could not be written") != std::string::npos);
  BOOST_TEST(warnings[0].find("tried again at the next epoch's end") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_folder_that_does_not_exist_is_refused_before_training) {
  Sequential model{layers::Input{6}, layers::Dense{4}};
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(model.fit(test::blobs(16, 3), {.batch_size = 8, .callbacks = {callbacks::Report{"/nonexistent/run.html"}},
                                                       .verbose = 0}),
                        IoError, test::message_has({"report /nonexistent/run.html"}));
}

// As many steps as 20 epochs of the tutorial (938 per epoch at micro-batch 64), with validation,
// metrics and clipping: the page stays under 2 MB. ACCRUE_REPORT_OUT keeps it there (for the
// browser test).
BOOST_AUTO_TEST_CASE(twenty_tutorial_epochs_of_steps_stay_under_2_mb) {
  test::TempDir dir{"report_large"};
  const char* out = std::getenv("ACCRUE_REPORT_OUT");
  const std::string page = out != nullptr ? std::string{out} : dir.file("large.html");
  manual_seed(1);
  Sequential model{layers::Input{6}, layers::Dense{8}, layers::ReLU{}, layers::Dense{4}};
  model.compile(optim::Recipe{optim::SGD{.lr = 0.05}}.clip(1.0), losses::CrossEntropy{}, {metrics::Accuracy{}});
  model.fit(test::blobs(938, 3), {.epochs = 20, .batch_size = 1, .validation = test::blobs(50, 4),
                                  .callbacks = {callbacks::Report{page}}, .verbose = 0});
  const std::size_t bytes = std::filesystem::file_size(page);
  BOOST_TEST_MESSAGE("18,760 steps: " << bytes << " bytes");
  BOOST_TEST(bytes < 2'000'000u);
  // Memory is kept where it changes: the same few values all run long (a sample per micro-batch
  // would be 18,760 of them).
  const std::string html = test::read_file(page);
  const std::size_t at = html.find("\"memory\":{\"at\":[");
  BOOST_REQUIRE(at != std::string::npos);
  const std::size_t end = html.find(']', at);
  const auto samples = 1 + std::count(html.begin() + static_cast<std::ptrdiff_t>(at), html.begin() + static_cast<std::ptrdiff_t>(end), ',');
  BOOST_TEST_MESSAGE("memory samples: " << samples);
  BOOST_TEST(samples < 100);
}
