// The CPU kernels' instruction-set variants: the levels, the refusals, and every level this
// processor runs giving the results of baseline x86-64 (exactly where the arithmetic is the same
// in every variant, to float32 rounding where vector width changes the order of sums). ctest also
// runs the kernel suites once per level (run_at_capability); here the variants meet in one process.

#include "../test_util.hpp"

#include <accrue/kernels/cpu/capability.hpp>
#include <accrue/kernels/cpu/gemm/skinny.hpp>
#include <accrue/kernels/cpu/variant.hpp>

using namespace accrue;
using namespace accrue::kernels::cpu;
using namespace accrue::test;

namespace {

std::vector<Capability> levels_here() {
  std::vector<Capability> levels;
  for (int l = 0; l <= static_cast<int>(supported_capability()); ++l) levels.push_back(static_cast<Capability>(l));
  return levels;
}

// Puts the level back however a test ends.
struct AtLevel {
  explicit AtLevel(Capability level) : before(capability()) { set_capability(level); }
  ~AtLevel() { set_capability(before); }
  Capability before;
};

struct Outputs {
  std::vector<float> exact;    // the same bits at every level
  std::vector<float> rounded;  // sums whose order follows the vector width
};

std::vector<float> values(const Tensor& t) { return ops::cast(t, DType::f32).to_vector<float>(); }

void append(std::vector<float>& to, const std::vector<float>& v) { to.insert(to.end(), v.begin(), v.end()); }

Outputs run_ops() {
  Outputs out;
  const Tensor x = random_tensor({37, 129}, 11, -4.0f, 4.0f), b = random_tensor({129}, 12);
  append(out.exact, values(ops::relu(x)));
  append(out.exact, values(x * b + b));
  for (DType low : {DType::bf16, DType::f16}) append(out.exact, values(ops::cast(x, low)));
  Generator gen{5};
  append(out.exact, values(ops::dropout(x, 0.3f, true, &gen)));
  append(out.exact, Tensor::normal({1001}, 0.5f, 2.0f, &gen).to_vector<float>());
  append(out.rounded, values(ops::softmax(x, 1)));
  append(out.rounded, values(ops::sum(x, 0)));
  append(out.rounded, values(ops::gelu(x)));
  append(out.rounded, values(ops::linear(x, random_tensor({64, 129}, 13), b.narrow(0, 64))));
  return out;
}

// Three epochs of Adam on blobs from the same seed: every kernel of a training step.
std::vector<float> trained_parameters() {
  manual_seed(7);
  Sequential model{layers::Input{6}, layers::Dense{32}, layers::GELU{}, layers::Dropout{0.1f}, layers::LayerNorm{},
                   layers::Dense{4}};
  model.compile(optim::Adam{.lr = 1e-2}.accumulate(2).clip(1.0), losses::CrossEntropy{});
  model.fit(blobs(256, 3), {.epochs = 3, .batch_size = 16, .verbose = 0});
  std::vector<float> all;
  for (const Tensor& p : model.parameters()) append(all, p.to_vector<float>());
  return all;
}

}  // namespace

BOOST_AUTO_TEST_CASE(levels_are_named_and_ordered) {
  BOOST_TEST(capability_name(Capability::baseline) == "baseline");
  BOOST_TEST(capability_name(Capability::avx512_bf16) == "avx512_bf16");
  BOOST_TEST(capability_name(Capability::amx) == "amx");
  BOOST_TEST((capability() <= supported_capability()));
  const BuildInfo info = build_info();
  BOOST_TEST((info.cpu_kernels == capability()));
  BOOST_TEST((info.cpu_supported == supported_capability()));
  BOOST_TEST(info.str().find(std::string{capability_name(capability())}) != std::string::npos);
  BOOST_TEST_MESSAGE("this processor: " << info.cpu_kernels_description);
}

BOOST_AUTO_TEST_CASE(a_level_above_the_processor_is_refused) {
  if (supported_capability() == Capability::amx) {
    BOOST_TEST_MESSAGE("SKIPPED: this processor runs every level, so none is above it");
    return;
  }
  const Capability before = capability();
  BOOST_CHECK_EXCEPTION(set_capability(Capability::amx), ValueError,
                        message_has({"amx", std::string{capability_name(supported_capability())}}));
  BOOST_TEST((capability() == before));
}

BOOST_AUTO_TEST_CASE(the_kernel_choices_follow_the_level) {
  for (Capability level : levels_here()) {
    const AtLevel at{level};
    BOOST_TEST_CONTEXT("level " << capability_name(level)) {
      BOOST_TEST((skinny_kernel() == SkinnyKernel::none) == (level < Capability::avx2));
      BOOST_TEST((skinny_kernel() == SkinnyKernel::avx512) == (level >= Capability::avx512));
      BOOST_TEST((kernels::cpu::variant() == Variant::baseline) == (level < Capability::avx2));
      BOOST_TEST((kernels::cpu::variant() == Variant::avx512) == (level >= Capability::avx512));
    }
  }
}

BOOST_AUTO_TEST_CASE(every_level_computes_what_baseline_computes) {
  const Outputs base = [] {
    const AtLevel at{Capability::baseline};
    return run_ops();
  }();
  for (Capability level : levels_here()) {
    const AtLevel at{level};
    const Outputs got = run_ops();
    BOOST_TEST_CONTEXT("level " << capability_name(level)) {
      BOOST_TEST(got.exact == base.exact, boost::test_tools::per_element());
      check_close(got.rounded, base.rounded, 1e-5, 1e-5);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_level_trains_to_the_same_parameters) {
  const std::vector<float> base = [] {
    const AtLevel at{Capability::baseline};
    return trained_parameters();
  }();
  for (Capability level : levels_here()) {
    const AtLevel at{level};
    BOOST_TEST_CONTEXT("level " << capability_name(level)) { check_close(trained_parameters(), base, 2e-5, 1e-4); }
  }
}
