// Mixed precision: the loss scaler's state machine, amp with accumulation and clipping against
// float32, float16 gradients that underflow without scaling, non-finite losses handled by the
// scaler, and activation memory in low precision.

#include "../test_util.hpp"

#include <accrue/kernels/cpu/gemm/bf16.hpp>
#include <accrue/kernels/gemm.hpp>

using namespace accrue;
using namespace accrue::test;

namespace {

Sequential model(std::uint64_t seed) {
  manual_seed(seed);
  return Sequential{layers::Input{6}, layers::Dense{32}, layers::ReLU{}, layers::Dense{32}, layers::GELU{}, layers::Dense{4}};
}

std::vector<std::vector<float>> params_of(const Sequential& m) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : m.parameters()) out.push_back(p.to_vector());
  return out;
}

Tensor param(std::vector<float> v) {
  Tensor p = Tensor::from(v, {static_cast<std::int64_t>(v.size())});
  p.set_requires_grad(true);
  return p;
}

}  // namespace

BOOST_AUTO_TEST_CASE(scaler_defaults_are_pytorchs) {
  const GradScaler s;
  BOOST_TEST(s.scale() == 65536.0);
  BOOST_TEST(s.options().growth_factor == 2.0);
  BOOST_TEST(s.options().backoff_factor == 0.5);
  BOOST_TEST(s.options().growth_interval == 2000);
  BOOST_CHECK_EXCEPTION(GradScaler({.backoff_factor = 1.5}), ValueError, message_has({"backoff_factor"}));
}

BOOST_AUTO_TEST_CASE(scaler_state_machine_with_injected_overflows) {
  GradScaler s{{.init_scale = 1024, .growth_interval = 3}};
  Tensor p = param({1, 2});
  const auto step = [&](float g0) {  // one optimizer step's unscale and update; returns found_inf
    p.set_grad(Tensor::from({g0 * static_cast<float>(s.scale()), 512.0f}, {2}));
    const bool found = s.unscale({p});
    s.update(found);
    return found;
  };
  BOOST_TEST(!step(0.25f));
  BOOST_TEST(p.grad().to_vector()[0] == 0.25f);  // unscaled exactly (the scale is a power of two)
  BOOST_TEST(p.grad().to_vector()[1] == 0.5f);
  BOOST_TEST(!step(0.25f));
  BOOST_TEST(s.growth_tracker() == 2);
  BOOST_TEST(step(std::numeric_limits<float>::infinity()));  // overflow: back off, reset the interval
  BOOST_TEST(s.scale() == 512.0);
  BOOST_TEST(s.growth_tracker() == 0);
  BOOST_TEST(s.skipped_steps() == 1);
  BOOST_TEST(step(std::nanf("")));
  BOOST_TEST(s.scale() == 256.0);
  BOOST_TEST(!step(1.0f));
  BOOST_TEST(!step(1.0f));
  BOOST_TEST(s.scale() == 256.0);  // two clean steps: not yet
  BOOST_TEST(!step(1.0f));
  BOOST_TEST(s.scale() == 512.0);  // the third grows it
  BOOST_TEST(s.growth_tracker() == 0);
  const GradScaler::State state = s.state();
  GradScaler restored;
  restored.load_state(state);
  BOOST_TEST(restored.scale() == 512.0);
  BOOST_TEST(restored.skipped_steps() == 2);
}

BOOST_AUTO_TEST_CASE(amp_with_accumulation_and_clipping_matches_float32) {
  const Dataset data = blobs(96, 1);
  Sequential reference = model(3);
  const auto initial = params_of(reference);
  std::vector<double> norms32;
  reference.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}.accumulate(4).clip(0.5), losses::CrossEntropy{});
  reference.fit(data, {.epochs = 2, .batch_size = 8,
                       .callbacks = {callbacks::Lambda{{.optimizer_step = [&](const StepRecord& r) {
                         norms32.push_back(*r.grad_norm_before);
                       }}}},
                       .shuffle = false, .verbose = 0});
  const auto ref = params_of(reference);
  for (const optim::AmpOptions amp : {optim::AmpOptions{.dtype = DType::bf16}, optim::AmpOptions{.dtype = DType::f16}}) {
    Sequential m = model(3);
    std::vector<StepRecord> steps;
    m.compile(optim::SGD{.lr = 0.1, .momentum = 0.9}.accumulate(4).clip(0.5).amp(amp), losses::CrossEntropy{});
    m.fit(data, {.epochs = 2, .batch_size = 8,
                 .callbacks = {callbacks::Lambda{{.optimizer_step = [&](const StepRecord& r) { steps.push_back(r); }}}},
                 .shuffle = false, .verbose = 0});
    const std::string what = dtype_name(*amp.dtype).data();
    BOOST_REQUIRE(steps.size() == norms32.size());
    for (std::size_t s = 0; s < steps.size(); ++s) {
      BOOST_TEST(steps[s].status == StepRecord::Status::applied);
      // Clipping saw the unscaled, accumulated gradient: the float32 norm to the precision's tolerance
      // (a scaled one would be 65536 times larger).
      BOOST_TEST(*steps[s].grad_norm_before == norms32[s], boost::test_tools::tolerance(0.03));
      if (*amp.dtype == DType::f16) BOOST_TEST(*steps[s].loss_scale == 65536.0);
    }
    // The same updates to the precision's tolerance.
    const auto got = params_of(m);
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      for (std::size_t j = 0; j < got[i].size(); ++j) {
        const double update32 = ref[i][j] - initial[i][j], update = got[i][j] - initial[i][j];
        worst = std::max(worst, std::abs(update - update32));
        largest = std::max(largest, std::abs(update32));
      }
    BOOST_TEST_MESSAGE(what << ": largest update " << largest << ", largest difference from float32 " << worst);
    BOOST_TEST(worst <= 0.05 * largest);
  }
}

BOOST_AUTO_TEST_CASE(float16_gradients_that_underflow_train_with_loss_scaling) {
  // The loss is scaled down by 1e-7 (a stand-in for tiny gradients): the gradients that reach the
  // float16 predictions are 1e-9 to 1e-8, below half of float16's smallest subnormal (6e-8), so they
  // round to zero; times the loss scale 65536 they are normal float16 numbers.
  const Loss tiny = [](const Tensor& p, const Tensor& t) {
    return ops::mean(ops::square(p - t), 1) * 1e-7f;
  };
  Generator gen{5};
  const Tensor x = Tensor::uniform({256, 6}, -1, 1, &gen);
  const Tensor w = Tensor::uniform({6, 2}, -1, 1, &gen);
  const Dataset data{x, ops::matmul(x, w).detach()};
  const auto train = [&](std::optional<optim::AmpOptions> amp) {
    manual_seed(6);
    Sequential m{layers::Input{6}, layers::Dense{2}};
    optim::Recipe recipe = optim::SGD{.lr = 1e6};
    if (amp) recipe = recipe.amp(*amp);
    m.compile(recipe, tiny);
    const History h = m.fit(data, {.epochs = 8, .batch_size = 32, .verbose = 0});
    return h["loss"].back() / h["loss"].front();
  };
  const double f32 = train(std::nullopt);
  const double scaled = train(optim::AmpOptions{.dtype = DType::f16});
  const double unscaled = train(optim::AmpOptions{.dtype = DType::f16, .loss_scaling = false});
  BOOST_TEST_MESSAGE("loss after / before: float32 " << f32 << ", float16 scaled " << scaled << ", float16 unscaled "
                                                    << unscaled);
  BOOST_TEST(f32 < 0.1);
  BOOST_TEST(scaled < 0.1);      // trains as float32 does
  BOOST_TEST(unscaled > 0.9);    // the gradients vanished
}

BOOST_AUTO_TEST_CASE(nonfinite_loss_under_float16_is_the_scalers_business) {
  Dataset data = blobs(64, 7);
  std::vector<float> v = data.inputs().to_vector();
  v[20 * 6] = std::nanf("");
  data = Dataset{Tensor::from(v, {64, 6}), data.targets()};
  Sequential m = model(8);
  m.compile(optim::SGD{.lr = 0.1}.amp(dtype::f16), losses::CrossEntropy{});
  std::vector<StepRecord> steps;
  m.fit(data, {.batch_size = 16,
               .callbacks = {callbacks::Lambda{{.optimizer_step = [&](const StepRecord& r) { steps.push_back(r); }}}},
               .shuffle = false, .verbose = 0});
  BOOST_REQUIRE(steps.size() == 4u);
  BOOST_TEST(steps[1].status == StepRecord::Status::skipped);
  BOOST_TEST(*steps[2].loss_scale == 32768.0);  // backed off after the skipped step
  for (const Tensor& p : m.parameters())
    for (float x : p.to_vector()) BOOST_REQUIRE(std::isfinite(x));
  // In float32 the same data reaches the NaN guard, which raises by default.
  Sequential f = model(8);
  f.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  BOOST_CHECK_EXCEPTION(f.fit(data, {.batch_size = 16, .shuffle = false, .verbose = 0}), NonFiniteError,
                        message_has({"batch 2/4", "nan"}));
}

BOOST_AUTO_TEST_CASE(activations_are_kept_in_low_precision) {
  const auto activation_peak = [](bool amp) {
    manual_seed(9);
    Sequential m{layers::Input{784}, layers::Dense{512}, layers::ReLU{}, layers::Dense{512}, layers::ReLU{},
                 layers::Dense{10}};
    const Tensor x = Tensor::uniform({64, 784}, 0, 1, nullptr, {.category = MemoryCategory::data});
    const Tensor y = Tensor::zeros({64}, {.dtype = DType::i32});
    reset_peak_memory();
    const std::size_t before = memory_stats().live_of(MemoryCategory::activations);
    std::size_t kept = 0;
    {
      const AutocastGuard guard{amp ? std::optional<DType>{DType::bf16} : std::nullopt};
      const Tensor loss = ops::cross_entropy(m(x), y);
      kept = memory_stats().live_of(MemoryCategory::activations) - before;
      loss.backward();
    }
    return kept;
  };
  const std::size_t f32 = activation_peak(false), bf16 = activation_peak(true);
  BOOST_TEST_MESSAGE("activations kept for backward: float32 " << f32 << " bytes, bfloat16 " << bf16);
  BOOST_TEST(bf16 > 0u);
  BOOST_TEST(static_cast<double>(bf16) <= 0.55 * static_cast<double>(f32));
}

BOOST_AUTO_TEST_CASE(amp_recipes_print_compare_and_refuse) {
  BOOST_TEST(optim::SGD{}.amp().str() == "SGD(lr=0.001) amp");
  BOOST_TEST(optim::SGD{}.accumulate(4).amp(dtype::f16).str() == "SGD(lr=0.001) accumulate=4 amp=float16");
  BOOST_TEST(!(optim::SGD{}.amp() == optim::SGD{}.amp(dtype::bf16)));
  BOOST_TEST((optim::SGD{}.amp(false) == optim::Recipe{optim::SGD{}}));
  BOOST_TEST(*optim::SGD{}.amp().amp_dtype(Device::cpu()) == DType::bf16);
  BOOST_TEST(!optim::SGD{}.amp().scales_loss(Device::cpu()));
  BOOST_TEST(optim::SGD{}.amp(dtype::f16).scales_loss(Device::cpu()));
  Sequential m = model(10);
  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}.amp(dtype::i32), losses::CrossEntropy{}), ValueError,
                        message_has({"float16 or bfloat16"}));
  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}.amp({.scaler = {.growth_interval = 0}}), losses::CrossEntropy{}),
                        ValueError, message_has({"growth_interval"}));
}

// fit keeps each weight's bfloat16 pack through an accumulation window (kernels::PackedParameters),
// or on a processor without a bfloat16 kernel its float32 copy rounded to bfloat16. Reusing one
// must change nothing, and it must be remade once the optimizer step writes the weight: three
// micro-batches of forward and backward per window, two windows with an SGD step between, against
// the same without kept packs, bit for bit.
BOOST_AUTO_TEST_CASE(kept_weight_packs_change_nothing_and_are_made_once_per_window) {
  const Tensor w0 = test::random_tensor({48, 40}, 1), b0 = test::random_tensor({48}, 2);
  std::vector<Tensor> xs;
  for (int i = 0; i < 3; ++i) xs.push_back(test::random_tensor({i == 1 ? 3 : 64, 40}, 10 + i));  // both orders of M, N
  const auto run = [&](bool keep) {
    std::optional<kernels::PackedParameters> packs;
    if (keep) packs.emplace();
    const auto parameter = [](const Tensor& value) {
      Tensor p = Tensor::empty(value.shape(), {.category = MemoryCategory::parameters});
      p.copy_(value);
      p.set_requires_grad(true);
      return p;
    };
    Tensor w = parameter(w0), b = parameter(b0);
    auto sgd = optim::SGD{.lr = 0.1}.create({w, b});
    std::vector<std::vector<float>> seen;
    const std::int64_t before = kernels::cpu::parameter_packs_made();
    for (int window = 0; window < 2; ++window) {
      for (const Tensor& x0 : xs) {
        Tensor x = x0.clone().set_requires_grad(true);  // a leaf too, but no parameter: never kept
        Tensor y;
        {
          const AutocastGuard autocast{DType::bf16};
          y = ops::linear(x, w, b);
        }
        ops::sum(ops::mul(y, y)).backward();
        seen.push_back(ops::cast(y, DType::f32).to_vector());
        seen.push_back(x.grad().to_vector());
      }
      seen.push_back(w.grad().to_vector());
      sgd->step();
      sgd->zero_grad();
    }
    seen.push_back(w.to_vector());
    return std::pair{seen, kernels::cpu::parameter_packs_made() - before};
  };
  const auto [kept, kept_packs] = run(true);
  const auto [fresh, fresh_packs] = run(false);
  BOOST_REQUIRE(kept.size() == fresh.size());
  for (std::size_t i = 0; i < kept.size(); ++i) BOOST_TEST(kept[i] == fresh[i], "result " << i << " differs");
  if (kernels::cpu::bf16_kernel() != kernels::cpu::Bf16Kernel::none) {
    // Per micro-batch the weight is packed for forward and for the input's gradient; x of 3 rows
    // against 48 outputs takes the other forward layout (C^T = W x^T), so a window makes 3 packs.
    BOOST_TEST(fresh_packs == 2 * 3 * 2);
    BOOST_TEST(kept_packs == 2 * 3);
  } else {
    // One rounded copy per window serves forward and the input's gradient; none is kept unasked.
    BOOST_TEST(fresh_packs == 0);
    BOOST_TEST(kept_packs == 2);
  }
}

// The banner says how the products of .amp() run: on a processor without a bfloat16 kernel they
// are float32 multiplies of rounded operands, slower than float32, and the user is told so.
BOOST_AUTO_TEST_CASE(the_banner_names_how_low_precision_products_run) {
  Sequential m = model(3);
  m.compile(optim::SGD{.lr = 0.1}.amp(), losses::CrossEntropy{});
  std::FILE* out = std::tmpfile();
  m.fit(blobs(32, 1), {.batch_size = 16,
                       .callbacks = {callbacks::ProgressBar{{.mode = callbacks::ProgressBarOptions::Mode::lines, .stream = out}}},
                       .verbose = 0});
  const std::string text = accrue::test::read_file(out);
  std::fclose(out);
  BOOST_TEST_MESSAGE(text);
  const auto kernel = kernels::cpu::bf16_kernel();
  const std::string products = kernel == kernels::cpu::Bf16Kernel::amx           ? "(products: AMX tiles)"
                               : kernel == kernels::cpu::Bf16Kernel::avx512_bf16 ? "(products: AVX-512 BF16)"
                                                                                 : "(products: float32 on bfloat16-rounded "
                                                                                   "operands: no bfloat16 arithmetic";
  BOOST_TEST(text.find("precision bfloat16 autocast with float32 master weights " + products) != std::string::npos);
  // Without bfloat16 arithmetic the banner says what mixed precision costs here.
  const bool slower = kernel == kernels::cpu::Bf16Kernel::none;
  BOOST_TEST((text.find("saves memory (activations kept in bfloat16) but runs slower than float32") != std::string::npos) ==
             slower);
}
