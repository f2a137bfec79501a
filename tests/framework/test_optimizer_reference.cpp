// RMSprop and Adagrad against PyTorch 1.13, LARS, LAMB and Lion against a float64 reference of their
// papers' equations (tests/data/make_optimizer_reference.py writes both), over parameters that
// include a vector (excluded from trust ratios by default), a zero weight and zero gradients; and
// what every optimizer shares: checkpoints resume bit for bit, the state its config declares.

#include "../pytorch_reference.hpp"

using namespace accrue;
using namespace accrue::test;
using json = nlohmann::json;

namespace {

json reference() { return test::pytorch_reference("optimizer_reference.json"); }

optim::Exclude exclude_of(const json& o) {
  return {.vectors = o.value("exclude_vectors", true), .names = o.value("exclude_names", std::vector<std::string>{})};
}

std::array<double, 2> betas_of(const json& o, std::array<double, 2> defaults) {
  if (!o.contains("betas")) return defaults;
  return {o["betas"][0].get<double>(), o["betas"][1].get<double>()};
}

// The configuration a case names, every option not given at its default.
optim::AnyOptimizer optimizer_of(const std::string& type, const json& o) {
  if (type == "RMSprop")
    return optim::RMSprop{.lr = o["lr"], .alpha = o.value("alpha", 0.99), .weight_decay = o.value("weight_decay", 0.0),
                          .momentum = o.value("momentum", 0.0), .centered = o.value("centered", false)};
  if (type == "Adagrad")
    return optim::Adagrad{.lr = o["lr"], .lr_decay = o.value("lr_decay", 0.0), .weight_decay = o.value("weight_decay", 0.0),
                          .initial_accumulator_value = o.value("initial_accumulator_value", 0.0)};
  if (type == "LARS")
    return optim::LARS{.lr = o["lr"], .momentum = o["momentum"], .weight_decay = o["weight_decay"],
                       .trust_coefficient = o["trust_coefficient"], .eps = o.value("eps", 0.0), .exclude = exclude_of(o),
                       .larc_clip = o.value("larc_clip", false)};
  if (type == "LAMB")
    return optim::LAMB{.lr = o["lr"], .betas = betas_of(o, {0.9, 0.999}), .weight_decay = o.value("weight_decay", 0.01),
                       .exclude = exclude_of(o), .bias_correction = o.value("bias_correction", true)};
  BOOST_REQUIRE(type == "Lion");
  return optim::Lion{.lr = o["lr"], .betas = betas_of(o, {0.9, 0.99}), .weight_decay = o.value("weight_decay", 0.0)};
}

struct Run {
  std::vector<std::string> names;
  std::vector<Tensor> params;
  std::unique_ptr<optim::Optimizer> opt;
};

Run start(const json& ref, const optim::AnyOptimizer& config) {
  Run r;
  for (const auto& [name, shape] : ref["shapes"].items()) {
    Tensor p = Tensor::from(ref["initial"][name].get<std::vector<float>>(), Shape(shape.get<std::vector<std::int64_t>>()));
    p.set_requires_grad(true);
    r.names.push_back(name);
    r.params.push_back(p);
  }
  r.opt = config.create(r.params);
  r.opt->set_parameter_names(r.names);
  return r;
}

void steps(const json& ref, Run& r, std::size_t begin, std::size_t end) {
  for (std::size_t t = begin; t < end; ++t) {
    for (std::size_t i = 0; i < r.params.size(); ++i)
      r.params[i].set_grad(Tensor::from(ref["grads"][t][r.names[i]].get<std::vector<float>>(), r.params[i].shape()));
    r.opt->step();
  }
}

std::vector<std::vector<float>> values(const Run& r) {
  std::vector<std::vector<float>> v;
  for (const Tensor& p : r.params) v.push_back(p.to_vector<float>());
  return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_optimizer_matches_its_reference) {
  const json ref = reference();
  for (const json& c : ref["cases"]) {
    const optim::AnyOptimizer config = optimizer_of(c["type"], c["options"]);
    Run r = start(ref, config);
    steps(ref, r, 0, ref["grads"].size());
    for (std::size_t i = 0; i < r.params.size(); ++i)
      check_close(r.params[i], c["final"][r.names[i]].get<std::vector<float>>(), 2e-6, 2e-5,
                  config.str() + " " + r.names[i]);
    if (const auto* layerwise = dynamic_cast<const optim::LayerwiseOptimizer*>(r.opt.get()))
      for (std::size_t i = 0; i < r.params.size(); ++i)
        BOOST_TEST(layerwise->trust_ratios()[i] == c["last_trust_ratios"][r.names[i]].get<double>(),
                   config.str() << " trust ratio of " << r.names[i] << boost::test_tools::tolerance(1e-5));
  }
}

BOOST_AUTO_TEST_CASE(checkpointed_state_resumes_bit_for_bit) {
  const json ref = reference();
  for (const json& c : ref["cases"]) {
    const optim::AnyOptimizer config = optimizer_of(c["type"], c["options"]);
    Run whole = start(ref, config), first = start(ref, config);
    steps(ref, whole, 0, 6);
    steps(ref, first, 0, 3);
    // A fresh optimizer over copies of the parameters, given the saved state.
    Run resumed = start(ref, config);
    for (std::size_t i = 0; i < resumed.params.size(); ++i) resumed.params[i].copy_(first.params[i]);
    optim::OptimizerState saved = first.opt->state();
    for (auto& [name, t] : saved.tensors) t = t.clone();
    resumed.opt->load_state(saved);
    BOOST_TEST(resumed.opt->steps() == 3);
    steps(ref, resumed, 3, 6);
    BOOST_TEST((values(resumed) == values(whole)), config.str());
    // The state is what the configuration declares to memory plans: state_tensors() per parameter.
    BOOST_TEST(saved.tensors.size() == static_cast<std::size_t>(*config.state_tensors()) * whole.params.size(),
               config.str());
  }
}

BOOST_AUTO_TEST_CASE(a_wrong_saved_state_is_refused_naming_it) {
  const json ref = reference();
  Run a = start(ref, optim::RMSprop{.momentum = 0.9});
  steps(ref, a, 0, 1);
  Run b = start(ref, optim::RMSprop{});
  BOOST_CHECK_EXCEPTION(b.opt->load_state(a.opt->state()), ValueError, message_has({"unexpected '0.momentum_buffer'"}));
  Run c = start(ref, optim::LAMB{});
  BOOST_CHECK_EXCEPTION(c.opt->load_state(a.opt->state()), ValueError, message_has({"missing '0.exp_avg'", "LAMB"}));
}

BOOST_AUTO_TEST_CASE(defaults_and_printing) {
  BOOST_TEST(optim::RMSprop{}.str() == "RMSprop(lr=0.01)");
  BOOST_TEST((optim::RMSprop{.momentum = 0.9, .centered = true}.str() == "RMSprop(lr=0.01, momentum=0.9, centered=True)"));
  BOOST_TEST(optim::Adagrad{}.str() == "Adagrad(lr=0.01)");
  BOOST_TEST(optim::Adagrad{}.eps == 1e-10);
  BOOST_TEST(optim::LARS{}.str() == "LARS(lr=0.1)");
  BOOST_TEST((optim::LARS{.exclude = {.names = {"bias"}}}.str() == "LARS(lr=0.1, exclude=(vectors=True, 'bias'))"));
  BOOST_TEST(optim::LAMB{}.str() == "LAMB(lr=0.001)");
  BOOST_TEST((optim::LAMB{.bias_correction = false}.str() == "LAMB(lr=0.001, bias_correction=False)"));
  BOOST_TEST(optim::Lion{}.str() == "Lion(lr=0.0001)");
  BOOST_TEST((optim::Lion{.betas = {0.95, 0.98}}.str() == "Lion(lr=0.0001, betas=(0.95, 0.98))"));
}

BOOST_AUTO_TEST_CASE(excluded_parameters_by_kind_and_name) {
  const Tensor vector = Tensor::zeros({3}), matrix = Tensor::zeros({2, 3});
  const optim::Exclude by_kind{};
  BOOST_TEST(by_kind.excludes("0.bias", vector));
  BOOST_TEST(!by_kind.excludes("0.weight", matrix));
  const optim::Exclude by_name{.vectors = false, .names = {"bias", "3.weight"}};
  BOOST_TEST(by_name.excludes("0.bias", vector));
  BOOST_TEST(!by_name.excludes("0.weight", vector));
  BOOST_TEST(by_name.excludes("3.weight", matrix));
  BOOST_TEST(!by_name.excludes("13.weight", matrix));
}

BOOST_AUTO_TEST_CASE(bad_options_are_refused) {
  Tensor p = Tensor::ones({2});
  p.set_requires_grad(true);
  BOOST_CHECK_EXCEPTION(optim::RMSprop{.alpha = 1.5}.create({p}), ValueError, message_has({"RMSprop", "alpha", "1.5"}));
  BOOST_CHECK_EXCEPTION(optim::Adagrad{.lr_decay = -1}.create({p}), ValueError, message_has({"Adagrad", "lr_decay"}));
  BOOST_CHECK_EXCEPTION(optim::LARS{.trust_coefficient = 0}.create({p}), ValueError, message_has({"LARS", "trust_coefficient"}));
  BOOST_CHECK_EXCEPTION((optim::LAMB{.betas = {0.9, 1.0}}.create({p})), ValueError, message_has({"LAMB", "betas[1]"}));
  BOOST_CHECK_EXCEPTION(optim::Lion{.weight_decay = -0.1}.create({p}), ValueError, message_has({"Lion", "weight_decay"}));
}
