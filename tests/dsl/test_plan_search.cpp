// The memory planner under a budget (dsl/fit/plan_search.cpp): it considers every micro-batch
// dividing the effective batch with and without recomputation, keeps what the plan fits, times the
// most promising few and trains with the fastest. Its choice fits the budget, holds the effective
// batch, trains bit for bit as the same configuration set by hand (its timing passes leave the
// model as they found it) and to float32 rounding as the plain effective batch; a memory limit with
// an effective batch is a budget; an impossible budget is refused with the smallest plan.

#include <cmath>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

constexpr std::int64_t effective = 64;

// Activations dominate (28 x 28 feature maps over few parameters), in three Residual blocks the
// planner can recompute; `stochastic` adds dropout and BatchNorm, whose draws and statistics the timing
// passes must leave as they were.
Sequential net(bool stochastic) {
  manual_seed(31);
  const layers::Conv2dOptions same{.padding = 1};
  Sequential m{layers::Input{1, 28, 28}, layers::Conv2d{8, 3, same}};
  if (stochastic) m.add(layers::BatchNorm2d{});
  for (int i = 0; i < 3; ++i) {
    if (stochastic)
      m.add(layers::Residual{layers::Conv2d{8, 3, same}, layers::ReLU{}, layers::Dropout{0.2f}, layers::Conv2d{8, 3, same},
                             layers::Tanh{}});
    else
      m.add(layers::Residual{layers::Conv2d{8, 3, same}, layers::ReLU{}, layers::Conv2d{8, 3, same}, layers::Tanh{}});
  }
  m.add(layers::MaxPool2d{2});
  m.add(layers::Flatten{});
  m.add(layers::Dense{10});
  return m;
}

optim::Recipe adamw() { return optim::Recipe{optim::AdamW{.lr = 1e-3}}.effective_batch(effective); }

// The plain configuration's plan: the whole effective batch at once, nothing recomputed.
std::size_t plain_peak(bool stochastic) {
  Sequential probe = net(stochastic);
  probe.compile(adamw(), losses::CrossEntropy{});
  return probe.memory_plan(effective, false, true).peak_total;
}

std::vector<std::vector<float>> state_values(const Sequential& m) {
  std::vector<std::vector<float>> out;
  for (const auto& [name, t] : m.named_state()) out.push_back(t.to_vector<float>());
  return out;
}

// What a planned run chose and did.
struct PlannedRun {
  PlanChoice choice;
  std::string banner;
  std::int64_t micro_batch = 0, window = 0;
  std::size_t measured_peak = 0;
  std::vector<std::vector<float>> state;
};

PlannedRun fit_planned(bool stochastic, std::size_t budget, FitOptions options = {}) {
  Sequential model = net(stochastic);
  model.compile(adamw().memory_budget(budget), losses::CrossEntropy{});
  PlannedRun out;
  options.callbacks.push_back(callbacks::Lambda{{
      .train_begin =
          [&](TrainingContext& c) {
            BOOST_REQUIRE(c.memory_choice != nullptr);
            out.choice = *c.memory_choice;
            out.banner = callbacks::training_banner(c);
          },
      .micro_batch_end =
          [&](const StepRecord& r, const Logs&) {
            out.micro_batch = std::max(out.micro_batch, r.micro_batch_samples);
            out.window = std::max<std::int64_t>(out.window, r.window_micro_batches);
          },
  }});
  options.epochs = 2;
  options.seed = 4;
  options.verbose = 0;
  const History h = model.fit(test::random_images(256, 9), options);
  out.measured_peak = h.memory().back().peak_total;
  out.state = state_values(model);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_choice_fits_the_budget_holds_the_effective_batch_and_trains_as_set_by_hand) {
  const std::size_t budget = plain_peak(true) / 2;
  const PlannedRun planned = fit_planned(true, budget);
  const PlanCandidate& c = planned.choice.choice();
  BOOST_TEST_MESSAGE("budget " << format_bytes(budget) << "\n" << planned.choice.str());
  BOOST_TEST(c.fits);
  BOOST_TEST(c.planned_peak <= budget);
  BOOST_TEST(c.micro_batch * c.accumulation == effective);
  BOOST_TEST(c.seconds_per_sample.has_value());
  BOOST_TEST(planned.micro_batch == c.micro_batch);
  BOOST_TEST(planned.window == c.accumulation);
  // The plan is within its 10% of the measured peak, so the run stays near the budget.
  BOOST_TEST(static_cast<double>(planned.measured_peak) <= 1.1 * static_cast<double>(budget),
             format_bytes(planned.measured_peak) << " measured");
  // Half the plain peak leaves out the whole effective batch at once: the plain 64 is over budget,
  // and recomputation is among the candidates that fit.
  std::size_t timed = 0;
  bool recomputed_fits = false;
  for (const PlanCandidate& k : planned.choice.candidates) {
    BOOST_TEST(k.fits == (k.planned_peak <= budget));
    timed += k.seconds_per_sample ? 1 : 0;
    recomputed_fits = recomputed_fits || (k.fits && k.recompute.mode != RecomputePolicy::Mode::none);
    if (k.micro_batch == effective && k.recompute.mode == RecomputePolicy::Mode::none) BOOST_TEST(!k.fits);
  }
  BOOST_TEST(timed >= 2u);
  BOOST_TEST(timed <= 8u);
  BOOST_TEST(recomputed_fits);
  // Timed: every micro-batch that fits without recomputation, and recomputation only where it fits
  // a larger one (the same micro-batch recomputed does more work).
  std::int64_t plain_largest = 0;
  for (const PlanCandidate& k : planned.choice.candidates)
    if (k.fits && k.recompute.str() == "none") plain_largest = std::max(plain_largest, k.micro_batch);
  for (const PlanCandidate& k : planned.choice.candidates) {
    if (k.fits && k.recompute.str() == "none") BOOST_TEST(k.seconds_per_sample.has_value(), k.micro_batch);
    if (k.recompute.str() != "none" && k.micro_batch <= plain_largest) BOOST_TEST(!k.seconds_per_sample.has_value());
  }

  // The same configuration set by hand trains bit for bit alike: the timing passes left the
  // parameters, BatchNorm's statistics, the gradients and dropout's generator as they were.
  Sequential by_hand = net(true);
  by_hand.compile(adamw(), losses::CrossEntropy{});
  by_hand.fit(test::random_images(256, 9),
              {.epochs = 2, .batch_size = c.micro_batch, .recompute = c.recompute, .seed = 4, .verbose = 0});
  BOOST_TEST((state_values(by_hand) == planned.state));
}

BOOST_AUTO_TEST_CASE(the_choice_trains_as_the_plain_effective_batch_to_float32_rounding) {
  const std::size_t budget = plain_peak(false) / 2;
  const PlannedRun planned = fit_planned(false, budget);
  BOOST_TEST_MESSAGE(planned.choice.str());
  BOOST_TEST(planned.choice.choice().micro_batch < effective);
  Sequential plain = net(false);
  plain.compile(adamw(), losses::CrossEntropy{});
  plain.fit(test::random_images(256, 9), {.epochs = 2, .batch_size = effective, .seed = 4, .verbose = 0});
  const auto expected = state_values(plain);
  BOOST_REQUIRE(expected.size() == planned.state.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i)
    for (std::size_t j = 0; j < expected[i].size(); ++j)
      worst = std::max(worst, std::abs(double{expected[i][j]} - planned.state[i][j]) /
                                  std::max(1e-3, std::abs(double{expected[i][j]})));
  BOOST_TEST_MESSAGE("largest relative difference to the plain run " << worst);
  BOOST_TEST(worst < 1e-4);
}

BOOST_AUTO_TEST_CASE(without_timing_the_largest_micro_batch_with_the_least_recomputation) {
  const std::size_t budget = plain_peak(false) / 2;
  const PlannedRun planned = fit_planned(false, budget, {.planner = {.timed = 0}});
  const PlanChoice& p = planned.choice;
  std::int64_t largest = 0;
  for (const PlanCandidate& k : p.candidates) {
    BOOST_TEST(!k.seconds_per_sample.has_value());
    if (k.fits) largest = std::max(largest, k.micro_batch);
  }
  BOOST_TEST(p.choice().micro_batch == largest);
  for (const PlanCandidate& k : p.candidates)
    if (k.fits && k.micro_batch == largest && k.recompute.mode == RecomputePolicy::Mode::none)
      BOOST_TEST(p.choice().recompute.str() == "none");
  BOOST_TEST(p.reason.find("PlannerOptions::timed = 0") != std::string::npos);

  // recompute fixed by the options: the only policy considered.
  const PlannedRun fixed = fit_planned(false, budget, {.recompute = RecomputePolicy::every(1)});
  for (const PlanCandidate& k : fixed.choice.candidates) BOOST_TEST(k.recompute.str() == "every 1 layers");
}

BOOST_AUTO_TEST_CASE(the_banner_and_the_report_show_the_candidates) {
  const test::TempDir dir{"plan_search_report"};
  const std::string page = dir.file("run.html");
  const PlannedRun planned =
      fit_planned(false, plain_peak(false) / 2, {.callbacks = {callbacks::Report{page}}});
  for (const char* part : {"memory planner: memory_budget(", "for the effective batch of 64", "micro-batch",
                           "planned peak", "seconds/sample", "->", "over budget", "the fastest of"})
    BOOST_TEST(planned.banner.find(part) != std::string::npos, "banner lacks '" << part << "':\n" << planned.banner);
  const std::string lines = test::read_file(dir.file("run.jsonl"));
  for (const char* part : {"\"planner\":", "\"candidates\":", "\"seconds_per_sample\":", "\"recompute\":\"Residual layers\""})
    BOOST_TEST(lines.find(part) != std::string::npos, "run.jsonl lacks " << part);
}

BOOST_AUTO_TEST_CASE(a_memory_limit_with_an_effective_batch_is_the_budget) {
  const std::size_t limit = plain_peak(false) / 2;
  const Dataset data = test::random_images(256, 9);  // in memory, and so live besides the model
  set_memory_limit(Device::cpu(), limit + memory_stats(Device::cpu()).live_total);
  struct Reset {
    ~Reset() { set_memory_limit(Device::cpu(), 0); }
  } reset;
  Sequential model = net(false);
  model.compile(adamw(), losses::CrossEntropy{});
  std::string banner;
  std::int64_t micro = 0;
  model.fit(data, {.batch_size = effective,
                   .callbacks = {callbacks::Lambda{{.train_begin = [&](TrainingContext& c) { banner = callbacks::training_banner(c); },
                                                    .micro_batch_end = [&](const StepRecord& r, const Logs&) {
                                                      micro = std::max(micro, r.micro_batch_samples);
                                                    }}}},
                   .verbose = 0});
  BOOST_TEST(banner.find("memory planner: the memory limit of") != std::string::npos, banner);
  BOOST_TEST(micro < effective);
}

BOOST_AUTO_TEST_CASE(an_impossible_budget_is_refused_with_the_smallest_plan) {
  Sequential model = net(false);
  model.compile(adamw().memory_budget(64 << 10), losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(model.fit(test::random_images(256, 9), {.verbose = 0}), ValueError,
                        message_has({"memory_budget(64.00 KiB): even a micro-batch of 1 is planned to need more",
                                     "the smallest plan (micro-batch 1, recomputing", "Memory plan: micro-batch 1"}));
  BOOST_TEST(model.recomputed_segments().empty());
}
