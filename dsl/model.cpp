#include "model.hpp"
#include "../framework/core/utf8.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "../framework/autograd/autograd.hpp"
#include "../framework/core/log.hpp"
#include "../framework/ops/ops.hpp"

namespace accrue {

namespace {
// "Dense" -> "dense", "ReLU" -> "re_lu", "GELU" -> "gelu": Keras's layer naming.
std::string snake_case(const std::string& type) {
  std::string out;
  for (std::size_t i = 0; i < type.size(); ++i) {
    const char c = type[i];
    const bool upper = std::isupper(static_cast<unsigned char>(c)) != 0;
    const bool next_lower = i + 1 < type.size() && std::islower(static_cast<unsigned char>(type[i + 1])) != 0;
    const bool prev_lower = i > 0 && std::islower(static_cast<unsigned char>(type[i - 1])) != 0;
    if (upper && i > 0 && (prev_lower || next_lower)) out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::uint64_t seed_from_default() {
  Generator& g = default_generator();
  return (static_cast<std::uint64_t>(g.next_u32()) << 32) | g.next_u32();
}
}  // namespace

std::optional<double> Evaluation::first_metric() const {
  for (const auto& [name, value] : logs.items())
    if (name != "loss") return value;
  return std::nullopt;
}

const CountTable& Evaluation::table(const std::string& name) const {
  if (const CountTable* t = logs.table(name)) return *t;
  std::string names;
  for (const auto& [n, t] : logs.tables()) names += (names.empty() ? "" : ", ") + n;
  throw ValueError(fmt::format("no table named '{}' in the evaluation (there are: {})", name, names.empty() ? "none" : names));
}

Model::Model(std::string name) : name_(std::move(name)), generator_(std::make_unique<Generator>(seed_from_default())) {
  inputs_.push_back({.name = "input", .shape = std::nullopt});
}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

void Model::set_name(std::string name) {
  // Names go into JSON (model files, reports) and into nested models' parameter names.
  require_utf8(name, "Model::set_name");
  ACCRUE_CHECK(!name.empty() && name.find('.') == std::string::npos,
               "Model::set_name: '{}' is no model name (not empty, no '.': it prefixes parameter names)", name);
  name_ = std::move(name);
}

void Model::adopt(Layer& layer, const std::string& key) {
  int& same = added_of_type_[layer.type_name()];
  if (layer.name().empty()) {
    const std::string base = snake_case(layer.type_name());
    layer.set_name(same == 0 ? base : fmt::format("{}_{}", base, same));
  }
  ++same;
  // Names go into JSON (weights, checkpoints, reports): refused here, not when a file is written.
  require_utf8(layer.name(), fmt::format("model '{}': the name of layer {} ({})", name_, layers_.size(), layer.type_name()));
  const std::string id = layer_id(layer, key);
  // A layer renamed since it was added (layer(i).set_name) no longer holds its old name.
  if (const auto it = names_.find(id); it != names_.end())
    ACCRUE_CHECK(it->second >= layers_.size() || layer_id(*layers_[it->second], keys_[it->second]) != id,
                 "model '{}': two layers named '{}'", name_, id);
  names_[id] = layers_.size();
  layer.set_generator(generator_.get());
  layer.set_training(training_);
}

void Model::append(std::unique_ptr<Layer> owned) {
  ACCRUE_CHECK(owned != nullptr, "Sequential::add: null layer");
  std::shared_ptr<Layer> layer = std::move(owned);
  adopt(*layer, std::to_string(layers_.size()));
  if (built_) {
    const Shape in = output_shape();
    try {
      layer->ensure_built(in, *generator_);
    } catch (Error& e) {
      e.prepend(fmt::format("layer {} of model '{}': ", layers_.size(), name_));
      throw;
    }
    place(*layer);
    optimizer_.reset();
    scaler_.reset();
  }
  const std::size_t previous = nodes_.empty() ? 0 : node_value(nodes_.size() - 1);
  keys_.push_back(std::to_string(layers_.size()));
  nodes_.push_back({.layer = layers_.size(), .inputs = {previous}});
  layers_.push_back(std::move(layer));
  outputs_ = {node_value(nodes_.size() - 1)};
  graph_changed();
  // Declared input (layers::Input): build as layers arrive, as Keras does, so shapes and errors
  // show at once.
  if (!built_ && input_shape()) build(*input_shape());
  ensure_optimizer();
}

void Model::declare_input(const layers::Input& input) {
  ACCRUE_CHECK(layers_.empty() && !input_shape(), "layers::Input must come first, before any other layer");
  GraphInput& in = inputs_.front();
  in.shape = input.sample_shape();
  in.dtype = input.dtype();
  if (!input.name().empty()) in.name = input.name();
}

Layer& Model::layer(std::size_t i) {
  ACCRUE_CHECK(i < layers_.size(), "layer {} of a model with {} layers", i, layers_.size());
  return *layers_[i];
}

const Layer& Model::layer(std::size_t i) const {
  ACCRUE_CHECK(i < layers_.size(), "layer {} of a model with {} layers", i, layers_.size());
  return *layers_[i];
}

Layer& Model::layer(const std::string& name) { return const_cast<Layer&>(std::as_const(*this).layer(name)); }

std::string Model::layer_id(const Layer& layer, const std::string& key) {
  return key.find('.') != std::string::npos ? key : layer.name();
}

const Layer& Model::layer(const std::string& name) const {
  if (const auto it = names_.find(name);
      it != names_.end() && it->second < layers_.size() && layer_id(*layers_[it->second], keys_[it->second]) == name)
    return *layers_[it->second];
  std::vector<std::string> names;
  for (std::size_t i = 0; i < layers_.size(); ++i) names.push_back(layer_id(*layers_[i], keys_[i]));
  throw ValueError(fmt::format("model '{}' has no layer named '{}' (it has: {})", name_, name, fmt::join(names, ", ")));
}

void Model::throw_wrong_layer_type(std::size_t i) const {
  throw ValueError(fmt::format("layer {} of the model is {}, not the type asked for", i, layers_[i]->describe()));
}

void Model::build(const Shape& sample_shape) {
  const std::optional<Shape>& declared = input_shape();
  if (built_) {
    ACCRUE_CHECK_SHAPE(inputs_.size() == 1 && *declared == sample_shape,
                       "model '{}' was built for input samples of shape {}, not {}", name_, *declared, sample_shape);
    return;
  }
  if (declared)
    ACCRUE_CHECK_SHAPE(*declared == sample_shape, "model '{}' declares input samples of shape {} (layers::Input) but gets {}",
                       name_, *declared, sample_shape);
  ACCRUE_CHECK(!layers_.empty(), "model '{}' has no layers", name_);
  std::vector<Shape> shapes{sample_shape};
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    Layer& l = *layers_[nodes_[k].layer];
    std::vector<Shape> in;
    for (const std::size_t v : nodes_[k].inputs) in.push_back(shapes[v]);
    try {
      l.ensure_built_inputs(in, *generator_);
    } catch (Error& e) {
      e.prepend(fmt::format("layer {} of model '{}': ", k, name_));
      throw;
    }
    shapes.push_back(l.output_shape());
    place(l);
  }
  inputs_.front().shape = sample_shape;
  built_ = true;
  ensure_optimizer();
}

Shape Model::output_shape() const {
  ACCRUE_CHECK(built_, "model '{}' is not built yet: its output shape is known once it sees its input shape", name_);
  ACCRUE_CHECK(outputs_.size() == 1, "model '{}' has {} outputs: ask for output(i).shape()", name_, outputs_.size());
  return value_shape(outputs_[0]);
}

void Model::place(Layer& layer) {
  // Layers initialise on the CPU from the model's generator, so a model gets the same initial
  // weights on every device.
  for (const auto& [name, p] : layer.named_parameters()) Tensor{p}.to_(device_);
  for (const auto& [name, b] : layer.named_buffers()) Tensor{b}.to_(device_);
}

Model& Model::to(Device device) {
  if (device == device_) return *this;
  for (const auto& l : layers_) {
    for (const auto* group : {&l->named_parameters(), &l->named_buffers()}) {
      for (const auto& [name, p] : *group) {
        try {
          Tensor{p}.to_(device);
        } catch (Error& e) {
          e.prepend(fmt::format("moving {} '{}' of model '{}' to {}: ", l->describe(), name, name_, device));
          throw;
        }
      }
    }
  }
  if (optimizer_) {
    optimizer_->move_state_to(device);
    optimizer_->move_average_to(device);
  }
  // The loss-scaling policy depends on the device (.amp() scales float16 on CUDA, not bfloat16 on
  // the CPU): keep the scaler where both scale, make or drop it otherwise.
  if (optimizer_) {
    if (!recipe_.scales_loss(device)) scaler_.reset();
    else if (!scaler_) scaler_ = std::make_unique<GradScaler>(recipe_.amp_options()->scaler);
  }
  device_ = device;
  return *this;
}

Tensor Model::forward(const Tensor& x) {
  ACCRUE_CHECK(inputs_.size() == 1 && outputs_.size() == 1,
               "model '{}' has {} inputs and {} outputs: forward({{inputs...}}) takes and gives one tensor for each", name_,
               inputs_.size(), outputs_.size());
  return forward(std::vector<Tensor>{x}).front();
}

std::vector<Tensor> Model::forward(const std::vector<Tensor>& xs) {
  ACCRUE_CHECK(xs.size() == inputs_.size(), "model '{}' takes {} input{}, given {}", name_, inputs_.size(),
               inputs_.size() == 1 ? "" : "s", xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    const std::string which = inputs_.size() == 1 ? "its input" : fmt::format("its input '{}'", inputs_[i].name);
    ACCRUE_CHECK(x.defined(), "model '{}': {} is undefined", name_, which);
    ACCRUE_CHECK(x.device() == device_,
                 "model '{}' is on {} but {} {} is on {}: move it with x.to(model.device()) (fit, evaluate and "
                 "predict move batches themselves)",
                 name_, device_, which, x.shape(), x.device());
    ACCRUE_CHECK_SHAPE(x.rank() >= 1, "model '{}' takes batches (batch, ...), got shape {} for {}", name_, x.shape(), which);
    ACCRUE_CHECK_SHAPE(x.size(0) == xs[0].size(0), "model '{}': the inputs' batches differ: '{}' {} and '{}' {}", name_,
                       inputs_[0].name, xs[0].shape(), inputs_[i].name, x.shape());
    const Shape sample = x.shape().drop_front();
    if (!built_) build(sample);
    // Images of another size where the model resizes them itself (Resizing, CenterCrop first).
    const auto other_size = [&] { return sample.rank() == 3 && sample[0] == (*inputs_[i].shape)[0] && takes_any_image_size(i); };
    ACCRUE_CHECK_SHAPE(sample == *inputs_[i].shape || other_size(),
                       "model '{}' was built for {} samples of shape {}, but the batch {} has samples of shape {}", name_,
                       inputs_.size() == 1 ? "input" : "'" + inputs_[i].name + "'", *inputs_[i].shape, x.shape(), sample);
  }
  std::vector<Tensor> values = run_graph(xs);
  std::vector<Tensor> out;
  for (const std::size_t v : outputs_) out.push_back(values[v]);
  return out;
}

void Model::set_training(bool training) {
  training_ = training;
  for (auto& l : layers_) l->set_training(training);
}

std::vector<Tensor> Model::parameters() const {
  std::vector<Tensor> out;
  for (const auto& l : layers_)
    for (const auto& p : l->named_parameters()) out.push_back(p.second);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Model::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (const auto& [name, value] : layers_[i]->named_parameters()) out.emplace_back(keys_[i] + "." + name, value);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Model::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (const auto& [name, value] : layers_[i]->named_buffers()) out.emplace_back(keys_[i] + "." + name, value);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Model::named_state() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (const auto* group : {&layers_[i]->named_parameters(), &layers_[i]->named_buffers()})
      for (const auto& [name, value] : *group) out.emplace_back(keys_[i] + "." + name, value);
  return out;
}

std::int64_t Model::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& l : layers_) n += l->parameter_count();
  return n;
}

namespace {

// An output's loss among the metrics of a model of several outputs ("label_loss"): its summed
// loss over the units it counts (samples, or tokens).
class OutputMeanLoss {
 public:
  OutputMeanLoss(std::string output, Loss loss) : output_(std::move(output)), loss_(std::move(loss)) {}
  void reset() { mean_.reset(); }
  void update(const Tensor&, const Tensor& target, double loss_sum) { mean_.add(loss_sum, loss_.units(target)); }
  double result() const { return mean_.result(); }
  std::string name() const { return output_ + "_loss"; }
  std::string type() const { return "output_loss"; }
  Direction direction() const { return Direction::lower; }
  std::vector<double> state() const { return mean_.state(); }
  void load_state(const std::vector<double>& state) { mean_.load_state(state); }

 private:
  std::string output_;
  Loss loss_;
  metrics::MeanLoss mean_;
};

}  // namespace

void Model::compile(optim::Recipe recipe, Loss loss, std::vector<Metric> metrics) {
  ACCRUE_CHECK(loss.defined(), "compile: no loss given");
  std::vector<OutputCompile> each;
  for (std::size_t o = 0; o < std::max<std::size_t>(outputs_.size(), 1); ++o)
    each.push_back({{outputs_.empty() ? std::string{} : output_name(o), loss, 1.0}, metrics});
  compile_outputs(std::move(recipe), std::move(each));
}

void Model::compile(optim::Recipe recipe, std::map<std::string, OutputLoss> losses) {
  std::vector<std::string> outputs;
  for (std::size_t o = 0; o < outputs_.size(); ++o) outputs.push_back(output_name(o));
  for (const auto& [name, l] : losses)
    ACCRUE_CHECK(std::find(outputs.begin(), outputs.end(), name) != outputs.end(),
                 "compile: model '{}' has no output '{}' (its outputs: {})", name_, name, fmt::join(outputs, ", "));
  std::vector<OutputCompile> each;
  for (const std::string& output : outputs) {
    const auto it = losses.find(output);
    ACCRUE_CHECK(it != losses.end() && it->second.loss.defined(), "compile: no loss given for output '{}' of model '{}'",
                 output, name_);
    each.push_back({{output, it->second.loss, it->second.weight}, it->second.metrics});
  }
  compile_outputs(std::move(recipe), std::move(each));
}

void Model::compile_outputs(optim::Recipe recipe, std::vector<OutputCompile> outputs) {
  try {
    recipe.validate();
  } catch (Error& e) {
    e.prepend("compile: ");
    throw;
  }
  const bool several = outputs.size() > 1;
  std::vector<CompiledLoss> compiled;
  std::vector<Metric> kept;
  std::vector<std::size_t> measured;
  std::map<std::string, int> seen{{"loss", 1}};
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const CompiledLoss& c = outputs[o].first;
    ACCRUE_CHECK(std::isfinite(c.weight) && c.weight >= 0.0, "compile: output '{}' has loss weight {} (weights are "
                 "finite and >= 0)", c.output, c.weight);
    std::vector<Metric> of_output;
    if (several) of_output.emplace_back(OutputMeanLoss{c.output, c.loss});
    for (const Metric& m : outputs[o].second)
      if (m.name() != "loss") of_output.push_back(several ? m.for_output(c.output) : m);  // the loss is always logged
    for (Metric& m : of_output) {
      ACCRUE_CHECK(seen[m.name()]++ == 0, "compile: two metrics named '{}': give each its own name (.name = \"...\")", m.name());
      kept.push_back(std::move(m));
      measured.push_back(o);
    }
    compiled.push_back(c);
  }
  recipe_ = std::move(recipe);
  losses_ = std::move(compiled);
  metrics_ = std::move(kept);
  metric_output_ = std::move(measured);
  optimizer_.reset();
  scaler_.reset();
  if (built_) ensure_optimizer();
}

const Loss& Model::loss() const {
  check_compiled("loss()");
  ACCRUE_CHECK(losses_.size() == 1, "model '{}' has {} outputs, each with its loss: read losses()", name_, losses_.size());
  return losses_[0].loss;
}

std::string Model::losses_str() const {
  if (losses_.size() == 1) return losses_[0].loss.name();
  std::string out;
  for (const CompiledLoss& l : losses_)
    out += fmt::format("{}{}: {}{}", out.empty() ? "" : ", ", l.output, l.loss.name(),
                       l.weight == 1.0 ? std::string{} : fmt::format(" x {}", l.weight));
  return out;
}

std::vector<Tensor> Model::loss_sums(const std::vector<Tensor>& predictions, const std::vector<Tensor>& targets,
                                     std::span<const float> weights) const {
  std::vector<Tensor> sums;
  for (std::size_t o = 0; o < losses_.size(); ++o) {
    const Loss& l = losses_[o].loss;
    sums.push_back(weights.empty() ? l.batch_sum(predictions[o], targets[o]) : l.weighted_sum(predictions[o], targets[o], weights));
  }
  return sums;
}

std::vector<std::int64_t> Model::loss_units(const std::vector<Tensor>& targets) const {
  std::vector<std::int64_t> units;
  for (std::size_t o = 0; o < losses_.size(); ++o) units.push_back(losses_[o].loss.units(targets[o]));
  return units;
}

Tensor Model::weighted_loss(const std::vector<Tensor>& sums, const std::function<double(std::size_t)>& factor,
                           double scale) const {
  Tensor total;
  for (std::size_t o = 0; o < sums.size(); ++o) {
    const Tensor part = sums[o] * static_cast<float>(factor(o) * losses_[o].weight * scale);
    total = o == 0 ? part : ops::add(total, part);
  }
  return total;
}

std::pair<double, std::int64_t> Model::logged_loss(const std::vector<double>& sums, const std::vector<std::int64_t>& units,
                                                   std::int64_t samples) const {
  if (sums.size() == 1) return {sums[0], units[0]};
  double total = 0.0;
  for (std::size_t o = 0; o < sums.size(); ++o)
    if (units[o] > 0) total += losses_[o].weight * sums[o] / static_cast<double>(units[o]);
  return {total * static_cast<double>(samples), samples};
}

void Model::update_metrics(std::vector<Metric>& metrics, const std::vector<Tensor>& predictions,
                           const std::vector<Tensor>& targets, const std::vector<double>& sums) const {
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    const std::size_t o = metric_output_[i];
    metrics[i].update(predictions[o], targets[o], sums[o]);
  }
}

void Model::ensure_optimizer() {
  if (!recipe_.optimizer().defined() || !built_) return;
  std::vector<Tensor> params;
  std::vector<std::string> names;
  for (auto& [name, p] : trainable_parameters()) {
    names.push_back(name);
    params.push_back(p);
  }
  const auto same = [&](const std::vector<Tensor>& made) {
    return std::equal(made.begin(), made.end(), params.begin(), params.end(),
                      [](const Tensor& a, const Tensor& b) { return a.storage() == b.storage(); });
  };
  if (optimizer_ && same(optimizer_->parameters())) return;
  if (optimizer_)
    log::info("model '{}': layers were frozen or unfrozen since its optimizer was made; {} starts afresh over its {} "
              "trainable parameters",
              name_, optimizer_->str(), params.size());
  optimizer_ = recipe_.optimizer().create(params);
  optimizer_->set_parameter_names(std::move(names));
  if (recipe_.weight_average()) optimizer_->keep_average(*recipe_.weight_average());
  if (!scaler_ && recipe_.scales_loss(device_)) scaler_ = std::make_unique<GradScaler>(recipe_.amp_options()->scaler);
}

std::vector<std::pair<std::string, Tensor>> Model::trainable_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [name, p] : named_parameters())
    if (p.requires_grad()) out.emplace_back(name, p);
  return out;
}

void Model::freeze(std::size_t first, std::size_t end) {
  ACCRUE_CHECK(first <= end && end <= layers_.size(), "freeze({}, {}): model '{}' has layers 0 to {}", first, end, name_,
               layers_.size());
  for (std::size_t i = first; i < end; ++i) layers_[i]->trainable(false);
  ensure_optimizer();
}

void Model::unfreeze(std::size_t first, std::size_t end) {
  ACCRUE_CHECK(first <= end && end <= layers_.size(), "unfreeze({}, {}): model '{}' has layers 0 to {}", first, end,
               name_, layers_.size());
  for (std::size_t i = first; i < end; ++i) layers_[i]->trainable(true);
  ensure_optimizer();
}

optim::Optimizer& Model::optimizer() {
  check_compiled("optimizer()");
  ACCRUE_CHECK(optimizer_ != nullptr, "model '{}' has no optimizer yet: it is created when the model is built", name_);
  return *optimizer_;
}

void Model::check_compiled(const char* what) const {
  ACCRUE_CHECK(compiled(), "{} needs a compiled model: call model.compile(optimizer, loss, metrics) first", what);
}

Tensor Model::predict(const Tensor& inputs, std::int64_t batch_size) {
  ACCRUE_CHECK(inputs_.size() == 1 && outputs_.size() == 1,
               "predict: model '{}' has {} inputs and {} outputs: predict({{inputs...}}) takes and gives one tensor for each",
               name_, inputs_.size(), outputs_.size());
  return predict(std::vector<Tensor>{inputs}, batch_size).front();
}

std::vector<Tensor> Model::predict(const std::vector<Tensor>& inputs, std::int64_t batch_size) {
  ACCRUE_CHECK(batch_size >= 1, "predict: batch_size must be at least 1, got {}", batch_size);
  ACCRUE_CHECK(inputs.size() == inputs_.size(), "predict: model '{}' takes {} inputs, given {}", name_, inputs_.size(),
               inputs.size());
  for (const Tensor& x : inputs) ACCRUE_CHECK_SHAPE(x.defined() && x.rank() >= 1, "predict: needs inputs (N, ...)");
  const NoGradGuard no_grad;
  const EvaluationScope evaluation;
  if (!built_) build(inputs[0].shape().drop_front());
  const std::int64_t n = inputs[0].size(0);
  std::vector<std::vector<Tensor>> batches(outputs_.size());
  for (std::int64_t begin = 0; begin < n; begin += batch_size) {
    std::vector<Tensor> xs;
    for (const Tensor& x : inputs) xs.push_back(ops::narrow(x, begin, std::min(n, begin + batch_size)).to(device_));
    std::vector<Tensor> ys = forward(xs);
    for (std::size_t o = 0; o < ys.size(); ++o) batches[o].push_back(std::move(ys[o]));
  }
  std::vector<Tensor> results;
  for (std::size_t o = 0; o < outputs_.size(); ++o) {
    Tensor result = Tensor::empty(value_shape(outputs_[o]).prepend(n), {.device = inputs[0].device()});
    std::int64_t row = 0;
    for (const Tensor& b : batches[o]) {
      ops::narrow(result, row, row + b.size(0)).copy_(b);
      row += b.size(0);
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace accrue
