// A model of two inputs on a table: the Palmer penguins (344 penguins of 3 species on 3 islands,
// from Debian's r-cran-palmerpenguins), as a wide-and-deep classifier reads it. The CSV's column
// groups are the inputs: "measures" (bill length and depth, flipper length, body mass) through
// Normalization adapted on the training split and a Dense layer, and "island" (its name as text)
// through a StringLookup adapted on the training split and an Embedding; the two concatenated,
// then the species. The same table read as one input (the island one-hot) trains a Sequential
// beside it. R writes a missing value "NA": the two penguins without measurements get 0 there.
// The model keeps its preprocessing, its columns and the species' names: --save-model writes a
// file that 12_predict serves any CSV file of penguins with (columns in any order; an island never
// seen is the lookup's unknown index).
//
//   14_two_inputs [--data FILE] [--epochs 60] [--batch-size 16] [--lr 1e-2] [--seed 0] [--verbose 0|1|2]
//                 [--save-model PATH] [--export-onnx PATH]
//   12_predict PATH /usr/lib/R/site-library/palmerpenguins/extdata/penguins.csv
//
// Ends with both models' test accuracy and "Accuracy: X%", the two-input model's.

#include "example_options.hpp"

using namespace accrue;

int main(int argc, char** argv) {
  CLI::App app{"Train a classifier of two inputs (numbers and a category) on the Palmer penguins"};
  examples::ExampleOptions common{.epochs = 60};
  std::int64_t batch_size = 16;
  double lr = 1e-2;
  int verbose = 1;
  common.data = "/usr/lib/R/site-library/palmerpenguins/extdata/penguins.csv";
  common.add_to(app, "The penguins' CSV (default: Debian's r-cran-palmerpenguins)");
  common.add_report_flag(app);
  examples::ModelOutputs outputs;
  outputs.add_to(app);
  app.add_option("--batch-size", batch_size, "Samples per batch")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--lr", lr, "Adam's learning rate")->check(examples::finite_number(0));
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")
      ->check(examples::whole_number(0, 2));

  return examples::run_example(app, argc, argv, [&] {
    common.check_report({{common.data, "the table"}});
    outputs.check({{common.data, "the table"}});
    manual_seed(common.seed);
    const std::vector<datasets::Column> measures{"bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"};
    datasets::CsvOptions read{.target = "species", .categorical = {"island"}, .missing = 0.0f, .missing_values = {"NA"}};
    datasets::CsvOptions grouped = read;
    read.columns = measures;
    read.columns.insert(read.columns.begin(), "island");
    // The island as its name, looked up inside the model: its numbering travels with the model.
    grouped.categorical = {};
    grouped.groups = {{"measures", measures}, {"island", {"island"}, DType::i32, /*text=*/true}};
    const auto [train, test] = datasets::csv(common.data, grouped).split(0.8, common.seed);
    const auto species = static_cast<std::int64_t>(datasets::csv_classes(common.data, read).size());

    // Two inputs: the measures normalized with the training split's statistics, the island's name
    // looked up in the training split's islands and embedded.
    layers::Normalization normalize;
    normalize.adapt(train.slice(0, train.size()).inputs[0]);
    layers::StringLookup islands;
    islands.adapt(train, "island");
    layers::Input numbers{{4}, {.name = "measures"}},
        island{{1, grouped.max_text_bytes}, {.name = "island", .dtype = DType::i32}};
    const Symbol deep = layers::ReLU{}(layers::Dense{16}(normalize(numbers)));
    const Symbol place = layers::Flatten{}(layers::Embedding{islands.vocabulary_size(), 2}(islands(island)));
    Model model{{numbers, island}, layers::Dense{species}(layers::Concatenate{}({deep, place})), {.name = "wide_and_deep"}};
    model.to(common.target());
    model.compile(common.with_amp(optim::Adam{.lr = lr}), losses::CrossEntropy{}, {metrics::Accuracy{}});
    if (common.speaks()) model.summary();
    model.fit(train, {.epochs = common.epochs, .batch_size = batch_size, .callbacks = common.callbacks(), .seed = common.seed,
                      .verbose = verbose});

    // The same rows as one input, the island one-hot, in a Sequential.
    const auto [flat_train, flat_test] = datasets::csv(common.data, read).split(0.8, common.seed);
    layers::Normalization flat_normalize;
    flat_normalize.adapt(flat_train);
    Sequential flat{layers::Input{flat_train.sample_shape()[0]}, flat_normalize, layers::Dense{16}, layers::ReLU{},
                    layers::Dense{species}};
    flat.to(common.target());
    flat.compile(common.with_amp(optim::Adam{.lr = lr}), losses::CrossEntropy{}, {metrics::Accuracy{}});
    flat.fit(flat_train, {.epochs = common.epochs, .batch_size = batch_size, .seed = common.seed, .verbose = 0});

    const double two_inputs = model.evaluate(test)["accuracy"], one_input = flat.evaluate(flat_test)["accuracy"];
    fmt::print("{} test penguins: two inputs {:.1f}%, one Sequential input {:.1f}%\n", test.size(), 100 * two_inputs,
               100 * one_input);
    outputs.write(model, common);
    common.print_accuracy(two_inputs);
  });
}
