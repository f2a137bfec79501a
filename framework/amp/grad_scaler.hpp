#pragma once
// Dynamic loss scaling for float16 training, with torch.cuda.amp.GradScaler's defaults and rules.
// Each micro-batch's loss is multiplied by scale() before backward, so small gradients survive
// float16's range; once per optimizer step, unscale() divides every gradient by the scale and
// checks them all for inf and NaN in the same pass. update() then backs off (a step with inf or
// NaN, which is skipped) or, after growth_interval clean steps in a row, grows the scale.

#include <cstdint>
#include <vector>

#include "../core/tensor.hpp"

namespace accrue {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int growth_interval = 2000;
  friend bool operator==(const GradScalerOptions&, const GradScalerOptions&) = default;
};

class GradScaler {
 public:
  /// Throws ValueError naming a bad option.
  explicit GradScaler(GradScalerOptions options = {});

  double scale() const { return scale_; }
  /// Divides every gradient by the scale; true when any gradient holds inf or NaN.
  bool unscale(const std::vector<Tensor>& parameters) const;
  /// Backs off after a step with inf or NaN, grows after growth_interval clean steps.
  void update(bool found_inf);
  /// Clean steps since the last change of scale.
  std::int64_t growth_tracker() const { return growth_tracker_; }
  /// Steps skipped for inf or NaN since construction.
  std::int64_t skipped_steps() const { return skipped_; }
  const GradScalerOptions& options() const { return options_; }

  /// What a checkpoint keeps.
  struct State {
    double scale;
    std::int64_t growth_tracker;
    std::int64_t skipped_steps;
  };
  State state() const { return {scale_, growth_tracker_, skipped_}; }
  void load_state(const State& state);

 private:
  GradScalerOptions options_;
  double scale_;
  std::int64_t growth_tracker_ = 0;
  std::int64_t skipped_ = 0;
};

}  // namespace accrue
