// A distributed run in which one rank fails after a few micro-batches, for
// tests/distributed/test_failures.sh:
//   failing_rank raise|kill|hang   rank 1 throws an error / is killed with SIGKILL / stops calling
//                                  collectives (the others' watchdog, set to 5 s, must notice)
// Every other rank trains on; the run must end on every rank within a bounded time.
//   failing_rank signal DIR        rank 1 alone gets SIGTERM inside a window of 4 micro-batches;
//                                  every rank must stop at that window's close, with a checkpoint
//                                  in DIR
//   failing_rank resume DIR        the same run, continued from DIR
//   failing_rank early|uncaught|stall
//                                  rank 1 fails before training: it returns 1 from main after an
//                                  error / lets the error escape main / stops before fit (rank 0's
//                                  watchdog, 5 s, gives up in fit's first collective and returns 1)

#include <accrue/accrue.hpp>
#include <csignal>
#include <cstdio>
#include <thread>
#include <unistd.h>

using namespace accrue;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "raise";
  distributed::Communicator& world = distributed::world();
  // "early": the others' watchdog would give up only after the run's bound; rank 1's exit must end it.
  world.set_timeout_seconds(mode == "early" ? 120 : 5);
  std::printf("rank %d pid %d\n", world.rank(), static_cast<int>(getpid()));
  std::fflush(stdout);
  manual_seed(1);
  Sequential model{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  const auto fail = [&](const StepRecord& r, const Logs&) {
    if (world.rank() != 1 || r.micro_batch != 5 || mode == "resume") return;
    if (mode == "signal") {
      std::raise(SIGTERM);
      return;
    }
    if (mode == "kill") std::raise(SIGKILL);
    if (mode == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
    throw ValueError("an error injected on rank 1 at micro-batch 6");
  };
  std::vector<std::int32_t> labels(4000);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 4);
  const Dataset data{Tensor::uniform({4000, 6}, -1, 1), Tensor::from(labels, {4000}), "noise"};
  const bool checkpoints = mode == "signal" || mode == "resume";
  if (world.rank() == 1) {
    if (mode == "early") {
      std::fprintf(stderr, "rank 1: error: an error injected on rank 1 before training\n");
      return 1;
    }
    if (mode == "uncaught") throw IoError("an error injected on rank 1 before training");
    if (mode == "stall") std::this_thread::sleep_for(std::chrono::hours(1));
  }
  try {
    model.fit(data, {.epochs = checkpoints ? 1 : 1000,
                     .batch_size = 4,
                     .accumulate = checkpoints ? 4 : 1,
                     .callbacks = {callbacks::Lambda{{.micro_batch_end = fail}}},
                     .verbose = 0,
                     .checkpoint = {.dir = checkpoints && argc > 2 ? argv[2] : ""},
                     .distributed = true});
  } catch (const Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", world.rank(), e.what());
    return 1;
  }
  return 0;
}
