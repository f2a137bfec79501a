#include "dataset.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <tuple>
#include <vector>

#include "../framework/autograd/autograd.hpp"
#include "../framework/ops/ops.hpp"
#include "../framework/core/random.hpp"
#include "../kernels/cpu/parallel.hpp"

namespace accrue {
namespace {

// Buffers of sample k of a batch of `parts` (each (n, ...)), as SampleBuffers points to.
std::vector<void*> rows_of(const std::vector<Tensor>& parts, std::size_t k) {
  std::vector<void*> out;
  for (const Tensor& t : parts)
    out.push_back(static_cast<char*>(t.data_ptr()) + k * (t.size(0) == 0 ? 0 : t.nbytes() / static_cast<std::size_t>(t.size(0))));
  return out;
}

// A dataset of the user's own: get(i) gives each sample as tensors; the first fixes the layout.
class FunctionSource final : public SampleSource {
 public:
  FunctionSource(std::int64_t size, std::function<Example(std::int64_t)> get, std::string name)
      : size_(size), get_(std::move(get)), name_(std::move(name)) {
    ACCRUE_CHECK(size_ >= 0, "dataset '{}': size {} is negative", name_, size_);
    if (size_ > 0) {
      const Example first = sample(0);
      for (const Tensor& t : first.inputs) layout_.inputs.push_back({t.shape(), t.dtype()});
      for (const Tensor& t : first.targets) layout_.targets.push_back({t.shape(), t.dtype()});
    }
  }
  std::string name() const override { return name_; }
  std::int64_t size() const override { return size_; }
  SampleLayout layout() const override { return layout_; }
  void read(std::int64_t i, const ReadContext&, const SampleBuffers& out) const override {
    const Example e = sample(i);
    check(i, "input", e.inputs, layout_.inputs);
    check(i, "target", e.targets, layout_.targets);
    for (std::size_t k = 0; k < e.inputs.size(); ++k) std::memcpy(out.inputs[k], e.inputs[k].data_ptr(), e.inputs[k].nbytes());
    for (std::size_t k = 0; k < e.targets.size(); ++k)
      std::memcpy(out.targets[k], e.targets[k].data_ptr(), e.targets[k].nbytes());
  }

 private:
  Example sample(std::int64_t i) const {
    Example e = get_(i);
    for (std::vector<Tensor>* part : {&e.inputs, &e.targets})
      for (Tensor& t : *part) {
        ACCRUE_CHECK(t.defined(), "dataset '{}': get({}) returned an undefined {}", name_, i,
                     part == &e.inputs ? "input" : "target");
        t = t.to(Device::cpu());
      }
    return e;
  }
  void check(std::int64_t i, const char* what, const std::vector<Tensor>& ts, const std::vector<TensorSpec>& specs) const {
    ACCRUE_CHECK_SHAPE(ts.size() == specs.size(), "dataset '{}': sample {} has {} {}s, sample 0 {}", name_, i, ts.size(),
                       what, specs.size());
    for (std::size_t k = 0; k < ts.size(); ++k)
      ACCRUE_CHECK_SHAPE(ts[k].shape() == specs[k].shape && ts[k].dtype() == specs[k].dtype,
                         "dataset '{}': sample {}'s {} is {} {}, sample 0's {} {} (every sample must have the same "
                         "shape and type)",
                         name_, i, ts.size() == 1 ? std::string{what} : fmt::format("{} {}", what, k),
                         dtype_name(ts[k].dtype()), ts[k].shape(), dtype_name(specs[k].dtype), specs[k].shape);
  }
  std::int64_t size_;
  std::function<Example(std::int64_t)> get_;
  std::string name_;
  SampleLayout layout_;
};

// Datasets of one size side by side: the parts' inputs, then their targets, in the parts' order.
class ZipSource final : public SampleSource {
 public:
  ZipSource(std::vector<Dataset> parts, std::string name) : parts_(std::move(parts)), name_(std::move(name)) {
    for (const Dataset& d : parts_) {
      const SampleLayout l = d.layout();
      counts_.emplace_back(l.inputs.size(), l.targets.size());
      append(layout_.inputs, layout_.input_names, l.inputs, l.input_names);
      append(layout_.targets, layout_.target_names, l.targets, l.target_names);
    }
  }
  std::string name() const override { return name_; }
  std::int64_t size() const override { return parts_[0].size(); }
  SampleLayout layout() const override { return layout_; }
  void read(std::int64_t i, const ReadContext& context, const SampleBuffers& out) const override {
    std::size_t input = 0, target = 0;
    for (std::size_t p = 0; p < parts_.size(); ++p) {
      const auto [inputs, targets] = counts_[p];
      parts_[p].source().read(i, context, {out.inputs.subspan(input, inputs), out.targets.subspan(target, targets)});
      input += inputs;
      target += targets;
    }
  }
  std::string fingerprint() const override {
    std::string all;
    for (const Dataset& d : parts_) all += (all.empty() ? "" : " zipped with ") + d.fingerprint();
    return all;
  }

 private:
  // Names stay only where every part names its tensors.
  static void append(std::vector<TensorSpec>& specs, std::vector<std::string>& names, const std::vector<TensorSpec>& more,
                     const std::vector<std::string>& more_names) {
    const bool named = names.size() == specs.size() && more_names.size() == more.size();
    specs.insert(specs.end(), more.begin(), more.end());
    if (named) names.insert(names.end(), more_names.begin(), more_names.end());
    else names.clear();
  }
  std::vector<Dataset> parts_;
  std::vector<std::pair<std::size_t, std::size_t>> counts_;  // per part: its inputs and targets
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
  void read(std::int64_t i, const ReadContext& context, const SampleBuffers& out) const override {
    inner_->read(indices_[static_cast<std::size_t>(i)], context, out);
  }
  void read_targets(std::int64_t i, std::span<void* const> targets) const override {
    inner_->read_targets(indices_[static_cast<std::size_t>(i)], targets);
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

// Another source's inputs and targets in another order (Dataset::reordered).
class ReorderedSource final : public SampleSource {
 public:
  ReorderedSource(std::shared_ptr<const SampleSource> inner, std::vector<std::size_t> inputs, std::vector<std::size_t> targets)
      : inner_(std::move(inner)), inner_layout_(inner_->layout()), inputs_(std::move(inputs)), targets_(std::move(targets)) {
    const SampleLayout& l = inner_layout_;
    layout_.inputs = pick(l.inputs, inputs_);
    layout_.targets = pick(l.targets, targets_);
    layout_.input_names = pick(l.input_names, inputs_);
    layout_.target_names = pick(l.target_names, targets_);
  }
  std::string name() const override { return inner_->name(); }
  std::int64_t size() const override { return inner_->size(); }
  SampleLayout layout() const override { return layout_; }
  void read(std::int64_t i, const ReadContext& context, const SampleBuffers& out) const override {
    const Buffers inputs = buffers(inner_layout_.inputs, inputs_, out.inputs);
    const Buffers targets = buffers(inner_layout_.targets, targets_, out.targets);
    inner_->read(i, context, {inputs.pointers, targets.pointers});
  }
  std::string fingerprint() const override {
    return fmt::format("{} as inputs {} targets {}", inner_->fingerprint(), fmt::join(inputs_, ","), fmt::join(targets_, ","));
  }

 private:
  template <class T>
  static std::vector<T> pick(const std::vector<T>& all, const std::vector<std::size_t>& order) {
    if (all.empty()) return {};  // no names
    std::vector<T> out;
    for (const std::size_t k : order) out.push_back(all.at(k));
    return out;
  }
  // The inner source's buffers: `out`'s for the parts kept, memory of their own for those left out.
  struct Buffers {
    std::vector<std::vector<std::byte>> spare;
    std::vector<void*> pointers;
  };
  static Buffers buffers(const std::vector<TensorSpec>& specs, const std::vector<std::size_t>& kept,
                         std::span<void* const> out) {
    Buffers b;
    b.pointers.assign(specs.size(), nullptr);
    for (std::size_t k = 0; k < kept.size(); ++k) b.pointers[kept[k]] = out[k];
    for (std::size_t p = 0; p < specs.size(); ++p)
      if (b.pointers[p] == nullptr) b.pointers[p] = b.spare.emplace_back(specs[p].nbytes()).data();
    return b;
  }
  std::shared_ptr<const SampleSource> inner_;
  SampleLayout inner_layout_;
  std::vector<std::size_t> inputs_, targets_;
  SampleLayout layout_;
};

}  // namespace

Example detail::read_samples(const SampleSource& source, std::span<const std::int64_t> indices,
                             const ReadContext& context, bool parallel) {
  const SampleLayout layout = source.layout();
  const auto n = static_cast<std::int64_t>(indices.size());
  const auto batch_of = [n](const std::vector<TensorSpec>& specs) {
    std::vector<Tensor> out;
    for (const TensorSpec& s : specs)
      out.push_back(Tensor::empty(s.shape.prepend(n), {.dtype = s.dtype, .category = MemoryCategory::data}));
    return out;
  };
  Example batch{batch_of(layout.inputs), batch_of(layout.targets)};
  const auto read = [&](std::int64_t b, std::int64_t e) {
    for (auto k = static_cast<std::size_t>(b); k < static_cast<std::size_t>(e); ++k) {
      const std::vector<void*> inputs = rows_of(batch.inputs, k), targets = rows_of(batch.targets, k);
      source.read(indices[k], context, {inputs, targets});
    }
  };
  if (parallel)
    kernels::cpu::parallel_for(n, 1, read);
  else
    read(0, n);
  return batch;
}

Dataset::Dataset(Tensor inputs, Tensor targets, std::string name)
    : Dataset(std::vector<Tensor>{std::move(inputs)},
              targets.defined() ? std::vector<Tensor>{std::move(targets)} : std::vector<Tensor>{}, std::move(name)) {}

Dataset::Dataset(std::vector<Tensor> inputs, std::vector<Tensor> targets, std::string name)
    : source_(std::make_shared<const TensorSource>(std::move(inputs), std::move(targets), std::move(name))) {}

Dataset::Dataset(NamedTensors inputs, NamedTensors targets, std::string name) {
  std::vector<Tensor> in, tg;
  std::vector<std::string> in_names, tg_names;
  for (auto& [n, t] : inputs) {
    in_names.push_back(n);
    in.push_back(std::move(t));
  }
  for (auto& [n, t] : targets) {
    tg_names.push_back(n);
    tg.push_back(std::move(t));
  }
  source_ = std::make_shared<const TensorSource>(std::move(in), std::move(tg), std::move(name), std::move(in_names),
                                                 std::move(tg_names));
}

Dataset::Dataset(std::shared_ptr<const SampleSource> source) : source_(std::move(source)) {
  ACCRUE_CHECK(source_ != nullptr, "Dataset: the source is null");
}

Dataset Dataset::from(std::int64_t size, std::function<Example(std::int64_t)> get, std::string name) {
  ACCRUE_CHECK(static_cast<bool>(get), "Dataset::from('{}'): get is empty", name);
  return Dataset{std::make_shared<const FunctionSource>(size, std::move(get), std::move(name))};
}

Dataset Dataset::zip(const std::vector<Dataset>& parts, std::string name) {
  ACCRUE_CHECK(!parts.empty(), "Dataset::zip: no datasets to zip");
  for (const Dataset& d : parts)
    ACCRUE_CHECK(d.size() == parts[0].size(), "Dataset::zip: '{}' has {} samples, '{}' {} (zipped datasets must have one size)",
                 parts[0].name(), parts[0].size(), d.name(), d.size());
  if (name.empty())
    for (const Dataset& d : parts) name += (name.empty() ? "" : " + ") + d.name();
  Dataset zipped{std::make_shared<const ZipSource>(parts, name)};
  // Tensors zipped stay tensors (shared, not copied), so that loaders view and gather their rows.
  if (!std::all_of(parts.begin(), parts.end(), [](const Dataset& d) { return d.in_memory(); })) return zipped;
  Example tensors;
  for (const Dataset& d : parts) {
    const TensorSource& t = *d.source().tensors();
    tensors.inputs.insert(tensors.inputs.end(), t.inputs().begin(), t.inputs().end());
    tensors.targets.insert(tensors.targets.end(), t.targets().begin(), t.targets().end());
  }
  return zipped.in_memory_as(std::move(tensors));
}

const Tensor& detail::only_tensor(const std::vector<Tensor>& tensors, const char* what) {
  ACCRUE_CHECK(tensors.size() == 1, "the samples have {} {}s, not one: read them as a list ({}s)", tensors.size(), what,
               what);
  return tensors[0];
}

const Tensor& Example::input() const { return detail::only_tensor(inputs, "input"); }
const Tensor& Example::target() const { return detail::only_tensor(targets, "target"); }

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
  ACCRUE_CHECK(t->inputs().size() == 1, "dataset '{}': its samples have {} inputs, not one: read them with slice()",
               name(), t->inputs().size());
  return t->inputs()[0];
}

Tensor Dataset::targets() const {
  ACCRUE_CHECK(layout().targets.size() == 1, "dataset '{}': its samples have {} targets, not one: read each with target(k)",
               name(), layout().targets.size());
  return target(0);
}

Tensor Dataset::target(std::size_t k) const {
  const SampleLayout layout = source().layout();
  ACCRUE_CHECK(k < layout.targets.size(), "dataset '{}': no target {} (its samples have {})", name(), k,
               layout.targets.size());
  if (const TensorSource* t = source().tensors()) return t->targets()[k];
  std::vector<Tensor> all;
  for (const TensorSpec& spec : layout.targets)
    all.push_back(Tensor::empty(spec.shape.prepend(size()), {.dtype = spec.dtype, .category = MemoryCategory::data}));
  for (std::int64_t i = 0; i < size(); ++i) source_->read_targets(i, rows_of(all, static_cast<std::size_t>(i)));
  return all[k];
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
    const auto rows = [&](const std::vector<Tensor>& all) {
      std::vector<Tensor> out;
      for (const Tensor& x : all) out.push_back(ops::narrow(x, begin, end));
      return out;
    };
    return {rows(t->inputs()), rows(t->targets())};
  }
  std::vector<std::int64_t> indices(static_cast<std::size_t>(end - begin));
  std::iota(indices.begin(), indices.end(), begin);
  return detail::read_samples(*source_, indices, context, true);
}

Example Dataset::gather(std::span<const std::int64_t> indices, const ReadContext& context) const {
  for (std::int64_t i : indices)
    ACCRUE_CHECK(i >= 0 && i < size(), "dataset '{}': sample {} is outside [0, {})", name(), i, size());
  if (const TensorSource* t = source().tensors()) {
    ACCRUE_CHECK(t->inputs()[0].device().is_cpu(), "dataset '{}': gathering samples needs the data on the CPU", name());
    const auto rows = [&](const std::vector<Tensor>& all) {
      std::vector<Tensor> out;
      for (const Tensor& x : all) out.push_back(gather_rows(x, indices));
      return out;
    };
    return {rows(t->inputs()), rows(t->targets())};
  }
  return detail::read_samples(*source_, indices, context, true);
}

Dataset Dataset::reordered(const std::vector<std::size_t>& inputs, const std::vector<std::size_t>& targets) const {
  const SampleLayout l = layout();
  for (const auto& [order, count, what] : {std::tuple{&inputs, l.inputs.size(), "input"}, {&targets, l.targets.size(), "target"}}) {
    std::vector<bool> seen(count);
    for (const std::size_t k : *order) {
      ACCRUE_CHECK(k < count && !seen[k], "dataset '{}': {} {} {} (its samples have {})", name(), what, k,
                   k < count ? "given twice" : "does not exist", count);
      seen[k] = true;
    }
  }
  Dataset out{std::make_shared<const ReorderedSource>(source_, inputs, targets)};
  if (const TensorSource* t = source().tensors()) {  // the same tensors, which loaders view and gather
    Example tensors;
    for (const std::size_t k : inputs) tensors.inputs.push_back(t->inputs()[k]);
    for (const std::size_t k : targets) tensors.targets.push_back(t->targets()[k]);
    out = out.in_memory_as(std::move(tensors));
  }
  out.weights_ = weights_;
  if (meaning_) {
    Meaning m;
    if (!targets.empty() && targets[0] == 0) m.class_names = meaning_->class_names;  // the first target stays first
    if (!meaning_->table_columns.empty())
      for (const std::size_t k : inputs) m.table_columns.push_back(meaning_->table_columns.at(k));
    out.meaning_ = std::make_shared<const Meaning>(std::move(m));
  }
  return out;
}

Dataset Dataset::in_memory_as(Example samples) const {
  const SampleLayout l = layout();
  return Dataset{std::make_shared<const TensorSource>(std::move(samples.inputs), std::move(samples.targets), name(),
                                                      l.input_names, l.target_names)};
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
  if (source().tensors()) return carried_over(in_memory_as(slice(begin, end)), indices);
  return select(std::move(indices));
}

Dataset Dataset::select(std::vector<std::int64_t> indices) const {
  for (std::int64_t i : indices)
    ACCRUE_CHECK(i >= 0 && i < size(), "dataset '{}': sample {} is outside [0, {})", name(), i, size());
  if (source().tensors()) return carried_over(in_memory_as(gather(indices)), indices);
  Dataset selected{std::make_shared<const SelectedSource>(source_, indices)};
  return carried_over(std::move(selected), indices);
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

const std::vector<std::string>& Dataset::class_names() const {
  static const std::vector<std::string> none;
  return meaning_ ? meaning_->class_names : none;
}

Dataset Dataset::with_class_names(std::vector<std::string> names) const {
  Dataset out = *this;
  Meaning m = meaning_ ? *meaning_ : Meaning{};
  m.class_names = std::move(names);
  out.meaning_ = std::make_shared<const Meaning>(std::move(m));
  return out;
}

const std::vector<std::optional<TableColumns>>& Dataset::table_columns() const {
  static const std::vector<std::optional<TableColumns>> none;
  return meaning_ ? meaning_->table_columns : none;
}

Dataset Dataset::with_table_columns(std::vector<std::optional<TableColumns>> columns) const {
  ACCRUE_CHECK(columns.empty() || columns.size() == layout().inputs.size(),
               "dataset '{}': table columns for {} inputs, but its samples have {}", name(), columns.size(),
               layout().inputs.size());
  Dataset out = *this;
  Meaning m = meaning_ ? *meaning_ : Meaning{};
  m.table_columns = std::move(columns);
  out.meaning_ = std::make_shared<const Meaning>(std::move(m));
  return out;
}

Dataset Dataset::carried_over(Dataset to, std::span<const std::int64_t> indices) const {
  to.meaning_ = meaning_;
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
  Dataset out = in_memory_as(slice(0, size()));
  out.weights_ = weights_;
  out.meaning_ = meaning_;
  return out;
}

}  // namespace accrue
