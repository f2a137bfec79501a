#pragma once
// erf and exp written without branches or library calls, so that a CPU loop calling them becomes
// vector instructions: glibc's erff and expf are scalar calls, and GELU through erff took 15% of a
// GPT's training step on the CPU. Polynomials fitted (least squares at Chebyshev nodes, in double)
// and checked in tests/kernels/test_elementwise.cpp against the C library over a dense sweep:
// erf within 3 units in the last place, exp within 2. vector_erf and vector_exp_nonpositive are
// what kernels/common calls: these on the CPU, CUDA's own erff and expf on the GPU.

#include <cmath>
#include <cstdint>

#include "../../framework/core/macros.hpp"
#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

namespace accrue::kernels::common {

#if !defined(__CUDA_ARCH__)

/// erf(x) for every float x (NaN stays NaN): x P(x^2) below 1 in magnitude, polynomials in
/// |x| - 1.75 on [1, 2.5) and in |x| - 3.25 on [2.5, 4), 1 beyond (erf(4) rounds to 1).
inline float branchless_erf(float x) {
  const float a = std::fabs(x);
  const float s = a * a;
  float small = 7.93287549923354e-05f;
  small = small * s - 0.0008034648233626777f;
  small = small * s + 0.0051911939881444215f;
  small = small * s - 0.02685538515170653f;
  small = small * s + 0.11283625321872823f;
  small = small * s - 0.37612629830002653f;
  small = small * s + 1.1283791665779725f;
  small *= a;
  // The two outer ranges share one Horner evaluation, each lane picking its coefficients.
  const bool near = a < 2.5f;
  const float u = a - (near ? 1.75f : 3.25f);
  float large = near ? -0.0003353765710563675f : 0.0f;
  large = large * u + (near ? 0.0008622751832894782f : 0.0f);
  large = large * u + (near ? 0.0006639129718591902f : -8.24522584465767e-05f);
  large = large * u + (near ? -0.006036745985719901f : 0.00019927357445280355f);
  large = large * u + (near ? 0.008982070615708878f : -0.0002635356330133737f);
  large = large * u + (near ? 0.006618471428715118f : 0.00030196466906738374f);
  large = large * u + (near ? -0.04810469709193862f : -0.0002865275734536991f);
  large = large * u + (near ? 0.09015790398153424f : 0.00019761666153249001f);
  large = large * u + (near ? -0.09235612363163662f : -9.48689652778266e-05f);
  large = large * u + (near ? 0.05277497800789549f : 2.911387455247249e-05f);
  large = large * u + (near ? 0.9866716702913433f : 0.9999956972853463f);
  const float r = a < 1.0f ? small : (a < 4.0f ? large : 1.0f);
  return x != x ? x : std::copysign(r, x);
}

/// exp(x) for x <= 0 (0 from ln FLT_MIN = -87.3365 down, where the normal range ends; NaN stays
/// NaN): 2^n e^r with |r| <= ln 2 / 2 and e^r from its Taylor series to r^8 / 8!.
inline float branchless_exp_nonpositive(float x) {
  const float xc = x > -87.33654f ? x : -87.33654f;
  const float n = std::nearbyint(xc * 1.44269504088896341f);
  const float r = (xc - n * 0.693145751953125f) - n * 1.42860682030941723e-06f;  // ln 2 in two parts
  float p = 1.0f / 40320;
  p = p * r + 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::int32_t scale = (static_cast<std::int32_t>(n) + 127) << 23;
  return x > -87.33654f ? p * std::bit_cast<float>(scale) : (x != x ? x : 0.0f);
}
#endif

ACCRUE_HD float vector_erf(float x) {
#if defined(__CUDA_ARCH__)
  return erff(x);
#else
  return branchless_erf(x);
#endif
}

/// exp(x) for x <= 0: softmax's and cross-entropy's exp(x - max), GELU's density.
ACCRUE_HD float vector_exp_nonpositive(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  return branchless_exp_nonpositive(x);
#endif
}

}  // namespace accrue::kernels::common
