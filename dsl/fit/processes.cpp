// A distributed run's preparation: every process prepares (one failure stops all), continues from
// the checkpoint process 0 chose, and starts only when all prepared the same run, from rank 0's
// weights. What the processes share while training is a RunProcesses (run_processes.hpp).

#include "training_run.hpp"

namespace accrue::detail {

namespace {

// Runs `f`; the error it threw, if any, for agree_on_failure.
template <class F>
std::exception_ptr attempt(F&& f) {
  try {
    f();
  } catch (const Error&) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace

// Every rank prepares; a rank that cannot must not leave the others waiting for it.
void TrainingRun::prepare_on_every_process() {
  processes_.agree_on_failure(attempt([this] { prepare_model(); }));
  share_checkpoint();
  processes_.agree_on_failure(attempt([this] { prepare_run(); }));
  agree_to_start();
}

// A distributed run continues from the checkpoint process 0 chose, which every process reads: the
// checkpoint folder must be one they all reach (on several machines, a shared file system).
void TrainingRun::share_checkpoint() {
  const std::optional<TrainingCheckpoint>& chosen = checkpoints_.resumed();
  const std::string path = processes_.all().broadcast(chosen ? chosen->path() : std::string{}, 0);
  std::exception_ptr failed;
  if (processes_.rank() != 0) failed = attempt([&] { checkpoints_.continue_from(path); });
  processes_.agree_on_failure(failed);
}

// A distributed run starts only when every rank prepared the same run (its signature, each layer's
// type and options, which shapes and names cannot tell apart, the model's layout and graph, the device and
// the number of processes). Then the ranks take rank 0's parameters and buffers (a broadcast: the
// replicas start equal whatever each initialised) and shuffling seed.
void TrainingRun::agree_to_start() {
  RunSignature mine = checkpoints_.signature();
  const std::size_t configs_begin = mine.size();
  for (std::size_t i = 0; i < model_.size(); ++i) {
    std::string lines;
    for (const std::string& line : model_.layer(i).config_lines()) lines += line + "\n";
    mine.emplace_back(fmt::format("layer {} '{}' ({})", i, model_.layer(i).name(), model_.layer(i).type_name()), lines);
  }
  const std::size_t configs_end = mine.size();
  std::string layout;
  for (const auto& [name, t] : model_.named_state()) layout += fmt::format("{} {} {}; ", name, t.shape(), dtype_name(t.dtype()));
  mine.emplace_back("model", layout);
  mine.emplace_back("graph", model_.wiring());
  mine.emplace_back("device", model_.device().is_cpu() ? "cpu" : "a GPU");
  mine.emplace_back("processes", std::to_string(processes_.size()));
  mine.emplace_back("gradient buckets",
                    fmt::format("{} bytes, sharded: {}", data_parallel_.bucket_bytes,
                                distributed::sharding_name(reducer_sharding(data_parallel_.shard, data_parallel_.accumulation))));
  processes_.agree_on(mine, configs_begin, configs_end);
  processes_.take_rank_0s(model_.named_state());
  state_.loader_seed =
      static_cast<std::uint64_t>(processes_.all().allgather(static_cast<std::int64_t>(state_.loader_seed))[0]);
  make_loader();
}

}  // namespace accrue::detail
