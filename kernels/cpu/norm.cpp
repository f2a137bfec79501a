// Normalization on the CPU: statistics in double (two passes: mean, then squared deviations),
// the element-wise parts in float with the shared math of kernels/common/norm.hpp; sets (or
// channels) split across the pool.

#include "../common/norm.hpp"
#include "parallel.hpp"
#include "norm.hpp"

namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT {
namespace {

float gamma_at(const float* gamma, std::int64_t c) { return gamma != nullptr ? gamma[c] : 1.0f; }
float beta_at(const float* beta, std::int64_t c) { return beta != nullptr ? beta[c] : 0.0f; }

// Sets per task below which splitting does not pay.
constexpr std::int64_t set_grain = 4;

}  // namespace

void group_norm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                        const common::NormShape& s, float eps) {
  const std::int64_t Cg = s.C / s.groups, M = Cg * s.L;
  parallel_for(s.N * s.groups, set_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t set = begin; set < end; ++set) {
      const float* xs = x + set * M;
      float* ys = y + set * M;
      double sum = 0.0;
      for (std::int64_t i = 0; i < M; ++i) sum += xs[i];
      const double m = M > 0 ? sum / static_cast<double>(M) : 0.0;
      double sq = 0.0;
      for (std::int64_t i = 0; i < M; ++i) sq += (xs[i] - m) * (xs[i] - m);
      const float mf = static_cast<float>(m);
      const float r = common::norm_rstd(M > 0 ? static_cast<float>(sq / static_cast<double>(M)) : 0.0f, eps);
      mean[set] = mf;
      rstd[set] = r;
      const std::int64_t c0 = (set % s.groups) * Cg;
      for (std::int64_t c = 0; c < Cg; ++c) {
        const float a = r * gamma_at(gamma, c0 + c), b = beta_at(beta, c0 + c) - mf * a;
        for (std::int64_t l = 0; l < s.L; ++l) ys[c * s.L + l] = xs[c * s.L + l] * a + b;
      }
    }
  });
}

void group_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                         float* dx, float* dgamma, float* dbeta, const common::NormShape& s) {
  const std::int64_t Cg = s.C / s.groups, M = Cg * s.L;
  if (dgamma != nullptr || dbeta != nullptr) {
    parallel_for(s.C, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t c = begin; c < end; ++c) {
        double dg = 0.0, db = 0.0;
        for (std::int64_t n = 0; n < s.N; ++n) {
          const std::int64_t set = n * s.groups + c / Cg;
          const float* xs = x + (n * s.C + c) * s.L;
          const float* ds = dy + (n * s.C + c) * s.L;
          for (std::int64_t l = 0; l < s.L; ++l) {
            dg += ds[l] * ((xs[l] - mean[set]) * rstd[set]);
            db += ds[l];
          }
        }
        if (dgamma != nullptr) dgamma[c] = static_cast<float>(dg);
        if (dbeta != nullptr) dbeta[c] = static_cast<float>(db);
      }
    });
  }
  parallel_for(s.N * s.groups, set_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t set = begin; set < end; ++set) {
      const float* xs = x + set * M;
      const float* ds = dy + set * M;
      float* dxs = dx + set * M;
      const float m = mean[set], r = rstd[set];
      const std::int64_t c0 = (set % s.groups) * Cg;
      double sum_dxhat = 0.0, sum_dxhat_xhat = 0.0;
      for (std::int64_t c = 0; c < Cg; ++c) {
        const float g = gamma_at(gamma, c0 + c);
        for (std::int64_t l = 0; l < s.L; ++l) {
          const float dxhat = ds[c * s.L + l] * g;
          sum_dxhat += dxhat;
          sum_dxhat_xhat += dxhat * ((xs[c * s.L + l] - m) * r);
        }
      }
      const float mean_dxhat = M > 0 ? static_cast<float>(sum_dxhat / static_cast<double>(M)) : 0.0f;
      const float mean_dxhat_xhat = M > 0 ? static_cast<float>(sum_dxhat_xhat / static_cast<double>(M)) : 0.0f;
      for (std::int64_t c = 0; c < Cg; ++c) {
        const float g = gamma_at(gamma, c0 + c);
        for (std::int64_t l = 0; l < s.L; ++l) {
          const std::int64_t i = c * s.L + l;
          dxs[i] = common::norm_input_grad(ds[i] * g, (xs[i] - m) * r, r, mean_dxhat, mean_dxhat_xhat);
        }
      }
    }
  });
}

void batch_norm_forward_training(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                 float* rstd, float* running_mean, float* running_var, const common::NormShape& s,
                                 float momentum, float eps) {
  const std::int64_t M = s.N * s.L;
  parallel_for(s.C, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t c = begin; c < end; ++c) {
      double sum = 0.0;
      for (std::int64_t n = 0; n < s.N; ++n) {
        const float* xs = x + (n * s.C + c) * s.L;
        for (std::int64_t l = 0; l < s.L; ++l) sum += xs[l];
      }
      const double m = M > 0 ? sum / static_cast<double>(M) : 0.0;
      double sq = 0.0;
      for (std::int64_t n = 0; n < s.N; ++n) {
        const float* xs = x + (n * s.C + c) * s.L;
        for (std::int64_t l = 0; l < s.L; ++l) sq += (xs[l] - m) * (xs[l] - m);
      }
      const float mf = static_cast<float>(m);
      const float var = M > 0 ? static_cast<float>(sq / static_cast<double>(M)) : 0.0f;
      const float r = common::norm_rstd(var, eps);
      mean[c] = mf;
      rstd[c] = r;
      if (running_mean != nullptr) running_mean[c] = common::running_update(running_mean[c], mf, momentum);
      if (running_var != nullptr)
        running_var[c] = common::running_update(running_var[c], common::unbiased_variance(var, M), momentum);
      const float a = r * gamma_at(gamma, c), b = beta_at(beta, c) - mf * a;
      for (std::int64_t n = 0; n < s.N; ++n) {
        const float* xs = x + (n * s.C + c) * s.L;
        float* ys = y + (n * s.C + c) * s.L;
        for (std::int64_t l = 0; l < s.L; ++l) ys[l] = xs[l] * a + b;
      }
    }
  });
}

void batch_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                         float* dx, float* dgamma, float* dbeta, const common::NormShape& s) {
  const std::int64_t M = s.N * s.L;
  parallel_for(s.C, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t c = begin; c < end; ++c) {
      const float m = mean[c], r = rstd[c], g = gamma_at(gamma, c);
      double sum_dy = 0.0, sum_dy_xhat = 0.0;
      for (std::int64_t n = 0; n < s.N; ++n) {
        const float* xs = x + (n * s.C + c) * s.L;
        const float* ds = dy + (n * s.C + c) * s.L;
        for (std::int64_t l = 0; l < s.L; ++l) {
          sum_dy += ds[l];
          sum_dy_xhat += ds[l] * ((xs[l] - m) * r);
        }
      }
      if (dgamma != nullptr) dgamma[c] = static_cast<float>(sum_dy_xhat);
      if (dbeta != nullptr) dbeta[c] = static_cast<float>(sum_dy);
      const float mean_dxhat = M > 0 ? g * static_cast<float>(sum_dy / static_cast<double>(M)) : 0.0f;
      const float mean_dxhat_xhat = M > 0 ? g * static_cast<float>(sum_dy_xhat / static_cast<double>(M)) : 0.0f;
      for (std::int64_t n = 0; n < s.N; ++n) {
        const float* xs = x + (n * s.C + c) * s.L;
        const float* ds = dy + (n * s.C + c) * s.L;
        float* dxs = dx + (n * s.C + c) * s.L;
        for (std::int64_t l = 0; l < s.L; ++l)
          dxs[l] = common::norm_input_grad(ds[l] * g, (xs[l] - m) * r, r, mean_dxhat, mean_dxhat_xhat);
      }
    }
  });
}

}  // namespace accrue::kernels::cpu::ACCRUE_CPU_VARIANT
