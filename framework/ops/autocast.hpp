#pragma once
// Autocast: mixed precision for a scope, with PyTorch autocast's policy. Inside an AutocastGuard,
// the GEMM-heavy ops (linear, matmul, and conv2d in bfloat16 on a CPU with a bfloat16 kernel)
// convert their float32 inputs to float16 or bfloat16 and multiply with float32 accumulation,
// giving results in that type; element-wise ops and pooling keep the type of their input; softmax,
// losses, norms and reductions convert low-precision inputs to float32.
// Parameters stay float32 (the master copies); what layers keep for backward is in low precision,
// so activation memory halves. Per thread, like GradMode.

#include <optional>

#include "../core/dtype.hpp"
#include "../core/non_copyable.hpp"

namespace accrue {

class Autocast {
 public:
  /// The low-precision type of the current scope, or nothing outside autocast.
  static std::optional<DType> dtype();
};

/// Turns autocast on (float16 or bfloat16) or off (std::nullopt) for its scope.
class AutocastGuard : NonCopyable {
 public:
  explicit AutocastGuard(std::optional<DType> dtype);
  ~AutocastGuard();

 private:
  std::optional<DType> previous_;
};

}  // namespace accrue
