// StepPlan: which micro-batches form each optimizer step, and the step counts schedules rely on.

#include "test_util.hpp"

using namespace accrue;
using accrue::test::message_has;

namespace {
std::vector<int> window_sizes(const StepPlan& plan) {
  std::vector<int> v;
  for (const Window& w : plan.windows()) v.push_back(w.applied ? w.micro_batches() : -w.micro_batches());
  return v;
}
}  // namespace

BOOST_AUTO_TEST_CASE(end_of_epoch_policies) {
  // 10 samples in micro-batches of 3: sizes 3, 3, 3, 1; windows of 3 micro-batches.
  const StepPlan::Spec base{.dataset_size = 10, .micro_batch = 3, .epochs = 2, .schedule = 3};
  StepPlan::Spec spec = base;
  const StepPlan normalize{spec};
  BOOST_TEST(window_sizes(normalize) == (std::vector<int>{3, 1, 3, 1}), boost::test_tools::per_element());
  BOOST_TEST(normalize.total_optimizer_steps() == 4);
  BOOST_TEST(normalize.windows()[1].samples == 1);  // the short window's weight is its real size
  spec.last_window = LastWindow::drop;
  const StepPlan drop{spec};
  BOOST_TEST(window_sizes(drop) == (std::vector<int>{3, -1, 3, -1}), boost::test_tools::per_element());
  BOOST_TEST(drop.total_optimizer_steps() == 2);
  BOOST_TEST(drop.epoch_slots(0).size() == 3u);  // the dropped micro-batch does not run
  spec.last_window = LastWindow::carry;
  const StepPlan carry{spec};
  // 8 micro-batches over two epochs: [3] [1 + 2 across the boundary] [2]; the open one is applied at the end.
  BOOST_TEST(window_sizes(carry) == (std::vector<int>{3, 3, 2}), boost::test_tools::per_element());
  BOOST_TEST(carry.windows()[1].segments.size() == 2u);
  BOOST_TEST(carry.windows()[1].samples == 1 + 3 + 3);
  BOOST_TEST(carry.windows()[2].samples == 3 + 1);
  BOOST_TEST(carry.total_optimizer_steps() == 3);
  const auto slots = carry.epoch_slots(1);
  BOOST_TEST(slots.front().position == 1);  // epoch 1 continues the carried window
  BOOST_TEST(slots[1].closes_window);
}

BOOST_AUTO_TEST_CASE(closed_forms_for_a_constant_accumulation) {
  for (std::int64_t n : {1, 2, 7, 64, 100, 1000}) {
    for (std::int64_t b : {1, 3, 16, 64}) {
      for (int k : {1, 2, 3, 8}) {
        for (bool drop_last : {false, true}) {
          const std::int64_t per_epoch = drop_last ? n / b : (n + b - 1) / b;
          if (per_epoch == 0) continue;
          StepPlan::Spec spec{.dataset_size = n, .micro_batch = b, .drop_last = drop_last, .epochs = 3, .schedule = k};
          BOOST_TEST(StepPlan{spec}.total_optimizer_steps() == 3 * ((per_epoch + k - 1) / k));
          spec.last_window = LastWindow::drop;
          BOOST_TEST(StepPlan{spec}.total_optimizer_steps() == 3 * (per_epoch / k));
          spec.last_window = LastWindow::carry;
          BOOST_TEST(StepPlan{spec}.total_optimizer_steps() == (3 * per_epoch + k - 1) / k);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(schedules_of_every_kind) {
  // Per epoch, PyTorch Lightning's meaning: 1 before the first key.
  StepPlan per_epoch{{.dataset_size = 8, .micro_batch = 1, .epochs = 4, .schedule = {{1, 4}, {3, 2}}}};
  std::vector<int> expected = {1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 4, 4, 2, 2, 2, 2};
  BOOST_TEST(window_sizes(per_epoch) == expected, boost::test_tools::per_element());
  // By optimizer step: steps 0-2 take 1, from step 3 on 4.
  StepPlan by_step{{.dataset_size = 11, .micro_batch = 1, .epochs = 1, .schedule = AccumulationSchedule::by_step({{3, 4}})}};
  BOOST_TEST(window_sizes(by_step) == (std::vector<int>{1, 1, 1, 4, 4}), boost::test_tools::per_element());
  // A target effective batch.
  StepPlan effective{{.dataset_size = 64, .micro_batch = 8, .epochs = 1, .schedule = AccumulationSchedule::effective_batch(32)}};
  BOOST_TEST(window_sizes(effective) == (std::vector<int>{4, 4}), boost::test_tools::per_element());
  BOOST_TEST(effective.max_effective_batch() == 32);
  // A function of the epoch, as in the issue: min(16, 1 << (epoch / 2)).
  StepPlan callable{{.dataset_size = 16, .micro_batch = 1, .epochs = 6,
                     .schedule = [](int e) { return std::min(16, 1 << (e / 2)); }}};
  std::vector<std::int64_t> per_epoch_steps;
  std::int64_t previous = 0;
  for (int e = 0; e < 6; ++e) {
    per_epoch_steps.push_back(callable.steps_after_epochs(e + 1) - previous);
    previous = callable.steps_after_epochs(e + 1);
  }
  BOOST_TEST(per_epoch_steps == (std::vector<std::int64_t>{16, 16, 8, 8, 4, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(durations_in_steps_epochs_and_samples) {
  // 100 samples, micro-batch 10, accumulate 2: 5 steps of 20 samples per epoch, 4 epochs.
  const StepPlan plan{{.dataset_size = 100, .micro_batch = 10, .epochs = 4, .schedule = 2}};
  BOOST_TEST(plan.total_optimizer_steps() == 20);
  BOOST_TEST(plan.steps_after_epochs(1) == 5);
  BOOST_TEST(plan.steps_after_epochs(2.4) == 12);
  BOOST_TEST(plan.steps_after_epochs(10) == 50);  // past the end: 5 more per epoch, so too long a warmup shows
  BOOST_TEST(plan.steps_after_samples(100) == 5);
  BOOST_TEST(plan.steps_after_samples(101) == 6);
  BOOST_TEST(Duration::epochs(1).to_steps(plan) == 5);
  BOOST_TEST(Duration::samples(40).to_steps(plan) == 2);
  BOOST_TEST(Duration::ratio(0.05).to_steps(plan) == 1);
  BOOST_TEST(Duration::steps(7).to_steps(plan) == 7);
  // The same warmup in samples keeps its meaning when the accumulation changes.
  const StepPlan doubled{{.dataset_size = 100, .micro_batch = 10, .epochs = 4, .schedule = 4}};
  // Windows of 20 samples; with accumulate 4, windows of 40, 40 and 20 per epoch.
  BOOST_TEST(Duration::samples(200).to_steps(plan) == 10);
  BOOST_TEST(Duration::samples(200).to_steps(doubled) == 6);
}

BOOST_AUTO_TEST_CASE(bad_schedules_are_refused_with_what_to_change) {
  BOOST_CHECK_EXCEPTION(StepPlan({.dataset_size = 10, .schedule = 0}), ValueError, message_has({"accumulate(0)", "at least 1"}));
  BOOST_CHECK_EXCEPTION(StepPlan({.dataset_size = 10, .schedule = {{-1, 2}}}), ValueError, message_has({"key -1", "negative"}));
  BOOST_CHECK_EXCEPTION(StepPlan({.dataset_size = 10, .schedule = {{4, 2}, {0, 8}}}), ValueError,
                        message_has({"increase", "0 comes after 4"}));
  BOOST_CHECK_EXCEPTION(StepPlan({.dataset_size = 10, .schedule = {{0, 0}}}), ValueError, message_has({"value 0"}));
  BOOST_CHECK_EXCEPTION(StepPlan({.dataset_size = 100, .micro_batch = 12,
                                  .schedule = AccumulationSchedule::effective_batch(64)}),
                        ValueError, message_has({"effective_batch(64)", "micro-batch of 12", "does not divide"}));
  BOOST_CHECK_EXCEPTION(StepPlan({.dataset_size = 3, .micro_batch = 4, .drop_last = true}), ValueError,
                        message_has({"no batch"}));
}
