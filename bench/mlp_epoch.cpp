// One training epoch of the FashionMNIST tutorial MLP (784-512-512-10, SGD lr 1e-3, cross-entropy,
// 60,000 samples already in memory), and of the CNN of examples/05_fashion_mnist_cnn.cpp (two 3x3
// convolution blocks of 32 and 64 channels with ReLU and 2x2 max-pooling, Dense 128, Dense 10,
// Adam lr 1e-3), Accrue against PyTorch in the same run.
//
//   mlp_epoch [--reps 5] [--configs 64,16,16x4,8x8,64amp,16x4amp,cnn64,cnn16x4,16x4pw] [--data DIR]
//             [--python /usr/bin/python3] [--no-pytorch] [--device cpu|cuda|cuda:N]
//
// A configuration BxK is micro-batches of B accumulated K per optimizer step (Accrue's
// accumulate(K); in PyTorch the tutorials' loop by hand: loss / K, step every K); a trailing "amp"
// runs it with mixed precision (Accrue's .amp(), bfloat16 on the CPU and float16 with loss scaling
// on a GPU; PyTorch's torch.autocast with the same dtype, and a GradScaler on a GPU); a leading
// "cnn" trains the CNN instead of the MLP; a trailing "pw" multiplies the float32 weight gradients
// of Dense layers once per window (accumulate's WeightGradients::per_window) instead of once per
// micro-batch. With --device cuda both train on the GPU, the data
// staying in host memory for Accrue (fit moves each batch) and on the GPU for PyTorch, and the
// floor is the GPU's 4096^3 sgemm rate.
//
// Accrue and PyTorch alternate (A B A B ...) so both see the same machine state; the table gives
// min and median seconds per epoch, samples/s, the ratio PyTorch / Accrue and the ratio to the GEMM
// floor (the epoch's 192.6 GFLOP at the rate this machine's 2048^3 sgemm reaches). PyTorch runs
// with 2 threads, OMP_WAIT_POLICY=PASSIVE (see below) and, unless OPENBLAS_CORETYPE is set, the
// OpenBLAS kernels Accrue chose, so both use the same GEMM code.

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <accrue/kernels/cpu/gemm/openblas.hpp>
#include <accrue/kernels/cpu/parallel.hpp>
#include <accrue/kernels/gemm.hpp>
#include <accrue/framework/runtime/device_runtime.hpp>
#include <accrue/framework/core/device_query.hpp>
#include "python_worker.hpp"
#include "timing.hpp"
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <functional>
#include <map>

using namespace accrue;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// GFLOP/s of a large square sgemm through Accrue's GEMM (all CPU cores, or the GPU): the
// machine's GEMM rate.
double large_gemm_rate(Device device) {
  const std::int64_t n = device.is_cpu() ? 2048 : 4096;
  const TensorOptions on{.device = device};
  const Tensor a = Tensor::ones({n, n}, on), b = Tensor::ones({n, n}, on), c = Tensor::zeros({n, n}, on);
  kernels::gemm(false, false, 1.0f, a, b, 0.0f, c);
  runtime::synchronize(device);
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto t = Clock::now();
    kernels::gemm(false, false, 1.0f, a, b, 0.0f, c);
    runtime::synchronize(device);
    best = std::min(best, seconds_since(t));
  }
  return 2.0 * n * n * n / best / 1e9;
}

Sequential tutorial_model() {
  return Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
                    layers::Dense{512},       layers::ReLU{},    layers::Dense{10}};
}

Sequential cnn_model() {
  return Sequential{layers::Input{1, 28, 28},
                    layers::Conv2d{32, 3, {.padding = 1}}, layers::ReLU{}, layers::MaxPool2d{2},
                    layers::Conv2d{64, 3, {.padding = 1}}, layers::ReLU{}, layers::MaxPool2d{2},
                    layers::Flatten{}, layers::Dense{128}, layers::ReLU{}, layers::Dense{10}};
}

// Multiply-adds x 2 per sample, forward and backward (no input gradient for the first layer).
constexpr double mlp_flop_per_sample = 2.0 * 2 * (784 * 512 + 512 * 512 + 512 * 10) + 2.0 * (512 * 512 + 512 * 10);
constexpr double conv1_flop = 2.0 * 28 * 28 * 32 * 9, conv2_flop = 2.0 * 14 * 14 * 64 * 32 * 9,
                 dense_flop = 2.0 * (3136 * 128 + 128 * 10);
constexpr double cnn_flop_per_sample = 2 * conv1_flop + 3 * conv2_flop + 3 * dense_flop;

// The FashionMNIST training split in `folder`, or random data of its shape when it is not there;
// `note` says which.
Dataset training_data(const std::string& folder, std::string& note) {
  try {
    Dataset train = datasets::fashion_mnist(folder).train;
    note = "FashionMNIST";
    return train;
  } catch (const IoError&) {
    Generator gen{0};
    std::vector<std::int32_t> labels(60000);
    for (auto& l : labels) l = static_cast<std::int32_t>(gen.below(10));
    note = "random data (FashionMNIST not found)";
    return Dataset{Tensor::uniform({60000, 1, 28, 28}, 0, 1, &gen), Tensor::from(labels, {60000})};
  }
}

// The PyTorch worker (`script`) on `device`, with the environment it is measured in and the
// user's KEY=VALUE additions; null, after saying why, when it does not start.
std::unique_ptr<bench::PythonWorker> start_pytorch(const std::string& python, const std::string& script,
                                                   const std::string& data, Device device,
                                                   const std::vector<std::string>& pytorch_env) {
  // PyTorch's OpenMP threads spin while OpenBLAS's own threads run its GEMMs; on two cores that
  // oversubscription made it 2 to 4 times slower here. OMP_WAIT_POLICY=PASSIVE was its fastest
  // 2-thread setting in our measurements, so it is the reference (override with --pytorch-env).
  std::vector<std::pair<std::string, std::string>> env = {{"BENCH_THREADS", "2"}, {"OMP_WAIT_POLICY", "PASSIVE"}};
  for (const std::string& kv : pytorch_env) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) throw ValueError("--pytorch-env takes KEY=VALUE, got " + kv);
    env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  const char* preset = std::getenv("OPENBLAS_CORETYPE");
  const std::string core = preset != nullptr ? preset : kernels::cpu::openblas_core_for_this_cpu();
  if (!core.empty() && device.is_cpu()) env.emplace_back("OPENBLAS_CORETYPE", core);
  try {
    auto torch = std::make_unique<bench::PythonWorker>(
        python, std::vector<std::string>{script, data.empty() ? "/usr/share/datasets/fashion-mnist" : data, device.str()},
        env);
    std::string settings;
    for (const auto& [k, v] : env) settings += fmt::format(" {}={}", k, v);
    fmt::print("PyTorch: torch {} with{}\n", torch->banner().substr(6), settings);
    return torch;
  } catch (const Error& e) {
    fmt::print("PyTorch: not run ({})\n", e.what());
    return nullptr;
  }
}

// "cnn" before a BxK[amp] configuration trains the CNN; "pw" after it multiplies the weight
// gradients once per window (WeightGradients::per_window).
struct Config : bench::BatchConfig {
  bool cnn = false, per_window = false;
};

std::vector<Config> parse_configs(const std::vector<std::string>& configs) {
  std::vector<Config> runs;
  for (const std::string& c : configs) {
    const bool cnn = c.rfind("cnn", 0) == 0;
    const bool per_window = c.size() > 2 && c.compare(c.size() - 2, 2, "pw") == 0;
    const std::string shape = c.substr(cnn ? 3 : 0, c.size() - (cnn ? 3 : 0) - (per_window ? 2 : 0));
    Config config{bench::parse_batch_config(shape), cnn, per_window};
    config.name = c;
    runs.push_back(config);
  }
  return runs;
}

// The table of epoch times (ours, and theirs `with_torch`) against the GEMM floor, then what
// accumulation and mixed precision cost against their plain runs.
void print_results(const std::vector<Config>& runs, std::map<std::string, std::vector<double>>& ours,
                   std::map<std::string, std::vector<double>>& theirs, bool with_torch,
                   const std::function<double(bool)>& floor_s) {
  fmt::print("\n| batch | Accrue s/epoch (min / median) | samples/s | PyTorch s/epoch (min / median) | PyTorch / Accrue "
             "(min / median) | Accrue / floor (median) |\n");
  fmt::print("|---|---|---|---|---|---|\n");
  for (const Config& c : runs) {
    const double a_min = min_of(ours[c.name]), a_med = bench::median(ours[c.name]);
    std::string torch_cols = "not run | - ";
    if (with_torch) {
      const double p_min = min_of(theirs[c.name]), p_med = bench::median(theirs[c.name]);
      torch_cols = fmt::format("{:.2f} / {:.2f} | {:.2f}x / {:.2f}x", p_min, p_med, p_min / a_min, p_med / a_med);
    }
    fmt::print("| {} | {:.2f} / {:.2f} | {:.0f} | {} | {:.2f} |\n", c.name, a_min, a_med, 60000 / a_med, torch_cols,
               a_med / floor_s(c.cnn));
  }
  // What accumulation costs: time per sample against the plain batch of the same effective size;
  // and what mixed precision gains against float32.
  const auto find = [&](const std::string& n) { return ours.count(n) ? bench::median(ours[n]) : 0.0; };
  for (const Config& c : runs) {
    if (c.amp) {
      const std::string plain = c.name.substr(0, c.name.size() - 3 - (c.per_window ? 2 : 0));
      if (find(plain) > 0.0)
        fmt::print("Accrue {} takes {:.2f}x the time of {} in float32{}\n", c.name, find(c.name) / find(plain), plain,
                   with_torch && theirs.count(plain) ? fmt::format(" (PyTorch: {:.2f}x)", bench::median(theirs[c.name]) / bench::median(theirs[plain]))
                                                : "");
      continue;
    }
    if (c.accumulate == 1) continue;
    const std::string plain = (c.cnn ? "cnn" : "") + std::to_string(c.batch * c.accumulate);
    if (find(plain) > 0.0)
      fmt::print("Accrue {} costs {:.2f}x the time of batch {} per sample{}\n", c.name, find(c.name) / find(plain), plain,
                 with_torch && theirs.count(plain) ? fmt::format(" (PyTorch: {:.2f}x)", bench::median(theirs[c.name]) / bench::median(theirs[plain]))
                                              : "");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One epoch of the FashionMNIST tutorial MLP: Accrue against PyTorch"};
  int reps = 5;
  std::vector<std::string> configs = {"64", "16", "16x4", "8x8", "64amp", "16x4amp", "cnn64", "cnn16x4"};
  std::string data, python = "/usr/bin/python3", device_name = "cpu";
  bool no_pytorch = false;
  std::vector<std::string> pytorch_env;
  bench::add_comparison_options(app, reps, "Epochs timed per configuration and framework", python, no_pytorch);
  app.add_option("--configs", configs, "Batch sizes to time, BxK for micro-batches of B accumulated K")->delimiter(',');
  app.add_option("--data", data, "FashionMNIST folder (random data of the same shape when absent)");
  app.add_option("--pytorch-env", pytorch_env, "KEY=VALUE set for the PyTorch process (repeatable)");
  app.add_option("--device", device_name, "Where both train: cpu, cuda, cuda:N");
  CLI11_PARSE(app, argc, argv);
  const Device device = Device::parse(device_name);

  std::string data_note;
  const Dataset train = training_data(data, data_note);

  const auto& blas = kernels::cpu::openblas();
  const double gemm_rate = large_gemm_rate(device);
  const double mlp_gflop = mlp_flop_per_sample * 60000 / 1e9, cnn_gflop = cnn_flop_per_sample * 60000 / 1e9;
  const auto floor_s = [&](bool cnn) { return (cnn ? cnn_gflop : mlp_gflop) / gemm_rate; };
  fmt::print("One epoch of 60,000 samples ({}): tutorial MLP {:.1f} GFLOP, CNN {:.1f} GFLOP\n", data_note, mlp_gflop,
             cnn_gflop);
  if (device.is_cpu())
    fmt::print("Accrue: {} CPU threads; OpenBLAS {} kernels ({})\n", kernels::cpu::num_threads(), blas.core, blas.how_chosen);
  else
    fmt::print("Accrue: on {}\n", device.str());
  fmt::print("GEMM floor: {}^3 sgemm at {:.0f} GFLOP/s -> MLP {:.2f} s, CNN {:.2f} s per epoch\n",
             device.is_cpu() ? 2048 : 4096, gemm_rate, floor_s(false), floor_s(true));

  const std::unique_ptr<bench::PythonWorker> torch =
      no_pytorch ? nullptr : start_pytorch(python, bench::script_beside(argv[0], "pytorch_mlp.py", ACCRUE_BENCH_DIR),
                                           data, device, pytorch_env);
  const std::vector<Config> runs = parse_configs(configs);
  const auto torch_epoch = [&](const Config& c) {
    return torch->ask(fmt::format("epoch {} {} {} {}", c.batch, c.accumulate, c.amp ? "amp" : "f32", c.cnn ? "cnn" : "mlp"));
  };
  std::map<std::string, std::vector<double>> ours, theirs;
  std::map<std::string, Sequential> models;
  for (const Config& c : runs) {
    manual_seed(0);
    models.emplace(c.name, c.cnn ? cnn_model() : tutorial_model());
    Sequential& m = models.at(c.name);
    m.to(device);
    optim::Recipe recipe = c.cnn ? optim::Recipe{optim::Adam{.lr = 1e-3}} : optim::Recipe{optim::SGD{.lr = 1e-3}};
    if (c.accumulate > 1)
      recipe = recipe.accumulate(c.accumulate, {.weight_gradients = c.per_window ? WeightGradients::per_window
                                                                                 : WeightGradients::per_micro_batch});
    if (c.amp) recipe = recipe.amp();
    m.compile(recipe, losses::CrossEntropy{});
    m.fit(train.take(c.batch * c.accumulate * 20), {.batch_size = c.batch, .verbose = 0});  // warm-up
    if (torch) torch_epoch(c);  // warm-up
  }
  for (int r = 0; r < reps; ++r) {
    for (const Config& c : runs) {
      const auto t = Clock::now();
      models.at(c.name).fit(train, {.batch_size = c.batch, .seed = static_cast<std::uint64_t>(r), .verbose = 0});
      runtime::synchronize(device);
      ours[c.name].push_back(seconds_since(t));
      if (torch) theirs[c.name].push_back(torch_epoch(c));
      fmt::print(stderr, "rep {} {}: accrue {:.3f} s{}\n", r + 1, c.name, ours[c.name].back(),
                 torch ? fmt::format(", pytorch {:.3f} s", theirs[c.name].back()) : "");
    }
  }

  print_results(runs, ours, theirs, torch != nullptr, floor_s);
  return 0;
}
