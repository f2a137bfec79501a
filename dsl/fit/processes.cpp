// What the processes of a distributed run agree on and share: preparing together (one failure
// stops all), the same run and starting weights, the epoch's metrics, buffers and replicas.

#include <sstream>

#include "training_run.hpp"
#include "../../framework/autograd.hpp"
#include "../../framework/serialization/checkpoint.hpp"

namespace accrue::detail {

namespace {

// The first line of `a` (lines "option=value") that `b` lacks at its place, or "no more options".
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream x{a}, y{b};
  for (std::string p, q; std::getline(x, p);)
    if (!std::getline(y, q) || p != q) return p;
  return "no more options";
}

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
  agree_on_failure(attempt([this] { prepare_model(); }));
  share_checkpoint();
  agree_on_failure(attempt([this] { prepare_run(); }));
  agree_to_start();
}

// A distributed run continues from the checkpoint process 0 chose, which every process reads: the
// checkpoint folder must be one they all reach (on several machines, a shared file system).
void TrainingRun::share_checkpoint() {
  const std::optional<TrainingCheckpoint>& chosen = checkpoints_.resumed();
  const std::string path = communicator_->broadcast(chosen ? chosen->path() : std::string{}, 0);
  std::exception_ptr failed;
  if (communicator_->rank() != 0) failed = attempt([&] { checkpoints_.continue_from(path); });
  agree_on_failure(failed);
}

// When a process failed to prepare, every process throws: the failed ones their own error, the
// others one naming the first failed rank and its message.
void TrainingRun::agree_on_failure(std::exception_ptr failed) {
  distributed::Communicator& c = *communicator_;
  const std::vector<std::int64_t> failures = c.allgather(failed ? 1 : 0);
  for (std::size_t r = 0; r < failures.size(); ++r) {
    if (failures[r] == 0) continue;
    std::string message;
    if (failed) try {
        std::rethrow_exception(failed);
      } catch (const Error& e) {
        message = e.what();
      }
    message = c.broadcast(message, static_cast<int>(r));
    if (failed) try {
        std::rethrow_exception(failed);
      } catch (Error& e) {
        e.prepend(fmt::format("rank {}: ", c.rank()));
        throw;
      }
    throw CommunicationError(fmt::format("rank {} could not start training: {}", r, message));
  }
}

// A distributed run starts only when every rank prepared the same run: otherwise every rank throws
// the same error, naming the rank and what differs. Then the ranks take rank 0's parameters and
// buffers (a broadcast: the replicas start equal whatever each initialised) and shuffling seed.
void TrainingRun::agree_to_start() {
  distributed::Communicator& c = *communicator_;
  RunSignature mine = checkpoints_.signature();
  // Each layer's type and options (heads, dropout, ...): what shapes and names cannot tell apart.
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
  mine.emplace_back("device", model_.device().is_cpu() ? "cpu" : "a GPU");
  mine.emplace_back("processes", std::to_string(c.size()));
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const auto& [what, value] = mine[k];
    const std::vector<std::int64_t> hashes = c.allgather(static_cast<std::int64_t>(std::hash<std::string>{}(value)));
    for (std::size_t r = 1; r < hashes.size(); ++r) {
      if (hashes[r] == hashes[0]) continue;
      const std::string first = c.broadcast(value, 0), other = c.broadcast(value, static_cast<int>(r));
      if (k >= configs_begin && k < configs_end)
        throw ValueError(fmt::format("the processes of a distributed run must train the same model, but {} has {} on "
                                     "rank 0 and {} on rank {}",
                                     what, first_difference(first, other), first_difference(other, first), r));
      throw ValueError(fmt::format("the processes of a distributed run must train the same run, but the {} is '{}' "
                                   "on rank 0 and '{}' on rank {}",
                                   what, first, other, r));
    }
  }
  const NoGradGuard no_grad;
  for (const auto& [name, t] : model_.named_state()) distributed::for_device(t.device()).broadcast(t, 0);
  state_.loader_seed = static_cast<std::uint64_t>(c.allgather(static_cast<std::int64_t>(state_.loader_seed))[0]);
  make_loader();
}

// A distributed run's epoch logs count every process's samples.
void TrainingRun::aggregate_metrics(Logs& logs) {
  if (communicator_->size() == 1) return;
  metrics::MeanLoss loss = state_.epoch_loss;
  std::vector<Metric> metrics = model_.metrics_;
  sum_over_processes(*communicator_, loss, metrics);
  logs.set_all(metric_logs(loss, metrics));
}

// Buffers that each process updates from its own share of the samples (the running statistics of a
// BatchNorm without .sync) end each epoch as rank 0's on every process, as PyTorch's DDP
// broadcasts them, so that every process validates and checkpoints one model.
void TrainingRun::share_buffers() {
  if (communicator_->size() == 1) return;
  const NoGradGuard no_grad;
  for (const auto& [name, t] : model_.named_buffers()) distributed::for_device(t.device()).broadcast(t, 0);
}

// The replicas' parameters and buffers must be the same bits on every rank after each epoch; a
// difference means the ranks no longer train one model, and is reported rather than trained on.
void TrainingRun::check_replicas(int epoch) {
  if (communicator_->size() == 1) return;
  const std::uint32_t checksum = serialization::checkpoint_checksum(model_.named_state(), {});
  const std::vector<std::int64_t> all = communicator_->allgather(checksum);
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw CommunicationError(fmt::format("after epoch {} the parameters on rank {} differ from rank 0's: the "
                                           "processes no longer train one model",
                                           epoch + 1, r));
}

}  // namespace accrue::detail
