#include "dispatch.hpp"

#include <array>

namespace accrue::kernels {

namespace {

// The dtypes each backend takes for an op, as a bit per DType.
using DTypes = unsigned;
constexpr DTypes bit(DType t) { return 1u << static_cast<unsigned>(t); }
constexpr DTypes f32 = bit(DType::f32);
constexpr DTypes f32_bf16 = bit(DType::f32) | bit(DType::bf16);
constexpr DTypes floating = bit(DType::f32) | bit(DType::f16) | bit(DType::bf16);
constexpr DTypes any = floating | bit(DType::i32);

struct OpSupport {
  Op op;
  std::string_view name;
  DTypes cpu, cuda;
};

// One row per Op, in its order.
constexpr std::array<OpSupport, 36> table{{
    {Op::unary, "unary", floating, floating},
    {Op::unary_in_place, "unary_in_place", f32, f32},
    {Op::binary, "binary", f32, f32},
    {Op::fill, "fill", f32, f32},
    {Op::copy, "copy", any, any},
    {Op::add_into, "add_into", floating, floating},
    {Op::random_fill, "random_fill", f32, f32},
    {Op::cast, "cast", floating, floating},
    {Op::dropout, "dropout", floating, floating},
    {Op::sum_dim, "sum_dim", floating, floating},
    {Op::expand_dim, "expand_dim", f32, f32},
    {Op::sum_to_shape, "sum_to_shape", f32, f32},
    {Op::sum_of_squares, "sum_of_squares", f32, f32},
    {Op::argmax_rows, "argmax_rows", f32, f32},
    {Op::softmax, "softmax", f32, f32},
    {Op::cross_entropy, "cross_entropy", f32, f32},
    {Op::gemm, "gemm", floating, floating},
    {Op::conv2d, "conv2d", f32_bf16, f32},  // bfloat16 needs AMX or AVX-512 BF16 (conv2d_runs_bf16)
    {Op::pool2d, "pool2d", f32_bf16, f32},
    {Op::group_norm, "group_norm", f32, f32},
    {Op::batch_norm, "batch_norm", f32, f32},
    {Op::sgd_update, "sgd_update", f32, f32},
    {Op::adam_update, "adam_update", f32, f32},
    {Op::rmsprop_update, "rmsprop_update", f32, f32},
    {Op::adagrad_update, "adagrad_update", f32, f32},
    {Op::lion_update, "lion_update", f32, f32},
    {Op::lars_update, "lars_update", f32, f32},
    {Op::lamb_moments, "lamb_moments", f32, f32},
    {Op::average_update, "average_update", f32, f32},
    {Op::unscale_and_check, "unscale_and_check", f32, f32},
    {Op::permute, "permute", any, any},
    {Op::gather_rows, "gather_rows", floating, floating},
    {Op::scatter_add_rows, "scatter_add_rows", f32, f32},
    {Op::copy_columns, "copy_columns", any, any},
    {Op::masked_softmax, "masked_softmax", f32, f32},
    {Op::attention, "attention", f32, f32},
}};

constexpr bool in_order() {
  for (std::size_t i = 0; i < table.size(); ++i)
    if (static_cast<std::size_t>(table[i].op) != i) return false;
  return true;
}
static_assert(in_order(), "the support table lists every Op once, in the enum's order");

const OpSupport& row(Op op) { return table[static_cast<std::size_t>(op)]; }

constexpr std::array<Op, table.size()> ops_in_order() {
  std::array<Op, table.size()> ops{};
  for (std::size_t i = 0; i < table.size(); ++i) ops[i] = table[i].op;
  return ops;
}

}  // namespace

std::string_view op_name(Op op) { return row(op).name; }

std::span<const Op> all_ops() {
  static constexpr std::array<Op, table.size()> ops = ops_in_order();
  return ops;
}

bool supports(Op op, DeviceKind kind, DType dtype) {
  if (kind == DeviceKind::cuda && !ACCRUE_WITH_CUDA) return false;
  const DTypes dtypes = kind == DeviceKind::cpu ? row(op).cpu : row(op).cuda;
  return (dtypes & bit(dtype)) != 0;
}

void unsupported(Op op, Device device, DType dtype) {
  if (device.is_cuda() && !ACCRUE_WITH_CUDA)
    throw NotSupported(fmt::format("op {} was asked to run on {}, but this build has no CUDA backend", op_name(op),
                                   device));
  throw NotSupported(fmt::format("op {} has no implementation for {} tensors on {}", op_name(op), dtype_name(dtype),
                                 device));
}

void expect_tensors(std::string_view kernel, Device device, DType dtype, std::initializer_list<const Tensor*> tensors) {
  int i = 0;
  for (const Tensor* t : tensors) {
    if (!t->defined()) throw InternalError(fmt::format("internal error (a bug in Accrue): kernel {} got an undefined tensor as argument {}", kernel, i));
    if (t->device() != device)
      throw ValueError(fmt::format("kernel {}: argument {} is on {} but the others are on {}; move them to one device", kernel, i,
                                   t->device(), device));
    if (t->dtype() != dtype)
      throw NotSupported(fmt::format("kernel {}: argument {} has dtype {}, expected {}", kernel, i, dtype_name(t->dtype()),
                                     dtype_name(dtype)));
    ++i;
  }
}

}  // namespace accrue::kernels
