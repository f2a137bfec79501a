#pragma once
// Tensor: a shared handle to a contiguous, row-major block of one dtype on one device.
//
// Copying a Tensor copies the handle, not the data (as in PyTorch); clone() copies the data.
// Views (reshape, narrow) share storage with their base. A tensor that requires grad takes part
// in autograd: ops on it record what backward needs, and backward() adds into .grad().

#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "device.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "printable.hpp"
#include "memory.hpp"
#include "shape.hpp"
#include "storage.hpp"

namespace accrue {

class Node;
class Generator;

/// How a new tensor is made: dtype, device, the memory category it is counted under, and
/// whether it is a leaf that gathers gradients.
struct TensorOptions {
  DType dtype = DType::f32;
  Device device = Device::cpu();
  MemoryCategory category = MemoryCategory::temporaries;
  bool requires_grad = false;
};

namespace detail {
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  std::int64_t offset = 0;  // in elements
  Shape shape;
  DType dtype = DType::f32;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;  // leaf tensors only
  // Leaf tensors only: where backward writes the gradient when `grad` is undefined (else a new
  // tensor); data-parallel training points it into a bucket.
  std::shared_ptr<TensorImpl> grad_place;
  std::shared_ptr<Node> grad_fn;     // set on results of recorded ops
};
}  // namespace detail

class Tensor {
 public:
  /// An undefined tensor (no storage); most calls on it throw.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- factories -------------------------------------------------------------------------
  /// Uninitialised contents.
  static Tensor empty(const Shape& shape, const TensorOptions& options = {});
  static Tensor zeros(const Shape& shape, const TensorOptions& options = {});
  static Tensor ones(const Shape& shape, const TensorOptions& options = {});
  static Tensor full(const Shape& shape, float value, const TensorOptions& options = {});
  /// A one-element tensor of shape ().
  static Tensor scalar(float value, const TensorOptions& options = {});
  /// Copies `values` into a new float32 tensor; throws ShapeError when the counts differ.
  static Tensor from(std::span<const float> values, const Shape& shape, const TensorOptions& options = {});
  /// Copies `values` into a new int32 tensor (labels).
  static Tensor from(std::span<const std::int32_t> values, const Shape& shape, TensorOptions options = {.dtype = DType::i32});
  static Tensor from(std::initializer_list<float> values, const Shape& shape, const TensorOptions& options = {});
  /// Uniform in [low, high) from `gen` (the default generator when null).
  static Tensor uniform(const Shape& shape, float low, float high, Generator* gen = nullptr,
                        const TensorOptions& options = {});
  /// Normal with the given mean and standard deviation from `gen` (the default generator when null).
  static Tensor normal(const Shape& shape, float mean = 0.0f, float stddev = 1.0f, Generator* gen = nullptr,
                       const TensorOptions& options = {});

  // ---- properties ------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return checked().shape; }
  int rank() const { return shape().rank(); }
  /// Size of dimension `dim` (negative counts from the end).
  std::int64_t size(int dim) const { return shape()[dim]; }
  std::int64_t numel() const { return shape().numel(); }
  DType dtype() const { return checked().dtype; }
  Device device() const { return checked().storage->device(); }
  MemoryCategory category() const { return checked().storage->category(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype()); }

  /// Typed pointer to the first element, for reading and writing on the host. Throws when T does
  /// not match the dtype or the tensor is not on the CPU.
  template <class T>
  T* data() const {
    check_access(dtype_of<T>::value);
    return static_cast<T*>(checked().storage->data()) + impl_->offset;
  }
  /// Typed pointer to the first element in the tensor's device memory (a GPU address for a CUDA
  /// tensor), for kernels. Throws when T does not match the dtype.
  template <class T>
  T* device_data() const {
    check_dtype(dtype_of<T>::value);
    return static_cast<T*>(checked().storage->data()) + impl_->offset;
  }
  /// Untyped pointer to the first element in the tensor's device memory.
  void* data_ptr() const;

  /// The value of a one-element tensor (a loss), copied to the host as float.
  float item() const;
  /// All elements copied to a host vector.
  template <class T = float>
  std::vector<T> to_vector() const;

  // ---- autograd --------------------------------------------------------------------------
  bool requires_grad() const { return checked().requires_grad; }
  /// Makes this leaf gather gradients. Throws for a non-leaf or an integer tensor.
  Tensor& set_requires_grad(bool requires_grad = true);
  /// The gradient gathered by backward(); undefined until a backward reaches this leaf.
  Tensor grad() const;
  /// Replaces the gradient (undefined clears it). Throws on a shape or dtype mismatch.
  void set_grad(const Tensor& grad);
  /// Makes every backward that finds this leaf without a gradient write the gradient into `place`
  /// (same shape, dtype and device) and make it the .grad(), instead of allocating one; undefined
  /// goes back to allocating. Data-parallel training points it into its buckets, so gradients
  /// start there without being zeroed or copied (PyTorch DDP's gradient_as_bucket_view).
  void set_grad_place(const Tensor& place);
  /// True for tensors not produced by a recorded op.
  bool is_leaf() const { return checked().grad_fn == nullptr; }
  const std::shared_ptr<Node>& grad_fn() const { return checked().grad_fn; }
  /// Back-propagates from this one-element tensor, adding into every reachable leaf's .grad().
  /// The graph's saved tensors are freed afterwards unless `retain_graph`.
  void backward(bool retain_graph = false) const;
  /// Back-propagates `gradient` (same shape as this tensor).
  void backward(const Tensor& gradient, bool retain_graph = false) const;
  /// The same data, cut off from the graph.
  Tensor detach() const;

  // ---- views and copies ------------------------------------------------------------------
  /// Same data, another shape with as many elements (differentiable).
  Tensor reshape(const Shape& shape) const;
  /// Rows [begin, end) along dimension 0, sharing storage (differentiable).
  Tensor narrow(std::int64_t begin, std::int64_t end) const;
  /// A copy with its own storage (differentiable).
  Tensor clone() const;
  /// A copy on `device` (this tensor when already there), counted under the same memory category.
  Tensor to(Device device) const;
  /// Moves this leaf's data (and its gradient) to `device` in place: every handle to the tensor
  /// sees the new location. How models and optimizers move their parameters and state.
  Tensor& to_(Device device);

  // ---- in-place writes (not recorded by autograd) ---------------------------------------
  Tensor& fill_(float value);
  Tensor& zero_() { return fill_(0.0f); }
  /// Copies `src` (same shape and dtype) into this tensor.
  Tensor& copy_(const Tensor& src);

  /// Up to `max_elements` values with the shape and dtype, for printing and error messages.
  std::string str(std::int64_t max_elements = 12) const;

  // ---- internals shared with autograd and kernels ----------------------------------------
  const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }
  const std::shared_ptr<Storage>& storage() const { return checked().storage; }
  /// True when no other handle or view can see this tensor's data, so it may be reused in place.
  bool is_exclusive() const { return impl_.use_count() == 1 && checked().storage.use_count() == 1; }
  /// Marks the storage as written in place (see Storage::version).
  void bump_version() const { checked().storage->bump_version(); }
  /// A tensor of the same storage, offset and dtype with another shape; not recorded.
  Tensor view_as_shape(const Shape& shape) const;

 private:
  const detail::TensorImpl& checked() const {
    if (!impl_) throw ValueError("use of an undefined tensor (default-constructed, or a gradient not computed yet)");
    return *impl_;
  }
  void check_access(DType wanted) const;
  void check_dtype(DType wanted) const;

  std::shared_ptr<detail::TensorImpl> impl_;
};

/// The tensor's str(): up to 12 values with its shape and dtype.
inline std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace accrue

template <>
struct fmt::formatter<accrue::Tensor> : accrue::StrFormatter<accrue::Tensor> {};
