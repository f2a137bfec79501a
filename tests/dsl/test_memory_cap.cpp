// A memory limit during training: the out-of-memory error names the request, the limit and the
// categories, suggests a micro-batch and accumulation the plan fits, and leaves the model as it
// was before the window; sizes and ACCRUE_MEMORY_LIMIT parse as documented.

#include <cstdlib>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {


// Activations dominate here (unlike the MLP, whose parameters and gradients do), so a smaller
// micro-batch needs less even though accumulating keeps the gradients through the window.
Sequential small_cnn() {
  return Sequential{layers::Input{1, 28, 28}, layers::Conv2d{16, 3, {.padding = 1}}, layers::ReLU{},
                    layers::MaxPool2d{2},     layers::Flatten{},                     layers::Dense{10}};
}


struct LimitGuard {
  explicit LimitGuard(std::size_t bytes) { set_memory_limit(Device::cpu(), bytes); }
  ~LimitGuard() { set_memory_limit(Device::cpu(), 0); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(sizes_parse_with_units) {
  BOOST_TEST(parse_byte_size("1048576") == 1048576u);
  BOOST_TEST(parse_byte_size("512MiB") == 512u << 20);
  BOOST_TEST(parse_byte_size("1.5 GiB") == 3u << 29);
  BOOST_TEST(parse_byte_size("2g") == 2u << 30);
  BOOST_TEST(parse_byte_size("200MB") == 200000000u);
  BOOST_TEST(parse_byte_size("64 KiB") == 65536u);
  BOOST_CHECK_EXCEPTION(parse_byte_size("lots"), ValueError, message_has({"'lots'", "no number"}));
  BOOST_CHECK_EXCEPTION(parse_byte_size("12 parsecs"), ValueError, message_has({"unknown unit 'parsecs'"}));
}

BOOST_AUTO_TEST_CASE(the_environment_variable_names_devices) {
  (void)Tensor::zeros({4});  // the CPU allocator exists (and read the variable) before the test sets it
  ::setenv("ACCRUE_MEMORY_LIMIT", "256MiB", 1);
  BOOST_TEST(env_memory_limit("cpu").value() == 256u << 20);
  ::setenv("ACCRUE_MEMORY_LIMIT", "cpu=1GiB,cuda:1=4GiB", 1);
  BOOST_TEST(env_memory_limit("cpu").value() == 1u << 30);
  BOOST_TEST(!env_memory_limit("cuda:0").has_value());
  BOOST_TEST(env_memory_limit("cuda:1").value() == 4ull << 30);
  ::setenv("ACCRUE_MEMORY_LIMIT", "cuda=2GiB", 1);
  BOOST_TEST(env_memory_limit("cuda:3").value() == 2u << 30);
  BOOST_TEST(!env_memory_limit("cpu").has_value());
  ::setenv("ACCRUE_MEMORY_LIMIT", "cpu:512MiB", 1);
  BOOST_CHECK_EXCEPTION(env_memory_limit("cpu"), ValueError, message_has({"ACCRUE_MEMORY_LIMIT='cpu:512MiB'"}));
  ::setenv("ACCRUE_MEMORY_LIMIT", "gpu=1GiB", 1);
  BOOST_CHECK_EXCEPTION(env_memory_limit("cpu"), ValueError, message_has({"'gpu' names no device"}));
  // A device named twice is refused, not settled by order; a GPU's own entry wins over "cuda".
  ::setenv("ACCRUE_MEMORY_LIMIT", "cpu=1MiB,cpu=2GiB", 1);
  BOOST_CHECK_EXCEPTION(env_memory_limit("cpu"), ValueError, message_has({"cpu is given more than once"}));
  ::setenv("ACCRUE_MEMORY_LIMIT", "cuda:1=4GiB,cuda=2GiB", 1);
  BOOST_TEST(env_memory_limit("cuda:1").value() == 4ull << 30);
  BOOST_TEST(env_memory_limit("cuda:0").value() == 2u << 30);
  ::unsetenv("ACCRUE_MEMORY_LIMIT");
  BOOST_TEST(!env_memory_limit("cpu").has_value());
}

BOOST_AUTO_TEST_CASE(an_out_of_memory_window_advises_and_leaves_the_model_intact) {
  manual_seed(0);
  Sequential model = test::tutorial_mlp();
  model.compile(optim::SGD{.lr = 1e-2, .momentum = 0.9}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const Dataset data = test::random_images(256);
  model.fit(data.take(64), {.batch_size = 64, .verbose = 0});  // the momentum buffers exist from here on
  const std::vector<float> before = model.parameters()[0].to_vector();

  // A limit between what batch 64 needs and what batch 16 needs, beside what is live already.
  const MemoryStats now = memory_stats();
  const std::size_t besides = now.live_total - now.live_of(MemoryCategory::parameters) -
                              now.live_of(MemoryCategory::optimizer_state);
  const std::size_t need64 = model.memory_plan(64).peak_total, need16 = model.memory_plan(16).peak_total;
  BOOST_REQUIRE(need16 < need64);
  {
    const LimitGuard limit{besides + (need16 + need64) / 2};
    try {
      model.fit(data, {.batch_size = 64, .verbose = 0});
      BOOST_FAIL("batch 64 trained under a limit its plan does not fit");
    } catch (const OutOfMemory& e) {
      const std::string m = e.what();
      BOOST_TEST_MESSAGE(m);
      for (const char* part : {"epoch 1/1", "would pass the limit", "parameters", "activations", "accumulate(",
                               "keep the effective batch of 64"})
        BOOST_TEST(m.find(part) != std::string::npos, "the message has '" << part << "'");
    }
    // Nothing of the failed window remains; the weights are those before it.
    for (const Tensor& p : model.parameters()) BOOST_TEST(!p.grad().defined());
    BOOST_TEST(model.parameters()[0].to_vector() == before, boost::test_tools::per_element());
    // The advice works: 16 x 4 trains under the same limit.
    model.compile(optim::SGD{.lr = 1e-2, .momentum = 0.9}.accumulate(4), losses::CrossEntropy{});
    BOOST_CHECK_NO_THROW(model.fit(data, {.batch_size = 16, .verbose = 0}));
  }
}

BOOST_AUTO_TEST_CASE(the_planner_chooses_the_largest_micro_batch_that_fits) {
  manual_seed(0);
  Sequential probe = test::tutorial_mlp();
  probe.compile(optim::SGD{.lr = 1e-2}.effective_batch(64), losses::CrossEntropy{});
  const auto need = [&](std::int64_t m) { return probe.memory_plan(m, m < 64).peak_total; };
  const Dataset data = test::random_images(128);
  // The largest divisor of 64 whose plan fits. Not monotonic: accumulating keeps the gradients
  // through the window, so for this MLP 32 x 2 needs a little more than plain 64.
  const auto choice = [&](std::size_t budget) {
    for (std::int64_t m = 64; m >= 1; --m)
      if (64 % m == 0 && need(m) <= budget) return m;
    return std::int64_t{0};
  };
  std::vector<std::pair<std::size_t, std::int64_t>> cases;
  for (std::size_t budget : {need(64), need(64) - 1, need(16) + 1, need(16) - 1, need(4), need(1)})
    cases.emplace_back(budget, choice(budget));
  BOOST_TEST(cases[0].second == 64);
  BOOST_TEST(cases[1].second < 64);
  BOOST_TEST(cases[3].second < cases[2].second);
  BOOST_TEST(cases[5].second == 1);
  for (const auto& [budget, expected] : cases) {
    manual_seed(0);
    Sequential model = test::tutorial_mlp();
    model.compile(optim::SGD{.lr = 1e-2}.effective_batch(64).memory_budget(budget), losses::CrossEntropy{});
    std::int64_t micro = 0, window = 0;
    auto watch = callbacks::Lambda{{.micro_batch_end = [&](const StepRecord& r, const Logs&) {
      micro = std::max(micro, r.micro_batch_samples);
      window = std::max<std::int64_t>(window, r.window_micro_batches);
    }}};
    // Without timing or recomputation the planner's choice is the largest micro-batch that fits;
    // tests/dsl/test_plan_search.cpp has the rest.
    const History h =
        model.fit(data, {.batch_size = 7, .callbacks = {watch}, .planner = {.timed = 0, .recompute = false}, .verbose = 0});
    BOOST_TEST(micro == expected, "budget " << format_bytes(budget));
    BOOST_TEST(window == 64 / expected);
    BOOST_TEST(h.epochs() == 1);
  }
  Sequential model = test::tutorial_mlp();
  model.compile(optim::SGD{.lr = 1e-2}.effective_batch(64).memory_budget(need(1) - 1), losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(model.fit(data, {.planner = {.recompute = false}, .verbose = 0}), ValueError,
                        message_has({"even a micro-batch of 1", "Memory plan: micro-batch 1"}));
  BOOST_CHECK_EXCEPTION(model.compile(optim::SGD{.lr = 1e-2}.memory_budget(1 << 20), losses::CrossEntropy{}), ValueError,
                        message_has({"add .effective_batch(n)"}));
}

BOOST_AUTO_TEST_CASE(backing_off_ends_where_the_smaller_micro_batch_would) {
  const Dataset data = test::random_images(128);
  // Reference: micro-batches of 16 accumulated 2 from the start, no limit.
  manual_seed(1);
  Sequential reference = small_cnn();
  reference.compile(optim::SGD{.lr = 1e-2, .momentum = 0.9}.accumulate(2), losses::CrossEntropy{}, {metrics::Accuracy{}});
  const History expected = reference.fit(data, {.epochs = 2, .batch_size = 16, .seed = 5, .verbose = 0});
  const std::size_t need16 = reference.memory_plan(16).peak_total;

  manual_seed(1);
  Sequential model = small_cnn();
  model.compile(optim::SGD{.lr = 1e-2, .momentum = 0.9}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const std::size_t need32 = model.memory_plan(32).peak_total;
  BOOST_REQUIRE(need16 < need32);
  std::vector<std::string> warnings;
  log::set_sink([&](log::Level level, std::string_view line) {
    if (level == log::Level::warning) warnings.emplace_back(line);
  });
  History got;
  Trainer trainer{{.epochs = 2, .batch_size = 32, .seed = 5, .verbose = 0, .backoff_on_oom = true}};
  {
    // What is live besides this model (the reference model, the data), plus halfway between the plans.
    const std::size_t besides = memory_stats().live_total - model.memory_plan(1).peak_of(MemoryCategory::parameters);
    const LimitGuard limit{besides + (need16 + need32) / 2};
    got = trainer.fit(model, data);
  }
  // The back-off belongs to that run: the options given stay as they were.
  BOOST_TEST(trainer.options().batch_size == 32);
  BOOST_TEST(trainer.plan(model, data.size()).spec().micro_batch == 32);
  log::set_sink({});
  for (const auto& w : warnings) BOOST_TEST_MESSAGE("warning: " << w);
  BOOST_REQUIRE_MESSAGE(warnings.size() == 1u, "one back-off, logged once; got " << warnings.size() << " warnings");
  BOOST_TEST_MESSAGE(warnings[0]);
  BOOST_TEST(warnings[0].find("backing off to micro-batches of 16 accumulated 2") != std::string::npos);
  const auto a = model.named_parameters(), b = reference.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) test::check_close(a[i].second, b[i].second, 1e-6, 1e-5, a[i].first);
  for (std::size_t e = 0; e < 2; ++e) {
    BOOST_TEST(got.logs()[e].at("loss") == expected.logs()[e].at("loss"), boost::test_tools::tolerance(1e-6));
    BOOST_TEST(got.logs()[e].at("accuracy") == expected.logs()[e].at("accuracy"));
  }
}

// Without a limit, the machine's own memory bounds a run: the kernel overcommits, so memory that
// is handed out and then filled ends the process (the out-of-memory killer) instead of raising.
BOOST_AUTO_TEST_CASE(a_plan_past_the_machines_memory_is_refused_before_anything_is_filled) {
  const std::optional<std::size_t> available = available_system_memory();
  if (!available) {
    BOOST_TEST_MESSAGE("SKIPPED: the machine's available memory cannot be read (no /proc/meminfo)");
    return;
  }
  const std::size_t live = memory_stats().live_total;
  // One tensor larger than what is available: refused, naming what is.
  try {
    const Tensor t = Tensor::empty({static_cast<std::int64_t>(*available / 4 + (16 << 20))});
    BOOST_FAIL("a tensor larger than the machine's available memory was allocated");
  } catch (const OutOfMemory& e) {
    BOOST_TEST(message_has({"the machine has", "available"})(e));
  }
  // A convolution of small weights whose activations at micro-batch 8 need about twice what the
  // machine has: fit refuses with the plan before its first window.
  const std::int64_t bytes_per_filter = 8 * 256 * 256 * 4;
  const auto filters = static_cast<std::int64_t>(2 * *available / static_cast<std::size_t>(bytes_per_filter)) + 1;
  Sequential model{layers::Input{1, 256, 256}, layers::Conv2d{filters, 3, {.padding = 1}}, layers::ReLU{},
                   layers::GlobalAvgPool2d{}, layers::Dense{2}};
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  const Dataset data{Tensor::uniform({8, 1, 256, 256}, 0, 1), Tensor::from(std::vector<std::int32_t>(8, 1), {8}), "big"};
  try {
    model.fit(data, {.batch_size = 8, .verbose = 0});
    BOOST_FAIL("a run past the machine's memory started");
  } catch (const OutOfMemory& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(message_has({"model.memory_plan(8) peaks at", "but this machine has", "activations"})(e));
  }
  BOOST_TEST(memory_stats().peak_total < live + (256u << 20));
}
