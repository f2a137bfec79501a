// RunCheckpoints (dsl/fit/run_checkpoints.hpp), a run's checkpoints: when one is owed (every so
// many micro-batches) or due (every so many seconds), the folder held while a run goes, the newest
// checkpoint found to continue from, and what a run stopped by a signal says.

#include <csignal>
#include <thread>

#include <accrue/dsl/fit/run_checkpoints.hpp>

#include "../test_util.hpp"

using namespace accrue;
using accrue::detail::RunCheckpoints;
using namespace accrue::test;

BOOST_AUTO_TEST_CASE(every_micro_batches_owes_one_until_it_is_written) {
  TempDir dir{"run_checkpoints_owed"};
  const CheckpointOptions options{.dir = dir.path.string(), .every_micro_batches = 3};
  RunCheckpoints checkpoints{options, ""};
  BOOST_TEST(checkpoints.writes());
  checkpoints.count_micro_batches(1);
  checkpoints.count_micro_batches(2);
  BOOST_TEST(!checkpoints.owed());
  checkpoints.count_micro_batches(3);
  BOOST_TEST(checkpoints.owed());
  checkpoints.count_micro_batches(4);  // a distributed run writes at the window's close: still owed
  BOOST_TEST(checkpoints.owed());
  // Without a folder nothing is owed and nothing is written.
  const CheckpointOptions none{.every_micro_batches = 1};
  RunCheckpoints without{none, ""};
  without.count_micro_batches(1);
  BOOST_TEST(!without.owed());
  BOOST_TEST(!without.writes());
  BOOST_TEST(!without.used());
  BOOST_TEST(RunCheckpoints(none, "elsewhere").used());  // resume_from reads one
}

BOOST_AUTO_TEST_CASE(every_seconds_counts_from_the_clocks_start) {
  TempDir dir{"run_checkpoints_clock"};
  const CheckpointOptions options{.dir = dir.path.string(), .every_seconds = 0.05};
  RunCheckpoints checkpoints{options, ""};
  checkpoints.start_clock();
  BOOST_TEST(!checkpoints.due_by_clock());
  std::this_thread::sleep_for(std::chrono::milliseconds{80});
  BOOST_TEST(checkpoints.due_by_clock());
  checkpoints.start_clock();
  BOOST_TEST(!checkpoints.due_by_clock());
  const CheckpointOptions no_folder{.every_seconds = 0.001};
  RunCheckpoints without{no_folder, ""};
  std::this_thread::sleep_for(std::chrono::milliseconds{5});
  BOOST_TEST(!without.due_by_clock());
}

// The folder is one run's while it goes; the next run finds the newest checkpoint the last wrote.
BOOST_AUTO_TEST_CASE(the_folder_is_held_and_the_newest_checkpoint_found) {
  TempDir dir{"run_checkpoints_folder"};
  const CheckpointOptions options{.dir = dir.path.string(), .every_micro_batches = 4, .keep = 3};
  {
    RunCheckpoints first{options, ""};
    first.open();
    BOOST_TEST(!first.resumed().has_value());
    RunCheckpoints second{options, ""};
    BOOST_CHECK_EXCEPTION(second.open(), IoError, message_has({"is in use by another training run"}));
  }
  manual_seed(3);
  Sequential model{layers::Input{6}, layers::Dense{4}};
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  model.fit(accrue::test::blobs(64, 1), {.epochs = 1, .batch_size = 8, .verbose = 0, .checkpoint = options});
  RunCheckpoints next{options, ""};
  next.open();  // the run before let the folder go
  BOOST_REQUIRE(next.resumed().has_value());
  BOOST_TEST(next.resumed()->path() == dir.file(accrue::detail::checkpoint_name(8)));  // the epoch's end, the newest
  // Another process continues from the path process 0 found; none when it found none.
  RunCheckpoints other{options, ""};
  other.continue_from(next.resumed()->path());
  BOOST_TEST(other.resumed()->path() == next.resumed()->path());
  RunCheckpoints fresh{options, ""};
  fresh.continue_from("");
  BOOST_TEST(!fresh.resumed().has_value());
}

BOOST_AUTO_TEST_CASE(a_stopped_run_says_what_holds_it) {
  const CheckpointOptions none{};
  const Interrupted without = RunCheckpoints{none, ""}.stopped(SIGTERM, "after micro-batch 3/8 of epoch 1/2", 1);
  BOOST_TEST(without.signal() == SIGTERM);
  BOOST_TEST(std::string(without.what()).find("no checkpoint folder is set (checkpoint.dir), so this run cannot be "
                                              "continued") != std::string::npos);
  BOOST_TEST(std::string(without.what()).find("after micro-batch 3/8 of epoch 1/2 (1 optimizer steps)") != std::string::npos);
  TempDir dir{"run_checkpoints_stopped"};
  const CheckpointOptions options{.dir = dir.path.string()};
  const Interrupted with = RunCheckpoints{options, ""}.stopped(SIGINT, "at the end of epoch 1/2", 2);
  BOOST_TEST(std::string(with.what()).find("run the same training again to continue from there") != std::string::npos);
  BOOST_TEST(with.exit_status() == 128 + SIGINT);
}
