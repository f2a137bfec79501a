// The tutorials' out-of-memory story on a laptop: the FashionMNIST tutorial MLP trained with batch 64
// directly, and as 16 x 4, 8 x 8 and 4 x 16 (micro-batch x accumulation, the same effective batch),
// and 64 and 16 x 4 again with recomputation ("64r": sqrt(n) segments of layers whose activations
// are not kept but computed again during backward, RecomputePolicy::every()).
// For each: the memory plan made before training, the peak measured while training by category,
// and the time per epoch. Then a memory limit between the plans of 16 x 4 and 64: batch 64 fails
// with the out-of-memory error, 16 x 4 trains, and its accuracy is the last line. --report PATH draws
// the same as a page: planned and measured peaks as grouped bars, with the time per epoch.
//
//   04_memory_comparison [--epochs 1] [--data DIR] [--seed 0] [--amp[=f16|bf16]] [--device best|cpu|cuda]
//                        [--configs 64,16x4,8x8,4x16,64r,16x4r] [--report PATH]

#include <nlohmann/json.hpp>

#include <chrono>
#include <limits>

#include "example_options.hpp"

using namespace accrue;

namespace accrue::detail {
std::string_view memory_comparison_page();  // 04_memory_comparison.html, compiled in by CMake
}

namespace {

struct Config {
  std::string name;
  std::int64_t micro_batch;
  int accumulate;
  bool recompute = false;
};

// "16x4" (micro-batch x accumulation) or "64", with "r" after it for recomputation; anything else
// is an error naming --configs.
Config parse(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return ValueError(
        fmt::format("--configs: '{}' {}; write MICRO or MICROxACCUMULATION, e.g. 64 or 16x4, and r after it to "
                    "recompute (64r)",
                    text, why));
  };
  const auto whole = [&](std::string_view part, std::int64_t high) {
    const auto value = examples::parse_whole_number(part, 1, static_cast<std::uint64_t>(high));
    if (!value) throw bad(fmt::format("has '{}' where a whole number from 1 to {} belongs", part, high));
    return static_cast<std::int64_t>(*value);
  };
  std::string_view all{text};
  const bool recompute = !all.empty() && all.back() == 'r';
  if (recompute) all.remove_suffix(1);
  const auto x = all.find('x');
  const std::int64_t micro = whole(all.substr(0, x), std::numeric_limits<std::int64_t>::max());
  const auto accumulate =
      x == std::string_view::npos ? 1 : static_cast<int>(whole(all.substr(x + 1), std::numeric_limits<int>::max()));
  std::int64_t effective = 0;
  if (__builtin_mul_overflow(micro, std::int64_t{accumulate}, &effective)) throw bad("is a larger batch than 64 bits count");
  return {text, micro, accumulate, recompute};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Batch 64 against micro-batches with accumulation: memory and time"};
  examples::ExampleOptions common{.epochs = 1};
  std::vector<std::string> config_names = {"64", "16x4", "8x8", "4x16", "64r", "16x4r"};
  common.add_to(app);
  common.add_report_flag(app);
  app.add_option("--configs", config_names, "Micro-batch x accumulation to compare, r after it to recompute")
      ->delimiter(',');

  return examples::run_example(app, argc, argv, [&] {
    std::vector<Config> configs;
    for (const std::string& name : config_names) configs.push_back(parse(name));
    ACCRUE_CHECK(!configs.empty(), "--configs: no configuration given");
    common.check_report(common.fashion_mnist_inputs(), false);
    const Device device = common.target();
    const auto compiled = [&](const Config& c) {
      manual_seed(common.seed);
      Sequential m = examples::tutorial_mlp();
      m.to(device);
      optim::Recipe recipe = optim::SGD{.lr = 1e-3};
      if (c.accumulate > 1) recipe = recipe.accumulate(c.accumulate);
      m.compile(common.with_amp(recipe), losses::CrossEntropy{}, {metrics::Accuracy{}});
      if (c.recompute) m.recompute(RecomputePolicy::every());
      return m;
    };

    auto [train, test] = datasets::fashion_mnist(common.data);
    const std::size_t dataset = memory_stats(device).live_of(MemoryCategory::data);
    fmt::print("Tutorial MLP on {} training samples ({} of them in memory, not counted below); r: recomputing {}.\n\n",
               train.size(), format_bytes(dataset), RecomputePolicy::every().str());
    nlohmann::ordered_json page{{"device", device.str()},
                                {"precision", ""},
                                {"samples", train.size()},
                                {"epochs", common.epochs},
                                {"dataset_bytes", dataset},
                                {"categories", category_names()},
                                {"configs", nlohmann::json::array()}};
    fmt::print("{:<6} {:>9} | {:>11} {:>11} | {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} | {:>8}\n", "config",
               "effective", "planned", "measured", "parameters", "gradients", "activations", "temporaries",
               "batch data", "opt. state", "s/epoch");
    for (const Config& c : configs) {
      Sequential model = compiled(c);
      const MemoryPlan plan = model.memory_plan(c.micro_batch);
      const auto start = std::chrono::steady_clock::now();
      const History h =
          model.fit(train, {.epochs = common.epochs, .batch_size = c.micro_batch, .seed = common.seed, .verbose = 0});
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / common.epochs;
      MemoryStats m = h.memory().back();
      const std::size_t batch_data = m.peak_of(MemoryCategory::data) - dataset;
      fmt::print("{:<6} {:>9} | {:>11} {:>11} | {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} | {:>8.2f}\n", c.name,
                 c.micro_batch * c.accumulate, format_bytes(plan.peak_total), format_bytes(m.peak_total - dataset),
                 format_bytes(m.peak_of(MemoryCategory::parameters)), format_bytes(m.peak_of(MemoryCategory::gradients)),
                 format_bytes(m.peak_of(MemoryCategory::activations)),
                 format_bytes(m.peak_of(MemoryCategory::temporaries)), format_bytes(batch_data),
                 format_bytes(m.peak_of(MemoryCategory::optimizer_state)), seconds);
      page["precision"] = plan.precision;
      auto measured_parts = m.peak;
      measured_parts[static_cast<int>(MemoryCategory::data)] = batch_data;
      page["configs"].push_back({{"name", c.name},
                                 {"micro_batch", c.micro_batch},
                                 {"accumulate", c.accumulate},
                                 {"recompute", c.recompute},
                                 {"effective", c.micro_batch * c.accumulate},
                                 {"planned", plan.peak_total},
                                 {"measured", m.peak_total - dataset},
                                 {"planned_parts", plan.peak},
                                 {"measured_parts", measured_parts},
                                 {"seconds", seconds}});
    }

    // A limit between what 16 x 4 and batch 64 need, beside what is live already.
    const Config big = parse("64"), small = parse("16x4");
    const std::size_t need_big = compiled(big).memory_plan(big.micro_batch).peak_total;
    const std::size_t need_small = compiled(small).memory_plan(small.micro_batch).peak_total;
    const std::size_t besides = memory_stats(device).live_total;  // no model alive here
    const std::size_t limit = besides + (need_small + need_big) / 2;
    set_memory_limit(device, limit);
    fmt::print("\nWith a limit of {} ({} of it the dataset and what else is live):\n", format_bytes(limit),
               format_bytes(besides));
    std::optional<double> accuracy;
    page["limit"] = {{"bytes", limit}, {"besides", besides}, {"results", nlohmann::json::array()}};
    for (const Config& c : {big, small}) {
      Sequential model = compiled(c);
      try {
        model.fit(train, {.epochs = 1, .batch_size = c.micro_batch, .seed = common.seed, .verbose = 0});
        accuracy = model.evaluate(test).first_metric();
        fmt::print("  {} trains: test accuracy {:.1f}% after one epoch\n", c.name, 100.0 * *accuracy);
        page["limit"]["results"].push_back({{"name", c.name}, {"trained", true}, {"accuracy", *accuracy}});
      } catch (const OutOfMemory& e) {
        fmt::print("  {} fails:\n{}\n", c.name, e.what());
        page["limit"]["results"].push_back({{"name", c.name}, {"trained", false}, {"message", e.what()}});
      }
    }
    set_memory_limit(device, 0);
    if (!common.report.empty()) {
      write_text_atomically(common.report, callbacks::fill_report_page(detail::memory_comparison_page(),
                                                                      "Memory at equal effective batch", page.dump()));
      fmt::print("\nThe page: {}\n", common.report);
    }
    if (!accuracy) throw OutOfMemory("neither batch 64 nor 16 x 4 trained within the limit");
    common.print_accuracy(*accuracy);
  });
}
