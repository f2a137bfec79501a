// The convolutions of the FashionMNIST CNN (examples/05_fashion_mnist_cnn.cpp), forward and forward +
// backward, timed in Accrue in float32 and in bfloat16 (autocast), each in both forms (im2col and a
// GEMM, and the implicit GEMM over the padded image), one sample per thread, and, in the same run,
// in PyTorch with its oneDNN (mkldnn) convolution in both types and with oneDNN switched off (its
// own im2col + OpenBLAS path): the measurement behind Accrue's choice of CPU convolution.
//
//   conv_shapes [--batch-sizes 16,64] [--reps 50] [--python /usr/bin/python3] [--no-pytorch]

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>
#include <accrue/kernels/conv.hpp>
#include <accrue/kernels/cpu/gemm/bf16.hpp>
#include <accrue/kernels/cpu/conv.hpp>
#include <accrue/kernels/cpu/gemm/openblas.hpp>
#include <accrue/kernels/cpu/parallel.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <cstdio>

#include "timing.hpp"

using namespace accrue;

namespace {

struct Conv {
  const char* name;
  std::int64_t C, H, K;  // input channels, height = width, filters; 3x3, padding 1
};
constexpr std::array<Conv, 2> convs = {{{"conv1 1->32 28x28", 1, 28, 32}, {"conv2 32->64 14x14", 32, 14, 64}}};


std::string run_python(const std::string& python, const std::string& args) {
  const std::string cmd = "OMP_WAIT_POLICY=PASSIVE " + python + " " + ACCRUE_BENCH_DIR + "/pytorch_conv.py " + args;
  std::FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {};
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  pclose(p);
  return out;
}

// One table row per type and form for convolution c at batch n, the forms timed alternating round by
// round: float32 and bfloat16 (autocast) each as im2col and a GEMM and as the implicit GEMM, and
// float32 as Winograd, where the processor runs them (`bf16`, `implicit`).
void print_rows(const Conv& c, std::int64_t n, int reps, bool bf16, bool implicit) {
  using kernels::cpu::Conv2dForm;
  Tensor w = Tensor::uniform({c.K, c.C, 3, 3}, -0.1f, 0.1f, nullptr, {.category = MemoryCategory::parameters});
  Tensor b = Tensor::zeros({c.K}, {.category = MemoryCategory::parameters});
  w.set_requires_grad(true);
  b.set_requires_grad(true);
  const double macs = double(n) * c.K * c.H * c.H * c.C * 9;
  const double flop = 2 * macs * (c.C == 1 ? 2 : 3);
  const ops::Conv2dOptions o{.padding = 1};
  // Both forms in float32, then in bfloat16 under autocast as .amp() runs the CNN: the first
  // layer reads the float32 images, the second the bfloat16 output of the layers before it.
  struct Form {
    const char* type;
    const char* name;
    Conv2dForm form;
    std::optional<DType> low;
    bool runs;
  };
  // Winograd takes 16 or more channels: not the first layer's one.
  const std::array<Form, 5> forms = {{{"float32", "im2col + OpenBLAS", Conv2dForm::im2col, std::nullopt, true},
                                      {"float32", "implicit GEMM", Conv2dForm::implicit_gemm, std::nullopt, implicit},
                                      {"float32", "Winograd F(2x2, 3x3)", Conv2dForm::winograd,
                                       std::nullopt, implicit && c.C >= 16},
                                      {"bfloat16", "im2col + bfloat16 GEMM", Conv2dForm::im2col, DType::bf16, bf16},
                                      {"bfloat16", "implicit GEMM (pairs)", Conv2dForm::implicit_gemm, DType::bf16,
                                       bf16 && implicit}}};
  std::vector<std::function<void()>> calls;
  for (const Form& f : forms) {
    if (!f.runs) continue;
    const DType act = f.low.value_or(DType::f32);
    const Tensor x = Tensor::uniform({n, c.C, c.H, c.H}, -1, 1);
    // The first layer needs no input gradient; the second does.
    Tensor xin = c.C == 1 ? x : ops::cast(x, act);
    if (c.C != 1) xin.set_requires_grad(true);
    const Tensor g = ops::cast(Tensor::uniform({n, c.K, c.H, c.H}, -1, 1), act);
    calls.emplace_back([=, form = f.form, low = f.low] {
      kernels::cpu::pin_conv2d_form(form);
      const AutocastGuard autocast{low};
      const NoGradGuard no_grad;
      (void)ops::conv2d(xin, w, b, o);
    });
    calls.emplace_back([=, form = f.form, low = f.low] {
      kernels::cpu::pin_conv2d_form(form);
      const AutocastGuard autocast{low};
      ops::conv2d(xin, w, b, o).backward(g);
    });
  }
  const std::vector<double> seconds = bench::best_seconds_alternating(reps, calls);
  kernels::cpu::pin_conv2d_form(kernels::cpu::Conv2dForm::automatic);
  std::size_t at = 0;
  for (const Form& f : forms) {
    if (!f.runs) {
      fmt::print("| {} | {} | {} | {} | - | - | - |\n", c.name, n, f.type, f.name);
      continue;
    }
    fmt::print("| {} | {} | {} | {} | {:.3f} | {:.3f} | {:.0f} |\n", c.name, n, f.type, f.name, seconds[at] * 1e3,
               seconds[at + 1] * 1e3, flop / seconds[at + 1] / 1e9);
    at += 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The CNN's convolutions: Accrue against PyTorch with and without oneDNN"};
  std::vector<std::int64_t> batches = {16, 64};
  int reps = 50;
  std::string python = "/usr/bin/python3";
  bool no_pytorch = false;
  app.add_option("--batch-sizes", batches, "Batch sizes")->delimiter(',');
  bench::add_comparison_options(app, reps, "Calls per timing round (best of 5 rounds)", python, no_pytorch);
  CLI11_PARSE(app, argc, argv);

  const bool bf16 = kernels::conv2d_runs_bf16(Device::cpu());
  const bool implicit = kernels::cpu::implicit_gemm_available();
  fmt::print("Accrue: {} threads, OpenBLAS {} kernels, bfloat16 kernel: {}. Milliseconds per call (best of 5 rounds "
             "of {}, the forms alternating round by round); fwd+bwd is the layer's backward from a given output "
             "gradient. Each type in both forms: im2col and a GEMM, and the implicit GEMM over the padded image "
             "(AVX-512, or AVX2 with FMA in float32), and in float32 Winograd F(2x2, 3x3) for all three passes (on "
             "the same kernels){}. GFLOP/s count a direct convolution's products.\n",
             kernels::cpu::num_threads(), kernels::cpu::openblas().core,
             kernels::cpu::bf16_kernel_name(kernels::cpu::bf16_kernel()), reps,
             implicit ? "" : ", which this processor lacks");
  fmt::print("| conv | batch | type | form | forward | fwd+bwd | GFLOP/s |\n|---|---|---|---|---|---|---|\n");
  std::string shapes;
  for (const Conv& c : convs) {
    for (std::int64_t n : batches) {
      print_rows(c, n, reps, bf16, implicit);
      shapes += fmt::format(" {}:{}:{}:{}", n, c.C, c.H, c.K);
    }
  }
  if (!no_pytorch) {
    fmt::print("\nPyTorch (2 threads, OMP_WAIT_POLICY=PASSIVE), same shapes:\n{}",
               run_python(python, fmt::format("{}{}", reps, shapes)));
  }
  return 0;
}
