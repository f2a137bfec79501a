#include "autocast.hpp"

#include "../core/error.hpp"

namespace accrue {

namespace {
thread_local std::optional<DType> current;
}

std::optional<DType> Autocast::dtype() { return current; }

AutocastGuard::AutocastGuard(std::optional<DType> dtype) : previous_(current) {
  ACCRUE_CHECK(!dtype || is_low_precision(*dtype), "autocast takes float16 or bfloat16, not {}", dtype_name(*dtype));
  current = dtype;
}

AutocastGuard::~AutocastGuard() { current = previous_; }

}  // namespace accrue
