// Training throughput of the character-level GPT of examples/07_char_lm.cpp in tokens per second,
// Accrue against the same model in PyTorch (bench/pytorch_char_lm.py: nn.TransformerEncoderLayer
// blocks, pre-LayerNorm, GELU, causal mask), in one run.
//
//   char_lm_tokens [--reps 5] [--configs 16x4,16x4amp] [--blocks 128] [--block-size 128] [--width 128]
//                  [--layers 4] [--heads 4] [--vocab 113] [--python /usr/bin/python3] [--no-pytorch]
//
// A configuration BxK is micro-batches of B sequences accumulated K per optimizer step; "amp"
// trains under bfloat16 autocast (Accrue's .amp(), PyTorch's torch.autocast). Each timed round
// trains --blocks random blocks (their tokens do not change the work) with AdamW and clipping;
// Accrue and PyTorch alternate (A B A B ...) so both see the same machine state, and the table
// gives the median tokens per second and the ratio. PyTorch runs with 2 threads and
// OMP_WAIT_POLICY=PASSIVE, as in bench/mlp_epoch.

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <algorithm>
#include <chrono>
#include <map>

#include "python_worker.hpp"
#include "timing.hpp"

using namespace accrue;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  CLI::App app{"Tokens per second of the char_lm GPT: Accrue against PyTorch"};
  int reps = 5, layers_n = 4;
  std::int64_t blocks = 128, block_size = 128, width = 128, heads = 4, vocab = 113;
  std::vector<std::string> configs = {"16x4", "16x4amp"};
  std::string python = "/usr/bin/python3";
  bool no_pytorch = false;
  bench::add_comparison_options(app, reps, "Rounds timed per configuration and framework", python, no_pytorch);
  app.add_option("--configs", configs, "BxK[amp] configurations")->delimiter(',');
  app.add_option("--blocks", blocks, "Blocks trained per round")->check(CLI::PositiveNumber);
  app.add_option("--block-size", block_size, "Tokens per block")->check(CLI::PositiveNumber);
  app.add_option("--width", width, "Model width")->check(CLI::PositiveNumber);
  app.add_option("--layers", layers_n, "Transformer blocks")->check(CLI::PositiveNumber);
  app.add_option("--heads", heads, "Attention heads")->check(CLI::PositiveNumber);
  app.add_option("--vocab", vocab, "Vocabulary (the fortunes have 113 characters)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  Generator gen{0};
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(blocks * (block_size + 1)));
  for (auto& t : tokens) t = static_cast<std::int32_t>(gen.below(static_cast<std::uint64_t>(vocab)));
  const Tensor all = Tensor::from(tokens, {blocks, block_size + 1});
  const Dataset train{ops::slice(all, 1, 0, block_size), ops::slice(all, 1, 1, block_size + 1), "random blocks"};

  std::unique_ptr<bench::PythonWorker> torch;
  if (!no_pytorch) {
    const std::string script = bench::script_beside(argv[0], "pytorch_char_lm.py", ACCRUE_BENCH_DIR);
    try {
      torch = std::make_unique<bench::PythonWorker>(
          python,
          std::vector<std::string>{script, std::to_string(vocab), std::to_string(block_size), std::to_string(width),
                                   std::to_string(layers_n), std::to_string(heads), "cpu"},
          std::vector<std::pair<std::string, std::string>>{{"BENCH_THREADS", "2"}, {"OMP_WAIT_POLICY", "PASSIVE"}});
      fmt::print("PyTorch: torch {}\n", torch->banner().substr(6));
    } catch (const Error& e) {
      fmt::print("PyTorch: not run ({})\n", e.what());
    }
  }

  using Config = bench::BatchConfig;
  std::vector<Config> runs;
  for (const std::string& c : configs) runs.push_back(bench::parse_batch_config(c));
  std::map<std::string, Sequential> models;
  const auto torch_round = [&](const Config& c) {
    return torch->ask(fmt::format("train {} {} {} {}", c.batch, c.accumulate, c.amp ? "amp" : "f32", blocks));
  };
  for (const Config& c : runs) {
    manual_seed(0);
    Sequential m{layers::Input{block_size}, layers::Embedding{vocab, width}, layers::PositionalEmbedding{block_size}};
    for (int i = 0; i < layers_n; ++i) m.add(layers::TransformerBlock{heads, width, {.causal = true}});
    m.add(layers::LayerNorm{});
    m.add(layers::Dense{vocab});
    optim::Recipe recipe = optim::AdamW{.lr = 1e-3, .weight_decay = 0.1}.accumulate(c.accumulate).clip(1.0);
    if (c.amp) recipe = recipe.amp();
    m.compile(recipe, losses::CrossEntropy{});
    m.fit(train.take(c.batch * c.accumulate), {.batch_size = c.batch, .verbose = 0});  // warm-up
    if (torch) torch_round(c);
    models.emplace(c.name, std::move(m));
  }
  std::map<std::string, std::vector<double>> ours, theirs;
  for (int r = 0; r < reps; ++r)
    for (const Config& c : runs) {
      const auto t = Clock::now();
      models.at(c.name).fit(train, {.batch_size = c.batch, .seed = static_cast<std::uint64_t>(r), .verbose = 0});
      ours[c.name].push_back(std::chrono::duration<double>(Clock::now() - t).count());
      if (torch) theirs[c.name].push_back(torch_round(c));
      fmt::print(stderr, "rep {} {}: accrue {:.3f} s{}\n", r + 1, c.name, ours[c.name].back(),
                 torch ? fmt::format(", pytorch {:.3f} s", theirs[c.name].back()) : "");
    }
  const double tokens_per_round = static_cast<double>(blocks * block_size);
  fmt::print("\nGPT: {} blocks of width {}, {} heads, context {}, vocabulary {}; {} tokens per round, AdamW, clip 1\n",
             layers_n, width, heads, block_size, vocab, blocks * block_size);
  fmt::print("| config | Accrue tokens/s (median) | PyTorch tokens/s (median) | Accrue / PyTorch |\n|---|---|---|---|\n");
  for (const Config& c : runs) {
    const double a = tokens_per_round / bench::median(ours[c.name]);
    if (!torch) {
      fmt::print("| {} | {:.0f} | not run | - |\n", c.name, a);
      continue;
    }
    const double p = tokens_per_round / bench::median(theirs[c.name]);
    fmt::print("| {} | {:.0f} | {:.0f} | {:.2f}x |\n", c.name, a, p, a / p);
  }
  return 0;
}
