#include "dataset.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "../framework/autograd/autograd.hpp"
#include "../framework/ops/ops.hpp"
#include "../framework/core/random.hpp"
#include "../kernels/cpu/parallel.hpp"

namespace accrue {
namespace {

// A dataset of the user's own: get(i) gives each sample as tensors; the first fixes the layout.
class FunctionSource final : public SampleSource {
 public:
  FunctionSource(std::int64_t size, std::function<Example(std::int64_t)> get, std::string name)
      : size_(size), get_(std::move(get)), name_(std::move(name)) {
    ACCRUE_CHECK(size_ >= 0, "dataset '{}': size {} is negative", name_, size_);
    if (size_ > 0) {
      const Example first = sample(0);
      layout_ = {{first.inputs.shape(), first.inputs.dtype()}, {first.targets.shape(), first.targets.dtype()}};
    }
  }
  std::string name() const override { return name_; }
  std::int64_t size() const override { return size_; }
  SampleLayout layout() const override { return layout_; }
  void read(std::int64_t i, const ReadContext&, void* input, void* target) const override {
    const Example e = sample(i);
    check(i, "input", e.inputs, layout_.input);
    check(i, "target", e.targets, layout_.target);
    std::memcpy(input, e.inputs.data_ptr(), e.inputs.nbytes());
    std::memcpy(target, e.targets.data_ptr(), e.targets.nbytes());
  }

 private:
  Example sample(std::int64_t i) const {
    Example e = get_(i);
    ACCRUE_CHECK(e.inputs.defined() && e.targets.defined(), "dataset '{}': get({}) returned an undefined {}", name_, i,
                 e.inputs.defined() ? "target" : "input");
    return {e.inputs.to(Device::cpu()), e.targets.to(Device::cpu())};
  }
  void check(std::int64_t i, const char* what, const Tensor& t, const TensorSpec& spec) const {
    ACCRUE_CHECK_SHAPE(t.shape() == spec.shape && t.dtype() == spec.dtype,
                       "dataset '{}': sample {}'s {} is {} {}, sample 0's {} {} (every sample must have the same "
                       "shape and type)",
                       name_, i, what, dtype_name(t.dtype()), t.shape(), dtype_name(spec.dtype), spec.shape);
  }
  std::int64_t size_;
  std::function<Example(std::int64_t)> get_;
  std::string name_;
  SampleLayout layout_;
};

// Some samples of another source, in a given order (a subset or split of data not in memory).
class SelectedSource final : public SampleSource {
 public:
  SelectedSource(std::shared_ptr<const SampleSource> inner, std::vector<std::int64_t> indices)
      : inner_(std::move(inner)), indices_(std::move(indices)) {}
  std::string name() const override { return inner_->name(); }
  std::int64_t size() const override { return static_cast<std::int64_t>(indices_.size()); }
  SampleLayout layout() const override { return inner_->layout(); }
  void read(std::int64_t i, const ReadContext& context, void* input, void* target) const override {
    inner_->read(indices_[static_cast<std::size_t>(i)], context, input, target);
  }
  void read_target(std::int64_t i, void* target) const override {
    inner_->read_target(indices_[static_cast<std::size_t>(i)], target);
  }
  std::string fingerprint() const override {
    const uLong crc = crc32_z(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(indices_.data()),
                              indices_.size() * sizeof(std::int64_t));
    return fmt::format("{} of {}", crc32_fingerprint(static_cast<std::uint32_t>(crc)), inner_->fingerprint());
  }

 private:
  std::shared_ptr<const SampleSource> inner_;
  std::vector<std::int64_t> indices_;
};

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

Example detail::read_samples(const SampleSource& source, std::span<const std::int64_t> indices,
                             const ReadContext& context, bool parallel) {
  const SampleLayout layout = source.layout();
  const auto n = static_cast<std::int64_t>(indices.size());
  const TensorOptions options{.category = MemoryCategory::data};
  Tensor inputs = Tensor::empty(layout.input.shape.prepend(n), {.dtype = layout.input.dtype, .category = options.category});
  Tensor targets = Tensor::empty(layout.target.shape.prepend(n), {.dtype = layout.target.dtype, .category = options.category});
  auto* in = static_cast<char*>(inputs.data_ptr());
  auto* tg = static_cast<char*>(targets.data_ptr());
  const std::size_t in_row = layout.input.nbytes(), tg_row = layout.target.nbytes();
  const auto read = [&](std::int64_t b, std::int64_t e) {
    for (auto k = static_cast<std::size_t>(b); k < static_cast<std::size_t>(e); ++k)
      source.read(indices[k], context, in + k * in_row, tg + k * tg_row);
  };
  if (parallel)
    kernels::cpu::parallel_for(n, 1, read);
  else
    read(0, n);
  return {inputs, targets};
}

Dataset::Dataset(Tensor inputs, Tensor targets, std::string name)
    : source_(std::make_shared<const TensorSource>(std::move(inputs), std::move(targets), std::move(name))) {}

Dataset::Dataset(std::shared_ptr<const SampleSource> source) : source_(std::move(source)) {
  ACCRUE_CHECK(source_ != nullptr, "Dataset: the source is null");
}

Dataset Dataset::from(std::int64_t size, std::function<Example(std::int64_t)> get, std::string name) {
  ACCRUE_CHECK(static_cast<bool>(get), "Dataset::from('{}'): get is empty", name);
  return Dataset{std::make_shared<const FunctionSource>(size, std::move(get), std::move(name))};
}

const SampleSource& Dataset::source() const {
  ACCRUE_CHECK(source_ != nullptr, "dataset: this dataset is empty (default-constructed)");
  return *source_;
}

const Tensor& Dataset::inputs() const {
  const TensorSource* t = source().tensors();
  ACCRUE_CHECK(t != nullptr,
               "dataset '{}': its samples are read one by one (not held as one tensor); read them through a "
               "DataLoader, or call to_memory() to read them all once",
               name());
  return t->inputs();
}

Tensor Dataset::targets() const {
  if (const TensorSource* t = source().tensors()) return t->targets();
  const TensorSpec spec = source_->layout().target;
  Tensor out = Tensor::empty(spec.shape.prepend(size()), {.dtype = spec.dtype, .category = MemoryCategory::data});
  auto* dst = static_cast<char*>(out.data_ptr());
  for (std::int64_t i = 0; i < size(); ++i) source_->read_target(i, dst + static_cast<std::size_t>(i) * spec.nbytes());
  return out;
}

Example Dataset::operator[](std::int64_t i) const {
  ACCRUE_CHECK(i >= 0 && i < size(), "dataset '{}': sample {} is outside [0, {})", name(), i, size());
  return slice(i, i + 1);
}

Example Dataset::slice(std::int64_t begin, std::int64_t end, const ReadContext& context) const {
  ACCRUE_CHECK(0 <= begin && begin <= end && end <= size(), "dataset '{}': samples [{}, {}) are outside [0, {})",
               name(), begin, end, size());
  if (const TensorSource* t = source().tensors()) {
    const NoGradGuard no_grad;
    return {ops::narrow(t->inputs(), begin, end), ops::narrow(t->targets(), begin, end)};
  }
  std::vector<std::int64_t> indices(static_cast<std::size_t>(end - begin));
  std::iota(indices.begin(), indices.end(), begin);
  return detail::read_samples(*source_, indices, context, true);
}

Example Dataset::gather(std::span<const std::int64_t> indices, const ReadContext& context) const {
  for (std::int64_t i : indices)
    ACCRUE_CHECK(i >= 0 && i < size(), "dataset '{}': sample {} is outside [0, {})", name(), i, size());
  if (const TensorSource* t = source().tensors()) {
    ACCRUE_CHECK(t->inputs().device().is_cpu(), "dataset '{}': gathering samples needs the data on the CPU", name());
    return {gather_rows(t->inputs(), indices), gather_rows(t->targets(), indices)};
  }
  return detail::read_samples(*source_, indices, context, true);
}

Dataset Dataset::take(std::int64_t n) const {
  ACCRUE_CHECK(n >= 0, "dataset '{}': take({}) needs n >= 0", name(), n);
  return subset(0, std::min(n, size()));
}

Dataset Dataset::subset(std::int64_t begin, std::int64_t end) const {
  ACCRUE_CHECK(0 <= begin && begin <= end && end <= size(), "dataset '{}': samples [{}, {}) are outside [0, {})",
               name(), begin, end, size());
  std::vector<std::int64_t> indices(static_cast<std::size_t>(end - begin));
  std::iota(indices.begin(), indices.end(), begin);
  if (source().tensors()) {
    const Example e = slice(begin, end);
    return weighted_like(Dataset{e.inputs, e.targets, name()}, indices);
  }
  return select(std::move(indices));
}

Dataset Dataset::select(std::vector<std::int64_t> indices) const {
  for (std::int64_t i : indices)
    ACCRUE_CHECK(i >= 0 && i < size(), "dataset '{}': sample {} is outside [0, {})", name(), i, size());
  if (source().tensors()) {
    const Example e = gather(indices);
    return weighted_like(Dataset{e.inputs, e.targets, name()}, indices);
  }
  Dataset selected{std::make_shared<const SelectedSource>(source_, indices)};
  return weighted_like(std::move(selected), indices);
}

Dataset Dataset::with_sample_weights(std::vector<float> weights) const {
  ACCRUE_CHECK(static_cast<std::int64_t>(weights.size()) == size(),
               "dataset '{}': {} sample weights for {} samples (one per sample)", name(), weights.size(), size());
  for (std::size_t i = 0; i < weights.size(); ++i)
    ACCRUE_CHECK(std::isfinite(weights[i]) && weights[i] >= 0.0f,
                 "dataset '{}': sample {}'s weight is {} (weights must be finite and >= 0)", name(), i, weights[i]);
  Dataset out = *this;
  out.weights_ = std::make_shared<const std::vector<float>>(std::move(weights));
  return out;
}

Dataset Dataset::weighted_like(Dataset to, std::span<const std::int64_t> indices) const {
  if (!weights_) return to;
  std::vector<float> w(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) w[k] = (*weights_)[static_cast<std::size_t>(indices[k])];
  to.weights_ = std::make_shared<const std::vector<float>>(std::move(w));
  return to;
}

std::string Dataset::fingerprint() const {
  if (!weights_) return source().fingerprint();
  const uLong crc = crc32_z(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(weights_->data()),
                            weights_->size() * sizeof(float));
  return fmt::format("{} weighted {}", source().fingerprint(), crc32_fingerprint(static_cast<std::uint32_t>(crc)));
}

std::pair<Dataset, Dataset> Dataset::split(double fraction, std::uint64_t seed) const {
  ACCRUE_CHECK(fraction >= 0.0 && fraction <= 1.0, "dataset '{}': split fraction must be in [0, 1], got {}", name(),
               fraction);
  std::vector<std::int64_t> order(static_cast<std::size_t>(size()));
  std::iota(order.begin(), order.end(), 0);
  Generator gen{seed};
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[gen.below(i)]);
  const auto first = static_cast<std::ptrdiff_t>(fraction * static_cast<double>(order.size()) + 0.5);
  return {select({order.begin(), order.begin() + first}), select({order.begin() + first, order.end()})};
}

Dataset Dataset::to_memory() const {
  if (source().tensors()) return *this;
  const Example all = slice(0, size());
  Dataset out{all.inputs, all.targets, name()};
  out.weights_ = weights_;
  return out;
}

}  // namespace accrue
