// ResNet-18 training steps on the CPU, Accrue beside PyTorch in the same run: forward, backward and
// SGD with momentum (lr 0.01, 0.9) with cross-entropy on random 3 x SIZE x SIZE images and 1000
// classes, as torchvision's resnet18(); in micro-batches of B, K of them accumulated per optimizer
// step (PyTorch: the tutorials' loop by hand, loss / K).
//
//   resnet [--size 64] [--configs 32,8x4] [--images 64] [--reps 5] [--arch resnet18]
//          [--python /usr/bin/python3] [--no-pytorch]
//
// Accrue and PyTorch alternate (A B A B ...), each rep training --images images, so that both see the
// machine's fast and slow minutes; the table gives the median images per second of each, the ratio
// Accrue / PyTorch, and each one's peak resident memory above what its process held before the
// model was made (VmHWM, reset through /proc/self/clear_refs): weights, gradients, momentum and
// activations with what the allocators keep besides. Each configuration has a fresh PyTorch process
// and a fresh model on Accrue's side, its allocator's cache emptied first. PyTorch runs with 2
// threads.

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <accrue/models.hpp>
#include <chrono>
#include <fstream>

#include "python_worker.hpp"
#include "timing.hpp"

using namespace accrue;

namespace {

std::int64_t status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  return 0;
}

// Sets this process's peak resident memory to what it holds now; returns that, in KiB.
std::int64_t reset_peak_resident() {
  std::ofstream("/proc/self/clear_refs") << "5";
  return status_kib("VmRSS");
}

Model make(const std::string& arch, std::int64_t size) {
  const models::ResNetOptions options{.input_shape = {3, size, size}};
  if (arch == "resnet18") return models::resnet18(options);
  if (arch == "resnet34") return models::resnet34(options);
  if (arch == "resnet50") return models::resnet50(options);
  throw ValueError(fmt::format("--arch {}: resnet18, resnet34 or resnet50", arch));
}

struct Row {
  bench::BatchConfig config;
  std::vector<double> accrue, torch;  // images per second, one per rep
  double accrue_peak = 0, torch_peak = 0;  // MiB
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ResNet training steps, Accrue beside PyTorch"};
  std::int64_t size = 64, images = 64;
  std::string configs = "32,8x4", arch = "resnet18", python = "/usr/bin/python3";
  int reps = 5;
  bool no_pytorch = false;
  app.add_option("--size", size, "Images are 3 x SIZE x SIZE")->check(CLI::Range(32, 1024));
  app.add_option("--configs", configs, "Comma-separated BxK: micro-batches of B, K per optimizer step");
  app.add_option("--images", images, "Images trained per rep")->check(CLI::PositiveNumber);
  app.add_option("--arch", arch, "resnet18, resnet34 or resnet50");
  bench::add_comparison_options(app, reps, "Reps of each side, alternated", python, no_pytorch);
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<Row> rows;
    for (std::size_t at = 0; at <= configs.size();) {
      const std::size_t comma = std::min(configs.find(',', at), configs.size());
      rows.push_back({bench::parse_batch_config(configs.substr(at, comma - at))});
      at = comma + 1;
    }
    log::set_level(log::Level::error);  // fit's note on BatchNorm under accumulation, once per fit
    manual_seed(0);
    Generator gen{1};
    std::vector<std::int32_t> labels(static_cast<std::size_t>(images));
    for (auto& l : labels) l = static_cast<std::int32_t>(gen.below(1000));
    const Dataset data{Tensor::uniform({images, 3, size, size}, 0, 1, &gen), Tensor::from(labels, {images}), "random images"};
    std::string version;
    for (Row& row : rows) {
      std::unique_ptr<bench::PythonWorker> torch;
      if (!no_pytorch)
        torch = std::make_unique<bench::PythonWorker>(
            python, std::vector<std::string>{bench::script_beside(argv[0], "pytorch_resnet.py", ACCRUE_BENCH_DIR), arch, std::to_string(size)},
            std::vector<std::pair<std::string, std::string>>{{"OMP_WAIT_POLICY", "PASSIVE"}, {"BENCH_THREADS", "2"}});
      if (torch) version = torch->banner().substr(6);
      allocator(Device::cpu()).empty_cache();
      const std::int64_t before = reset_peak_resident();
      Model model = make(arch, size);
      optim::Recipe recipe = optim::SGD{.lr = 0.01, .momentum = 0.9};
      if (row.config.accumulate > 1) recipe = recipe.accumulate(row.config.accumulate);
      model.compile(recipe, losses::CrossEntropy{});
      const FitOptions fit{.epochs = 1, .batch_size = row.config.batch, .shuffle = false, .verbose = 0};
      const std::string request = fmt::format("steps {} {} {}", row.config.batch, row.config.accumulate, images);
      model.fit(data, fit);  // warm-up: allocations, the planner
      if (torch) torch->ask(request);
      for (int r = 0; r < reps; ++r) {
        const auto start = std::chrono::steady_clock::now();
        model.fit(data, fit);
        row.accrue.push_back(static_cast<double>(images) / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        if (torch) row.torch.push_back(static_cast<double>(images) / torch->ask(request));
      }
      row.accrue_peak = static_cast<double>(status_kib("VmHWM") - before) / 1024.0;
      if (torch) row.torch_peak = torch->ask("peak") / 1048576.0;
    }
    const bool compared = !no_pytorch;
    fmt::print("{} training steps on 3x{}x{} images, SGD with momentum, {} images per rep, median of {} reps{}\n", arch, size,
               size, images, reps, compared ? fmt::format(" (PyTorch {})", version) : std::string());
    fmt::print("| micro-batch x accumulation | Accrue images/s | PyTorch images/s | Accrue / PyTorch | Accrue peak MiB | PyTorch peak MiB |\n");
    fmt::print("|---|---|---|---|---|---|\n");
    for (const Row& row : rows) {
      const double a = bench::median(row.accrue), t = bench::median(row.torch);
      fmt::print("| {} x {} | {:.1f} | {} | {} | {:.0f} | {} |\n", row.config.batch, row.config.accumulate, a,
                 compared ? fmt::format("{:.1f}", t) : "-", compared ? fmt::format("{:.2f}", a / t) : "-", row.accrue_peak,
                 compared ? fmt::format("{:.0f}", row.torch_peak) : "-");
    }
  } catch (const Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
