// close_window: the order of a window's close (framework/training/window_close.hpp), on one
// parameter whose accumulated gradient the test sets.

#include "../test_util.hpp"

#include <limits>

#include <accrue/framework/training/window_close.hpp>

using namespace accrue;
using namespace accrue::test;

namespace {

// A parameter of two elements, 1 and 1, with gradient `grad`.
std::vector<Tensor> parameter_with_gradient(std::vector<float> grad) {
  Tensor p = Tensor::from(std::vector<float>{1.0f, 1.0f}, {2});
  p.set_requires_grad(true);
  p.set_grad(Tensor::from(grad, {2}));
  return {p};
}

struct Closing {
  std::vector<Tensor> parameters;
  std::unique_ptr<optim::Optimizer> optimizer;
  optim::Recipe recipe;
  LrSchedule schedule = schedules::step_decay({.every = Duration::steps(1), .gamma = 0.5});
  std::int64_t steps = 0;
  StepRecord record;

  Closing(std::vector<float> grad, optim::Recipe r) : parameters(parameter_with_gradient(std::move(grad))), recipe(std::move(r)) {
    optimizer = optim::SGD{.lr = 1.0}.create(parameters);
    schedule.prepare(StepPlan{{.dataset_size = 10, .micro_batch = 1, .epochs = 1}});
  }
  void close(bool poisoned = false, GradScaler* scaler = nullptr, bool track_norm = false) {
    close_window({.parameters = parameters, .optimizer = *optimizer, .recipe = recipe, .scaler = scaler,
                  .schedule = schedule, .base_lr = 0.1, .lr_factor = 0.5, .track_norm = track_norm},
                 poisoned, steps, record);
  }
  std::vector<float> values() const { return parameters[0].to_vector(); }
  bool gradient_zeroed() const {
    const Tensor g = parameters[0].grad();
    return !g.defined() || g.to_vector() == std::vector<float>{0.0f, 0.0f};
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(an_applied_step_clips_the_whole_gradient_then_steps_with_the_schedules_rate) {
  // Gradient (3, 4): norm 5, clipped to norm 1 -> (0.6, 0.8).
  Closing c{{3.0f, 4.0f}, optim::Recipe{optim::SGD{.lr = 1.0}}.clip(1.0)};
  c.steps = 1;  // step_decay halves after one step: the rate is 0.1 x 0.5 x lr_factor 0.5
  c.close();
  BOOST_TEST(c.record.status == StepRecord::Status::applied);
  BOOST_TEST(*c.record.grad_norm_before == 5.0, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(*c.record.grad_norm_after == 1.0, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(c.record.lr == 0.025, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(c.steps == 2);
  BOOST_TEST(c.record.optimizer_step == 2);
  const std::vector<float> v = c.values();
  BOOST_TEST(v[0] == 1.0f - 0.025f * 0.6f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(v[1] == 1.0f - 0.025f * 0.8f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(c.gradient_zeroed());
  // By value: (3, 4) -> (0.7, 0.7), at the first step's rate 0.1 x lr_factor 0.5.
  Closing by_value{{3.0f, 4.0f}, optim::Recipe{optim::SGD{.lr = 1.0}}.clip_value(0.7)};
  by_value.close();
  BOOST_TEST(by_value.record.lr == 0.05, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(by_value.values()[1] == 1.0f - 0.05f * 0.7f, boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(a_non_finite_gradient_skips_the_step_or_throws_when_asked) {
  const float inf = std::numeric_limits<float>::infinity();
  Closing skip{{inf, 1.0f}, optim::Recipe{optim::SGD{.lr = 1.0}}.clip(1.0)};
  skip.close();
  BOOST_TEST(skip.record.status == StepRecord::Status::skipped);
  BOOST_TEST(skip.steps == 0);
  BOOST_TEST(skip.values() == (std::vector<float>{1.0f, 1.0f}));
  BOOST_TEST(skip.gradient_zeroed());
  Closing raise{{inf, 1.0f}, optim::Recipe{optim::SGD{.lr = 1.0}}.clip(1.0, {.error_if_nonfinite = true})};
  BOOST_CHECK_EXCEPTION(raise.close(), NonFiniteError, message_has({"the gradient norm is inf", "error_if_nonfinite"}));
  BOOST_TEST(raise.values() == (std::vector<float>{1.0f, 1.0f}));
  // Without clipping the norm is taken only when tracked.
  Closing untracked{{2.0f, 0.0f}, optim::Recipe{optim::SGD{.lr = 1.0}}};
  untracked.close();
  BOOST_TEST(!untracked.record.grad_norm_before.has_value());
  Closing tracked{{2.0f, 0.0f}, optim::Recipe{optim::SGD{.lr = 1.0}}};
  tracked.close(false, nullptr, true);
  BOOST_TEST(*tracked.record.grad_norm_after == 2.0, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(loss_scaling_unscales_once_and_backs_off_after_a_skipped_window) {
  // Gradients scaled by 4: unscaled to (0.5, 0) before the step.
  GradScaler scaler{{.init_scale = 4.0}};
  Closing scaled{{2.0f, 0.0f}, optim::Recipe{optim::SGD{.lr = 1.0}}};
  scaled.close(false, &scaler);
  BOOST_TEST(scaled.record.status == StepRecord::Status::applied);
  BOOST_TEST(scaled.values()[0] == 1.0f - 0.05f * 0.5f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(scaler.scale() == 4.0);
  // inf in the scaled gradients: skipped, the scale halves.
  Closing overflow{{std::numeric_limits<float>::infinity(), 0.0f}, optim::Recipe{optim::SGD{.lr = 1.0}}};
  overflow.close(false, &scaler);
  BOOST_TEST(overflow.record.status == StepRecord::Status::skipped);
  BOOST_TEST(scaler.scale() == 2.0);
  // A window poisoned by a non-finite loss: skipped without looking at its gradients, scale halves.
  Closing poisoned{{1.0f, 1.0f}, optim::Recipe{optim::SGD{.lr = 1.0}}};
  poisoned.close(true, &scaler);
  BOOST_TEST(poisoned.record.status == StepRecord::Status::skipped);
  BOOST_TEST(poisoned.values() == (std::vector<float>{1.0f, 1.0f}));
  BOOST_TEST(poisoned.gradient_zeroed());
  BOOST_TEST(scaler.scale() == 1.0);
}
