// The tutorials' out-of-memory story on a laptop: the FashionMNIST tutorial MLP trained with batch 64
// directly, and as 16 x 4, 8 x 8 and 4 x 16 (micro-batch x accumulation, the same effective batch).
// For each: the memory plan made before training, the peak measured while training by category,
// and the time per epoch. Then a memory limit between the plans of 16 x 4 and 64: batch 64 fails
// with the out-of-memory error, 16 x 4 trains.
//
//   memory_comparison [--epochs 1] [--data DIR] [--configs 64,16x4,8x8,4x16]

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <chrono>

using namespace accrue;

namespace {

Sequential tutorial_model() {
  return Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
                    layers::Dense{512},       layers::ReLU{},    layers::Dense{10}};
}

struct Config {
  std::string name;
  std::int64_t micro_batch;
  int accumulate;
};

Config parse(const std::string& c) {
  const auto x = c.find('x');
  return {c, std::stoll(c.substr(0, x)), x == std::string::npos ? 1 : std::stoi(c.substr(x + 1))};
}

Sequential compiled(const Config& c) {
  manual_seed(0);
  Sequential m = tutorial_model();
  optim::Recipe recipe = optim::SGD{.lr = 1e-3};
  if (c.accumulate > 1) recipe = recipe.accumulate(c.accumulate);
  m.compile(recipe, losses::CrossEntropy{}, {metrics::Accuracy{}});
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Batch 64 against micro-batches with accumulation: memory and time"};
  int epochs = 1;
  std::string data;
  std::vector<std::string> configs = {"64", "16x4", "8x8", "4x16"};
  app.add_option("--epochs", epochs, "Epochs per configuration")->check(CLI::PositiveNumber);
  app.add_option("--data", data, "Folder with the FashionMNIST IDX files");
  app.add_option("--configs", configs, "Micro-batch x accumulation to compare")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  try {
    auto [train, test] = datasets::fashion_mnist(data);
    const std::size_t dataset = memory_stats().live_of(MemoryCategory::data);
    fmt::print("Tutorial MLP on {} training samples ({} of them in memory, not counted below).\n\n", train.size(),
               format_bytes(dataset));
    fmt::print("{:<6} {:>9} | {:>11} {:>11} | {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} | {:>8}\n", "config",
               "effective", "planned", "measured", "parameters", "gradients", "activations", "temporaries",
               "batch data", "opt. state", "s/epoch");
    for (const std::string& name : configs) {
      const Config c = parse(name);
      Sequential model = compiled(c);
      const MemoryPlan plan = model.memory_plan(c.micro_batch);
      const auto start = std::chrono::steady_clock::now();
      const History h = model.fit(train, {.epochs = epochs, .batch_size = c.micro_batch, .verbose = 0});
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / epochs;
      MemoryStats m = h.memory().back();
      const std::size_t batch_data = m.peak_of(MemoryCategory::data) - dataset;
      fmt::print("{:<6} {:>9} | {:>11} {:>11} | {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} | {:>8.2f}\n", c.name,
                 c.micro_batch * c.accumulate, format_bytes(plan.peak_total), format_bytes(m.peak_total - dataset),
                 format_bytes(m.peak_of(MemoryCategory::parameters)), format_bytes(m.peak_of(MemoryCategory::gradients)),
                 format_bytes(m.peak_of(MemoryCategory::activations)),
                 format_bytes(m.peak_of(MemoryCategory::temporaries)), format_bytes(batch_data),
                 format_bytes(m.peak_of(MemoryCategory::optimizer_state)), seconds);
    }

    // A limit between what 16 x 4 and batch 64 need, beside what is live already.
    const Config big = parse("64"), small = parse("16x4");
    const std::size_t need_big = compiled(big).memory_plan(big.micro_batch).peak_total;
    const std::size_t need_small = compiled(small).memory_plan(small.micro_batch).peak_total;
    const std::size_t besides = memory_stats().live_total;  // no model alive here
    const std::size_t limit = besides + (need_small + need_big) / 2;
    set_memory_limit(Device::cpu(), limit);
    fmt::print("\nWith a limit of {} ({} of it the dataset and what else is live):\n", format_bytes(limit),
               format_bytes(besides));
    for (const Config& c : {big, small}) {
      Sequential model = compiled(c);
      try {
        model.fit(train, {.epochs = 1, .batch_size = c.micro_batch, .verbose = 0});
        fmt::print("  {} trains: test accuracy {:.1f}% after one epoch\n", c.name, 100.0 * model.evaluate(test).first_metric());
      } catch (const OutOfMemory& e) {
        fmt::print("  {} fails:\n{}\n", c.name, e.what());
      }
    }
    set_memory_limit(Device::cpu(), 0);
  } catch (const Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
