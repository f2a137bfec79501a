// The training loop: convergence, logs and progress output, determinism, reductions, and the
// errors a user meets at the first bad batch.

#include <thread>

#include <pty.h>
#include <unistd.h>

#include "../test_util.hpp"

#include <cstdio>
#include <filesystem>

using namespace accrue;
using namespace accrue::test;

namespace {


Sequential small_model() {
  return Sequential{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(learns_blobs_and_logs_every_epoch) {
  manual_seed(1);
  Sequential model = small_model();
  model.compile(optim::SGD{.lr = 0.05, .momentum = 0.9}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const Dataset train = blobs(800, 2), test = blobs(200, 3);
  const History h = model.fit(train, {.epochs = 4, .batch_size = 16, .validation = test, .verbose = 0});
  BOOST_TEST(h.epochs() == 4u);
  for (const char* key : {"loss", "accuracy", "val_loss", "val_accuracy"}) BOOST_TEST(h[key].size() == 4u);
  BOOST_TEST(h["loss"].back() < h["loss"].front());
  BOOST_TEST(h.last("val_accuracy") > 0.9);
  BOOST_CHECK_EXCEPTION(h["precision"], ValueError, message_has({"'precision'", "loss", "val_accuracy"}));
  // The logged loss is the mean per sample over the epoch; after training it agrees with evaluate
  // on the same data within what one epoch of updates changes.
  const double eval_loss = model.evaluate(train).loss;
  BOOST_TEST(std::abs(eval_loss - h["loss"].back()) < 0.1);
}

BOOST_AUTO_TEST_CASE(converges_on_a_fashion_mnist_subset,
                     *boost::unit_test::precondition(accrue::test::requires_fashion_mnist)) {
  manual_seed(3);
  auto [train, test] = datasets::fashion_mnist();
  Sequential model{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{128}, layers::ReLU{}, layers::Dense{10}};
  model.compile(optim::Adam{.lr = 2e-3}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const History h = model.fit(train.take(6000), {.epochs = 3, .batch_size = 32, .verbose = 0});
  const auto [loss, accuracy] = model.evaluate(test.take(2000));
  BOOST_TEST_MESSAGE("FashionMNIST subset: train loss " << h["loss"].front() << " -> " << h["loss"].back()
                                                        << ", test accuracy " << accuracy);
  BOOST_TEST(h["loss"].back() < h["loss"].front());
  BOOST_TEST(accuracy > 0.75);
}

BOOST_AUTO_TEST_CASE(plain_lines_when_not_a_terminal) {
  manual_seed(4);
  Sequential model = small_model();
  model.compile(optim::SGD{.lr = 0.05}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  std::FILE* out = std::tmpfile();
  model.fit(blobs(100, 5), {.epochs = 2, .batch_size = 32, .validation = blobs(40, 6),
                            .callbacks = {callbacks::ProgressBar{{.mode = callbacks::ProgressBarOptions::Mode::lines,
                                                                  .stream = out}}},
                            .verbose = 0});
  const std::string text = read_file(out);
  std::fclose(out);
  BOOST_TEST_MESSAGE(text);
  for (const char* part : {"Training on 100 samples for 2 epochs: micro-batch 32, accumulation 1 (effective batch 32); 8 "
                           "optimizer steps",
                           "optimizer SGD(lr=0.05)", "clipping off", "Epoch 1/2 - 4/4 - ", "Epoch 2/2 - 4/4 - ",
                           "samples/s", "opt_step 8/8", "- accuracy: ", "- loss: ", "- val_accuracy: ", "- val_loss: "})
    BOOST_CHECK_MESSAGE(text.find(part) != std::string::npos, "progress output lacks '" << part << "'");
  // Keras 3 order: values sorted by name.
  BOOST_TEST(text.find("accuracy: ") < text.find("- loss: "));
  BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 4 + 2);
}

// The live bar redraws its line with \r: a line wider than the terminal would wrap, and every
// redraw would leave a row behind. Each drawn line fits in the terminal's width less one column
// (here $COLUMNS, the stream being no terminal), the bar narrowing first; the epoch's last line,
// which stays on screen, is whole.
BOOST_AUTO_TEST_CASE(the_live_bar_fits_the_terminal_width) {
  manual_seed(1);
  Sequential model{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
  model.compile(optim::SGD{.lr = 0.05}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  for (const int columns : {80, 60, 30}) {
    ::setenv("COLUMNS", std::to_string(columns).c_str(), 1);
    std::FILE* out = std::tmpfile();
    // 300 micro-batches of at least 1 ms: the bar redraws every 100 ms, so at least twice.
    const auto slow = callbacks::Lambda{{.micro_batch_end = [](const StepRecord&, const Logs&) {
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }}};
    model.fit(blobs(300, 5), {.epochs = 1, .batch_size = 1,
                              .callbacks = {slow, callbacks::ProgressBar{{.mode = callbacks::ProgressBarOptions::Mode::bar,
                                                                          .stream = out, .banner = false}}},
                              .verbose = 0});
    const std::string text = read_file(out);
    std::fclose(out);
    // What a terminal shows of each redraw: the text after a \r, without escape sequences, in
    // characters (the bar's are 3 bytes each).
    std::size_t drawn = 0, widest = 0;
    for (std::size_t at = text.find('\r'); at != std::string::npos; at = text.find('\r', at + 1)) {
      const std::size_t end = std::min(text.find('\r', at + 1), text.find('\n', at + 1));
      if (end == std::string::npos || text[end] == '\n') continue;  // the epoch's last line
      std::size_t shown = 0;
      for (std::size_t i = at + 1; i < end; ++i) {
        if (text[i] == '\x1b') {
          while (i < end && std::isalpha(static_cast<unsigned char>(text[i])) == 0) ++i;
          continue;
        }
        shown += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
      }
      ++drawn;
      widest = std::max(widest, shown);
    }
    BOOST_TEST_MESSAGE(columns << " columns: " << drawn << " redraws, the widest " << widest << " characters");
    BOOST_TEST(drawn >= 2u);
    BOOST_TEST(widest <= static_cast<std::size_t>(columns - 1));
    BOOST_TEST(text.find("- loss: ") != std::string::npos);  // the last line, whole
  }
  ::unsetenv("COLUMNS");
}

// Automatic progress: a live bar only on a terminal a person reads. mpirun gives its processes a
// pseudo-terminal whatever its own output goes to, and an epoch of \r redraws into a log was a
// megabyte: launched processes, TERM=dumb and files get a line per epoch.
BOOST_AUTO_TEST_CASE(progress_is_a_line_per_epoch_off_a_terminal) {
  int leader = -1, follower = -1;
  BOOST_REQUIRE(::openpty(&leader, &follower, nullptr, nullptr, nullptr) == 0);
  std::FILE* terminal = ::fdopen(follower, "w");
  std::FILE* file = std::tmpfile();
  const char* term = std::getenv("TERM");
  const std::string saved = term != nullptr ? term : "";
  ::setenv("TERM", "xterm", 1);
  BOOST_TEST(callbacks::shows_a_live_bar(terminal));
  BOOST_TEST(!callbacks::shows_a_live_bar(file));
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  BOOST_TEST(!callbacks::shows_a_live_bar(terminal));
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::setenv("TERM", "dumb", 1);
  BOOST_TEST(!callbacks::shows_a_live_bar(terminal));
  if (term != nullptr) ::setenv("TERM", saved.c_str(), 1);
  else ::unsetenv("TERM");
  // Into a file: one line per epoch, no \r at all.
  manual_seed(1);
  Sequential model{layers::Input{6}, layers::Dense{4}};
  model.compile(optim::SGD{}, losses::CrossEntropy{});
  model.fit(blobs(300, 5), {.epochs = 2, .batch_size = 1,
                            .callbacks = {callbacks::ProgressBar{{.stream = file, .banner = false}}}, .verbose = 0});
  const std::string text = read_file(file);
  BOOST_TEST(text.find('\r') == std::string::npos);
  BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 2);
  std::fclose(file);
  std::fclose(terminal);
  ::close(leader);
}

BOOST_AUTO_TEST_CASE(same_seeds_give_the_same_parameters) {
  const auto run = [] {
    manual_seed(11);
    Sequential model{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dropout{0.2f}, layers::Dense{4}};
    model.compile(optim::Adam{}, losses::CrossEntropy{});
    model.fit(blobs(200, 7), {.epochs = 2, .batch_size = 16, .seed = 3, .verbose = 0});
    return model.parameters()[0].to_vector();
  };
  BOOST_TEST(run() == run(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(sum_reduction_scales_the_gradient_by_the_batch) {
  // With Reduction::sum the step's gradient is B times that of the mean, so lr / B gives the same run.
  const Dataset data = blobs(64, 8);
  std::vector<std::vector<float>> finals;
  for (Reduction r : {Reduction::mean, Reduction::sum}) {
    manual_seed(12);
    Sequential model = small_model();
    const double lr = r == Reduction::mean ? 0.1 : 0.1 / 16;
    model.compile(optim::SGD{.lr = lr}, losses::CrossEntropy{.reduction = r});
    model.fit(data, {.epochs = 2, .batch_size = 16, .shuffle = false, .verbose = 0});
    finals.push_back(model.parameters()[0].to_vector());
  }
  check_close(finals[1], finals[0], 1e-5, 1e-4, "sum vs mean");
}

BOOST_AUTO_TEST_CASE(one_full_batch_equals_a_hand_written_step) {
  const Dataset data = blobs(32, 9);
  manual_seed(13);
  Sequential a = small_model();
  manual_seed(13);
  Sequential b = small_model();
  a.compile(optim::SGD{.lr = 0.2, .momentum = 0.5}, losses::CrossEntropy{});
  a.fit(data, {.epochs = 1, .batch_size = 32, .shuffle = false, .verbose = 0});
  auto opt = optim::SGD{.lr = 0.2, .momentum = 0.5}.create(b.parameters());
  ops::cross_entropy(b(data.inputs()), data.targets()).backward();
  opt->step();
  for (std::size_t i = 0; i < a.parameters().size(); ++i)
    check_close(a.parameters()[i], b.parameters()[i], 1e-6, 1e-5, "parameter " + std::to_string(i));
}

BOOST_AUTO_TEST_CASE(bad_batches_are_reported_with_epoch_and_batch) {
  Dataset data = blobs(40, 10);
  // A label out of range in the second batch.
  std::vector<std::int32_t> y = data.targets().to_vector<std::int32_t>();
  y[13] = 7;
  Sequential model = small_model();
  model.compile(optim::SGD{}, losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(model.fit(Dataset{data.inputs(), Tensor::from(y, {40})}, {.batch_size = 8, .shuffle = false, .verbose = 0}),
                        ValueError, message_has({"epoch 1/1, batch 2/5", "label 7", "sample 5", "[0, 4)"}));
  // A NaN in the inputs of the fourth batch makes the loss non-finite there.
  std::vector<float> x = data.inputs().to_vector();
  x[25 * 6 + 2] = std::nanf("");
  BOOST_CHECK_EXCEPTION(model.fit(Dataset{Tensor::from(x, {40, 6}), data.targets()}, {.batch_size = 8, .shuffle = false, .verbose = 0}),
                        NonFiniteError, message_has({"epoch 1/1, batch 4/5", "samples 24..31", "nan"}));
  // Inputs of the wrong shape at the first batch name the model, the layer shapes and the batch.
  BOOST_CHECK_EXCEPTION(model.fit(Dataset{Tensor::zeros({8, 5}), Tensor::zeros({8}, {.dtype = DType::i32})}, {.verbose = 0}),
                        ShapeError, message_has({"(6,)", "(5,)"}));
  // Targets that do not suit the loss.
  BOOST_CHECK_EXCEPTION(model.fit(Dataset{data.inputs(), Tensor::zeros({40})}, {.verbose = 0}), ValueError,
                        message_has({"epoch 1/1, batch 1/2", "int32"}));
  BOOST_CHECK_EXCEPTION(model.fit(data, {.epochs = 0}), ValueError, message_has({"epochs", "0"}));
  BOOST_CHECK_EXCEPTION(model.fit(data, {.batch_size = 0}), ValueError, message_has({"batch_size", "0"}));
}

BOOST_AUTO_TEST_CASE(callbacks_see_every_boundary) {
  Sequential model = small_model();
  model.compile(optim::SGD{}.accumulate(2), losses::CrossEntropy{}, {metrics::Accuracy{}});
  std::vector<std::string> events;
  auto spy = callbacks::Lambda{{
      .train_begin = [&](TrainingContext& c) { events.push_back(fmt::format("begin {} {}", c.epochs, c.steps_per_epoch)); },
      .epoch_begin = [&](int e) { events.push_back(fmt::format("epoch {}", e)); },
      .micro_batch_end = [&](const StepRecord& r, const Logs& l) {
        events.push_back(fmt::format("batch {} {} {}", r.micro_batch, status_name(r.status), l.contains("accuracy")));
      },
      .optimizer_step = [&](const StepRecord& r) { events.push_back(fmt::format("step {}", r.optimizer_step)); },
      .epoch_end = [&](int e, Logs& l) { events.push_back(fmt::format("end {} {}", e, l.contains("loss"))); },
      .train_end = [&](const Logs&) { events.push_back("done"); },
  }};
  model.fit(blobs(30, 11), {.epochs = 2, .batch_size = 10, .callbacks = {spy}, .verbose = 0});
  const std::vector<std::string> expected = {
      "begin 2 3",   "epoch 0",  "batch 0 accumulating true", "batch 1 applied true", "step 1", "batch 2 applied true",
      "step 2",      "end 0 true", "epoch 1", "batch 0 accumulating true", "batch 1 applied true", "step 3",
      "batch 2 applied true", "step 4", "end 1 true", "done"};
  BOOST_TEST(events == expected, boost::test_tools::per_element());
}
