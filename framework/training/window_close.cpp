#include "window_close.hpp"

#include <cmath>

#include "../amp/grad_scaler.hpp"
#include "../autograd/autograd.hpp"
#include "../autograd/deferred_gradients.hpp"
#include "../distributed/reducer.hpp"
#include "../core/error.hpp"
#include "../optim/optimizer.hpp"
#include "../optim/recipe.hpp"
#include "../autograd/gradients.hpp"
#include "lr_schedule.hpp"

namespace accrue {

std::string_view status_name(StepRecord::Status s) {
  switch (s) {
    case StepRecord::Status::accumulating: return "accumulating";
    case StepRecord::Status::applied: return "applied";
    case StepRecord::Status::skipped: return "skipped";
  }
  return "?";
}

namespace {

// Whether unscaling found inf or NaN in the gradients (any rank's part, in a sharded run).
bool unscale_finds_inf(const WindowClose& w, const std::vector<Tensor>& stepped) {
  const bool mine = w.scaler->unscale(stepped);
  return w.shards != nullptr ? w.shards->any_rank(mine) : mine;
}

double global_norm(const WindowClose& w) {
  if (w.shards != nullptr) return w.shards->gradient_norm();
  return w.reducer != nullptr ? distributed::gradient_norm_in_parts(*w.reducer) : gradient_norm(w.parameters);
}

}  // namespace

void close_window(const WindowClose& w, bool poisoned, std::int64_t& optimizer_steps, StepRecord& record) {
  const optim::Recipe& recipe = w.recipe;
  if (w.deferred != nullptr) poisoned ? w.deferred->discard() : w.deferred->flush();
  if (w.reducer != nullptr) {
    w.reducer->request(w.requests);
    poisoned = w.reducer->finish(poisoned);
  }
  if (w.shards != nullptr) w.shards->attach_gradients();
  // What is unscaled, clipped and stepped: this rank's pieces in a sharded run.
  const std::vector<Tensor>& stepped = w.shards != nullptr ? w.shards->pieces() : w.parameters;
  record.status = StepRecord::Status::applied;
  if (poisoned) {
    record.status = StepRecord::Status::skipped;
  } else if (w.scaler != nullptr && unscale_finds_inf(w, stepped)) {
    record.status = StepRecord::Status::skipped;  // inf or NaN in the gradients: the scale was too large
  } else if (recipe.clip_norm() || w.track_norm) {
    const double norm = global_norm(w);
    record.grad_norm_before = norm;
    if (!std::isfinite(norm)) {
      if (recipe.clip_options().error_if_nonfinite)
        throw NonFiniteError(fmt::format("the gradient norm is {} (clip with error_if_nonfinite)", norm));
      record.status = StepRecord::Status::skipped;
    } else {
      record.grad_norm_after = recipe.clip_norm() ? clip_gradients_by_norm(stepped, *recipe.clip_norm(), norm) : norm;
    }
  }
  if (record.status == StepRecord::Status::applied) {
    if (recipe.clip_value_limit()) clip_gradients_by_value(stepped, *recipe.clip_value_limit());
    record.lr = w.base_lr * w.schedule.factor(optimizer_steps) * w.lr_factor * w.batch_factor;
    w.optimizer.set_lr(record.lr);
    w.optimizer.step();
    if (w.shards != nullptr) w.shards->gather();
    record.optimizer_step = ++optimizer_steps;
  }
  if (w.scaler != nullptr) w.scaler->update(record.status == StepRecord::Status::skipped);
  w.optimizer.zero_grad();
  if (w.shards != nullptr) w.shards->drop_gradients();
}

}  // namespace accrue
