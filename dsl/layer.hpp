#pragma once
// Layer: a building block of a model.
//
// Ownership. A layer is a value until it is put into a model: `Sequential{layers::Dense{512}, ...}`
// moves (or copies) each layer into the model, which owns it from then on and for its whole life.
// A layer called on symbols (`layers::Dense{64}(x)`, Keras's functional API, model.hpp) puts a copy
// of itself in the graph, which every later call of the same object uses: a layer object called
// twice shares its weights, and the models made of that graph share it. Reach a model's layers
// through `model.layer(i)`, `model.layer("dense_1")` or `model.layer<layers::Dense>(i)`: references
// that stay valid as long as the model. Copying a built layer copies its configuration and weights
// and shares nothing.
//
// Lifecycle. A layer is created with its configuration only (`Dense{512}` knows its output size,
// not its input size). The model calls build() once with the shape of one input sample (no batch
// dimension), when that shape becomes known (layers::Input, a call on a symbol, Sequential::build,
// or the first batch of fit), as Keras does; build() creates the parameters and returns the output sample shape.
// forward() then runs on batches, with the batch dimension first.
//
// Writing a layer. Derive from Layer, implement type_name(), build() and forward() with ops from
// <accrue/framework/ops/ops.hpp>; autograd records the backward pass, so none is written. Register
// parameters with add_parameter() in build(). A layer made of layers (TransformerBlock, Residual)
// registers them with add_child() and builds them with build_child(): their parameters appear in
// its own under "child_name.", as PyTorch names a module's submodules' parameters. A layer that
// takes several inputs (merges, a gate of your own) derives from MultiInputLayer.

#include <algorithm>
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../framework/core/non_copyable.hpp"
#include "../framework/core/random.hpp"
#include "../framework/core/tensor.hpp"
#include "symbol.hpp"

namespace accrue {

/// What one layer holds while a batch goes forward and backward in training, for memory plans
/// (Model::memory_plan): which tensors it keeps for backward and what it allocates on the way.
struct LayerMemoryUse {
  /// The output's dtype.
  DType output_dtype = DType::f32;
  /// The output shares the input's storage (Flatten).
  bool output_is_view = false;
  /// Whether backward needs the input itself, or the output itself (so they stay alive).
  bool keeps_input = true, keeps_output = true;
  /// Other tensors kept for backward: converted copies, statistics, masks (bytes).
  std::size_t kept_other = 0;
  /// The part of kept_other a layer made of layers frees inside its backward before that backward's
  /// peak (the tensors its last sub-layers kept).
  std::size_t kept_released_early = 0;
  /// Activations a layer makes again inside its own backward and frees before it returns
  /// (layers::Recompute runs its layers' forward again there).
  std::size_t recomputed = 0;
  /// The recomputation's forward at its largest, before its backward: the activations it has made
  /// again by then and that moment's scratch and output (a segment's last layer, which runs it).
  std::size_t recompute_forward_kept = 0, recompute_forward_scratch = 0;
  /// Transient bytes while forward runs besides its input and output, and while backward runs
  /// besides the gradients of its output and input (workspaces, float32 accumulators).
  std::size_t forward_scratch = 0, backward_scratch = 0;
  /// The most backward takes at once while computing its input's gradient, which it computes
  /// only when the input needs one (0: nothing beyond backward_scratch).
  std::size_t input_gradient_scratch = 0;
  /// Backward's scratch when the input needs its gradient.
  std::size_t scratch_with_input_gradient() const { return std::max(backward_scratch, input_gradient_scratch); }
  /// Low-precision packs of its weights that training keeps through each accumulation window
  /// (kernels::PackedParameters): for forward (and for backward inside the layer), and for
  /// backward to the layer's input, which is made only when the input needs a gradient.
  std::size_t kept_packs = 0, kept_packs_for_input_gradient = 0;
  /// Rows of its input and output gradient that training keeps through each accumulation window
  /// for its weight's gradient (DeferredWeightGradients), counted as gradients' memory.
  std::size_t deferred_gradient_rows = 0;
};

/// The batch a memory plan asks about: `batch` samples of `input_shape` in `input_dtype` on
/// `device`, under autocast to `autocast` when set; `keeps_packs` when training keeps the weights'
/// packs through each accumulation window (kernels::PackedParameters), so that products read those
/// rather than packing or rounding the weights anew.
struct LayerMemoryQuery {
  Shape input_shape;
  std::int64_t batch = 1;
  DType input_dtype = DType::f32;
  std::optional<DType> autocast;
  Device device = Device::cpu();
  bool keeps_packs = false;

  /// Bytes of a batch of samples of `sample` in `dtype`.
  std::size_t bytes(const Shape& sample, DType dtype) const {
    return static_cast<std::size_t>(batch * sample.numel()) * dtype_size(dtype);
  }
  /// Bytes of this batch's input.
  std::size_t input_bytes() const { return bytes(input_shape, input_dtype); }
};

/// One option's value in a layer's configuration: none (an option left unset), a flag, a whole
/// number, a number, a text, or whole numbers per axis (a kernel of (3, 5)).
using ConfigValue =
    std::variant<std::monostate, bool, std::int64_t, double, std::string, std::vector<std::int64_t>, std::vector<std::string>>;
/// A layer's options by name, in the order of its constructor and options (Keras's get_config):
/// what it was made with, not what it learned.
using LayerConfig = std::vector<std::pair<std::string, ConfigValue>>;
/// "512", "true", "0.1", "same", "(3, 5)", "none", ["cat", "dog"].
std::string config_value_str(const ConfigValue& value);
/// A float option as the number written in the program (0.1f as 0.1, not 0.10000000149011612).
ConfigValue float_option(float value);
/// A size per axis, (height, width).
ConfigValue size_option(Size2 size);

namespace onnx {
class Graph;  // onnx.hpp: the graph export_onnx writes
}
class ConfigReader;  // layer_registry.hpp: a configuration read back, for from_config

/// While one lives, the layers that run on this thread behave as in evaluation (dropout off,
/// batch normalization on its running statistics) whatever their training flag. predict(),
/// evaluate() and generate() run in one, so they change nothing in the model, and several threads
/// may run them on one built model at once (a service answering requests).
class EvaluationScope : NonCopyable {
 public:
  EvaluationScope();
  ~EvaluationScope();
  /// Whether this thread is inside one.
  static bool active();
};

/// While one lives, the layers that run on this thread run a forward pass a second time
/// (recomputation, inside backward): they leave their buffers (BatchNorm's running statistics) as
/// the first pass left them, so that recomputing changes nothing.
class ReplayScope : NonCopyable {
 public:
  ReplayScope();
  ~ReplayScope();
  /// Whether this thread is inside one.
  static bool active();
};

/// How many inputs a layer takes: one for most, at least two for a merge.
struct InputCount {
  std::size_t min = 1, max = 1;
  bool admits(std::size_t n) const { return n >= min && n <= max; }
  /// "1", "2", "2 or more", "2 to 3".
  std::string str() const;
};

class Layer {
 public:
  virtual ~Layer() = default;

  /// The layer's class as Keras names it: "Dense", "ReLU".
  virtual std::string type_name() const = 0;
  /// A copy of this layer, with its configuration and (when built) a deep copy of its parameters.
  virtual std::unique_ptr<Layer> clone() const = 0;

  /// Creates the parameters for samples of `input_shape` and returns the output sample shape.
  /// Throws ShapeError naming the layer when it cannot take such input. The default keeps the
  /// shape (activations).
  virtual Shape build(const Shape& input_shape, Generator& generator);
  /// The output for a batch x (batch dimension first).
  virtual Tensor forward(const Tensor& x) = 0;

  /// The layer called on symbols of a model being written (model.hpp): builds it for their shapes
  /// and returns its output's symbol. The first call puts a copy of this layer in the graph and
  /// every later call of this object uses that copy, so that its weights are shared. Throws
  /// ShapeError naming the layer and its inputs' shapes when they do not fit.
  Symbol operator()(const Symbol& x);
  /// The same for a layer that takes several inputs (`layers::Add{}({a, b})`).
  Symbol operator()(const std::vector<Symbol>& xs);
  /// The copy in the graph that calls of this object use (null before the first call).
  const std::shared_ptr<Layer>& called() const { return called_; }

  /// How many inputs it takes: one, except a MultiInputLayer's.
  virtual InputCount input_count() const { return {}; }
  /// build() and forward() for a list of inputs, as a model's graph calls every layer: one input's
  /// for a one-input layer; MultiInputLayer's own.
  virtual Shape build_inputs(const std::vector<Shape>& input_shapes, Generator& generator);
  virtual Tensor forward_inputs(const std::vector<Tensor>& xs);

  /// Parameters with their names inside the layer ("weight", "bias"), in PyTorch's order.
  const std::vector<std::pair<std::string, Tensor>>& named_parameters() const { return parameters_; }
  std::int64_t parameter_count() const;
  /// State that is not trained but saved and moved with the layer (BatchNorm's running
  /// statistics): PyTorch's buffers, Keras's non-trainable weights.
  const std::vector<std::pair<std::string, Tensor>>& named_buffers() const { return buffers_; }

  /// What this layer holds in training for the batch `q` describes. The default is the cautious
  /// guess of a layer that keeps both its input and output in the input's dtype; built-in layers
  /// say exactly.
  virtual LayerMemoryUse memory_use(const LayerMemoryQuery& q) const;

  /// The options this layer was made with (Keras's get_config). Built-in layers list theirs; a
  /// layer of your own lists its own (the default: none), so that the processes of a distributed
  /// run can find out that they were given different models.
  virtual LayerConfig config() const { return {}; }
  /// The layers this one was given to hold (Residual's), which a saved model lists inside it;
  /// none for a layer that makes its own from its configuration (TransformerBlock).
  virtual std::vector<const Layer*> given_layers() const { return {}; }
  /// The configuration of this layer and of the layers inside it, one "option=value" each, the
  /// type first: "type=Dense", "units=512", "bias=true"; a child's prefixed with its name
  /// ("self_attn.heads=4").
  std::vector<std::string> config_lines() const;

  /// Writes this layer's ONNX nodes in inference form into `graph`, reading the value named `x`
  /// (batch first), and returns its output's name (onnx.hpp). Built-in layers have one; the default
  /// throws ValueError naming the layer, so a layer of your own is exported once it overrides this.
  virtual std::string to_onnx(onnx::Graph& graph, const std::string& x) const;
  /// The same for a list of inputs: to_onnx's for a one-input layer; MultiInputLayer's own.
  virtual std::string to_onnx_inputs(onnx::Graph& graph, const std::vector<std::string>& xs) const;

  /// How the layer takes images (C, H, W) of another height and width than it was built for.
  /// A model whose input reaches a `resizes` layer through `follows` layers alone takes images of
  /// any size there (Model::takes_any_image_size): a saved model serves files as they are.
  enum class ImageSizes {
    fixed,    ///< only the shape it was built for (most layers)
    follows,  ///< any, with its channels, giving the same height and width (Rescaling, RandomFlip)
    resizes,  ///< any, with its channels, giving the output shape it was built for (Resizing, CenterCrop)
  };
  virtual ImageSizes image_sizes() const { return ImageSizes::fixed; }

  /// True for layers whose output depends on statistics of the batch (batch normalization): under
  /// gradient accumulation they see each micro-batch, not the effective batch, and training warns.
  virtual bool uses_batch_statistics() const { return false; }
  /// True for layers that, in a distributed run, compute those statistics over every process's
  /// share of the micro-batch together (BatchNorm{{.sync = true}}).
  virtual bool shares_batch_statistics() const { return false; }

  /// Dropout and normalization behave differently in training; the model sets this (and this
  /// layer's children follow). False on a thread inside an EvaluationScope, whatever was set.
  bool training() const;
  void set_training(bool training);

  /// Unique name within its model ("dense_1"); set by the model, or by the user beforehand.
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  /// Keras's `trainable`: a layer set not trainable (`layer.trainable(false)`, before or after
  /// build) keeps its parameters, and its children's, out of training: no gradients, no optimizer
  /// state, out of clipping norms, distributed buckets and the memory plan's gradients; summary()
  /// counts them as non-trainable. A compiled model makes its optimizer again at the next fit.
  bool trainable() const { return trainable_; }
  Layer& trainable(bool trainable);
  /// Calls f on this layer and then on every layer inside it, depth first.
  void for_each_layer(const std::function<void(Layer&)>& f);

  bool built() const { return built_; }
  /// Sample shapes seen at build (valid once built; the first input's for a MultiInputLayer).
  const Shape& input_shape() const;
  const Shape& output_shape() const { return output_shape_; }

  /// Random numbers for this layer's forward (dropout masks): the owning model's generator, or
  /// the default generator outside a model.
  Generator& generator() const { return generator_ != nullptr ? *generator_ : default_generator(); }
  /// Set by the model that owns the layer (and passed on to its children).
  void set_generator(Generator* generator);

  /// Builds once; a second call with another shape throws ShapeError naming both shapes. Used by models.
  void ensure_built(const Shape& input_shape, Generator& generator);
  void ensure_built_inputs(const std::vector<Shape>& input_shapes, Generator& generator);
  /// The sample shape of each input seen at build (one for most layers).
  const std::vector<Shape>& input_shapes() const { return input_shapes_; }
  /// "layer 2 'dense_1' (Dense)"-style identity for messages.
  std::string describe() const;

 protected:
  Layer() = default;
  Layer(const Layer& other);
  Layer(Layer&&) = default;
  Layer& operator=(const Layer&) = delete;

  /// Registers a parameter (a leaf that requires grad, counted as parameter memory).
  Tensor& add_parameter(std::string name, Tensor value);
  /// Registers a buffer (no gradient, counted as parameter memory).
  Tensor& add_buffer(std::string name, Tensor value);

  /// Registers a sub-layer named `name` (unique within this layer), owned by this layer; returns
  /// its index for child().
  std::size_t add_child(std::string name, std::unique_ptr<Layer> child);
  template <class L>
    requires std::derived_from<std::decay_t<L>, Layer>
  std::size_t add_child(std::string name, L&& child) {
    return add_child(std::move(name), std::unique_ptr<Layer>(std::make_unique<std::decay_t<L>>(std::forward<L>(child))));
  }
  Layer& child(std::size_t i) { return *children_.at(i).second; }
  const Layer& child(std::size_t i) const { return *children_.at(i).second; }
  std::size_t child_count() const { return children_.size(); }
  /// Builds child i for `input_shape` and lists its parameters and buffers as this layer's, under
  /// "name."; returns its output shape. Called from build().
  Shape build_child(std::size_t i, const Shape& input_shape, Generator& generator);

 private:
  // Where a parameter or buffer comes from: this layer (child -1) or entry `index` of a child's list.
  struct Origin {
    int child = -1;
    std::size_t index = 0;
  };
  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<Origin> parameter_origins_, buffer_origins_;
  std::vector<std::pair<std::string, std::unique_ptr<Layer>>> children_;
  std::string name_;
  std::vector<Shape> input_shapes_;
  Shape output_shape_;
  Generator* generator_ = nullptr;
  // The copy that calls on symbols use; a copy of this layer is a new layer and does not share it.
  std::shared_ptr<Layer> called_;
  bool built_ = false;
  bool training_ = true;
  bool trainable_ = true;
};

namespace detail {
/// `layer` called on `inputs`: checks how many it takes, builds it for their shapes (with the
/// default generator: accrue::manual_seed first for repeatable weights), and returns its output's
/// symbol. `key` as in SymbolNode. Throws ShapeError naming the layer and its inputs' shapes.
Symbol call_layer(const std::shared_ptr<Layer>& layer, const std::vector<Symbol>& inputs, std::string key = {});
}  // namespace detail

/// A layer that takes several inputs: the merges (layers/merge.hpp), or a layer of your own that
/// combines tensors (`class Gate final : public LayerBase<Gate, "Gate", MultiInputLayer>`): it says
/// how many it takes and implements build() and forward() for a list of them. It is called on
/// symbols of a functional model (`Gate{}({x, y})`), not put in a Sequential.
class MultiInputLayer : public Layer {
 public:
  /// Creates the parameters for inputs of these sample shapes (as many as input_count() admits)
  /// and returns the output sample shape; throws ShapeError naming the shapes that do not fit.
  virtual Shape build(const std::vector<Shape>& input_shapes, Generator& generator) = 0;
  /// The output for a batch of each input (batch dimension first).
  virtual Tensor forward(const std::vector<Tensor>& xs) = 0;
  InputCount input_count() const override { return {2, 2}; }

  Shape build(const Shape& input_shape, Generator& generator) final;
  Tensor forward(const Tensor& x) final;
  Shape build_inputs(const std::vector<Shape>& input_shapes, Generator& generator) final;
  Tensor forward_inputs(const std::vector<Tensor>& xs) final;
};

/// A layer's type name as a template argument: `LayerBase<Dense, "Dense">`.
template <std::size_t N>
struct LayerTypeName {
  // NOLINTNEXTLINE: implicit, so that a string literal is the argument
  constexpr LayerTypeName(const char (&text)[N]) { std::copy_n(text, N, chars); }
  constexpr std::string_view view() const { return {chars, N - 1}; }
  char chars[N] = {};
};

namespace detail {
// type_name() from the name given to LayerBase; a layer given none writes its own.
template <LayerTypeName Name, class Base>
class NamedLayer : public Base {
 public:
  using Base::Base;
  std::string type_name() const override { return std::string(Name.view()); }
};
template <LayerTypeName Name, class Base>
using NamedOrNot = std::conditional_t<Name.view().empty(), Base, NamedLayer<Name, Base>>;
}  // namespace detail

/// Layers whose copy is their copy constructor: clone() written once, and type_name() too when the
/// name is given (`class Scale final : public LayerBase<Scale, "Scale">`). `Base` is the layer class
/// to derive from when it is not Layer itself (LSTM from Recurrent), its constructors inherited.
template <class Derived, LayerTypeName Name = "", class Base = Layer>
class LayerBase : public detail::NamedOrNot<Name, Base> {
  using Parent = detail::NamedOrNot<Name, Base>;

 public:
  using Parent::Parent;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Derived>(static_cast<const Derived&>(*this)); }
};

}  // namespace accrue
