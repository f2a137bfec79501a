#include "loss_units.hpp"

#include <algorithm>
#include <numeric>

namespace accrue::detail {

LossUnits::LossUnits(const Loss& loss, const Dataset& train, std::size_t target,
                     const std::map<std::int64_t, float>& class_weight) {
  const Tensor targets = train.target(target);
  per_sample_ = loss.counts(targets);
  counts_tokens_ = targets.rank() >= 2;
  if (std::all_of(per_sample_.begin(), per_sample_.end(), [&](std::int64_t u) { return u == per_sample_[0]; }))
    same_for_all_ = per_sample_[0];
  if (!class_weight.empty()) sample_weights_ = class_weight_per_sample(targets, class_weight);
  if (const std::vector<float>* own = train.sample_weights()) {
    if (sample_weights_.empty()) sample_weights_ = *own;
    else
      for (std::size_t i = 0; i < own->size(); ++i) sample_weights_[i] *= (*own)[i];
  }
}

std::int64_t LossUnits::total() const { return std::accumulate(per_sample_.begin(), per_sample_.end(), std::int64_t{0}); }

std::int64_t LossUnits::sum_over(const std::vector<std::int64_t>& samples) const {
  std::int64_t n = 0;
  for (const std::int64_t i : samples) n += per_sample_[static_cast<std::size_t>(i)];
  return n;
}

std::int64_t LossUnits::of(const Batch& batch) const {
  return same_for_all_ ? batch.size() * *same_for_all_ : sum_over(batch.samples);
}

std::int64_t LossUnits::of_window(const MicroBatchSlot& slot, const DataLoader& loader) {
  if (slot.position != 0 && window_of_ == slot.window) return window_;
  window_of_ = slot.window;
  if (same_for_all_) return window_ = slot.window_samples * *same_for_all_;
  std::optional<DataLoader> other;  // a neighbouring epoch's order, for a carried window
  return window_ = window_units(slot.index - slot.position, slot.window_micro_batches, loader.size(),
                               [&](std::int64_t epochs_away, std::int64_t index) {
                                 if (epochs_away == 0) return sum_over(loader.sample_indices(index, true));
                                 if (!other || other->epoch() != loader.epoch() + epochs_away) {
                                   other.emplace(loader);
                                   other->set_epoch(loader.epoch() + epochs_away);
                                 }
                                 return sum_over(other->sample_indices(index, true));
                               });
}

std::vector<float> LossUnits::weights_of(const Batch& batch) const {
  if (sample_weights_.empty()) return {};
  std::vector<float> w(batch.samples.size());
  for (std::size_t b = 0; b < batch.samples.size(); ++b) w[b] = sample_weights_[static_cast<std::size_t>(batch.samples[b])];
  return w;
}

}  // namespace accrue::detail
