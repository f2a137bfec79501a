// Each schedule's learning-rate factor at chosen steps against its formula.

#include "../test_util.hpp"

#include <cmath>
#include <numbers>

using namespace accrue;
using namespace accrue::test;

namespace {
// 1000 samples, micro-batch 10, accumulate 4, 2 epochs: 25 steps per epoch, 50 in all.
StepPlan plan() { return StepPlan{{.dataset_size = 1000, .micro_batch = 10, .epochs = 2, .schedule = 4}}; }

double at(LrSchedule s, std::int64_t step) {
  s.prepare(plan());
  return s.factor(step);
}
}  // namespace

BOOST_AUTO_TEST_CASE(warmup_linear_is_get_linear_schedule_with_warmup) {
  const LrSchedule s = schedules::warmup_linear({.warmup = Duration::steps(10)});
  const double T = 50, w = 10;
  for (std::int64_t t : {0, 1, 5, 9, 10, 11, 30, 49, 50}) {
    const double expected = t < w ? t / w : std::max(0.0, (T - t) / (T - w));
    BOOST_TEST(at(s, t) == expected, boost::test_tools::tolerance(1e-12));
  }
  BOOST_TEST(at(schedules::warmup_linear({.warmup_ratio = 0.1}), 2) == 2.0 / 5.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(warmup_cosine_is_get_cosine_schedule_with_warmup) {
  const double T = 50, w = 25;  // warmup of one epoch = 25 steps
  const LrSchedule s = schedules::warmup_cosine({.warmup = Duration::epochs(1), .min_lr_ratio = 0.1});
  for (std::int64_t t : {0, 12, 24, 25, 30, 37, 49, 50}) {
    double expected = t / w;
    if (t >= w) expected = 0.1 + 0.9 * std::max(0.0, 0.5 * (1 + std::cos(std::numbers::pi * (t - w) / (T - w))));
    BOOST_TEST(at(s, t) == expected, boost::test_tools::tolerance(1e-12));
  }
}

BOOST_AUTO_TEST_CASE(step_decay_exponential_lambda_constant) {
  const LrSchedule step = schedules::step_decay({.every = Duration::steps(10), .gamma = 0.5});
  BOOST_TEST(at(step, 9) == 1.0);
  BOOST_TEST(at(step, 10) == 0.5);
  BOOST_TEST(at(step, 35) == 0.125);
  const LrSchedule per_epoch = schedules::step_decay({.every = Duration::epochs(1), .gamma = 0.1});
  BOOST_TEST(at(per_epoch, 24) == 1.0);
  BOOST_TEST(at(per_epoch, 25) == 0.1, boost::test_tools::tolerance(1e-12));
  const LrSchedule exp = schedules::exponential({.gamma = 0.9});
  BOOST_TEST(at(exp, 7) == std::pow(0.9, 7), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(at(schedules::lambda([](std::int64_t t, std::int64_t total) { return 1.0 - double(t) / total; }), 10) == 0.8,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(at(schedules::constant(), 33) == 1.0);
}

BOOST_AUTO_TEST_CASE(reduce_on_plateau_cuts_after_patience) {
  LrSchedule s = schedules::reduce_on_plateau({.monitor = "val_loss", .factor = 0.5, .patience = 1});
  s.prepare(plan());
  Logs logs;
  for (double v : {1.0, 0.9, 0.95, 0.96}) {  // improves, then stalls two epochs
    logs.set("val_loss", v);
    s.on_epoch_end(logs);
  }
  BOOST_TEST(s.factor(0) == 0.5);
  logs.set("val_accuracy", 0.5);
  LrSchedule missing = schedules::reduce_on_plateau({.monitor = "val_auc"});
  BOOST_CHECK_EXCEPTION(missing.on_epoch_end(logs), ValueError, message_has({"val_auc", "val_loss"}));
}

BOOST_AUTO_TEST_CASE(scaling_rules) {
  BOOST_TEST(schedules::scale_lr_linear(0.1, 256, 1024) == 0.4, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(schedules::scale_lr_sqrt(0.1, 256, 1024) == 0.2, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(warmup_longer_than_training_is_refused) {
  LrSchedule s = schedules::warmup_cosine({.warmup = Duration::epochs(3)});
  BOOST_CHECK_EXCEPTION(s.prepare(plan()), ValueError, message_has({"75 optimizer steps", "longer than the 50"}));
  LrSchedule both = schedules::warmup_linear({.warmup = Duration::steps(5), .warmup_ratio = 0.1});
  BOOST_CHECK_EXCEPTION(both.prepare(plan()), ValueError, message_has({"not both"}));
}
