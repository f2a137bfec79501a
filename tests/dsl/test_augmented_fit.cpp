// Augmentation that accumulation, threads and resumes cannot change: every random draw of a
// transform is a function of (seed, epoch, sample index, transform), so micro-batches of 16
// accumulated 4 times see the samples a batch of 64 sees, and a run killed inside an epoch and
// resumed sees, micro-batch by micro-batch, what a run never interrupted saw. (Processes: in
// tests/distributed/test_data_parallel.cpp, under mpirun.)

#include "../test_util.hpp"

#include <zlib.h>

#include <thread>

using namespace accrue;
using namespace accrue::test;

namespace {

// A layer that passes its input on and writes down a checksum of every batch it sees.
class Recorder final : public LayerBase<Recorder> {
 public:
  explicit Recorder(std::shared_ptr<std::vector<std::uint32_t>> seen) : seen_(std::move(seen)) {}
  std::string type_name() const override { return "Recorder"; }
  Shape build(const Shape& input_shape, Generator&) override { return input_shape; }
  Tensor forward(const Tensor& x) override {
    seen_->push_back(static_cast<std::uint32_t>(crc32_z(0, static_cast<const Bytef*>(x.data_ptr()), x.nbytes())));
    return x;
  }

 private:
  std::shared_ptr<std::vector<std::uint32_t>> seen_;
};

Sequential model(std::shared_ptr<std::vector<std::uint32_t>> seen = std::make_shared<std::vector<std::uint32_t>>()) {
  manual_seed(5);
  return Sequential{layers::Input{3, 8, 8}, Recorder{std::move(seen)}, layers::Flatten{}, layers::Dense{16},
                    layers::ReLU{}, layers::Dense{4}};
}

std::vector<float> all_parameters(const Sequential& m) {
  std::vector<float> out;
  for (const Tensor& p : m.parameters()) {
    const auto v = p.to_vector();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// Throws after `n` micro-batches, as a process killed there.
struct Crash final : Callback {
  std::int64_t n, seen = 0;
  explicit Crash(std::int64_t after) : n(after) {}
  void on_micro_batch_end(const StepRecord&, const Logs&) override {
    if (++seen == n) throw std::runtime_error("killed");
  }
};

struct Slow final : Callback {
  void on_micro_batch_end(const StepRecord&, const Logs&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(sixteen_times_four_with_augmentation_equals_a_batch_of_64) {
  const Dataset data = augmented_images(200, 3);
  Sequential large = model(), accumulated = model();
  large.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}, losses::CrossEntropy{});
  accumulated.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}.accumulate(4), losses::CrossEntropy{});
  const FitOptions base{.epochs = 2, .seed = 21, .verbose = 0};
  FitOptions a = base, b = base;
  a.batch_size = 64;
  b.batch_size = 16;
  b.data_workers = 3;
  large.fit(data, a);
  accumulated.fit(data, b);
  check_close(all_parameters(large), all_parameters(accumulated), 2e-6, 1e-5, "16 x 4 against 64, augmented");
  // And the check a user runs says the same.
  Sequential checked = model();
  checked.compile(optim::SGD{.lr = 0.1}.accumulate(4), losses::CrossEntropy{});
  const AccumulationCheck check = verify_accumulation(checked, data, {.micro_batch = 16});
  BOOST_TEST(check.likely_causes.empty(), check.str());
  BOOST_TEST(check.max_relative_difference < 1e-5, check.str());
}

BOOST_AUTO_TEST_CASE(a_run_killed_inside_an_epoch_resumes_to_the_same_bits_and_batches) {
  const Dataset data = augmented_images(120, 4);
  const auto compile = [](Sequential& m) {
    m.compile(optim::AdamW{.lr = 1e-2}.accumulate(3), losses::CrossEntropy{}, {metrics::Accuracy{}});
  };
  // 120 samples in micro-batches of 8: 15 per epoch, 45 over three epochs.
  const FitOptions base{.epochs = 3, .batch_size = 8, .seed = 8, .verbose = 0};

  auto whole_seen = std::make_shared<std::vector<std::uint32_t>>();
  Sequential whole = model(whole_seen);
  compile(whole);
  FitOptions alone = base;
  alone.data_workers = 0;
  whole.fit(data, alone);
  BOOST_TEST(whole_seen->size() == 45u);

  for (const std::int64_t killed_at : {7, 22, 38}) {  // checkpoints inside epochs 0, 1 and 2, inside windows
    test::TempDir dir{"augmented_resume"};
    auto first_seen = std::make_shared<std::vector<std::uint32_t>>();
    Sequential first = model(first_seen);
    compile(first);
    FitOptions o = base;
    o.checkpoint = {.dir = dir.path.string(), .every_micro_batches = 4};
    o.callbacks = {Crash{killed_at}};
    BOOST_CHECK_THROW(first.fit(data, o), std::runtime_error);
    const std::int64_t saved = killed_at / 4 * 4;  // the newest checkpoint's micro-batches

    auto resumed_seen = std::make_shared<std::vector<std::uint32_t>>();
    Sequential resumed = model(resumed_seen);
    default_generator().manual_seed(999);  // a fresh process: nothing of the data's draws survives but the seed
    compile(resumed);
    FitOptions r = base;
    r.checkpoint = {.dir = dir.path.string(), .every_micro_batches = 4};
    r.data_workers = 3;
    resumed.fit(data, r);
    BOOST_TEST(all_parameters(resumed) == all_parameters(whole), "killed after " << killed_at);
    // Every augmented micro-batch: the interrupted run's up to its checkpoint, then the resumed
    // run's, are the uninterrupted run's.
    std::vector<std::uint32_t> seen(first_seen->begin(), first_seen->begin() + saved);
    seen.insert(seen.end(), resumed_seen->begin(), resumed_seen->end());
    BOOST_TEST(seen == *whole_seen, "killed after " << killed_at);
    BOOST_TEST(std::equal(first_seen->begin(), first_seen->end(), whole_seen->begin()));
  }
}

BOOST_AUTO_TEST_CASE(fit_shows_the_time_it_waited_for_data) {
  const Dataset data = augmented_images(64, 2);
  Sequential m = model();
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  std::FILE* out = std::tmpfile();
  m.fit(data, {.epochs = 1, .batch_size = 16, .callbacks = {callbacks::ProgressBar{{.mode = callbacks::ProgressBarOptions::Mode::lines, .stream = out}}}, .verbose = 0});
  const std::string text = test::read_file(out);
  BOOST_TEST(text.find("data_wait") != std::string::npos, text);
  std::fclose(out);
  // And the report, per epoch.
  test::TempDir dir{"data_wait_report"};
  Sequential r = model();
  r.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  r.fit(data, {.epochs = 2, .batch_size = 16, .callbacks = {callbacks::Report{dir.file("run.html")}}, .verbose = 0});
  const std::string lines = test::read_file(dir.file("run.jsonl"));
  BOOST_TEST(lines.find("\"type\":\"epoch\"") != std::string::npos);
  BOOST_TEST(lines.find("\"data_wait\":") != std::string::npos, lines.substr(0, 400));
}

BOOST_AUTO_TEST_CASE(the_batches_read_ahead_are_counted_as_data_and_planned) {
  const Dataset data = augmented_images(96, 5);
  Sequential m = model();
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  const std::size_t batch_bytes = 8 * (3 * 8 * 8 * 4 + 4);
  const MemoryPlan plan = m.memory_plan(8, false, false, batches_read_ahead({.workers = 2}));
  BOOST_TEST(plan.read_ahead == 4);
  BOOST_TEST(plan.peak_of(MemoryCategory::data) == 5 * batch_bytes);
  BOOST_TEST(plan.str().find("4 read ahead") != std::string::npos, plan.str());
  const std::size_t before = memory_stats().live_of(MemoryCategory::data);
  reset_peak_memory();
  // A slow model: the two workers fill the queue while it trains.
  m.fit(data, {.epochs = 1, .batch_size = 8, .callbacks = {Slow{}}, .data_workers = 2, .verbose = 0});
  const std::size_t peak = memory_stats().peak_of(MemoryCategory::data) - before;
  BOOST_TEST_MESSAGE("data peak during fit " << peak << " bytes, plan " << plan.peak_of(MemoryCategory::data));
  BOOST_TEST(peak > 3 * batch_bytes);
  // + every target, read once before training; + one batch where the machine is so busy that the
  // trainer reads a batch itself while the idle-priority worker that began it still holds its copy
  // (BatchQueue::get), seen with two test runs at once on two cores.
  BOOST_TEST(peak <= plan.peak_of(MemoryCategory::data) + 96 * 4 + batch_bytes);
}
