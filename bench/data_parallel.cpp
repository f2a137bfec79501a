// Data-parallel training on this machine: one process with 2 threads against 2 processes with one
// thread each (mpirun -np 2 ... --distributed), at the same effective batch, for the tutorial MLP
// (784-512-512-10, SGD 1e-3) and the CNN of examples/05_fashion_mnist_cnn.cpp (Adam 1e-3), at
// accumulation 1 and 4; beside PyTorch's DistributedDataParallel over gloo doing the same
// (bench/pytorch_ddp.py), when Debian's python3-torch is installed.
//
//   data_parallel [--reps 3] [--models mlp,cnn] [--accumulate 1,4] [--batch 64] [--data DIR]
//                 [--mlp-samples 60000] [--cnn-samples 12000] [--python /usr/bin/python3]
//                 [--no-pytorch] [--mpirun mpirun] [--per-window]
//
// --per-window gives every Accrue run accumulate(K, {.weight_gradients = WeightGradients::per_window})
// (the Dense weight gradients multiplied once per window, see docs/03_gradient_accumulation.md),
// which spares a single-thread process at a small micro-batch a read and a write of every Dense
// weight gradient per micro-batch; PyTorch runs its same loop.
//
// Each measurement is a fresh process (or mpirun of two) training one epoch on `samples` samples
// already in memory; the time is the epoch's, from the first micro-batch to the last step, without
// start-up and data loading. The runs of a configuration alternate, so all see the same machine
// state; the table gives medians. "2 alone" is two single-thread processes, one per core, each
// training half the samples with half the micro-batch and no communication at all (the slower one's
// time): what two processes cost before any gradient crosses between them. For Accrue's 2-process runs it also gives the time the gradient
// allreduces took on rank 0's MPI thread (from the call to its return, waiting for the other rank
// included) and the time rank 0's training thread waited for them at windows' ends.
//
// Last, it times the allreduce of each model's gradients alone between 2 processes that arrive
// together: the part of the allreduce column that is moving bytes rather than waiting.
//
// Worker mode (what the driver starts): data_parallel --worker mlp|cnn --batch B --k K
// --samples N [--distributed] [--per-window], or --worker allreduce --samples ELEMENTS --reps R under mpirun,
// printing one "result" line.
//
//   data_parallel --shard [--reps 3] [--accumulate 4] [--micro-batch 8] [--blocks 256] [--width 128] ...
//
// instead times sharded data parallelism (ZeRO stages 1 and 2) for the char-level GPT on 2
// processes beside PyTorch's ZeroRedundancyOptimizer (bench/data_parallel_shard.cpp); its worker
// is --worker gpt --shard-mode MODE.

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <accrue/framework/distributed/reducer.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <unistd.h>

#include "data_parallel_shard.hpp"
#include "timing.hpp"

using namespace accrue;
using Clock = std::chrono::steady_clock;

namespace {

Sequential make_model(const std::string& name) {
  if (name == "cnn")
    return Sequential{layers::Input{1, 28, 28},
                      layers::Conv2d{32, 3, {.padding = 1}}, layers::ReLU{}, layers::MaxPool2d{2},
                      layers::Conv2d{64, 3, {.padding = 1}}, layers::ReLU{}, layers::MaxPool2d{2},
                      layers::Flatten{}, layers::Dense{128}, layers::ReLU{}, layers::Dense{10}};
  return Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
                    layers::Dense{512},       layers::ReLU{},    layers::Dense{10}};
}

// One epoch in this process (one of a distributed run under mpirun); rank 0 prints
// "result SECONDS ALLREDUCE_SECONDS WAITED_SECONDS ALLREDUCES BUCKETS_DURING_BACKWARD".
int worker(const std::string& model_name, std::int64_t batch, int accumulate, bool per_window, std::int64_t samples,
           const std::string& data, bool distributed) {
  const Dataset train = datasets::fashion_mnist(data).train.take(samples);
  manual_seed(0);
  Sequential model = make_model(model_name);
  const optim::Recipe recipe = model_name == "cnn" ? optim::Recipe{optim::Adam{.lr = 1e-3}}
                                                   : optim::Recipe{optim::SGD{.lr = 1e-3}};
  const WeightGradients weight_gradients = per_window ? WeightGradients::per_window : WeightGradients::per_micro_batch;
  model.compile(recipe.accumulate(accumulate, {.weight_gradients = weight_gradients}), losses::CrossEntropy{});
  Clock::time_point start;
  double seconds = 0;
  const TrainingContext* context = nullptr;
  distributed::ReducerStats reduction;  // copied before the run (and its reducer) ends
  model.fit(train, {.epochs = 1,
                    .batch_size = batch,
                    .callbacks = {callbacks::Lambda{{
                        .train_begin = [&](TrainingContext& c) { context = &c; },
                        .epoch_begin = [&](int) { start = Clock::now(); },
                        .epoch_end = [&](int, Logs&) {
                          seconds = std::chrono::duration<double>(Clock::now() - start).count();
                          if (context->reduction) reduction = *context->reduction;
                        }}}},
                    .verbose = 0,
                    .distributed = distributed});
  const distributed::Communicator& world = distributed::world();
  if (world.rank() != 0) return 0;
  const distributed::CommunicationStats& comm = world.stats();
  const double waited = reduction.waited_seconds;
  const std::int64_t early = reduction.buckets_started_during_backward;
  std::printf("result %.6f %.6f %.6f %ld %ld\n", seconds, comm.tensor_allreduce_seconds, waited,
              static_cast<long>(comm.tensor_allreduces), static_cast<long>(early));
  return 0;
}

// The allreduce alone: `elements` float32 summed over the processes `reps` times, each after a
// barrier so that both arrive together, through the communicator training uses (its MPI thread
// included); rank 0 prints "result BEST_SECONDS MEDIAN_SECONDS 0 REPS 0".
int allreduce_worker(std::int64_t elements, int reps) {
  distributed::Communicator& world = distributed::world();
  const Tensor t = Tensor::zeros({elements});
  std::vector<double> seconds;
  for (int r = -10; r < reps; ++r) {  // 10 to warm up
    world.barrier();
    const Clock::time_point start = Clock::now();
    world.start_allreduce_sum(t)->wait();
    if (r >= 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  if (world.rank() == 0)
    std::printf("result %.9f %.9f 0 %d 0\n", *std::min_element(seconds.begin(), seconds.end()), bench::median(seconds),
                reps);
  return 0;
}

std::int64_t parameter_count(const std::string& model_name) {
  Sequential model = make_model(model_name);
  model.build(Shape{1, 28, 28});
  std::int64_t n = 0;
  for (const Tensor& p : model.parameters()) n += p.numel();
  return n;
}

struct Result {
  double seconds = 0, allreduce = 0, waited = 0;
  long allreduces = 0, early = 0;
};

// Runs `command` and parses its "result" lines (one per worker it started).
std::vector<Result> run_all(const std::string& command) {
  int status = 0;
  const std::string output = bench::command_output(command, status);
  std::vector<Result> results;
  for (std::size_t at = output.find("result "); at != std::string::npos; at = output.find("result ", at + 7)) {
    Result r;
    std::istringstream in(output.substr(at + 7));
    in >> r.seconds >> r.allreduce >> r.waited >> r.allreduces >> r.early;
    results.push_back(r);
  }
  if (status != 0 || results.empty())
    throw Error(fmt::format("`{}` failed (status {}):\n{}", command, status, output));
  return results;
}

Result run(const std::string& command) { return run_all(command).front(); }

std::string self_path() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) throw Error("cannot find this program's path (/proc/self/exe)");
  return {buffer, static_cast<std::size_t>(n)};
}

}  // namespace

// What the allreduce column would be if the processes always arrived together: each model's
// gradients summed by allreduce_worker under `launch` (the launcher, its flags and this program).
void print_allreduce_alone(const std::vector<std::string>& models, const std::string& launch) {
  std::printf("\nallreduce alone, 2 processes arriving together (after a barrier), 300 calls:\n");
  for (const std::string& model : models) {
    const std::int64_t elements = parameter_count(model);
    // The worker's result line carries the best time where a training worker puts the epoch's, the
    // median where it puts the allreduce's.
    const Result r = run(fmt::format("{} --worker allreduce --samples {} --reps 300", launch, elements));
    const double megabytes = static_cast<double>(elements) * 4 / 1e6;
    std::printf("%-5s %.2f MB of gradients: best %.3f ms, median %.3f ms (%.1f GB/s of gradient at the median)\n",
                model.c_str(), megabytes, r.seconds * 1e3, r.allreduce * 1e3, megabytes / 1e3 / r.allreduce);
  }
}

// How the driver starts the runs it times.
struct Launch {
  std::string self;          // this program
  std::string mpirun_np2;    // the launcher of two processes, with its flags
  std::string worker_flags;  // --data and --per-window, as given
  std::string python;        // empty without PyTorch
  std::string torch_data;
  std::int64_t batch;  // effective
  int reps;
};

// One row of the table: `model` at accumulation k on n samples, its runs alternating `reps` times.
void print_row(const Launch& l, const std::string& model, int k, std::int64_t n) {
  const auto worker = [&](std::int64_t samples, std::int64_t micro_batch) {
    return fmt::format("{} --worker {} --k {} --samples {} --batch {}{}", l.self, model, k, samples, micro_batch,
                       l.worker_flags);
  };
  const std::string one = "ACCRUE_NUM_THREADS=2 " + worker(n, l.batch / k);
  const std::string two = fmt::format("{} {} --distributed", l.mpirun_np2, worker(n, l.batch / k / 2));
  const std::string alone = fmt::format("ACCRUE_NUM_THREADS=1 taskset -c 0 {0} & ACCRUE_NUM_THREADS=1 taskset -c 1 {0}; wait",
                                        worker(n / 2, l.batch / k / 2));
  const std::string torch = fmt::format("{} {}/pytorch_ddp.py --model {} --batch {} --accumulate {} --samples {} --data {}",
                                        l.python, ACCRUE_BENCH_DIR, model, l.batch, k, n, l.torch_data);
  std::vector<double> t1, t2, apart, ar, waited, p1, p2;
  for (int r = 0; r < l.reps; ++r) {
    const Result a = run(one);
    const Result b = run(two);
    t1.push_back(a.seconds);
    t2.push_back(b.seconds);
    const std::vector<Result> both = run_all(alone);
    apart.push_back(std::max_element(both.begin(), both.end(), [](const Result& x, const Result& y) {
                      return x.seconds < y.seconds;
                    })->seconds);
    ar.push_back(b.allreduce);
    waited.push_back(b.waited);
    if (!l.python.empty()) {
      p1.push_back(run(torch + " --processes 1").seconds);
      p2.push_back(run(torch + " --processes 2").seconds);
    }
  }
  const auto cell = [&](const std::vector<double>& v) {
    return v.empty() ? std::string("-") : fmt::format("{:.2f}", bench::median(v));
  };
  std::printf("%-5s %3d %10s %10s %6.2fx %8s %12.2f %9.2f %10s %10s %7s\n", model.c_str(), k, cell(t1).c_str(),
              cell(t2).c_str(), bench::median(t2) / bench::median(t1), cell(apart).c_str(), bench::median(ar),
              bench::median(waited), cell(p1).c_str(), cell(p2).c_str(),
              p1.empty() ? "-" : fmt::format("{:.2f}x", bench::median(p2) / bench::median(p1)).c_str());
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  CLI::App app{"Data-parallel training: 1 process x 2 threads against 2 processes x 1 thread"};
  int reps = 3;
  std::vector<std::string> models{"mlp", "cnn"};
  std::vector<int> accumulations{1, 4};
  std::int64_t batch = 64, mlp_samples = 60000, cnn_samples = 12000;
  std::string data, python = "/usr/bin/python3", mpirun = "mpirun", worker_model;
  bool no_pytorch = false, distributed = false, per_window = false, shard = false;
  bench::ShardOptions shard_options;
  std::string shard_mode;
  bench::add_comparison_options(app, reps, "measurements of each run (medians)", python, no_pytorch);
  app.add_option("--models", models, "mlp, cnn")->delimiter(',');
  app.add_option("--accumulate", accumulations, "accumulation factors")->delimiter(',');
  app.add_option("--batch", batch, "effective batch (worker: the micro-batch)")->check(CLI::PositiveNumber);
  app.add_option("--mlp-samples", mlp_samples, "samples of the MLP's epoch")->check(CLI::PositiveNumber);
  app.add_option("--cnn-samples", cnn_samples, "samples of the CNN's epoch")->check(CLI::PositiveNumber);
  app.add_option("--data", data, "FashionMNIST folder");
  app.add_option("--mpirun", mpirun, "the MPI launcher");
  app.add_flag("--per-window", per_window,
               "Accrue's Dense weight gradients once per window (WeightGradients::per_window)");
  std::int64_t samples = 0;
  int accumulate = 1;
  app.add_option("--worker", worker_model, "(internal) train one epoch of this model and print the time");
  app.add_option("--samples", samples, "(internal)");
  app.add_option("--k", accumulate, "(internal)");
  app.add_flag("--distributed", distributed, "(internal)");
  app.add_flag("--shard", shard, "time sharded data parallelism for the char-level GPT instead (ZeRO stages 1 and 2)");
  app.add_option("--shard-mode", shard_mode, "(internal)");
  bench::add_shard_options(app, shard_options);
  CLI11_PARSE(app, argc, argv);
  try {
    shard_options.reps = reps;
    shard_options.accumulate = accumulate > 1 ? accumulate : accumulations.back();
    if (worker_model == "gpt") return bench::shard_worker(shard_options, shard_mode);
    if (worker_model == "allreduce") return allreduce_worker(samples, reps);
    if (!worker_model.empty()) return worker(worker_model, batch, accumulate, per_window, samples, data, distributed);

    const std::string self = self_path();
    const std::string root = geteuid() == 0 ? " --allow-run-as-root" : "";
    const bool torch = !no_pytorch && std::system((python + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0;
    if (!no_pytorch && !torch) std::printf("PyTorch: not found (%s -c 'import torch' failed); Accrue only\n", python.c_str());
    if (shard)
      return bench::shard_table(shard_options, self, fmt::format("{} -np 2{}", mpirun, root), torch ? python : "");
    const Launch launch{.self = self,
                        .mpirun_np2 = fmt::format("{} -np 2{}", mpirun, root),
                        .worker_flags = (data.empty() ? "" : " --data " + data) + (per_window ? " --per-window" : ""),
                        .python = torch ? python : "",
                        .torch_data = data.empty() ? "/usr/share/datasets/fashion-mnist" : data,
                        .batch = batch,
                        .reps = reps};
    std::printf("effective batch %ld%s; %d measurements of each, alternating; seconds per epoch (medians)\n\n",
                static_cast<long>(batch), per_window ? ", Accrue's Dense weight gradients once per window" : "", reps);
    std::printf("%-5s %3s %10s %10s %7s %8s %12s %9s %10s %10s %7s\n", "model", "K", "1p x 2t", "2p x 1t", "2p/1p",
                "2 alone", "allreduce s", "waited s", "torch 1p", "torch DDP", "DDP/1p");
    for (const std::string& model : models)
      for (const int k : accumulations) {
        ACCRUE_CHECK(batch % (2 * k) == 0, "--batch {}: must divide into 2 processes x accumulation {}", batch, k);
        print_row(launch, model, k, model == "cnn" ? cnn_samples : mlp_samples);
      }
    print_allreduce_alone(models, launch.mpirun_np2 + " " + self);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "data_parallel: %s\n", e.what());
    return 1;
  }
}
