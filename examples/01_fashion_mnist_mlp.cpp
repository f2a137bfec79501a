// The classic FashionMNIST tutorial network (PyTorch's "Quickstart"/"Optimizing Model Parameters"):
// Flatten, Dense 512, ReLU, Dense 512, ReLU, Dense 10, cross-entropy, SGD with lr 1e-3, batch 64.
//
//   01_fashion_mnist_mlp [--epochs 20] [--batch-size 64] [--lr 1e-3] [--data DIR] [--seed 0]
//                        [--accumulate N] [--clip MAX_NORM] [--amp[=f16|bf16]] [--explain WINDOWS] [--verbose 0|1|2]
//                        [--device best|cpu|cuda|cuda:N] [--save PATH] [--load PATH] [--save-model PATH]
//                        [--export-onnx PATH]
//                        [--checkpoint-dir DIR] [--checkpoint-every MICRO_BATCHES]
//
// --save writes the weights after training as safetensors under PyTorch's names ("1.weight", ...),
// which torch's load_state_dict takes; --load starts from such a file (from Accrue or PyTorch).
// --save-model writes the whole model (the same weights and the architecture), which load_model and
// 12_predict read without this program's code. --export-onnx writes it as an ONNX file (opset 17)
// and, where ONNX Runtime is installed (tests/onnx/install_onnxruntime.sh), runs it there on the
// first 7 test images beside predict, printing the largest differences; 12_predict --onnx reads it.
// --checkpoint-dir writes training checkpoints there (at each epoch's end and every
// --checkpoint-every micro-batches) and, when the folder already holds one, continues from the
// newest: a run killed at any moment and started again with the same flags ends as if never killed.
// Ctrl-C stops after the current micro-batch, writes a checkpoint there, and exits with 130.
//
// After every epoch it prints the tutorial's line: "Test Results: Accuracy: 71.2%, Avg loss: 0.789".

#include <limits>

#include "example_options.hpp"

using namespace accrue;

int main(int argc, char** argv) {
  CLI::App app{"Train the FashionMNIST tutorial MLP"};
  examples::ExampleOptions common{.epochs = 20};
  std::int64_t batch_size = 64;
  double lr = 1e-3;
  int verbose = 1;
  int accumulate = 1;
  double clip = 0.0;
  int explain = 0;
  std::string save, load, save_model, export_onnx, checkpoint_dir;
  std::int64_t checkpoint_every = 200;
  constexpr auto most_int = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
  constexpr auto most_int64 = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  common.add_to(app);
  common.add_report_flag(app);
  app.add_option("--batch-size", batch_size,
                 "Samples per micro-batch (one forward and backward pass); an optimizer step takes --accumulate of them")
      ->check(examples::whole_number(1, most_int64));
  app.add_option("--lr", lr, "SGD learning rate")->check(examples::finite_number(0));
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")
      ->check(examples::whole_number(0, 2));
  app.add_option("--accumulate", accumulate, "Micro-batches of --batch-size per optimizer step")
      ->check(examples::whole_number(1, most_int));
  app.add_option("--clip", clip, "Clip the global gradient norm to this (0: off)")->check(examples::finite_number(0));
  app.add_option("--explain", explain, "Explain the first N windows step by step")->check(examples::whole_number(0, most_int));
  app.add_option("--save", save, "Write the weights after training to this safetensors file");
  app.add_option("--load", load, "Start from the weights in this safetensors file");
  app.add_option("--save-model", save_model, "Write the whole model after training to this safetensors file (load_model, 12_predict)");
  app.add_option("--export-onnx", export_onnx, "Write the model after training to this ONNX file, checked in ONNX Runtime where installed");
  app.add_option("--checkpoint-dir", checkpoint_dir,
                 "Write training checkpoints to this folder, and continue from the newest one there");
  app.add_option("--checkpoint-every", checkpoint_every, "Micro-batches between checkpoints (0: at epoch ends only)")
      ->check(examples::whole_number(0, most_int64));

  return examples::run_example(app, argc, argv, [&] {
    // Found out now rather than after hours of training. --save may replace the --load file (training
    // goes on from it, and the file is replaced whole at the end); nothing else read may be replaced,
    // and no two outputs may name one file.
    const examples::ExampleOptions::Inputs data = common.fashion_mnist_inputs();
    examples::ExampleOptions::Inputs inputs = data;
    if (!load.empty()) inputs.emplace_back(load, "the --load weights");
    if (!save.empty()) require_output_file(save, "--save", data);
    if (!save_model.empty()) require_output_file(save_model, "--save-model", inputs);
    if (!export_onnx.empty()) require_output_file(export_onnx, "--export-onnx", inputs);
    common.check_report(inputs);
    require_distinct_outputs({{save, "--save"}, {save_model, "--save-model"}, {export_onnx, "--export-onnx"},
                              {common.report, "--report"}, {checkpoint_dir, "--checkpoint-dir"}});
    manual_seed(common.seed);
    auto [train, test] = datasets::fashion_mnist(common.data);

    Sequential model{
        layers::Input{1, 28, 28},
        layers::Flatten{},
        layers::Dense{512}, layers::ReLU{},
        layers::Dense{512}, layers::ReLU{},
        layers::Dense{10},
    };
    if (!load.empty()) {
      model.load_weights(load);
      fmt::print("Loaded weights from {}\n", load);
    }
    model.to(common.target());
    optim::Recipe recipe = optim::SGD{.lr = lr};
    if (accumulate > 1) recipe = recipe.accumulate(accumulate);
    if (clip > 0.0) recipe = recipe.clip(clip);
    model.compile(common.with_amp(recipe), losses::CrossEntropy{}, {metrics::Accuracy{}});
    if (common.speaks()) model.summary();

    auto report = callbacks::Lambda{{.epoch_end = [&](int, Logs& logs) {
      if (common.speaks())
        fmt::print("Test Results: Accuracy: {:.1f}%, Avg loss: {:.6f}\n", 100.0 * logs.at("val_accuracy"),
                   logs.at("val_loss"));
    }}};
    model.fit(train, {.epochs = common.epochs, .batch_size = batch_size, .validation = test, .callbacks = common.callbacks({report}),
                      .seed = common.seed, .verbose = verbose, .explain = explain,
                      .checkpoint = {.dir = checkpoint_dir,
                                     .every_micro_batches = checkpoint_dir.empty() ? 0 : checkpoint_every},
                      .distributed = common.distributed});

    auto [loss, accuracy] = model.evaluate(test);
    if (!common.speaks()) return;
    fmt::print("Avg loss: {:.6f}\n", loss);
    if (!save.empty()) {
      model.save_weights(save);
      fmt::print("Saved the weights to {}\n", save);
    }
    if (!save_model.empty()) {
      model.save(save_model);
      fmt::print("Saved the model to {}\n", save_model);
      common.link_in_report("the whole model", save_model);
    }
    if (!export_onnx.empty()) {
      examples::export_to_onnx(model, export_onnx, test.inputs().narrow(0, 7));
      common.link_in_report("ONNX model", export_onnx);
    }
    common.print_accuracy(accuracy);
  });
}
