#include "sequential.hpp"
#include "../framework/core/utf8.hpp"

#include <algorithm>
#include <cctype>
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

Sequential::Sequential() : generator_(std::make_unique<Generator>(seed_from_default())) {}
Sequential::Sequential(Sequential&&) noexcept = default;
Sequential& Sequential::operator=(Sequential&&) noexcept = default;
Sequential::~Sequential() = default;

Sequential& Sequential::add(std::unique_ptr<Layer> layer) {
  ACCRUE_CHECK(layer != nullptr, "Sequential::add: null layer");
  int& same = added_of_type_[layer->type_name()];
  if (layer->name().empty()) {
    const std::string base = snake_case(layer->type_name());
    layer->set_name(same == 0 ? base : fmt::format("{}_{}", base, same));
  }
  // Names go into JSON (weights, checkpoints, reports): refused here, not when a file is written.
  require_utf8(layer->name(), fmt::format("Sequential::add: the name of layer {} ({})", layers_.size(), layer->type_name()));
  // A layer renamed since it was added (layer(i).set_name) no longer holds its old name.
  if (const auto it = names_.find(layer->name()); it != names_.end())
    ACCRUE_CHECK(it->second >= layers_.size() || layers_[it->second]->name() != layer->name(),
                 "Sequential::add: two layers named '{}'", layer->name());
  layer->set_generator(generator_.get());
  layer->set_training(training_);
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
  ++same;
  names_[layer->name()] = layers_.size();
  layers_.push_back(std::move(layer));
  // Declared input (layers::Input): build as layers arrive, as Keras does, so shapes and errors
  // show at once.
  if (!built_ && input_shape_) build(*input_shape_);
  ensure_optimizer();
  return *this;
}

Sequential& Sequential::add(const layers::Input& input) {
  ACCRUE_CHECK(layers_.empty() && !input_shape_, "layers::Input must come first, before any other layer");
  input_shape_ = input.shape;
  return *this;
}

Layer& Sequential::layer(std::size_t i) {
  ACCRUE_CHECK(i < layers_.size(), "layer {} of a model with {} layers", i, layers_.size());
  return *layers_[i];
}

const Layer& Sequential::layer(std::size_t i) const {
  ACCRUE_CHECK(i < layers_.size(), "layer {} of a model with {} layers", i, layers_.size());
  return *layers_[i];
}

void Sequential::throw_wrong_layer_type(std::size_t i) const {
  throw ValueError(fmt::format("layer {} of the model is {}, not the type asked for", i, layers_[i]->describe()));
}

void Sequential::build(const Shape& sample_shape) {
  if (built_) {
    ACCRUE_CHECK_SHAPE(*input_shape_ == sample_shape, "model '{}' was built for input samples of shape {}, not {}", name_,
                       *input_shape_, sample_shape);
    return;
  }
  if (input_shape_)
    ACCRUE_CHECK_SHAPE(*input_shape_ == sample_shape,
                       "model '{}' declares input samples of shape {} (layers::Input) but gets {}", name_, *input_shape_,
                       sample_shape);
  ACCRUE_CHECK(!layers_.empty(), "model '{}' has no layers", name_);
  Shape shape = sample_shape;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    try {
      layers_[i]->ensure_built(shape, *generator_);
    } catch (Error& e) {
      e.prepend(fmt::format("layer {} of model '{}': ", i, name_));
      throw;
    }
    shape = layers_[i]->output_shape();
    place(*layers_[i]);
  }
  input_shape_ = sample_shape;
  built_ = true;
  ensure_optimizer();
}

Shape Sequential::output_shape() const {
  ACCRUE_CHECK(built_, "model '{}' is not built yet: its output shape is known once it sees its input shape", name_);
  return layers_.back()->output_shape();
}

void Sequential::place(Layer& layer) {
  // Layers initialise on the CPU from the model's generator, so a model gets the same initial
  // weights on every device.
  for (const auto& [name, p] : layer.named_parameters()) Tensor{p}.to_(device_);
  for (const auto& [name, b] : layer.named_buffers()) Tensor{b}.to_(device_);
}

Sequential& Sequential::to(Device device) {
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

Tensor Sequential::forward(const Tensor& x) {
  ACCRUE_CHECK(x.defined(), "model '{}': the input is undefined", name_);
  ACCRUE_CHECK(x.device() == device_,
               "model '{}' is on {} but its input {} is on {}: move it with x.to(model.device()) (fit, evaluate and "
               "predict move batches themselves)",
               name_, device_, x.shape(), x.device());
  ACCRUE_CHECK_SHAPE(x.rank() >= 1, "model '{}' takes batches (batch, ...), got shape {}", name_, x.shape());
  const Shape sample = x.shape().drop_front();
  if (!built_) build(sample);
  ACCRUE_CHECK_SHAPE(sample == *input_shape_,
                     "model '{}' was built for input samples of shape {}, but the batch {} has samples of shape {}",
                     name_, *input_shape_, x.shape(), sample);
  Tensor h = x;
  auto segment = segments_.begin();
  for (std::size_t i = 0; i < layers_.size();) {
    Layer& l = *layers_[i];
    const Shape in = h.shape().drop_front();
    if (!(in == l.input_shape()))
      throw ShapeError(fmt::format("layer {} '{}' ({}) expects samples of shape {} but gets {} (batch {})", i, l.name(),
                                   l.type_name(), l.input_shape(), in, h.shape()));
    // A recomputed segment (recompute()) runs as one, in training.
    const bool recomputed = segment != segments_.end() && segment->first == i && l.training();
    const std::size_t end = recomputed ? segment->second : i + 1;
    if (segment != segments_.end() && segment->first == i) ++segment;
    try {
      if (recomputed) {
        std::vector<Layer*> inner;
        for (std::size_t k = i; k < end; ++k) inner.push_back(layers_[k].get());
        h = forward_recomputed(inner, h);
      } else {
        h = l.forward(h);
      }
    } catch (Error& e) {
      e.prepend(recomputed ? fmt::format("layers {} to {} '{}' to '{}' (recomputed), input {}: ", i, end - 1, l.name(),
                                         layers_[end - 1]->name(), h.shape())
                           : fmt::format("layer {} '{}' ({}), input {}: ", i, l.name(), l.type_name(), h.shape()));
      throw;
    }
    i = end;
  }
  return h;
}

void Sequential::set_training(bool training) {
  training_ = training;
  for (auto& l : layers_) l->set_training(training);
}

std::vector<Tensor> Sequential::parameters() const {
  std::vector<Tensor> out;
  for (const auto& l : layers_)
    for (const auto& p : l->named_parameters()) out.push_back(p.second);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Sequential::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (const auto& [name, value] : layers_[i]->named_parameters()) out.emplace_back(fmt::format("{}.{}", i, name), value);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Sequential::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (const auto& [name, value] : layers_[i]->named_buffers()) out.emplace_back(fmt::format("{}.{}", i, name), value);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Sequential::named_state() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (const auto* group : {&layers_[i]->named_parameters(), &layers_[i]->named_buffers()})
      for (const auto& [name, value] : *group) out.emplace_back(fmt::format("{}.{}", i, name), value);
  return out;
}

std::int64_t Sequential::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& l : layers_) n += l->parameter_count();
  return n;
}

void Sequential::compile(optim::Recipe recipe, Loss loss, std::vector<Metric> metrics) {
  try {
    recipe.validate();
  } catch (Error& e) {
    e.prepend("compile: ");
    throw;
  }
  ACCRUE_CHECK(loss.defined(), "compile: no loss given");
  std::map<std::string, int> seen{{"loss", 1}};
  std::vector<Metric> kept;
  for (Metric& m : metrics) {
    // The loss is always reported; a MeanLoss metric would only repeat it.
    if (m.name() == "loss") continue;
    ACCRUE_CHECK(seen[m.name()]++ == 0, "compile: two metrics named '{}': give each its own name (.name = \"...\")", m.name());
    kept.push_back(std::move(m));
  }
  recipe_ = std::move(recipe);
  loss_ = std::move(loss);
  metrics_ = std::move(kept);
  optimizer_.reset();
  scaler_.reset();
  if (built_) ensure_optimizer();
}

void Sequential::ensure_optimizer() {
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

std::vector<std::pair<std::string, Tensor>> Sequential::trainable_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [name, p] : named_parameters())
    if (p.requires_grad()) out.emplace_back(name, p);
  return out;
}

void Sequential::freeze(std::size_t first, std::size_t end) {
  ACCRUE_CHECK(first <= end && end <= layers_.size(), "freeze({}, {}): model '{}' has layers 0 to {}", first, end, name_,
               layers_.size());
  for (std::size_t i = first; i < end; ++i) layers_[i]->trainable(false);
  ensure_optimizer();
}

void Sequential::unfreeze(std::size_t first, std::size_t end) {
  ACCRUE_CHECK(first <= end && end <= layers_.size(), "unfreeze({}, {}): model '{}' has layers 0 to {}", first, end,
               name_, layers_.size());
  for (std::size_t i = first; i < end; ++i) layers_[i]->trainable(true);
  ensure_optimizer();
}

optim::Optimizer& Sequential::optimizer() {
  check_compiled("optimizer()");
  ACCRUE_CHECK(optimizer_ != nullptr, "model '{}' has no optimizer yet: it is created when the model is built", name_);
  return *optimizer_;
}

void Sequential::check_compiled(const char* what) const {
  ACCRUE_CHECK(compiled(), "{} needs a compiled model: call model.compile(optimizer, loss, metrics) first", what);
}

Tensor Sequential::predict(const Tensor& inputs, std::int64_t batch_size) {
  ACCRUE_CHECK(batch_size >= 1, "predict: batch_size must be at least 1, got {}", batch_size);
  ACCRUE_CHECK_SHAPE(inputs.defined() && inputs.rank() >= 1, "predict: needs inputs (N, ...)");
  const NoGradGuard no_grad;
  const EvaluationScope evaluation;
  if (!built_) build(inputs.shape().drop_front());
  std::vector<Tensor> outputs;
  const std::int64_t n = inputs.size(0);
  for (std::int64_t begin = 0; begin < n; begin += batch_size)
    outputs.push_back(forward(ops::narrow(inputs, begin, std::min(n, begin + batch_size)).to(device_)));
  const Shape out_sample = output_shape();
  Tensor result = Tensor::empty(out_sample.prepend(n), {.device = inputs.device()});
  std::int64_t row = 0;
  for (const Tensor& o : outputs) {
    ops::narrow(result, row, row + o.size(0)).copy_(o);
    row += o.size(0);
  }
  return result;
}

}  // namespace accrue
