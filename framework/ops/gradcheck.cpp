#include "gradcheck.hpp"

#include <cmath>

#include "../autograd/autograd.hpp"
#include "ops.hpp"
#include "../core/random.hpp"

namespace accrue {
namespace {

double weighted_sum(const Tensor& y, const std::vector<float>& w) {
  const std::vector<float> v = y.to_vector<float>();
  double s = 0.0;
  for (std::size_t i = 0; i < v.size(); ++i) s += static_cast<double>(v[i]) * w[i];
  return s;
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  GradcheckResult result;
  for (const Tensor& x : inputs)
    if (x.requires_grad()) x.impl()->grad.reset();

  // Analytic gradients of L = sum(f(x) * w).
  Tensor y = f(inputs);
  ACCRUE_CHECK(y.dtype() == DType::f32, "gradcheck: f must return float32, got {}", dtype_name(y.dtype()));
  Generator gen{options.seed};
  const Tensor w = Tensor::uniform(y.shape(), 0.5f, 1.5f, &gen);
  const std::vector<float> wv = w.to_vector<float>();
  ops::sum(ops::mul(y, w)).backward();

  int failures = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    const Tensor g = x.grad();
    const std::vector<float> analytic = g.defined() ? g.to_vector<float>() : std::vector<float>(x.numel(), 0.0f);
    float* data = x.data<float>();
    const std::int64_t n = x.numel();
    const std::int64_t checked = std::min(n, options.max_elements);
    for (std::int64_t c = 0; c < checked; ++c) {
      const std::int64_t i = checked == n ? c : c * n / checked;
      const float original = data[i];
      const NoGradGuard no_grad;
      data[i] = static_cast<float>(original + options.eps);
      x.bump_version();
      const double plus = weighted_sum(f(inputs), wv);
      data[i] = static_cast<float>(original - options.eps);
      x.bump_version();
      const double minus = weighted_sum(f(inputs), wv);
      data[i] = original;
      x.bump_version();
      const double numeric = (plus - minus) / (2.0 * options.eps);
      const double error = std::abs(numeric - analytic[static_cast<std::size_t>(i)]);
      result.max_abs_error = std::max(result.max_abs_error, error);
      if (!(error <= options.atol + options.rtol * std::abs(numeric))) {
        result.ok = false;
        if (++failures <= 20)
          result.report += fmt::format("input {} element {}: numeric {:.6g}, analytic {:.6g}\n", k, i, numeric,
                                       analytic[static_cast<std::size_t>(i)]);
      }
    }
  }
  return result;
}

}  // namespace accrue
