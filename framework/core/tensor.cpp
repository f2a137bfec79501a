#include "tensor.hpp"
// The core of Tensor: storage, shape, dtype, views and the gradient slots, which run no kernel.
// What reads, writes or moves values (fills, casts, copies between devices), ops on tensors and
// backward stand above the kernels, in tensor_values.cpp.

#include <cmath>
#include <cstring>


namespace accrue {

namespace {
std::shared_ptr<detail::TensorImpl> make_impl(const Shape& shape, const TensorOptions& o) {
  auto impl = std::make_shared<detail::TensorImpl>();
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * dtype_size(o.dtype);
  impl->storage = std::make_shared<Storage>(bytes, o.device, o.category);
  impl->shape = shape;
  impl->dtype = o.dtype;
  return impl;
}

void finish_leaf(Tensor& t, const TensorOptions& o) {
  if (o.requires_grad) t.set_requires_grad(true);
}
}  // namespace

Tensor Tensor::empty(const Shape& shape, const TensorOptions& options) {
  Tensor t{make_impl(shape, options)};
  finish_leaf(t, options);
  return t;
}

void* Tensor::data_ptr() const {
  const auto& impl = checked();
  return static_cast<char*>(impl.storage->data()) + impl.offset * static_cast<std::int64_t>(dtype_size(impl.dtype));
}

void Tensor::check_dtype(DType wanted) const {
  const auto& impl = checked();
  if (impl.dtype != wanted)
    throw ValueError(fmt::format("tensor of dtype {} read as {}", dtype_name(impl.dtype), dtype_name(wanted)));
}

void Tensor::check_access(DType wanted) const {
  check_dtype(wanted);
  const auto& impl = checked();
  if (!impl.storage->device().is_cpu())
    throw ValueError(fmt::format("tensor on {} read from the host; copy it with .to(Device::cpu()) first",
                                 impl.storage->device()));
}

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  auto& impl = const_cast<detail::TensorImpl&>(checked());
  if (requires_grad) {
    ACCRUE_CHECK(impl.grad_fn == nullptr,
                 "set_requires_grad on the result of an op: only leaf tensors (parameters, inputs) gather gradients; "
                 "use detach() first");
    ACCRUE_CHECK(is_floating(impl.dtype), "a {} tensor cannot require grad", dtype_name(impl.dtype));
  }
  impl.requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  const auto& impl = checked();
  return impl.grad ? Tensor{impl.grad} : Tensor{};
}

namespace {

// `grad` as the gradient of `impl` (checked), or null for an undefined one; `call` names the setter.
std::shared_ptr<detail::TensorImpl> checked_gradient(const detail::TensorImpl& impl, const Tensor& grad,
                                                     std::string_view call) {
  if (!grad.defined()) return nullptr;
  ACCRUE_CHECK_SHAPE(grad.shape() == impl.shape, "{}: gradient of shape {} for a tensor of shape {}", call, grad.shape(),
                     impl.shape);
  ACCRUE_CHECK(grad.dtype() == impl.dtype && grad.device() == impl.storage->device(),
               "{}: gradient is {} on {}, the tensor {} on {}", call, dtype_name(grad.dtype()), grad.device(),
               dtype_name(impl.dtype), impl.storage->device());
  return grad.impl();
}

}  // namespace

void Tensor::set_grad(const Tensor& grad) {
  auto& impl = const_cast<detail::TensorImpl&>(checked());
  impl.grad = checked_gradient(impl, grad, "set_grad");
}

void Tensor::set_grad_place(const Tensor& place) {
  auto& impl = const_cast<detail::TensorImpl&>(checked());
  ACCRUE_CHECK(impl.grad_fn == nullptr, "set_grad_place: only a leaf gathers a gradient");
  impl.grad_place = checked_gradient(impl, place, "set_grad_place");
}

Tensor Tensor::detach() const {
  const auto& impl = checked();
  auto copy = std::make_shared<detail::TensorImpl>();
  copy->storage = impl.storage;
  copy->offset = impl.offset;
  copy->shape = impl.shape;
  copy->dtype = impl.dtype;
  return Tensor{copy};
}

Tensor Tensor::view_as_shape(const Shape& shape) const {
  Tensor t = detach();
  ACCRUE_ASSERT(shape.numel() == numel());
  t.impl_->shape = shape;
  return t;
}

}  // namespace accrue
