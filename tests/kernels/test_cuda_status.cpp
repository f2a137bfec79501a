// The CUDA backend's status checks, which need no GPU: the libraries' error names and strings are
// available without a device, so each check is exercised with statuses a failing call returns.
// Built only with the CUDA backend.

#include <accrue/framework/runtime/cuda_allocator.hpp>
#include <accrue/kernels/cuda/check.hpp>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

BOOST_AUTO_TEST_CASE(cuda_runtime_errors_name_the_call_the_error_and_the_place) {
  try {
    kernels::cuda::check(cudaErrorMemoryAllocation, "cudaMalloc(&ptr, bytes)", "allocator.cpp", 42);
    BOOST_FAIL("no exception");
  } catch (const CudaError& e) {
    BOOST_TEST(e.library() == "CUDA runtime");
    BOOST_TEST(e.call() == "cudaMalloc(&ptr, bytes)");
    BOOST_TEST(e.status() == static_cast<int>(cudaErrorMemoryAllocation));
    BOOST_TEST(message_has({"CUDA runtime error", "cudaErrorMemoryAllocation", "out of memory", "cudaMalloc(&ptr, bytes)",
                            "allocator.cpp:42", "accumulation"})(e));
  }
}

BOOST_AUTO_TEST_CASE(cublas_errors_name_the_status) {
  BOOST_CHECK_EXCEPTION(kernels::cuda::check(CUBLAS_STATUS_INVALID_VALUE, "cublasSgemm(...)", "gemm.cpp", 7), CudaError,
                        message_has({"cuBLAS error", "CUBLAS_STATUS_INVALID_VALUE", "cublasSgemm(...)", "gemm.cpp:7"}));
  BOOST_CHECK_EXCEPTION(kernels::cuda::check(CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate(&h)", "context.cpp", 9), CudaError,
                        message_has({"CUBLAS_STATUS_ALLOC_FAILED", "out of memory"}));
  BOOST_CHECK_NO_THROW(kernels::cuda::check(CUBLAS_STATUS_SUCCESS, "cublasSgemm(...)", "gemm.cpp", 7));
}

BOOST_AUTO_TEST_CASE(cudnn_errors_name_the_status) {
  BOOST_CHECK_EXCEPTION(kernels::cuda::check(CUDNN_STATUS_BAD_PARAM, "cudnnSoftmaxForward(...)", "softmax.cpp", 3),
                        CudaError, message_has({"cuDNN error", "CUDNN_STATUS_BAD_PARAM", "cudnnSoftmaxForward(...)",
                                                "softmax.cpp:3"}));
}

BOOST_AUTO_TEST_CASE(the_check_macro_reports_a_real_failing_call) {
  // Device -1 never exists, with or without a GPU.
  try {
    ACCRUE_CUDA_CHECK(cudaSetDevice(-1));
    BOOST_FAIL("cudaSetDevice(-1) succeeded");
  } catch (const CudaError& e) {
    BOOST_TEST(e.call() == "cudaSetDevice(-1)");
    BOOST_TEST(message_has({"cudaSetDevice(-1)", "test_cuda_status.cpp:"})(e));
    BOOST_TEST_MESSAGE("the error reads: " << e.what());
  }
  (void)cudaGetLastError();
}

BOOST_AUTO_TEST_CASE(device_blocks_round_so_nearby_sizes_share_them) {
  BOOST_TEST(CudaAllocator::block_size(0) == 512u);
  BOOST_TEST(CudaAllocator::block_size(1) == 512u);
  BOOST_TEST(CudaAllocator::block_size(513) == 1024u);
  BOOST_TEST(CudaAllocator::block_size((1u << 20) - 1) == (1u << 20));
  BOOST_TEST(CudaAllocator::block_size((1u << 20) + 1) == (2u << 20));
  BOOST_TEST(CudaAllocator::block_size((5u << 20) + 1) == (6u << 20));
}
