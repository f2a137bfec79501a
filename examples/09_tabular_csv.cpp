// A table: scikit-learn's breast cancer data (569 tumours, 30 measurements, malignant or benign),
// read from its CSV file as it ships in Debian's python3-sklearn. Split 80/20 with a seed, the
// features normalized with statistics of the training split only (layers::Normalization, adapted
// as Keras's), then a small MLP with Adam.
//
//   09_tabular_csv [--data FILE] [--epochs 40] [--batch-size 32] [--lr 1e-3] [--seed 0] [--verbose 0|1|2]
//                  [--save-model PATH] [--export-onnx PATH]
//
// Any CSV whose last column is the class works with --data; --header says its first row names the
// columns, --skip-rows skips lines before it (scikit-learn's first line of counts and class names).
// --save-model and --export-onnx write the model with its Normalization and the table's class names.
// Ends with the test split's "Accuracy: X%".

#include <limits>

#include "example_options.hpp"

using namespace accrue;

int main(int argc, char** argv) {
  CLI::App app{"Train an MLP on a CSV table"};
  examples::ExampleOptions common{.epochs = 40};
  std::int64_t batch_size = 32;
  double lr = 1e-3;
  int verbose = 1, skip_rows = 1;
  bool header = false;
  common.data = "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv";
  common.add_to(app, "The CSV file (default: scikit-learn's breast_cancer.csv, from Debian's python3-sklearn)");
  common.add_report_flag(app);
  examples::ModelOutputs outputs;
  outputs.add_to(app);
  app.add_option("--batch-size", batch_size, "Samples per batch")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--lr", lr, "Adam's learning rate")->check(examples::finite_number(0));
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")
      ->check(examples::whole_number(0, 2));
  app.add_flag("--header,!--no-header", header, "The first row (after --skip-rows) names the columns");
  app.add_option("--skip-rows", skip_rows, "Lines skipped before the header or the data")
      ->check(examples::whole_number(0, std::numeric_limits<int>::max()));

  return examples::run_example(app, argc, argv, [&] {
    common.check_report({{common.data, "the table"}});
    outputs.check({{common.data, "the table"}});
    manual_seed(common.seed);
    const datasets::CsvOptions read{.header = header, .skip_rows = skip_rows};
    const Dataset table = datasets::csv(common.data, read);
    const auto [train, test] = table.split(0.8, common.seed);
    // As many outputs as the table has classes (its distinct labels), not its largest label plus one.
    const auto classes = static_cast<std::int64_t>(datasets::csv_classes(common.data, read).size());
    if (common.speaks())
      fmt::print("{}: {} rows of {} features, {} classes; {} for training, {} for testing\n", table.name(), table.size(),
                 table.sample_shape()[0], classes, train.size(), test.size());

    layers::Normalization normalize;
    normalize.adapt(train);  // the test split's statistics stay unseen
    Sequential model{layers::Input{table.sample_shape()[0]}, normalize, layers::Dense{16}, layers::ReLU{},
                     layers::Dense{classes}};
    model.to(common.target());
    model.compile(common.with_amp(optim::Adam{.lr = lr}), losses::CrossEntropy{}, {metrics::Accuracy{}});
    model.fit(train, {.epochs = common.epochs,
                      .batch_size = batch_size,
                      .callbacks = common.callbacks(),
                      .seed = common.seed,
                      .verbose = common.speaks() ? verbose : 0,
                      .distributed = common.distributed});
    const Evaluation result = model.evaluate(test);
    if (!common.speaks()) return;
    outputs.write(model, common, test.take(7).inputs());
    common.print_accuracy(result["accuracy"]);
  });
}
