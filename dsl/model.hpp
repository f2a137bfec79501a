#pragma once
// Model: a graph of layers from its inputs to its outputs, with Keras's workflow (compile, fit,
// evaluate, predict, summary, save). A model is written in one of two ways, as in Keras:
//
//   Sequential model{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512},   // a chain
//                    layers::ReLU{}, layers::Dense{10}};                                  // (sequential.hpp)
//
//   layers::Input image{{1, 28, 28}, {.name = "image"}};              // the functional API: layers
//   Symbol x = layers::Flatten{}(image);                              // called on symbols record
//   x = layers::Dense{512}(x);                                        // the graph, which the model
//   Model model{image, layers::Dense{10}(layers::ReLU{}(x))};         // is made from
//
//   model.compile(optim::SGD{.lr = 1e-3}, losses::CrossEntropy{}, {metrics::Accuracy{}});
//   History h = model.fit(train, {.epochs = 5, .batch_size = 64, .validation = test});
//
// A Sequential is the common case of a graph, not a second engine: training, the memory plan,
// recomputation, checkpoints and model files walk the same nodes. The model owns its layers with
// every graph and model that shares them (layer.hpp), and its random generator, which is seeded
// from the default generator when the model is made: call accrue::manual_seed(s) first for
// repeatable runs.

#include <concepts>
#include <functional>
#include <iosfwd>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../datasets/dataset.hpp"
#include "../datasets/text.hpp"
#include "../framework/core/non_copyable.hpp"
#include "callbacks.hpp"
#include "fit_options.hpp"
#include "layer.hpp"
#include "load_weights.hpp"
#include "memory_plan.hpp"
#include "layers/input.hpp"
#include "layers/recompute.hpp"
#include "symbol.hpp"
#include "../framework/training/logs.hpp"
#include "loss.hpp"
#include "metrics.hpp"
#include "onnx.hpp"
#include "signature.hpp"
#include "../framework/optim/recipe.hpp"
#include "../framework/training/lr_schedule.hpp"

namespace accrue {

namespace detail {
class TrainingRun;
}

class Model;
/// The model Model::save wrote to `path`: its layers made from their registered types
/// (layer_registry.hpp) and built, and its weights and buffers loaded, so that it gives the same
/// outputs bit for bit. Throws naming the file, and the layer, for anything missing or unknown.
Model load_model(const std::string& path);

/// How Model::generate picks each next token.
struct GenerateOptions {
  /// Tokens to add after the prompt.
  std::int64_t max_tokens = 100;
  /// Logits are divided by it before sampling; 0 takes the most likely token (greedy).
  float temperature = 1.0f;
  /// Sample among the k most likely tokens only; 0: all of them.
  std::int64_t top_k = 0;
  /// The same seed, prompt and weights give the same tokens.
  std::uint64_t seed = 0;
};

struct EvaluateOptions {
  std::int64_t batch_size = 32;
  /// Under mpirun: each process evaluates its share of the data (every sample once, none
  /// repeated or padded) and every process returns the results over all of it.
  bool distributed = false;
};

/// The result of evaluate(): the mean loss and every metric. `auto [loss, accuracy] =
/// model.evaluate(test)` binds the loss and the first metric compile() was given; for a model
/// compiled without metrics the second is NaN (`model.evaluate(test).loss` reads the loss alone).
struct Evaluation {
  double loss = 0.0;
  Logs logs;
  /// The value of "loss" or of a metric by name.
  double operator[](const std::string& name) const { return logs.at(name); }
  template <std::size_t I>
  double get() const {
    static_assert(I < 2, "an Evaluation binds to (loss, first metric)");
    if constexpr (I == 0) return loss;
    else return first_metric().value_or(std::numeric_limits<double>::quiet_NaN());
  }
  /// The first metric compile() was given; none without metrics.
  std::optional<double> first_metric() const;
  /// The table of a metric that reports one ("confusion_matrix"); throws ValueError naming the
  /// tables there are.
  const CountTable& table(const std::string& name) const;
};

/// The loss of one output of a model of several, as compile() takes it (Keras's `loss`,
/// `loss_weights` and `metrics` given per output).
struct OutputLoss {
  Loss loss;
  /// Its part in the loss that trains, which is the sum over the outputs of weight x the output's
  /// mean loss (Keras's loss_weights).
  double weight = 1.0;
  /// Logged as "<output>_<metric>" ("label_accuracy", and "val_label_accuracy" in validation).
  std::vector<Metric> metrics = {};
};

/// A compiled model's loss of one output: the output's name, its loss and its weight.
struct CompiledLoss {
  std::string output;
  Loss loss;
  double weight = 1.0;
};

/// One symbol or a list of them: `Model{image, logits}`, `Model{{image, meta}, {label, box}}`.
struct Symbols : std::vector<Symbol> {
  // NOLINTNEXTLINE: implicit, so that one symbol is a list of one
  Symbols(const Symbol& one) : std::vector<Symbol>{one} {}
  Symbols(std::initializer_list<Symbol> list) : std::vector<Symbol>(list) {}
  // NOLINTNEXTLINE: implicit, as the lists it stands for
  Symbols(std::vector<Symbol> list) : std::vector<Symbol>(std::move(list)) {}
};

namespace detail {
// A model's graph as Model keeps it: values 0..inputs-1 are the inputs, value inputs+k is node k's
// output; each node calls one of the model's layers on the values it reads.
struct GraphInput {
  std::string name;
  std::optional<Shape> shape;
  DType dtype = DType::f32;
};
struct GraphNode {
  std::size_t layer = 0;
  std::vector<std::size_t> inputs;
};
struct SummaryRow;  // summary.cpp
}  // namespace detail

struct ModelOptions {
  /// The model's name: summary() shows it, and a model called inside another names its layers'
  /// parameters under it ("encoder.dense.weight").
  std::string name = "model";
};

class Model {
 public:
  /// The functional API: the model that computes `outputs` from `inputs` (layers::Input symbols),
  /// with every layer called on the way, built already. Its outputs are named after the layers that
  /// make them, its inputs as declared ("input", "input_1", ... where unnamed). Throws ValueError
  /// naming the symbol for an output that needs an input not given, an input that no output uses,
  /// an input given twice or that is no layers::Input, and two layers of one name.
  Model(const Symbols& inputs, const Symbols& outputs, ModelOptions options = {});
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  /// The distinct layers, in the order the graph first calls them (a Sequential's order).
  std::size_t size() const { return layers_.size(); }
  Layer& layer(std::size_t i);
  const Layer& layer(std::size_t i) const;
  template <class T>
  T& layer(std::size_t i) {
    auto* p = dynamic_cast<T*>(&layer(i));
    if (p == nullptr) throw_wrong_layer_type(i);
    return *p;
  }
  /// The layer of this name (Keras's get_layer); throws ValueError listing the names there are.
  Layer& layer(const std::string& name);
  const Layer& layer(const std::string& name) const;
  /// Where layer i's parameters are named: "3" in a Sequential (PyTorch's nn.Sequential),
  /// its name in a functional model, "encoder.0" inside a nested model "encoder".
  const std::string& layer_key(std::size_t i) const { return keys_.at(i); }

  /// Builds every layer of a model with one input for samples of `sample_shape` (no batch
  /// dimension); throws ShapeError naming the first layer that cannot take its input. A functional
  /// model is built when it is made.
  void build(const Shape& sample_shape);
  bool built() const { return built_; }
  /// The sample shape the model was built for (or declared with layers::Input); the first
  /// input's where it has several.
  const std::optional<Shape>& input_shape() const { return inputs_.front().shape; }
  /// Output sample shape (built models with one output).
  Shape output_shape() const;

  /// Its inputs and outputs: their names, and their symbols (built models; the same symbols each
  /// time), to call this model's layers on elsewhere or to take a part of it out as a model of
  /// its own: `Model features{model.input(), model.output_of("pool")}` (Keras's feature
  /// extraction; the new model shares the layers).
  std::size_t input_count() const { return inputs_.size(); }
  std::size_t output_count() const { return outputs_.size(); }
  const std::string& input_name(std::size_t i = 0) const { return inputs_.at(i).name; }
  std::string output_name(std::size_t i = 0) const;
  Symbol input(std::size_t i = 0) const;
  Symbol output(std::size_t i = 0) const;
  /// The symbol of layer `name`'s output (its first call where it is called more than once).
  Symbol output_of(const std::string& name) const;
  /// The graph in one line: its inputs, each node's layer and what it reads, its outputs
  /// ("input 'x' (4,); node 0 'dense' (Dense) <- input 'x'; ...; outputs node 1"), which the
  /// processes of a distributed run compare.
  std::string wiring() const;

  /// This model called on symbols of another model being written, as a layer (Keras's "all
  /// models are callable"): its layers are called in its graph's order on `inputs`, sharing their
  /// weights with this model, their parameters named under this model's name. The first form
  /// needs one output; call() gives every output. A Sequential not yet built is built for the
  /// inputs' shapes.
  Symbol operator()(const Symbols& inputs);
  std::vector<Symbol> call(const Symbols& inputs);

  /// The output for a batch; builds a Sequential on first use. Throws ShapeError naming the layer
  /// and shapes when x does not fit. Needs one input and one output.
  Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }
  /// The outputs for a batch of each input, in the order of inputs and outputs.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs);

  void set_training(bool training);
  bool training() const { return training_; }

  /// Moves the parameters, their gradients and the optimizer state to `device` (layers built
  /// later are created there too) and returns the model. fit(), evaluate() and predict() then run
  /// there, moving each batch; forward() expects its input there already.
  Model& to(Device device);
  /// Where the model's parameters live and its computations run (the CPU until to()).
  Device device() const { return device_; }

  /// Trainable tensors in order, and with PyTorch's names ("0.weight", "0.bias", "2.weight"...).
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  /// The parameters that train: those of trainable layers (Layer::trainable), by name.
  std::vector<std::pair<std::string, Tensor>> trainable_parameters() const;
  /// Recomputes every BatchNorm's running statistics as their average over one pass of `data` in
  /// training mode, changing nothing else (torch.optim.swa_utils.update_bn): for weights that were
  /// not trained with those statistics, such as an SWA or EMA average (Recipe::swa).
  void update_batch_norm(const Dataset& data, std::int64_t batch_size = 64);
  /// Sets layers [first, end) not trainable (Keras's `layer.trainable = False` for each): their
  /// parameters stay as they are while the rest trains. The optimizer is made again over the
  /// trainable parameters, its state starting afresh (Keras asks for compile() again).
  void freeze(std::size_t first, std::size_t end);
  /// Makes layers [first, end) trainable again (the optimizer is made again, too).
  void unfreeze(std::size_t first, std::size_t end);
  /// Recomputes in training the layers `policy` picks (RecomputePolicy, layers/recompute.hpp):
  /// each segment keeps only its input for backward and runs its forward again there, its dropout
  /// masks replayed, so training gives the same bits as without. The layers and their names stay
  /// as they are; the memory plan, summary() and explain follow. RecomputePolicy{} turns it off.
  /// Throws ValueError for a model not built, or a policy that picks nothing (naming it).
  void recompute(const RecomputePolicy& policy);
  /// The recomputed segments, as [begin, end) indices of the graph's nodes (a Sequential's layers).
  const std::vector<std::pair<std::size_t, std::size_t>>& recomputed_segments() const { return segments_; }
  const RecomputePolicy& recompute_policy() const { return recompute_policy_; }
  /// Buffers under PyTorch's names ("1.running_mean").
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  /// Parameters and buffers in the order of PyTorch's state_dict(): what save_weights writes.
  std::vector<std::pair<std::string, Tensor>> named_state() const;
  std::int64_t parameter_count() const;

  /// Sets the optimizer (with accumulation and clipping when the recipe has them), the loss and
  /// the metrics. Throws ValueError for a bad recipe. The optimizer's state starts (again) empty.
  void compile(optim::Recipe recipe, Loss loss, std::vector<Metric> metrics = {});
  /// A model of several outputs: a loss for each, by output name (Keras's dicts):
  ///   model.compile(optim::AdamW{}, {{"label", {.loss = losses::CrossEntropy{}, .metrics = {metrics::Accuracy{}}}},
  ///                                  {"price", {.loss = losses::MSE{}, .weight = 0.5}}});
  /// The step's gradient is that of the sum over outputs of weight x the output's mean loss, each
  /// mean over the samples (or counted tokens) of that output in the whole window. fit logs
  /// "<output>_loss" for each output and "loss", the batches' weighted sums averaged over the
  /// samples, as Keras does. Throws ValueError for an output left without a loss or a name that is
  /// no output (naming the outputs). (compile(recipe, loss, metrics) gives every output the same
  /// loss and metrics.)
  void compile(optim::Recipe recipe, std::map<std::string, OutputLoss> losses);
  bool compiled() const { return !losses_.empty(); }
  /// The optimizer (compiled and built models only).
  optim::Optimizer& optimizer();
  const optim::Recipe& recipe() const { return recipe_; }
  /// The loss scaler of float16 mixed precision (null without loss scaling). It lives with the
  /// model, so its scale carries over from one fit() to the next, and a checkpoint can save it.
  GradScaler* scaler() { return scaler_.get(); }
  /// The loss of a model of one output; throws ValueError for several (losses() has each).
  const Loss& loss() const;
  /// The loss of each output, in the order of the outputs.
  const std::vector<CompiledLoss>& losses() const { return losses_; }
  /// The losses in words: "CrossEntropy", or for several outputs "label: CrossEntropy, price: MSE
  /// x 0.5".
  std::string losses_str() const;
  /// The summed loss of each output for a batch's `predictions` and `targets` (each sample's
  /// times `weights[b]` when given), differentiable: what fit weighs and adds up for backward.
  std::vector<Tensor> loss_sums(const std::vector<Tensor>& predictions, const std::vector<Tensor>& targets,
                                std::span<const float> weights = {}) const;
  /// What each output's loss counts in a batch of `targets`: its samples, or the tokens counted of
  /// a sequence loss (Loss::units), output by output.
  std::vector<std::int64_t> loss_units(const std::vector<Tensor>& targets) const;
  /// The outputs' summed losses `sums` (loss_sums), each times `factor(o)`, its weight in compile()
  /// and `scale`, added: what backward starts from (fit's factor is the rule of accumulation's loss
  /// weight and its scale float16's loss scale; verify_accumulation's factor the same rule, or one
  /// over the batch's units).
  Tensor weighted_loss(const std::vector<Tensor>& sums, const std::function<double(std::size_t)>& factor,
                       double scale = 1.0) const;
  /// Every metric, named as logged: for several outputs each output's loss ("label_loss") and
  /// metrics ("label_accuracy"), output by output.
  const std::vector<Metric>& metrics() const { return metrics_; }
  /// The output metric `i` of metrics() measures (0 for a model of one output).
  std::size_t metric_output(std::size_t i) const { return metric_output_.at(i); }

  /// Writes the parameters to a safetensors file under PyTorch's names ("1.weight", ...), through
  /// a temporary file renamed into place.
  void save_weights(const std::string& path) const;
  /// Reads the weights in `path` into the model under PyTorch's names: a safetensors file (of
  /// save_weights, or PyTorch's), the weights of a training checkpoint, or a file torch.save wrote
  /// (a state_dict as torchvision downloads it, "resnet18-f37072fd.pth"; or a dict holding one,
  /// `.entry = "state_dict"`), read without running anything in it (serialization/pytorch_file.hpp).
  /// float16 and bfloat16 tensors are converted to the model's dtype, as PyTorch's copy does;
  /// BatchNorm's num_batches_tracked goes into its counter. Strict (the default), it throws naming
  /// every missing, unexpected or mismatched tensor at once and changes nothing then; with
  /// `.strict = false` it loads what matches and the report says what it left.
  LoadReport load_weights(const std::string& path, const LoadWeightsOptions& options = {});
  /// Writes the whole model to a safetensors file: the weights as save_weights writes them (PyTorch
  /// loads them as they are), and the architecture (each layer's type, name and configuration,
  /// the layers inside a Residual, the input shape) as JSON under "accrue.model" in the file's
  /// metadata. load_model() makes the same model from it, with no code of the model's own.
  void save(const std::string& path) const;
  /// Writes the model as an ONNX file (onnx.hpp) in inference form: dropout left out, batch
  /// normalization on its running statistics. Throws naming a layer that has no ONNX form. The
  /// nodes each layer became are returned, and summary() shows them from then on.
  OnnxExport export_onnx(const std::string& path, const OnnxExportOptions& options = {});

  /// The vocabulary of a text model, which save() writes with it and load_model() gives back, so
  /// that a loaded model encodes prompts and decodes what it generates as the trained one did.
  void set_vocabulary(datasets::Vocabulary vocabulary) { vocabulary_ = std::move(vocabulary); }
  /// The vocabulary set or loaded; null when none was.
  const datasets::Vocabulary* vocabulary() const { return vocabulary_ ? &*vocabulary_ : nullptr; }

  /// What the model takes and gives (signature.hpp): each input's name, shape, dtype, layout and
  /// range, each output's meaning and class names. save() keeps it, summary() shows it, and
  /// export_onnx() writes it into the ONNX file's metadata.
  ModelSignature signature() const;
  /// Names what each entry of output `output`'s last axis stands for (as many names as entries).
  /// fit takes them from the training data when the model has none (Dataset::class_names: image
  /// folders, CSV classes).
  Model& set_class_names(std::vector<std::string> names, std::size_t output = 0);
  /// The class names of `output`; empty when none were set.
  const std::vector<std::string>& class_names(std::size_t output = 0) const;
  /// States the range of the values input `input` expects: (0, 255) for raw pixels that a
  /// Rescaling layer inside the model scales.
  Model& set_input_range(float low, float high, std::size_t input = 0);
  /// States which table columns input `input` is read from (datasets::csv; TableColumns), so that
  /// a program that serves the model reads any file's rows alike (ModelSignature::csv_options).
  /// fit takes them from the training data when the model has none (Dataset::table_columns).
  Model& set_table_columns(TableColumns columns, std::size_t input = 0);
  /// Whether input `input` takes images of any height and width: it reaches a layer that resizes
  /// or crops (Resizing, CenterCrop, RandomCrop) only through layers that follow any size
  /// (Rescaling, Normalization per channel, the random augmentation layers). predict() then takes
  /// images as they were read, each batch of one size.
  bool takes_any_image_size(std::size_t input = 0) const;

  /// The memory of one training step at `micro_batch`, predicted from the layers' shapes and
  /// dtypes, the precision and the optimizer, before anything runs (see MemoryPlan).
  MemoryPlan memory_plan(std::int64_t micro_batch) const;
  /// The same, saying whether windows hold more than one micro-batch (the gradients then live
  /// through the whole window) instead of taking it from the compiled recipe, and whether the run
  /// will have a memory limit or budget not set yet (which WeightGradients::per_window gives way to),
  /// and how many micro-batches a background queue holds ready besides the one training
  /// (BatchQueue, for data not in memory).
  MemoryPlan memory_plan(std::int64_t micro_batch, bool accumulating, bool under_limit = false,
                         std::int64_t read_ahead = 0, const DataParallel& processes = {}) const;
  /// One process's plan in a data-parallel run of `processes` (its buckets, its shard of the
  /// optimizer state and, with Shard::gradients, of the gradients), accumulating as compiled.
  MemoryPlan memory_plan(std::int64_t micro_batch, const DataParallel& processes) const;
  /// What mixed precision does to that plan: the plan as compiled beside the same step in float32,
  /// and a sentence saying why the peak went up or down (PrecisionEffect::str).
  PrecisionEffect precision_effect(std::int64_t micro_batch, bool accumulating, bool under_limit = false,
                                   const DataParallel& processes = {}) const;
  /// Whether fit multiplies float32 weight gradients once per window (DeferredWeightGradients):
  /// accumulating with `options` asking for WeightGradients::per_window, and memory not capped (no
  /// limit on the model's device, no memory_budget), where accumulation keeps to its least memory.
  bool defers_weight_gradients(bool accumulating, const AccumulateOptions& options) const;
  /// The micro-batch an out-of-memory error advises: the largest of micro_batch / 2, / 4, ... down
  /// to 1 whose plan (accumulating) fits in `limit` beside `live_besides` bytes that are not the
  /// model's (and `read_ahead` micro-batches of data); none when even 1 does not.
  std::optional<std::int64_t> fitting_micro_batch(std::int64_t micro_batch, std::size_t limit,
                                                  std::size_t live_besides, std::int64_t read_ahead = 0) const;

  /// Prints the layers with output shapes, parameter counts and parameter memory; with a batch
  /// size, also what each layer keeps for backward at that micro-batch and the memory plan (of
  /// one of `processes` when there are several).
  void summary(std::ostream& out, std::optional<std::int64_t> batch = std::nullopt, const DataParallel& processes = {}) const;
  void summary() const;
  void summary(std::int64_t batch, const DataParallel& processes = {}) const;
  std::string summary_str(std::optional<std::int64_t> batch = std::nullopt, const DataParallel& processes = {}) const;

  /// Trains on `train` (see FitOptions) and returns the per-epoch logs: Trainer{options}.fit.
  /// A model of several inputs trains on a dataset of as many (Dataset{{x1, x2}, {y}}, or named
  /// as the model's inputs, or Dataset::zip), matched as arrange() says.
  History fit(const Dataset& train, const FitOptions& options = {});
  /// `data` as this model reads it: its inputs in the order of the model's inputs and its targets
  /// in the order of its outputs, matched by name where the dataset names them (Keras's dicts of
  /// inputs), else by position. Throws ValueError naming what does not match (how many, a name
  /// missing or left over) and ShapeError for an input of another shape; `what` ("fit",
  /// "evaluate") begins the messages. fit and evaluate call it.
  Dataset arrange(const Dataset& data, std::string_view what) const;
  /// Mean loss and metrics over `data`, in evaluation mode and without recording autograd.
  Evaluation evaluate(const Dataset& data, const EvaluateOptions& options = {});
  /// The model's outputs for `inputs` (N, ...) computed batch by batch, in evaluation mode
  /// (EvaluationScope): nothing in the model changes, so threads may predict on one built model
  /// at once.
  Tensor predict(const Tensor& inputs, std::int64_t batch_size = 32);
  /// The same for a model of several inputs or outputs: one tensor (N, ...) for each input, in
  /// order, and one for each output.
  std::vector<Tensor> predict(const std::vector<Tensor>& inputs, std::int64_t batch_size = 32);
  /// Continues `prompt` (int32 tokens) token by token with a causal language model: one built for
  /// samples of T tokens that gives (T, vocabulary) logits, each position seeing only the tokens up
  /// to it. Without a key/value cache: each new token runs the model over the last T tokens (the
  /// window right-padded, which a causal model cannot see). Returns the new tokens.
  std::vector<std::int32_t> generate(const std::vector<std::int32_t>& prompt, const GenerateOptions& options = {});

  Generator& generator() { return *generator_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name);

 protected:
  /// An empty graph of one input (Sequential's start).
  Model(std::string name);
  /// Appends `layer` called on the last node's output (the input for the first), as
  /// Sequential::add does.
  void append(std::unique_ptr<Layer> layer);
  /// Declares the one input's sample shape (before any layer).
  void declare_input(const layers::Input& input);

 private:
  using GraphInput = detail::GraphInput;
  using GraphNode = detail::GraphNode;
  [[noreturn]] void throw_wrong_layer_type(std::size_t i) const;
  friend class Trainer;
  friend class detail::TrainingRun;
  // Names `layer` the Keras way when it has no name ("dense", "dense_1"), refuses a second
  // layer of one name (of one key inside a nested model), and gives it the model's generator and
  // mode.
  void adopt(Layer& layer, const std::string& key);
  // What a layer is known by in its model: its key inside a nested model ("encoder.dense"), else
  // its name.
  static std::string layer_id(const Layer& layer, const std::string& key);
  // The functional constructor's steps: the inputs taken (their values by node), the parameters'
  // names checked for collisions.
  std::unordered_map<const detail::SymbolNode*, std::size_t> take_inputs(const Symbols& inputs);
  void check_keys() const;
  // After the nodes change: the values' last uses are found again when next needed, and the
  // symbols made again.
  void graph_changed();
  // Where each value is read last, so that running the graph frees it then.
  void index_graph() const;
  // A value's sample shape (an input's, or its node's layer's output).
  Shape value_shape(std::size_t value) const;
  // Whether the graph is a chain: one input, each node reading the one before, the last the output.
  bool is_chain() const;
  // The value's description for messages: "input 'image'" or "'dense_1' (Dense)".
  std::string value_str(std::size_t value) const;
  // summary()'s rows: the graph's inputs (`graph`) and each layer, with what it keeps in `plan`.
  std::vector<detail::SummaryRow> summary_rows(const MemoryPlan* plan, bool graph) const;
  // The graph's values as symbols, for input(), output() and output_of().
  const std::vector<Symbol>& symbols() const;
  // The graph's values for `inputs`: every node's output, each released after its last use.
  std::vector<Tensor> run_graph(std::vector<Tensor> inputs);
  std::size_t node_value(std::size_t node) const { return inputs_.size() + node; }
  void ensure_optimizer();
  /// Moves the parameters of a freshly built layer to the model's device.
  void place(Layer& layer);
  void check_compiled(const char* what) const;
  // compile()'s work: each output's loss and metrics, in the order of the outputs.
  using OutputCompile = std::pair<CompiledLoss, std::vector<Metric>>;
  void compile_outputs(optim::Recipe recipe, std::vector<OutputCompile> outputs);
  // What a batch adds to the logged "loss": for one output its summed loss over its units; for
  // several the weighted sum of the outputs' mean losses times the batch's `samples`, over them.
  std::pair<double, std::int64_t> logged_loss(const std::vector<double>& sums, const std::vector<std::int64_t>& units,
                                              std::int64_t samples) const;
  // Each of `metrics` (this model's, or copies) updated with its output's prediction and target and
  // that output's summed loss.
  void update_metrics(std::vector<Metric>& metrics, const std::vector<Tensor>& predictions,
                      const std::vector<Tensor>& targets, const std::vector<double>& sums) const;
  MemoryPlan plan_memory(std::int64_t micro_batch, bool accumulates, bool under_limit, std::int64_t read_ahead,
                         std::optional<DType> autocast, const DataParallel& processes) const;

  std::string name_;
  std::vector<std::shared_ptr<Layer>> layers_;
  std::vector<std::string> keys_;  // per layer, layer_key()
  std::vector<GraphInput> inputs_;
  std::vector<GraphNode> nodes_;
  std::vector<std::size_t> outputs_;     // values
  mutable std::vector<std::vector<std::size_t>> released_after_;  // per node: values read last there (index_graph)
  mutable std::vector<Symbol> symbols_;  // per value, made when first asked for (input(), output_of())
  // The layers' names as adopt() gave or checked them, and how many of each type were added, so that
  // adding stays constant time (a file of 100,000 layers loaded in 26 s when each add scanned them).
  std::unordered_map<std::string, std::size_t> names_;
  std::unordered_map<std::string, int> added_of_type_;
  std::unique_ptr<Generator> generator_;
  bool built_ = false;
  bool training_ = true;
  Device device_ = Device::cpu();
  optim::Recipe recipe_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<GradScaler> scaler_;
  std::vector<CompiledLoss> losses_;       // per output
  std::vector<Metric> metrics_;            // metrics() says which
  std::vector<std::size_t> metric_output_;  // per metric: the output it measures
  std::optional<datasets::Vocabulary> vocabulary_;
  std::vector<std::vector<std::string>> class_names_;                // per output, set_class_names
  std::vector<std::optional<std::pair<float, float>>> input_ranges_;  // per input, set_input_range
  std::vector<std::optional<TableColumns>> table_columns_;           // per input, set_table_columns
  RecomputePolicy recompute_policy_;
  std::vector<std::pair<std::size_t, std::size_t>> segments_;  // recomputed, [begin, end)
  // What the last export_onnx wrote, for summary().
  std::string onnx_path_;
  std::vector<OnnxExport::LayerNodes> onnx_layers_;
};

/// Puts a model in training or evaluation mode for a scope and restores the previous mode after,
/// also when an exception leaves the scope.
class TrainingModeGuard : NonCopyable {
 public:
  TrainingModeGuard(Model& model, bool training) : model_(model), previous_(model.training()) {
    model.set_training(training);
  }
  ~TrainingModeGuard() { model_.set_training(previous_); }

 private:
  Model& model_;
  bool previous_;
};

}  // namespace accrue

template <>
struct std::tuple_size<accrue::Evaluation> : std::integral_constant<std::size_t, 2> {};
template <std::size_t I>
struct std::tuple_element<I, accrue::Evaluation> {
  using type = double;
};
