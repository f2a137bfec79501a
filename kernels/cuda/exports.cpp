// The table libaccrue_cuda.so hands the core (backend.hpp): every function of the backend that the
// core calls, by name. A function the core calls with ACCRUE_CUDA goes into this list; each optimizer
// rule's update is there under the rule's name.

#include <iterator>

#include <accrue/config.hpp>
#include "amp_update.hpp"
#include "attention.hpp"
#include "../../framework/runtime/cuda_backend.hpp"
#include "cast.hpp"
#include "concat.hpp"
#include "conv.hpp"
#include "cross_entropy.hpp"
#include "dropout.hpp"
#include "elementwise.hpp"
#include "gather.hpp"
#include "gemm.hpp"
#include "norm.hpp"
#include "optimizer_update.hpp"
#include "permute.hpp"
#include "pool.hpp"
#include "reduce.hpp"
#include "../../framework/runtime/cuda_runtime.hpp"
#include "softmax.hpp"
#include "../../framework/core/device_query.hpp"

#if ACCRUE_WITH_NCCL
#include <memory>
namespace accrue::distributed {
class Communicator;
namespace detail {
std::unique_ptr<Communicator> make_nccl(Communicator& world, int device);  // nccl_communicator.cpp
}  // namespace detail
}  // namespace accrue::distributed
#endif

#define ACCRUE_CUDA_FUNCTIONS(X)                                                                           \
  X(query_devices) X(query_libraries)                                                                      \
  X(synchronize) X(copy_host_to_device) X(copy_device_to_host) X(copy_device_to_device) X(device_malloc)    \
  X(device_free) X(pinned_malloc) X(pinned_free) X(event_create) X(event_destroy) X(event_wait_on_compute)  \
  X(event_synchronize) X(copy_host_to_device_async)                                                        \
  X(unscale_and_check) X(attention_forward) X(attention_backward) X(cast) X(copy_columns)                   \
  X(conv2d_forward) X(conv2d_backward_data) X(conv2d_backward_filter) X(conv2d_backward_bias)               \
  X(first_out_of_range) X(cross_entropy_forward) X(cross_entropy_backward) X(dropout_apply)                 \
  X(unary_forward) X(unary_backward) X(binary_forward) X(binary_backward) X(fill) X(add_into)               \
  X(fill_uniform) X(fill_normal) X(unary_in_place) X(gather_rows) X(scatter_add_rows) X(gemm_f32)           \
  X(gemm_f32_strided_batched) X(gemm_low_precision) X(group_norm_forward) X(group_norm_backward)            \
  X(batch_norm_forward_training) X(batch_norm_backward) X(permute)             \
  X(pool2d_forward) X(pool2d_backward) X(sum_dim_partials) X(sum_dim) X(expand_dim) X(sum_to_shape)         \
  X(argmax_rows) X(sum_of_squares_partials) X(sum_of_squares) X(softmax_forward) X(softmax_backward)        \
  X(masked_softmax_forward) X(masked_softmax_backward)

extern "C" __attribute__((visibility("default"))) const accrue::kernels::cuda::BackendTable* accrue_cuda_backend() {
  namespace cuda = accrue::kernels::cuda;
#define ACCRUE_CUDA_ENTRY(name) {#name, reinterpret_cast<void*>(&cuda::name)},
#define ACCRUE_CUDA_RULE(Rule) \
  {accrue::kernels::common::Rule::name, reinterpret_cast<void*>(&cuda::optimizer_update<accrue::kernels::common::Rule>)},
  static const cuda::BackendFunction functions[] = {
      ACCRUE_CUDA_FUNCTIONS(ACCRUE_CUDA_ENTRY)
      ACCRUE_OPTIMIZER_RULES(ACCRUE_CUDA_RULE)
#if ACCRUE_WITH_NCCL
      {"make_nccl", reinterpret_cast<void*>(&accrue::distributed::detail::make_nccl)},
#endif
  };
#undef ACCRUE_CUDA_ENTRY
#undef ACCRUE_CUDA_RULE
  static const cuda::BackendTable table{ACCRUE_VERSION, functions, std::size(functions)};
  return &table;
}
