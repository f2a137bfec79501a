// Data-parallel training against one process: ctest runs this under mpirun with 2 and 3 processes
// (label mpi), and alone. In each process a distributed run over all processes and a run of this
// process alone with their global micro-batch (batch_size x processes) start from the same
// weights and the same shuffled order; they must end with the same parameters and logs, to
// float32 rounding, also when the last micro-batch leaves a process no samples.

#include <accrue/dsl/training_checkpoint.hpp>
#include <accrue/framework/distributed/reducer.hpp>
#include <accrue/framework/serialization/checkpoint.hpp>
#include <filesystem>
#include <unistd.h>

#include "../test_util.hpp"

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
  optim::AnyOptimizer optimizer = {};     // instead of SGD or AdamW
  bool weighted = false;                  // class_weight and a weight per sample
};

Sequential mlp() {
  return Sequential{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
}

optim::Recipe recipe(const Case& c) {
  const optim::Recipe r = c.optimizer.defined() ? optim::Recipe{c.optimizer}
                          : c.adamw             ? optim::Recipe{optim::AdamW{.lr = 1e-2}}
                                                : optim::Recipe{optim::SGD{.lr = 0.1, .momentum = 0.9}};
  return (c.clip ? r.clip(0.5) : r).amp(c.amp);
}

Dataset data(const Case& c) {
  Dataset d = test::blobs(c.samples, 5);
  if (c.nan_sample) {
    std::vector<float> x = d.inputs().to_vector();
    x[static_cast<std::size_t>(*c.nan_sample * 6)] = std::nanf("");
    d = Dataset{Tensor::from(x, d.inputs().shape()), d.targets(), "blobs with a NaN"};
  }
  if (c.weighted) {
    std::vector<float> w(static_cast<std::size_t>(c.samples));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.2f + 0.35f * static_cast<float>(i % 7);
    d = d.with_sample_weights(std::move(w));
  }
  return d;
}

History train(const Case& c, bool distributed, std::int64_t batch, Sequential& model) {
  manual_seed(11);
  model = mlp();
  // Counting metrics: an epoch's value over the processes is that of all their samples.
  model.compile(recipe(c), losses::CrossEntropy{},
                {metrics::Accuracy{}, metrics::Precision{{.class_id = 1, .from_logits = true}},
                 metrics::SparseTopKCategoricalAccuracy{2}, metrics::ConfusionMatrix{4}});
  return model.fit(data(c), {.epochs = 2,
                             .batch_size = batch,
                             .accumulate = c.accumulate,
                             .callbacks = {callbacks::NanGuard{}},
                             .class_weight = c.weighted ? std::map<std::int64_t, float>{{1, 3.0f}, {3, 0.25f}}
                                                        : std::map<std::int64_t, float>{},
                             .shuffle = !c.nan_sample,  // the NaN sample's window is known
                             .seed = 3,
                             .verbose = 0,
                             .distributed = distributed,
                             .bucket_bytes = c.bucket_bytes});
}

// Trains case `c` over the processes, each with c.batch samples of a micro-batch, and alone with
// all of them, and compares the parameters and the epochs' loss and metrics.
void expect_as_one_process(const Case& c, double tolerance) {
  Sequential dp, one;
  const History h_dp = train(c, true, c.batch, dp);
  const History h_one = train(c, false, c.batch * distributed::world().size(), one);
  const auto a = dp.named_parameters(), b = one.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i)
    test::check_close(a[i].second, b[i].second, tolerance, 10 * tolerance, c.name + ": " + a[i].first);
  // A skipped window's metrics count the micro-batches each process trained before the NaN, which
  // are not the same samples as alone: only the parameters are compared.
  if (c.nan_sample) return;
  for (std::size_t e = 0; e < 2; ++e) {
    BOOST_TEST(h_dp.logs()[e].at("loss") == h_one.logs()[e].at("loss"), boost::test_tools::tolerance(tolerance));
    for (const char* metric : {"accuracy", "precision", "sparse_top_k_categorical_accuracy"})
      BOOST_TEST(h_dp.logs()[e].at(metric) == h_one.logs()[e].at(metric), metric << boost::test_tools::tolerance(1e-9));
    BOOST_REQUIRE(h_dp.logs()[e].table("confusion_matrix") != nullptr);
    BOOST_TEST(h_dp.logs()[e].table("confusion_matrix")->counts == h_one.logs()[e].table("confusion_matrix")->counts,
               boost::test_tools::per_element());
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
  BOOST_TEST_MESSAGE(distributed::world().size() << " processes");
  // 98 samples in global micro-batches of 8 x n: the last one is short and, for 3 processes,
  // leaves one of them no sample (98 = 4 x 24 + 2); accumulation 3 leaves a short last window.
  const std::vector<Case> cases{
      {"sgd", 98, 8, 1, false, false},
      {"sgd accumulate 3", 98, 8, 3, false, false},
      {"sgd accumulate 4, buckets of 256 bytes", 98, 4, 4, false, false, false, std::nullopt, 256},
      {"adamw accumulate 2 clipped", 98, 4, 2, true, true},
      // Sample 13 sits in one process's share of the second window: every process skips it.
      {"sgd accumulate 2, a NaN in sample 13", 98, 4, 2, false, false, false, 13},
      // Each window's weighted sum over its samples, whichever process holds them.
      {"adamw accumulate 3, class and sample weights", 98, 4, 3, true, false, false, std::nullopt, 25u << 20, {}, true},
  };
  for (const Case& c : cases) expect_as_one_process(c, 1e-5);
}

BOOST_AUTO_TEST_CASE(every_optimizer_trains_as_one_process) {
  const std::vector<optim::AnyOptimizer> optimizers{
      optim::RMSprop{.lr = 1e-2, .momentum = 0.9, .centered = true}, optim::Adagrad{.lr = 0.1},
      optim::LARS{.lr = 0.5, .weight_decay = 1e-4, .trust_coefficient = 0.02}, optim::LAMB{.lr = 1e-2},
      optim::Lion{.lr = 1e-3, .weight_decay = 0.1}};
  for (const optim::AnyOptimizer& o : optimizers) {
    Case c{o.str() + " accumulate 2", 98, 4, 2, false, false};
    c.optimizer = o;
    expect_as_one_process(c, 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(a_frozen_layer_stays_out_of_the_buckets) {
  // The reducer sums only the trainable parameters' gradients; the frozen layer is the same on
  // every process and unchanged.
  const int n = distributed::world().size();
  const auto run = [&](bool distributed, std::int64_t batch) {
    manual_seed(11);
    Sequential m = mlp();
    m.layer(0).trainable(false);
    m.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}.accumulate(2).clip(0.5), losses::CrossEntropy{});
    m.fit(test::blobs(98, 5), {.epochs = 2, .batch_size = batch, .seed = 3, .verbose = 0, .distributed = distributed});
    return m;
  };
  manual_seed(11);
  const std::vector<float> initial = mlp().parameters()[0].to_vector<float>();
  const Sequential dp = run(true, 4), one = run(false, 4 * n);
  BOOST_TEST((dp.parameters()[0].to_vector<float>() == initial));
  const auto a = dp.named_parameters(), b = one.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) test::check_close(a[i].second, b[i].second, 1e-5, 1e-4, "frozen: " + a[i].first);
}

BOOST_AUTO_TEST_CASE(recomputed_layers_train_bit_for_bit_as_plain_ones) {
  // Each recomputed segment's parameters get their gradients inside its node's backward; the
  // reducer hears of each once, from the outer pass, in small buckets that start during backward.
  const auto run = [](bool recompute) {
    manual_seed(11);
    Sequential m = recompute ? Sequential{layers::Input{6}, layers::Recompute{layers::Dense{16}, layers::ReLU{}},
                                          layers::Recompute{layers::Dense{16}, layers::Tanh{}}, layers::Dense{4}}
                             : Sequential{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{16},
                                          layers::Tanh{}, layers::Dense{4}};
    m.compile(optim::AdamW{.lr = 1e-2}.accumulate(2).clip(0.5), losses::CrossEntropy{});
    m.fit(test::blobs(98, 5),
          {.epochs = 2, .batch_size = 4, .seed = 3, .verbose = 0, .distributed = true, .bucket_bytes = 256});
    std::vector<std::vector<float>> values;
    for (const Tensor& p : m.parameters()) values.push_back(p.to_vector<float>());
    return values;
  };
  BOOST_TEST((run(true) == run(false)));
}

BOOST_AUTO_TEST_CASE(augmented_images_train_as_on_one_process) {
  // Each process reads and transforms its share of every micro-batch on its own threads; sample i
  // of epoch e is cropped, flipped and jittered the same wherever it is read.
  const int n = distributed::world().size();
  const Dataset images = test::augmented_images(90, 6);
  const auto train_images = [&](bool distributed, std::int64_t batch, int workers) {
    manual_seed(4);
    Sequential m{layers::Input{3, 8, 8}, layers::Flatten{}, layers::Dense{12}, layers::ReLU{}, layers::Dense{4}};
    m.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}.accumulate(2), losses::CrossEntropy{});
    m.fit(images, {.epochs = 2, .batch_size = batch, .seed = 17, .data_workers = workers, .verbose = 0,
                   .distributed = distributed});
    return m;
  };
  const Sequential dp = train_images(true, 5, 2), one = train_images(false, 5 * n, 0);
  const auto a = dp.named_parameters(), b = one.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) test::check_close(a[i].second, b[i].second, 1e-5, 1e-4, "augmented: " + a[i].first);
}

BOOST_AUTO_TEST_CASE(augmentation_layers_train_as_on_one_process) {
  // The random layers inside the model draw for a sample what they draw on one process: each
  // process's share of a micro-batch keeps the samples' dataset indices.
  const int n = distributed::world().size();
  Generator g{8};
  std::vector<float> pixels(static_cast<std::size_t>(90 * 3 * 10 * 10));
  for (float& p : pixels) p = static_cast<float>(g.below(256));
  std::vector<std::int32_t> labels(90);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 4);
  const Dataset images{Tensor::from(pixels, {90, 3, 10, 10}), Tensor::from(labels, {90}), "raw images"};
  const auto train_images = [&](bool distributed, std::int64_t batch) {
    manual_seed(4);
    Sequential m{layers::Input{3, 10, 10}, layers::RandomFlip{},    layers::RandomRotation{0.1}, layers::RandomCrop{8},
                 layers::RandomBrightness{0.2}, layers::Rescaling{1.0f / 255}, layers::Flatten{}, layers::Dense{4}};
    m.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}.accumulate(2), losses::CrossEntropy{});
    m.fit(images, {.epochs = 2, .batch_size = batch, .seed = 17, .verbose = 0, .distributed = distributed});
    return m;
  };
  const Sequential dp = train_images(true, 5), one = train_images(false, 5 * n);
  const auto a = dp.named_parameters(), b = one.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) test::check_close(a[i].second, b[i].second, 1e-5, 1e-4, "augmentation layers: " + a[i].first);
}

BOOST_AUTO_TEST_CASE(bfloat16_autocast_trains_as_one_process_too) {
  // Each sample's bfloat16 products do not depend on the batch it is in; the sums of the batch's
  // gradients do, to bfloat16 rounding of the inputs of float32 GEMMs.
  for (const Case& c : {Case{"amp accumulate 2", 98, 4, 2, true, true, true}, Case{"amp", 98, 8, 1, false, false, true}})
    expect_as_one_process(c, 1e-3);
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

// verify_accumulation weighs each process's part of a micro-batch by the rule fit trains with
// (accrue::loss_weight): its accumulated gradient is the one fit applies, which SGD with lr 1 and no
// momentum subtracts from each parameter. The last micro-batch of n + 1 samples leaves the
// processes parts of 1 and 2 samples, where per_micro_batch's average of the processes' means is
// not the window's mean.
BOOST_AUTO_TEST_CASE(verify_accumulation_checks_the_gradient_fit_applies) {
  const int n = distributed::world().size();
  const std::int64_t batch = 3;  // per process
  const std::int64_t global = batch * n;
  const Dataset d = test::blobs(3 * global + n + 1, 5);
  for (const Normalization normalization : {Normalization::per_micro_batch, Normalization::per_window}) {
    const std::string name{normalization_name(normalization)};
    manual_seed(11);
    Sequential model = mlp();
    model.compile(optim::SGD{.lr = 1.0}.accumulate(4, {.normalization = normalization}), losses::CrossEntropy{});
    const AccumulationCheck check = verify_accumulation(
        model, d, {.sizes = {global, global, global, n + 1}, .normalization = normalization, .distributed = true});
    const auto before = model.named_parameters();
    std::vector<std::vector<float>> start;
    for (const auto& [_, p] : before) start.push_back(p.to_vector<float>());
    model.fit(d, {.epochs = 1, .batch_size = batch, .shuffle = false, .verbose = 0, .distributed = true});
    const auto after = model.named_parameters();
    BOOST_TEST_REQUIRE(check.accumulated.size() == after.size());
    for (std::size_t i = 0; i < after.size(); ++i) {
      BOOST_TEST(check.accumulated[i].first == after[i].first);
      const std::vector<float> end = after[i].second.to_vector<float>();
      for (std::size_t j = 0; j < end.size(); ++j) {
        const float applied = start[i][j] - end[j], verified = check.accumulated[i].second[j];
        BOOST_TEST(std::abs(applied - verified) <= 1e-6f + 1e-4f * std::abs(verified),
                   name << ": " << after[i].first << "[" << j << "] moved by " << applied << ", verified " << verified);
      }
    }
    if (normalization == Normalization::per_window) {
      BOOST_TEST(check.max_relative_difference < 1e-5, name);
    } else {
      // Alone, the short last micro-batch counts more; on n processes its parts do too.
      BOOST_TEST(check.max_relative_difference > 1e-3, name);
      BOOST_TEST(check.str().find(n > 1 ? "over the processes" : "loss / N") != std::string::npos, check.str());
    }
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
  // The short last global batch (3 samples) splits into other groups than one process's batches,
  // so its float32 means round differently: a few float32 ulps on 3 of 99 samples' share, where a
  // sample counted twice or left out moves the loss by about 1%.
  BOOST_TEST(all.loss == alone.loss, boost::test_tools::tolerance(1e-7));
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
  // Models whose names and shapes agree but whose options do not (heads, a dropout rate): refused
  // naming the layer and the option.
  const auto sequence_data = [] {
    std::vector<std::int32_t> labels(32);
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 2);
    return Dataset{Tensor::uniform({32, 4, 16}, -1, 1), Tensor::from(labels, {32}), "sequences"};
  };
  const std::int64_t heads = world.rank() == 1 ? 2 : 4;
  const float rate = world.rank() == 1 ? 0.2f : 0.1f;
  Sequential attention{layers::Input{4, 16}, layers::MultiHeadAttention{heads, 16}, layers::Flatten{},
                       layers::Dense{2}};
  attention.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(attention.fit(sequence_data(), {.batch_size = 8, .verbose = 0, .distributed = true}),
                        ValueError,
                        test::message_has({"layer 0 'multi_head_attention' (MultiHeadAttention) has heads=4 on rank 0 "
                                           "and heads=2 on rank 1"}));
  Sequential dropped{layers::Input{6}, layers::Dense{16}, layers::Dropout{rate}, layers::Dense{4}};
  dropped.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(dropped.fit(test::blobs(96, 5), {.batch_size = 8, .verbose = 0, .distributed = true}),
                        ValueError,
                        test::message_has({"layer 1 'dropout' (Dropout) has rate=0.1 on rank 0 and rate=0.2 on rank 1"}));
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

namespace {

// Parameters and buffers as raw bytes: equal means equal bit for bit.
std::vector<std::string> state_bytes(const Sequential& m) {
  std::vector<std::string> out;
  for (const auto& [name, t] : m.named_state())
    out.push_back(name + std::string(static_cast<const char*>(t.data_ptr()), t.nbytes()));
  return out;
}

std::string history_bits(const History& h) {
  std::string text;
  for (const Logs& logs : h.logs())
    for (const auto& [name, value] : logs.items()) text += fmt::format("{}={:a};", name, value);
  return text;
}

// A run of the checkpoint tests: AdamW, clipping, accumulation 3 (so that every epoch ends with a
// short window), dropout when `dropout` (each process then draws its own masks). `seed` initialises
// the weights and generators, which a resumed run takes from the checkpoint instead.
History checkpointed_run(Sequential& model, bool dropout, std::uint64_t seed, bool distributed, std::int64_t batch,
                         const CheckpointOptions& checkpoint, const std::string& resume_from = {}) {
  manual_seed(seed);
  model = dropout ? Sequential{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dropout{0.25f}, layers::Dense{4}}
                  : mlp();
  model.compile(optim::Recipe{optim::AdamW{.lr = 1e-2}}.clip(0.5).accumulate(3), losses::CrossEntropy{},
                {metrics::Accuracy{}});
  return model.fit(test::blobs(98, 5), {.epochs = 2,
                                        .batch_size = batch,
                                        .seed = 3,
                                        .verbose = 0,
                                        .checkpoint = checkpoint,
                                        .resume_from = resume_from,
                                        .distributed = distributed});
}

}  // namespace

// Weight gradients multiplied once per window reach the buckets with the bits of per-micro-batch
// ones. 98 samples in micro-batches of 4 per process accumulated 3: the 64 x 64 weight keeps 16
// rows, a whole window; with 3 processes each epoch's last window is 12, 12 and 2 samples, so one
// process has no sample in its last micro-batch, and the rows of its first two join at the window's
// close, before the buckets go.
BOOST_AUTO_TEST_CASE(weight_gradients_per_window_change_no_bit_across_processes) {
  const auto run = [](WeightGradients weight_gradients, Sequential& model) {
    manual_seed(11);
    model = Sequential{layers::Input{6}, layers::Dense{64}, layers::ReLU{}, layers::Dense{64}, layers::ReLU{},
                       layers::Dense{4}};
    model.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}, losses::CrossEntropy{}, {metrics::Accuracy{}});
    return model.fit(test::blobs(98, 5), {.epochs = 2,
                                          .batch_size = 4,
                                          .accumulate = 3,
                                          .accumulate_options = {.weight_gradients = weight_gradients},
                                          .seed = 3,
                                          .verbose = 0,
                                          .distributed = true});
  };
  Sequential per_micro_batch, per_window;
  const History a = run(WeightGradients::per_micro_batch, per_micro_batch);
  const History b = run(WeightGradients::per_window, per_window);
  BOOST_TEST((state_bytes(per_window) == state_bytes(per_micro_batch)));
  BOOST_TEST(history_bits(b) == history_bits(a));
}

// Process 0 writes a distributed run's checkpoints, with the number of processes and each one's
// generators and running metrics; a checkpoint due inside a window is taken at the window's close.
// The same number of processes resumes any of them to the same bits as the run never interrupted.
BOOST_AUTO_TEST_CASE(checkpoints_resume_bit_for_bit_on_the_same_processes) {
  distributed::Communicator& world = distributed::world();
  const std::optional<test::TempDir> made = world.rank() == 0 ? std::make_optional<test::TempDir>("dp_checkpoints") : std::nullopt;
  const std::string dir = world.broadcast(made ? made->path.string() : std::string{}, 0);
  for (const bool dropout : {false, true}) {
    Sequential plain, reference;
    // Each process its own generators: dropout draws differ between processes.
    const History plain_history = checkpointed_run(plain, dropout, 11 + world.rank(), true, 4, {});
    const History history =
        checkpointed_run(reference, dropout, 11 + world.rank(), true, 4, {.dir = dir, .every_micro_batches = 1, .keep = 1000});
    BOOST_TEST((state_bytes(plain) == state_bytes(reference)), "writing checkpoints changed the run");
    BOOST_TEST(history_bits(plain_history) == history_bits(history));
    world.barrier();  // process 0 has written the last one
    const std::vector<std::string> files = detail::checkpoints_in(dir);
    // 98 samples in global micro-batches of 4n, windows of 3: a checkpoint at each window's close
    // (one process alone: after every micro-batch).
    const std::int64_t micro_batches = (98 + 4 * world.size() - 1) / (4 * world.size());
    const std::int64_t due = world.size() > 1 ? (micro_batches + 2) / 3 : micro_batches;
    BOOST_TEST(files.size() == static_cast<std::size_t>(2 * due));
    for (const std::string& file : files) {
      BOOST_TEST(serialization::load_checkpoint(file).tensors.size() > 0u);
      Sequential resumed;
      const History resumed_history = checkpointed_run(resumed, dropout, 99, true, 4, {}, file);
      BOOST_TEST((state_bytes(resumed) == state_bytes(reference)), "resumed from " << file);
      BOOST_TEST(history_bits(resumed_history) == history_bits(history), "resumed from " << file);
    }
    world.barrier();
    if (world.rank() == 0)
      for (const std::string& file : files) std::filesystem::remove(file);
    world.barrier();
  }
}

// On another number of processes a checkpoint continues with the same global micro-batch, windows
// and sample order: a distributed run's checkpoints resumed by one process, and one process's
// (also from inside a window, with its gradients) resumed by all, end where the uninterrupted run
// ends, to float32 rounding.
BOOST_AUTO_TEST_CASE(checkpoints_resume_on_another_number_of_processes) {
  distributed::Communicator& world = distributed::world();
  const int n = world.size();
  if (n == 1) {
    BOOST_TEST_MESSAGE("skipped: needs mpirun with 2 or more processes");
    return;
  }
  const std::optional<test::TempDir> made = world.rank() == 0 ? std::make_optional<test::TempDir>("dp_resize") : std::nullopt;
  const std::string root = world.broadcast(made ? made->path.string() : std::string{}, 0);
  const std::string of_all = root + "/all", of_one = root + "/one";
  Sequential all, one;
  const History all_history = checkpointed_run(all, false, 11, true, 4, {.dir = of_all, .every_micro_batches = 1, .keep = 1000});
  // One process with the global micro-batch as its own: every process runs it, process 0 with
  // checkpoints.
  const History one_history = checkpointed_run(
      one, false, 11, false, 4 * n,
      world.rank() == 0 ? CheckpointOptions{.dir = of_one, .every_micro_batches = 1, .keep = 1000} : CheckpointOptions{});
  world.barrier();
  const auto near = [](const Sequential& a, const Sequential& b, const std::string& what) {
    const auto x = a.named_parameters(), y = b.named_parameters();
    for (std::size_t i = 0; i < x.size(); ++i) test::check_close(x[i].second, y[i].second, 1e-5, 1e-4, what + ": " + x[i].first);
  };
  // Every process continues the distributed run's checkpoints alone (the same micro-batch option:
  // the global micro-batch of 4n becomes each one's own).
  for (const std::string& file : detail::checkpoints_in(of_all)) {
    Sequential resumed;
    const History h = checkpointed_run(resumed, false, 99, false, 4, {}, file);
    near(resumed, all, "one process resuming " + file);
    BOOST_TEST(h.logs().back().at("loss") == all_history.logs().back().at("loss"), boost::test_tools::tolerance(1e-5));
    BOOST_TEST(h.logs().back().at("accuracy") == all_history.logs().back().at("accuracy"), boost::test_tools::tolerance(1e-9));
  }
  // All processes continue the one-process run's checkpoints, inside windows too.
  const std::vector<std::int64_t> counts = world.allgather(static_cast<std::int64_t>(detail::checkpoints_in(of_one).size()));
  // One after each of the 2 x ceil(98 / 4n) micro-batches.
  BOOST_TEST(counts[0] == 2 * ((98 + 4 * n - 1) / (4 * n)));
  for (const std::string& file : detail::checkpoints_in(of_one)) {
    Sequential resumed;
    const History h = checkpointed_run(resumed, false, 99, true, 4 * n, {}, file);
    near(resumed, one, fmt::format("{} processes resuming {}", n, file));
    BOOST_TEST(h.logs().back().at("loss") == one_history.logs().back().at("loss"), boost::test_tools::tolerance(1e-5));
    BOOST_TEST(h.logs().back().at("accuracy") == one_history.logs().back().at("accuracy"), boost::test_tools::tolerance(1e-9));
  }
  // A global micro-batch the processes cannot share evenly is refused, naming the counts that can:
  // one process's micro-batches of 5.
  const std::string of_five = root + "/five";
  if (world.rank() == 0) {
    Sequential five;
    checkpointed_run(five, false, 11, false, 5, {.dir = of_five});
  }
  world.barrier();
  Sequential resumed;
  BOOST_CHECK_EXCEPTION(checkpointed_run(resumed, false, 11, true, 5, {}, of_five), ValueError,
                        test::message_has({fmt::format("{} processes cannot share their global micro-batch of 5", n),
                                           "continue it on 1, 5 processes"}));
  world.barrier();
}

// A memory budget plans each process's micro-batch: the largest whose plan fits and that, times
// the processes, divides the effective batch.
BOOST_AUTO_TEST_CASE(a_memory_budget_plans_each_process_micro_batch) {
  const std::int64_t n = distributed::world().size();
  Sequential probe = mlp();
  probe.build(Shape{6});
  // Each process's plan: with several, its gradient buckets (padding and flags included) for the run.
  const DataParallel processes{.processes = static_cast<int>(n), .rank = -1};
  const std::size_t budget = probe.memory_plan(3, true, false, 0, processes).peak_total;
  std::int64_t expected = 0;
  for (std::int64_t m = 12; m >= 1 && expected == 0; --m)
    if (12 % m == 0 && probe.memory_plan(m, m < 12, false, 0, processes).peak_total <= budget) expected = m;
  manual_seed(11);
  Sequential model = mlp();
  model.compile(optim::Recipe{optim::SGD{.lr = 0.1}}.effective_batch(12 * n).memory_budget(budget), losses::CrossEntropy{});
  std::int64_t micro = 0, window = 0;
  const History h = model.fit(test::blobs(24 * n, 5), {.batch_size = 5,
                                     .callbacks = {callbacks::Lambda{{.micro_batch_end = [&](const StepRecord& r, const Logs&) {
                                       micro = std::max(micro, r.micro_batch_samples);
                                       window = std::max<std::int64_t>(window, r.window_micro_batches);
                                     }}}},
                                     .planner = {.timed = 0, .recompute = false, .shard = false},
                                     .verbose = 0,
                                     .distributed = true});
  BOOST_TEST_MESSAGE("budget " << format_bytes(budget) << ": micro-batch " << micro << " x " << n << " processes x "
                               << window);
  BOOST_TEST(expected < 12);
  BOOST_TEST(micro == expected);
  BOOST_TEST(window == 12 / expected);
  // The gradients' memory is the buckets': every parameter's float32 gradient, and in a distributed
  // run the padding that starts each on 64 bytes and the 3 flags, which the plan counts.
  std::size_t gradients = probe.memory_plan(3, true, false, 0, processes).peak_of(MemoryCategory::gradients);
  if (n > 1) {
    std::vector<std::int64_t> elements;
    for (const Tensor& p : probe.parameters()) elements.push_back(p.numel());
    std::int64_t in_buckets = 3;
    for (const auto& b : distributed::BucketPlan(elements, sizeof(float), FitOptions{}.bucket_bytes).buckets())
      in_buckets += b.elements;
    BOOST_TEST(static_cast<std::size_t>(in_buckets) * sizeof(float) == gradients);
  }
  BOOST_TEST(h.memory().back().peak_of(MemoryCategory::gradients) == gradients);
}

// Timed, each process times the candidates on its own; their times are summed, so that every
// process chooses the same micro-batch and recomputation (a different one would hang the run).
BOOST_AUTO_TEST_CASE(a_timed_plan_is_the_same_on_every_process) {
  distributed::Communicator& world = distributed::world();
  const std::int64_t n = world.size();
  Sequential probe = mlp();
  probe.build(Shape{6});
  const std::size_t budget = probe.memory_plan(6, true).peak_total;
  manual_seed(11);
  Sequential model = mlp();
  model.compile(optim::Recipe{optim::SGD{.lr = 0.1}}.effective_batch(12 * n).memory_budget(budget), losses::CrossEntropy{});
  std::int64_t chosen = -1, timed = 0;
  model.fit(test::blobs(24 * n, 5), {.callbacks = {callbacks::Lambda{{.train_begin = [&](TrainingContext& c) {
                                       chosen = static_cast<std::int64_t>(c.memory_choice->chosen);
                                       for (const PlanCandidate& k : c.memory_choice->candidates) timed += k.seconds_per_sample ? 1 : 0;
                                     }}}},
                                     .verbose = 0,
                                     .distributed = true});
  BOOST_TEST(timed >= 2);
  const std::vector<std::int64_t> all = world.allgather(chosen);
  for (std::int64_t c : all) BOOST_TEST(c == all[0]);
}

// BatchNorm1d{{.sync = true}} normalizes over the global micro-batch: N processes with micro-batch
// B train as one process with N x B, parameters and running statistics alike, also when the last
// micro-batch leaves a process no sample (it still runs, contributing nothing). Without .sync each
// process normalizes its own share, the running statistics end each epoch as rank 0's, and the
// warning says which samples the statistics cover.
BOOST_AUTO_TEST_CASE(batch_norm_statistics_over_all_processes_with_sync) {
  const distributed::Communicator& world = distributed::world();
  const int n = world.size();
  std::vector<std::string> warnings;
  log::set_sink([&](log::Level level, std::string_view line) {
    if (level == log::Level::warning) warnings.emplace_back(line);
  });
  const auto run = [&](bool sync, bool distributed, std::int64_t batch, int accumulate, std::int64_t samples = 98) {
    manual_seed(11);
    Sequential model{layers::Input{6}, layers::Dense{16}, layers::BatchNorm1d{{.sync = sync, .name = "bn"}},
                     layers::ReLU{}, layers::Dense{4}};
    // The Dense before BatchNorm is ill-conditioned (BatchNorm's backward subtracts nearly equal
    // terms): at lr 0.1 two single-process runs differing only in summation order (forced
    // `baseline` kernels against AVX-512) end 1.4e-4 apart. At lr 0.02 they agree to 1e-6, and
    // statistics of one process's share instead of all end 1e-2 apart.
    model.compile(optim::Recipe{optim::SGD{.lr = 0.02, .momentum = 0.9}}.accumulate(accumulate), losses::CrossEntropy{},
                  {metrics::Accuracy{}});
    // 98 samples in global micro-batches of 4n: the last one holds 2 (one process none for n = 3).
    const History h = model.fit(test::blobs(samples, 5), {.epochs = 2, .batch_size = batch, .seed = 3, .verbose = 0,
                                                     .distributed = distributed});
    return std::pair{std::move(model), h};
  };
  for (const int accumulate : {1, 3}) {
    const auto [dp, h_dp] = run(true, true, 4, accumulate);
    const auto [one, h_one] = run(true, false, 4 * n, accumulate);
    const auto a = dp.named_state(), b = one.named_state();
    for (std::size_t i = 0; i < a.size(); ++i)
      test::check_close(a[i].second, b[i].second, 1e-5, 1e-4, fmt::format("sync, accumulate {}: {}", accumulate, a[i].first));
    for (std::size_t e = 0; e < 2; ++e)
      BOOST_TEST(h_dp.logs()[e].at("loss") == h_one.logs()[e].at("loss"), boost::test_tools::tolerance(1e-5));
  }
  if (n > 1) {
    const auto has = [&](const std::string& part) {
      return std::any_of(warnings.begin(), warnings.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
    };
    // Rank 0 warns: with sync the statistics cover the global micro-batch, not the window of 3.
    BOOST_TEST(has(fmt::format("the global micro-batch of {} samples (4 from each of {} processes, .sync = true)", 4 * n, n)) ==
               (world.rank() == 0));
    warnings.clear();
    // Without sync: every process ends each epoch with rank 0's running statistics (the replica
    // check after each epoch would stop the run otherwise). 96 samples: no share of one sample,
    // which BatchNorm cannot normalize alone.
    const auto [own, h_own] = run(false, true, 4, 1, 96);
    BOOST_TEST(h_own.epochs() == 2u);
    BOOST_TEST(has(fmt::format("this process's 4 samples of each micro-batch (not the {} of all {} processes", 4 * n, n)) ==
               (world.rank() == 0));
  }
  log::set_sink({});
}
