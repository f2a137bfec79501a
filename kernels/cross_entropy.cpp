#include "cross_entropy.hpp"

#include "cpu/cross_entropy.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/cross_entropy.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

void cross_entropy_forward(const Tensor& logits, const Tensor& labels, float smoothing, std::int64_t ignore,
                           const Tensor& loss, const Tensor& lse) {
  expect_tensors("cross_entropy_forward", logits.device(), DType::f32, {&logits, &loss, &lse});
  expect_tensors("cross_entropy_forward", logits.device(), DType::i32, {&labels});
  const std::int64_t B = logits.size(0), C = logits.size(1);
  ACCRUE_ASSERT(labels.numel() == B && loss.numel() == B && lse.numel() == B);
  return dispatch(
      Op::cross_entropy, logits.device(), logits.dtype(),
      [&] {
        const std::int32_t* y = labels.data<std::int32_t>();
        if (const std::int64_t bad = cpu::first_out_of_range(y, B, C, ignore); bad >= 0)
          throw ValueError(fmt::format("label {} of sample {} in the batch is outside [0, {}): the model has {} outputs",
                                       y[bad], bad, C, C));
        loss.bump_version();
        lse.bump_version();
        return cpu::cross_entropy_forward(logits.data<float>(), y, B, C, smoothing, ignore, loss.data<float>(),
                                          lse.data<float>());
      },
      [&](int index) {
        const int device = index;
        ACCRUE_CHECK(B < std::numeric_limits<int>::max(), "cross_entropy: a batch of {} rows is too large for the GPU kernel", B);
        const Storage flag{sizeof(int), logits.device(), MemoryCategory::temporaries};
        if (const std::int64_t bad =
                ACCRUE_CUDA(first_out_of_range)(device, ptr<std::int32_t>(labels), B, C, static_cast<int*>(flag.data()), ignore);
            bad >= 0)
          throw ValueError(fmt::format("label {} of sample {} in the batch is outside [0, {}): the model has {} outputs",
                                       labels.to(Device::cpu()).to_vector<std::int32_t>()[static_cast<std::size_t>(bad)], bad, C, C));
        loss.bump_version();
        lse.bump_version();
        return ACCRUE_CUDA(cross_entropy_forward)(device, ptr<float>(logits), ptr<std::int32_t>(labels), B, C, smoothing,
                                           ignore, ptr<float>(loss), ptr<float>(lse));
      });
}

void cross_entropy_backward(const Tensor& logits, const Tensor& labels, float smoothing, std::int64_t ignore,
                            const Tensor& lse, const Tensor& g, const Tensor& dlogits, bool accumulate) {
  expect_tensors("cross_entropy_backward", logits.device(), DType::f32, {&logits, &lse, &g, &dlogits});
  expect_tensors("cross_entropy_backward", logits.device(), DType::i32, {&labels});
  const std::int64_t B = logits.size(0), C = logits.size(1);
  ACCRUE_ASSERT(dlogits.numel() == B * C && g.numel() == B);
  dlogits.bump_version();
  return dispatch(
      Op::cross_entropy, logits.device(), logits.dtype(),
      [&] {
        return cpu::cross_entropy_backward(logits.data<float>(), labels.data<std::int32_t>(), B, C, smoothing,
                                           ignore, lse.data<float>(), g.data<float>(), dlogits.data<float>(), accumulate);
      },
      [&](int index) {
        return ACCRUE_CUDA(cross_entropy_backward)(index, ptr<float>(logits), ptr<std::int32_t>(labels), B, C,
                                            smoothing, ignore, ptr<float>(lse), ptr<float>(g), ptr<float>(dlogits), accumulate);
      });
}

}  // namespace accrue::kernels
