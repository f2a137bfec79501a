#include "accrue/kernels/amp_update.hpp"

#include "accrue/kernels/dispatch.hpp"

namespace accrue::kernels {

bool unscale_and_check(const Tensor& g, float inverse_scale) {
  expect_tensors("unscale_and_check", g.device(), DType::f32, {&g});
  g.bump_version();
  if (g.device().is_cpu()) return cpu::unscale_and_check(g.data<float>(), g.numel(), inverse_scale);
  unsupported_device("unscale_and_check", g.device());
}

}  // namespace accrue::kernels
