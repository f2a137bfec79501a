// A small convolutional network for FashionMNIST, trained with gradient accumulation: two 3x3
// convolution blocks (32 and 64 channels, ReLU, 2x2 max-pooling), Dense 128, Dense 10; Adam with
// lr 1e-3 on micro-batches of 16 accumulated 4 at a time (an effective batch of 64).
//
//   05_fashion_mnist_cnn [--epochs 5] [--norm none|batch|group] [--amp[=f16|bf16]] [--batch-size 16]
//                        [--accumulate 4] [--lr 1e-3] [--data DIR] [--seed 0] [--verbose 0|1|2]
//                        [--device best|cpu|cuda|cuda:N]
//
// --norm batch puts BatchNorm2d after each convolution: its statistics are those of each
// micro-batch of 16, not of the effective batch of 64, and training says so. --norm group puts
// GroupNorm there instead, which normalizes each sample on its own and so behaves the same
// whatever the micro-batch.

#include <chrono>
#include <limits>

#include "example_options.hpp"

using namespace accrue;

namespace {

// A convolution block: 3x3 convolution (same size), the chosen normalization, ReLU, 2x2 max-pool.
void add_block(Sequential& model, std::int64_t channels, const std::string& norm) {
  // A normalization that follows supplies the shift, so the convolution needs no bias.
  model.add(layers::Conv2d{channels, 3, {.padding = layers::same, .bias = norm == "none"}});
  if (norm == "batch") model.add(layers::BatchNorm2d{});
  if (norm == "group") model.add(layers::GroupNorm{8});
  model.add(layers::ReLU{});
  model.add(layers::MaxPool2d{2});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a small CNN on FashionMNIST with gradient accumulation"};
  examples::ExampleOptions common{.epochs = 5};
  std::int64_t batch_size = 16;
  int accumulate = 4;
  double lr = 1e-3;
  std::string norm = "none";
  int verbose = 1;
  common.add_to(app);
  common.add_report_flag(app);
  app.add_option("--norm", norm, "Normalization after each convolution: none, batch (BatchNorm2d), group (GroupNorm, 8 groups)")
      ->check(CLI::IsMember({"none", "batch", "group"}));
  app.add_option("--batch-size", batch_size, "Samples per micro-batch")
      ->check(examples::whole_number(1, std::numeric_limits<std::int64_t>::max()));
  app.add_option("--accumulate", accumulate, "Micro-batches per optimizer step")
      ->check(examples::whole_number(1, std::numeric_limits<int>::max()));
  app.add_option("--lr", lr, "Adam learning rate")->check(examples::finite_number(0));
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")
      ->check(examples::whole_number(0, 2));

  return examples::run_example(app, argc, argv, [&] {
    common.check_report(common.fashion_mnist_inputs());
    manual_seed(common.seed);
    auto [train, test] = datasets::fashion_mnist(common.data);

    Sequential model{layers::Input{1, 28, 28}};
    add_block(model, 32, norm);
    add_block(model, 64, norm);
    model.add(layers::Flatten{});
    model.add(layers::Dense{128});
    model.add(layers::ReLU{});
    model.add(layers::Dense{10});
    model.to(common.target());

    optim::Recipe recipe = optim::Adam{.lr = lr};
    if (accumulate > 1) recipe = recipe.accumulate(accumulate);
    model.compile(common.with_amp(recipe), losses::CrossEntropy{}, {metrics::Accuracy{}});
    model.summary();

    const auto start = std::chrono::steady_clock::now();
    model.fit(train, {.epochs = common.epochs, .batch_size = batch_size, .validation = test,
                      .callbacks = common.callbacks(), .seed = common.seed, .verbose = verbose});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    auto [loss, accuracy] = model.evaluate(test);
    fmt::print("Trained {} epoch{} in {:.1f} s ({:.1f} s per epoch, validation included); test loss {:.4f}\n",
               common.epochs, common.epochs == 1 ? "" : "s", seconds, seconds / common.epochs, loss);
    common.print_accuracy(accuracy);
  });
}
