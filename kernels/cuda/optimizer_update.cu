// Any rule of common/optimizer_updates.hpp over all its tensors in few launches (multi_tensor.cuh);
// the per-element math is the rule's step, as on the CPU.

#include "launch.cuh"
#include "multi_tensor.cuh"
#include "optimizer_update.hpp"

namespace accrue::kernels::cuda {
namespace {

template <class Rule, bool... On>
__global__ void update_kernel(TensorTable<2 + Rule::states> table, typename Rule::Hyper h) {
  constexpr int states = Rule::states;
  std::int64_t begin, end;
  int s;
  chunk_range(table, &begin, &end, &s);
  common::UpdateTensors<states> t{static_cast<float*>(table.ptr[0][s]), static_cast<const float*>(table.ptr[1][s]),
                                  {}, table.n[s]};
  for (int k = 0; k < states; ++k) t.state[k] = static_cast<float*>(table.ptr[2 + k][s]);
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) Rule::template step<On...>(i, t, h);
}

}  // namespace

template <class Rule>
void optimizer_update(int device, std::span<const common::UpdateTensors<Rule::states>> tensors,
                      const typename Rule::Hyper& h) {
  constexpr int depth = 2 + Rule::states;
  static_assert(sizeof(TensorTable<depth>) + sizeof(h) <= 4096, "kernel parameters must stay under 4 KiB");
  std::vector<std::int64_t> sizes;
  std::vector<std::array<void*, depth>> pointers;
  for (const common::UpdateTensors<Rule::states>& t : tensors) {
    sizes.push_back(t.n);
    std::array<void*, depth> p{t.param, const_cast<float*>(t.grad)};
    for (int k = 0; k < depth - 2; ++k) p[static_cast<std::size_t>(2 + k)] = t.state[k];
    pointers.push_back(p);
  }
  const cudaStream_t stream = compute_stream(device);
  common::with_switches(Rule::switches(h), [&](auto... on) {
    for_each_launch<depth>(sizes, pointers, [&](const TensorTable<depth>& table, unsigned blocks) {
      update_kernel<Rule, decltype(on)::value...><<<blocks, multi_threads, 0, stream>>>(table, h);
      check_launch(Rule::name, __FILE__, __LINE__);
    });
  });
}

#define ACCRUE_INSTANTIATE_UPDATE(Rule)                                                                 \
  template void optimizer_update<common::Rule>(int, std::span<const common::UpdateTensors<common::Rule::states>>, \
                                               const common::Rule::Hyper&);
ACCRUE_OPTIMIZER_RULES(ACCRUE_INSTANTIATE_UPDATE)
#undef ACCRUE_INSTANTIATE_UPDATE

}  // namespace accrue::kernels::cuda
