// data_parallel --shard: sharded data parallelism (FitOptions::shard, ZeRO stages 1 and 2) for the
// character-level GPT of examples/07_char_lm.cpp with AdamW on 2 processes: per process, the epoch's
// time, the measured peak and optimizer state, and the bytes each process sends per optimizer step,
// unsharded, stage 1, and stage 2 reduced at the window's close and every micro-batch; beside
// PyTorch's DistributedDataParallel with AdamW and with ZeroRedundancyOptimizer over gloo
// (bench/pytorch_zero.py), in the same run, the runs alternating. Stage 1 must cut the optimizer
// state per process by at least 45% and cost at most 1.15x the unsharded epoch (checked, printed).

#include "data_parallel_shard.hpp"

#include <accrue/accrue.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>

#include "timing.hpp"

namespace accrue::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Mode {
  std::string name, flag;  // flag: the worker's --shard
  Shard shard;
  ShardAccumulation accumulation = ShardAccumulation::reduce_at_window_close;
};
const std::vector<Mode> modes{{"unsharded", "none", Shard::none},
                              {"stage 1", "optimizer_state", Shard::optimizer_state},
                              {"stage 2, at the close", "gradients_at_close", Shard::gradients},
                              {"stage 2, each micro-batch", "gradients_each", Shard::gradients,
                               ShardAccumulation::reduce_each_micro_batch}};

const Mode& mode_named(const std::string& flag) {
  for (const Mode& m : modes)
    if (m.flag == flag) return m;
  throw ValueError(fmt::format("--shard {}: one of none, optimizer_state, gradients_at_close, gradients_each", flag));
}

// What one process measured: "shardresult RANK SECONDS PEAK OPTIMIZER_STATE SENT_PER_STEP".
struct Measured {
  int rank = 0;
  double seconds = 0, peak = 0, optimizer_state = 0, sent_per_step = 0;
};

std::vector<Measured> run_workers(const std::string& command) {
  int status = 0;
  const std::string output = command_output(command, status);
  std::vector<Measured> out;
  for (std::size_t at = output.find("shardresult "); at != std::string::npos; at = output.find("shardresult ", at + 12)) {
    Measured m;
    std::istringstream in(output.substr(at + 12));
    in >> m.rank >> m.seconds >> m.peak >> m.optimizer_state >> m.sent_per_step;
    out.push_back(m);
  }
  std::sort(out.begin(), out.end(), [](const Measured& a, const Measured& b) { return a.rank < b.rank; });
  if (status != 0 || out.size() != 2) throw Error(fmt::format("`{}` failed (status {}):\n{}", command, status, output));
  return out;
}

// Bytes a process sends for the collectives it made, as a ring would: 2(p-1)/p of an allreduce's
// tensor, (p-1)/p of a reduce-scatter's and of an allgather's.
double sent_bytes(const distributed::CommunicationStats& s, int processes) {
  const double part = static_cast<double>(processes - 1) / processes;
  return 2 * part * static_cast<double>(s.tensor_allreduce_bytes) +
         part * static_cast<double>(s.tensor_reduce_scatter_bytes + s.tensor_allgather_bytes);
}

Sequential gpt(const ShardOptions& o) {
  Sequential m{layers::Input{o.block_size}, layers::Embedding{o.vocab, o.width}, layers::PositionalEmbedding{o.block_size}};
  for (int i = 0; i < o.layers; ++i) m.add(layers::TransformerBlock{o.heads, o.width, {.causal = true}});
  m.add(layers::LayerNorm{});
  m.add(layers::Dense{o.vocab});
  return m;
}

std::string cell(const std::vector<double>& v, double scale, const char* format) {
  return v.empty() ? std::string("-") : fmt::format(fmt::runtime(format), bench::median(v) / scale);
}

}  // namespace

std::string command_output(const std::string& command, int& status) {
  std::FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw Error("popen failed: " + command);
  std::string output;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe) != nullptr) output += line;
  status = pclose(pipe);
  return output;
}

int shard_worker(const ShardOptions& o, const std::string& flag) {
  const Mode& mode = mode_named(flag);
  Generator gen{0};
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(o.blocks * (o.block_size + 1)));
  for (auto& t : tokens) t = static_cast<std::int32_t>(gen.below(static_cast<std::uint64_t>(o.vocab)));
  const Tensor all = Tensor::from(tokens, {o.blocks, o.block_size + 1});
  const Dataset train{ops::slice(all, 1, 0, o.block_size), ops::slice(all, 1, 1, o.block_size + 1), "random blocks"};
  manual_seed(0);
  Sequential model = gpt(o);
  model.compile(optim::AdamW{.lr = 1e-3, .weight_decay = 0.1}.accumulate(o.accumulate).clip(1.0), losses::CrossEntropy{});
  distributed::Communicator& world = distributed::world();
  Clock::time_point start;
  double seconds = 0;
  std::size_t peak = 0, optimizer_state = 0;
  std::int64_t steps = 0;
  distributed::CommunicationStats before;
  model.fit(train, {.epochs = 1,
                    .batch_size = o.micro_batch,
                    .callbacks = {callbacks::Lambda{{
                        .epoch_begin = [&](int) {
                          before = world.stats();
                          start = Clock::now();
                        },
                        .optimizer_step = [&](const StepRecord&) { ++steps; },
                        .epoch_end = [&](int, Logs&) {
                          seconds = std::chrono::duration<double>(Clock::now() - start).count();
                          const MemoryStats m = memory_stats();
                          peak = m.peak_total;
                          optimizer_state = m.live_of(MemoryCategory::optimizer_state);
                        }}}},
                    .verbose = 0,
                    .distributed = true,
                    .bucket_bytes = static_cast<std::size_t>(o.bucket_mib * (1 << 20)),
                    .shard = mode.shard,
                    .shard_accumulation = mode.accumulation});
  distributed::CommunicationStats moved = world.stats();
  moved.tensor_allreduce_bytes -= before.tensor_allreduce_bytes;
  moved.tensor_reduce_scatter_bytes -= before.tensor_reduce_scatter_bytes;
  moved.tensor_allgather_bytes -= before.tensor_allgather_bytes;
  std::printf("shardresult %d %.6f %zu %zu %.0f\n", world.rank(), seconds, peak, optimizer_state,
              sent_bytes(moved, world.size()) / static_cast<double>(std::max<std::int64_t>(1, steps)));
  return 0;
}

int shard_table(const ShardOptions& o, const std::string& self, const std::string& mpirun_np2, const std::string& python) {
  const std::string shape = fmt::format("--blocks {} --block-size {} --width {} --layers {} --heads {} --vocab {} "
                                        "--micro-batch {}",
                                        o.blocks, o.block_size, o.width, o.layers, o.heads, o.vocab, o.micro_batch);
  const std::string buckets = fmt::format(" --bucket-mib {}", o.bucket_mib);
  std::vector<std::string> commands;
  for (const Mode& m : modes)
    commands.push_back(
        fmt::format("{} {} --worker gpt --shard-mode {} --k {} {}{}", mpirun_np2, self, m.flag, o.accumulate, shape, buckets));
  std::vector<std::string> names;
  for (const Mode& m : modes) names.push_back("Accrue " + m.name);
  if (!python.empty())
    for (const std::string zero : {"ddp", "zero"}) {
      commands.push_back(fmt::format("{} {}/pytorch_zero.py --optimizer {} --accumulate {} {}", python, ACCRUE_BENCH_DIR,
                                     zero, o.accumulate, shape));
      names.push_back(zero == std::string("ddp") ? "PyTorch DDP, AdamW" : "PyTorch ZeroRedundancyOptimizer");
    }
  // Per command and rank: every measurement's values, the runs alternating.
  std::vector<std::array<std::vector<Measured>, 2>> runs(commands.size());
  for (int r = 0; r < o.reps; ++r)
    for (std::size_t c = 0; c < commands.size(); ++c) {
      const std::vector<Measured> both = run_workers(commands[c]);
      for (int rank = 0; rank < 2; ++rank) runs[c][static_cast<std::size_t>(rank)].push_back(both[static_cast<std::size_t>(rank)]);
      std::fprintf(stderr, "rep %d %s: %.3f s\n", r + 1, names[c].c_str(), std::max(both[0].seconds, both[1].seconds));
    }
  const auto values = [&](std::size_t c, int rank, double Measured::*field) {
    std::vector<double> v;
    for (const Measured& m : runs[c][static_cast<std::size_t>(rank)]) v.push_back(m.*field);
    return v;
  };
  std::printf("\nGPT: %d blocks of width %ld, %ld heads, context %ld, vocabulary %ld; AdamW, clip 1; %ld blocks per "
              "epoch in micro-batches of %ld per process, accumulation %d, 2 processes, Accrue's buckets %g MiB; medians "
              "of %d runs, alternating\n",
              o.layers, static_cast<long>(o.width), static_cast<long>(o.heads), static_cast<long>(o.block_size),
              static_cast<long>(o.vocab), static_cast<long>(o.blocks), static_cast<long>(o.micro_batch), o.accumulate,
              o.bucket_mib, o.reps);
  std::printf("| run | s/epoch (slower rank) | peak MiB rank 0 / 1 | optimizer state MiB rank 0 / 1 | sent MiB per "
              "step per process |\n|---|---|---|---|---|\n");
  std::vector<double> epoch(commands.size());
  for (std::size_t c = 0; c < commands.size(); ++c) {
    std::vector<double> slower;
    for (std::size_t i = 0; i < runs[c][0].size(); ++i) slower.push_back(std::max(runs[c][0][i].seconds, runs[c][1][i].seconds));
    epoch[c] = bench::median(slower);
    const double mib = 1 << 20;
    std::printf("| %s | %.3f | %s / %s | %s / %s | %s |\n", names[c].c_str(), epoch[c],
                cell(values(c, 0, &Measured::peak), mib, "{:.1f}").c_str(), cell(values(c, 1, &Measured::peak), mib, "{:.1f}").c_str(),
                cell(values(c, 0, &Measured::optimizer_state), mib, "{:.2f}").c_str(),
                cell(values(c, 1, &Measured::optimizer_state), mib, "{:.2f}").c_str(),
                cell(values(c, 0, &Measured::sent_per_step), mib, "{:.2f}").c_str());
  }
  std::printf("(PyTorch's peak is the process's resident set, ru_maxrss, which counts the interpreter and libraries; "
              "Accrue's is its allocator's.)\n");
  // The bars: stage 1 (row 1) against unsharded (row 0), optimizer state per process and epoch time.
  double cut = 1;
  for (int rank = 0; rank < 2; ++rank)
    cut = std::min(cut, 1 - bench::median(values(1, rank, &Measured::optimizer_state)) /
                               bench::median(values(0, rank, &Measured::optimizer_state)));
  const double cost = epoch[1] / epoch[0];
  std::printf("stage 1 cuts the optimizer state per process by %.1f%% (at least 45%%: %s) and takes %.2fx the unsharded "
              "epoch (at most 1.15x: %s)\n",
              100 * cut, cut >= 0.45 ? "yes" : "NO", cost, cost <= 1.15 ? "yes" : "NO");
  return cut >= 0.45 && cost <= 1.15 ? 0 : 1;
}

void add_shard_options(CLI::App& app, ShardOptions& o) {
  app.add_option("--blocks", o.blocks, "--shard: blocks of tokens per epoch")->check(CLI::PositiveNumber);
  app.add_option("--block-size", o.block_size, "--shard: tokens per block")->check(CLI::PositiveNumber);
  app.add_option("--width", o.width, "--shard: the GPT's width")->check(CLI::PositiveNumber);
  app.add_option("--layers", o.layers, "--shard: transformer blocks")->check(CLI::PositiveNumber);
  app.add_option("--heads", o.heads, "--shard: attention heads")->check(CLI::PositiveNumber);
  app.add_option("--vocab", o.vocab, "--shard: vocabulary")->check(CLI::PositiveNumber);
  app.add_option("--micro-batch", o.micro_batch, "--shard: blocks per micro-batch and process")->check(CLI::PositiveNumber);
  app.add_option("--bucket-mib", o.bucket_mib, "--shard: Accrue's gradient buckets (MiB)")->check(CLI::PositiveNumber);
}

}  // namespace accrue::bench
