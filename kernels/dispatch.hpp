#pragma once
// How every kernels/<op>.cpp runs an op on the backend of its tensors' device (dispatch), what
// each backend runs (supports), and the helpers their bodies share. Each op's CPU body is declared
// in kernels/cpu/<op>.hpp, its CUDA body in kernels/cuda/<op>.hpp; both headers compile in every
// build, and only dispatch knows whether this one has the CUDA backend.

#include <span>
#include <string_view>

#include <accrue/config.hpp>
#include "../framework/core/tensor.hpp"

namespace accrue::kernels {

/// The ops of the kernel layer, by the names supports() and the dispatch's errors use.
enum class Op {
  unary,           // unary_forward, unary_backward
  unary_in_place,  // over many tensors (clipping)
  binary,          // binary_forward, binary_backward
  fill,
  copy,            // copy and transfer
  add_into,
  random_fill,     // fill_uniform, fill_normal
  cast,
  dropout,
  sum_dim,
  expand_dim,
  sum_to_shape,
  sum_of_squares,  // over many tensors (the global norm)
  argmax_rows,
  softmax,
  cross_entropy,
  gemm,
  conv2d,
  pool2d,
  group_norm,
  batch_norm,
  sgd_update,
  adam_update,
  rmsprop_update,
  adagrad_update,
  lion_update,
  lars_update,
  lamb_moments,
  average_update,  // the parameters' moving average (EMA, SWA)
  unscale_and_check,
  permute,
  gather_rows,
  scatter_add_rows,
  copy_columns,    // concatenation and slicing
  masked_softmax,  // attention's scaled, causal or masked softmax
  attention,       // fused scaled dot-product attention
};

/// "conv2d", "softmax", ...
std::string_view op_name(Op op);
/// Every Op, in order.
std::span<const Op> all_ops();

/// Whether this build runs `op` on devices of `kind` for tensors of `dtype` (the dtype of the op's
/// data: its input, or its output where it has none; gemm's compute type). Needs no device.
bool supports(Op op, DeviceKind kind, DType dtype);
inline bool supports(Op op, Device device, DType dtype) { return supports(op, device.kind(), dtype); }

/// Throws NotSupported naming the op, the device and the dtype, and why: no CUDA backend in this
/// build, or no body for that combination.
[[noreturn]] void unsupported(Op op, Device device, DType dtype);

/// Runs `op`: `cpu()` on the CPU, `cuda(device_index)` on a GPU; a combination supports() denies
/// throws NotSupported. The only place a kernel's choice of backend is written. In a build without
/// the CUDA backend `cuda` is never called, so its body's calls need no definition.
template <class Cpu, class Cuda>
decltype(auto) dispatch(Op op, Device device, DType dtype, Cpu&& cpu, Cuda&& cuda) {
  if (!supports(op, device, dtype)) unsupported(op, device, dtype);
  if constexpr (ACCRUE_WITH_CUDA != 0) {
    if (device.is_cuda()) return cuda(device.index());
  }
  return cpu();
}

/// t's elements in its device memory: the kernels' view (Tensor::data<T>() is the host's, and
/// refuses GPU tensors).
template <class T>
T* ptr(const Tensor& t) {
  return t.device_data<T>();
}

/// For optional tensors (a bias, a norm's scale): the host data, or nullptr when undefined.
inline float* host_data_or_null(const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; }
/// The same in device memory: ptr<float>(t), or nullptr when undefined.
inline float* ptr_or_null(const Tensor& t) { return t.defined() ? ptr<float>(t) : nullptr; }

/// Internal precondition of a kernel: all tensors defined, on `device`, of `dtype`.
void expect_tensors(std::string_view kernel, Device device, DType dtype, std::initializer_list<const Tensor*> tensors);

}  // namespace accrue::kernels
