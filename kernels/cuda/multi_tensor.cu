// Multi-tensor kernels: one launch updates many tensors (all the parameters of a model, or all
// their gradients), as PyTorch's foreach/fused optimizers do, instead of one launch per tensor.
// The pointers travel in the kernel's parameters (under the 4 KiB every CUDA version accepts);
// common::plan_multi_tensor splits long lists into several launches. The per-element math is
// common/optimizer_updates.hpp and common/amp_update.hpp, as on the CPU.

#include <array>
#include <vector>

#include "accrue/kernels/common/amp_update.hpp"
#include "accrue/kernels/common/multi_tensor.hpp"
#include "accrue/kernels/common/optimizer_updates.hpp"
#include "accrue/kernels/common/unary.hpp"
#include "accrue/kernels/cuda/launch.cuh"
#include "accrue/kernels/cuda/launchers.hpp"

namespace accrue::kernels::cuda {
namespace {

constexpr int table_tensors = 24;
constexpr int table_blocks = 320;
constexpr int multi_threads = 512;
constexpr std::int64_t chunk_elements = 65536;

template <int Depth>
struct TensorTable {
  void* ptr[Depth][table_tensors];
  std::int64_t n[table_tensors];
  int block_chunk[table_blocks];
  unsigned char block_slot[table_blocks];
};
static_assert(sizeof(TensorTable<5>) + sizeof(common::AdamHyper) <= 4096, "kernel parameters must stay under 4 KiB");
static_assert(table_tensors <= 255, "slots are stored in a byte");

// The range [begin, end) of block b's chunk in its tensor.
template <int Depth>
__device__ void chunk_range(const TensorTable<Depth>& t, std::int64_t* begin, std::int64_t* end, int* slot) {
  *slot = t.block_slot[blockIdx.x];
  *begin = static_cast<std::int64_t>(t.block_chunk[blockIdx.x]) * chunk_elements;
  const std::int64_t stop = *begin + chunk_elements;
  *end = stop < t.n[*slot] ? stop : t.n[*slot];
}

// Runs `op` over a list of tensors described by `pointers[tensor][depth]` and `sizes`.
template <int Depth, class Launch>
void for_each_launch(std::span<const std::int64_t> sizes, const std::vector<std::array<void*, Depth>>& pointers,
                     Launch&& launch) {
  const auto launches = common::plan_multi_tensor(sizes, table_tensors, table_blocks, chunk_elements);
  for (const common::MultiTensorLaunch& l : launches) {
    TensorTable<Depth> table{};
    for (std::size_t s = 0; s < l.tensors.size(); ++s) {
      const auto t = static_cast<std::size_t>(l.tensors[s]);
      for (int d = 0; d < Depth; ++d) table.ptr[d][s] = pointers[t][static_cast<std::size_t>(d)];
      table.n[s] = sizes[t];
    }
    for (std::size_t b = 0; b < l.block_slot.size(); ++b) {
      table.block_slot[b] = static_cast<unsigned char>(l.block_slot[b]);
      table.block_chunk[b] = static_cast<int>(l.block_chunk[b]);
    }
    launch(table, static_cast<unsigned>(l.block_slot.size()));
  }
}

template <bool Momentum, bool Decay, bool Nesterov, bool Maximize, bool FirstStep>
__global__ void sgd_kernel(TensorTable<3> t, common::SgdHyper h) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* p = static_cast<float*>(t.ptr[0][s]);
  const float* g = static_cast<const float*>(t.ptr[1][s]);
  float* buf = static_cast<float*>(t.ptr[2][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    common::sgd_update<Momentum, Decay, Nesterov, Maximize, FirstStep>(p + i, g[i], Momentum ? buf + i : nullptr, h);
}

template <bool Decay, bool Decoupled, bool Amsgrad, bool Maximize>
__global__ void adam_kernel(TensorTable<5> t, common::AdamHyper h) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* p = static_cast<float*>(t.ptr[0][s]);
  const float* g = static_cast<const float*>(t.ptr[1][s]);
  float* m = static_cast<float*>(t.ptr[2][s]);
  float* v = static_cast<float*>(t.ptr[3][s]);
  float* vmax = static_cast<float*>(t.ptr[4][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    common::adam_update<Decay, Decoupled, Amsgrad, Maximize>(p + i, g[i], m + i, v + i, Amsgrad ? vmax + i : nullptr, h);
}

// Block b writes its partial sum to partial[first_block + b]; a second kernel adds the partials
// in order, so the result does not depend on scheduling.
__global__ void sum_of_squares_kernel(TensorTable<1> t, double* partial, std::int64_t first_block) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  const float* x = static_cast<const float*>(t.ptr[0][s]);
  double sum = 0.0;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) sum += static_cast<double>(x[i]) * x[i];
  sum = block_all_reduce(sum, 0.0, SumOp{});
  if (threadIdx.x == 0) partial[first_block + blockIdx.x] = sum;
}

__global__ void sum_partials_kernel(const double* partial, std::int64_t count, double* out) {
  double sum = 0.0;
  for (std::int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += partial[i];
  sum = block_all_reduce(sum, 0.0, SumOp{});
  if (threadIdx.x == 0) *out = sum;
}

__global__ void unscale_kernel(TensorTable<1> t, float inverse_scale, int* found) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* g = static_cast<float*>(t.ptr[0][s]);
  bool bad = false;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) bad = common::unscale_element(g + i, inverse_scale) || bad;
  // Every writer writes the same value, so the race is benign.
  if (bad) *found = 1;
}

template <UnaryOp Op>
__global__ void unary_in_place_kernel(TensorTable<1> t, UnaryParams params) {
  std::int64_t begin, end;
  int s;
  chunk_range(t, &begin, &end, &s);
  float* x = static_cast<float*>(t.ptr[0][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) x[i] = common::unary_apply<Op>(x[i], params);
}

template <class F>
void with_flag(bool flag, F&& f) {
  if (flag) f(std::true_type{});
  else f(std::false_type{});
}

}  // namespace

void sgd_update(int device, std::span<const SgdPointers> tensors, const common::SgdHyper& h) {
  std::vector<std::int64_t> sizes;
  std::vector<std::array<void*, 3>> pointers;
  for (const SgdPointers& t : tensors) {
    sizes.push_back(t.n);
    pointers.push_back({t.param, const_cast<float*>(t.grad), t.momentum_buffer});
  }
  const cudaStream_t stream = compute_stream(device);
  with_flag(h.momentum != 0.0f, [&](auto momentum) {
    with_flag(h.weight_decay != 0.0f, [&](auto decay) {
      with_flag(h.nesterov, [&](auto nesterov) {
        with_flag(h.maximize, [&](auto maximize) {
          with_flag(h.first_step, [&](auto first) {
            for_each_launch<3>(sizes, pointers, [&](const TensorTable<3>& table, unsigned blocks) {
              sgd_kernel<momentum(), decay(), nesterov(), maximize(), first()><<<blocks, multi_threads, 0, stream>>>(table, h);
              check_launch("sgd_kernel", __FILE__, __LINE__);
            });
          });
        });
      });
    });
  });
}

void adam_update(int device, std::span<const AdamPointers> tensors, const common::AdamHyper& h) {
  std::vector<std::int64_t> sizes;
  std::vector<std::array<void*, 5>> pointers;
  for (const AdamPointers& t : tensors) {
    sizes.push_back(t.n);
    pointers.push_back({t.param, const_cast<float*>(t.grad), t.exp_avg, t.exp_avg_sq, t.max_exp_avg_sq});
  }
  const cudaStream_t stream = compute_stream(device);
  with_flag(h.weight_decay != 0.0f, [&](auto decay) {
    with_flag(h.decoupled, [&](auto decoupled) {
      with_flag(h.amsgrad, [&](auto amsgrad) {
        with_flag(h.maximize, [&](auto maximize) {
          for_each_launch<5>(sizes, pointers, [&](const TensorTable<5>& table, unsigned blocks) {
            adam_kernel<decay(), decoupled(), amsgrad(), maximize()><<<blocks, multi_threads, 0, stream>>>(table, h);
            check_launch("adam_kernel", __FILE__, __LINE__);
          });
        });
      });
    });
  });
}

std::int64_t sum_of_squares_partials(std::span<const std::int64_t> sizes) {
  std::int64_t blocks = 0;
  for (const auto& l : common::plan_multi_tensor(sizes, table_tensors, table_blocks, chunk_elements))
    blocks += static_cast<std::int64_t>(l.block_slot.size());
  return blocks + 1;  // the last slot holds the total
}

double sum_of_squares(int device, std::span<const float* const> tensors, std::span<const std::int64_t> sizes,
                      double* scratch) {
  std::vector<std::array<void*, 1>> pointers;
  for (const float* t : tensors) pointers.push_back({const_cast<float*>(t)});
  const cudaStream_t stream = compute_stream(device);
  std::int64_t blocks = 0;
  for_each_launch<1>(sizes, pointers, [&](const TensorTable<1>& table, unsigned n) {
    sum_of_squares_kernel<<<n, multi_threads, 0, stream>>>(table, scratch, blocks);
    check_launch("sum_of_squares_kernel", __FILE__, __LINE__);
    blocks += n;
  });
  if (blocks == 0) return 0.0;
  sum_partials_kernel<<<1, 1024, 0, stream>>>(scratch, blocks, scratch + blocks);
  check_launch("sum_partials_kernel", __FILE__, __LINE__);
  double total = 0.0;
  copy_device_to_host(device, &total, scratch + blocks, sizeof total);
  return total;
}

bool unscale_and_check(int device, std::span<float* const> tensors, std::span<const std::int64_t> sizes,
                       float inverse_scale, int* flag) {
  std::vector<std::array<void*, 1>> pointers;
  for (float* t : tensors) pointers.push_back({t});
  const cudaStream_t stream = compute_stream(device);
  launch_elementwise(device, 1, "unscale_and_check(init)", StoreInt{flag, 0});
  for_each_launch<1>(sizes, pointers, [&](const TensorTable<1>& table, unsigned n) {
    unscale_kernel<<<n, multi_threads, 0, stream>>>(table, inverse_scale, flag);
    check_launch("unscale_kernel", __FILE__, __LINE__);
  });
  int found = 0;
  copy_device_to_host(device, &found, flag, sizeof found);
  return found != 0;
}

void unary_in_place(int device, UnaryOp op, UnaryParams params, std::span<float* const> tensors,
                    std::span<const std::int64_t> sizes) {
  std::vector<std::array<void*, 1>> pointers;
  for (float* t : tensors) pointers.push_back({t});
  const cudaStream_t stream = compute_stream(device);
  auto run = [&](auto tag) {
    for_each_launch<1>(sizes, pointers, [&](const TensorTable<1>& table, unsigned n) {
      unary_in_place_kernel<decltype(tag)::value><<<n, multi_threads, 0, stream>>>(table, params);
      check_launch("unary_in_place_kernel", __FILE__, __LINE__);
    });
  };
  // Clipping is all that needs it: scaling by a coefficient, and clamping to a range.
  switch (op) {
    case UnaryOp::affine: run(std::integral_constant<UnaryOp, UnaryOp::affine>{}); return;
    case UnaryOp::clamp: run(std::integral_constant<UnaryOp, UnaryOp::clamp>{}); return;
    default: throw_error(cudaErrorNotSupported, "unary_in_place(op other than affine or clamp)", __FILE__, __LINE__);
  }
}

}  // namespace accrue::kernels::cuda
