#pragma once
// ONNX export: a built Model as an ONNX file (opset 17, IR 8) that ONNX Runtime, TensorRT or
// a browser runs without Accrue, as Keras's model.export(format="onnx") and torch.onnx.export:
//
//   OnnxExport e = model.export_onnx("m.onnx", {.verify = true});
//   std::cout << e.str();   // each layer's nodes, and the largest difference from predict
//
// Each layer writes its own nodes (Layer::to_onnx, beside its forward in the layer's file) through
// onnx::Graph; a layer of your own gives itself an ONNX form by overriding to_onnx, and without one
// export names it and stops. The file is written with the protobuf classes of the onnx library
// (Debian's libonnx-dev) and checked with its checker and strict shape inference before it
// replaces anything. Verification runs the file in ONNX Runtime (npm's onnxruntime-node, run by
// node: tests/onnx/install_onnxruntime.sh installs it) beside predict and reports the differences.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "../framework/core/non_copyable.hpp"
#include "../framework/core/tensor.hpp"
#include "signature.hpp"

namespace accrue {

class Layer;

namespace onnx {

/// OnnxExportOptions::batch: the batch dimension left free ("batch" in the file).
inline constexpr std::int64_t dynamic = 0;

/// A node attribute: an integer, a float, a text or integers.
using Attribute = std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>>;
using Attributes = std::vector<std::pair<std::string, Attribute>>;

/// The graph being written, as a layer's to_onnx sees it: values are named by strings, a layer
/// adds nodes reading its input's name and returns its output's name. Everything a layer adds is
/// named under the layer's place in the model ("3.self_attn"), its weights as in the model's
/// state_dict ("3.self_attn.in_proj_weight").
class Graph : NonCopyable {
 public:
  explicit Graph(int opset);
  ~Graph();

  int opset() const;
  /// Adds a node of type `op` (ONNX's default domain) reading `inputs` ("" leaves an optional
  /// input out) and returns the name of its output.
  std::string node(std::string_view op, std::vector<std::string> inputs, Attributes attributes = {});
  /// The same for a node with `outputs` outputs (LSTM's Y, Y_h, Y_c).
  std::vector<std::string> nodes(std::string_view op, std::vector<std::string> inputs, int outputs,
                                 Attributes attributes = {});
  /// A tensor of this layer as a float32 initializer named "<layer>.<name>".
  std::string weight(std::string_view name, const Tensor& value);
  /// Float32 values shaped `dims` as an initializer named "<layer>.<name>" (a weight rearranged).
  std::string weight(std::string_view name, std::vector<float> values, std::vector<std::int64_t> dims);
  /// A matrix of this layer transposed, as MatMul's right operand: "<layer>.<name>_t".
  std::string weight_transposed(std::string_view name, const Tensor& matrix);
  /// A constant one-dimensional int64 tensor (shapes, axes, split sizes).
  std::string ints(std::vector<std::int64_t> values);
  /// A constant float32 scalar.
  std::string scalar(float value);
  /// `inner`'s nodes reading `x`, named under its name inside this layer; returns its output.
  std::string layer(const Layer& inner, const std::string& x);
  /// The same for a sub-layer of several inputs (an attention and its key-padding mask).
  std::string layer(const Layer& inner, const std::vector<std::string>& xs);
  /// A line shown beside this layer's nodes in summary() ("gates i,f,g,o -> i,o,f,c").
  void note(std::string text);
  /// Whether the images (N, C, H, W) of value `x` may be of any height and width: an input the
  /// model resizes itself (Model::takes_any_image_size), and what layers that follow sizes make of
  /// it. A layer that resizes reads the size from the value then (ONNX's Shape) instead of writing
  /// constants for the size it was built for.
  bool any_image_size(const std::string& x) const;
  void set_any_image_size(const std::string& x);

  /// Used by Model::export_onnx.
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// The largest differences between ONNX Runtime's and Accrue's outputs for one batch: absolute
/// over every element, relative (to Accrue's value) over the elements beyond `atol`; `within`
/// when every element is within `atol` absolutely or within `rtol` relatively.
struct Difference {
  std::int64_t batch = 0;
  /// The output compared, in a model of several ("" for one).
  std::string output = {};
  double max_abs = 0.0, max_rel = 0.0;
  double atol = 1e-5, rtol = 1e-4;
  bool within = true;
  std::string str() const;
};
/// Compares `onnx` (ONNX Runtime's output) with `accrue` element by element.
Difference compare(const Tensor& onnx, const Tensor& accrue, double atol = 1e-5, double rtol = 1e-4);

/// The sample shape the ONNX file's first input takes (its dimensions after the batch); throws
/// naming the file when it is not an ONNX model or its input is not a tensor of fixed sample shape.
Shape sample_shape(const std::string& path);

/// What the ONNX file takes and gives: the signature export_onnx wrote into its metadata (input
/// range, any image size, output meaning, class names), or for a file written elsewhere what its
/// graph says. Throws naming the file when it is not an ONNX model or its metadata is damaged.
ModelSignature signature(const std::string& path);

/// Where onnxruntime-node is: $ACCRUE_ONNXRUNTIME_NODE, else default_onnxruntime_folder(). Empty
/// with the reason in `why` when node or the package is not there.
std::string onnxruntime_folder(std::string* why = nullptr);
/// Where this library looks without $ACCRUE_ONNXRUNTIME_NODE: run from its build tree, the folder
/// the tests install it in (BUILD_DIR/onnxruntime-node); installed, `<prefix>/share/accrue/onnxruntime-node`
/// beside the library (tests/onnx/install_onnxruntime.sh FOLDER puts it there).
std::string default_onnxruntime_folder();
/// The outputs of the ONNX file `path` for `inputs` (float32 or int32, one per graph input in
/// order; for an input the file takes as uint8, whole numbers 0 to 255, passed as bytes), computed
/// by ONNX Runtime's CPU provider in a node process. Throws Error naming the file and what node
/// said when it cannot run.
std::vector<Tensor> run_onnxruntime(const std::string& path, const std::vector<Tensor>& inputs);

}  // namespace onnx

/// How Model::export_onnx writes a model.
struct OnnxExportOptions {
  /// The operator set: 17 (IR 8), the newest the onnx 1.12 checker knows.
  int opset = 17;
  /// onnx::dynamic, or a fixed batch size.
  std::int64_t batch = onnx::dynamic;
  /// With the model's leading Normalization layers (the file takes raw inputs); without, the file
  /// takes inputs already normalized, for a runtime that normalizes on its own.
  bool include_preprocessing = true;
  /// Where the model takes images of any size (Model::takes_any_image_size), the file does too:
  /// its input's height and width are free ("height", "width") and the resizing layers compute
  /// their taps from them. false: the file takes the size the model was built for.
  bool any_image_size = true;
  /// A Softmax after each output whose values are logits for a softmax (Model::signature), so that
  /// the file gives probabilities.
  bool softmax = false;
  /// Image inputs that take raw pixels (their range stated as [0, 255], Model::set_input_range)
  /// are uint8 in the file, cast to float32 as it starts: a runtime feeds the decoded bytes as
  /// they are (InputSignature::uint8). run_onnxruntime gives such an input its float32 whole
  /// numbers as bytes.
  bool uint8_pixels = false;
  /// Runs the file in ONNX Runtime beside predict at batch 1 and at verify_inputs' batch and
  /// reports the differences (OnnxExport::verification); throws if it cannot run.
  bool verify = false;
  /// Inputs for verification (N, sample...); none: 7 samples of standard normal numbers (tokens
  /// drawn from the first Embedding's vocabulary).
  Tensor verify_inputs = {};
};

/// What export_onnx wrote.
struct OnnxExport {
  std::string path;
  /// Each layer of the model and the ONNX nodes it became, in order.
  struct LayerNodes {
    std::string layer = {}, type = {};
    std::vector<std::string> ops = {};
    std::vector<std::string> notes = {};
    /// "Gemm", "MatMul x2, Add x2, Softmax": each op with its count, in the order first written.
    std::string ops_str() const;
  };
  std::vector<LayerNodes> layers = {};
  /// With OnnxExportOptions::verify: the differences at each batch compared.
  std::vector<onnx::Difference> verification = {};
  std::string str() const;
};

}  // namespace accrue
