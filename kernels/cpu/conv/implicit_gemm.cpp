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
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pad.fill(x, DType::f32, g, n, grp, task.xp);
        gathered_gemm(task.xp, task.positions, PQ, task.taps, patch, packed + grp * patch * Kp, Kp, task.transposed,
                      false);
        transpose_floats(task.transposed, Kp, PQ, Kg, y + (n * g.K + grp * Kg) * PQ, PQ,
                         bias != nullptr ? bias + grp * Kg : nullptr, accumulate);
      }
  });
}

// ImplicitTask's pieces and the thread's dW^T sums.
std::size_t implicit_filter_task_bytes(const Window2d& g) {
  return ImplicitTask::bytes(g) + Carve::bytes<float>(g.groups * g.patch_size() * lanes16(g.filters_per_group()));
}

// dw (+)= the sum of the threads' dW^T (groups x patch x lanes16(Kg)).
void add_transposed_sums(const std::vector<float*>& sums, float* dw, const Window2d& g, bool accumulate) {
  const std::int64_t Kg = g.filters_per_group(), Kp = lanes16(Kg), patch = g.patch_size();
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    for (std::int64_t k = 0; k < Kg; ++k) {
      float* out = dw + (grp * Kg + k) * patch;
      for (std::int64_t i = 0; i < patch; ++i) {
        float s = 0.0f;
        for (const float* sum : sums) s += sum[(grp * patch + i) * Kp + k];
        out[i] = accumulate ? out[i] + s : s;
      }
    }
}

// dw (+)= the weight's gradient: each thread sums dW^T (taps x filters) over its samples, the
// products reading the padded input in place against dy transposed (positions x filters).
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
    std::fill(task.transposed, task.transposed + PQ * Kp, 0.0f);  // dy^T: the columns beyond Kg stay zero
    for (std::int64_t n = sample_begin(g.N, tasks, t); n < sample_begin(g.N, tasks, t + 1); ++n)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        pad.fill(x, DType::f32, g, n, grp, task.xp);
        transpose_floats(dy + (n * g.K + grp * Kg) * PQ, PQ, Kg, PQ, task.transposed, Kp, nullptr, false);
        gathered_gemm(task.xp, task.taps, patch, task.positions, PQ, task.transposed, Kp, sum + grp * patch * Kp,
                      n != sample_begin(g.N, tasks, t));
      }
  });
  add_transposed_sums(sums, dw, g, accumulate);
}

}  // namespace conv_detail

}  // namespace accrue::kernels::cpu
