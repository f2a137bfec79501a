// Gradient accumulation, as the tutorials teach it: the FashionMNIST MLP trained with batch 64
// beside the same model trained with micro-batches of 16 accumulated 4 at a time, from the same
// initial weights and on the same sample order. The two runs agree to float32 rounding, epoch
// after epoch, while the second keeps a quarter of the activations in memory.
//
// --report PATH writes the report of the accumulated run.
//
//   02_accumulation_tutorial [--epochs 5] [--data DIR] [--seed 0] [--lr 1e-3] [--amp[=f16|bf16]] [--device best|cpu|cuda]
//                            [--report PATH]

#include <cmath>

#include "example_options.hpp"

using namespace accrue;

int main(int argc, char** argv) {
  CLI::App app{"Batch 64 against 16 x 4 with gradient accumulation"};
  examples::ExampleOptions common{.epochs = 5};
  double lr = 1e-3;
  common.add_to(app);
  common.add_report_flag(app);
  app.add_option("--lr", lr, "SGD learning rate")->check(examples::finite_number(0));

  return examples::run_example(app, argc, argv, [&] {
    common.check_report(common.fashion_mnist_inputs());
    auto [train, test] = datasets::fashion_mnist(common.data);
    manual_seed(common.seed);
    Sequential large = examples::tutorial_mlp();
    Sequential accumulated = examples::tutorial_mlp();
    // Same initial weights for both.
    for (std::size_t i = 0; i < large.parameters().size(); ++i) accumulated.parameters()[i].copy_(large.parameters()[i]);
    large.to(common.target());
    accumulated.to(common.target());
    large.compile(common.with_amp(optim::SGD{.lr = lr}), losses::CrossEntropy{}, {metrics::Accuracy{}});
    accumulated.compile(common.with_amp(optim::SGD{.lr = lr}.accumulate(4)), losses::CrossEntropy{},
                        {metrics::Accuracy{}});

    // One run each over all epochs with the same seed, so the same sample order: windows of 4 x 16
    // hold the samples of each batch of 64. The first run keeps its weights and test results at
    // every epoch's end; the second prints them beside its own.
    struct Epoch {
      Logs logs;
      std::vector<std::vector<float>> weights;
    };
    std::vector<Epoch> first;
    const auto weights = [](Sequential& model) {
      std::vector<std::vector<float>> out;
      for (auto& p : model.parameters()) out.push_back(p.to_vector());
      return out;
    };
    large.fit(train, {.epochs = common.epochs,
                      .batch_size = 64,
                      .validation = test,
                      .callbacks = {callbacks::Lambda{{.epoch_end = [&](int, Logs& logs) {
                        first.push_back({logs, weights(large)});
                      }}}},
                      .seed = common.seed,
                      .verbose = 0});

    fmt::print("{:>5} | {:^22} | {:^22} | {}\n", "", "batch 64", "16 x 4 accumulated", "largest");
    fmt::print("{:>5} | {:>10} {:>11} | {:>10} {:>11} | {}\n", "epoch", "accuracy", "loss", "accuracy", "loss",
               "weight difference");
    const auto print_row = [&](int epoch, Logs& b) {
      const Epoch& a = first.at(static_cast<std::size_t>(epoch));
      const auto w = weights(accumulated);
      float diff = 0;
      for (std::size_t i = 0; i < w.size(); ++i)
        for (std::size_t j = 0; j < w[i].size(); ++j) diff = std::max(diff, std::abs(a.weights[i][j] - w[i][j]));
      fmt::print("{:>5} | {:>9.1f}% {:>11.6f} | {:>9.1f}% {:>11.6f} | {:.2g}\n", epoch + 1,
                 100 * a.logs.at("val_accuracy"), a.logs.at("val_loss"), 100 * b.at("val_accuracy"), b.at("val_loss"),
                 diff);
    };
    accumulated.fit(train, {.epochs = common.epochs,
                            .batch_size = 16,
                            .validation = test,
                            .callbacks = common.callbacks({callbacks::Lambda{{.epoch_end = print_row}}}),
                            .seed = common.seed,
                            .verbose = 0});
    common.print_accuracy(accumulated.evaluate(test, {.batch_size = 1000})["accuracy"]);
  });
}
