// accrue-report: runs side by side on one page, from the JSON lines callbacks::Report (--report)
// writes beside each run's page.
//
//   accrue-report a.jsonl b.jsonl [...] -o compare.html
//
// 64 x 1 against 16 x 4, or per_window against per_micro_batch: the loss against samples seen,
// the learning rate, validation loss and accuracy per epoch, and a table of each run's numbers.

#include "example_options.hpp"

using namespace accrue;

int main(int argc, char** argv) {
  CLI::App app{"Runs side by side: one page from the JSON lines of --report"};
  std::vector<std::string> runs;
  std::string output = "compare.html";
  app.add_option("runs", runs, "The JSON lines of each run (run.jsonl, written beside run.html)")->required();
  app.add_option("-o,--output", output, "The page to write")->capture_default_str();
  return examples::run_example(app, argc, argv, [&] {
    examples::ExampleOptions::Inputs inputs;
    for (const std::string& r : runs) inputs.emplace_back(r, "a run's JSON lines");
    require_output_file(output, "--output", inputs);
    write_text_atomically(output, callbacks::comparison_page(runs));
    fmt::print("{} run{} compared: {}\n", runs.size(), runs.size() == 1 ? "" : "s", output);
  });
}
