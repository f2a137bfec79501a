#pragma once
// What the loss of a training run's micro-batches counts and weighs (fit's TrainingRun holds one):
// each training sample's units (1, or the tokens a sequence's loss counts), their sums over a
// micro-batch and over its window on all processes (what the loss weight divides by), and each
// sample's weight (class_weight times the dataset's own sample weights).

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "../../datasets/loader.hpp"
#include "../../framework/training/step_plan.hpp"
#include "../loss.hpp"

namespace accrue::detail {

class LossUnits {
 public:
  /// Reads target `target` of `train` (from each sample when they are not in memory), which
  /// `loss` is the loss of.
  LossUnits(const Loss& loss, const Dataset& train, std::size_t target, const std::map<std::int64_t, float>& class_weight);

  /// Whether the targets are sequences, whose units are the tokens the loss counts.
  bool counts_tokens() const { return counts_tokens_; }
  /// The units of the whole training set.
  std::int64_t total() const;
  /// The units of `batch`, this process's share of a micro-batch.
  std::int64_t of(const Batch& batch) const;
  /// The units of micro-batch `slot`'s window on all processes, in `loader`'s order (a window
  /// carried over an epoch's end reads the neighbouring epoch's order too). Counted when the
  /// window opens, or when a run resumes inside it, and kept for its other micro-batches.
  std::int64_t of_window(const MicroBatchSlot& slot, const DataLoader& loader);
  /// The units of_window counted last.
  std::int64_t window() const { return window_; }

  /// Each training sample's weight; empty when the run is unweighted.
  const std::vector<float>& sample_weights() const { return sample_weights_; }
  /// The weights of `batch`'s samples, in its order (empty when the run is unweighted).
  std::vector<float> weights_of(const Batch& batch) const;

 private:
  std::int64_t sum_over(const std::vector<std::int64_t>& samples) const;

  std::vector<std::int64_t> per_sample_;
  // When every sample counts alike (classes: 1; blocks of text without padding: their length), how
  // many: then no micro-batch's samples need to be looked at.
  std::optional<std::int64_t> same_for_all_;
  bool counts_tokens_ = false;
  std::vector<float> sample_weights_;
  std::int64_t window_ = 0, window_of_ = -1;  // of_window's last count and the window it counted
};

}  // namespace accrue::detail
