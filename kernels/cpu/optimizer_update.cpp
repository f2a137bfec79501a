#include "optimizer_update.hpp"

#include "parallel.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {
namespace {

constexpr std::int64_t update_grain = 1 << 15;

}  // namespace

// The loop reads the pointers and the hyper-parameters from locals, which the stores cannot
// change, and ivdep says that the tensors do not overlap (a rule has up to five, more pairs than
// GCC checks for overlap before it vectorises), so every combination of switches vectorises.
template <class Rule>
void optimizer_update(std::span<const common::UpdateTensors<Rule::states>> tensors, const typename Rule::Hyper& hyper) {
  using Tensors = common::UpdateTensors<Rule::states>;
  using Hyper = typename Rule::Hyper;
  common::with_switches(Rule::switches(hyper), [&](auto... on) {
    for (const Tensors& t : tensors)
      parallel_for(t.n, update_grain, [t, hyper](std::int64_t begin, std::int64_t end) {
        const Tensors local = t;
        const Hyper h = hyper;
#pragma GCC ivdep
        for (std::int64_t i = begin; i < end; ++i) Rule::template step<decltype(on)::value...>(i, local, h);
      });
  });
}

#define ACCRUE_INSTANTIATE_UPDATE(Rule)                                                                   \
  template void optimizer_update<common::Rule>(std::span<const common::UpdateTensors<common::Rule::states>>, \
                                               const common::Rule::Hyper&);
ACCRUE_OPTIMIZER_RULES(ACCRUE_INSTANTIATE_UPDATE)
#undef ACCRUE_INSTANTIATE_UPDATE

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
