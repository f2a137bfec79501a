// Gradient accumulation, as the tutorials teach it: the FashionMNIST MLP trained with batch 64
// beside the same model trained with micro-batches of 16 accumulated 4 at a time, from the same
// initial weights and on the same sample order. The two runs agree to float32 rounding, epoch
// after epoch, while the second keeps a quarter of the activations in memory.
//
//   accumulation_tutorial [--epochs 5] [--data DIR] [--seed 0] [--lr 1e-3] [--amp[=f16|bf16]] [--device best|cpu|cuda]

#include <cmath>

#include "example_options.hpp"

using namespace accrue;

namespace {
Sequential tutorial_model() {
  return Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
                    layers::Dense{512},       layers::ReLU{},    layers::Dense{10}};
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Batch 64 against 16 x 4 with gradient accumulation"};
  examples::ExampleOptions common{.epochs = 5};
  double lr = 1e-3;
  common.add_to(app);
  app.add_option("--lr", lr, "SGD learning rate")->check(examples::finite_number(0));

  return examples::run_example(app, argc, argv, [&] {
    auto [train, test] = datasets::fashion_mnist(common.data);
    manual_seed(common.seed);
    Sequential large = tutorial_model();
    Sequential accumulated = tutorial_model();
    // Same initial weights for both.
    for (std::size_t i = 0; i < large.parameters().size(); ++i) accumulated.parameters()[i].copy_(large.parameters()[i]);
    large.to(common.target());
    accumulated.to(common.target());
    large.compile(common.with_amp(optim::SGD{.lr = lr}), losses::CrossEntropy{}, {metrics::Accuracy{}});
    accumulated.compile(common.with_amp(optim::SGD{.lr = lr}.accumulate(4)), losses::CrossEntropy{},
                        {metrics::Accuracy{}});

    fmt::print("{:>5} | {:^22} | {:^22} | {}\n", "", "batch 64", "16 x 4 accumulated", "largest");
    fmt::print("{:>5} | {:>10} {:>11} | {:>10} {:>11} | {}\n", "epoch", "accuracy", "loss", "accuracy", "loss",
               "weight difference");
    for (int epoch = 0; epoch < common.epochs; ++epoch) {
      // The same sample order for both runs: windows of 4 x 16 hold the samples of each batch of 64.
      const std::uint64_t order = common.seed + static_cast<std::uint64_t>(epoch);
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
    examples::print_accuracy(accumulated.evaluate(test, {.batch_size = 1000})["accuracy"]);
  });
}
