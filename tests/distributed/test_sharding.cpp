// ZeRO stage 1 (FitOptions::shard = Shard::optimizer_state) against the unsharded run: ctest runs
// this under mpirun with 2 and 3 processes (label mpi), and alone. Both runs are distributed over
// the same processes from the same weights and data; the sharded one steps each process's shard
// of the parameters alone and gathers the rest. They must end with the same parameters bit for
// bit: SGD with momentum, Adam, AdamW, clipping by norm, bfloat16 autocast, accumulation with a
// short last window, buckets that split the shards unevenly, and a process that owns nothing.

#include <accrue/framework/distributed/sharded_parameters.hpp>
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

// Each parameter's bits after training case `c`, sharded or not.
std::vector<std::vector<float>> train(const Case& c, Shard shard) {
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
                                        .shard = shard});
  std::vector<std::vector<float>> out;
  for (const auto& [name, p] : model.named_parameters()) out.push_back(p.to_vector());
  return out;
}

void expect_bit_equal(const Case& c) {
  const distributed::CommunicationStats& stats = distributed::world().stats();
  const std::int64_t scatters = stats.tensor_reduce_scatters, gathers = stats.tensor_allgathers;
  const std::vector<std::vector<float>> whole = train(c, Shard::none);
  BOOST_TEST(stats.tensor_reduce_scatters == scatters);  // the unsharded run allreduces
  const std::vector<std::vector<float>> sharded = train(c, Shard::optimizer_state);
  // The sharded run reduce-scattered and gathered (with several processes; alone there is nothing to shard).
  if (distributed::world().size() > 1) {
    BOOST_TEST(stats.tensor_reduce_scatters > scatters);
    BOOST_TEST(stats.tensor_allgathers > gathers);
  }
  BOOST_REQUIRE_EQUAL(whole.size(), sharded.size());
  for (std::size_t p = 0; p < whole.size(); ++p) {
    BOOST_REQUIRE_EQUAL(whole[p].size(), sharded[p].size());
    const bool same = std::memcmp(whole[p].data(), sharded[p].data(), whole[p].size() * sizeof(float)) == 0;
    BOOST_TEST(same, c.name << ": parameter " << p << " differs from the unsharded run's");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(stage_1_equals_the_unsharded_run_bit_for_bit) {
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
  for (const Case& c : cases) BOOST_TEST_CONTEXT(c.name) { expect_bit_equal(c); }
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
