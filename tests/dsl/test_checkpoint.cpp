// Training checkpoints: a run resumed from any of its checkpoints (inside an accumulation window,
// at an epoch's end, across a window carried over an epoch boundary) ends with the same parameters,
// bit for bit, and the same logs as the run never interrupted; damaged and mismatched checkpoints
// are refused with every problem named and nothing changed.

#include "../test_util.hpp"

#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <regex>
#include <tuple>
#include <fstream>
#include <sstream>

#include <accrue/dsl/training_checkpoint.hpp>
#include <accrue/framework/optim/adam.hpp>
#include <accrue/framework/optim/sgd.hpp>
#include <accrue/framework/serialization/checkpoint.hpp>

using namespace accrue;
using namespace accrue::test;
namespace fs = std::filesystem;

namespace {

void write_file(const std::string& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Parameters and buffers as raw bytes: equal means equal bit for bit.
std::vector<std::string> state_bytes(const Sequential& m) {
  std::vector<std::string> out;
  for (const auto& [name, t] : m.named_state()) {
    const Tensor host = t.to(Device::cpu());
    out.push_back(name + std::string(static_cast<const char*>(host.data_ptr()), host.nbytes()));
  }
  return out;
}

bool same_history(const History& a, const History& b) {
  if (a.epochs() != b.epochs()) return false;
  for (std::size_t e = 0; e < a.epochs(); ++e) {
    const auto& x = a.logs()[e].items();
    const auto& y = b.logs()[e].items();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i].first != y[i].first || std::memcmp(&x[i].second, &y[i].second, sizeof(double)) != 0) return false;
  }
  return true;
}

// A run: how to make and compile the model, and the fit options (without checkpoints).
struct Config {
  std::string name;
  std::function<Sequential()> make;
  std::function<void(Sequential&)> compile;
  std::function<FitOptions()> options;
  std::int64_t samples = 100;
};

FitOptions configs_base_options() {
  return FitOptions{.epochs = 3,
                    .batch_size = 8,
                    .schedule = schedules::warmup_cosine({.warmup_ratio = 0.2}),
                    .verbose = 0,
                    .backoff_on_oom = true};
}

std::vector<Config> configs() {
  std::vector<Config> c;
  // Adam with amsgrad, accumulation 3 with a short last window, dropout, clipping, a warmup-cosine
  // schedule over the run's steps, shuffling, and metrics held back to each window's end
  // (backoff_on_oom) so that checkpoints inside a window carry pending updates. The 64 x 64 weight's
  // gradient waits for the window's close (DeferredWeightGradients, 16 rows: two micro-batches, so
  // the third multiplies what waits first); a checkpoint inside the window multiplies it early.
  c.push_back({"adam_dropout_accumulate3",
               [] {
                 return Sequential{layers::Input{6}, layers::Dense{64}, layers::ReLU{}, layers::Dropout{0.3f},
                                   layers::Dense{64}, layers::ReLU{}, layers::Dense{4}};
               },
               [](Sequential& m) {
                 m.compile(optim::Adam{.lr = 1e-2, .amsgrad = true}
                               .accumulate(3, {.weight_gradients = WeightGradients::per_window})
                               .clip(1.0),
                           losses::CrossEntropy{},
                           {metrics::Accuracy{}});
               },
               configs_base_options});
  // float16 compute with loss scaling (the scaler's state), SGD with Nesterov momentum, batch
  // normalization (running statistics are buffers), an accumulation schedule whose windows carry
  // over epoch boundaries, a plateau schedule and early stopping (their bookkeeping).
  c.push_back({"sgd_f16_batchnorm_carry",
               [] {
                 return Sequential{layers::Input{6}, layers::Dense{12}, layers::BatchNorm1d{}, layers::ReLU{},
                                   layers::Dense{4}};
               },
               [](Sequential& m) {
                 m.compile(optim::SGD{.lr = 0.05, .momentum = 0.9, .nesterov = true}
                               .accumulate({{0, 2}, {1, 3}}, {.last_window = LastWindow::carry})
                               .amp(dtype::f16),
                           losses::CrossEntropy{}, {metrics::Accuracy{}});
               },
               [] {
                 return FitOptions{.epochs = 3,
                                   .batch_size = 7,
                                   .schedule = schedules::reduce_on_plateau({.monitor = "loss", .patience = 0}),
                                   .callbacks = {callbacks::EarlyStopping{{.monitor = "loss", .patience = 5}},
                                                 callbacks::ReduceLROnPlateau{{.monitor = "loss", .patience = 0}}},
                                   .verbose = 0};
               },
               90});
  // Early stopping that stops after the second epoch and puts back the first epoch's weights: a
  // resumed run must have kept them from its checkpoint.
  Config stopping = c[0];
  stopping.name = "early_stopping_restores_best";
  stopping.options = [] {
    FitOptions o = configs_base_options();
    o.callbacks = {callbacks::EarlyStopping{
        {.monitor = "loss", .min_delta = 10.0, .patience = 0, .restore_best_weights = true}}};
    return o;
  };
  c.push_back(stopping);
  // LAMB with an exponential moving average of the weights (optimizer state of its own, counted
  // in updates, put into the weights every 4 steps), validated on the average at each epoch's end
  // and loaded into the model at the end; a class weight and a confusion matrix's counts.
  Config averaged = c[0];
  averaged.name = "lamb_ema_accumulate3";
  averaged.compile = [](Sequential& m) {
    m.compile(optim::LAMB{.lr = 1e-2}.accumulate(3).ema({.decay = 0.9, .warmup = true, .overwrite_every = 4}),
              losses::CrossEntropy{}, {metrics::Accuracy{}, metrics::ConfusionMatrix{4}});
  };
  averaged.options = [] {
    FitOptions o = configs_base_options();
    o.validation = blobs(24, 12);
    o.class_weight = {{1, 2.5f}};
    return o;
  };
  c.push_back(averaged);
  return c;
}

Sequential made(const Config& c, std::uint64_t seed) {
  manual_seed(seed);
  Sequential m = c.make();
  c.compile(m);
  return m;
}

// Trains `c` from seed 1 with `options` (c's by default), writing a checkpoint every `every`
// micro-batches into `dir`; returns the model.
Sequential train_with_checkpoints(const Config& c, const Dataset& data, const std::string& dir, std::int64_t every,
                                  int keep = 1000, std::optional<FitOptions> options = std::nullopt) {
  Sequential m = made(c, 1);
  FitOptions o = options ? *options : c.options();
  o.checkpoint = {.dir = dir, .every_micro_batches = every, .keep = keep};
  m.fit(data, o);
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(resuming_from_every_checkpoint_repeats_the_run_bit_for_bit) {
  for (const Config& c : configs()) {
    const Dataset data = blobs(c.samples, 11);
    TempDir dir{c.name};

    // The run never interrupted, without checkpoints, and the same run writing one after every
    // micro-batch: writing them changes nothing.
    Sequential plain = made(c, 1);
    const History plain_history = plain.fit(data, c.options());
    Sequential reference = made(c, 1);
    FitOptions with_checkpoints = c.options();
    with_checkpoints.checkpoint = {.dir = dir.path.string(), .every_micro_batches = 1, .keep = 1000};
    const History history = reference.fit(data, with_checkpoints);
    BOOST_TEST(state_bytes(plain) == state_bytes(reference), c.name);
    BOOST_TEST(same_history(plain_history, history), c.name);

    const std::vector<std::string> files = detail::checkpoints_in(dir.path.string());
    BOOST_TEST_MESSAGE(c.name << ": " << files.size() << " checkpoints");
    BOOST_TEST(files.size() >= 26u);
    int with_gradients = 0;
    for (const std::string& file : files) {
      const auto f = serialization::load_checkpoint(file);
      with_gradients += std::any_of(f.tensors.begin(), f.tensors.end(), [](const auto& e) { return e.first.rfind("grad.", 0) == 0; });
      // A fresh process: other initial weights and generator states, all replaced by the checkpoint.
      Sequential resumed = made(c, 99);
      default_generator().manual_seed(12345);
      FitOptions options = c.options();
      options.resume_from = file;
      const History resumed_history = resumed.fit(data, options);
      BOOST_TEST(state_bytes(resumed) == state_bytes(reference), c.name << " resumed from " << file);
      BOOST_TEST(same_history(resumed_history, history), c.name << " resumed from " << file);
    }
    // Checkpoints inside windows carry the window's gradients.
    BOOST_TEST(with_gradients > 10, c.name << ": " << with_gradients);
    if (c.name == "early_stopping_restores_best") BOOST_TEST(history.epochs() == 2u);
  }
}

BOOST_AUTO_TEST_CASE(callbacks_continue_their_files) {
  // The CSV log of a resumed run is that of the run never interrupted: rows written after the
  // checkpoint are cut off and written again once.
  const Config c = configs()[0];
  const Dataset data = blobs(c.samples, 11);
  TempDir dir{"csv"};
  FitOptions options = c.options();
  options.callbacks = {callbacks::CSVLogger{dir.file("log.csv")}, callbacks::ModelCheckpoint{dir.file("weights")}};
  const Sequential reference = train_with_checkpoints(c, data, dir.file("ckpt"), 5, 1000, options);
  const std::string full_log = read_file(dir.file("log.csv"));
  BOOST_TEST(std::count(full_log.begin(), full_log.end(), '\n') == 4);  // header and 3 epochs

  for (const std::string& file : detail::checkpoints_in(dir.file("ckpt"))) {
    Sequential resumed = made(c, 7);
    FitOptions again = options;
    again.checkpoint = {};
    again.resume_from = file;
    write_file(dir.file("log.csv"), full_log);  // the file as a killed run left it: rows past the checkpoint
    resumed.fit(data, again);
    BOOST_TEST(read_file(dir.file("log.csv")) == full_log, "resumed from " << file);
    BOOST_TEST(state_bytes(resumed) == state_bytes(reference));
  }
}

BOOST_AUTO_TEST_CASE(checkpoint_folder_keeps_the_newest_and_a_finished_run_trains_no_more) {
  const Config c = configs()[0];
  const Dataset data = blobs(c.samples, 11);
  TempDir dir{"keep"};
  Sequential m = made(c, 1);
  FitOptions options = c.options();
  options.checkpoint = {.dir = dir.path.string(), .every_micro_batches = 4, .keep = 3};
  const History h = m.fit(data, options);
  const auto files = detail::checkpoints_in(dir.path.string());
  BOOST_TEST(files.size() == 3u);
  BOOST_TEST(fs::path(files.front()).filename().string() == "checkpoint-0000000039.safetensors");  // 3 x 13 micro-batches

  // Run again with the same folder: it resumes from the finished run's last checkpoint.
  const auto before = state_bytes(m);
  Sequential again = made(c, 5);
  const History h2 = again.fit(data, options);
  BOOST_TEST(state_bytes(again) == before);
  BOOST_TEST(same_history(h, h2));
  // load_weights takes the weights of a training checkpoint.
  Sequential weights_only = made(c, 8);
  weights_only.build(data.sample_shape());
  weights_only.load_weights(files.front());
  BOOST_TEST(state_bytes(weights_only) == before);
  // A Trainer takes the checkpoint per call too.
  Sequential third = made(c, 6);
  FitOptions plain = c.options();
  Trainer trainer{plain};
  const History h3 = trainer.fit(third, data, {.resume_from = dir.path.string()});
  BOOST_TEST(state_bytes(third) == before);
  BOOST_TEST(same_history(h, h3));
}

BOOST_AUTO_TEST_CASE(checkpoints_by_time) {
  const Config c = configs()[0];
  TempDir dir{"time"};
  Sequential m = made(c, 1);
  FitOptions options = c.options();
  options.checkpoint = {.dir = dir.path.string(), .every_seconds = 1e-9, .keep = 1000};
  m.fit(blobs(c.samples, 11), options);
  // Due after every micro-batch: 12 inside each of the 3 epochs and one at each epoch's end.
  BOOST_TEST(detail::checkpoints_in(dir.path.string()).size() == 39u);
}

// A run's checkpoints (every 5 micro-batches) with one from inside an epoch and its bytes, and a
// model whose state a refused checkpoint must leave as it was.
struct DamagedCheckpoints {
  const Config c = configs()[0];
  const Dataset data = blobs(c.samples, 11);
  TempDir dir{"damaged"};
  std::vector<std::string> files;
  std::string good, bytes;
  Sequential m = made(c, 42);
  std::vector<std::string> before;

  DamagedCheckpoints() {
    train_with_checkpoints(c, data, dir.file("ok"), 5);
    files = detail::checkpoints_in(dir.file("ok"));
    good = files[files.size() / 2];  // inside an epoch
    bytes = read_file(good);
    m.build(data.sample_shape());
    before = state_bytes(m);
  }
  void resume_from(const std::string& path) {
    FitOptions options = c.options();
    options.resume_from = path;
    m.fit(data, options);
  }
};

BOOST_FIXTURE_TEST_CASE(damaged_checkpoints_are_refused_and_change_nothing, DamagedCheckpoints) {

  // Truncated anywhere: in the length, the header, the data, by one byte.
  for (std::size_t length : {std::size_t{0}, std::size_t{5}, std::size_t{8}, std::size_t{200}, bytes.size() / 2,
                             bytes.size() - 1}) {
    write_file(dir.file("bad.safetensors"), bytes.substr(0, length));
    BOOST_CHECK_EXCEPTION(resume_from(dir.file("bad.safetensors")), IoError,
                          message_has({dir.file("bad.safetensors"), "not loaded"}));
    BOOST_TEST(state_bytes(m) == before, "truncated to " << length);
  }
  // A state nested 100,000 deep (a crafted file with its checksum right): refused as it is read.
  serialization::save_checkpoint(dir.file("deep.safetensors"), {}, std::string(100000, '[') + std::string(100000, ']'));
  BOOST_CHECK_EXCEPTION(resume_from(dir.file("deep.safetensors")), IoError,
                        message_has({dir.file("deep.safetensors"), "its state: nested more than 256 deep", "not loaded"}));
  BOOST_TEST(state_bytes(m) == before);
  // One bit flipped in the data, and in the state inside the header.
  std::string flipped = bytes;
  flipped[flipped.size() - 3] ^= 0x10;
  write_file(dir.file("bad.safetensors"), flipped);
  BOOST_CHECK_EXCEPTION(resume_from(dir.file("bad.safetensors")), IoError,
                        message_has({"is damaged: its checksum is", "not loaded"}));
  flipped = bytes;
  const auto at = flipped.find("micro_batches");
  BOOST_REQUIRE(at != std::string::npos);
  flipped[at + 16] = flipped[at + 16] == '1' ? '2' : '1';
  write_file(dir.file("bad.safetensors"), flipped);
  BOOST_CHECK_EXCEPTION(resume_from(dir.file("bad.safetensors")), IoError, message_has({"is damaged", "not loaded"}));
  BOOST_TEST(state_bytes(m) == before);
  // A state with a sound checksum but values that are not what they should be: a float where an
  // integer belongs (casting it would be undefined), a position past the run.
  for (const auto& [from, to, says] :
       {std::tuple{std::string{R"("epoch":\d+)"}, std::string{R"("epoch":1e300)"}, std::string{"epoch is 1e+300, not an integer"}},
        std::tuple{std::string{R"("next_slot":\d+)"}, std::string{R"("next_slot":99)"}, std::string{"next micro-batch 100 is past"}},
        std::tuple{std::string{R"("batch_size":\d+)"}, std::string{R"("batch_size":-3)"}, std::string{"micro-batch is -3"}}}) {
    serialization::CheckpointFile f = serialization::load_checkpoint(good);
    const std::string edited = std::regex_replace(f.state, std::regex{from}, to);
    BOOST_REQUIRE(edited != f.state);
    serialization::save_checkpoint(dir.file("edited.safetensors"), f.tensors, edited);
    BOOST_CHECK_EXCEPTION(resume_from(dir.file("edited.safetensors")), IoError,
                          message_has({dir.file("edited.safetensors"), says, "not loaded"}));
    BOOST_TEST(state_bytes(m) == before);
  }
  BOOST_CHECK_EXCEPTION(resume_from(dir.file("absent.safetensors")), IoError,
                        message_has({"absent.safetensors does not exist"}));
  // Weights alone are not a training checkpoint.
  m.save_weights(dir.file("weights.safetensors"));
  BOOST_CHECK_EXCEPTION(resume_from(dir.file("weights.safetensors")), IoError,
                        message_has({"is not a training checkpoint", "load_weights"}));
}

BOOST_FIXTURE_TEST_CASE(a_folder_skips_a_damaged_newest_checkpoint_but_not_only_damaged_ones, DamagedCheckpoints) {
  // In a folder, a damaged newest checkpoint is skipped for the one before it.
  fs::create_directories(dir.file("folder"));
  fs::copy_file(files[files.size() - 1], dir.file("folder/checkpoint-0000000005.safetensors"));
  write_file(dir.file("folder/checkpoint-0000000010.safetensors"), bytes.substr(0, bytes.size() - 100));
  Sequential reference = made(c, 1);
  reference.fit(data, c.options());
  Sequential recovered = made(c, 3);
  FitOptions options = c.options();
  options.checkpoint = {.dir = dir.file("folder")};
  recovered.fit(data, options);
  BOOST_TEST(state_bytes(recovered) == state_bytes(reference));
  // A folder of damaged checkpoints only is an error, not a fresh start.
  fs::create_directories(dir.file("broken"));
  write_file(dir.file("broken/checkpoint-0000000003.safetensors"), bytes.substr(0, 50));
  options.checkpoint = {.dir = dir.file("broken")};
  BOOST_CHECK_EXCEPTION(m.fit(data, options), IoError, message_has({"no training checkpoint in", "can be used", "is damaged"}));
  BOOST_TEST(state_bytes(m) == before);
}

BOOST_AUTO_TEST_CASE(a_checkpoint_of_another_run_is_refused_with_every_difference) {
  const Config c = configs()[0];
  const Dataset data = blobs(c.samples, 11);
  TempDir dir{"mismatch"};
  train_with_checkpoints(c, data, dir.path.string(), 5, 2);
  const std::string file = detail::checkpoints_in(dir.path.string()).front();

  Sequential m = made(c, 2);
  m.build(data.sample_shape());
  const auto before = state_bytes(m);
  FitOptions options = c.options();
  options.epochs = 4;
  options.batch_size = 6;
  options.resume_from = file;
  BOOST_CHECK_EXCEPTION(m.fit(data, options), ValueError,
                        message_has({file, "2 differences", "epochs: 3 in the checkpoint, 4 now",
                                     "micro-batch: 8 in the checkpoint, 6 now"}));
  BOOST_TEST(state_bytes(m) == before);

  // Another model under the same options: every tensor that does not fit is named at once.
  manual_seed(2);
  Sequential other{layers::Input{6}, layers::Dense{12}, layers::ReLU{}, layers::Dropout{0.3f}, layers::Dense{64},
                   layers::ReLU{}, layers::Dense{4}, layers::ReLU{}, layers::Dense{4}};
  c.compile(other);
  other.build(data.sample_shape());
  const auto other_before = state_bytes(other);
  FitOptions same = c.options();
  same.resume_from = file;
  BOOST_CHECK_EXCEPTION(other.fit(data, same), ValueError,
                        message_has({"does not fit model", "nothing was loaded",
                                     "'model.0.weight' is float32 (64, 6) in the checkpoint but float32 (12, 6)",
                                     "missing 'model.7.weight'", "missing 'model.7.bias'"}));
  BOOST_TEST(state_bytes(other) == other_before);
}

BOOST_AUTO_TEST_CASE(a_checkpoint_of_other_data_of_the_same_size_is_refused) {
  const Config c = configs()[0];
  const Dataset data = blobs(c.samples, 11);
  const Dataset other = blobs(c.samples, 12);  // the same size and shape, other values
  BOOST_TEST(data.fingerprint() == blobs(c.samples, 11).fingerprint());
  BOOST_TEST(data.fingerprint() != other.fingerprint());
  BOOST_TEST(data.fingerprint() != data.take(c.samples - 1).fingerprint());
  TempDir dir{"other_data"};
  train_with_checkpoints(c, data, dir.path.string(), 5, 2);
  Sequential m = made(c, 2);
  m.build(data.sample_shape());
  const auto before = state_bytes(m);
  FitOptions options = c.options();
  options.resume_from = dir.path.string();
  BOOST_CHECK_EXCEPTION(m.fit(other, options), ValueError,
                        message_has({"1 difference", "training data: " + data.fingerprint() + " in the checkpoint, " +
                                                         other.fingerprint() + " now"}));
  BOOST_TEST(state_bytes(m) == before);
}

BOOST_AUTO_TEST_CASE(a_folder_not_made_yet_holds_no_checkpoint) {
  // A run killed before it made its folder left none: nothing to resume, not an error. (A folder
  // that exists but cannot be listed is one: tests/hostile_inputs.sh, which can drop root.)
  TempDir dir{"not_made"};
  BOOST_TEST(detail::checkpoints_in(dir.file("never_made")).empty());
}

BOOST_AUTO_TEST_CASE(a_second_run_in_a_checkpoint_folder_is_refused) {
  const Config c = configs()[0];
  const Dataset data = blobs(c.samples, 11);
  TempDir dir{"locked"};
  FitOptions options = c.options();
  options.checkpoint = {.dir = dir.path.string(), .every_micro_batches = 2};
  {
    // Another run holds the folder (here: this process through another open lock file).
    const detail::CheckpointFolderLock other = detail::prepare_checkpoint_dir(dir.path.string());
    Sequential m = made(c, 1);
    BOOST_CHECK_EXCEPTION(m.fit(data, options), IoError,
                          message_has({dir.path.string(), "is in use by another training run",
                                       fmt::format("(process {},", ::getpid())}));
    BOOST_TEST(detail::checkpoints_in(dir.path.string()).empty());
  }
  // Once it is let go, the folder is free.
  Sequential m = made(c, 1);
  m.fit(data, options);
  BOOST_TEST(!detail::checkpoints_in(dir.path.string()).empty());
}

BOOST_AUTO_TEST_CASE(a_signal_stops_training_with_a_checkpoint_that_continues_the_run) {
  const Config c = configs()[0];
  const Dataset data = blobs(c.samples, 11);  // 13 micro-batches an epoch, windows of 3
  // The callbacks of every run below: one that may raise a signal after a given micro-batch.
  int raise_after = 0, seen = 0, signal = SIGINT;
  const auto with_raiser = [&](FitOptions o) {
    o.callbacks.push_back(callbacks::Lambda{{.micro_batch_end = [&](const StepRecord&, const Logs&) {
      if (++seen == raise_after) std::raise(signal);
    }}});
    return o;
  };
  Sequential reference = made(c, 1);
  reference.fit(data, with_raiser(c.options()));
  for (int after : {5, 13, 20}) {  // inside a window, at the first epoch's end, in the second epoch
    TempDir dir{fmt::format("signal{}", after)};
    FitOptions options = with_raiser(c.options());
    options.checkpoint = {.dir = dir.path.string()};
    Sequential m = made(c, 1);
    raise_after = after;
    seen = 0;
    BOOST_CHECK_EXCEPTION(m.fit(data, options), Interrupted, [&](const Interrupted& e) {
      return e.signal() == SIGINT && e.exit_status() == 130 &&
             message_has({"stopped by SIGINT", after == 13 ? "at the end of epoch 1/3" : "after micro-batch",
                          "checkpoint " + dir.path.string(), "run the same training again"})(e);
    });
    // The same training again continues where the signal stopped it, and ends as if never stopped.
    raise_after = 0;
    Sequential resumed = made(c, 42);
    resumed.fit(data, options);
    BOOST_TEST(state_bytes(resumed) == state_bytes(reference), "stopped after micro-batch " << after);
  }
  // SIGTERM without a checkpoint folder: stopped, and the message says nothing can be continued.
  signal = SIGTERM;
  raise_after = 4;
  seen = 0;
  Sequential m = made(c, 1);
  BOOST_CHECK_EXCEPTION(m.fit(data, with_raiser(c.options())), Interrupted, [](const Interrupted& e) {
    return e.exit_status() == 143 && message_has({"stopped by SIGTERM after micro-batch 4/13", "cannot be continued"})(e);
  });
  // Outside fit, the signals are the program's again.
  struct sigaction now = {};
  sigaction(SIGINT, nullptr, &now);
  BOOST_TEST((now.sa_handler == SIG_DFL));
  // stop_on_signal = false leaves them to the program: here a handler of the test's own.
  static volatile std::sig_atomic_t own = 0;
  std::signal(SIGTERM, [](int) { own = 1; });
  FitOptions untouched = with_raiser(c.options());
  untouched.stop_on_signal = false;
  seen = 0;
  Sequential n = made(c, 1);
  n.fit(data, untouched);
  BOOST_TEST(own == 1);
  std::signal(SIGTERM, SIG_DFL);
}

namespace {
// Passes its input on, and raises SIGTERM the `armed`-th time it runs in evaluation mode.
int raise_in_evaluation = 0;
class RaiseInEvaluation final : public LayerBase<RaiseInEvaluation> {
 public:
  std::string type_name() const override { return "RaiseInEvaluation"; }
  Tensor forward(const Tensor& x) override {
    if (!training() && raise_in_evaluation > 0 && --raise_in_evaluation == 0) std::raise(SIGTERM);
    return x;
  }
};
}  // namespace

// A signal during the validation at an epoch's end stops at once, not after the whole pass, with a
// checkpoint from which the same training validates that epoch again and ends as if never stopped.
BOOST_AUTO_TEST_CASE(a_signal_during_validation_stops_it_and_the_run_continues_there) {
  const Dataset data = blobs(100, 11), validation = blobs(400, 12);  // 13 micro-batches, 50 validation batches
  const auto made = [](std::uint64_t seed) {
    manual_seed(seed);
    Sequential m{layers::Input{6}, layers::Dense{12}, RaiseInEvaluation{}, layers::ReLU{}, layers::Dense{4}};
    m.compile(optim::Adam{.lr = 1e-2}.accumulate(3), losses::CrossEntropy{}, {metrics::Accuracy{}});
    return m;
  };
  const FitOptions base{.epochs = 2, .batch_size = 8, .validation = validation, .verbose = 0};
  Sequential reference = made(1);
  const History expected = reference.fit(data, base);
  TempDir dir{"validation_signal"};
  FitOptions options = base;
  options.checkpoint = {.dir = dir.path.string()};
  Sequential stopped = made(1);
  raise_in_evaluation = 3;  // the third validation batch of epoch 1
  BOOST_CHECK_EXCEPTION(stopped.fit(data, options), Interrupted, [&](const Interrupted& e) {
    return e.exit_status() == 143 &&
           message_has({"stopped by SIGTERM during the validation after epoch 1/2", "checkpoint " + dir.path.string()})(e);
  });
  raise_in_evaluation = 0;
  Sequential resumed = made(42);
  const History h = resumed.fit(data, options);
  BOOST_TEST(state_bytes(resumed) == state_bytes(reference));
  BOOST_TEST(same_history(h, expected));
  // Without a checkpoint folder the message says the run cannot be continued.
  raise_in_evaluation = 3;
  Sequential alone = made(1);
  BOOST_CHECK_EXCEPTION(alone.fit(data, base), Interrupted,
                        message_has({"during the validation after epoch 1/2", "cannot be continued"}));
  raise_in_evaluation = 0;
}

BOOST_AUTO_TEST_CASE(optimizer_state_round_trips_and_mismatches_are_listed) {
  const auto params = [] {
    std::vector<Tensor> p;
    p.push_back(accrue::test::leaf(accrue::test::random_tensor({4, 3}, 1)));
    p.push_back(accrue::test::leaf(accrue::test::random_tensor({3}, 2)));
    return p;
  };
  const auto step = [](optim::Optimizer& opt, std::uint64_t seed) {
    for (std::size_t i = 0; i < opt.parameters().size(); ++i) {
      Tensor p = opt.parameters()[i];
      p.set_grad(accrue::test::random_tensor(p.shape(), seed + i));
    }
    opt.step();
  };
  for (const optim::AnyOptimizer& config :
       {optim::AnyOptimizer{optim::SGD{.lr = 0.1, .momentum = 0.9}}, optim::AnyOptimizer{optim::Adam{.amsgrad = true}},
        optim::AnyOptimizer{optim::AdamW{}}}) {
    auto a = config.create(params());
    step(*a, 10);
    step(*a, 20);
    auto b = config.create(params());
    for (std::size_t i = 0; i < 2; ++i) Tensor{b->parameters()[i]}.copy_(a->parameters()[i]);
    b->load_state(a->state());
    BOOST_TEST(b->steps() == 2);
    step(*a, 30);
    step(*b, 30);
    for (std::size_t i = 0; i < 2; ++i)
      BOOST_TEST(a->parameters()[i].to_vector() == b->parameters()[i].to_vector(), config.str());
  }
  auto adam = optim::Adam{}.create(params());
  step(*adam, 1);
  optim::OptimizerState bad = adam->state();
  bad.tensors[0].second = Tensor::zeros({4, 4});
  bad.tensors.emplace_back("7.exp_avg", Tensor::zeros({2}));
  bad.counters.erase("1.step");
  auto fresh = optim::Adam{}.create(params());
  BOOST_CHECK_EXCEPTION(fresh->load_state(bad), ValueError,
                        message_has({"4 problems", "'0.exp_avg' is float32 (4, 4), the parameter needs float32 (4, 3)",
                                     "unexpected '7.exp_avg'", "unexpected '1.exp_avg'"}));
  BOOST_TEST(fresh->steps() == 0);
  // Optimizers of your own say what they keep, or refuse to be checkpointed.
  struct Plain final : optim::Optimizer {
    using Optimizer::Optimizer;
    std::string str() const override { return "Plain"; }
    void update(std::size_t, const Tensor&, const Tensor&) override {}
  };
  Plain plain{params(), 0.1};
  BOOST_CHECK_EXCEPTION(plain.state(), NotSupported, message_has({"Plain", "override Optimizer::save_state"}));
}

BOOST_AUTO_TEST_CASE(checkpoint_options_are_checked) {
  BOOST_CHECK_EXCEPTION((Trainer{{.checkpoint = {.every_micro_batches = 10}}}), ValueError,
                        message_has({"dir is empty"}));
  BOOST_CHECK_EXCEPTION((Trainer{{.checkpoint = {.dir = "x", .keep = 0}}}), ValueError,
                        message_has({"checkpoint.keep must be at least 1"}));
  BOOST_CHECK_EXCEPTION((Trainer{{.checkpoint = {.dir = "x", .every_seconds = -1}}}), ValueError,
                        message_has({"every_seconds"}));
}
