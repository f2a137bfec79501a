// Convolution over cuDNN. The algorithms come from cuDNN's heuristics (the *_v7 queries, what
// PyTorch uses unless told to benchmark), the first one whose workspace fits under a cap, chosen
// once per geometry; the workspace is a temporary tensor, so it is counted like any other memory.

#include <array>
#include <map>
#include <mutex>
#include <tuple>

#include "accrue/framework/tensor.hpp"
#include "accrue/kernels/cuda/check.hpp"
#include "accrue/kernels/cuda/context.hpp"
#include "accrue/kernels/cuda/cudnn_descriptors.hpp"
#include "accrue/kernels/cuda/launchers.hpp"

namespace accrue::kernels::cuda {
namespace {

// Workspaces beyond this are passed over for a slower algorithm that needs less.
constexpr std::size_t max_workspace = std::size_t{256} << 20;

struct Algorithms {
  cudnnConvolutionFwdAlgo_t forward;
  std::size_t forward_bytes;
  cudnnConvolutionBwdDataAlgo_t backward_data;
  std::size_t backward_data_bytes;
  cudnnConvolutionBwdFilterAlgo_t backward_filter;
  std::size_t backward_filter_bytes;
};

using Key = std::array<std::int64_t, 15>;

Key key_of(int device, const Window2d& g) {
  return {device,  g.N,     g.C,          g.H,          g.W,  g.R,     g.S,     g.stride_h,
          g.stride_w, g.pad_h, g.pad_w, g.dilation_h, g.dilation_w, g.K, g.groups};
}

template <class Perf>
auto pick(const Perf* perf, int count, const char* what) {
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= max_workspace) return perf[i];
  throw_error(CUDNN_STATUS_NOT_SUPPORTED, what, __FILE__, __LINE__);
}

const Algorithms& algorithms(int device, const Window2d& g, const ConvolutionDescriptors& d) {
  static std::mutex mutex;
  static std::map<Key, Algorithms> cache;
  const Key key = key_of(device, g);
  std::lock_guard lock{mutex};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  cudnnHandle_t h = context(device).cudnn;
  Algorithms a{};
  int count = 0;
  {
    std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
    ACCRUE_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.get(), d.w.get(), d.conv(), d.y.get(),
                                                             static_cast<int>(perf.size()), &count, perf.data()));
    const auto best = pick(perf.data(), count, "no cuDNN forward convolution algorithm for this geometry");
    a.forward = best.algo;
    a.forward_bytes = best.memory;
  }
  {
    std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
    ACCRUE_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.get(), d.y.get(), d.conv(), d.x.get(),
                                                                  static_cast<int>(perf.size()), &count, perf.data()));
    const auto best = pick(perf.data(), count, "no cuDNN backward-data convolution algorithm for this geometry");
    a.backward_data = best.algo;
    a.backward_data_bytes = best.memory;
  }
  {
    std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> perf{};
    ACCRUE_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.get(), d.y.get(), d.conv(), d.w.get(),
                                                                    static_cast<int>(perf.size()), &count, perf.data()));
    const auto best = pick(perf.data(), count, "no cuDNN backward-filter convolution algorithm for this geometry");
    a.backward_filter = best.algo;
    a.backward_filter_bytes = best.memory;
  }
  return cache.emplace(key, a).first->second;
}

// A workspace of `bytes` on `device`, counted as temporaries; empty when none is needed.
Tensor workspace(int device, std::size_t bytes) {
  if (bytes == 0) return {};
  return Tensor::empty({static_cast<std::int64_t>((bytes + 3) / 4)},
                       {.device = Device::cuda(device), .category = MemoryCategory::temporaries});
}

void* workspace_ptr(const Tensor& t) { return t.defined() ? t.device_data<float>() : nullptr; }

}  // namespace

void conv2d_forward(int device, const float* x, const float* w, const float* bias, float* y, const Window2d& g) {
  if (g.N * g.K * g.P() * g.Q() == 0) return;
  const ConvolutionDescriptors d{g};
  const Algorithms& a = algorithms(device, g, d);
  const Tensor ws = workspace(device, a.forward_bytes);
  const float one = 1.0f, zero = 0.0f;
  cudnnHandle_t h = context(device).cudnn;
  ACCRUE_CUDA_CHECK(cudnnConvolutionForward(h, &one, d.x.get(), x, d.w.get(), w, d.conv(), a.forward,
                                            workspace_ptr(ws), a.forward_bytes, &zero, d.y.get(), y));
  if (bias != nullptr) {
    const TensorDescriptor b{1, g.K, 1, 1};
    ACCRUE_CUDA_CHECK(cudnnAddTensor(h, &one, b.get(), bias, &one, d.y.get(), y));
  }
}

void conv2d_backward_data(int device, const float* dy, const float* w, float* dx, const Window2d& g, bool accumulate) {
  if (g.N * g.C * g.H * g.W == 0) return;
  const ConvolutionDescriptors d{g};
  const Algorithms& a = algorithms(device, g, d);
  const Tensor ws = workspace(device, a.backward_data_bytes);
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  ACCRUE_CUDA_CHECK(cudnnConvolutionBackwardData(context(device).cudnn, &one, d.w.get(), w, d.y.get(), dy, d.conv(),
                                                 a.backward_data, workspace_ptr(ws), a.backward_data_bytes, &beta,
                                                 d.x.get(), dx));
}

void conv2d_backward_filter(int device, const float* dy, const float* x, float* dw, const Window2d& g,
                            bool accumulate) {
  if (g.K * g.patch_size() == 0) return;
  const ConvolutionDescriptors d{g};
  const Algorithms& a = algorithms(device, g, d);
  const Tensor ws = workspace(device, a.backward_filter_bytes);
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  ACCRUE_CUDA_CHECK(cudnnConvolutionBackwardFilter(context(device).cudnn, &one, d.x.get(), x, d.y.get(), dy, d.conv(),
                                                   a.backward_filter, workspace_ptr(ws), a.backward_filter_bytes,
                                                   &beta, d.w.get(), dw));
}

void conv2d_backward_bias(int device, const float* dy, float* db, const Window2d& g, bool accumulate) {
  if (g.K == 0) return;
  const TensorDescriptor y{g.N, g.K, g.P(), g.Q()}, b{1, g.K, 1, 1};
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  ACCRUE_CUDA_CHECK(cudnnConvolutionBackwardBias(context(device).cudnn, &one, y.get(), dy, &beta, b.get(), db));
}

}  // namespace accrue::kernels::cuda
