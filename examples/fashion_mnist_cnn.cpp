// A small convolutional network for FashionMNIST, trained with gradient accumulation: two 3x3
// convolution blocks (32 and 64 channels, ReLU, 2x2 max-pooling), Dense 128, Dense 10; Adam with
// lr 1e-3 on micro-batches of 16 accumulated 4 at a time (an effective batch of 64).
//
//   fashion_mnist_cnn [--epochs 5] [--norm none|batch|group] [--amp[=f16|bf16]] [--batch-size 16]
//                     [--accumulate 4] [--lr 1e-3] [--data DIR] [--seed 0] [--verbose 0|1|2]
//                     [--device best|cpu|cuda|cuda:N]
//
// --norm batch puts BatchNorm2d after each convolution: its statistics are those of each
// micro-batch of 16, not of the effective batch of 64, and training says so. --norm group puts
// GroupNorm there instead, which normalises each sample on its own and so behaves the same
// whatever the micro-batch.

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <chrono>

using namespace accrue;

namespace {

// A convolution block: 3x3 convolution (same size), the chosen normalisation, ReLU, 2x2 max-pool.
void add_block(Sequential& model, std::int64_t channels, const std::string& norm) {
  // A normalisation that follows supplies the shift, so the convolution needs no bias.
  model.add(layers::Conv2d{channels, 3, {.padding = layers::same, .bias = norm == "none"}});
  if (norm == "batch") model.add(layers::BatchNorm2d{});
  if (norm == "group") model.add(layers::GroupNorm{8});
  model.add(layers::ReLU{});
  model.add(layers::MaxPool2d{2});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a small CNN on FashionMNIST with gradient accumulation"};
  int epochs = 5;
  std::int64_t batch_size = 16;
  int accumulate = 4;
  double lr = 1e-3;
  std::string norm = "none";
  std::string amp = "off";
  std::string data;
  std::uint64_t seed = 0;
  int verbose = 1;
  std::string device = "best";
  app.add_option("--epochs", epochs, "Passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--norm", norm, "Normalisation after each convolution: none, batch (BatchNorm2d), group (GroupNorm, 8 groups)")
      ->check(CLI::IsMember({"none", "batch", "group"}));
  app.add_flag("--amp{auto}", amp, "Mixed precision: --amp (bfloat16 on the CPU, float16 on a GPU), --amp=f16, --amp=bf16")
      ->check(CLI::IsMember({"off", "auto", "f16", "bf16"}));
  app.add_option("--batch-size", batch_size, "Samples per micro-batch")->check(CLI::PositiveNumber);
  app.add_option("--accumulate", accumulate, "Micro-batches per optimizer step")->check(CLI::PositiveNumber);
  app.add_option("--lr", lr, "Adam learning rate")->check(CLI::NonNegativeNumber);
  app.add_option("--data", data, "Folder with the FashionMNIST IDX files (default: $ACCRUE_FASHION_MNIST_DIR or "
                                 "/usr/share/datasets/fashion-mnist)");
  app.add_option("--seed", seed, "Seed of initialisation and shuffling");
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")
      ->check(CLI::Range(0, 2));
  app.add_option("--device", device, "Where to train: best (a GPU when there is one), cpu, cuda, cuda:N");
  CLI11_PARSE(app, argc, argv);

  try {
    manual_seed(seed);
    auto [train, test] = datasets::fashion_mnist(data);

    Sequential model{layers::Input{1, 28, 28}};
    add_block(model, 32, norm);
    add_block(model, 64, norm);
    model.add(layers::Flatten{});
    model.add(layers::Dense{128});
    model.add(layers::ReLU{});
    model.add(layers::Dense{10});
    model.to(Device::parse(device));

    optim::Recipe recipe = optim::Adam{.lr = lr};
    if (accumulate > 1) recipe = recipe.accumulate(accumulate);
    if (amp == "auto") recipe = recipe.amp();
    if (amp == "f16") recipe = recipe.amp(dtype::f16);
    if (amp == "bf16") recipe = recipe.amp(dtype::bf16);
    model.compile(recipe, losses::CrossEntropy{}, {metrics::Accuracy{}});
    model.summary();

    const auto start = std::chrono::steady_clock::now();
    model.fit(train, {.epochs = epochs, .batch_size = batch_size, .validation = test, .seed = seed, .verbose = verbose});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    auto [loss, accuracy] = model.evaluate(test);
    fmt::print("Test accuracy: {:.2f}%, loss {:.4f}, after {} epochs in {:.1f} s ({:.1f} s per epoch, validation "
               "included)\n",
               100.0 * accuracy, loss, epochs, seconds, seconds / epochs);
  } catch (const Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
