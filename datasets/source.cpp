#include "source.hpp"

#include <zlib.h>

#include <cstring>
#include <vector>

#include "../framework/autograd/autograd.hpp"
#include "../framework/ops/ops.hpp"

namespace accrue {

std::string crc32_fingerprint(std::uint32_t crc) { return fmt::format("crc32 {:08x}", crc); }

namespace {

const TensorSpec& the_one(const std::vector<TensorSpec>& specs, const char* what) {
  ACCRUE_CHECK(specs.size() == 1, "the samples have {} {}s, not one: read them as a list (SampleLayout::{}s)",
               specs.size(), what, what);
  return specs[0];
}

std::string specs_str(const std::vector<TensorSpec>& specs, const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t k = 0; k < specs.size(); ++k)
    out += fmt::format("{}{}{} {}", k == 0 ? "" : ", ", names.empty() ? std::string{} : fmt::format("'{}' ", names[k]),
                       dtype_name(specs[k].dtype), specs[k].shape);
  return specs.empty() ? std::string{"nothing"} : out;
}

}  // namespace

const TensorSpec& SampleLayout::input() const { return the_one(inputs, "input"); }
const TensorSpec& SampleLayout::target() const { return the_one(targets, "target"); }
std::string SampleLayout::str() const {
  return fmt::format("{} -> {}", specs_str(inputs, input_names), specs_str(targets, target_names));
}

void SampleSource::read_targets(std::int64_t i, std::span<void* const> targets) const {
  detail::PartBuffers inputs{layout().inputs};
  read(i, {}, {inputs.pointers, targets});
}

detail::PartBuffers::PartBuffers(const std::vector<TensorSpec>& specs) {
  for (const TensorSpec& s : specs) bytes.emplace_back(s.nbytes());
  for (std::vector<std::byte>& b : bytes) pointers.push_back(b.data());
}

std::string SampleSource::fingerprint() const {
  const SampleLayout l = layout();
  detail::PartBuffers inputs{l.inputs}, targets{l.targets};
  std::string text;  // "f32 (3,) i32 ();" for one input and one target, as fingerprints always read
  for (const std::vector<TensorSpec>* specs : {&l.inputs, &l.targets})
    for (const TensorSpec& spec : *specs) text += fmt::format("{}{} {}", text.empty() ? "" : " ", dtype_name(spec.dtype), spec.shape);
  text += ";";
  uLong crc = crc32_z(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(text.data()), text.size());
  for (std::int64_t i = 0; i < size(); ++i) {
    read(i, {}, {inputs.pointers, targets.pointers});
    for (const detail::PartBuffers* part : {&inputs, &targets})
      for (const std::vector<std::byte>& b : part->bytes)
        crc = crc32_z(crc, reinterpret_cast<const Bytef*>(b.data()), b.size());
  }
  return crc32_fingerprint(static_cast<std::uint32_t>(crc));
}

TensorSource::TensorSource(Tensor inputs, Tensor targets, std::string name)
    : TensorSource(std::vector<Tensor>{std::move(inputs)}, std::vector<Tensor>{std::move(targets)}, std::move(name)) {}

TensorSource::TensorSource(std::vector<Tensor> inputs, std::vector<Tensor> targets, std::string name,
                           std::vector<std::string> input_names, std::vector<std::string> target_names)
    : inputs_(std::move(inputs)), targets_(std::move(targets)), name_(std::move(name)) {
  ACCRUE_CHECK(!inputs_.empty(), "dataset '{}': no input tensors", name_);
  ACCRUE_CHECK(input_names.empty() || input_names.size() == inputs_.size(), "dataset '{}': {} names for {} inputs",
               name_, input_names.size(), inputs_.size());
  ACCRUE_CHECK(target_names.empty() || target_names.size() == targets_.size(), "dataset '{}': {} names for {} targets",
               name_, target_names.size(), targets_.size());
  layout_.input_names = std::move(input_names);
  layout_.target_names = std::move(target_names);
  const auto part = [&](std::size_t k) {
    const bool input = k < inputs_.size();
    const std::vector<std::string>& names = input ? layout_.input_names : layout_.target_names;
    const std::size_t j = input ? k : k - inputs_.size();
    return fmt::format("{} {}", input ? "input" : "target", names.empty() ? std::to_string(j) : "'" + names[j] + "'");
  };
  for (std::size_t k = 0; k < inputs_.size() + targets_.size(); ++k) {
    Tensor& t = k < inputs_.size() ? inputs_[k] : targets_[k - inputs_.size()];
    ACCRUE_CHECK(t.defined(), "dataset '{}': {} is undefined", name_, part(k));
    ACCRUE_CHECK_SHAPE(t.rank() >= 1, "dataset '{}': {} of shape {} needs a first (sample) dimension", name_, part(k),
                       t.shape());
    ACCRUE_CHECK_SHAPE(t.size(0) == inputs_[0].size(0), "dataset '{}': {} samples in {} (shape {}) but {} in {} (shape {})",
                       name_, inputs_[0].size(0), part(0), inputs_[0].shape(), t.size(0), part(k), t.shape());
    ACCRUE_CHECK(t.device() == inputs_[0].device(), "dataset '{}': {} on {}, {} on {}", name_, part(0),
                 inputs_[0].device(), part(k), t.device());
    // What a dataset holds counts as data, however its tensors were made (parameters stay parameters).
    if (t.category() == MemoryCategory::temporaries) t.storage()->set_category(MemoryCategory::data);
    (k < inputs_.size() ? layout_.inputs : layout_.targets).push_back({t.shape().drop_front(), t.dtype()});
  }
  size_ = inputs_[0].size(0);
}

namespace {
void copy_row(const Tensor& t, std::int64_t i, void* out) {
  const NoGradGuard no_grad;
  const Tensor row = ops::narrow(t, i, i + 1).to(Device::cpu());
  std::memcpy(out, row.data_ptr(), row.nbytes());
}
}  // namespace

void TensorSource::read(std::int64_t i, const ReadContext&, const SampleBuffers& out) const {
  for (std::size_t k = 0; k < inputs_.size(); ++k) copy_row(inputs_[k], i, out.inputs[k]);
  read_targets(i, out.targets);
}

void TensorSource::read_targets(std::int64_t i, std::span<void* const> targets) const {
  for (std::size_t k = 0; k < targets_.size(); ++k) copy_row(targets_[k], i, targets[k]);
}

std::string TensorSource::fingerprint() const {
  uLong crc = crc32(0, nullptr, 0);
  std::vector<const Tensor*> all;
  for (const Tensor& t : inputs_) all.push_back(&t);
  for (const Tensor& t : targets_) all.push_back(&t);
  for (const Tensor* t : all) {
    const Tensor host = t->to(Device::cpu());
    const std::string layout = fmt::format("{} {};", dtype_name(host.dtype()), host.shape());
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(layout.data()), layout.size());
    crc = crc32_z(crc, static_cast<const Bytef*>(host.data_ptr()), host.nbytes());
  }
  return crc32_fingerprint(static_cast<std::uint32_t>(crc));
}

}  // namespace accrue
