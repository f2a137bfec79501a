// Data-parallel training against one process: ctest runs this under mpirun with 2 and 3 processes
// (label mpi), and alone. In each process a distributed run over all processes and a run of this
// process alone with their global micro-batch (batch_size x processes) start from the same
// weights and the same shuffled order; they must end with the same parameters and logs, to
// float32 rounding, also when the last micro-batch leaves a process no samples.

#include <accrue/framework/distributed/communicator.hpp>

#include "test_util.hpp"

using namespace accrue;

namespace {

struct Case {
  std::string name;
  std::int64_t samples, batch;  // batch: per process
  int accumulate;
  bool adamw;
  bool clip;
};

Sequential mlp() {
  return Sequential{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
}

optim::Recipe recipe(const Case& c) {
  const optim::Recipe r = c.adamw ? optim::Recipe{optim::AdamW{.lr = 1e-2}} : optim::Recipe{optim::SGD{.lr = 0.1, .momentum = 0.9}};
  return c.clip ? r.clip(0.5) : r;
}

History train(const Case& c, bool distributed, std::int64_t batch, Sequential& model) {
  manual_seed(11);
  model = mlp();
  model.compile(recipe(c), losses::CrossEntropy{}, {metrics::Accuracy{}});
  return model.fit(test::blobs(c.samples, 5), {.epochs = 2,
                                               .batch_size = batch,
                                               .accumulate = c.accumulate,
                                               .seed = 3,
                                               .verbose = 0,
                                               .distributed = distributed});
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
      {"adamw accumulate 2 clipped", 98, 4, 2, true, true},
  };
  for (const Case& c : cases) {
    Sequential dp, one;
    const History h_dp = train(c, true, c.batch, dp);
    const History h_one = train(c, false, c.batch * n, one);
    const auto a = dp.named_parameters(), b = one.named_parameters();
    for (std::size_t i = 0; i < a.size(); ++i)
      test::check_close(a[i].second, b[i].second, 1e-5, 1e-4, c.name + ": " + a[i].first);
    for (std::size_t e = 0; e < 2; ++e) {
      BOOST_TEST(h_dp.logs()[e].at("loss") == h_one.logs()[e].at("loss"), boost::test_tools::tolerance(1e-5));
      BOOST_TEST(h_dp.logs()[e].at("accuracy") == h_one.logs()[e].at("accuracy"), boost::test_tools::tolerance(1e-9));
    }
  }
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
