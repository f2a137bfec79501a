// StepPlan: which micro-batches form each optimizer step, and the step counts schedules rely on.

#include "../test_util.hpp"

#include <limits>

using namespace accrue;
using namespace accrue::test;

namespace {
std::vector<Window> all_windows(const StepPlan& plan) {
  std::vector<Window> all;
  for (int e = 0; e < plan.spec().epochs; ++e)
    for (const Window& w : plan.epoch_windows(e)) all.push_back(w);
  return all;
}

std::vector<int> window_sizes(const StepPlan& plan) {
  std::vector<int> v;
  for (const Window& w : all_windows(plan)) v.push_back(w.applied ? w.micro_batches : -w.micro_batches);
  return v;
}

// The plan as first written: every window of the run listed, epoch by epoch. The oracle that the
// plan, which keeps only what differs between epochs, must agree with.
struct ReferencePlan {
  struct Part {
    int epoch;
    std::int64_t first;
    int count;
  };
  struct RefWindow {
    std::vector<Part> parts;
    int planned = 1;
    int micro_batches = 0;
    std::int64_t samples = 0;
    bool applied = true;
  };
  std::vector<RefWindow> windows;
  std::vector<std::int64_t> steps_by_epoch_end;
  std::int64_t total_steps = 0;

  explicit ReferencePlan(const StepPlan::Spec& spec) {
    const std::int64_t per_epoch = spec.drop_last ? spec.dataset_size / spec.micro_batch
                                                  : (spec.dataset_size + spec.micro_batch - 1) / spec.micro_batch;
    const auto samples = [&](std::int64_t i) { return std::min(spec.micro_batch, spec.dataset_size - i * spec.micro_batch); };
    std::int64_t step = 0;
    RefWindow open;
    bool carrying = false;
    for (int epoch = 0; epoch < spec.epochs; ++epoch) {
      std::int64_t i = 0;
      while (i < per_epoch) {
        RefWindow w;
        if (carrying) {
          w = open;
          carrying = false;
        } else {
          w.planned = spec.schedule.steps_at(epoch, step, spec.micro_batch);
        }
        const int take = static_cast<int>(std::min<std::int64_t>(w.planned - w.micro_batches, per_epoch - i));
        w.parts.push_back({epoch, i, take});
        for (std::int64_t k = i; k < i + take; ++k) w.samples += samples(k);
        w.micro_batches += take;
        i += take;
        if (w.micro_batches < w.planned) {
          if (spec.last_window == LastWindow::carry) {
            open = w;
            carrying = true;
            break;
          }
          if (spec.last_window == LastWindow::drop) w.applied = false;
        }
        if (w.applied) ++step;
        windows.push_back(w);
      }
      steps_by_epoch_end.push_back(step);
    }
    if (carrying) {
      windows.push_back(open);
      steps_by_epoch_end.back() = ++step;
    }
    total_steps = step;
  }

  std::vector<MicroBatchSlot> epoch_slots(int epoch) const {
    std::vector<MicroBatchSlot> slots;
    for (std::size_t w = 0; w < windows.size(); ++w) {
      if (!windows[w].applied) continue;
      int position = 0;
      for (const Part& p : windows[w].parts)
        for (int k = 0; k < p.count; ++k, ++position)
          if (p.epoch == epoch)
            slots.push_back({p.first + k, static_cast<std::int64_t>(w), position, windows[w].micro_batches,
                             windows[w].samples, position + 1 == windows[w].micro_batches});
    }
    return slots;
  }

  std::int64_t steps_after_samples(std::int64_t samples) const {
    std::int64_t seen = 0, steps = 0, last = 1;
    for (const RefWindow& w : windows) {
      if (seen >= samples) break;
      if (!w.applied) continue;
      seen += w.samples;
      last = w.samples;
      ++steps;
    }
    if (seen < samples) steps += (samples - seen + last - 1) / last;
    return steps;
  }
};

bool same_slots(const std::vector<MicroBatchSlot>& a, const std::vector<MicroBatchSlot>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].index != b[i].index || a[i].window != b[i].window || a[i].position != b[i].position ||
        a[i].window_micro_batches != b[i].window_micro_batches || a[i].window_samples != b[i].window_samples ||
        a[i].closes_window != b[i].closes_window)
      return false;
  return true;
}

// Everything the plan answers, against the reference, for one spec.
void check_against_reference(const StepPlan::Spec& spec, const std::string& what) {
  const StepPlan plan{spec};
  const ReferencePlan ref{spec};
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST(plan.total_optimizer_steps() == ref.total_steps);
    std::size_t w = 0;
    for (int e = 0; e < spec.epochs; ++e) {
      const std::vector<MicroBatchSlot> slots = plan.epoch_slots(e);
      BOOST_TEST(same_slots(slots, ref.epoch_slots(e)), "epoch " << e << " slots");
      // A micro-batch's index is its place among those the epoch runs (fit's checkpoints count it so).
      for (std::size_t k = 0; k < slots.size(); ++k) BOOST_TEST(slots[k].index == static_cast<std::int64_t>(k));
      // epoch_run: the same micro-batches window by window, from any place on.
      for (std::int64_t from : {std::int64_t{0}, static_cast<std::int64_t>(slots.size() / 2)}) {
        std::vector<MicroBatchSlot> joined;
        for (const EpochWindow& window : plan.epoch_run(e, from)) {
          BOOST_TEST(!window.micro_batches.empty());
          for (const MicroBatchSlot& slot : window.micro_batches) {
            BOOST_TEST(slot.window == window.micro_batches.front().window);
            if (&slot != &window.micro_batches.back()) BOOST_TEST(!slot.closes_window);  // only a window's last closes it
            joined.push_back(slot);
          }
        }
        BOOST_TEST(same_slots(joined, {slots.begin() + from, slots.end()}), "epoch " << e << " run from " << from);
      }
      for (const Window& got : plan.epoch_windows(e)) {
        BOOST_REQUIRE(w < ref.windows.size());
        const ReferencePlan::RefWindow& want = ref.windows[w];
        BOOST_TEST(got.index == static_cast<std::int64_t>(w));
        BOOST_TEST(got.micro_batches == want.micro_batches);
        BOOST_TEST(got.samples == want.samples);
        BOOST_TEST(got.planned == want.planned);
        BOOST_TEST(got.applied == want.applied);
        BOOST_TEST(got.first_epoch == want.parts.front().epoch);
        BOOST_TEST(got.first == want.parts.front().first);
        BOOST_TEST(got.last_epoch == want.parts.back().epoch);
        ++w;
      }
      BOOST_TEST(plan.steps_after_epochs(e + 1) == ref.steps_by_epoch_end[e]);
      BOOST_TEST(plan.steps_after_epochs(e + 0.5) ==
                 (e ? ref.steps_by_epoch_end[e - 1] : 0) +
                     std::llround(0.5 * static_cast<double>(ref.steps_by_epoch_end[e] - (e ? ref.steps_by_epoch_end[e - 1] : 0))));
    }
    BOOST_TEST(w == ref.windows.size());
    std::int64_t all = 0;
    for (const auto& rw : ref.windows) all += rw.applied ? rw.samples : 0;
    for (std::int64_t samples : {std::int64_t{0}, std::int64_t{1}, all / 3, all / 2, all - 1, all, all + 1, 3 * all + 7})
      if (samples >= 0) BOOST_TEST(plan.steps_after_samples(samples) == ref.steps_after_samples(samples), "samples " << samples);
    int max_planned = 1;
    for (const auto& rw : ref.windows) max_planned = std::max(max_planned, rw.planned);
    BOOST_TEST(plan.max_effective_batch() == max_planned * spec.micro_batch);
  }
}
}  // namespace

BOOST_AUTO_TEST_CASE(end_of_epoch_policies) {
  // 10 samples in micro-batches of 3: sizes 3, 3, 3, 1; windows of 3 micro-batches.
  const StepPlan::Spec base{.dataset_size = 10, .micro_batch = 3, .epochs = 2, .schedule = 3};
  StepPlan::Spec spec = base;
  const StepPlan normalize{spec};
  BOOST_TEST(window_sizes(normalize) == (std::vector<int>{3, 1, 3, 1}), boost::test_tools::per_element());
  BOOST_TEST(normalize.total_optimizer_steps() == 4);
  BOOST_TEST(all_windows(normalize)[1].samples == 1);  // the short window's weight is its real size
  spec.last_window = LastWindow::drop;
  const StepPlan drop{spec};
  BOOST_TEST(window_sizes(drop) == (std::vector<int>{3, -1, 3, -1}), boost::test_tools::per_element());
  BOOST_TEST(drop.total_optimizer_steps() == 2);
  BOOST_TEST(drop.epoch_slots(0).size() == 3u);  // the dropped micro-batch does not run
  spec.last_window = LastWindow::carry;
  const StepPlan carry{spec};
  // 8 micro-batches over two epochs: [3] [1 + 2 across the boundary] [2]; the open one is applied at the end.
  BOOST_TEST(window_sizes(carry) == (std::vector<int>{3, 3, 2}), boost::test_tools::per_element());
  const std::vector<Window> carried = all_windows(carry);
  BOOST_TEST(carried[1].first_epoch == 0);
  BOOST_TEST(carried[1].last_epoch == 1);
  BOOST_TEST(carried[1].samples == 1 + 3 + 3);
  BOOST_TEST(carried[2].samples == 3 + 1);
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

BOOST_AUTO_TEST_CASE(agrees_with_the_plan_that_lists_every_window) {
  // Dataset sizes, micro-batches and accumulation values whose windows end at every place in an
  // epoch, over enough epochs for the carried windows' cycle to come round several times.
  const std::vector<AccumulationSchedule> schedules = {
      1, 3, 4, 7, 25, {{0, 2}, {3, 5}, {9, 3}}, AccumulationSchedule::by_step({{2, 3}, {11, 6}, {40, 2}}),
      AccumulationSchedule::effective_batch(6), [](int e) { return 1 + (e / 4) % 3; }};
  const std::vector<std::pair<std::int64_t, std::int64_t>> sizes = {{10, 3}, {12, 3}, {7, 1}, {30, 6}, {5, 6}};
  int cases = 0;
  for (std::size_t k = 0; k < schedules.size(); ++k)
    for (const auto& [n, b] : sizes)
      for (bool drop_last : {false, true})
        for (LastWindow last : {LastWindow::normalize, LastWindow::drop, LastWindow::carry})
          for (int epochs : {1, 2, 5, 23}) {
            if (drop_last && n < b) continue;
            if (schedules[k].kind() == AccumulationSchedule::Kind::effective_batch && 6 % b != 0) continue;
            check_against_reference({.dataset_size = n, .micro_batch = b, .drop_last = drop_last, .epochs = epochs,
                                     .schedule = schedules[k], .last_window = last},
                                    fmt::format("schedule {} ({}), {} samples in {}, drop_last {}, last window {}, {} epochs",
                                                k, schedules[k].str(), n, b, drop_last, last_window_name(last), epochs));
            ++cases;
          }
  BOOST_TEST_MESSAGE(cases << " plans compared with the reference");
}

BOOST_AUTO_TEST_CASE(a_plan_keeps_the_same_size_for_any_number_of_epochs) {
  constexpr int most = std::numeric_limits<int>::max();
  // The tutorial: 60,000 samples in micro-batches of 64 (938 a epoch, the last of 32), accumulate 4.
  const StepPlan one{{.dataset_size = 60000, .micro_batch = 64, .epochs = 1, .schedule = 4}};
  const StepPlan many{{.dataset_size = 60000, .micro_batch = 64, .epochs = most, .schedule = 4}};
  BOOST_TEST(many.stored_epochs() == one.stored_epochs());
  BOOST_TEST(many.total_optimizer_steps() == std::int64_t{most} * 235);
  BOOST_TEST(same_slots(many.epoch_slots(most - 1), [&] {
    auto slots = one.epoch_slots(0);
    for (auto& s : slots) s.window += std::int64_t{most - 1} * 235;
    return slots;
  }()));
  BOOST_TEST(many.steps_after_epochs(most - 1) == std::int64_t{most - 1} * 235);
  BOOST_TEST(many.steps_after_samples(std::int64_t{60000} * 1000 + 1) == 1000 * 235 + 1);

  // Carried windows: 938 micro-batches a epoch in windows of 7 come round every 7 epochs. Window w
  // holds micro-batches 7w .. 7w + 6 of the run (counted over epochs), the last one applied short.
  const StepPlan carry{{.dataset_size = 60000, .micro_batch = 64, .epochs = most, .schedule = 7,
                        .last_window = LastWindow::carry}};
  BOOST_TEST(carry.stored_epochs() <= 8u);
  const std::int64_t run_batches = std::int64_t{most} * 938;
  BOOST_TEST(carry.total_optimizer_steps() == (run_batches + 6) / 7);
  for (int epoch : {most - 1, most - 2, most / 2, 12345}) {
    const auto slots = carry.epoch_slots(epoch);
    BOOST_REQUIRE(slots.size() == 938u);
    for (const MicroBatchSlot& s : {slots.front(), slots[500], slots.back()}) {
      const std::int64_t g = std::int64_t{epoch} * 938 + s.index;
      BOOST_TEST(s.window == g / 7);
      BOOST_TEST(s.position == g % 7);
      const bool last_window = g / 7 == (run_batches - 1) / 7;
      const std::int64_t held = last_window ? run_batches - g / 7 * 7 : 7;
      BOOST_TEST(s.window_micro_batches == held);
      BOOST_TEST(s.closes_window == (s.position + 1 == held));
    }
  }

  // By optimizer step: 1 per window until step 100, then 3; the cycle starts after the change.
  const StepPlan by_step{{.dataset_size = 100, .micro_batch = 10, .epochs = most,
                          .schedule = AccumulationSchedule::by_step({{100, 3}})}};
  BOOST_TEST(by_step.stored_epochs() <= 14u);
  // Steps 0-99 take the first 10 epochs; then 4 windows (3, 3, 3, 1) an epoch.
  BOOST_TEST(by_step.total_optimizer_steps() == 100 + std::int64_t{most - 10} * 4);

  // A function of the epoch is still called once an epoch, but the plan keeps one entry per change.
  const StepPlan callable{{.dataset_size = 100, .micro_batch = 10, .epochs = 1000000,
                           .schedule = [](int e) { return e < 500000 ? 1 : 5; }}};
  BOOST_TEST(callable.stored_epochs() <= 4u);
  BOOST_TEST(callable.total_optimizer_steps() == 500000 * 10 + 500000 * 2);
}

BOOST_AUTO_TEST_CASE(counts_beyond_64_bits_are_refused_and_huge_batches_counted_right) {
  constexpr std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  // One batch of all 2000 samples: no overflow in the batch count, and no drop_last talk.
  const StepPlan whole{{.dataset_size = 2000, .micro_batch = huge}};
  BOOST_TEST(whole.micro_batches_per_epoch() == 1);
  BOOST_TEST(whole.micro_batch_samples(0) == 2000);
  BOOST_TEST(whole.max_effective_batch() == huge);
  BOOST_CHECK_EXCEPTION(StepPlan({.dataset_size = 2000, .micro_batch = huge, .schedule = 2}), ValueError,
                        message_has({"accumulated 2 times", "64-bit"}));
  BOOST_CHECK_EXCEPTION(StepPlan({.dataset_size = huge / 4, .micro_batch = 1, .epochs = 8}), ValueError,
                        message_has({"8 epochs", "64-bit", "fewer epochs"}));
  BOOST_CHECK_EXCEPTION(StepPlan({.dataset_size = 2000, .micro_batch = 1, .schedule = AccumulationSchedule::effective_batch(huge - huge % 2)}),
                        ValueError, message_has({"more than"}));
  BOOST_CHECK_EXCEPTION(AccumulationSchedule{1 << 30}.scaled(4), ValueError, message_has({"backing off"}));
  const StepPlan plan{{.dataset_size = 100, .micro_batch = 10, .epochs = 4, .schedule = 2}};
  BOOST_CHECK_EXCEPTION(plan.steps_after_epochs(1e30), ValueError, message_has({"64-bit"}));
}
