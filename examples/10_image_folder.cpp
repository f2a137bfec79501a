// Your own pictures: a folder with one sub-folder per class, as Keras's
// image_dataset_from_directory and torchvision's ImageFolder read it. By default Tux Paint's
// stamps (Debian's tuxpaint-stamps-default: about 800 PNGs in 16 or 17 category folders, the
// largest, "symbols", 31% of them), decoded on demand on background threads, 20% held out for validation
// with a seed. The preprocessing is in the model, as Keras's preprocessing layers put it: the
// images come in as their pixels, [0, 255], and the model resizes them (Resizing, for files of any
// size once saved), crops, flips and changes their brightness and contrast in training only, with
// randomness drawn from (seed, epoch, sample), so accumulation, processes and resumes see the same
// images, and rescales them. A small CNN with batch normalization and AdamW, its rate decayed on a
// cosine. --save-model and --export-onnx write a model that takes image files as they are read:
// 12_predict MODEL photo.png names what is in a photo.
//
//   10_image_folder [--data DIR] [--image-size 40] [--crop 32] [--epochs 15] [--batch-size 32]
//                   [--accumulate 1] [--lr 3e-3] [--workers -1] [--seed 0] [--verbose 0|1|2]
//                   [--save-model PATH] [--export-onnx PATH]
//
// A large folder: examples/fashion_mnist_to_png.py writes FashionMNIST's 70,000 images as PNG files
// in train/ and test/ folders of ten classes; pass its train/ folder with --image-size 28 --crop 28.
// Ends with the validation split's "Accuracy: X%" and the share of the majority class beside it.

#include <chrono>
#include <limits>
#include <map>

#include "example_options.hpp"

using namespace accrue;

namespace {

void add_block(Sequential& model, std::int64_t channels) {
  model.add(layers::Conv2d{channels, 3, {.padding = layers::same, .bias = false}});
  model.add(layers::BatchNorm2d{});
  model.add(layers::ReLU{});
  model.add(layers::MaxPool2d{2});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN on a folder of images sorted into class folders"};
  examples::ExampleOptions common{.epochs = 15};
  common.data = "/usr/share/tuxpaint/stamps";
  std::int64_t batch_size = 32, image_size = 40, crop = 32;
  int accumulate = 1, verbose = 1, workers = -1;
  double lr = 3e-3;
  examples::ModelOutputs outputs;
  common.add_to(app, "The image folder: one sub-folder per class (default: Tux Paint's stamps)");
  common.add_report_flag(app);
  outputs.add_to(app);
  app.add_option("--image-size", image_size, "Images are resized to this square first")->check(examples::whole_number(8, 1024));
  app.add_option("--crop", crop, "Training crops (and the validation's central crop) of this size")
      ->check(examples::whole_number(4, 1024));
  app.add_option("--batch-size", batch_size, "Samples per micro-batch")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--accumulate", accumulate, "Micro-batches per optimizer step")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--lr", lr, "AdamW's learning rate")->check(examples::finite_number(0));
  app.add_option("--workers", workers, "Threads decoding images (-1: one per core, at most 4)")->check(examples::whole_number(0, 64) | CLI::IsMember({-1}));
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")
      ->check(examples::whole_number(0, 2));

  return examples::run_example(app, argc, argv, [&] {
    if (crop > image_size) throw ValueError(fmt::format("--crop {} is larger than --image-size {}", crop, image_size));
    common.check_report({{common.data, "the images"}});
    outputs.check({{common.data, "the images"}});
    manual_seed(common.seed);
    // Batches need one size: the folder is read at --image-size, as the model's Resizing makes it.
    const datasets::ImageFolderOptions options{
        .image_size = image_size, .validation_split = 0.2, .seed = common.seed, .raw_pixels = true};
    const auto [train, validation] = datasets::image_folder_split(common.data, options);
    const std::vector<std::string>& classes = train.class_names();
    std::map<std::int32_t, std::int64_t> counts;
    for (const std::int32_t label : validation.targets().to_vector<std::int32_t>()) ++counts[label];
    std::int64_t majority = 0;
    for (const auto& [label, n] : counts) majority = std::max(majority, n);
    if (common.speaks())
      fmt::print("{}: {} classes; {} training and {} validation images, resized to {}x{}, crops of {}\n", common.data,
                 classes.size(), train.size(), validation.size(), image_size, image_size, crop);

    Sequential model{layers::Input{3, image_size, image_size},
                     layers::Resizing{image_size},  // in training the images have this size already
                     layers::RandomCrop{crop},      // in evaluation: the image resized to the crop
                     layers::RandomFlip{layers::FlipMode::horizontal},
                     layers::RandomBrightness{0.1},
                     layers::RandomContrast{0.2},
                     layers::Rescaling{1.0f / 255}};
    model.set_input_range(0, 255);
    add_block(model, 32);
    add_block(model, 64);
    add_block(model, 128);
    model.add(layers::GlobalAvgPool2d{});
    model.add(layers::Dense{static_cast<std::int64_t>(classes.size())});
    model.to(common.target());
    optim::Recipe recipe = optim::AdamW{.lr = lr, .weight_decay = 1e-4};
    if (accumulate > 1) recipe = recipe.accumulate(accumulate);
    model.compile(common.with_amp(recipe), losses::CrossEntropy{}, {metrics::Accuracy{}});

    const auto start = std::chrono::steady_clock::now();
    model.fit(train, {.epochs = common.epochs,
                      .batch_size = batch_size,
                      .validation = validation,
                      // Decayed to zero over the run, so that the last epochs settle instead of
                      // jumping between minima of this small, unbalanced validation set.
                      .schedule = schedules::warmup_cosine({.warmup_ratio = 0.05}),
                      .callbacks = common.callbacks(),
                      .seed = common.seed,
                      .data_workers = workers,
                      .verbose = common.speaks() ? verbose : 0,
                      .distributed = common.distributed});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Evaluation result = model.evaluate(validation);
    if (!common.speaks()) return;
    fmt::print("Trained {} epochs in {:.1f} s; the majority class is {:.1f}% of the validation images\n", common.epochs,
               seconds, 100.0 * static_cast<double>(majority) / static_cast<double>(validation.size()));
    outputs.write(model, common);
    common.print_accuracy(result["accuracy"]);
  });
}
