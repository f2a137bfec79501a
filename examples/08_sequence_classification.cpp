// Which file of Debian's fortunes does a quotation come from? An LSTM reads each quotation as
// characters, padded to a common length, and its last state is classified: the recurrent
// counterpart of the FashionMNIST tutorial, on variable-length sequences.
//
//   08_sequence_classification [--epochs 10] [--files computers,definitions,people,songs-poems]
//                              [--length 96] [--batch-size 32] [--accumulate 1] [--hidden 64] [--lr 3e-3]
//                              [--data FOLDER] [--seed 0] [--device ...] [--amp]
//
// Quotations longer than --length keep their first characters; shorter ones are padded in front
// (Keras's pad_sequences default), so the LSTM's last step is always a real character and its last
// state has read the whole quotation. Token 0 is the padding, whose embedding stays zero. A fifth
// of each file's quotations, in file order, is the test set. The last line is "Accuracy: X%".

#include <algorithm>
#include <limits>
#include <map>

#include "example_options.hpp"

using namespace accrue;

namespace {

struct Split {
  Dataset train, test;
  std::int64_t vocabulary = 0;
};

// The quotations of `files`, as tokens (1 + the character's place in the vocabulary; 0 pads)
// padded in front to `length`, labelled by the file's place in `files`.
Split quotations(const std::string& folder, const std::vector<std::string>& files, std::int64_t length) {
  std::vector<datasets::Fortune> chosen;
  std::string all;
  for (const datasets::Fortune& f : datasets::read_fortunes(folder))
    if (std::find(files.begin(), files.end(), f.file) != files.end()) {
      chosen.push_back(f);
      all += f.text;
    }
  for (const std::string& name : files)
    ACCRUE_CHECK(std::any_of(chosen.begin(), chosen.end(), [&](const auto& f) { return f.file == name; }),
                 "--files: the fortunes folder has no file '{}' with quotations", name);
  const datasets::Vocabulary vocabulary{all, datasets::Tokenizer::character};
  std::vector<std::int32_t> train_x, test_x, train_y, test_y;
  std::map<std::string, std::int64_t> seen, count;
  for (const auto& f : chosen) ++count[f.file];
  for (const auto& f : chosen) {
    std::vector<std::int32_t> tokens = vocabulary.encode(f.text);
    if (static_cast<std::int64_t>(tokens.size()) > length) tokens.resize(static_cast<std::size_t>(length));
    std::vector<std::int32_t> padded(static_cast<std::size_t>(length) - tokens.size(), 0);
    for (const std::int32_t t : tokens) padded.push_back(t + 1);
    const auto label = static_cast<std::int32_t>(std::find(files.begin(), files.end(), f.file) - files.begin());
    const bool test = seen[f.file]++ >= count[f.file] * 4 / 5;
    (test ? test_x : train_x).insert((test ? test_x : train_x).end(), padded.begin(), padded.end());
    (test ? test_y : train_y).push_back(label);
  }
  const auto n_train = static_cast<std::int64_t>(train_y.size()), n_test = static_cast<std::int64_t>(test_y.size());
  return {Dataset{Tensor::from(train_x, {n_train, length}), Tensor::from(train_y, {n_train}), "quotations (training)"},
          Dataset{Tensor::from(test_x, {n_test, length}), Tensor::from(test_y, {n_test}), "quotations (test)"},
          vocabulary.size() + 1};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Classify fortunes by their file with an LSTM"};
  examples::ExampleOptions common{.epochs = 10};
  std::vector<std::string> files = {"computers", "definitions", "people", "songs-poems"};
  std::int64_t length = 96, batch_size = 32, hidden = 64;
  int accumulate = 1, verbose = 1;
  double lr = 3e-3;
  constexpr auto most_int = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
  common.add_to(app, "The fortunes folder (default: $ACCRUE_FORTUNES_DIR or /usr/share/games/fortunes)");
  common.add_report_flag(app);
  app.add_option("--files", files, "The fortune files to tell apart (the classes)")->delimiter(',');
  app.add_option("--length", length, "Characters read of each quotation")->check(examples::whole_number(1, 100000));
  app.add_option("--batch-size", batch_size, "Quotations per micro-batch")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--accumulate", accumulate, "Micro-batches per optimizer step")->check(examples::whole_number(1, most_int));
  app.add_option("--hidden", hidden, "The LSTM's hidden size")->check(examples::whole_number(1, 65536));
  app.add_option("--lr", lr, "Adam's learning rate")->check(examples::finite_number(0));
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")
      ->check(examples::whole_number(0, 2));

  return examples::run_example(app, argc, argv, [&] {
    ACCRUE_CHECK(files.size() >= 2, "--files: name at least two files to tell apart, got {}", files.size());
    // A file named twice would be one class under two labels, and every quotation of it the first.
    for (std::size_t i = 0; i < files.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        ACCRUE_CHECK(files[i] != files[j], "--files: '{}' is named twice (classes {} and {}); name each file once",
                     files[i], j, i);
    common.check_report({{common.data.empty() ? datasets::fortunes_folder() : common.data, "the fortunes"}});
    manual_seed(common.seed);
    const Split data = quotations(common.data, files, length);
    if (common.speaks())
      fmt::print("{} training and {} test quotations from {} files, {} characters each, a vocabulary of {}\n",
                 data.train.size(), data.test.size(), files.size(), length, data.vocabulary - 1);
    Sequential model{layers::Input{length}, layers::Embedding{data.vocabulary, 32, {.padding_idx = 0}},
                     layers::LSTM{hidden, {.return_sequences = false}},
                     layers::Dense{static_cast<std::int64_t>(files.size())}};
    model.to(common.target());
    model.compile(common.with_amp(optim::Adam{.lr = lr}.accumulate(accumulate).clip(1.0)), losses::CrossEntropy{},
                  {metrics::Accuracy{}});
    if (common.speaks()) model.summary();
    model.fit(data.train, {.epochs = common.epochs, .batch_size = batch_size, .validation = data.test,
                           .callbacks = common.callbacks(), .seed = common.seed, .verbose = verbose,
                           .distributed = common.distributed});
    const auto [loss, accuracy] = model.evaluate(data.test);
    if (!common.speaks()) return;
    fmt::print("Test loss: {:.4f}\n", loss);
    common.print_accuracy(accuracy);
  });
}
