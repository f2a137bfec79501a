// The implicit GEMM form (float32, AVX-512 or AVX2): forward and the weight's gradient read the
// zero-padded image where it lies (gathered_tiles.hpp).

#include "forms.hpp"

namespace accrue::kernels::cpu {
using namespace conv_detail;

namespace conv_detail {

// y (+)= conv(x, the packed weight) + bias: each sample's group as y^T (positions x filters),
// transposed into y.
void implicit_forward(const float* x, const float* packed, const float* bias, float* y, bool accumulate,
                      const Window2d& g, std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group(), Kp = lanes16(Kg), patch = g.patch_size();
  const int tasks = tasks_for(g.N);
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * ImplicitTask::bytes(g)};
    const PaddedGroup pad{g};
    const ImplicitTask task{carve, pad, g};
    const std::int64_t end = sample_begin(g.N, tasks, t + 1);
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < end; n += task.samples) {
      const std::int64_t block = std::min(task.samples, end - n);
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        for (std::int64_t s = 0; s < block; ++s) pad.fill(x, DType::f32, g, n + s, grp, task.xp + s * task.values);
        gathered_gemm(task.xp, task.positions, block * PQ, task.taps, patch, packed + grp * patch * Kp, Kp, task.transposed,
                      false);
        for (std::int64_t s = 0; s < block; ++s)
          transpose_floats(task.transposed + s * PQ * Kp, Kp, PQ, Kg, y + ((n + s) * g.K + grp * Kg) * PQ, PQ,
                           bias != nullptr ? bias + grp * Kg : nullptr, accumulate);
      }
    }
  });
}

// ImplicitTask's pieces and the thread's dW^T sums.
std::size_t implicit_filter_task_bytes(const Window2d& g) {
  return ImplicitTask::bytes(g) + Carve::bytes<float>(g.groups * g.patch_size() * lanes16(g.filters_per_group()));
}

// dw (+)= the sum of the threads' dW^T (groups x patch x lanes16(Kg)), transposed in blocks of 32
// x 32 split across the pool: read a column at a time, a last stage's dW^T (4608 x 512) missed the
// cache at every element and took a quarter of a ResNet-18's fine-tuning step.
void add_transposed_sums(const std::vector<float*>& sums, float* dw, const Window2d& g, bool accumulate) {
  constexpr std::int64_t block = 32;
  const std::int64_t Kg = g.filters_per_group(), Kp = lanes16(Kg), patch = g.patch_size();
  const std::int64_t row_blocks = (patch + block - 1) / block;
  parallel_for(g.groups * row_blocks, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t b = begin; b < end; ++b) {
      const std::int64_t grp = b / row_blocks, i0 = b % row_blocks * block, i1 = std::min(i0 + block, patch);
      for (std::int64_t k0 = 0; k0 < Kg; k0 += block)
        for (std::int64_t k = k0; k < std::min(k0 + block, Kg); ++k) {
          float* out = dw + (grp * Kg + k) * patch;
          for (std::int64_t i = i0; i < i1; ++i) {
            float s = 0.0f;
            for (const float* sum : sums) s += sum[(grp * patch + i) * Kp + k];
            out[i] = accumulate ? out[i] + s : s;
          }
        }
    }
  });
}

// dw (+)= the weight's gradient: each thread sums dW^T (taps x filters) over its samples, the
// products reading the padded input in place against dy transposed (positions x filters), a block
// of samples per product.
void implicit_backward_filter(const float* dy, const float* x, float* dw, const Window2d& g, bool accumulate,
                              std::byte* workspace) {
  const std::int64_t PQ = g.P() * g.Q(), Kg = g.filters_per_group(), Kp = lanes16(Kg), patch = g.patch_size();
  const int tasks = tasks_for(g.N);
  std::vector<float*> sums(static_cast<std::size_t>(tasks));
  parallel_tasks(tasks, [&](int t) {
    Carve carve{workspace + t * implicit_filter_task_bytes(g)};
    const PaddedGroup pad{g};
    const ImplicitTask task{carve, pad, g};
    float* sum = sums[static_cast<std::size_t>(t)] = carve.take<float>(g.groups * patch * Kp);
    std::fill(task.transposed, task.transposed + task.samples * PQ * Kp, 0.0f);  // dy^T: the columns beyond Kg stay zero
    const std::int64_t begin = sample_begin(g.N, tasks, t), end = sample_begin(g.N, tasks, t + 1);
    for (std::int64_t n = begin; n < end; n += task.samples) {
      const std::int64_t block = std::min(task.samples, end - n);
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        for (std::int64_t s = 0; s < block; ++s) {
          pad.fill(x, DType::f32, g, n + s, grp, task.xp + s * task.values);
          transpose_floats(dy + ((n + s) * g.K + grp * Kg) * PQ, PQ, Kg, PQ, task.transposed + s * PQ * Kp, Kp, nullptr,
                           false);
        }
        gathered_gemm(task.xp, task.taps, patch, task.positions, block * PQ, task.transposed, Kp, sum + grp * patch * Kp,
                      n != begin);
      }
    }
  });
  add_transposed_sums(sums, dw, g, accumulate);
}

}  // namespace conv_detail

}  // namespace accrue::kernels::cpu
