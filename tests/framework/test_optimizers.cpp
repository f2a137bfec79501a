// Optimizer steps against values worked out by hand and against a double-precision reference of
// PyTorch's update equations.

#include "../test_util.hpp"

#include <cmath>

using namespace accrue;
using namespace accrue::test;

namespace {

Tensor param(std::vector<float> v) {
  Tensor p = Tensor::from(v, {static_cast<std::int64_t>(v.size())});
  p.set_requires_grad(true);
  return p;
}

void set_grad(Tensor& p, std::vector<float> g) { p.set_grad(Tensor::from(g, p.shape())); }

// Gradients for step t and element i that change sign and size, so every term of an update matters.
float grad_at(int t, std::size_t i) { return std::sin(0.7f * static_cast<float>(t) + static_cast<float>(i)) * 0.8f; }

struct SgdRef {
  double lr, momentum, dampening, wd;
  bool nesterov, maximize;
  std::vector<double> p, buf;
  bool first = true;
  void step(const std::vector<double>& g) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      double d = maximize ? -g[i] : g[i];
      d += wd * p[i];
      if (momentum != 0) {
        buf[i] = first ? d : momentum * buf[i] + (1 - dampening) * d;
        d = nesterov ? d + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
    first = false;
  }
};

struct AdamRef {
  double lr, b1, b2, eps, wd;
  bool decoupled, amsgrad;
  std::vector<double> p, m, v, vmax;
  int t = 0;
  void step(const std::vector<double>& g) {
    ++t;
    for (std::size_t i = 0; i < p.size(); ++i) {
      double d = g[i];
      if (decoupled) p[i] *= 1 - lr * wd;
      else d += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * d;
      v[i] = b2 * v[i] + (1 - b2) * d * d;
      vmax[i] = std::max(vmax[i], v[i]);
      const double mhat = m[i] / (1 - std::pow(b1, t));
      const double vhat = (amsgrad ? vmax[i] : v[i]) / (1 - std::pow(b2, t));
      p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  }
};

std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

}  // namespace

BOOST_AUTO_TEST_CASE(sgd_by_hand) {
  // Plain SGD: p = 1 - 0.1 * 0.5 = 0.95.
  Tensor p = param({1.0f});
  auto plain = optim::SGD{.lr = 0.1}.create({p});
  set_grad(p, {0.5f});
  plain->step();
  check_close(p, {0.95f});
  // Momentum 0.9: buf = 0.5, p = 0.95; then buf = 0.9 * 0.5 + 0.5 = 0.95, p = 0.95 - 0.095 = 0.855.
  Tensor q = param({1.0f});
  auto momentum = optim::SGD{.lr = 0.1, .momentum = 0.9}.create({q});
  set_grad(q, {0.5f});
  momentum->step();
  check_close(q, {0.95f});
  momentum->step();
  check_close(q, {0.855f}, 1e-6, 1e-6);
  BOOST_TEST(momentum->steps() == 2);
}

BOOST_AUTO_TEST_CASE(sgd_every_option_against_reference) {
  struct Case {
    optim::SGD config;
  };
  const std::vector<optim::SGD> configs = {
      {.lr = 0.05},
      {.lr = 0.05, .momentum = 0.9},
      {.lr = 0.05, .momentum = 0.9, .dampening = 0.3},
      {.lr = 0.05, .momentum = 0.9, .nesterov = true},
      {.lr = 0.05, .momentum = 0.5, .weight_decay = 0.01},
      {.lr = 0.05, .weight_decay = 0.1, .maximize = true},
  };
  for (const optim::SGD& c : configs) {
    const std::vector<float> init = {0.3f, -1.2f, 2.0f, 0.0f, 5.0f};
    Tensor p = param(init);
    auto opt = c.create({p});
    SgdRef ref{c.lr, c.momentum, c.dampening, c.weight_decay, c.nesterov, c.maximize,
               {init.begin(), init.end()}, std::vector<double>(init.size(), 0.0)};
    for (int t = 0; t < 6; ++t) {
      std::vector<float> g(init.size());
      std::vector<double> gd(init.size());
      for (std::size_t i = 0; i < g.size(); ++i) gd[i] = g[i] = grad_at(t, i);
      set_grad(p, g);
      opt->step();
      ref.step(gd);
    }
    check_close(p, to_float(ref.p), 1e-6, 1e-5, c.str());
  }
}

BOOST_AUTO_TEST_CASE(adam_by_hand) {
  // The first Adam step moves each weight by lr * g / (|g| + eps), about lr, against the gradient.
  Tensor p = param({1.0f, -1.0f});
  auto opt = optim::Adam{.lr = 0.01}.create({p});
  set_grad(p, {0.2f, -3.0f});
  opt->step();
  check_close(p, {0.99f, -0.99f}, 1e-6, 1e-6);
}

BOOST_AUTO_TEST_CASE(adam_and_adamw_against_reference) {
  struct Case {
    double lr, b1, b2, eps, wd;
    bool decoupled, amsgrad;
  };
  const std::vector<Case> cases = {{1e-2, 0.9, 0.999, 1e-8, 0, false, false}, {1e-2, 0.8, 0.99, 1e-6, 0.05, false, false},
                                   {1e-2, 0.9, 0.999, 1e-8, 0.1, true, false}, {1e-2, 0.9, 0.999, 1e-8, 0.0, false, true},
                                   {3e-3, 0.9, 0.95, 1e-8, 0.01, true, true}};
  for (const Case& c : cases) {
    const std::vector<float> init = {0.3f, -1.2f, 2.0f, 0.0f, 5.0f};
    Tensor p = param(init);
    std::unique_ptr<optim::Optimizer> opt =
        c.decoupled ? optim::AdamW{.lr = c.lr, .betas = {c.b1, c.b2}, .eps = c.eps, .weight_decay = c.wd, .amsgrad = c.amsgrad}
                          .create({p})
                    : optim::Adam{.lr = c.lr, .betas = {c.b1, c.b2}, .eps = c.eps, .weight_decay = c.wd, .amsgrad = c.amsgrad}
                          .create({p});
    const std::vector<double> zeros(init.size(), 0.0);
    AdamRef ref{c.lr, c.b1, c.b2, c.eps, c.wd, c.decoupled, c.amsgrad, {init.begin(), init.end()}, zeros, zeros, zeros};
    for (int t = 0; t < 8; ++t) {
      std::vector<float> g(init.size());
      std::vector<double> gd(init.size());
      for (std::size_t i = 0; i < g.size(); ++i) gd[i] = g[i] = grad_at(t, i) * (i == 3 ? 0.01f : 1.0f);
      set_grad(p, g);
      opt->step();
      ref.step(gd);
    }
    check_close(p, to_float(ref.p), 2e-6, 2e-5, opt->str());
  }
}

BOOST_AUTO_TEST_CASE(parameters_without_gradient_are_left_alone) {
  Tensor a = param({1.0f}), b = param({2.0f});
  auto opt = optim::Adam{}.create({a, b});
  set_grad(a, {1.0f});
  opt->step();
  BOOST_TEST(b.to_vector()[0] == 2.0f);
  BOOST_TEST(a.to_vector()[0] != 1.0f);
  opt->zero_grad();
  BOOST_TEST(!a.grad().defined());
}

BOOST_AUTO_TEST_CASE(defaults_and_printing_follow_pytorch) {
  BOOST_TEST(optim::SGD{}.str() == "SGD(lr=0.001)");
  const optim::SGD nesterov{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  BOOST_TEST(nesterov.str() == "SGD(lr=0.1, momentum=0.9, nesterov=True)");
  BOOST_TEST(optim::Adam{}.str() == "Adam(lr=0.001)");
  BOOST_TEST(optim::AdamW{}.weight_decay == 0.01);
  const optim::AdamW decayed{.weight_decay = 0.1};
  BOOST_TEST(decayed.str() == "AdamW(lr=0.001, weight_decay=0.1)");
}

BOOST_AUTO_TEST_CASE(bad_options_are_refused) {
  Tensor p = param({1.0f});
  BOOST_CHECK_EXCEPTION(optim::SGD{.lr = -1}.create({p}), ValueError, message_has({"lr", "-1"}));
  BOOST_CHECK_EXCEPTION((optim::SGD{.lr = 0.1, .nesterov = true}.create({p})), ValueError, message_has({"nesterov"}));
  BOOST_CHECK_EXCEPTION((optim::Adam{.betas = {1.0, 0.999}}.create({p})), ValueError, message_has({"betas[0]"}));
  // Each range, its bound and the message that names the optimizer, the option and the value.
  const auto refused = [&](const auto& options, const std::string& message) {
    BOOST_CHECK_EXCEPTION(options.create({p}), ValueError, [&](const ValueError& e) {
      BOOST_TEST_INFO(e.what());
      return std::string(e.what()).find(message) != std::string::npos;
    });
  };
  refused(optim::AdamW{.lr = std::nan("")}, "AdamW: lr must be >= 0, got nan");
  refused(optim::LARS{.trust_coefficient = 0.0}, "LARS: trust_coefficient must be > 0, got 0");
  refused(optim::LARS{.momentum = 1.0}, "LARS: momentum must be in [0, 1), got 1");
  refused(optim::RMSprop{.alpha = 1.5}, "RMSprop: alpha must be in [0, 1], got 1.5");
  refused(optim::Lion{.betas = {0.9, -0.5}}, "Lion: betas[1] must be in [0, 1), got -0.5");
  refused(optim::Adagrad{.eps = -1e-3}, "Adagrad: eps must be >= 0, got -0.001");
  refused(optim::LAMB{.weight_decay = -0.1}, "LAMB: weight_decay must be >= 0, got -0.1");
  BOOST_CHECK_NO_THROW(optim::RMSprop{.alpha = 1.0}.create({p}));
  BOOST_CHECK_NO_THROW((optim::LARS{.momentum = 0.0, .trust_coefficient = 1e-9}.create({p})));
  BOOST_CHECK_EXCEPTION(optim::SGD{}.create({Tensor::ones({2})}), ValueError, message_has({"requires grad"}));
}
