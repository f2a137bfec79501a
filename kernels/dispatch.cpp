#include "accrue/kernels/dispatch.hpp"

#include "accrue/config.hpp"

namespace accrue::kernels {

void unsupported_device(std::string_view kernel, Device device) {
  if (device.is_cuda() && !ACCRUE_WITH_CUDA)
    throw NotSupported(fmt::format("kernel {} was asked to run on {}, but this build has no CUDA backend", kernel, device));
  throw NotSupported(fmt::format("kernel {} has no implementation for {} yet", kernel, device));
}

void expect_tensors(std::string_view kernel, Device device, DType dtype, std::initializer_list<const Tensor*> tensors) {
  int i = 0;
  for (const Tensor* t : tensors) {
    if (!t->defined()) throw InternalError(fmt::format("internal error (a bug in Accrue): kernel {} got an undefined tensor as argument {}", kernel, i));
    if (t->device() != device)
      throw ValueError(fmt::format("kernel {}: argument {} is on {} but the others are on {}; move them to one device", kernel, i,
                                   t->device(), device));
    if (t->dtype() != dtype)
      throw NotSupported(fmt::format("kernel {}: argument {} has dtype {}, expected {}", kernel, i, dtype_name(t->dtype()),
                                     dtype_name(dtype)));
    ++i;
  }
}

}  // namespace accrue::kernels
