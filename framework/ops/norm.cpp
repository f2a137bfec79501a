// Batch, group and layer normalization. Each computes in float32 (a low-precision input is
// converted, as autocast does) and keeps x with its per-set mean and 1/std for backward.

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "../../kernels/norm.hpp"

namespace accrue::ops {
namespace {

enum class Kind : std::uint8_t { batch, group, layer };

class NormNode final : public Node {
 public:
  NormNode(Kind kind, std::string_view name, const Tensor& x, const Tensor& gamma, const Tensor& mean,
           const Tensor& rstd, const kernels::NormShape& s, float eps)
      : kind_(kind), name_(name), x_(x), mean_(mean), rstd_(rstd), shape_(s), eps_(eps) {
    if (gamma.defined()) gamma_ = SavedTensor{gamma};
    has_gamma_ = gamma.defined();
  }
  std::string_view name() const override { return name_; }
  void backward(Tensor grad, GradSink& sink) override {
    const Tensor& x = x_.get(name_);
    const Tensor gamma = has_gamma_ ? gamma_.get(name_) : Tensor();
    const TensorOptions on{.device = x.device()};
    // Handed over with std::move so that the sink adopts them instead of copying.
    Tensor dx = Tensor::empty(x.shape(), on);
    Tensor dgamma = has_gamma_ && sink.needs(1) ? Tensor::empty(gamma.shape(), on) : Tensor();
    Tensor dbeta = edges.size() > 2 && sink.needs(2) ? Tensor::empty(gamma.defined() ? gamma.shape() : Shape{shape_.C}, on)
                                                           : Tensor();
    const Tensor& mean = mean_.get(name_);
    const Tensor& rstd = rstd_.get(name_);
    if (kind_ == Kind::batch)
      kernels::batch_norm_backward(x, gamma, mean, rstd, grad, dx, dgamma, dbeta, shape_, eps_);
    else if (kind_ == Kind::layer)
      kernels::layer_norm_backward(x, gamma, mean, rstd, grad, dx, dgamma, dbeta, shape_.N, shape_.C);
    else
      kernels::group_norm_backward(x, gamma, mean, rstd, grad, dx, dgamma, dbeta, shape_);
    if (sink.needs(0)) sink.add(0, std::move(dx));
    if (dgamma.defined()) sink.add(1, std::move(dgamma));
    if (dbeta.defined()) sink.add(2, std::move(dbeta));
  }
  void release() override {
    x_.reset();
    gamma_.reset();
    mean_.reset();
    rstd_.reset();
  }

 private:
  Kind kind_;
  std::string_view name_;
  SavedTensor x_, gamma_, mean_, rstd_;
  kernels::NormShape shape_;
  float eps_;
  bool has_gamma_ = false;
};

void check_affine(const char* op, const Tensor& t, const char* what, const Shape& expected, const Tensor& x) {
  if (!t.defined()) return;
  ACCRUE_CHECK_SHAPE(t.shape() == expected, "{}: {} of shape {} for input {} (expects {})", op, what, t.shape(),
                     x.shape(), expected);
  ACCRUE_CHECK(t.dtype() == DType::f32 && t.device() == x.device(), "{}: {} must be float32 on {}", op, what,
               x.device().str());
}

// The normalized x, recorded with its node; `edges` of the node are x, gamma, beta.
Tensor normalize(Kind kind, const char* name, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                 const kernels::NormShape& s, float eps, const Tensor& running_mean, const Tensor& running_var,
                 float momentum) {
  const TensorOptions on{.device = x.device()};
  Tensor y = Tensor::empty(x.shape(), on);
  const std::int64_t sets = kind == Kind::batch ? s.C : s.N * s.groups;
  Tensor mean = Tensor::empty({sets}, on), rstd = Tensor::empty({sets}, on);
  if (kind == Kind::batch)
    kernels::batch_norm_forward_training(x, gamma, beta, y, mean, rstd, running_mean, running_var, s, momentum, eps);
  else if (kind == Kind::layer)
    kernels::layer_norm_forward(x, gamma, beta, y, mean, rstd, s.N, s.C, eps);
  else
    kernels::group_norm_forward(x, gamma, beta, y, mean, rstd, s, eps);
  if (needs_grad({&x, &gamma, &beta}))
    record(std::make_shared<NormNode>(kind, name, x, gamma, mean, rstd, s, eps), y, {&x, &gamma, &beta});
  return y;
}

}  // namespace

Tensor batch_norm(const Tensor& x_in, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, float momentum, float eps) {
  ACCRUE_CHECK(x_in.defined() && is_floating(x_in.dtype()), "batch_norm: expects a floating-point input");
  ACCRUE_CHECK_SHAPE(x_in.rank() >= 2, "batch_norm: expects input (N, C, ...), got shape {}", x_in.shape());
  ACCRUE_CHECK(eps > 0.0f, "batch_norm: eps must be positive, got {}", eps);
  const Tensor x = float32(x_in);
  const std::int64_t N = x.size(0), C = x.size(1), L = N * C == 0 ? 0 : x.numel() / (N * C);
  for (const auto& [t, what] : {std::pair{&weight, "weight"}, {&bias, "bias"}, {&running_mean, "running_mean"},
                                {&running_var, "running_var"}})
    check_affine("batch_norm", *t, what, {C}, x);
  ACCRUE_CHECK(running_mean.defined() == running_var.defined(),
               "batch_norm: running_mean and running_var go together (both or neither)");
  if (training || !running_mean.defined()) {
    ACCRUE_CHECK_SHAPE(!training || N * L > 1,
                       "batch_norm: training needs more than one value per channel, got input {} (a batch of one "
                       "sample without spatial dimensions has no variance)",
                       x.shape());
    return normalize(Kind::batch, "batch_norm", x, weight, bias, {.N = N, .C = C, .L = L}, eps,
                     training ? running_mean : Tensor(), training ? running_var : Tensor(), momentum);
  }
  // Evaluation: a fixed per-channel affine map, written with differentiable ops so that weight
  // and bias still get gradients (fine-tuning with frozen statistics).
  Shape channel_shape{C};
  for (int d = 2; d < x.rank(); ++d) channel_shape.push_back(1);
  Tensor scale = pow(running_var.detach() + eps, -0.5f);
  if (weight.defined()) scale = scale * weight;
  Tensor shift = neg(running_mean.detach() * scale);
  if (bias.defined()) shift = shift + bias;
  return x * reshape(scale, channel_shape) + reshape(shift, channel_shape);
}

Tensor group_norm(const Tensor& x_in, std::int64_t groups, const Tensor& weight, const Tensor& bias, float eps) {
  ACCRUE_CHECK(x_in.defined() && is_floating(x_in.dtype()), "group_norm: expects a floating-point input");
  ACCRUE_CHECK_SHAPE(x_in.rank() >= 2, "group_norm: expects input (N, C, ...), got shape {}", x_in.shape());
  ACCRUE_CHECK(eps > 0.0f, "group_norm: eps must be positive, got {}", eps);
  const Tensor x = float32(x_in);
  const std::int64_t N = x.size(0), C = x.size(1), L = N * C == 0 ? 0 : x.numel() / (N * C);
  ACCRUE_CHECK_SHAPE(groups >= 1 && C % groups == 0, "group_norm: {} channels of input {} do not divide into {} groups",
                     C, x.shape(), groups);
  check_affine("group_norm", weight, "weight", {C}, x);
  check_affine("group_norm", bias, "bias", {C}, x);
  return normalize(Kind::group, "group_norm", x, weight, bias, {.N = N, .C = C, .L = L, .groups = groups}, eps, Tensor(),
                   Tensor(), 0.0f);
}

Tensor layer_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  float eps) {
  ACCRUE_CHECK(x_in.defined() && is_floating(x_in.dtype()), "layer_norm: expects a floating-point input");
  ACCRUE_CHECK(eps > 0.0f, "layer_norm: eps must be positive, got {}", eps);
  const Tensor x = float32(x_in);
  const int k = normalized_shape.rank();
  bool fits = k >= 1 && k <= x.rank();
  for (int i = 0; fits && i < k; ++i) fits = x.size(x.rank() - k + i) == normalized_shape[i];
  ACCRUE_CHECK_SHAPE(fits, "layer_norm: input of shape {} does not end with the normalized shape {}", x.shape(),
                     normalized_shape);
  check_affine("layer_norm", weight, "weight", normalized_shape, x);
  check_affine("layer_norm", bias, "bias", normalized_shape, x);
  const std::int64_t D = normalized_shape.numel(), rows = D == 0 ? 0 : x.numel() / D;
  // One group per row, with the normalized elements as its channels (each with its own gamma).
  return normalize(Kind::layer, "layer_norm", x, weight, bias, {.N = rows, .C = D, .L = 1, .groups = 1}, eps, Tensor(),
                   Tensor(), 0.0f);
}

}  // namespace accrue::ops
