// The built-in callbacks: CSVLogger, EarlyStopping, ReduceLROnPlateau, ModelCheckpoint,
// LearningRateMonitor and NanGuard.

#include "../test_util.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace accrue;
using namespace accrue::test;
namespace fs = std::filesystem;

namespace {

Dataset two_classes(std::int64_t n, std::uint64_t seed) {
  Generator gen{seed};
  const Tensor x = Tensor::normal({n, 6}, 0.0f, 1.0f, &gen);
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  const auto xv = x.to_vector();
  for (std::int64_t i = 0; i < n; ++i) y[static_cast<std::size_t>(i)] = xv[static_cast<std::size_t>(i * 6)] > 0 ? 1 : 0;
  return Dataset{x, Tensor::from(y, {n}), "blobs"};
}

Sequential model() {
  manual_seed(5);
  return Sequential{layers::Input{6}, layers::Dense{8}, layers::ReLU{}, layers::Dense{2}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(csv_logger_writes_a_row_per_epoch) {
  TempDir dir{"callbacks"};
  const fs::path csv = dir.path / "log.csv";
  Sequential m = model();
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  m.fit(two_classes(64, 1), {.epochs = 3, .batch_size = 16, .validation = two_classes(32, 2),
                       .callbacks = {callbacks::CSVLogger{csv.string()}}, .verbose = 0});
  const std::string text = read_file(csv.string());
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.rfind("epoch,accuracy,loss,val_accuracy,val_loss\n0,", 0) == 0);
  BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 4);
  // A resumed run appends without a second header.
  m.fit(two_classes(64, 1), {.batch_size = 16, .validation = two_classes(32, 2),
                       .callbacks = {callbacks::CSVLogger{csv.string(), {.append = true}}}, .verbose = 0});
  const std::string appended = read_file(csv.string());
  BOOST_TEST(std::count(appended.begin(), appended.end(), '\n') == 5);
  BOOST_TEST(appended.find("epoch", 10) == std::string::npos);
}

BOOST_AUTO_TEST_CASE(early_stopping_stops_and_restores) {
  Sequential m = model();
  // A learning rate of 0: the loss never improves, so training stops after the first epoch plus
  // `patience` epochs without improvement, as Keras does. Unshuffled, every epoch sums the same
  // batches in the same order: reshuffled, the mean could round a last bit lower and count as
  // improving.
  m.compile(optim::SGD{.lr = 0.0}, losses::CrossEntropy{});
  auto stop = std::make_shared<callbacks::EarlyStopping>(callbacks::EarlyStoppingOptions{.monitor = "loss", .patience = 2});
  const History h =
      m.fit(two_classes(64, 3), {.epochs = 10, .batch_size = 16, .callbacks = {stop}, .shuffle = false, .verbose = 0});
  BOOST_TEST(h.epochs() == 3u);
  BOOST_TEST(*stop->stopped_epoch() == 2);

  // restore_best_weights puts back the weights of the best epoch.
  Sequential n = model();
  n.compile(optim::SGD{.lr = 2.0}, losses::CrossEntropy{});  // large steps: the loss bounces
  auto best = std::make_shared<callbacks::EarlyStopping>(
      callbacks::EarlyStoppingOptions{.monitor = "val_loss", .patience = 2, .restore_best_weights = true});
  std::vector<std::vector<float>> weights_per_epoch;
  n.fit(two_classes(64, 3), {.epochs = 30, .batch_size = 16, .validation = two_classes(64, 4),
                       .callbacks = {best, callbacks::Lambda{{.epoch_end = [&](int, Logs&) {
                                       weights_per_epoch.push_back(n.parameters()[0].to_vector());
                                     }}}},
                       .verbose = 0});
  BOOST_REQUIRE_MESSAGE(best->stopped_epoch().has_value(), "training with lr 2 was expected to stall and stop");
  BOOST_TEST_MESSAGE("stopped after epoch " << *best->stopped_epoch() << ", best epoch " << *best->best_epoch());
  BOOST_TEST(n.parameters()[0].to_vector() == weights_per_epoch.at(static_cast<std::size_t>(*best->best_epoch())));
  BOOST_CHECK_EXCEPTION(m.fit(two_classes(64, 3), {.callbacks = {callbacks::EarlyStopping{}}, .verbose = 0}), ValueError,
                        message_has({"EarlyStopping monitors 'val_loss'", "validation"}));
}

namespace {

// A metric of one's own that does not say which way it gets better.
struct Mine {
  void reset() {}
  void update(const Tensor&, const Tensor&, double) {}
  double result() const { return 0.0; }
  std::string name() const { return "mine"; }
};

}  // namespace

BOOST_AUTO_TEST_CASE(monitored_directions_come_from_the_metrics) {
  // "auto" used to minimise every name without "acc": EarlyStopping on val_auc restored the worst
  // epoch. The AUC declares that higher is better, so the best epoch is the one of the largest.
  Sequential m = model();
  m.compile(optim::SGD{.lr = 0.5}, losses::CrossEntropy{}, {metrics::AUC{{.class_id = 1, .from_logits = true}}});
  auto stop = std::make_shared<callbacks::EarlyStopping>(
      callbacks::EarlyStoppingOptions{.monitor = "val_auc", .patience = 3, .restore_best_weights = true});
  TempDir dir{"directions"};
  auto keep = std::make_shared<callbacks::ModelCheckpoint>((dir.path / "ckpt").string(),
                                                           callbacks::ModelCheckpointOptions{.keep_best = true, .monitor = "val_auc"});
  const History h = m.fit(two_classes(64, 6), {.epochs = 12, .batch_size = 16, .validation = two_classes(48, 7),
                                               .callbacks = {stop, keep, callbacks::ReduceLROnPlateau{{.monitor = "val_auc"}}},
                                               .verbose = 0});
  const std::vector<double> auc = h["val_auc"];
  BOOST_TEST_MESSAGE(fmt::format("val_auc per epoch: {}", fmt::join(auc, ", ")));
  const auto best = static_cast<int>(std::max_element(auc.begin(), auc.end()) - auc.begin());
  BOOST_REQUIRE(stop->best_epoch().has_value());
  BOOST_TEST(*stop->best_epoch() == best);
  BOOST_TEST(*keep->best_epoch() == best);
  BOOST_TEST(auc[static_cast<std::size_t>(best)] > auc.front());
  // A name whose direction nothing declares is refused when training begins, asking for a mode.
  Sequential own = model();
  own.compile(optim::SGD{}, losses::CrossEntropy{}, {Mine{}});
  for (const std::string monitor : {"val_mine", "mine", "lr"})
    BOOST_CHECK_EXCEPTION(own.fit(two_classes(32, 1), {.validation = two_classes(16, 2),
                                                       .callbacks = {callbacks::EarlyStopping{{.monitor = monitor}}},
                                                       .verbose = 0}),
                          ValueError, message_has({"EarlyStopping", "'" + monitor + "'", "mode = \"max\""}));
  BOOST_CHECK_EXCEPTION(own.fit(two_classes(32, 1), {.validation = two_classes(16, 2),
                                                     .schedule = schedules::reduce_on_plateau({.monitor = "val_mine"}),
                                                     .verbose = 0}),
                        ValueError, message_has({"reduce on plateau", "'val_mine'", "mode"}));
  // Given a mode, any name is watched.
  const History given = own.fit(two_classes(32, 1), {.epochs = 2, .validation = two_classes(16, 2),
                                                     .callbacks = {callbacks::EarlyStopping{{.monitor = "val_mine", .mode = "max"}}},
                                                     .verbose = 0});
  BOOST_TEST(given.epochs() == 2u);
}

BOOST_AUTO_TEST_CASE(a_named_callback_is_the_one_fit_used) {
  // As Keras's: the user's own object, not a copy, so what it learned is there after fit.
  Sequential m = model();
  m.compile(optim::SGD{.lr = 0.0}, losses::CrossEntropy{});
  callbacks::EarlyStopping stop{{.monitor = "loss", .patience = 1}};
  m.fit(two_classes(64, 3), {.epochs = 10, .batch_size = 16, .callbacks = {stop}, .shuffle = false, .verbose = 0});
  BOOST_REQUIRE(stop.stopped_epoch().has_value());
  BOOST_TEST(*stop.stopped_epoch() == 1);
}

BOOST_AUTO_TEST_CASE(reduce_lr_on_plateau_lowers_the_rate) {
  Sequential m = model();
  m.compile(optim::SGD{.lr = 0.0}, losses::CrossEntropy{});
  auto monitor = std::make_shared<callbacks::LearningRateMonitor>();
  std::vector<double> epoch_lr;
  // The rate is 0 so nothing improves; the factor halves after each 2 stalled epochs (patience 1).
  m.compile(optim::SGD{.lr = 1e-9}, losses::CrossEntropy{});
  const History h = m.fit(two_classes(64, 5), {.epochs = 6, .batch_size = 64,
                                         .callbacks = {callbacks::ReduceLROnPlateau{{.monitor = "loss", .factor = 0.5,
                                                                                     .patience = 1, .min_delta = 1e-3}},
                                                       monitor},
                                         .verbose = 0});
  const auto lr = h["lr"];
  BOOST_TEST_MESSAGE(fmt::format("lr per epoch: {}", fmt::join(lr, ", ")));
  BOOST_TEST(lr.front() == 1e-9, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(lr.back() < lr.front() / 3);
  BOOST_TEST(monitor->history().size() == 6u);
}

BOOST_AUTO_TEST_CASE(model_checkpoint_keeps_last_and_best) {
  TempDir dir{"callbacks"};
  Sequential m = model();
  m.compile(optim::SGD{.lr = 0.5}, losses::CrossEntropy{});
  auto ckpt = std::make_shared<callbacks::ModelCheckpoint>((dir.path / "ckpt").string(),
                                                           callbacks::ModelCheckpointOptions{.keep_best = true});
  m.fit(two_classes(64, 6), {.epochs = 4, .batch_size = 16, .validation = two_classes(32, 7), .callbacks = {ckpt}, .verbose = 0});
  BOOST_TEST(fs::exists(ckpt->last_path()));
  BOOST_TEST(fs::exists(ckpt->best_path()));
  Sequential restored = model();
  restored.load_weights(ckpt->last_path());
  for (std::size_t i = 0; i < m.parameters().size(); ++i) check_close(restored.parameters()[i], m.parameters()[i], 0, 0);
  BOOST_TEST(ckpt->best_epoch().has_value());
}

BOOST_AUTO_TEST_CASE(nan_guard_policies) {
  Dataset data = two_classes(32, 8);
  std::vector<float> x = data.inputs().to_vector();
  x[9 * 6] = std::numeric_limits<float>::infinity();
  data = Dataset{Tensor::from(x, {32, 6}), data.targets()};
  Sequential m = model();
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  // No guard: raise, naming the epoch and micro-batch.
  BOOST_CHECK_EXCEPTION(m.fit(data, {.batch_size = 8, .shuffle = false, .verbose = 0}), NonFiniteError,
                        message_has({"epoch 1/1, batch 2/4", "micro-batch 1/1 of optimizer step 2"}));
  BOOST_CHECK_EXCEPTION(m.fit(data, {.batch_size = 8, .callbacks = {callbacks::NanGuard{{.action = NonFiniteAction::raise}}},
                                     .shuffle = false, .verbose = 0}),
                        NonFiniteError, message_has({"batch 2/4"}));
  // Warn: training goes on; without a gradient check the inf reaches the weights, as it would in PyTorch.
  auto warn = std::make_shared<callbacks::NanGuard>(callbacks::NanGuardOptions{.action = NonFiniteAction::warn});
  Sequential w = model();
  w.compile(optim::SGD{.lr = 0.1}.clip(1.0), losses::CrossEntropy{});  // clipping checks the norm: the step is skipped
  std::vector<StepRecord::Status> statuses;
  w.fit(data, {.batch_size = 8,
               .callbacks = {warn, callbacks::Lambda{{.optimizer_step = [&](const StepRecord& r) { statuses.push_back(r.status); }}}},
               .shuffle = false, .verbose = 0});
  BOOST_TEST(warn->seen() == 1);
  BOOST_TEST(statuses.at(1) == StepRecord::Status::skipped);
  for (const Tensor& p : w.parameters())
    for (float v : p.to_vector()) BOOST_REQUIRE(std::isfinite(v));
}
