// Convolution over cuDNN. The algorithms come from cuDNN's heuristics (the *_v7 queries, what
// PyTorch uses unless told to benchmark): the first one cuDNN supports here, in plain float32 math
// (no TF32: the descriptors ask for FMA math), whose workspace as cuDNN reports it for our
// descriptors fits under a cap, else the algorithm that needs none (common::choose_algorithm);
// chosen once per geometry. The workspace is a temporary tensor, counted like any other memory.

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "../common/algorithm_choice.hpp"
#include "../../framework/core/tensor.hpp"
#include "check.hpp"
#include "context.hpp"
#include "cudnn_descriptors.hpp"
#include "conv.hpp"

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

// Math modes that keep float32 convolutions in float32 (the tensor-op modes would allow TF32).
constexpr int plain_math[] = {CUDNN_DEFAULT_MATH, CUDNN_FMA_MATH};

// The heuristics' ranked entries, then the choice; `workspace_of(algo)` asks cuDNN for the size.
template <class Algo, class Perf, class WorkspaceOf>
std::pair<Algo, std::size_t> pick(const Perf* perf, int count, Algo fallback, WorkspaceOf&& workspace_of,
                                  const char* what) {
  std::vector<common::AlgorithmCandidate> candidates;
  for (int i = 0; i < count; ++i)
    candidates.push_back({static_cast<int>(perf[i].algo), perf[i].status == CUDNN_STATUS_SUCCESS,
                          static_cast<int>(perf[i].mathType)});
  const auto choice = common::choose_algorithm(
      candidates, plain_math, max_workspace, static_cast<int>(fallback), [&](int algo) -> std::optional<std::size_t> {
        std::size_t bytes = 0;
        if (workspace_of(static_cast<Algo>(algo), &bytes) != CUDNN_STATUS_SUCCESS) return std::nullopt;
        return bytes;
      });
  if (!choice) throw_error(CUDNN_STATUS_NOT_SUPPORTED, what, __FILE__, __LINE__);
  return {static_cast<Algo>(choice->algorithm), choice->workspace};
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
    std::tie(a.forward, a.forward_bytes) = pick(
        perf.data(), count, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
        [&](cudnnConvolutionFwdAlgo_t algo, std::size_t* bytes) {
          return cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.w.get(), d.conv(), d.y.get(), algo, bytes);
        },
        "no cuDNN forward convolution algorithm for this geometry");
  }
  {
    std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
    ACCRUE_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.get(), d.y.get(), d.conv(), d.x.get(),
                                                                  static_cast<int>(perf.size()), &count, perf.data()));
    std::tie(a.backward_data, a.backward_data_bytes) = pick(
        perf.data(), count, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
        [&](cudnnConvolutionBwdDataAlgo_t algo, std::size_t* bytes) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w.get(), d.y.get(), d.conv(), d.x.get(), algo, bytes);
        },
        "no cuDNN backward-data convolution algorithm for this geometry");
  }
  {
    std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> perf{};
    ACCRUE_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.get(), d.y.get(), d.conv(), d.w.get(),
                                                                    static_cast<int>(perf.size()), &count, perf.data()));
    std::tie(a.backward_filter, a.backward_filter_bytes) = pick(
        perf.data(), count, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
        [&](cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* bytes) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x.get(), d.y.get(), d.conv(), d.w.get(), algo, bytes);
        },
        "no cuDNN backward-filter convolution algorithm for this geometry");
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

// The passes cuDNN refuses (a batch, channel count or output size of 0): true when `out`, of
// `count` floats, is done (left alone, or zeroed when not accumulating).
bool without_terms(int device, ConvPass pass, const Window2d& g, float* out, std::int64_t count, bool accumulate) {
  switch (conv_work(pass, g)) {
    case ConvWork::convolve: return false;
    case ConvWork::nothing: return true;
    case ConvWork::no_terms:
      if (!accumulate)
        ACCRUE_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(count) * sizeof(float), compute_stream(device)));
      return true;
  }
  return false;
}

}  // namespace

void conv2d_forward(int device, const float* x, const float* w, const float* bias, float* y, const Window2d& g) {
  if (without_terms(device, ConvPass::forward, g, y, g.N * g.K * g.P() * g.Q(), false)) {
    if (bias == nullptr || conv_work(ConvPass::forward, g) == ConvWork::nothing) return;
    const TensorDescriptor b{1, g.K, 1, 1}, yd{g.N, g.K, g.P(), g.Q()};
    const float one = 1.0f;
    ACCRUE_CUDA_CHECK(cudnnAddTensor(context(device).cudnn, &one, b.get(), bias, &one, yd.get(), y));
    return;
  }
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
  if (without_terms(device, ConvPass::backward_data, g, dx, g.N * g.C * g.H * g.W, accumulate)) return;
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
  if (without_terms(device, ConvPass::backward_filter, g, dw, g.K * g.patch_size(), accumulate)) return;
  const ConvolutionDescriptors d{g};
  const Algorithms& a = algorithms(device, g, d);
  const Tensor ws = workspace(device, a.backward_filter_bytes);
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  ACCRUE_CUDA_CHECK(cudnnConvolutionBackwardFilter(context(device).cudnn, &one, d.x.get(), x, d.y.get(), dy, d.conv(),
                                                   a.backward_filter, workspace_ptr(ws), a.backward_filter_bytes,
                                                   &beta, d.w.get(), dw));
}

void conv2d_backward_bias(int device, const float* dy, float* db, const Window2d& g, bool accumulate) {
  if (without_terms(device, ConvPass::backward_bias, g, db, g.K, accumulate)) return;
  const TensorDescriptor y{g.N, g.K, g.P(), g.Q()}, b{1, g.K, 1, 1};
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  ACCRUE_CUDA_CHECK(cudnnConvolutionBackwardBias(context(device).cudnn, &one, y.get(), dy, &beta, b.get(), db));
}

}  // namespace accrue::kernels::cuda
