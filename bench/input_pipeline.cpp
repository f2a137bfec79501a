// The input pipeline: samples per second of read + decode + augment + batch from image folders it
// generates, Accrue's DataLoader with its background BatchQueue against torchvision's ImageFolder
// with the same transforms behind DataLoader(num_workers=W), in one alternated run; then whether a
// CNN epoch on the PNG folder waits for its data, against the same epoch on the same samples held
// in memory; and microseconds per image of decoding the PNGs alone, libpng's simplified API against
// Accrue's direct path for plain PNGs (and libspng's, when the bench was built with libspng-dev).
//
//   input_pipeline [--dir /tmp/accrue-input-pipeline] [--png 5000] [--jpeg 600] [--batch 64]
//                  [--workers 2] [--reps 5] [--cnn-reps 3] [--python /usr/bin/python3] [--no-pytorch] [--no-cnn]
//                  [--no-decoders] [--busy 2]
//
// --busy N: Accrue's PNG epochs again with N threads of this process spinning beside them (other
// programs keeping the cores busy), where idle-priority data workers get no CPU.
//
// png32: 32x32 RGB PNGs (CIFAR-like), RandomCrop(32, padding 4), RandomHorizontalFlip, Normalize.
// jpeg224: 224x224 RGB JPEGs of quality 90 (ImageNet-like), RandomResizedCrop(224),
// RandomHorizontalFlip, Normalize. Both sides use W threads or processes to prepare batches.
// The CNN: two 3x3 convolution blocks (32 and 64 channels, ReLU, 2x2 max-pooling), Dense 128,
// Dense 10, Adam, batch 64; "in memory" is the folder's augmented samples read once (to_memory()),
// so the two epochs compute the same; the ratio is what reading every sample anew costs.

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#if defined(ACCRUE_BENCH_SPNG)
#include <spng.h>
#endif

#include "python_worker.hpp"
#include "timing.hpp"

using namespace accrue;
namespace fs = std::filesystem;

namespace {

// n images of w x h in ten class folders: a colour per class, smooth waves and some noise, so
// that they compress as photographs do rather than as noise or flat colour.
// A folder this bench made holds its mark first; only such a folder is ever deleted (the user's
// --dir may hold a png32 of their own).
void make_folder(const fs::path& dir, int n, int size, bool jpeg) {
  const fs::path done = dir / "complete", mark = dir / "made-by-accrue-input-pipeline";
  if (fs::exists(done) && std::ifstream(done).get() != EOF) {
    int have = 0;
    std::ifstream(done) >> have;
    if (have == n && fs::exists(mark)) return;
  }
  if (fs::exists(dir) && !fs::exists(mark) && !fs::is_empty(dir))
    throw IoError(fmt::format("{} is there and this bench did not make it; name another --dir", dir.string()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(mark) << "Made by bench/input_pipeline; it deletes and remakes this folder.\n";
  Generator gen{static_cast<std::uint64_t>(size)};
  for (int i = 0; i < n; ++i) {
    const int label = i % 10;
    fs::create_directories(dir / fmt::format("class_{}", label));
    datasets::DecodedImage image{size, size, 3, datasets::ScratchVector<std::uint8_t>(static_cast<std::size_t>(size * size * 3))};
    const double fx = 0.05 + 0.1 * gen.next_double(), fy = 0.05 + 0.1 * gen.next_double();
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x)
        for (int c = 0; c < 3; ++c) {
          const double base = 40.0 + 20.0 * ((label + c * 3) % 10);
          const double wave = 50.0 * std::sin(fx * x * (c + 1)) * std::cos(fy * y);
          const double v = base + wave + 25.0 * gen.next_double();
          image.pixels[static_cast<std::size_t>((y * size + x) * 3 + c)] = static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
        }
    const fs::path file = dir / fmt::format("class_{}", label) / fmt::format("{:06d}.{}", i, jpeg ? "jpg" : "png");
    if (jpeg)
      datasets::write_jpeg(file.string(), image, 90);
    else
      datasets::write_png(file.string(), image);
  }
  std::ofstream(done) << n;
}

Dataset pipeline(const fs::path& dir, const std::string& kind) {
  if (kind == "png32")
    return datasets::image_folder(dir.string(), {.image_size = 32})
        .map({transforms::RandomCrop{32, {.padding = {4}}}, transforms::RandomHorizontalFlip{},
              transforms::Normalize{{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}}});
  return datasets::image_folder(dir.string(), {.image_size = 224})
      .map({transforms::RandomResizedCrop{224}, transforms::RandomHorizontalFlip{},
            transforms::Normalize{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}});
}

// One shuffled epoch of a folder through a loader and its queue, kept from one epoch to the next
// (as persistent DataLoader workers are).
struct AccrueEpochs {
  Dataset data;
  DataLoader loader;
  BatchQueue queue;
  std::int64_t epoch = 0;
  AccrueEpochs(Dataset d, std::int64_t batch, int workers)
      : data(std::move(d)), loader(data, {.batch_size = batch, .shuffle = true, .seed = 1}), queue(loader, {.workers = workers}) {}
  double run() {
    loader.set_epoch(epoch++);
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < loader.size(); ++i) (void)queue.get(i);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

Sequential cnn() {
  manual_seed(3);
  return Sequential{layers::Input{3, 32, 32},
                    layers::Conv2d{32, 3, {.padding = layers::same}}, layers::ReLU{}, layers::MaxPool2d{2},
                    layers::Conv2d{64, 3, {.padding = layers::same}}, layers::ReLU{}, layers::MaxPool2d{2},
                    layers::Flatten{}, layers::Dense{128}, layers::ReLU{}, layers::Dense{10}};
}

// Microseconds per PNG of each decoder over the folder's files held in memory, alternated.
void compare_decoders(const fs::path& dir, int reps) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.path().extension() == ".png") {
      std::ifstream in{entry.path(), std::ios::binary};
      files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  std::vector<std::pair<std::string, std::function<void(const std::string&)>>> decoders = {
      {"libpng (simplified API)", [](const std::string& b) { (void)datasets::detail::decode_png_with_libpng(b, "png", {}); }},
      {"Accrue's direct path", [](const std::string& b) {
         if (!datasets::detail::decode_plain_png(b, {})) throw ValueError("the bench's PNGs should be plain");
       }}};
#if defined(ACCRUE_BENCH_SPNG)
  decoders.emplace_back(fmt::format("libspng {}.{}.{}", SPNG_VERSION_MAJOR, SPNG_VERSION_MINOR, SPNG_VERSION_PATCH), [](const std::string& b) {
    std::vector<unsigned char> out;
    spng_ctx* ctx = spng_ctx_new(0);
    std::size_t size = 0;
    spng_set_png_buffer(ctx, b.data(), b.size());
    spng_decoded_image_size(ctx, SPNG_FMT_RGBA8, &size);
    out.resize(size);
    const int status = spng_decode_image(ctx, out.data(), out.size(), SPNG_FMT_RGBA8, 0);
    spng_ctx_free(ctx);
    if (status != 0) throw IoError(spng_strerror(status));
  });
#endif
  std::vector<std::vector<double>> us(decoders.size());
  for (int r = 0; r < reps + 1; ++r)
    for (std::size_t d = 0; d < decoders.size(); ++d) {
      const auto start = std::chrono::steady_clock::now();
      for (const auto& b : files) decoders[d].second(b);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (r > 0) us[d].push_back(1e6 * s / static_cast<double>(files.size()));
    }
  fmt::print("Decoding {} 32x32 PNGs from memory on one thread, medians of {}:\n", files.size(), reps);
  for (std::size_t d = 0; d < decoders.size(); ++d) fmt::print("  {:<26} {:6.2f} us per image\n", decoders[d].first, bench::median(us[d]));
#if !defined(ACCRUE_BENCH_SPNG)
  fmt::print("  (libspng: not measured; install libspng-dev and reconfigure)\n");
#endif
}

struct WaitMeter final : Callback {
  std::shared_ptr<double> waited = std::make_shared<double>(0.0);
  void on_micro_batch_end(const StepRecord& r, const Logs&) override { *waited += r.data_wait; }
};

// Accrue's PNG epochs with `busy` threads of this process spinning beside them.
void read_beside_busy_threads(const fs::path& dir, int count, std::int64_t batch, int workers, int reps, int busy) {
  AccrueEpochs accrue{pipeline(dir, "png32"), batch, workers};
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinning;
  for (int t = 0; t < busy; ++t)
    spinning.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) rates.push_back(count / accrue.run());
  stop = true;
  for (auto& t : spinning) t.join();
  fmt::print("png32 with {} threads spinning beside it: {:.0f} samples/s\n", busy, bench::median(rates));
}

// The CNN: one epoch reading and augmenting every sample, against the same samples in memory.
void compare_cnn_epochs(const fs::path& dir, int count, std::int64_t batch, int workers, int reps) {
  const Dataset streamed = pipeline(dir, "png32");
  const Dataset held = streamed.to_memory();
  std::vector<double> from_folder, from_memory, waits;
  for (int r = 0; r < reps + 1; ++r)
    for (const bool folder : {true, false}) {
      Sequential m = cnn();
      m.compile(optim::Adam{.lr = 1e-3}, losses::CrossEntropy{});
      WaitMeter meter;
      const auto start = std::chrono::steady_clock::now();
      m.fit(folder ? streamed : held, {.epochs = 1, .batch_size = batch, .callbacks = {meter}, .seed = 1,
                                        .data_workers = workers, .verbose = 0});
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (r == 0) continue;  // warm-up
      (folder ? from_folder : from_memory).push_back(s);
      if (folder) waits.push_back(*meter.waited / s);
    }
  const double f = bench::median(from_folder), m = bench::median(from_memory);
  fmt::print("CNN epoch on {} PNGs: {:.2f} s reading the folder (waiting for data {:.1f}% of it), {:.2f} s in "
             "memory: {:.3f}x\n",
             count, f, 100.0 * bench::median(waits), m, f / m);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Input pipeline: Accrue's loader against torchvision's ImageFolder and DataLoader"};
  std::string dir = "/tmp/accrue-input-pipeline", python = "/usr/bin/python3";
  int png = 5000, jpeg = 600, workers = 2, reps = 5, cnn_reps = 3;
  std::int64_t batch = 64;
  bool no_pytorch = false, no_cnn = false, no_decoders = false;
  int busy = 0;
  app.add_option("--dir", dir, "Where the generated folders go (kept for the next run)");
  app.add_option("--png", png, "32x32 PNG images");
  app.add_option("--jpeg", jpeg, "224x224 JPEG images");
  app.add_option("--batch", batch, "Batch size");
  app.add_option("--workers", workers, "Threads (Accrue) and worker processes (PyTorch) preparing batches");
  bench::add_comparison_options(app, reps, "Epochs of each pipeline, alternated", python, no_pytorch);
  app.add_option("--cnn-reps", cnn_reps, "CNN epochs of each kind, alternated");
  app.add_flag("--no-cnn", no_cnn, "Leave out the CNN epochs");
  app.add_flag("--no-decoders", no_decoders, "Leave out the PNG decoders' comparison");
  app.add_option("--busy", busy, "Also read the PNG folder with this many threads spinning beside it");
  CLI11_PARSE(app, argc, argv);
  try {
    const fs::path root{dir};
    make_folder(root / "png32", png, 32, false);
    make_folder(root / "jpeg224", jpeg, 224, true);
    std::unique_ptr<bench::PythonWorker> torch;
    if (!no_pytorch) {
      torch = std::make_unique<bench::PythonWorker>(
          python, std::vector<std::string>{bench::script_beside(argv[0], "pytorch_input_pipeline.py", ACCRUE_BENCH_DIR)},
          std::vector<std::pair<std::string, std::string>>{{"BENCH_THREADS", "2"}});
      fmt::print("PyTorch side: {}\n", torch->banner());
    }
    fmt::print("{} cores; batches of {}, {} workers on each side; medians of {} alternated epochs\n",
               std::thread::hardware_concurrency(), batch, workers, reps);
    fmt::print("{:<9} {:>8} {:>16} {:>16} {:>8}\n", "folder", "samples", "Accrue samples/s", "PyTorch samples/s", "ratio");
    for (const auto& [kind, count] : {std::pair<std::string, int>{"png32", png}, {"jpeg224", jpeg}}) {
      AccrueEpochs accrue{pipeline(root / kind, kind), batch, workers};
      std::vector<double> ours, theirs;
      const std::string request = fmt::format("epoch {} {} {} {}", (root / kind).string(), kind, batch, workers);
      (void)accrue.run();  // warm-up: the page cache, the allocator, and PyTorch's workers starting
      if (torch) (void)torch->ask(request);
      for (int r = 0; r < reps; ++r) {
        ours.push_back(count / accrue.run());
        if (torch) theirs.push_back(count / torch->ask(request));
      }
      const double a = bench::median(ours), t = torch ? bench::median(theirs) : 0.0;
      fmt::print("{:<9} {:>8} {:>16.0f} {:>16} {:>8}\n", kind, count, a, torch ? fmt::format("{:.0f}", t) : "-",
                 torch ? fmt::format("{:.2f}x", a / t) : "-");
    }
    if (busy > 0) read_beside_busy_threads(root / "png32", png, batch, workers, reps, busy);
    if (!no_decoders) compare_decoders(root / "png32", reps);
    if (!no_cnn) compare_cnn_epochs(root / "png32", png, batch, workers, cnn_reps);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
