#include "attention.hpp"

#include "../framework/core/storage.hpp"
#include "cpu/attention.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/attention.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {
namespace {

void expect_inputs(std::string_view kernel, const AttentionInputs& in, Device device) {
  expect_tensors(kernel, device, DType::f32, {&in.q, &in.k, &in.v});
  if (in.mask.defined()) expect_tensors(kernel, device, DType::f32, {&in.mask});
  if (in.padding.defined()) expect_tensors(kernel, device, DType::i32, {&in.padding});
}

const std::int32_t* padding_ptr(const AttentionInputs& in) {
  return in.padding.defined() ? in.padding.device_data<std::int32_t>() : nullptr;
}

}  // namespace

std::size_t attention_scratch_bytes(Device device, const common::AttentionGeometry& g, bool backward) {
  const std::int64_t buffers = !backward ? 1 : g.dropout > 0.0f ? 3 : 2;
  const std::int64_t heads = device.is_cpu() ? cpu::attention_threads(g) : g.heads_total();
  return static_cast<std::size_t>(buffers * heads * g.scores_per_head()) * sizeof(float);
}

void attention_forward(const AttentionInputs& in, const Tensor& out, const common::AttentionGeometry& g) {
  expect_inputs("attention_forward", in, out.device());
  expect_tensors("attention_forward", out.device(), DType::f32, {&out});
  ACCRUE_ASSERT(in.q.numel() == g.heads_total() * g.T_q * g.d && in.k.numel() == g.heads_total() * g.T_k * g.d);
  ACCRUE_ASSERT(in.v.numel() == g.heads_total() * g.T_k * g.d_v && out.numel() == g.heads_total() * g.T_q * g.d_v);
  out.bump_version();
  if (out.numel() == 0) return;
  const Storage scratch{attention_scratch_bytes(out.device(), g, false), out.device(), MemoryCategory::temporaries};
  return dispatch(
      Op::attention, out.device(), DType::f32,
      [&] {
        cpu::attention_forward(g, in.q.data<float>(), in.k.data<float>(), in.v.data<float>(),
                               host_data_or_null(in.mask), padding_ptr(in), out.data<float>(),
                               static_cast<float*>(scratch.data()));
      },
      [&](int device) {
        ACCRUE_CUDA(attention_forward)(device, g, ptr<float>(in.q), ptr<float>(in.k), ptr<float>(in.v), ptr_or_null(in.mask),
                                padding_ptr(in), ptr<float>(out), static_cast<float*>(scratch.data()));
      });
}

void attention_backward(const AttentionInputs& in, const Tensor& dout, const AttentionGradients& grads,
                        const common::AttentionGeometry& g) {
  expect_inputs("attention_backward", in, dout.device());
  expect_tensors("attention_backward", dout.device(), DType::f32, {&dout});
  for (const Tensor* t : {&grads.dq, &grads.dk, &grads.dv})
    if (t->defined()) {
      expect_tensors("attention_backward", dout.device(), DType::f32, {t});
      t->bump_version();
    }
  ACCRUE_ASSERT(dout.numel() == g.heads_total() * g.T_q * g.d_v);
  if (g.heads_total() == 0 || g.T_q == 0 || g.T_k == 0) return;
  const Storage scratch{attention_scratch_bytes(dout.device(), g, true), dout.device(), MemoryCategory::temporaries};
  float* s = static_cast<float*>(scratch.data());
  return dispatch(
      Op::attention, dout.device(), DType::f32,
      [&] {
        cpu::attention_backward(g, in.q.data<float>(), in.k.data<float>(), in.v.data<float>(),
                                host_data_or_null(in.mask), padding_ptr(in), dout.data<float>(),
                                host_data_or_null(grads.dq), host_data_or_null(grads.dk), host_data_or_null(grads.dv),
                                grads.accumulate_q, grads.accumulate_k, grads.accumulate_v, s);
      },
      [&](int device) {
        ACCRUE_CUDA(attention_backward)(device, g, ptr<float>(in.q), ptr<float>(in.k), ptr<float>(in.v), ptr_or_null(in.mask),
                                 padding_ptr(in), ptr<float>(dout), ptr_or_null(grads.dq), ptr_or_null(grads.dk),
                                 ptr_or_null(grads.dv), grads.accumulate_q, grads.accumulate_k, grads.accumulate_v, s);
      });
}

}  // namespace accrue::kernels
