#include "gather.hpp"

#include <limits>

#include "../framework/core/storage.hpp"
#include "cpu/cross_entropy.hpp"
#include "cpu/gather.hpp"
#include "../framework/runtime/cuda_backend.hpp"
#include "cuda/cross_entropy.hpp"
#include "cuda/gather.hpp"
#include "dispatch.hpp"

namespace accrue::kernels {

void gather_rows(const Tensor& table, const Tensor& indices, const Tensor& out) {
  expect_tensors("gather_rows", out.device(), table.dtype(), {&table, &out});
  expect_tensors("gather_rows", out.device(), DType::i32, {&indices});
  ACCRUE_ASSERT(table.rank() == 2);
  const std::int64_t V = table.size(0), D = table.size(1), n = indices.numel();
  ACCRUE_ASSERT(out.numel() == n * D);
  const auto bad_index = [&](std::int64_t at) {
    return ValueError(fmt::format(
        "index {} at position {} is outside [0, {}): the table has {} rows",
        indices.to(Device::cpu()).to_vector<std::int32_t>()[static_cast<std::size_t>(at)], at, V,
        V));
  };
  out.bump_version();
  if (n == 0 || D == 0) return;
  return dispatch(
      Op::gather_rows, out.device(), out.dtype(),
      [&] {
        const std::int32_t* idx = indices.data<std::int32_t>();
        if (const std::int64_t bad = cpu::first_out_of_range(idx, n, V, common::no_ignored_label); bad >= 0) throw bad_index(bad);
        cpu::gather_rows(out.dtype(), table.data_ptr(), idx, out.data_ptr(), n, D);
      },
      [&](int device) {
        ACCRUE_CHECK(n < std::numeric_limits<int>::max(), "gather_rows: {} indices are too many for the GPU kernel", n);
        const Storage flag{sizeof(int), out.device(), MemoryCategory::temporaries};
        const std::int32_t* idx = ptr<std::int32_t>(indices);
        if (const std::int64_t bad = ACCRUE_CUDA(first_out_of_range)(device, idx, n, V, static_cast<int*>(flag.data()),
                                                                 common::no_ignored_label);
            bad >= 0)
          throw bad_index(bad);
        ACCRUE_CUDA(gather_rows)(device, out.dtype(), table.data_ptr(), idx, out.data_ptr(), n, D);
      });
}

void scatter_add_rows(const Tensor& grad, const Tensor& indices, const Tensor& table_grad, std::int64_t skip) {
  expect_tensors("scatter_add_rows", table_grad.device(), DType::f32, {&grad, &table_grad});
  expect_tensors("scatter_add_rows", table_grad.device(), DType::i32, {&indices});
  ACCRUE_ASSERT(table_grad.rank() == 2);
  const std::int64_t D = table_grad.size(1), n = indices.numel();
  ACCRUE_ASSERT(grad.numel() == n * D);
  table_grad.bump_version();
  if (n == 0 || D == 0) return;
  return dispatch(
      Op::scatter_add_rows, table_grad.device(), table_grad.dtype(),
      [&] {
        cpu::scatter_add_rows(grad.data<float>(), indices.data<std::int32_t>(), table_grad.data<float>(), n, D, skip);
      },
      [&](int device) {
        ACCRUE_CUDA(scatter_add_rows)(device, ptr<float>(grad), ptr<std::int32_t>(indices), ptr<float>(table_grad), n, D,
                               skip);
      });
}

}  // namespace accrue::kernels
