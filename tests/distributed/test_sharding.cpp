// ZeRO stages 1 and 2 (FitOptions::shard) against the unsharded run: ctest runs this under mpirun
// with 2 and 3 processes (label mpi), and alone. All runs are distributed over the same processes
// from the same weights and data; a sharded one steps each process's shard of the parameters alone
// and gathers the rest. Stage 1 and stage 2 reduced at the window's close must end with the
// unsharded run's parameters bit for bit: SGD with momentum, Adam, AdamW, clipping by norm,
// bfloat16 autocast, accumulation with a short last window, buckets that split the shards
// unevenly, and a process that owns nothing. Stage 2 reduced every micro-batch adds the window's
// sums in another order: bit for bit without accumulation, to float32 rounding with it. Each
// process's memory is then what the shard plan says, to the byte.

#include <accrue/framework/distributed/sharded_parameters.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "../test_util.hpp"

using namespace accrue;

namespace {

struct Case {
  std::string name;
  optim::AnyOptimizer optimizer;
  bool clip = false;
  bool amp = false;
  int accumulate = 1;
  std::int64_t samples = 96;
  std::size_t bucket_bytes = 25u << 20;
  bool tiny = false;  // one Dense of 24 weights: two 16-element units, so at -np 3 a process owns none
};

struct Sharding {
  const char* name;
  Shard shard;
  ShardAccumulation accumulation = ShardAccumulation::reduce_at_window_close;
};
const Sharding unsharded{"unsharded", Shard::none};
const Sharding stage_1{"stage 1", Shard::optimizer_state};
const Sharding stage_2_at_close{"stage 2 reduced at the window's close", Shard::gradients};
const Sharding stage_2_each{"stage 2 reduced each micro-batch", Shard::gradients, ShardAccumulation::reduce_each_micro_batch};

// Each parameter's bits after training case `c`, sharded or not.
std::vector<std::vector<float>> train(const Case& c, const Sharding& sharding) {
  manual_seed(11);
  Sequential model = c.tiny ? Sequential{layers::Input{6}, layers::Dense{4, {.bias = false}}}
                            : Sequential{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
  optim::Recipe recipe{c.optimizer};
  if (c.clip) recipe = recipe.clip(0.5);
  model.compile(recipe.amp(c.amp), losses::CrossEntropy{});
  model.fit(test::blobs(c.samples, 5), {.epochs = 2,
                                        .batch_size = 8,
                                        .accumulate = c.accumulate,
                                        .seed = 3,
                                        .verbose = 0,
                                        .distributed = true,
                                        .bucket_bytes = c.bucket_bytes,
                                        .shard = sharding.shard,
                                        .shard_accumulation = sharding.accumulation});
  std::vector<std::vector<float>> out;
  for (const auto& [name, p] : model.named_parameters()) out.push_back(p.to_vector());
  return out;
}

// Whether `a` and `b` hold the same bits; else the largest difference, reported.
bool same_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b, double& largest) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  bool same = true;
  for (std::size_t p = 0; p < a.size(); ++p) {
    BOOST_REQUIRE_EQUAL(a[p].size(), b[p].size());
    same = same && std::memcmp(a[p].data(), b[p].data(), a[p].size() * sizeof(float)) == 0;
    for (std::size_t i = 0; i < a[p].size(); ++i) largest = std::max(largest, std::abs(double(a[p][i]) - b[p][i]));
  }
  return same;
}

// The micro-batches and windows of one epoch of case `c` over the processes.
std::pair<std::int64_t, std::int64_t> micro_batches_and_windows(const Case& c) {
  const std::int64_t global = 8 * distributed::world().size();
  const std::int64_t micro = (c.samples + global - 1) / global;
  return {micro, (micro + c.accumulate - 1) / c.accumulate};
}

void expect_equal(const Case& c) {
  const distributed::CommunicationStats& stats = distributed::world().stats();
  const bool several = distributed::world().size() > 1;
  std::int64_t scatters = stats.tensor_reduce_scatters, gathers = stats.tensor_allgathers;
  const std::vector<std::vector<float>> whole = train(c, unsharded);
  BOOST_TEST(stats.tensor_reduce_scatters == scatters);  // the unsharded run allreduces
  std::int64_t scattered_at_close = 0;
  for (const Sharding& sharding : {stage_1, stage_2_at_close, stage_2_each}) {
    BOOST_TEST_CONTEXT(sharding.name) {
      scatters = stats.tensor_reduce_scatters;
      gathers = stats.tensor_allgathers;
      const std::vector<std::vector<float>> sharded = train(c, sharding);
      const std::int64_t scattered = stats.tensor_reduce_scatters - scatters;
      // Sharded runs reduce-scatter and gather (with several processes; alone there is nothing to shard).
      if (several) {
        BOOST_TEST(scattered > 0);
        BOOST_TEST(stats.tensor_allgathers > gathers);
      }
      const bool each = sharding.accumulation == ShardAccumulation::reduce_each_micro_batch;
      if (sharding.shard == Shard::gradients && !each) scattered_at_close = scattered;
      double largest = 0;
      const bool same = same_bits(whole, sharded, largest);
      if (!each || c.accumulate == 1) {
        BOOST_TEST(same, c.name << ": the parameters differ from the unsharded run's by up to " << largest);
        continue;
      }
      // Every micro-batch reduced: K times the reduce-scatters of the close, and the window's sum
      // in another order.
      if (several) {
        const auto [micro, windows] = micro_batches_and_windows(c);
        BOOST_TEST(scattered * windows == scattered_at_close * micro);
      }
      BOOST_TEST(largest <= 1e-5, c.name << ": the parameters differ from the unsharded run's by " << largest);
      BOOST_TEST_MESSAGE(c.name << ", reduced each micro-batch: largest difference from the unsharded run " << largest);
    }
  }
}

// What one process holds inside its windows (after a micro-batch that does not close one) and
// between them (after each optimizer step): the most of its gradients and optimizer state.
struct Held : Callback {
  std::size_t gradients_within = 0, gradients_between = 0, optimizer_state = 0, gradients_peak = 0, peak_total = 0;
  void on_micro_batch_end(const StepRecord& record, const Logs&) override {
    if (record.status == StepRecord::Status::accumulating)
      gradients_within = std::max(gradients_within, memory_stats().live_of(MemoryCategory::gradients));
  }
  void on_optimizer_step(const StepRecord&) override {
    const MemoryStats now = memory_stats();
    gradients_between = std::max(gradients_between, now.live_of(MemoryCategory::gradients));
    optimizer_state = std::max(optimizer_state, now.live_of(MemoryCategory::optimizer_state));
    gradients_peak = std::max(gradients_peak, now.peak_of(MemoryCategory::gradients));
    peak_total = std::max(peak_total, now.peak_total);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(sharded_runs_equal_the_unsharded_run) {
  const std::vector<Case> cases{
      {.name = "SGD with momentum", .optimizer = optim::SGD{.lr = 0.1, .momentum = 0.9}},
      {.name = "Adam, clipped", .optimizer = optim::Adam{.lr = 1e-2}, .clip = true},
      {.name = "AdamW, bfloat16 autocast", .optimizer = optim::AdamW{.lr = 1e-2}, .amp = true},
      // 100 samples, windows of 4 micro-batches of 8 per process: the epoch's last window is short.
      {.name = "AdamW, accumulation 4 with a short last window, clipped", .optimizer = optim::AdamW{.lr = 1e-2},
       .clip = true, .accumulate = 4, .samples = 100},
      // Buckets of 256 bytes: many buckets, each cut among the processes unevenly.
      {.name = "SGD, small buckets", .optimizer = optim::SGD{.lr = 0.1, .momentum = 0.9}, .clip = true,
       .bucket_bytes = 256},
      {.name = "a process with no share", .optimizer = optim::AdamW{.lr = 1e-2}, .clip = true, .tiny = true},
  };
  for (const Case& c : cases) BOOST_TEST_CONTEXT(c.name) { expect_equal(c); }
}

// The tutorial MLP (669,706 parameters) with Adam, accumulating 2 micro-batches per step: each
// process holds the optimizer state of the elements it owns, and the gradients the shard plan says,
// to the byte: the buckets throughout (unsharded, stage 1), the buckets inside windows and nothing
// between them (stage 2 at the window's close), its range of the sums inside windows and nothing
// between them (stage 2 each micro-batch); and the 12 bytes of flags. Model::memory_plan for the
// process says the same: its optimizer state, the gradients between windows and their peak (for
// stage 2 each micro-batch, an upper bound: the two largest neighbouring buckets).
BOOST_AUTO_TEST_CASE(each_process_holds_what_the_shard_plan_says) {
  const int ranks = distributed::world().size(), rank = distributed::world().rank();
  constexpr std::size_t bucket_bytes = 1u << 20;
  std::vector<std::int64_t> sizes;
  for (const auto& [name, p] : test::tutorial_mlp().named_parameters()) sizes.push_back(p.numel());
  const distributed::BucketPlan buckets{sizes, sizeof(float), bucket_bytes};
  const distributed::ShardPlan shards{buckets, ranks};
  std::int64_t owned = 0, parameters = 0;
  for (const distributed::ShardPlan::Piece& p : shards.pieces(rank)) owned += p.elements;
  for (const std::int64_t n : sizes) parameters += n;
  BOOST_TEST(parameters == 669706);
  const auto measure = [&](const Sharding& sharding) {
    manual_seed(5);
    Sequential model = test::tutorial_mlp();
    model.compile(optim::Adam{.lr = 1e-3}, losses::CrossEntropy{});
    const DataParallel processes{.processes = ranks, .rank = rank, .shard = sharding.shard,
                                 .accumulation = sharding.accumulation, .bucket_bytes = bucket_bytes};
    const MemoryPlan plan = model.memory_plan(8, /*accumulating=*/true, false, 0, processes);
    Held held;
    model.fit(test::random_images(64), {.epochs = 1,
                                        .batch_size = 8,
                                        .accumulate = 2,
                                        .callbacks = {held},
                                        .verbose = 0,
                                        .distributed = true,
                                        .bucket_bytes = bucket_bytes,
                                        .shard = sharding.shard,
                                        .shard_accumulation = sharding.accumulation});
    BOOST_TEST_MESSAGE("rank " << rank << ", " << sharding.name << ": gradients " << held.gradients_within
                               << " B inside windows, " << held.gradients_between << " B between them, optimizer state "
                               << held.optimizer_state << " B, peak of everything " << held.peak_total << " B");
    BOOST_TEST(plan.peak_of(MemoryCategory::optimizer_state) == held.optimizer_state);
    if (ranks > 1) {
      // What summary(batch, processes) and the report's plan say of the process.
      const std::string text = plan.str();
      BOOST_TEST(text.find(fmt::format("one process of {} (rank {})", ranks, rank)) != std::string::npos, text);
      BOOST_TEST(text.find("communication buffers " + format_bytes(plan.communication)) != std::string::npos, text);
      BOOST_TEST(plan.communication >= plan.gradients_between_windows);
      BOOST_TEST(plan.gradients_between_windows == held.gradients_between);
      if (sharding.accumulation == ShardAccumulation::reduce_each_micro_batch && sharding.shard == Shard::gradients)
        BOOST_TEST(plan.peak_of(MemoryCategory::gradients) >= held.gradients_peak);
      else
        BOOST_TEST(plan.peak_of(MemoryCategory::gradients) == held.gradients_peak);
    }
    return held;
  };
  const Held whole = measure(unsharded);
  // Adam's two moments per element, whatever else it keeps per parameter counted in.
  BOOST_REQUIRE(whole.optimizer_state % parameters == 0);
  const std::size_t per_element = whole.optimizer_state / static_cast<std::size_t>(parameters);
  BOOST_TEST(per_element == 8u);
  if (ranks == 1) return;  // alone, nothing is sharded, and the gradients are freed after each step
  constexpr std::size_t flags = 3 * sizeof(float);
  const std::size_t bucket_space = static_cast<std::size_t>(shards.elements()) * sizeof(float);
  const std::size_t range = static_cast<std::size_t>(shards.end(rank) - shards.begin(rank)) * sizeof(float);
  BOOST_TEST(whole.gradients_within == bucket_space + flags);
  BOOST_TEST(whole.gradients_between == bucket_space + flags);
  for (const Sharding& sharding : {stage_1, stage_2_at_close, stage_2_each}) {
    BOOST_TEST_CONTEXT(sharding.name) {
      const Held sharded = measure(sharding);
      BOOST_TEST(sharded.optimizer_state == per_element * static_cast<std::size_t>(owned));
      const bool each = sharding.accumulation == ShardAccumulation::reduce_each_micro_batch;
      const bool stage_2 = sharding.shard == Shard::gradients;
      BOOST_TEST(sharded.gradients_within == (stage_2 && each ? range : bucket_space) + flags);
      BOOST_TEST(sharded.gradients_between == (stage_2 ? 0 : bucket_space) + flags);
    }
  }
}
// A memory budget the tutorial MLP with Adam cannot meet unsharded at any micro-batch: the planner
// shards (the optimizer state where that fits, else the gradients too), the run shards as chosen,
// and it equals the unsharded run of the same micro-batch and accumulation.
BOOST_AUTO_TEST_CASE(the_planner_shards_what_does_not_fit_whole) {
  const int ranks = distributed::world().size();
  if (ranks == 1) {
    BOOST_TEST_MESSAGE("one process: nothing to shard (ctest runs this case under mpirun -np 2 and 3)");
    return;
  }
  Sequential probe = test::tutorial_mlp();
  probe.compile(optim::Adam{.lr = 1e-3}, losses::CrossEntropy{});
  const std::size_t budget = probe.memory_plan(1, true, false, 0, {.processes = ranks, .rank = -1}).peak_total - 1;
  const std::int64_t effective = 8 * ranks;
  PlanCandidate chosen;
  Shard run_shard = Shard::none;
  const auto train = [&](std::optional<std::size_t> limit, const Sharding& sharding, std::int64_t micro) {
    manual_seed(5);
    Sequential model = test::tutorial_mlp();
    optim::Recipe recipe = optim::Recipe{optim::Adam{.lr = 1e-3}}.effective_batch(effective);
    if (limit) recipe = recipe.memory_budget(*limit);
    model.compile(recipe, losses::CrossEntropy{});
    model.fit(test::random_images(64), {.batch_size = micro,
                                        .callbacks = {callbacks::Lambda{{.train_begin = [&](TrainingContext& c) {
                                          if (c.memory_choice) chosen = c.memory_choice->choice();
                                          run_shard = c.data_parallel.shard;
                                        }}}},
                                        .planner = {.timed = 0, .recompute = false},
                                        .verbose = 0,
                                        .distributed = true,
                                        .shard = sharding.shard,
                                        .shard_accumulation = sharding.accumulation});
    std::vector<std::vector<float>> out;
    for (const auto& [name, p] : model.named_parameters()) out.push_back(p.to_vector());
    return out;
  };
  const std::vector<std::vector<float>> planned = train(budget, unsharded, 8);
  BOOST_TEST_MESSAGE("budget " << budget << " B: micro-batch " << chosen.micro_batch << " x " << chosen.accumulation
                               << ", sharding " << static_cast<int>(chosen.shard) << ", planned " << chosen.planned_peak << " B");
  BOOST_TEST((chosen.shard != Shard::none));
  BOOST_TEST(chosen.planned_peak <= budget);
  BOOST_TEST((run_shard == chosen.shard));
  const bool each = chosen.shard == Shard::gradients;
  const std::vector<std::vector<float>> whole = train(std::nullopt, unsharded, chosen.micro_batch);
  double largest = 0;
  const bool same = same_bits(whole, planned, largest);
  if (!each || chosen.accumulation == 1) BOOST_TEST(same, "differs by up to " << largest);
  else BOOST_TEST(largest <= 1e-5);
}

BOOST_AUTO_TEST_CASE(stage_1_refuses_what_it_cannot_do) {
  Sequential model{layers::Input{6}, layers::Dense{4}};
  model.compile(optim::LAMB{}, losses::CrossEntropy{});
  const Dataset d = test::blobs(16, 5);
  if (distributed::world().size() > 1)
    BOOST_CHECK_EXCEPTION(model.fit(d, {.epochs = 1, .verbose = 0, .distributed = true, .shard = Shard::optimizer_state}),
                          Error, test::message_has({".shard", "whole norm", "element-wise optimizer"}));
  BOOST_CHECK_EXCEPTION(model.fit(d, {.epochs = 1, .verbose = 0, .shard = Shard::optimizer_state}), Error,
                        test::message_has({"set .distributed = true"}));
}
