#include "accrue/datasets/dataset.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "accrue/framework/autograd.hpp"
#include "accrue/framework/ops.hpp"
#include "accrue/framework/random.hpp"
#include "accrue/kernels/cpu/parallel.hpp"

namespace accrue {

std::string Dataset::fingerprint() const {
  uLong crc = crc32(0, nullptr, 0);
  for (const Tensor* t : {&inputs_, &targets_}) {
    if (!t->defined()) continue;
    const Tensor host = t->to(Device::cpu());
    const std::string layout = fmt::format("{} {};", dtype_name(host.dtype()), host.shape());
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(layout.data()), layout.size());
    crc = crc32_z(crc, static_cast<const Bytef*>(host.data_ptr()), host.nbytes());
  }
  return fmt::format("crc32 {:08x}", crc);
}

Dataset::Dataset(Tensor inputs, Tensor targets, std::string name)
    : inputs_(std::move(inputs)), targets_(std::move(targets)), name_(std::move(name)) {
  ACCRUE_CHECK(inputs_.defined() && targets_.defined(), "dataset '{}': inputs or targets undefined", name_);
  ACCRUE_CHECK_SHAPE(inputs_.rank() >= 1 && targets_.rank() >= 1,
                     "dataset '{}': inputs {} and targets {} need a first (sample) dimension", name_, inputs_.shape(),
                     targets_.shape());
  ACCRUE_CHECK_SHAPE(inputs_.size(0) == targets_.size(0),
                     "dataset '{}': {} input samples (shape {}) but {} targets (shape {})", name_, inputs_.size(0),
                     inputs_.shape(), targets_.size(0), targets_.shape());
  ACCRUE_CHECK(inputs_.device() == targets_.device(), "dataset '{}': inputs on {}, targets on {}", name_,
               inputs_.device(), targets_.device());
  // What a dataset holds counts as data, however its tensors were made (parameters stay parameters).
  for (const Tensor* t : {&inputs_, &targets_})
    if (t->category() == MemoryCategory::temporaries) t->storage()->set_category(MemoryCategory::data);
}

Example Dataset::operator[](std::int64_t i) const {
  ACCRUE_CHECK(i >= 0 && i < size(), "dataset '{}': sample {} is outside [0, {})", name_, i, size());
  return slice(i, i + 1);
}

Example Dataset::slice(std::int64_t begin, std::int64_t end) const {
  ACCRUE_CHECK(0 <= begin && begin <= end && end <= size(), "dataset '{}': samples [{}, {}) are outside [0, {})", name_,
               begin, end, size());
  const NoGradGuard no_grad;
  return {ops::narrow(inputs_, begin, end), ops::narrow(targets_, begin, end)};
}

namespace {
Tensor gather_rows(const Tensor& t, std::span<const std::int64_t> indices) {
  Shape shape = t.shape();
  shape[0] = static_cast<std::int64_t>(indices.size());
  Tensor out = Tensor::empty(shape, {.dtype = t.dtype(), .device = t.device(), .category = MemoryCategory::data});
  const std::size_t row = t.size(0) == 0 ? 0 : t.nbytes() / static_cast<std::size_t>(t.size(0));
  const auto* src = static_cast<const char*>(t.data_ptr());
  auto* dst = static_cast<char*>(out.data_ptr());
  // Rows of a shuffled batch lie anywhere in the dataset, mostly outside the caches: two threads
  // fetching them take about half the time of one (2-3% of a batch-64 MLP epoch).
  const std::int64_t grain = std::max<std::int64_t>(1, static_cast<std::int64_t>((16u << 10) / std::max<std::size_t>(row, 1)));
  kernels::cpu::parallel_for(static_cast<std::int64_t>(indices.size()), grain, [&](std::int64_t b, std::int64_t e) {
    for (auto i = static_cast<std::size_t>(b); i < static_cast<std::size_t>(e); ++i)
      std::memcpy(dst + i * row, src + static_cast<std::size_t>(indices[i]) * row, row);
  });
  return out;
}
}  // namespace

Example Dataset::gather(std::span<const std::int64_t> indices) const {
  for (std::int64_t i : indices)
    ACCRUE_CHECK(i >= 0 && i < size(), "dataset '{}': sample {} is outside [0, {})", name_, i, size());
  ACCRUE_CHECK(inputs_.device().is_cpu(), "dataset '{}': gathering samples needs the data on the CPU", name_);
  return {gather_rows(inputs_, indices), gather_rows(targets_, indices)};
}

Dataset Dataset::take(std::int64_t n) const {
  ACCRUE_CHECK(n >= 0, "dataset '{}': take({}) needs n >= 0", name_, n);
  return subset(0, std::min(n, size()));
}

Dataset Dataset::subset(std::int64_t begin, std::int64_t end) const {
  const Example e = slice(begin, end);
  return Dataset{e.inputs, e.targets, name_};
}

std::pair<Dataset, Dataset> Dataset::split(double fraction, std::uint64_t seed) const {
  ACCRUE_CHECK(fraction >= 0.0 && fraction <= 1.0, "dataset '{}': split fraction must be in [0, 1], got {}", name_,
               fraction);
  std::vector<std::int64_t> order(static_cast<std::size_t>(size()));
  std::iota(order.begin(), order.end(), 0);
  Generator gen{seed};
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[gen.below(i)]);
  const auto first = static_cast<std::size_t>(fraction * static_cast<double>(order.size()) + 0.5);
  const std::span<const std::int64_t> all{order};
  const Example a = gather(all.first(first)), b = gather(all.subspan(first));
  return {Dataset{a.inputs, a.targets, name_}, Dataset{b.inputs, b.targets, name_}};
}

}  // namespace accrue
