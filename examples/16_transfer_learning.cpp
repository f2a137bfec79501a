// Transfer learning as it is done with Keras or PyTorch: a ResNet-18 trained on ImageNet, its
// classifier replaced by one for your own classes, trained on a folder of your images (by default
// Tux Paint's stamps, as 10_image_folder). torchvision's ImageNet weights are the file it downloads:
//
//   https://download.pytorch.org/models/resnet18-f37072fd.pth     (46.8 MB; torch.hub keeps it in
//                                                                  ~/.cache/torch/hub/checkpoints/)
//   16_transfer_learning --weights resnet18-f37072fd.pth
//
// The file is read as torch.save wrote it, without running anything in it. Two phases: the head
// alone on the frozen backbone (its BatchNorms in inference mode, on ImageNet's statistics), then
// the last stage's (layer4's) weights with the head at a tenth of the rate, its BatchNorms still in
// inference mode. Images are prepared as the
// weights expect: resized, cropped (random crops and flips in training), normalized by ImageNet's
// mean and standard deviation. Without --weights the whole network trains from scratch, and says so.
//
//   16_transfer_learning [--weights FILE.pth] [--data DIR] [--image-size 72] [--crop 64]
//                        [--head-epochs 3] [--epochs 6] [--batch-size 8] [--accumulate 4] [--lr 1e-3]
//                        [--train-images N] [--save-model PATH] [--export-onnx PATH] [--verbose 0|1|2]
//
// Ends with the validation split's "Accuracy: X%".

#include <accrue/models.hpp>
#include <chrono>

#include "example_options.hpp"

using namespace accrue;

namespace {

// The index of the first layer whose name starts with `prefix`.
std::size_t first_layer(const Model& model, const std::string& prefix) {
  for (std::size_t i = 0; i < model.size(); ++i)
    if (model.layer(i).name().starts_with(prefix)) return i;
  throw ValueError(fmt::format("model '{}' has no layer named {}...", model.name(), prefix));
}

// A ResNet-18 for images of crop x crop whose head (fc) gives `classes` outputs, its backbone from
// `weights` when given: everything but ImageNet's classifier (fc, 1000 classes), which the new
// head replaces, and refused when anything else is left over.
Model resnet18_for(std::size_t classes, std::int64_t crop, const std::string& weights, bool speaks) {
  Model backbone = models::resnet18({.include_top = false, .input_shape = {3, crop, crop}});
  if (!weights.empty()) {
    const LoadReport loaded = backbone.load_weights(weights, {.strict = false});
    const bool only_the_head = loaded.missing.empty() && loaded.mismatched.empty() && loaded.unexpected.size() == 2 &&
                               loaded.unexpected[0].starts_with("'fc.");
    if (!only_the_head) throw ValueError(fmt::format("--weights {} is not a ResNet-18's state_dict: {}", weights, loaded.str()));
    if (speaks) fmt::print("{}: {}\n", weights, loaded.str());
  }
  return Model{backbone.input(0), layers::Dense{static_cast<std::int64_t>(classes), {.name = "fc"}}(backbone.output(0)),
               {.name = "resnet18"}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fine-tune an ImageNet ResNet-18 on a folder of images sorted into class folders"};
  examples::ExampleOptions common{.epochs = 6};
  common.data = "/usr/share/tuxpaint/stamps";
  std::string weights;
  examples::ModelOutputs outputs;
  std::int64_t batch_size = 8, image_size = 72, crop = 64, train_images = 0;
  int accumulate = 4, head_epochs = 3, verbose = 1;
  double lr = 1e-3;
  common.add_to(app, "The image folder: one sub-folder per class (default: Tux Paint's stamps)");
  app.add_option("--weights", weights, "torchvision's ResNet-18 state_dict (resnet18-f37072fd.pth); without it, training starts from scratch");
  app.add_option("--image-size", image_size, "Images are resized to this square first")->check(examples::whole_number(32, 1024));
  app.add_option("--crop", crop, "Training crops (and the validation's central crop) of this size")->check(examples::whole_number(32, 1024));
  app.add_option("--head-epochs", head_epochs, "Epochs of the head alone on the frozen backbone, before --epochs with layer4 unfrozen")
      ->check(examples::whole_number(0, 1000));
  app.add_option("--batch-size", batch_size, "Samples per micro-batch")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--accumulate", accumulate, "Micro-batches per optimizer step")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--lr", lr, "AdamW's learning rate for the head (a tenth of it once layer4 is unfrozen)")->check(examples::finite_number(0));
  app.add_option("--train-images", train_images, "Train on the first N training images only (0: all)")->check(examples::whole_number(0, 1 << 30));
  outputs.add_to(app);
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")->check(examples::whole_number(0, 2));

  return examples::run_example(app, argc, argv, [&] {
    if (crop > image_size) throw ValueError(fmt::format("--crop {} is larger than --image-size {}", crop, image_size));
    const examples::ExampleOptions::Inputs inputs{{common.data, "the images"}, {weights, "the --weights file"}};
    outputs.check(inputs);
    manual_seed(common.seed);
    const auto [train_images_all, validation_images] =
        datasets::image_folder_split(common.data, {.image_size = image_size, .validation_split = 0.2, .seed = common.seed});
    const std::vector<std::string> classes = datasets::image_folder_classes(common.data);
    const transforms::Normalize imagenet{models::imagenet_mean, models::imagenet_std};
    const Dataset train = (train_images > 0 ? train_images_all.take(std::min(train_images, train_images_all.size())) : train_images_all)
                              .map({transforms::RandomCrop{crop}, transforms::RandomHorizontalFlip{}, imagenet});
    const Dataset validation = validation_images.map({transforms::CenterCrop{crop}, imagenet});

    Model net = resnet18_for(classes.size(), crop, weights, common.speaks());
    net.to(common.target());
    if (common.speaks())
      fmt::print("{}: {} classes; {} training and {} validation images at {}x{}; {}\n", common.data, classes.size(), train.size(),
                 validation.size(), crop, crop,
                 weights.empty() ? "no --weights: training ResNet-18 from scratch" : "fine-tuning ImageNet's ResNet-18");

    const auto start = std::chrono::steady_clock::now();
    const auto train_for = [&](const char* what, int epochs, double rate) {
      if (epochs == 0) return;
      net.compile(common.with_amp(optim::Recipe{optim::AdamW{.lr = rate, .weight_decay = 1e-4}}.accumulate(accumulate)),
                  losses::CrossEntropy{}, {metrics::Accuracy{}});
      if (common.speaks() && verbose > 0) fmt::print("Training {}, {} epochs at lr {}\n", what, epochs, rate);
      net.fit(train, {.epochs = epochs, .batch_size = batch_size, .validation = validation,
                      .schedule = schedules::warmup_cosine({.warmup_ratio = 0.05}), .seed = common.seed,
                      .verbose = common.speaks() ? verbose : 0, .distributed = common.distributed});
    };
    if (weights.empty()) {
      train_for("the whole network from scratch", head_epochs + common.epochs, lr);
    } else {
      const std::size_t head = first_layer(net, "fc"), last_stage = first_layer(net, "layer4.");
      net.freeze(0, head);  // its BatchNorms run in inference mode, on ImageNet's statistics
      train_for("the head on the frozen backbone", head_epochs, lr);
      // layer4's weights train, its BatchNorms stay in inference mode (Keras's advice: statistics
      // of micro-batches of 8 would replace ImageNet's with noise).
      for (std::size_t i = last_stage; i < head; ++i)
        if (dynamic_cast<const layers::BatchNorm*>(&net.layer(i)) == nullptr) net.layer(i).trainable(true);
      train_for("layer4 and the head", common.epochs, lr / 10);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Evaluation result = net.evaluate(validation);
    if (!common.speaks()) return;
    fmt::print("Trained in {:.1f} s\n", seconds);
    outputs.write(net, common);
    common.print_accuracy(result["accuracy"]);
  });
}
