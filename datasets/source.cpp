#include "source.hpp"

#include <zlib.h>

#include <cstring>
#include <vector>

#include "../framework/autograd/autograd.hpp"
#include "../framework/ops/ops.hpp"

namespace accrue {

std::string crc32_fingerprint(std::uint32_t crc) { return fmt::format("crc32 {:08x}", crc); }

void SampleSource::read_target(std::int64_t i, void* target) const {
  std::vector<std::byte> input(layout().input.nbytes());
  read(i, {}, input.data(), target);
}

std::string SampleSource::fingerprint() const {
  const SampleLayout l = layout();
  std::vector<std::byte> input(l.input.nbytes()), target(l.target.nbytes());
  const std::string text = fmt::format("{} {} {} {};", dtype_name(l.input.dtype), l.input.shape,
                                       dtype_name(l.target.dtype), l.target.shape);
  uLong crc = crc32_z(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(text.data()), text.size());
  for (std::int64_t i = 0; i < size(); ++i) {
    read(i, {}, input.data(), target.data());
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(input.data()), input.size());
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(target.data()), target.size());
  }
  return crc32_fingerprint(static_cast<std::uint32_t>(crc));
}

TensorSource::TensorSource(Tensor inputs, Tensor targets, std::string name)
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

SampleLayout TensorSource::layout() const {
  return {{inputs_.shape().drop_front(), inputs_.dtype()}, {targets_.shape().drop_front(), targets_.dtype()}};
}

namespace {
void copy_row(const Tensor& t, std::int64_t i, void* out) {
  const NoGradGuard no_grad;
  const Tensor row = ops::narrow(t, i, i + 1).to(Device::cpu());
  std::memcpy(out, row.data_ptr(), row.nbytes());
}
}  // namespace

void TensorSource::read(std::int64_t i, const ReadContext&, void* input, void* target) const {
  copy_row(inputs_, i, input);
  copy_row(targets_, i, target);
}

void TensorSource::read_target(std::int64_t i, void* target) const { copy_row(targets_, i, target); }

std::string TensorSource::fingerprint() const {
  uLong crc = crc32(0, nullptr, 0);
  for (const Tensor* t : {&inputs_, &targets_}) {
    const Tensor host = t->to(Device::cpu());
    const std::string layout = fmt::format("{} {};", dtype_name(host.dtype()), host.shape());
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(layout.data()), layout.size());
    crc = crc32_z(crc, static_cast<const Bytef*>(host.data_ptr()), host.nbytes());
  }
  return crc32_fingerprint(static_cast<std::uint32_t>(crc));
}

}  // namespace accrue
