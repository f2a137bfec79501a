#pragma once
// The processes of a run (fit's TrainingRun holds one): this process alone, or every process of
// distributed::world(); the reducer that sums their gradients at each window's close and the group
// that layers with .sync = true share batch statistics with; and what they agree on: that every
// one prepared, and prepared the same run, the epoch's metrics, the buffers and the replicas.

#include <cstddef>
#include <exception>
#include <memory>
#include <vector>

#include "../../framework/distributed/communicator.hpp"
#include "../../framework/distributed/reducer.hpp"
#include "../../framework/distributed/sharded_parameters.hpp"
#include "../metrics.hpp"
#include "../model.hpp"
#include "../training_checkpoint.hpp"

namespace accrue::detail {

class RunProcesses {
 public:
  /// Every process of distributed::world() when `distributed`, else this one alone.
  explicit RunProcesses(bool distributed);

  distributed::Communicator& all() const { return *all_; }
  int size() const { return all_->size(); }
  int rank() const { return all_->rank(); }

  /// With several processes: a reducer of `parameters`' gradients in buckets of `bucket_bytes`
  /// (reduce-scattered when `sharding`, which also makes this process's pieces, shards()), and
  /// the statistics group when a layer of `model` shares batch statistics. Alone: none of them.
  void share_gradients(const Model& model, const std::vector<Tensor>& parameters, std::size_t bucket_bytes,
                       distributed::Sharding sharding = distributed::Sharding::none);
  distributed::Reducer* reducer() const { return reducer_.get(); }
  distributed::ShardedParameters* shards() const { return shards_.get(); }
  /// The processes layers with .sync = true share batch statistics with (null: none do, or alone).
  distributed::Communicator* statistics_group() const { return statistics_group_; }

  /// When a process failed to prepare (`failed` its error), every process throws: the failed ones
  /// their own error prefixed with their rank, the others one naming the first failed rank.
  void agree_on_failure(std::exception_ptr failed) const;
  /// Throws ValueError on every process unless all have `mine`, naming the first rank and entry
  /// that differ; entries [configs_begin, configs_end) are layers' option lines, named line by line.
  void agree_on(const RunSignature& mine, std::size_t configs_begin, std::size_t configs_end) const;
  /// The epoch's logs over every process's samples: `loss` and `metrics` are this process's.
  void aggregate_metrics(metrics::MeanLoss loss, std::vector<Metric> metrics, Logs& logs) const;
  /// `tensors` become rank 0's on every process (a model's state at the start, its buffers after
  /// each epoch, as PyTorch's DDP broadcasts them).
  void take_rank_0s(const std::vector<std::pair<std::string, Tensor>>& tensors) const;
  /// Throws CommunicationError when `model`'s parameters and buffers differ from rank 0's bits.
  void check_replicas(const Model& model, int epoch) const;

 private:
  std::unique_ptr<distributed::Communicator> own_;  // alone
  distributed::Communicator* all_ = nullptr;
  std::unique_ptr<distributed::Reducer> reducer_;
  std::unique_ptr<distributed::ShardedParameters> shards_;
  distributed::Communicator* statistics_group_ = nullptr;
};

}  // namespace accrue::detail
