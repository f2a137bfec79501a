// Conversion between floating-point dtypes, the link between float32 master weights and
// low-precision compute.

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "../../kernels/cast.hpp"

namespace accrue::ops {
namespace {

class CastNode final : public Node {
 public:
  explicit CastNode(DType from) : from_(from) {}
  std::string_view name() const override { return "cast"; }
  void backward(Tensor grad, GradSink& sink) override {
    Tensor converted = Tensor::empty(grad.shape(), {.dtype = from_, .device = grad.device()});
    kernels::cast(grad, converted);
    sink.add(0, std::move(converted));
  }

 private:
  DType from_;
};

}  // namespace

Tensor cast(const Tensor& x, DType dtype) {
  ACCRUE_CHECK(x.defined(), "cast: the input tensor is undefined");
  ACCRUE_CHECK(is_floating(x.dtype()) && is_floating(dtype), "cast: only floating-point dtypes convert ({} to {})",
               dtype_name(x.dtype()), dtype_name(dtype));
  if (x.dtype() == dtype) return x;
  Tensor out = Tensor::empty(x.shape(), {.dtype = dtype, .device = x.device()});
  kernels::cast(x, out);
  if (needs_grad({&x})) record(std::make_shared<CastNode>(x.dtype()), out, {&x});
  return out;
}

Tensor float32(const Tensor& x) { return cast(x, DType::f32); }

}  // namespace accrue::ops
