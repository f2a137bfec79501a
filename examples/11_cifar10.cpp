// CIFAR-10 with a small ResNet: the course's second lab. Needs CIFAR-10's binary version
// (https://www.cs.toronto.edu/~kriz/cifar.html, "CIFAR-10 binary version (suitable for C
// programs)", 162 MB): unpack it and pass the folder cifar-10-batches-bin with --data.
// Augmentation as the ResNet papers train CIFAR: random 32x32 crops of the image padded by 4 and
// horizontal flips; the model's first layer normalizes with CIFAR-10's channel means and deviations,
// so that a saved model takes images as they are read. SGD with Nesterov momentum and weight decay,
// a cosine schedule.
//
//   11_cifar10 --data DIR [--epochs 30] [--batch-size 128] [--accumulate 1] [--lr 0.1] [--width 32]
//              [--limit N] [--workers -1] [--seed 0] [--verbose 0|1|2] [--device best|cpu|cuda] [--amp]
//              [--save-model PATH] [--export-onnx PATH]
//
// --limit trains on the first N training images only (a quick look on a CPU). The saved model
// names CIFAR-10's classes (from batches.meta.txt).
// Ends with the test set's "Accuracy: X%".

#include <limits>

#include "example_options.hpp"

using namespace accrue;

namespace {

// conv 3x3, batch normalization, ReLU; `stride` 2 halves the image.
void add_conv(Sequential& model, std::int64_t channels, std::int64_t stride = 1) {
  model.add(layers::Conv2d{channels, 3, {.stride = stride, .padding = 1, .bias = false}});
  model.add(layers::BatchNorm2d{});
  model.add(layers::ReLU{});
}

// x + (conv, BN, ReLU, conv, BN)(x), then ReLU: a basic residual block.
void add_residual(Sequential& model, std::int64_t channels) {
  model.add(layers::Residual{layers::Conv2d{channels, 3, {.padding = 1, .bias = false}}, layers::BatchNorm2d{},
                             layers::ReLU{}, layers::Conv2d{channels, 3, {.padding = 1, .bias = false}},
                             layers::BatchNorm2d{}});
  model.add(layers::ReLU{});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a small ResNet on CIFAR-10"};
  examples::ExampleOptions common{.epochs = 30};
  std::int64_t batch_size = 128, width = 32, limit = 0;
  int accumulate = 1, verbose = 1, workers = -1;
  double lr = 0.1;
  common.add_to(app, "CIFAR-10's binary folder (cifar-10-batches-bin)");
  common.add_report_flag(app);
  examples::ModelOutputs outputs;
  outputs.add_to(app);
  app.add_option("--batch-size", batch_size, "Samples per micro-batch")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--accumulate", accumulate, "Micro-batches per optimizer step")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--lr", lr, "SGD's peak learning rate")->check(examples::finite_number(0));
  app.add_option("--width", width, "Channels of the first stage (doubled twice)")->check(examples::whole_number(4, 512));
  app.add_option("--limit", limit, "Train on the first N training images only (0: all)")
      ->check(examples::whole_number(0, std::numeric_limits<std::int64_t>::max()));
  app.add_option("--workers", workers, "Threads preparing batches (-1: one per core, at most 4)")
      ->check(examples::whole_number(0, 64) | CLI::IsMember({-1}));
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")
      ->check(examples::whole_number(0, 2));

  return examples::run_example(app, argc, argv, [&] {
    if (common.data.empty())
      throw ValueError("--data: name the folder of CIFAR-10's binary version (cifar-10-batches-bin, from "
                       "https://www.cs.toronto.edu/~kriz/cifar.html)");
    common.check_report({{common.data, "CIFAR-10"}});
    outputs.check({{common.data, "CIFAR-10"}});
    manual_seed(common.seed);
    datasets::Cifar cifar = datasets::cifar10(common.data);
    const Dataset train_images = limit > 0 ? cifar.train.take(limit) : cifar.train;
    const Dataset train = train_images.map({transforms::RandomCrop{32, {.padding = 4}}, transforms::RandomHorizontalFlip{}});
    const Dataset& test = cifar.test;
    if (common.speaks()) {
      std::string classes;  // from the folder's batches.meta.txt: escaped, a name may hold anything
      for (const std::string& name : cifar.classes) classes += (classes.empty() ? "" : ", ") + printable_name(name);
      fmt::print("CIFAR-10 from {}: {} training and {} test images of {}\n", common.data, train.size(), test.size(), classes);
    }

    // The normalization is in the model, so that a saved model takes images in [0, 1] as they are read.
    const std::vector<float> mean{0.4914f, 0.4822f, 0.4465f}, std{0.2470f, 0.2435f, 0.2616f};
    Sequential model{layers::Input{3, 32, 32},
                     layers::Normalization{{.axis = 0, .mean = mean, .variance = {std[0] * std[0], std[1] * std[1], std[2] * std[2]}}}};
    model.set_input_range(0, 1);
    add_conv(model, width);
    add_residual(model, width);
    add_conv(model, 2 * width, 2);
    add_residual(model, 2 * width);
    add_conv(model, 4 * width, 2);
    add_residual(model, 4 * width);
    model.add(layers::GlobalAvgPool2d{});
    model.add(layers::Dense{10});
    model.to(common.target());
    optim::Recipe recipe = optim::SGD{.lr = lr, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true};
    if (accumulate > 1) recipe = recipe.accumulate(accumulate);
    model.compile(common.with_amp(recipe), losses::CrossEntropy{}, {metrics::Accuracy{}});
    model.fit(train, {.epochs = common.epochs,
                      .batch_size = batch_size,
                      .schedule = schedules::warmup_cosine({.warmup_ratio = 0.05}),
                      .callbacks = common.callbacks(),
                      .seed = common.seed,
                      .data_workers = workers,
                      .verbose = common.speaks() ? verbose : 0,
                      .distributed = common.distributed});
    const Evaluation result = model.evaluate(test);
    if (!common.speaks()) return;
    outputs.write(model, common, test.take(7).to_memory().inputs());
    common.print_accuracy(result["accuracy"]);
  });
}
