// Gradient accumulation, as the tutorials teach it: the FashionMNIST MLP trained with batch 64
// beside the same model trained with micro-batches of 16 accumulated 4 at a time, from the same
// initial weights and on the same sample order. The two runs agree to float32 rounding, epoch
// after epoch, while the second keeps a quarter of the activations in memory.
//
//   accumulation_tutorial [--epochs 5] [--data DIR] [--seed 0] [--lr 1e-3] [--amp[=f16|bf16]] [--device best|cpu|cuda]

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <cmath>

using namespace accrue;

namespace {
Sequential tutorial_model() {
  return Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
                    layers::Dense{512},       layers::ReLU{},    layers::Dense{10}};
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Batch 64 against 16 x 4 with gradient accumulation"};
  int epochs = 5;
  std::string data;
  std::uint64_t seed = 0;
  double lr = 1e-3;
  std::string amp = "off";
  std::string device = "best";
  app.add_option("--epochs", epochs, "Passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--data", data, "Folder with the FashionMNIST IDX files");
  app.add_option("--seed", seed, "Seed of initialisation and shuffling");
  app.add_option("--lr", lr, "SGD learning rate")->check(CLI::NonNegativeNumber);
  app.add_flag("--amp{auto}", amp, "Mixed precision for both runs: --amp (bfloat16 on the CPU), --amp=f16, --amp=bf16")
      ->check(CLI::IsMember({"off", "auto", "f16", "bf16"}));
  app.add_option("--device", device, "Where to train: best (a GPU when there is one), cpu, cuda, cuda:N");
  CLI11_PARSE(app, argc, argv);

  try {
    auto [train, test] = datasets::fashion_mnist(data);
    manual_seed(seed);
    Sequential large = tutorial_model();
    Sequential accumulated = tutorial_model();
    // Same initial weights for both.
    for (std::size_t i = 0; i < large.parameters().size(); ++i) accumulated.parameters()[i].copy_(large.parameters()[i]);
    large.to(Device::parse(device));
    accumulated.to(Device::parse(device));
    const auto with_amp = [&](optim::Recipe r) {
      if (amp == "auto") return r.amp();
      if (amp == "f16") return r.amp(dtype::f16);
      if (amp == "bf16") return r.amp(dtype::bf16);
      return r;
    };
    large.compile(with_amp(optim::SGD{.lr = lr}), losses::CrossEntropy{}, {metrics::Accuracy{}});
    accumulated.compile(with_amp(optim::SGD{.lr = lr}.accumulate(4)), losses::CrossEntropy{}, {metrics::Accuracy{}});

    fmt::print("{:>5} | {:^22} | {:^22} | {}\n", "", "batch 64", "16 x 4 accumulated", "largest");
    fmt::print("{:>5} | {:>10} {:>11} | {:>10} {:>11} | {}\n", "epoch", "accuracy", "loss", "accuracy", "loss",
               "weight difference");
    for (int epoch = 0; epoch < epochs; ++epoch) {
      // The same sample order for both runs: windows of 4 x 16 hold the samples of each batch of 64.
      const std::uint64_t order = seed + static_cast<std::uint64_t>(epoch);
      large.fit(train, {.batch_size = 64, .seed = order, .verbose = 0});
      accumulated.fit(train, {.batch_size = 16, .seed = order, .verbose = 0});
      const auto a = large.evaluate(test, {.batch_size = 1000});
      const auto b = accumulated.evaluate(test, {.batch_size = 1000});
      float diff = 0;
      for (std::size_t i = 0; i < large.parameters().size(); ++i) {
        const auto pa = large.parameters()[i].to_vector(), pb = accumulated.parameters()[i].to_vector();
        for (std::size_t j = 0; j < pa.size(); ++j) diff = std::max(diff, std::abs(pa[j] - pb[j]));
      }
      fmt::print("{:>5} | {:>9.1f}% {:>11.6f} | {:>9.1f}% {:>11.6f} | {:.2g}\n", epoch + 1, 100 * a["accuracy"], a.loss,
                 100 * b["accuracy"], b.loss, diff);
    }
    fmt::print("Accuracy: {:.1f}%\n", 100 * accumulated.evaluate(test, {.batch_size = 1000})["accuracy"]);
  } catch (const Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
