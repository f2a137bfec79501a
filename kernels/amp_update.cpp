#include "amp_update.hpp"

#include <vector>

#include "cpu/amp_update.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/amp_update.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

bool unscale_and_check(std::span<const Tensor> grads, float inverse_scale) {
  if (grads.empty()) return false;
  const Device device = grads.front().device();
  for (const Tensor& g : grads) {
    expect_tensors("unscale_and_check", device, DType::f32, {&g});
    g.bump_version();
  }
  return dispatch(
      Op::unscale_and_check, device, DType::f32,
      [&] {
        bool found = false;
        for (const Tensor& g : grads) found = cpu::unscale_and_check(g.data<float>(), g.numel(), inverse_scale) || found;
        return found;
      },
      [&](int index) {
        std::vector<float*> pointers;
        std::vector<std::int64_t> sizes;
        for (const Tensor& g : grads) {
          pointers.push_back(ptr<float>(g));
          sizes.push_back(g.numel());
        }
        const Storage flag{sizeof(int), device, MemoryCategory::temporaries};
        return ACCRUE_CUDA(unscale_and_check)(index, pointers, sizes, inverse_scale, static_cast<int*>(flag.data()));
      });
}

bool unscale_and_check(const Tensor& g, float inverse_scale) {
  return unscale_and_check(std::span<const Tensor>(&g, 1), inverse_scale);
}

}  // namespace accrue::kernels
