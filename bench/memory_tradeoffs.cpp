// Memory against time at one effective batch: every micro-batch dividing it, with and without
// recomputation, for the character-level GPT at a size where activations dominate (8 blocks of
// width 256 over 256 characters) and for the CNN of examples/05. For each configuration: the
// memory plan's peak, the measured peak and its activations, and the seconds per sample, beside
// PyTorch's same network plain and with torch.utils.checkpoint (bench/pytorch_memory_tradeoffs.py)
// in the same run, at the whole effective batch and at a quarter of it accumulated 4. Then fit's planner under a budget of half the plain peak: its choice against the
// fastest configuration whose plan fits, found here by trying them all.
//
//   memory_tradeoffs [--models gpt,cnn] [--effective 16] [--reps 5] [--windows 2] [--blocks 8]
//                    [--width 256] [--context 256] [--heads 4] [--micro-batches 16,4,1]
//                    [--python /usr/bin/python3] [--no-pytorch]
//
// Each timed round trains `windows` optimizer steps of the effective batch with AdamW; the
// configurations and PyTorch alternate within a round, and the table gives medians. Peaks are those
// of a second fit (the first makes the optimizer state) with the model alone in memory, the dataset
// left out. Runs are under a memory limit far above the peaks, as the planner's are (weight
// gradients then are not deferred to the window's end, see AccumulateOptions::weight_gradients).

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <chrono>
#include <functional>
#include <map>

#include "python_worker.hpp"
#include "timing.hpp"

using namespace accrue;
using Clock = std::chrono::steady_clock;

namespace {

struct Network {
  std::string name;
  std::function<Sequential()> make;
  Dataset data;
  RecomputePolicy recompute;  // the one PyTorch's checkpointing mirrors
  std::vector<RecomputePolicy> policies;
  std::vector<std::string> torch_args;
};

struct Config {
  std::int64_t micro_batch = 0;
  std::int64_t accumulation = 0;
  RecomputePolicy recompute;
  std::size_t planned = 0, measured = 0, activations = 0;
  std::vector<double> seconds, torch_seconds;
  bool torch = false;  // PyTorch runs it too
  std::string name() const { return fmt::format("{} x {}, {}", micro_batch, accumulation, recompute.str()); }
};

Sequential compiled(const Network& net, const Config& c) {
  manual_seed(0);
  Sequential m = net.make();
  m.compile(optim::AdamW{.lr = 1e-3}.accumulate(static_cast<int>(c.accumulation)), losses::CrossEntropy{});
  m.build(net.data.sample_shape());
  m.recompute(c.recompute);
  return m;
}

FitOptions fit_options(const Config& c) { return {.batch_size = c.micro_batch, .shuffle = false, .verbose = 0}; }

// The plan's peak and the measured one (a second fit, the model alone, the dataset left out).
void measure_memory(const Network& net, Config& c, const Dataset& window) {
  Sequential m = compiled(net, c);
  c.planned = m.memory_plan(c.micro_batch, c.accumulation > 1, /*under_limit=*/true).peak_total;
  m.fit(window, fit_options(c));
  reset_peak_memory();
  const std::size_t dataset = memory_stats().live_of(MemoryCategory::data);
  m.fit(window, fit_options(c));
  const MemoryStats s = memory_stats();
  c.measured = s.peak_total - dataset;
  c.activations = s.peak_of(MemoryCategory::activations);
}

std::string torch_request(const Config& c, std::int64_t samples) {
  return fmt::format("train {} {} {} {}", c.micro_batch, c.accumulation,
                     c.recompute.mode == RecomputePolicy::Mode::none ? "plain" : "ckpt", samples);
}

// The planner's choice under `budget`, trained once (its table printed).
PlanChoice planner_choice(const Network& net, std::int64_t effective, std::size_t budget, const Dataset& window) {
  manual_seed(0);
  Sequential m = net.make();
  m.compile(optim::AdamW{.lr = 1e-3}.effective_batch(effective).memory_budget(budget), losses::CrossEntropy{});
  PlanChoice choice;
  m.fit(window, {.callbacks = {callbacks::Lambda{{.train_begin = [&](TrainingContext& c) { choice = *c.memory_choice; }}}},
                 .verbose = 0});
  return choice;
}

void run(const Network& net, std::int64_t effective, const std::vector<std::int64_t>& micro_batches, int reps,
         int windows, bench::PythonWorker* torch) {
  std::vector<Config> configs;
  for (const RecomputePolicy& p : net.policies)
    for (std::int64_t m : micro_batches)
      if (effective % m == 0)
        configs.push_back({.micro_batch = m, .accumulation = effective / m, .recompute = p,
                           .torch = torch && (m == effective || m == effective / 4) &&
                                    (p.mode == RecomputePolicy::Mode::none || p.str() == net.recompute.str())});
  const Dataset window = net.data.take(effective);
  const Dataset round = net.data.take(effective * windows);
  for (Config& c : configs) {
    measure_memory(net, c, window);
    fmt::print(stderr, "{} {}: planned {}, measured {}\n", net.name, c.name(), format_bytes(c.planned), format_bytes(c.measured));
  }
  std::vector<Sequential> models;
  for (const Config& c : configs) {
    models.push_back(compiled(net, c));
    models.back().fit(window, fit_options(c));  // warm-up, and the optimizer state
    if (c.torch) torch->ask(torch_request(c, effective));
  }
  for (int r = 0; r < reps; ++r)
    for (std::size_t i = 0; i < configs.size(); ++i) {
      Config& c = configs[i];
      const auto t = Clock::now();
      models[i].fit(round, fit_options(c));
      c.seconds.push_back(std::chrono::duration<double>(Clock::now() - t).count() / static_cast<double>(round.size()));
      if (c.torch) c.torch_seconds.push_back(torch->ask(torch_request(c, round.size())) / static_cast<double>(round.size()));
      fmt::print(stderr, "rep {} {} {}: {:.3g} ms/sample{}\n", r + 1, net.name, c.name(), 1e3 * c.seconds.back(),
                 c.torch ? fmt::format(", PyTorch {:.3g}", 1e3 * c.torch_seconds.back()) : "");
    }
  models.clear();

  const Config& plain = configs.front();  // the whole effective batch, nothing recomputed
  fmt::print("\n{}: effective batch {}, AdamW; {} samples per timed round, median of {}\n", net.name, effective,
             round.size(), reps);
  fmt::print("| micro-batch x accumulation | recompute | planned peak | measured peak | activations | ms/sample | "
             "x plain | PyTorch ms/sample |\n|---|---|---|---|---|---|---|---|\n");
  for (const Config& c : configs)
    fmt::print("| {} x {} | {} | {} | {} | {} | {:.3g} | {:.2f} | {} |\n", c.micro_batch, c.accumulation, c.recompute.str(),
               format_bytes(c.planned), format_bytes(c.measured), format_bytes(c.activations), 1e3 * bench::median(c.seconds),
               bench::median(c.seconds) / bench::median(plain.seconds),
               c.torch ? fmt::format("{:.3g}{}", 1e3 * bench::median(c.torch_seconds),
                                     c.recompute.mode == RecomputePolicy::Mode::none ? "" : " (checkpoint)")
                       : std::string{"-"});
  for (const Config& c : configs)
    if (c.micro_batch == plain.micro_batch && c.recompute.str() == net.recompute.str())
      fmt::print("recomputing {} at {} x {}: measured activations {} -> {} (-{:.0f}%), time per sample x{:.2f}\n",
                 c.recompute.str(), c.micro_batch, c.accumulation, format_bytes(plain.activations),
                 format_bytes(c.activations), 100.0 * (1.0 - double(c.activations) / double(plain.activations)),
                 bench::median(c.seconds) / bench::median(plain.seconds));

  const std::size_t budget = plain.planned / 2;
  PlanChoice choice;
  try {
    choice = planner_choice(net, effective, budget, window);
  } catch (const ValueError& e) {
    fmt::print("planner under half the plain plan's peak: {}\n", e.what());
    return;
  }
  fmt::print("planner under half the plain plan's peak:\n{}", choice.str());
  const Config* fastest = nullptr;
  const Config* chosen = nullptr;
  for (const Config& c : configs) {
    if (c.planned <= budget && (!fastest || bench::median(c.seconds) < bench::median(fastest->seconds))) fastest = &c;
    if (c.micro_batch == choice.choice().micro_batch && c.recompute.str() == choice.choice().recompute.str()) chosen = &c;
  }
  if (!fastest || !chosen) {
    fmt::print("the planner's choice or the fastest fitting configuration is not among those timed here (--micro-batches)\n");
    return;
  }
  fmt::print("planner's choice {} at {:.3g} ms/sample; fastest fitting configuration tried {} at {:.3g}: x{:.2f}\n",
             chosen->name(), 1e3 * bench::median(chosen->seconds), fastest->name(), 1e3 * bench::median(fastest->seconds),
             bench::median(chosen->seconds) / bench::median(fastest->seconds));
}

Network gpt(std::int64_t blocks, std::int64_t width, std::int64_t context, std::int64_t heads, std::int64_t samples) {
  constexpr std::int64_t vocab = 256;
  Generator gen{0};
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(samples * (context + 1)));
  for (auto& t : tokens) t = static_cast<std::int32_t>(gen.below(vocab));
  const Tensor all = Tensor::from(tokens, {samples, context + 1});
  auto make = [=] {
    Sequential m{layers::Input{context}, layers::Embedding{vocab, width}, layers::PositionalEmbedding{context}};
    for (std::int64_t i = 0; i < blocks; ++i) m.add(layers::TransformerBlock{heads, width, {.causal = true}});
    m.add(layers::LayerNorm{});
    m.add(layers::Dense{vocab});
    return m;
  };
  return {fmt::format("GPT ({} blocks of width {}, {} heads, over {} characters)", blocks, width, heads, context),
          make,
          Dataset{ops::slice(all, 1, 0, context), ops::slice(all, 1, 1, context + 1), "random text"},
          RecomputePolicy::of_types({"TransformerBlock"}),
          {RecomputePolicy{}, RecomputePolicy::of_types({"TransformerBlock"}), RecomputePolicy::every()},
          {"gpt", std::to_string(vocab), std::to_string(context), std::to_string(width), std::to_string(blocks),
           std::to_string(heads), "cpu"}};
}

Network cnn(std::int64_t samples) {
  auto make = [] {
    return Sequential{layers::Input{1, 28, 28}, layers::Conv2d{32, 3, {.padding = 1}}, layers::ReLU{}, layers::MaxPool2d{2},
                      layers::Conv2d{64, 3, {.padding = 1}}, layers::ReLU{}, layers::MaxPool2d{2}, layers::Flatten{},
                      layers::Dense{128}, layers::ReLU{}, layers::Dense{10}};
  };
  Generator gen{1};
  std::vector<float> x(static_cast<std::size_t>(samples * 28 * 28));
  for (float& v : x) v = static_cast<float>(gen.next_double());
  std::vector<std::int32_t> y(static_cast<std::size_t>(samples));
  for (auto& v : y) v = static_cast<std::int32_t>(gen.below(10));
  return {"CNN (examples/05: two blocks of 3x3 convolution, ReLU, max-pool; 128 hidden)",
          make,
          Dataset{Tensor::from(x, {samples, 1, 28, 28}), Tensor::from(y, {samples}), "random images"},
          RecomputePolicy::every(),
          {RecomputePolicy{}, RecomputePolicy::every()},
          {"cnn", "cpu"}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Memory against time: micro-batch, accumulation and recomputation at one effective batch"};
  std::vector<std::string> models = {"gpt", "cnn"};
  std::int64_t effective = 16, blocks = 8, width = 256, context = 256, heads = 4;
  std::vector<std::int64_t> micro_batches;
  int reps = 5, windows = 2;
  std::string python = "/usr/bin/python3";
  bool no_pytorch = false;
  app.add_option("--models", models, "gpt, cnn")->delimiter(',');
  app.add_option("--effective", effective, "The effective batch (the CNN's is 16 times it)")->check(CLI::PositiveNumber);
  app.add_option("--micro-batches", micro_batches, "GPT: micro-batches tried, largest first (default: every divisor)")
      ->delimiter(',');
  bench::add_comparison_options(app, reps, "Timed rounds", python, no_pytorch);
  app.add_option("--windows", windows, "Optimizer steps per timed round")->check(CLI::PositiveNumber);
  app.add_option("--blocks", blocks, "GPT: Transformer blocks")->check(CLI::PositiveNumber);
  app.add_option("--width", width, "GPT: width")->check(CLI::PositiveNumber);
  app.add_option("--context", context, "GPT: characters per sample")->check(CLI::PositiveNumber);
  app.add_option("--heads", heads, "GPT: attention heads")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  // Far above every peak: the runs plan and train as under the planner's budget.
  set_memory_limit(Device::cpu(), std::size_t{1} << 40);
  for (const std::string& name : models) {
    const std::int64_t e = name == "cnn" ? effective * 16 : effective;
    const Network net = name == "cnn" ? cnn(e * windows) : gpt(blocks, width, context, heads, e * windows);
    std::vector<std::int64_t> ms = name == "gpt" ? micro_batches : std::vector<std::int64_t>{};
    if (ms.empty())
      for (std::int64_t m = e; m >= 1; --m)
        if (e % m == 0) ms.push_back(m);
    std::unique_ptr<bench::PythonWorker> torch;
    if (!no_pytorch) try {
        torch = std::make_unique<bench::PythonWorker>(
            python, [&] {
              std::vector<std::string> args{bench::script_beside(argv[0], "pytorch_memory_tradeoffs.py", ACCRUE_BENCH_DIR)};
              args.insert(args.end(), net.torch_args.begin(), net.torch_args.end());
              return args;
            }(),
            std::vector<std::pair<std::string, std::string>>{{"BENCH_THREADS", "2"}, {"OMP_WAIT_POLICY", "PASSIVE"}});
        fmt::print("PyTorch: torch {}\n", torch->banner().substr(6));
      } catch (const Error& e) {
        fmt::print("PyTorch: not run ({})\n", e.what());
      }
    run(net, e, ms, reps, windows, torch.get());
  }
  return 0;
}
