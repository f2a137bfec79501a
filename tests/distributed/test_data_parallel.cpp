// Data-parallel training against one process: ctest runs this under mpirun with 2 and 3 processes
// (label mpi), and alone. In each process a distributed run over all processes and a run of this
// process alone with their global micro-batch (batch_size x processes) start from the same
// weights and the same shuffled order; they must end with the same parameters and logs, to
// float32 rounding, also when the last micro-batch leaves a process no samples.

#include <accrue/framework/distributed/reducer.hpp>
#include <filesystem>
#include <unistd.h>

#include "test_util.hpp"

using namespace accrue;

namespace {

struct Case {
  std::string name;
  std::int64_t samples, batch;  // batch: per process
  int accumulate;
  bool adamw;
  bool clip;
  bool amp = false;                         // bfloat16 on the CPU
  std::optional<std::int64_t> nan_sample;   // a sample whose features are NaN (NanGuard skips its window)
  std::size_t bucket_bytes = 25u << 20;
};

Sequential mlp() {
  return Sequential{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
}

optim::Recipe recipe(const Case& c) {
  const optim::Recipe r = c.adamw ? optim::Recipe{optim::AdamW{.lr = 1e-2}} : optim::Recipe{optim::SGD{.lr = 0.1, .momentum = 0.9}};
  return (c.clip ? r.clip(0.5) : r).amp(c.amp);
}

Dataset data(const Case& c) {
  Dataset d = test::blobs(c.samples, 5);
  if (c.nan_sample) {
    std::vector<float> x = d.inputs().to_vector();
    x[static_cast<std::size_t>(*c.nan_sample * 6)] = std::nanf("");
    d = Dataset{Tensor::from(x, d.inputs().shape()), d.targets(), "blobs with a NaN"};
  }
  return d;
}

History train(const Case& c, bool distributed, std::int64_t batch, Sequential& model) {
  manual_seed(11);
  model = mlp();
  model.compile(recipe(c), losses::CrossEntropy{}, {metrics::Accuracy{}});
  return model.fit(data(c), {.epochs = 2,
                             .batch_size = batch,
                             .accumulate = c.accumulate,
                             .callbacks = {callbacks::NanGuard{}},
                             .shuffle = !c.nan_sample,  // the NaN sample's window is known
                             .seed = 3,
                             .verbose = 0,
                             .distributed = distributed,
                             .bucket_bytes = c.bucket_bytes});
}

void check_same(const Case& c, const History& h_dp, const History& h_one, const Sequential& dp, const Sequential& one,
                double tolerance) {
  const auto a = dp.named_parameters(), b = one.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i)
    test::check_close(a[i].second, b[i].second, tolerance, 10 * tolerance, c.name + ": " + a[i].first);
  // A skipped window's metrics count the micro-batches each process trained before the NaN, which
  // are not the same samples as alone: only the parameters are compared.
  if (c.nan_sample) return;
  for (std::size_t e = 0; e < 2; ++e) {
    BOOST_TEST(h_dp.logs()[e].at("loss") == h_one.logs()[e].at("loss"), boost::test_tools::tolerance(tolerance));
    BOOST_TEST(h_dp.logs()[e].at("accuracy") == h_one.logs()[e].at("accuracy"), boost::test_tools::tolerance(1e-9));
  }
}

// Every rank's hash of the history's logs (bits of each value).
std::vector<std::int64_t> world_hashes(const History& h) {
  std::string text;
  for (const Logs& logs : h.logs())
    for (const auto& [name, value] : logs.items()) text += fmt::format("{}={:a};", name, value);
  return distributed::world().allgather(static_cast<std::int64_t>(std::hash<std::string>{}(text)));
}

}  // namespace

BOOST_AUTO_TEST_CASE(n_processes_train_as_one_process_with_n_times_the_batch) {
  const distributed::Communicator& world = distributed::world();
  const int n = world.size();
  BOOST_TEST_MESSAGE(n << " processes");
  // 98 samples in global micro-batches of 8 x n: the last one is short and, for 3 processes,
  // leaves one of them no sample (98 = 4 x 24 + 2); accumulation 3 leaves a short last window.
  const std::vector<Case> cases{
      {"sgd", 98, 8, 1, false, false},
      {"sgd accumulate 3", 98, 8, 3, false, false},
      {"sgd accumulate 4, buckets of 256 bytes", 98, 4, 4, false, false, false, std::nullopt, 256},
      {"adamw accumulate 2 clipped", 98, 4, 2, true, true},
      // Sample 13 sits in one process's share of the second window: every process skips it.
      {"sgd accumulate 2, a NaN in sample 13", 98, 4, 2, false, false, false, 13},
  };
  for (const Case& c : cases) {
    Sequential dp, one;
    const History h_dp = train(c, true, c.batch, dp);
    const History h_one = train(c, false, c.batch * n, one);
    check_same(c, h_dp, h_one, dp, one, 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(bfloat16_autocast_trains_as_one_process_too) {
  const int n = distributed::world().size();
  // Each sample's bfloat16 products do not depend on the batch it is in; the sums of the batch's
  // gradients do, to bfloat16 rounding of the inputs of float32 GEMMs.
  for (const Case& c : {Case{"amp accumulate 2", 98, 4, 2, true, true, true}, Case{"amp", 98, 8, 1, false, false, true}}) {
    Sequential dp, one;
    const History h_dp = train(c, true, c.batch, dp);
    const History h_one = train(c, false, c.batch * n, one);
    check_same(c, h_dp, h_one, dp, one, 1e-3);
  }
}

BOOST_AUTO_TEST_CASE(one_reduction_per_optimizer_step) {
  const distributed::Communicator& world = distributed::world();
  // 98 samples, micro-batches of 4 per process, accumulate 4: ceil(98 / (4n)) micro-batches in
  // windows of 4 per epoch.
  for (const std::size_t bucket_bytes : {std::size_t{25} << 20, std::size_t{512}}) {
    manual_seed(11);
    Sequential model = mlp();
    model.compile(optim::Recipe{optim::SGD{.lr = 0.1}}.accumulate(4), losses::CrossEntropy{});
    std::int64_t steps = 0, early = 0;
    const TrainingContext* context = nullptr;
    const std::int64_t before = world.stats().tensor_allreduces;
    model.fit(test::blobs(98, 5), {.epochs = 2,
                                   .batch_size = 4,
                                   .callbacks = {callbacks::Lambda{{.train_begin = [&](TrainingContext& c) { context = &c; },
                                                                    .train_end = [&](const Logs&) {
                                                                      steps = context->optimizer_steps;
                                                                      if (context->reduction)
                                                                        early = context->reduction->buckets_started_during_backward;
                                                                    }}}},
                                   .verbose = 0,
                                   .distributed = true,
                                   .bucket_bytes = bucket_bytes});
    const std::int64_t reductions = world.stats().tensor_allreduces - before;
    const std::int64_t micro_batches = (98 + 4 * world.size() - 1) / (4 * world.size());
    BOOST_TEST(steps == 2 * ((micro_batches + 3) / 4));
    // Parameters of 6x16, 16, 16x4 and 4 floats: one bucket, or with 512 bytes two (the last
    // three parameters, then the first), each reduced once per step.
    const distributed::BucketPlan plan{std::vector<std::int64_t>{96, 16, 64, 4}, sizeof(float), bucket_bytes};
    BOOST_TEST_MESSAGE(plan.buckets().size() << " buckets of at most " << bucket_bytes << " bytes: " << reductions
                                             << " reductions for " << steps << " steps, " << early
                                             << " started during backward");
    BOOST_TEST(reductions == (world.size() > 1 ? steps * static_cast<std::int64_t>(plan.buckets().size()) : 0));
    if (world.size() > 1 && plan.buckets().size() > 1) BOOST_TEST(early > 0);
  }
}

BOOST_AUTO_TEST_CASE(distributed_evaluation_counts_every_sample_once) {
  manual_seed(11);
  Sequential model = mlp();
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  model.fit(test::blobs(96, 5), {.epochs = 1, .batch_size = 8, .verbose = 0});
  // 99 samples in batches of 8 per process: the last one is short and uneven.
  const Dataset held_out = test::blobs(99, 9);
  const Evaluation all = model.evaluate(held_out, {.batch_size = 8, .distributed = true});
  const Evaluation alone = model.evaluate(held_out, {.batch_size = 8});
  BOOST_TEST(all.loss == alone.loss, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(all["accuracy"] == alone["accuracy"], boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(processes_that_disagree_are_refused_naming_the_rank) {
  const distributed::Communicator& world = distributed::world();
  if (world.size() == 1) {
    BOOST_TEST_MESSAGE("skipped: needs mpirun with 2 or more processes");
    return;
  }
  manual_seed(11);
  Sequential model = mlp();
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(model.fit(test::blobs(96, 5), {.batch_size = 8 + (world.rank() == 1 ? 1 : 0), .verbose = 0,
                                                       .distributed = true}),
                        ValueError, test::message_has({"micro-batch", "'8' on rank 0", "'9' on rank 1"}));
  // A rank that cannot even prepare (samples of 5 features for a model of 6) is named by every rank.
  BOOST_CHECK_EXCEPTION(model.fit(world.rank() == 1 ? Dataset{Tensor::zeros({4, 5}), Tensor::zeros({4}, {.dtype = DType::i32}), "five features"}
                                                    : test::blobs(96, 5),
                                  {.batch_size = 8, .verbose = 0, .distributed = true}),
                        Error, test::message_has({"rank 1"}));
}

BOOST_AUTO_TEST_CASE(one_process_writes_the_csv_log_and_every_history_is_the_same) {
  const distributed::Communicator& world = distributed::world();
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("accrue-dp-{}-rank{}.csv", getppid(), world.rank()))
                               .string();
  manual_seed(11);
  Sequential model = mlp();
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const History h = model.fit(test::blobs(96, 5), {.epochs = 2, .batch_size = 8, .validation = test::blobs(37, 8),
                                                   .callbacks = {callbacks::CSVLogger{path}}, .verbose = 0,
                                                   .distributed = true});
  BOOST_TEST(std::filesystem::exists(path) == (world.rank() == 0));
  std::filesystem::remove(path);
  const std::vector<std::int64_t> hashes = world_hashes(h);
  for (const std::int64_t x : hashes) BOOST_TEST(x == hashes.front());
}

BOOST_AUTO_TEST_CASE(the_banner_names_the_three_factors_of_the_effective_batch) {
  const int n = distributed::world().size();
  manual_seed(11);
  Sequential model = mlp();
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  std::FILE* out = std::tmpfile();
  model.fit(test::blobs(96, 5), {.batch_size = 8, .accumulate = 2,
                                 .callbacks = {callbacks::ProgressBar{{.mode = callbacks::ProgressBarOptions::Mode::lines,
                                                                       .stream = out}}},
                                 .verbose = 0, .distributed = true});
  const std::string text = test::read_file(out);
  std::fclose(out);
  const std::string expected =
      n > 1 ? fmt::format("micro-batch 8 x {} processes, accumulation 2 (effective batch {})", n, 16 * n)
            : std::string{"micro-batch 8, accumulation 2 (effective batch 16)"};
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.find(expected) != std::string::npos, "the banner lacks '" << expected << "'");
}

BOOST_AUTO_TEST_CASE(callbacks_see_the_samples_every_process_trains_together) {
  const std::int64_t n = distributed::world().size();
  manual_seed(11);
  Sequential model = mlp();
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  std::int64_t seen = 0;
  // 98 samples in global micro-batches of 8 x n, the short last one dropped.
  model.fit(test::blobs(98, 5),
            {.batch_size = 8,
             .callbacks = {callbacks::Lambda{{.train_begin = [&](TrainingContext& c) { seen = c.samples_per_epoch; }}}},
             .drop_last = true,
             .verbose = 0,
             .distributed = true});
  BOOST_TEST(seen == 98 / (8 * n) * 8 * n);
}

BOOST_AUTO_TEST_CASE(an_effective_batch_is_solved_with_the_number_of_processes) {
  const int n = distributed::world().size();
  manual_seed(11);
  Sequential model = mlp();
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  std::int64_t steps = 0;
  // 2 windows of micro-batch 8 x n processes x accumulation 2.
  model.fit(test::blobs(32 * n, 5),
            {.batch_size = 8,
             .accumulate = AccumulationSchedule::effective_batch(16 * n),
             .callbacks = {callbacks::Lambda{{.optimizer_step = [&](const StepRecord&) { ++steps; }}}},
             .verbose = 0,
             .distributed = true});
  BOOST_TEST(steps == 2);
  if (n == 1) return;
  // 16n + 8 samples per window: global micro-batches of 8n do not divide it.
  BOOST_CHECK_EXCEPTION(model.fit(test::blobs(96, 5), {.batch_size = 8,
                                                       .accumulate = AccumulationSchedule::effective_batch(16 * n + 8),
                                                       .verbose = 0,
                                                       .distributed = true}),
                        ValueError, test::message_has({fmt::format("on each of {} processes", n), "micro-batch"}));
}
