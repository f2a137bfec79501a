#pragma once
// What the CPU convolution (kernels/cpu/conv.hpp) and its forms under kernels/cpu/conv/ share: the
// forms by name and im2col's two directions.

#include "../../common/conv_geometry.hpp"

namespace accrue::kernels::cpu {

/// The convolution's form: `automatic` runs the implicit GEMM over the padded image where the
/// processor has AVX-512 or AVX2 with FMA (AVX-512 BF16 and no AMX, in bfloat16) and a pass fills
/// 16 or more lanes (output channels per group), in float32 with AVX-512 only for products of depth
/// 16 or more, and im2col with a GEMM otherwise; with AVX2 the three passes of a float32 3x3
/// convolution of stride 1 with 16 or more channels and filters per group run as Winograd
/// F(2x2, 3x3). Benchmarks and tests pin one form for every convolution to compare them
/// (pinned `winograd`, the passes it cannot run choose as `automatic` would); pinning the implicit
/// GEMM or Winograd without AVX-512 or AVX2 throws, and bfloat16 keeps im2col where its pairs cannot
/// run.
enum class Conv2dForm { automatic, implicit_gemm, im2col, winograd };

/// The im2col matrix of one sample and group: (patch_size(), P Q), zeros where taps fall in the padding.
void im2col(const float* x, const Window2d& g, float* col);
/// The inverse scatter: dx += col's entries at their taps' input positions.
void col2im_add(const float* col, const Window2d& g, float* dx);

}  // namespace accrue::kernels::cpu
