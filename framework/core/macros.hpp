#pragma once
// ACCRUE_HD marks math written once for both backends: a __host__ __device__ function under nvcc,
// a plain inline function for the host compiler. Everything in kernels/common uses it.

#if defined(__CUDACC__)
#define ACCRUE_HD __host__ __device__ __forceinline__
#else
#define ACCRUE_HD inline
#endif
