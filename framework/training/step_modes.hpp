#pragma once
// The modes that change what one training step does, in one place. Each is a thread-local switch
// of its own (so that kernels and layers need no arguments for it); a run turns them on only
// through StepModes, so this header is the list of them:
//   - autocast (AutocastGuard): the forward pass and loss compute in bfloat16 or float16;
//   - shared batch statistics (distributed::ShareBatchStatistics): layers with .sync = true
//     normalize over every process's share of the micro-batch;
//   - gradient observation (ObserveLeafGradients): the window's last backward pass (every one,
//     when the reducer reduces each micro-batch) hands each completed gradient to the reducer,
//     which starts summing it over the processes;
//   - deferred weight gradients (DeferredWeightGradients): float32 Dense weight gradients wait
//     for the window's last backward pass and are multiplied at once;
//   - kept low-precision packs (kernels::PackedParameters): each weight's bfloat16 pack is made
//     once per window instead of once per micro-batch.
// Outside the step: NoGradGuard (metrics, evaluation) and EvaluationScope (predict, evaluate).

#include <optional>

#include "../ops/autocast.hpp"
#include "../autograd/deferred_gradients.hpp"
#include "../distributed/sync_batch_norm.hpp"
#include "../core/dtype.hpp"
#include "../../kernels/gemm.hpp"

namespace accrue {

namespace distributed {
class Reducer;
}  // namespace distributed

struct StepModesOptions {
  std::optional<DType> autocast;
  distributed::Communicator* statistics_group = nullptr;  // null: each process normalizes alone
  distributed::Reducer* reducer = nullptr;                // null: one process, nothing to observe
  bool defer_weight_gradients = false;                    // WeightGradients::per_window
  bool keep_packs = false;                                // autocast under accumulation
};

/// The modes of a run's steps. The kept packs and deferred gradients live as long as the object
/// (the run); the others are on only inside the passes forward() and backward() open.
class StepModes {
 public:
  explicit StepModes(const StepModesOptions& options);
  ~StepModes();
  StepModes(const StepModes&) = delete;
  StepModes& operator=(const StepModes&) = delete;

  /// On while it lives: what one pass of a micro-batch runs under.
  class Pass {
   public:
    ~Pass() = default;
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;

   private:
    friend class StepModes;
    Pass(const StepModesOptions& o, bool forward, bool closes_window);
    // Declared in the order they go on; off in the reverse order.
    distributed::ShareBatchStatistics sharing_;
    std::optional<AutocastGuard> autocast_;
    std::optional<ObserveLeafGradients> observing_;
  };
  /// A micro-batch's forward pass and loss: autocast and shared batch statistics.
  [[nodiscard]] Pass forward() const { return Pass{options_, true, false}; }
  /// Its backward pass: shared batch statistics and, when it closes the window, the deferred
  /// weight gradients multiplied and the completed gradients observed by the reducer (on every
  /// backward pass, when the reducer reduces each micro-batch).
  [[nodiscard]] Pass backward(bool closes_window);

  /// The deferred weight gradients, or null (for the window's close and checkpoints).
  DeferredWeightGradients* deferred() { return deferred_ ? &*deferred_ : nullptr; }
  /// Whether layers share batch statistics over processes: then every process runs every
  /// micro-batch, also an empty share, so that all make the same collective calls.
  bool shares_statistics() const { return options_.statistics_group != nullptr; }

 private:
  StepModesOptions options_;
  std::optional<kernels::PackedParameters> packs_;
  std::optional<DeferredWeightGradients> deferred_;
};

}  // namespace accrue
