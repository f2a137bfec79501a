#include "run_processes.hpp"

#include <sstream>

#include "../../framework/autograd/autograd.hpp"
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

}  // namespace

RunProcesses::RunProcesses(bool distributed) {
  if (distributed) {
    all_ = &distributed::world();
  } else {
    own_ = distributed::single_process();
    all_ = own_.get();
  }
}

void RunProcesses::share_gradients(const Model& model, const std::vector<Tensor>& parameters,
                                   std::size_t bucket_bytes, distributed::Sharding sharding) {
  if (size() == 1) return;
  distributed::Communicator& on_device = distributed::for_device(model.device());
  shards_.reset();  // before the reducer whose buffers its gradients are
  reducer_ = std::make_unique<distributed::Reducer>(on_device, parameters,
                                                    distributed::ReducerOptions{.bucket_bytes = bucket_bytes, .sharding = sharding});
  if (reducer_->sharded()) shards_ = std::make_unique<distributed::ShardedParameters>(*reducer_);
  for (std::size_t i = 0; i < model.size(); ++i)
    if (model.layer(i).shares_batch_statistics()) statistics_group_ = &on_device;
}

void RunProcesses::agree_on_failure(std::exception_ptr failed) const {
  distributed::Communicator& c = *all_;
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

void RunProcesses::agree_on(const RunSignature& mine, std::size_t configs_begin, std::size_t configs_end) const {
  distributed::Communicator& c = *all_;
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
}

void RunProcesses::aggregate_metrics(metrics::MeanLoss loss, std::vector<Metric> metrics, Logs& logs) const {
  if (size() == 1) return;
  sum_over_processes(*all_, loss, metrics);
  logs.set_all(metric_logs(loss, metrics));
}

void RunProcesses::take_rank_0s(const std::vector<std::pair<std::string, Tensor>>& tensors) const {
  if (size() == 1) return;
  const NoGradGuard no_grad;
  for (const auto& [name, t] : tensors) distributed::for_device(t.device()).broadcast(t, 0);
}

// A difference means the ranks no longer train one model, and is reported rather than trained on.
void RunProcesses::check_replicas(const Model& model, int epoch) const {
  if (size() == 1) return;
  const std::uint32_t checksum = serialization::checkpoint_checksum(model.named_state(), {});
  const std::vector<std::int64_t> all = all_->allgather(checksum);
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw CommunicationError(fmt::format("after epoch {} the parameters on rank {} differ from rank 0's: the "
                                           "processes no longer train one model",
                                           epoch + 1, r));
}

}  // namespace accrue::detail
