// Checkpoints of sharded runs (FitOptions::shard): every process writes its optimizer shard beside
// the checkpoint, process 0 the checkpoint naming them last. ctest runs this under mpirun with 2
// and 3 processes (label mpi), and alone; tests/distributed/reshard_checkpoints.sh continues 2
// processes' checkpoints on 3 and 3's on 2 (the cases marked disabled, which it names).

#include <accrue/dsl/training_checkpoint.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../test_util.hpp"

using namespace accrue;

namespace {

struct Sharding {
  const char* name;
  Shard shard;
  ShardAccumulation accumulation = ShardAccumulation::reduce_at_window_close;
};
const Sharding unsharded{"unsharded", Shard::none};
const std::vector<Sharding> shardings{{"stage 1", Shard::optimizer_state},
                                      {"stage 2 at the close", Shard::gradients},
                                      {"stage 2 each micro-batch", Shard::gradients, ShardAccumulation::reduce_each_micro_batch}};

using Bits = std::vector<std::vector<float>>;

// 2 epochs of 98 blobs, AdamW clipped, windows of 3 micro-batches of `batch` per process; its
// parameters at the end.
Bits run(const Sharding& sharding, std::int64_t batch, const CheckpointOptions& checkpoint = {},
         const std::string& resume_from = {}) {
  manual_seed(11);
  Sequential model = test::blobs_mlp(11);
  model.compile(optim::Recipe{optim::AdamW{.lr = 1e-2}}.clip(0.5).accumulate(3), losses::CrossEntropy{});
  model.fit(test::blobs(98, 5), {.epochs = 2,
                                 .batch_size = batch,
                                 .seed = 3,
                                 .verbose = 0,
                                 .checkpoint = checkpoint,
                                 .resume_from = resume_from,
                                 .distributed = true,
                                 .shard = sharding.shard,
                                 .shard_accumulation = sharding.accumulation});
  Bits out;
  for (const auto& [name, p] : model.named_parameters()) out.push_back(p.to_vector());
  return out;
}

bool same_bits(const Bits& a, const Bits& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
      return false;
  return true;
}

double largest_difference(const Bits& a, const Bits& b) {
  double largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a[i].size(); ++j) largest = std::max(largest, std::abs(double(a[i][j]) - b[i][j]));
  return largest;
}

// A folder every process reaches (process 0 makes it).
struct SharedDir {
  std::optional<test::TempDir> made;
  std::string path;
  explicit SharedDir(const std::string& name) {
    distributed::Communicator& world = distributed::world();
    if (world.rank() == 0) made.emplace(name);
    path = world.broadcast(made ? made->path.string() : std::string{}, 0);
  }
  ~SharedDir() { distributed::world().barrier(); }
};

std::vector<std::string> shard_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(".shard-") != std::string::npos) out.push_back(e.path().string());
  return out;
}

}  // namespace

// Continued on as many processes, from any of its checkpoints (one at every window's close), a
// sharded run ends with the bits of the run never interrupted, which are the unsharded run's except
// stage 2 reduced each micro-batch; the unsharded run continues a sharded run's checkpoints and a
// sharded run an unsharded one's with the same bits (stage 1 and stage 2 at the close).
BOOST_AUTO_TEST_CASE(sharded_checkpoints_resume_bit_for_bit_on_the_same_processes) {
  distributed::Communicator& world = distributed::world();
  const test::CapturedLog quiet;  // a line per continued checkpoint
  const Bits whole = run(unsharded, 4);
  for (const Sharding& sharding : shardings) {
    BOOST_TEST_CONTEXT(sharding.name) {
      const SharedDir dir{"sharded_checkpoints"};
      const Bits uninterrupted = run(sharding, 4);
      const Bits written = run(sharding, 4, {.dir = dir.path, .every_micro_batches = 1, .keep = 1000});
      BOOST_TEST(same_bits(written, uninterrupted), "writing checkpoints changed the run");
      const bool exact = sharding.accumulation != ShardAccumulation::reduce_each_micro_batch;
      if (exact) BOOST_TEST(same_bits(uninterrupted, whole));
      world.barrier();
      const std::vector<std::string> files = detail::checkpoints_in(dir.path);
      BOOST_TEST(!files.empty());
      // One shard per process and checkpoint, when there is something to shard.
      if (world.size() > 1) BOOST_TEST(shard_files(dir.path).size() == files.size() * static_cast<std::size_t>(world.size()));
      for (const std::string& file : files) {
        BOOST_TEST(same_bits(run(sharding, 4, {}, file), uninterrupted), "resumed from " << file);
        if (exact) BOOST_TEST(same_bits(run(unsharded, 4, {}, file), whole), "resumed unsharded from " << file);
      }
      world.barrier();
    }
  }
  // An unsharded run's checkpoints, continued sharded.
  const SharedDir dir{"unsharded_checkpoints"};
  run(unsharded, 4, {.dir = dir.path, .every_micro_batches = 1, .keep = 1000});
  world.barrier();
  for (const std::string& file : detail::checkpoints_in(dir.path))
    BOOST_TEST(same_bits(run(shardings[0], 4, {}, file), whole), "resumed sharded from " << file);
}

// A checkpoint whose shard is missing or damaged is refused naming the shard; in a folder the
// checkpoint before it is taken instead (with a warning).
BOOST_AUTO_TEST_CASE(a_missing_or_damaged_shard_is_refused) {
  distributed::Communicator& world = distributed::world();
  if (world.size() == 1) {
    BOOST_TEST_MESSAGE("one process writes no shards (ctest runs this case under mpirun -np 2 and 3)");
    return;
  }
  const SharedDir dir{"damaged_shards"};
  run(shardings[0], 4, {.dir = dir.path, .every_micro_batches = 1, .keep = 1000});
  world.barrier();
  const std::vector<std::string> files = detail::checkpoints_in(dir.path);
  BOOST_REQUIRE(files.size() >= 3);
  const std::string missing = detail::shard_path(files[0], 1, world.size());
  const std::string damaged = detail::shard_path(files[1], 1, world.size());
  if (world.rank() == 0) {
    std::filesystem::remove(missing);
    std::fstream f{damaged, std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(-9, std::ios::end);
    f.put('\x5a');
  }
  world.barrier();
  // Process 1 reads its shard; the others fail with its message (rank 1 could not start training).
  BOOST_CHECK_EXCEPTION(run(shardings[0], 4, {}, files[0]), Error,
                        test::message_has({missing, "is missing", "process 1 of"}));
  BOOST_CHECK_EXCEPTION(run(shardings[0], 4, {}, files[1]), Error, test::message_has({damaged}));
  // From the folder: the newest (its shard missing) is skipped for the one before.
  const test::CapturedLog log;
  BOOST_CHECK_EXCEPTION(run(shardings[0], 4, {}, dir.path), Error, test::message_has({damaged}));
}

// Written by `ACCRUE_RESHARD_WRITERS` processes into `ACCRUE_RESHARD_DIR`, by the script: the
// sharded run's checkpoints and its final parameters.
BOOST_AUTO_TEST_CASE(write_for_another_count, *boost::unit_test::disabled()) {
  const std::string dir = std::getenv("ACCRUE_RESHARD_DIR");
  const test::CapturedLog quiet;
  const std::int64_t batch = 12 / distributed::world().size();  // a global micro-batch of 12: 2 and 3 share it
  const Bits final = run(shardings[0], batch, {.dir = dir + "/checkpoints", .every_micro_batches = 1, .keep = 1000});
  if (distributed::world().rank() == 0) {
    serialization::NamedTensors tensors;
    for (std::size_t i = 0; i < final.size(); ++i)
      tensors.emplace_back(std::to_string(i), Tensor::from(final[i], {static_cast<std::int64_t>(final[i].size())}));
    serialization::save_safetensors(dir + "/final.safetensors", tensors);
  }
  BOOST_TEST(detail::checkpoints_in(dir + "/checkpoints").size() >= 4u);
}

// Continues every checkpoint the script's other process count wrote, sharded (each shard cut into
// this count's pieces) and unsharded: each ends where the writers' run ended, to float32 rounding.
BOOST_AUTO_TEST_CASE(resume_on_another_count, *boost::unit_test::disabled()) {
  const std::string dir = std::getenv("ACCRUE_RESHARD_DIR");
  const int writers = std::atoi(std::getenv("ACCRUE_RESHARD_WRITERS"));
  const test::CapturedLog quiet;  // a line per continued checkpoint
  BOOST_REQUIRE(writers != distributed::world().size());
  Bits final;
  for (const auto& [name, t] : serialization::load_safetensors(dir + "/final.safetensors").tensors) final.push_back(t.to_vector());
  const std::vector<std::string> files = detail::checkpoints_in(dir + "/checkpoints");
  BOOST_TEST(files.size() >= 4u);
  double largest = 0;
  for (const std::string& file : files)
    for (const Sharding& sharding : {shardings[0], shardings[2], unsharded}) {
      const double d = largest_difference(run(sharding, 12 / writers, {}, file), final);
      BOOST_TEST(d <= 1e-5, sharding.name << " on " << distributed::world().size() << " processes from " << file
                                         << ": parameters differ by " << d);
      largest = std::max(largest, d);
    }
  BOOST_TEST_MESSAGE(files.size() << " checkpoints of " << writers << " processes continued on "
                                  << distributed::world().size() << ": parameters within " << largest);
}

// A checkpoint's record of its shards is input from disk (its checksum only says it is intact): a
// record that is not JSON, lacks an entry, or has a piece out of range is refused naming the
// checkpoint (or the shard it would read).
BOOST_AUTO_TEST_CASE(a_crafted_record_of_shards_is_refused) {
  const detail::OptimizerPlacement placement{.processes = {{{.parameter = "w", .elements = 4, .shape = {4}}},
                                                           {{.parameter = "w", .offset = 4, .elements = 4, .shape = {4}}}},
                                             .whole = {{.parameter = "w", .elements = 8, .shape = {8}}}};
  const std::string stem = "/nonexistent/checkpoint-0000000001", path = stem + ".safetensors";
  for (const std::string record : {std::string{"{"}, std::string{R"({"bytes": [1, 1]})"},
                                   std::string{R"({"processes": 2, "bytes": [1], "pieces": [[["w", 0, 4]]]})"},
                                   std::string{R"({"processes": 2, "pieces": [[["w", -4, 4]], [["w", 4, 4]]]})"},
                                   std::string{R"({"processes": 1, "pieces": [[["w", 9223372036854775807, 4]]]})"},
                                   std::string{R"({"processes": 1, "pieces": [[["w", 0, "4"]]]})"}})
    BOOST_TEST_CONTEXT(record) {
      BOOST_CHECK_EXCEPTION(detail::resharded_state(path, record, {}, placement), IoError, test::message_has({stem}));
      BOOST_CHECK_EXCEPTION(detail::check_shard_files(path, record), IoError, test::message_has({stem}));
    }
}

BOOST_AUTO_TEST_CASE(sharded_checkpoints_keep_their_shards_and_only_theirs) {
  distributed::Communicator& world = distributed::world();
  const SharedDir dir{"kept_shards"};
  run(shardings[0], 4, {.dir = dir.path, .every_micro_batches = 1, .keep = 2});
  world.barrier();
  const std::vector<std::string> files = detail::checkpoints_in(dir.path);
  BOOST_TEST(files.size() == 2u);
  BOOST_TEST(shard_files(dir.path).size() == (world.size() > 1 ? 2u * static_cast<std::size_t>(world.size()) : 0u));
}
