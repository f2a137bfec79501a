// Tensor's members that read, write or move values (fills, casts, copies between devices): they
// run kernels, so they stand beside them, above the core of Tensor (tensor.cpp); kernels may use
// them. Its ops (reshape, narrow, clone) and backward stand above autograd, in tensor_ops.cpp.

#include <cmath>
#include <cstring>

#include "../framework/core/random.hpp"
#include "../framework/core/tensor.hpp"
#include "cast.hpp"
#include "elementwise.hpp"

namespace accrue {

namespace {
TensorOptions without_grad(TensorOptions o) {
  o.requires_grad = false;
  return o;
}
// A tensor made without requires_grad gets it once its values are in.
void finish_leaf(Tensor& t, const TensorOptions& o) {
  if (o.requires_grad) t.set_requires_grad(true);
}
// A tensor of `shape` that `fill(t, seed, offset)` fills from the next numbers of `gen` (the default
// generator when null), a leaf as `options` say.
template <class Fill>
Tensor random_leaf(const Shape& shape, Generator* gen, const TensorOptions& options, const Fill& fill) {
  Generator& g = gen != nullptr ? *gen : default_generator();
  Tensor t = Tensor::empty(shape, without_grad(options));
  const std::uint64_t offset = g.reserve(static_cast<std::uint64_t>(t.numel()));
  fill(t, g.seed(), offset);
  finish_leaf(t, options);
  return t;
}

}  // namespace

Tensor Tensor::zeros(const Shape& shape, const TensorOptions& options) { return full(shape, 0.0f, options); }

Tensor Tensor::ones(const Shape& shape, const TensorOptions& options) { return full(shape, 1.0f, options); }

Tensor Tensor::full(const Shape& shape, float value, const TensorOptions& options) {
  Tensor t = empty(shape, without_grad(options));
  t.fill_(value);
  finish_leaf(t, options);
  return t;
}

Tensor Tensor::scalar(float value, const TensorOptions& options) { return full(Shape{}, value, options); }

Tensor Tensor::from(std::span<const float> values, const Shape& shape, const TensorOptions& options) {
  ACCRUE_CHECK_SHAPE(static_cast<std::int64_t>(values.size()) == shape.numel(),
                     "Tensor::from: {} values cannot fill shape {} ({} elements)", values.size(), shape, shape.numel());
  ACCRUE_CHECK(is_floating(options.dtype), "Tensor::from(float values) makes floating-point tensors, not {}",
               dtype_name(options.dtype));
  Tensor t = empty(shape, {.dtype = DType::f32, .category = options.category});
  if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size_bytes());
  // Values convert to the requested dtype, rounding to nearest even.
  if (options.dtype != DType::f32) {
    const Tensor floats = t;
    t = empty(shape, {.dtype = options.dtype, .category = options.category});
    if (!values.empty()) kernels::cast(floats, t);
  }
  Tensor result = t.to(options.device);
  finish_leaf(result, options);
  return result;
}

Tensor Tensor::from(std::span<const std::int32_t> values, const Shape& shape, TensorOptions options) {
  ACCRUE_CHECK_SHAPE(static_cast<std::int64_t>(values.size()) == shape.numel(),
                     "Tensor::from: {} values cannot fill shape {} ({} elements)", values.size(), shape, shape.numel());
  options.dtype = DType::i32;
  Tensor t = empty(shape, {.dtype = DType::i32, .category = options.category});
  if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size_bytes());
  return t.to(options.device);
}

Tensor Tensor::from(std::initializer_list<float> values, const Shape& shape, const TensorOptions& options) {
  return from(std::span<const float>(values.begin(), values.size()), shape, options);
}

Tensor Tensor::uniform(const Shape& shape, float low, float high, Generator* gen, const TensorOptions& options) {
  ACCRUE_CHECK(low <= high, "Tensor::uniform needs low <= high, got [{}, {})", low, high);
  return random_leaf(shape, gen, options, [&](const Tensor& t, std::uint64_t seed, std::uint64_t offset) {
    kernels::fill_uniform(t, low, high, seed, offset);
  });
}

Tensor Tensor::normal(const Shape& shape, float mean, float stddev, Generator* gen, const TensorOptions& options) {
  ACCRUE_CHECK(stddev >= 0.0f, "Tensor::normal needs a non-negative standard deviation, got {}", stddev);
  return random_leaf(shape, gen, options, [&](const Tensor& t, std::uint64_t seed, std::uint64_t offset) {
    kernels::fill_normal(t, mean, stddev, seed, offset);
  });
}

float Tensor::item() const {
  ACCRUE_CHECK(numel() == 1, "item() needs a one-element tensor, got shape {}", shape());
  if (dtype() == DType::i32) return static_cast<float>(*to(Device::cpu()).data<std::int32_t>());
  return to_vector<float>()[0];
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  const Tensor host = to(Device::cpu());
  if constexpr (std::is_same_v<T, float>) {
    if (is_low_precision(dtype())) {
      const Tensor floats = empty(shape(), {.dtype = DType::f32, .category = category()});
      if (numel() > 0) kernels::cast(host, floats);
      const float* p = floats.data<float>();
      return std::vector<float>(p, p + numel());
    }
  }
  const T* p = host.data<T>();
  return std::vector<T>(p, p + numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<std::int32_t> Tensor::to_vector<std::int32_t>() const;
template std::vector<bfloat16> Tensor::to_vector<bfloat16>() const;
template std::vector<float16> Tensor::to_vector<float16>() const;


Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  Tensor out = Tensor::empty(shape(), {.dtype = dtype(), .device = device, .category = category()});
  kernels::transfer(*this, out);
  return out;
}

Tensor& Tensor::to_(Device device) {
  if (device == this->device()) return *this;
  ACCRUE_CHECK(is_leaf(), "to_({}) moves leaf tensors (parameters, optimizer state) in place; use to() for the "
               "result of an op", device);
  auto& impl = const_cast<detail::TensorImpl&>(checked());
  const Tensor moved = to(device);
  impl.storage = moved.impl()->storage;
  impl.offset = 0;
  if (impl.grad) {
    Tensor grad{impl.grad};
    grad.to_(device);
  }
  return *this;
}

Tensor& Tensor::fill_(float value) {
  if (dtype() == DType::i32) {
    ACCRUE_CHECK(value == std::floor(value), "cannot fill an int32 tensor with {}", value);
    if (device().is_cpu()) {
      auto* p = data<std::int32_t>();
      for (std::int64_t i = 0; i < numel(); ++i) p[i] = static_cast<std::int32_t>(value);
      bump_version();
    } else {
      copy_(Tensor::from(std::vector<std::int32_t>(static_cast<std::size_t>(numel()), static_cast<std::int32_t>(value)),
                         shape()));
    }
  } else if (is_low_precision(dtype())) {
    kernels::cast(Tensor::full(shape(), value, {.device = device()}), *this);
  } else {
    kernels::fill(*this, value);
  }
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  ACCRUE_CHECK_SHAPE(src.shape() == shape(), "copy_: source of shape {} into a tensor of shape {}", src.shape(), shape());
  ACCRUE_CHECK(src.dtype() == dtype(), "copy_: source of dtype {} into a tensor of dtype {}", dtype_name(src.dtype()),
               dtype_name(dtype()));
  kernels::transfer(src, *this);
  return *this;
}

std::string Tensor::str(std::int64_t max_elements) const {
  if (!defined()) return "Tensor(undefined)";
  const Tensor host = to(Device::cpu());
  std::string values;
  const std::int64_t n = std::min(numel(), max_elements);
  const std::vector<float> floats = dtype() == DType::i32 ? std::vector<float>{} : host.to_vector<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    if (i > 0) values += ", ";
    values += dtype() == DType::i32 ? fmt::format("{}", host.data<std::int32_t>()[i])
                                    : fmt::format("{:.6g}", floats[static_cast<std::size_t>(i)]);
  }
  if (n < numel()) values += ", ...";
  return fmt::format("Tensor([{}], shape={}, dtype={}, device={}{})", values, shape(), dtype_name(dtype()), device(),
                     requires_grad() ? ", requires_grad" : "");
}

}  // namespace accrue
