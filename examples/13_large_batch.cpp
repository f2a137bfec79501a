// Large effective batches: the CNN of 05_fashion_mnist_cnn trained with micro-batches of 64 one
// optimizer step each (batch 64), then accumulated 32 at a time (an effective batch of 2048) with
// SGD, LARS and LAMB at learning rates scaled from batch 64 by reference_batch(64): linearly for
// SGD and LARS, by the square root for LAMB, reached through Goyal et al.'s gradual warmup. Prints
// each run's test accuracy beside batch 64's.
//
//   13_large_batch [--epochs 5] [--accumulate 32] [--warmup-epochs 2] [--sgd-lr 0.02] [--lars-lr 0.1]
//                  [--lamb-lr 4e-3] [--train-samples N] [--test-samples N] [--only sgd64,sgd,lars,lamb]
//                  [--data DIR] [--seed 0] [--device best|cpu|cuda|cuda:N]
//
// The learning rates are those for batch 64; each run's banner says what it was scaled to and why.

#include <chrono>
#include <limits>
#include <sstream>

#include "example_options.hpp"

using namespace accrue;

namespace {

Sequential cnn() {
  Sequential model{layers::Input{1, 28, 28}};
  for (const std::int64_t channels : {32, 64}) {
    model.add(layers::Conv2d{channels, 3, {.padding = layers::same}});
    model.add(layers::ReLU{});
    model.add(layers::MaxPool2d{2});
  }
  model.add(layers::Flatten{});
  model.add(layers::Dense{128});
  model.add(layers::ReLU{});
  model.add(layers::Dense{10});
  return model;
}

struct Run {
  std::string name;
  optim::Recipe recipe;
  int accumulate;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN on FashionMNIST with batch 64 and with an effective batch of 64 x 32: SGD, LARS, LAMB"};
  examples::ExampleOptions common{.epochs = 5};
  int accumulate = 32;
  double warmup_epochs = 2.0, sgd_lr = 0.02, lars_lr = 0.1, lamb_lr = 4e-3;
  std::int64_t train_samples = 0, test_samples = 0;
  std::vector<std::string> only{"sgd64", "sgd", "lars", "lamb"};
  common.add_to(app);
  app.add_option("--accumulate", accumulate, "Micro-batches of 64 per optimizer step in the large-batch runs")
      ->check(examples::whole_number(1, 4096));
  app.add_option("--warmup-epochs", warmup_epochs, "Gradual warmup of the scaled learning rates, in epochs")
      ->check(examples::finite_number(0));
  app.add_option("--sgd-lr", sgd_lr, "SGD's learning rate for batch 64 (momentum 0.9)")->check(examples::finite_number(0));
  app.add_option("--lars-lr", lars_lr, "LARS's learning rate for batch 64 (momentum 0.9, trust coefficient 0.001)")
      ->check(examples::finite_number(0));
  app.add_option("--lamb-lr", lamb_lr, "LAMB's learning rate for batch 64")->check(examples::finite_number(0));
  app.add_option("--train-samples", train_samples, "Train on the first N samples (0: all)")
      ->check(examples::whole_number(0, std::numeric_limits<std::int64_t>::max()));
  app.add_option("--test-samples", test_samples, "Test on the first N samples (0: all)")
      ->check(examples::whole_number(0, std::numeric_limits<std::int64_t>::max()));
  app.add_option("--only", only, "The runs to make: sgd64, sgd, lars, lamb")
      ->delimiter(',')
      ->check(CLI::IsMember({"sgd64", "sgd", "lars", "lamb"}));

  return examples::run_example(app, argc, argv, [&] {
    auto [train, test] = datasets::fashion_mnist(common.data);
    if (train_samples > 0) train = train.take(std::min(train_samples, train.size()));
    if (test_samples > 0) test = test.take(std::min(test_samples, test.size()));
    const optim::ReferenceBatchOptions scaled{.warmup_epochs = warmup_epochs};
    std::vector<Run> runs;
    for (const std::string& name : only) {
      if (name == "sgd64") runs.push_back({"SGD, batch 64", optim::SGD{.lr = sgd_lr, .momentum = 0.9}, 1});
      if (name == "sgd")
        runs.push_back({"SGD", optim::SGD{.lr = sgd_lr, .momentum = 0.9}.accumulate(accumulate).reference_batch(64, scaled),
                        accumulate});
      if (name == "lars")
        runs.push_back({"LARS", optim::LARS{.lr = lars_lr, .momentum = 0.9}.accumulate(accumulate).reference_batch(64, scaled),
                        accumulate});
      if (name == "lamb")
        runs.push_back({"LAMB", optim::LAMB{.lr = lamb_lr}.accumulate(accumulate).reference_batch(64, scaled), accumulate});
    }

    std::string table = fmt::format("{:<16} {:>16} {:>10} {:>10} {:>14} {:>9}\n", "optimizer", "effective batch",
                                    "base lr", "scaled lr", "test accuracy", "time");
    for (const Run& run : runs) {
      manual_seed(common.seed);
      Sequential model = cnn();
      model.to(common.target());
      model.compile(run.recipe, losses::CrossEntropy{}, {metrics::Accuracy{}});
      fmt::print("\n== {} ==\n", run.recipe.str());
      const auto start = std::chrono::steady_clock::now();
      model.fit(train, {.epochs = common.epochs, .batch_size = 64, .seed = common.seed, .verbose = 2});
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const Evaluation result = model.evaluate(test);
      const double accuracy = result.logs.at("accuracy");
      const double base = model.optimizer().lr();
      table += fmt::format("{:<16} {:>16} {:>10g} {:>10.4g} {:>13.2f}% {:>8.0f}s\n", run.name,
                           run.accumulate == 1 ? std::string{"64"} : fmt::format("{} (64 x {})", 64 * run.accumulate, run.accumulate),
                           base, base * run.recipe.batch_scaling(64 * run.accumulate), 100.0 * accuracy, seconds);
    }
    fmt::print("\n{} epoch{} of {} samples, tested on {}:\n{}", common.epochs, common.epochs == 1 ? "" : "s", train.size(),
               test.size(), table);
  });
}
