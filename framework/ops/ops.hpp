#pragma once
// Differentiable ops on tensors. Each records its backward when an input requires grad (and
// grad mode is on), so layers and losses written from these need no backward code of their own.
// Errors name the op and the shapes involved.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

#include "../core/tensor.hpp"

namespace accrue {

class Generator;

/// How a loss turns per-sample values into its result.
enum class Reduction : std::uint8_t { mean, sum, none };

namespace ops {

// ---- element-wise functions of one tensor ------------------------------------------------
Tensor relu(const Tensor& x);
/// GELU; exact (erf) by default as PyTorch, the tanh approximation with `tanh_approximation`.
Tensor gelu(const Tensor& x, bool tanh_approximation = false);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor neg(const Tensor& x);
Tensor square(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor pow(const Tensor& x, float exponent);
/// a * x + b.
Tensor affine(const Tensor& x, float a, float b);
/// min(max(x, low), high), as torch.clamp.
Tensor clamp(const Tensor& x, float low, float high);

// ---- element-wise functions of two tensors, with NumPy broadcasting ------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
/// The larger (smaller) of a and b at each element, as torch.maximum (torch.minimum): NaN where
/// either is NaN; where they are equal each gets half the gradient.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

// ---- reductions ----------------------------------------------------------------------------
/// Sum of all elements, shape ().
Tensor sum(const Tensor& x);
/// Sum along `dim`; the dimension is kept with size 1 when `keepdim`.
Tensor sum(const Tensor& x, int dim, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, int dim, bool keepdim = false);

// ---- linear algebra ------------------------------------------------------------------------
/// (M, K) @ (K, N) -> (M, N).
Tensor matmul(const Tensor& a, const Tensor& b);
/// A contiguous copy of entries [begin, end) along `dim`: torch's x.narrow(dim, begin, end - begin).
Tensor slice(const Tensor& x, int dim, std::int64_t begin, std::int64_t end);
/// x cut along `dim` into pieces of `sizes` entries (adding up to its size there), as torch.split.
std::vector<Tensor> split(const Tensor& x, std::span<const std::int64_t> sizes, int dim);
/// The tensors joined along `dim` (the same shape elsewhere, dtype and device), as torch.cat.
Tensor cat(std::span<const Tensor> xs, int dim);
/// The rows of `weight` (V, D) at int32 `indices` of any shape: (indices..., D), as F.embedding.
/// The gradient adds each output row back into its weight row, except at `padding_idx` (-1:
/// none), whose row gets no gradient. An index outside [0, V) throws naming its position.
Tensor embedding(const Tensor& weight, const Tensor& indices, std::int64_t padding_idx = -1);
/// Which operands of bmm are read transposed.
struct BmmOptions {
  bool transpose_a = false;
  bool transpose_b = false;
};
/// Batched matrix products over the leading dimensions, as torch.matmul of two tensors of rank 3
/// or more: a (..., M, K) and b (..., K, N) with the same leading dimensions give (..., M, N).
/// transpose_a reads a as (..., K, M), transpose_b reads b as (..., N, K), without a copy
/// (attention's Q K^T). In float32, or under autocast in its type with float32 accumulation.
Tensor bmm(const Tensor& a, const Tensor& b, BmmOptions options = {});
/// x W^T + b for x (B, in), W (out, in), b (out) or undefined: PyTorch's F.linear.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

/// Memory an op takes for itself during one training step, beside its inputs, outputs and what it
/// keeps for backward: the most at once in forward and in backward. Memory plans add it up.
struct OpScratch {
  std::size_t forward = 0;
  std::size_t backward = 0;
  /// Of backward, the most while computing the input's gradient (0: within `backward`).
  std::size_t input_gradient = 0;
  /// What kernels::PackedParameters keeps of the weight through an accumulation window: its pack
  /// for forward, and its pack for backward to the input (made only when the input needs it).
  std::size_t kept_forward = 0, kept_for_input_gradient = 0;
};
/// linear of `rows` rows of `in` features into `out` multiplying in the low-precision `compute`
/// type (autocast), x in `x_type`: the float32 accumulator of the output (on a GPU) and GEMM's workspaces,
/// which leave the weight out when `weight_kept` (its pack or rounded copy kept through the window).
/// In float32, linear takes none.
OpScratch linear_scratch(Device device, DType compute, DType x_type, std::int64_t rows, std::int64_t in,
                         std::int64_t out, bool weight_kept);

// ---- convolution and pooling over NCHW images -----------------------------------------------
/// Stride, zero padding, dilation and groups of a 2-D convolution, per axis as PyTorch's conv2d.
struct Conv2dOptions {
  Size2 stride = 1;
  Size2 padding = 0;
  Size2 dilation = 1;
  std::int64_t groups = 1;
};
/// Cross-correlation of x (N, C, H, W) with weight (K, C / groups, R, S), plus bias (K) when
/// defined: PyTorch's F.conv2d. Output (N, K, P, Q).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& options = {});
/// The output size (P, Q) of conv2d on an `image` (H, W) with a `kernel` (R, S); not positive when
/// the kernel does not fit.
Size2 conv2d_output_size(Size2 image, Size2 kernel, const Conv2dOptions& options);
/// Whether conv2d of an input of `x_type` on `device`, under `autocast` (Autocast::dtype()),
/// multiplies in bfloat16 and gives a bfloat16 output.
bool conv2d_computes_bf16(Device device, DType x_type, std::optional<DType> autocast);
/// conv2d's scratch for `batch` samples (C, H, W) and `filters` kernels, in float32 or, given the
/// input's type `bf16_x`, in bfloat16: on the CPU the im2col matrices (one per pool thread in use)
/// and, in backward, a weight-sized partial sum per extra thread; in bfloat16 also the weight's
/// packs kept through a window. cuDNN's workspaces depend on the algorithm it picks and are not
/// counted.
OpScratch conv2d_scratch(Device device, std::optional<DType> bf16_x, std::int64_t batch, const Shape& sample,
                         std::int64_t filters, Size2 kernel, const Conv2dOptions& options);

/// Window, stride (the window by default) and zero padding (at most half the window) of pooling.
struct Pool2dOptions {
  Size2 kernel = 2;
  std::optional<Size2> stride = std::nullopt;
  Size2 padding = 0;
  /// avg_pool2d: whether padded positions count in the divisor (PyTorch's default: yes).
  bool count_include_pad = true;
};
/// Maximum over each window (padding never wins; NaN propagates): F.max_pool2d.
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options = {});
/// Mean over each window: F.avg_pool2d.
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options = {});
/// The output size (P, Q) of pooling an `image` (H, W); not positive when the window does not fit.
/// Whether max_pool2d and avg_pool2d of an input of `x_type` on `device` compute in that type
/// (float32, or bfloat16 on the CPU); otherwise they convert it to float32.
bool pool2d_keeps_dtype(Device device, DType x_type);
Size2 pool2d_output_size(Size2 image, const Pool2dOptions& options);

// ---- normalization ---------------------------------------------------------------------------
/// F.batch_norm over x (N, C, ...): in training (or without running statistics) each channel is
/// normalized by this batch's mean and biased variance, and running_mean / running_var, when
/// defined, move towards them by `momentum` (the weight of the new value; the variance unbiased);
/// in evaluation the running statistics normalize. weight and bias (C) may be undefined.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, float momentum = 0.1f, float eps = 1e-5f);
/// F.group_norm: x (N, C, ...) normalized per sample over each of `groups` groups of channels,
/// then scaled and shifted per channel by weight and bias (C) when defined.
Tensor group_norm(const Tensor& x, std::int64_t groups, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);
/// F.layer_norm: normalized over the trailing dimensions `normalized_shape`, then scaled and
/// shifted element-wise by weight and bias of that shape when defined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  float eps = 1e-5f);

// ---- shape ----------------------------------------------------------------------------------
/// A view with another shape of as many elements.
Tensor reshape(const Tensor& x, const Shape& shape);
/// Folds dimensions from `start_dim` on into one: (B, 1, 28, 28) -> (B, 784).
Tensor flatten(const Tensor& x, int start_dim = 1);
/// Rows [begin, end) of dimension 0, as a view.
Tensor narrow(const Tensor& x, std::int64_t begin, std::int64_t end);
/// A copy with its own storage.
Tensor clone(const Tensor& x);
/// A contiguous copy of x with its dimensions in the order `dims` (negative counts from the end):
/// the result's dimension d is x's dimension dims[d], as torch.permute(...).contiguous().
Tensor permute(const Tensor& x, std::span<const int> dims);
Tensor permute(const Tensor& x, std::initializer_list<int> dims);
/// permute swapping two dimensions, as torch.transpose(...).contiguous().
Tensor transpose(const Tensor& x, int dim0, int dim1);
/// x converted to `dtype` (float32, float16, bfloat16; rounding to nearest even); x itself when it
/// already has that dtype. The gradient converts back.
Tensor cast(const Tensor& x, DType dtype);
/// x in float32: the input conversion of ops that compute in float32 (softmax, losses, reductions).
Tensor float32(const Tensor& x);

// ---- softmax ----------------------------------------------------------------------------------
Tensor softmax(const Tensor& x, int dim = -1);
Tensor log_softmax(const Tensor& x, int dim = -1);
/// How masked_softmax scales and masks the scores.
struct MaskedSoftmaxOptions {
  float scale = 1.0f;
  /// Query i keeps key j only when j <= i + T_k - T_q (a decoder's causal attention).
  bool causal = false;
  /// Added to the scores, (T_q, T_k) float32, -inf where an entry is masked; undefined: none. Not
  /// differentiated.
  Tensor mask = {};
};
/// Attention's softmax over the last dimension of scores (..., T_q, T_k): softmax(scale x + mask)
/// over the entries the causal rule keeps, fused in one pass. A query that keeps no key gets
/// zeros, where PyTorch gives NaN.
Tensor masked_softmax(const Tensor& scores, const MaskedSoftmaxOptions& options = {});

/// How scaled_dot_product_attention masks, drops and lays out.
struct AttentionOptions {
  /// Query i attends to keys j <= i + T_k - T_q only (a decoder).
  bool causal = false;
  /// Added to the scores, (T_q, T_k) float32, -inf where an entry is masked; undefined: none. Not
  /// differentiated.
  Tensor mask = {};
  /// int32 (batch, T_k), non-zero where a key is padding that no query attends to, as
  /// nn.MultiheadAttention's key_padding_mask; undefined: none.
  Tensor key_padding = {};
  /// Dropout on the attention probabilities (pass 0 in evaluation), from `generator` (the default
  /// generator when null).
  float dropout = 0.0f;
  Generator* generator = nullptr;
  /// The scores' factor; 1 / sqrt(d) when not set.
  std::optional<float> scale = std::nullopt;
  /// Operands (batch, T, heads, d), as a projection's (batch, T, heads x d) output reshaped,
  /// instead of PyTorch's (batch, heads, T, d); the output is laid out the same way.
  bool token_major = false;
};
/// softmax(scale q k^T + mask) v per head, with the causal rule, key padding and dropout, as
/// F.scaled_dot_product_attention: q (batch, heads, T_q, d), k (batch, heads, T_k, d), v (batch,
/// heads, T_k, d_v) give (batch, heads, T_q, d_v). Float32. Fused: the probabilities are not kept
/// for backward but recomputed, and the CPU holds one head's scores per thread at a time. A query
/// that keeps no key gets zeros, where PyTorch gives NaN.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options = {});

// ---- losses -----------------------------------------------------------------------------------
/// Softmax cross-entropy of logits (B, ..., C) against int32 labels (B, ...), fused and
/// numerically stable, as PyTorch's F.cross_entropy with the classes last (with optional label
/// smoothing). A label equal to `ignore_index` counts for nothing: loss 0, no gradient, not in the
/// mean's denominator. Reduction::none gives the losses in the labels' shape.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, Reduction reduction = Reduction::mean,
                     float label_smoothing = 0.0f, std::int64_t ignore_index = -100);
/// Squared error; Reduction::none gives the mean over each sample's elements (B).
Tensor mse_loss(const Tensor& prediction, const Tensor& target, Reduction reduction = Reduction::mean);

// ---- regularisation ---------------------------------------------------------------------------
/// Inverted dropout with drop probability p in [0, 1) when `training`; x itself otherwise.
Tensor dropout(const Tensor& x, float p, bool training, Generator* generator = nullptr);

// ---- not differentiable -----------------------------------------------------------------------
/// Index of the largest value in each row of (B, C), as int32 (B).
Tensor argmax(const Tensor& x);
/// float32 (B, classes) with a 1 at each label.
Tensor one_hot(const Tensor& labels, std::int64_t classes);

}  // namespace ops

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, float b);
Tensor operator+(float a, const Tensor& b);
Tensor operator-(const Tensor& a, float b);
Tensor operator-(float a, const Tensor& b);
Tensor operator*(const Tensor& a, float b);
Tensor operator*(float a, const Tensor& b);
Tensor operator/(const Tensor& a, float b);

}  // namespace accrue
