// RunCallbacks (dsl/fit/run_callbacks.hpp), the callbacks of a run: the progress bar and the
// explanations on the process that speaks only, before the user's, and the gradient norm tracked
// when the options or a callback ask for it.

#include <accrue/dsl/fit/run_callbacks.hpp>

#include "../test_util.hpp"

using namespace accrue;
using accrue::detail::RunCallbacks;

namespace {

// A callback that needs the gradient's norm (as GradientNormLogger-like callbacks do).
struct WantsNorm : Callback {
  bool needs_grad_norm() const override { return true; }
};

std::vector<Callback*> listed(const RunCallbacks& run) { return {run.begin(), run.end()}; }

}  // namespace

BOOST_AUTO_TEST_CASE(fits_own_callbacks_come_first_on_the_process_that_speaks) {
  callbacks::Lambda mine{{}};
  const FitOptions options{.callbacks = {mine}, .verbose = 1, .explain = 3};
  const RunCallbacks speaking{options, true};
  const std::vector<Callback*> all = listed(speaking);
  BOOST_REQUIRE(all.size() == 3u);
  BOOST_TEST(dynamic_cast<callbacks::ProgressBar*>(all[0]) != nullptr);
  BOOST_TEST(dynamic_cast<callbacks::Explain*>(all[1]) != nullptr);
  BOOST_TEST(all[2] == &mine);  // the user's own object, not a copy
  const RunCallbacks silent{options, false};
  BOOST_TEST(listed(silent) == std::vector<Callback*>{&mine}, boost::test_tools::per_element());
  const RunCallbacks quiet{FitOptions{.callbacks = {mine}, .verbose = 0}, true};
  BOOST_TEST(listed(quiet).size() == 1u);
}

BOOST_AUTO_TEST_CASE(the_norm_is_tracked_when_asked_for) {
  BOOST_TEST(!RunCallbacks(FitOptions{.verbose = 0}, true).track_grad_norm());
  BOOST_TEST(RunCallbacks(FitOptions{.verbose = 0, .track_grad_norm = true}, true).track_grad_norm());
  WantsNorm wants;
  BOOST_TEST(RunCallbacks(FitOptions{.callbacks = {wants}, .verbose = 0}, false).track_grad_norm());
}
