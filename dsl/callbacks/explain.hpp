#pragma once
// Explain mode (FitOptions::explain): prints, for the first windows of a run, what happens at each
// micro-batch and optimizer step, as the tutorials' animations of gradient accumulation show it:
//
//   window 1 (optimizer step 1): 4 micro-batches, 64 samples
//     micro-batch 1/4: forward 16 samples, mean loss 2.3012; backward adds its gradient into .grad(),
//                      its summed loss weighted 1/64
//     ...
//     step: gradient norm 3.2104, clipped to 1.0000; SGD(lr=0.001) steps with lr 0.001; .grad() zeroed
//
// LARS and LAMB's steps also give each parameter's trust ratio ("trust ratios 0.weight 0.0213,
// 0.bias excluded, ...").

#include <cstdio>

#include "../callbacks.hpp"

namespace accrue::callbacks {

struct ExplainOptions {
  /// Windows to explain from the start of training.
  int windows = 2;
  std::FILE* stream = nullptr;
};

class Explain final : public Callback {
 public:
  explicit(false) Explain(ExplainOptions options = {}) : options_(options) {}
  void on_train_begin(TrainingContext& context) override;
  void on_micro_batch_end(const StepRecord& record, const Logs& running) override;
  void on_optimizer_step(const StepRecord& record) override;

 private:
  ExplainOptions options_;
  std::FILE* out_ = nullptr;
  const TrainingContext* context_ = nullptr;
};

}  // namespace accrue::callbacks
