// A model of two outputs: the CNN of 05_fashion_mnist_cnn with an auxiliary head, as Inception's
// and Keras's functional guide write one. "label" says which of FashionMNIST's 10 classes an image
// is; "group", on the first block's pooled features, says which of 4 groups (tops: T-shirt,
// pullover, dress, coat, shirt; trousers; footwear: sandal, sneaker, ankle boot; bags). Each head
// has its loss (cross-entropy, the group's weighing --aux-weight in the sum) and its accuracy,
// logged by name (label_loss, group_accuracy, val_label_accuracy, ...). Adam on micro-batches of
// 16 accumulated 4 at a time: each head's mean loss is over the whole window.
//
//   15_two_outputs [--epochs 2] [--train-samples 60000] [--aux-weight 0.3] [--batch-size 16]
//                  [--accumulate 4] [--lr 1e-3] [--data DIR] [--seed 0] [--verbose 0|1|2]
//                  [--device best|cpu|cuda|cuda:N] [--amp[=f16|bf16]] [--report run.html]
//
// Ends with both heads' test accuracy and "Accuracy: X%", the label head's. The group head sees only
// the first block's features averaged over the image, and trails the label head (at seed 0 after
// the 2 epochs: 87.4% for the label, 67.5% for the group).

#include <array>
#include <limits>

#include "example_options.hpp"

using namespace accrue;

namespace {

// The group of each FashionMNIST class: 0 tops, 1 trousers, 2 footwear, 3 bags.
constexpr std::array<std::int32_t, 10> group_of_class{0, 1, 0, 0, 0, 2, 0, 2, 3, 2};

// The images with two targets each: the class and its group.
Dataset with_groups(const Dataset& data, std::int64_t samples) {
  const Dataset kept = data.take(samples);
  std::vector<std::int32_t> groups;
  for (const std::int32_t label : kept.targets().to_vector<std::int32_t>())
    groups.push_back(group_of_class[static_cast<std::size_t>(label)]);
  return Dataset{{kept.inputs()}, {kept.targets(), Tensor::from(groups, {kept.size()})}, data.name()};
}

// A 3x3 convolution (same size), ReLU, 2x2 max-pooling.
Symbol block(const Symbol& x, std::int64_t channels) {
  return layers::MaxPool2d{2}(layers::ReLU{}(layers::Conv2d{channels, 3, {.padding = layers::same}}(x)));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN with an auxiliary head on FashionMNIST: two outputs, a loss each"};
  examples::ExampleOptions common{.epochs = 2};
  std::int64_t batch_size = 16, train_samples = 60000;
  int accumulate = 4;
  double lr = 1e-3, aux_weight = 0.3;
  int verbose = 1;
  common.add_to(app);
  common.add_report_flag(app);
  app.add_option("--train-samples", train_samples, "Training images used (the first ones)")
      ->check(examples::whole_number(1, 60000));
  app.add_option("--aux-weight", aux_weight, "The group head's weight in the loss")->check(examples::finite_number(0));
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
    const auto [images, test_images] = datasets::fashion_mnist(common.data);
    const Dataset train = with_groups(images, train_samples), test = with_groups(test_images, test_images.size());

    layers::Input image{{1, 28, 28}, {.name = "image"}};
    const Symbol early = block(image, 32);
    const Symbol features = layers::ReLU{}(layers::Dense{128}(layers::Flatten{}(block(early, 64))));
    Model model{image,
                {layers::Dense{10, {.name = "label"}}(features), layers::Dense{4, {.name = "group"}}(layers::GlobalAvgPool2d{}(early))},
                {.name = "two_heads"}};
    model.to(common.target());

    optim::Recipe recipe = optim::Adam{.lr = lr};
    if (accumulate > 1) recipe = recipe.accumulate(accumulate);
    model.compile(common.with_amp(recipe),
                  {{"label", {.loss = losses::CrossEntropy{}, .metrics = {metrics::Accuracy{}}}},
                   {"group", {.loss = losses::CrossEntropy{}, .weight = aux_weight, .metrics = {metrics::Accuracy{}}}}});
    if (common.speaks()) model.summary();

    model.fit(train, {.epochs = common.epochs, .batch_size = batch_size, .validation = test,
                      .callbacks = common.callbacks(), .seed = common.seed, .verbose = verbose});
    const Evaluation result = model.evaluate(test);
    fmt::print("Test: label accuracy {:.2f}%, group accuracy {:.2f}% (label loss {:.4f}, group loss {:.4f})\n",
               100 * result["label_accuracy"], 100 * result["group_accuracy"], result["label_loss"], result["group_loss"]);
    common.print_accuracy(result["label_accuracy"]);
  });
}
