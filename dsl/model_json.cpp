// A saved model's JSON: configurations, the errors of reading one, and the compile settings.

#include "model_json.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "classification_metrics.hpp"
#include "layer_registry.hpp"
#include "model.hpp"
#include "../framework/serialization/json_text.hpp"
#include "../framework/core/utf8.hpp"

namespace accrue::detail {
namespace {

// An enum's values and their names: the names the project already prints (last_window_name,
// normalization_name, dtype_name), so that a file spells them as messages and Recipe::str do.
template <class Enum>
struct Names {
  std::vector<Enum> values;
  std::string_view (*name_of)(Enum);
  std::string name(Enum e) const { return std::string(name_of(e)); }
  Enum value(const std::string& text, const Reading& r, const char* option) const {
    std::string known;
    for (const Enum v : values) {
      if (text == name_of(v)) return v;
      known += (known.empty() ? "" : ", ") + name(v);
    }
    r.fail(fmt::format("{} '{}' is none of {}", option, text, known));
  }
};

// WeightGradients has no printed name elsewhere.
std::string_view weight_gradients_name(WeightGradients w) {
  return w == WeightGradients::per_window ? "per_window" : "per_micro_batch";
}

const Names<LastWindow> last_windows{{LastWindow::normalize, LastWindow::drop, LastWindow::carry}, last_window_name};
const Names<Normalization> normalizations{{Normalization::per_window, Normalization::per_micro_batch}, normalization_name};
const Names<WeightGradients> weight_gradients{{WeightGradients::per_micro_batch, WeightGradients::per_window},
                                              weight_gradients_name};
const Names<DType> low_types{{DType::bf16, DType::f16}, dtype_name};

ordered_json typed(const std::string& type, const LayerConfig& config) {
  return {{"type", type}, {"config", json_of(config)}};
}

// LARS and LAMB's exclusion, as two options: the names joined by commas (names have none).
void add_exclude(LayerConfig& config, const optim::Exclude& e) {
  std::string names;
  for (const std::string& n : e.names) names += (names.empty() ? "" : ",") + n;
  config.emplace_back("exclude_vectors", e.vectors);
  config.emplace_back("exclude_names", names);
}

optim::Exclude exclude_of(const ConfigReader& c) {
  optim::Exclude e{.vectors = c.flag("exclude_vectors")};
  const std::string names = c.text("exclude_names");
  for (std::size_t begin = 0; begin < names.size();) {
    const std::size_t end = std::min(names.find(',', begin), names.size());
    e.names.push_back(names.substr(begin, end - begin));
    begin = end + 1;
  }
  return e;
}

// The optimizers beyond SGD and Adam, or null.
ordered_json other_optimizer_json(const optim::AnyOptimizer& o) {
  if (const auto* r = o.get<optim::RMSprop>())
    return typed("RMSprop", {{"lr", r->lr}, {"alpha", r->alpha}, {"eps", r->eps}, {"weight_decay", r->weight_decay},
                             {"momentum", r->momentum}, {"centered", r->centered}});
  if (const auto* a = o.get<optim::Adagrad>())
    return typed("Adagrad", {{"lr", a->lr}, {"lr_decay", a->lr_decay}, {"weight_decay", a->weight_decay},
                             {"initial_accumulator_value", a->initial_accumulator_value}, {"eps", a->eps}});
  if (const auto* l = o.get<optim::Lion>())
    return typed("Lion", {{"lr", l->lr}, {"beta1", l->betas[0]}, {"beta2", l->betas[1]}, {"weight_decay", l->weight_decay}});
  if (const auto* l = o.get<optim::LARS>()) {
    LayerConfig c{{"lr", l->lr}, {"momentum", l->momentum}, {"weight_decay", l->weight_decay},
                  {"trust_coefficient", l->trust_coefficient}, {"eps", l->eps}, {"larc_clip", l->larc_clip}};
    add_exclude(c, l->exclude);
    return typed("LARS", c);
  }
  if (const auto* l = o.get<optim::LAMB>()) {
    LayerConfig c{{"lr", l->lr}, {"beta1", l->betas[0]}, {"beta2", l->betas[1]}, {"eps", l->eps},
                  {"weight_decay", l->weight_decay}, {"bias_correction", l->bias_correction}};
    add_exclude(c, l->exclude);
    return typed("LAMB", c);
  }
  return nullptr;
}

// The optimizer as a type and configuration, or null when it is not one of the built-in ones.
ordered_json optimizer_json(const optim::AnyOptimizer& o) {
  if (const auto* sgd = o.get<optim::SGD>())
    return typed("SGD", {{"lr", sgd->lr}, {"momentum", sgd->momentum}, {"dampening", sgd->dampening},
                         {"weight_decay", sgd->weight_decay}, {"nesterov", sgd->nesterov}, {"maximize", sgd->maximize}});
  const auto adam = [](const std::string& type, const auto& a) {
    return typed(type, {{"lr", a.lr}, {"beta1", a.betas[0]}, {"beta2", a.betas[1]}, {"eps", a.eps},
                        {"weight_decay", a.weight_decay}, {"amsgrad", a.amsgrad}, {"maximize", a.maximize}});
  };
  if (const auto* a = o.get<optim::Adam>()) return adam("Adam", *a);
  if (const auto* a = o.get<optim::AdamW>()) return adam("AdamW", *a);
  return other_optimizer_json(o);
}

std::optional<optim::AnyOptimizer> other_optimizer_of(const ConfigReader& c) {
  if (c.type() == "RMSprop")
    return optim::RMSprop{.lr = c.number("lr"), .alpha = c.number("alpha"), .eps = c.number("eps"),
                          .weight_decay = c.number("weight_decay"), .momentum = c.number("momentum"),
                          .centered = c.flag("centered")};
  if (c.type() == "Adagrad")
    return optim::Adagrad{.lr = c.number("lr"), .lr_decay = c.number("lr_decay"), .weight_decay = c.number("weight_decay"),
                          .initial_accumulator_value = c.number("initial_accumulator_value"), .eps = c.number("eps")};
  if (c.type() == "Lion")
    return optim::Lion{.lr = c.number("lr"), .betas = {c.number("beta1"), c.number("beta2")},
                       .weight_decay = c.number("weight_decay")};
  if (c.type() == "LARS")
    return optim::LARS{.lr = c.number("lr"), .momentum = c.number("momentum"), .weight_decay = c.number("weight_decay"),
                       .trust_coefficient = c.number("trust_coefficient"), .eps = c.number("eps"),
                       .exclude = exclude_of(c), .larc_clip = c.flag("larc_clip")};
  if (c.type() == "LAMB")
    return optim::LAMB{.lr = c.number("lr"), .betas = {c.number("beta1"), c.number("beta2")}, .eps = c.number("eps"),
                       .weight_decay = c.number("weight_decay"), .exclude = exclude_of(c),
                       .bias_correction = c.flag("bias_correction")};
  return std::nullopt;
}

optim::AnyOptimizer optimizer_of(const ConfigReader& c) {
  if (c.type() == "SGD")
    return optim::SGD{.lr = c.number("lr"), .momentum = c.number("momentum"), .dampening = c.number("dampening"),
                      .weight_decay = c.number("weight_decay"), .nesterov = c.flag("nesterov"), .maximize = c.flag("maximize")};
  const auto adam = [&](auto a) {
    a.lr = c.number("lr");
    a.betas = {c.number("beta1"), c.number("beta2")};
    a.eps = c.number("eps");
    a.weight_decay = c.number("weight_decay");
    a.amsgrad = c.flag("amsgrad");
    a.maximize = c.flag("maximize");
    return optim::AnyOptimizer{a};
  };
  if (c.type() == "Adam") return adam(optim::Adam{});
  if (c.type() == "AdamW") return adam(optim::AdamW{});
  if (auto other = other_optimizer_of(c)) return *other;
  throw ValueError(fmt::format("optimizer '{}' is none of SGD, Adam, AdamW, RMSprop, Adagrad, Lion, LARS, LAMB", c.type()));
}

ordered_json keys_json(const AccumulationSchedule& s) {
  ordered_json keys = ordered_json::array();
  for (const auto& [key, n] : s.keys()) keys.push_back({key, n});
  return keys;
}

ordered_json accumulation_json(const AccumulationSchedule& s) {
  using Kind = AccumulationSchedule::Kind;
  switch (s.kind()) {
    case Kind::unset: return nullptr;
    case Kind::constant: return {{"kind", "constant"}, {"micro_batches", s.constant()}};
    case Kind::per_epoch: return {{"kind", "per_epoch"}, {"keys", keys_json(s)}};
    case Kind::per_step: return {{"kind", "per_step"}, {"keys", keys_json(s)}};
    case Kind::effective_batch: return {{"kind", "effective_batch"}, {"samples", s.effective_samples()}};
    case Kind::callable: break;
  }
  return nullptr;
}

AccumulationSchedule accumulation_of(const ordered_json& j, const Reading& r) {
  const std::string kind = j.value("kind", "");
  try {
    if (kind == "constant") return AccumulationSchedule(j.at("micro_batches").get<int>());
    if (kind == "effective_batch") return AccumulationSchedule::effective_batch(j.at("samples").get<std::int64_t>());
    const auto keys = j.at("keys").get<std::vector<std::pair<std::int64_t, int>>>();
    if (kind == "per_epoch") return AccumulationSchedule::per_epoch(keys);
    if (kind == "per_step") return AccumulationSchedule::by_step(keys);
  } catch (const nlohmann::json::exception& e) {
    r.fail(fmt::format("accumulation '{}': {}", kind, e.what()));
  }
  r.fail(fmt::format("accumulation kind '{}' is none of constant, per_epoch, per_step, effective_batch", kind));
}

ordered_json amp_json(const optim::AmpOptions& a) {
  return {{"dtype", a.dtype ? ordered_json(low_types.name(*a.dtype)) : ordered_json(nullptr)},
          {"loss_scaling", a.loss_scaling ? ordered_json(*a.loss_scaling) : ordered_json(nullptr)},
          {"init_scale", a.scaler.init_scale},
          {"growth_factor", a.scaler.growth_factor},
          {"backoff_factor", a.scaler.backoff_factor},
          {"growth_interval", a.scaler.growth_interval}};
}

optim::AmpOptions amp_of(const ordered_json& j, const Reading& r) {
  optim::AmpOptions a;
  try {
    if (!j.at("dtype").is_null()) a.dtype = low_types.value(j.at("dtype").get<std::string>(), r, "amp dtype");
    if (!j.at("loss_scaling").is_null()) a.loss_scaling = j.at("loss_scaling").get<bool>();
    a.scaler = {.init_scale = j.at("init_scale").get<double>(), .growth_factor = j.at("growth_factor").get<double>(),
                .backoff_factor = j.at("backoff_factor").get<double>(), .growth_interval = j.at("growth_interval").get<int>()};
  } catch (const nlohmann::json::exception& e) {
    r.fail(fmt::format("amp: {}", e.what()));
  }
  return a;
}

Loss loss_of(const ConfigReader& c) {
  if (c.type() == "CrossEntropy") return losses::CrossEntropy::from_config(c);
  if (c.type() == "MSE") return losses::MSE::from_config(c);
  if (c.type() == "BinaryCrossEntropy") return losses::BinaryCrossEntropy::from_config(c);
  if (c.type() == "Huber") return losses::Huber::from_config(c);
  if (c.type() == "KLDivergence") return losses::KLDivergence::from_config(c);
  throw ValueError(fmt::format("loss '{}' is none of CrossEntropy, MSE, BinaryCrossEntropy, Huber, KLDivergence", c.type()));
}

Metric metric_of(const ConfigReader& c) {
  if (c.type() == "accuracy") return metrics::Accuracy{};
  if (c.type() == "loss") return metrics::MeanLoss{};
  if (c.type() == "precision") return metrics::Precision::from_config(c);
  if (c.type() == "recall") return metrics::Recall::from_config(c);
  if (c.type() == "f1_score") return metrics::F1Score::from_config(c);
  if (c.type() == "binary_accuracy") return metrics::BinaryAccuracy::from_config(c);
  if (c.type() == "auc" || c.type() == "pr_auc") return metrics::AUC::from_config(c);
  if (c.type() == "sparse_top_k_categorical_accuracy") return metrics::SparseTopKCategoricalAccuracy::from_config(c);
  if (c.type() == "confusion_matrix") return metrics::ConfusionMatrix::from_config(c);
  throw ValueError(fmt::format("metric '{}' is none of accuracy, loss, precision, recall, f1_score, binary_accuracy, auc, pr_auc, "
                               "sparse_top_k_categorical_accuracy, confusion_matrix",
                               c.type()));
}

// The recipe's parts besides the optimizer, on `recipe`.
optim::Recipe with_steps(optim::Recipe recipe, const ordered_json& j, const Reading& r) {
  if (!j["accumulate"].is_null()) {
    const ordered_json& o = j["accumulate_options"];
    recipe = recipe.accumulate(accumulation_of(j["accumulate"], r),
                               {.last_window = last_windows.value(o.value("last_window", ""), r, "last_window"),
                                .normalization = normalizations.value(o.value("normalization", ""), r, "normalization"),
                                .weight_gradients = weight_gradients.value(o.value("weight_gradients", ""), r, "weight_gradients")});
  }
  if (!j["clip"].is_null())
    recipe = recipe.clip(j["clip"].value("max_norm", 0.0), {.error_if_nonfinite = j["clip"].value("error_if_nonfinite", false)});
  if (!j["clip_value"].is_null()) recipe = recipe.clip_value(j["clip_value"].get<double>());
  if (!j["amp"].is_null()) recipe = recipe.amp(amp_of(j["amp"], r));
  if (!j["memory_budget"].is_null()) recipe = recipe.memory_budget(j["memory_budget"].get<std::size_t>());
  if (j.contains("average")) {  // files from before weight averaging have none
    const ordered_json& a = j["average"];
    const std::string kind = a.value("kind", "");
    if (kind != "ema" && kind != "swa") r.fail(fmt::format("average: kind '{}' is neither ema nor swa", kind));
    recipe = kind == "ema" ? recipe.ema({.decay = a.value("decay", 0.999), .warmup = a.value("warmup", false),
                                         .validate = a.value("validate", true),
                                         .overwrite_at_end = a.value("overwrite_at_end", true),
                                         .overwrite_every = a.value("overwrite_every", std::int64_t{0})})
                           : recipe.swa({.start = a.value("start", std::int64_t{1}), .validate = a.value("validate", true),
                                         .overwrite_at_end = a.value("overwrite_at_end", true)});
  }
  if (j.contains("reference_batch")) {  // files from before it have none
    const ordered_json& b = j["reference_batch"];
    const std::string rule = b.value("rule", "");
    const auto rules = {optim::ScalingRule::automatic, optim::ScalingRule::linear, optim::ScalingRule::sqrt};
    const auto found = std::find_if(rules.begin(), rules.end(), [&](auto x) { return optim::scaling_rule_name(x) == rule; });
    if (found == rules.end()) r.fail(fmt::format("reference_batch: rule '{}' is none of automatic, linear, sqrt", rule));
    recipe = recipe.reference_batch(b.value("samples", std::int64_t{0}),
                                    {.rule = *found, .warmup_epochs = b.value("warmup_epochs", 0.0)});
  }
  return recipe;
}

}  // namespace

ordered_json json_of(const ConfigValue& v) {
  return std::visit(
      [](const auto& x) -> ordered_json {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) return nullptr;
        else return x;
      },
      v);
}

ordered_json json_of(const LayerConfig& config) {
  ordered_json j = ordered_json::object();
  for (const auto& [name, value] : config) j[name] = json_of(value);
  return j;
}

void Reading::fail(const std::string& what) const {
  throw ValueError(fmt::format("{}: {}{}", path, where.empty() ? "" : where + ": ", what));
}

ConfigValue config_value(const ordered_json& j, const Reading& r, const std::string& option) {
  if (j.is_null()) return std::monostate{};
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array() && std::all_of(j.begin(), j.end(), [](const auto& e) { return e.is_number_integer(); }))
    return j.get<std::vector<std::int64_t>>();
  if (j.is_array() && std::all_of(j.begin(), j.end(), [](const auto& e) { return e.is_string(); }))
    return j.get<std::vector<std::string>>();
  r.fail(fmt::format("option {} holds {}, not a flag, a number, a text, whole numbers or texts", printable_excerpt(option),
                     json_excerpt(j)));
}

LayerConfig config_of(const ordered_json& j, const Reading& r) {
  if (!j.is_object()) r.fail("a configuration is not an object");
  LayerConfig config;
  for (const auto& [name, value] : j.items()) config.emplace_back(name, config_value(value, r, name));
  return config;
}

ordered_json compile_json(const Model& model) {
  const optim::Recipe& recipe = model.recipe();
  ordered_json not_saved = ordered_json::array();
  ordered_json j{{"recipe", recipe.str()}, {"optimizer", optimizer_json(recipe.optimizer())}};
  if (j["optimizer"].is_null()) not_saved.push_back(fmt::format("the optimizer {} (not a built-in one)", recipe.optimizer().str()));
  j["accumulate"] = accumulation_json(recipe.accumulation());
  if (recipe.accumulation().kind() == AccumulationSchedule::Kind::callable)
    not_saved.push_back("the accumulation schedule (a function of the epoch)");
  const AccumulateOptions& o = recipe.accumulate_options();
  j["accumulate_options"] = {{"last_window", last_windows.name(o.last_window)},
                             {"normalization", normalizations.name(o.normalization)},
                             {"weight_gradients", weight_gradients.name(o.weight_gradients)}};
  j["clip"] = recipe.clip_norm() ? ordered_json{{"max_norm", *recipe.clip_norm()},
                                                {"error_if_nonfinite", recipe.clip_options().error_if_nonfinite}}
                                 : ordered_json(nullptr);
  j["clip_value"] = recipe.clip_value_limit() ? ordered_json(*recipe.clip_value_limit()) : ordered_json(nullptr);
  j["amp"] = recipe.amp_options() ? amp_json(*recipe.amp_options()) : ordered_json(nullptr);
  j["memory_budget"] = recipe.memory_budget() ? ordered_json(*recipe.memory_budget()) : ordered_json(nullptr);
  if (const auto& a = recipe.weight_average())
    j["average"] = {{"kind", a->kind == optim::WeightAverage::Kind::ema ? "ema" : "swa"},
                    {"decay", a->decay},
                    {"warmup", a->warmup},
                    {"start", a->start},
                    {"validate", a->validate},
                    {"overwrite_at_end", a->overwrite_at_end},
                    {"overwrite_every", a->overwrite_every}};
  if (const auto samples = recipe.reference_samples())
    j["reference_batch"] = {{"samples", *samples},
                            {"rule", optim::scaling_rule_name(recipe.reference_options().rule)},
                            {"warmup_epochs", recipe.reference_options().warmup_epochs}};
  const std::vector<CompiledLoss>& losses = model.losses();
  const bool several = losses.size() > 1;
  for (const CompiledLoss& l : losses) {
    if (!l.loss.config()) {
      not_saved.push_back(fmt::format("the loss '{}' (a function of your own)", l.loss.name()));
      continue;
    }
    if (!several) j["loss"] = typed(l.loss.name(), *l.loss.config());
    else j["losses"].push_back({{"output", l.output}, {"weight", l.weight}, {"loss", typed(l.loss.name(), *l.loss.config())}});
  }
  j["metrics"] = ordered_json::array();
  for (std::size_t i = 0; i < model.metrics().size(); ++i) {
    const Metric& m = model.metrics()[i];
    if (m.type() == "output_loss") continue;  // compile makes each output's loss tracker
    const auto config = m.config();
    if (!config) {
      not_saved.push_back(fmt::format("the metric '{}' (one of your own)", m.name()));
      continue;
    }
    j["metrics"].push_back(typed(m.type(), *config));
    if (several) j["metrics"].back()["output"] = losses[model.metric_output(i)].output;
  }
  j["not_saved"] = std::move(not_saved);
  return j;
}

std::string compile_from_json(Model& model, const ordered_json& j, const Reading& outer) {
  const Reading r = outer.at("compile settings");
  if (!j.is_object() || !j.contains("not_saved") || !j["not_saved"].is_array()) r.fail("not an object with \"not_saved\"");
  if (!j["not_saved"].empty()) {
    std::string parts;
    for (const auto& part : j["not_saved"]) parts += (parts.empty() ? "" : ", ") + part.get<std::string>();
    return fmt::format("compiled with {} ({}), which the file cannot hold", j.value("recipe", "?"), parts);
  }
  for (const char* key : {"optimizer", "accumulate", "accumulate_options", "clip", "clip_value", "amp", "memory_budget", "metrics"})
    if (!j.contains(key)) r.fail(fmt::format("\"{}\" is missing", key));
  if (!j.contains("loss") && !j.contains("losses")) r.fail("\"loss\" is missing");
  const auto reader = [&](const ordered_json& part, const LayerConfig& config) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) r.fail("a part needs a \"type\"");
    return ConfigReader(part["type"].get<std::string>(), config);
  };
  try {
    const LayerConfig optimizer_config = config_of(j["optimizer"].value("config", ordered_json::object()), r);
    optim::Recipe recipe = with_steps(optimizer_of(reader(j["optimizer"], optimizer_config)), j, r);
    const auto loss_in = [&](const ordered_json& part) { return loss_of(reader(part, config_of(part.value("config", ordered_json::object()), r))); };
    if (!j.contains("losses")) {
      std::vector<Metric> metrics;
      for (const ordered_json& m : j["metrics"]) metrics.push_back(metric_of(reader(m, config_of(m.value("config", ordered_json::object()), r))));
      model.compile(std::move(recipe), loss_in(j["loss"]), std::move(metrics));
      return {};
    }
    std::map<std::string, OutputLoss> losses;
    for (const ordered_json& l : j["losses"])
      losses[l.at("output").get<std::string>()] = {.loss = loss_in(l.at("loss")), .weight = l.at("weight").get<double>()};
    for (const ordered_json& m : j["metrics"]) {
      const auto output = losses.find(m.at("output").get<std::string>());
      if (output == losses.end()) r.fail(fmt::format("a metric measures output '{}', which has no loss", m["output"].get<std::string>()));
      output->second.metrics.push_back(metric_of(reader(m, config_of(m.value("config", ordered_json::object()), r))));
    }
    model.compile(std::move(recipe), std::move(losses));
  } catch (const ValueError& e) {
    if (std::string_view(e.what()).starts_with(outer.path)) throw;
    r.fail(e.what());
  } catch (const nlohmann::json::exception& e) {
    r.fail(e.what());
  }
  return {};
}

}  // namespace accrue::detail
