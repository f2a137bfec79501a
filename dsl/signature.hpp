#pragma once
// What a model takes and gives, as Model::signature() reports it, summary() shows it, a model file
// keeps it and an ONNX export states it in its metadata: so that a program that serves the model
// knows what to feed it and what comes back without the code that trained it.
//
//   Model model = load_model("flowers.safetensors");
//   fmt::print("{}\n", model.signature().str());
//   // input 'input': float32 (3, any, any), NCHW, values in [0, 255], resized inside the model to (3, 64, 64)
//   // output 'dense_1': (5,) logits (softmax gives probabilities) of daisy, dandelion, roses, sunflowers, tulips
//
// A model trained on a table also says which columns make each input ("from columns 'age',
// 'fare'"), so that csv_options() reads a new file's rows as training read them.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../datasets/table_columns.hpp"
#include "../framework/core/dtype.hpp"
#include "../framework/core/shape.hpp"

namespace accrue {
namespace datasets {
struct CsvOptions;
}

struct InputSignature {
  std::string name = {};
  /// The sample shape the model was built for.
  Shape shape = {};
  /// Images of any height and width are taken: the model resizes or crops them itself
  /// (Model::takes_any_image_size); `shape` is then what its first resizing layer takes in training.
  bool any_image_size = false;
  DType dtype = DType::f32;
  /// An ONNX file's input that takes pixels as uint8 (OnnxExportOptions::uint8_pixels): the bytes
  /// as decoded, which the file casts to `dtype`.
  bool uint8 = false;
  /// The batch's layout, batch first: "NCHW" for images, "NC" for features, "NT" for token ids,
  /// "N..." otherwise.
  std::string layout = {};
  /// The values it expects, where stated (Model::set_input_range): [0, 255] for raw pixels.
  std::optional<std::pair<float, float>> range = {};
  /// The shape the model's own resizing makes of any image (when any_image_size).
  std::optional<Shape> resized_to = {};
  /// The table columns it is read from, where stated (Model::set_table_columns, or fit from a
  /// dataset read by datasets::csv).
  std::optional<TableColumns> table = {};
};

struct OutputSignature {
  std::string name = {};
  Shape shape = {};
  /// "logits", "probabilities" or "values": from the output's last layer (Softmax, Sigmoid) or,
  /// after it, from the loss it was compiled with (CrossEntropy: logits).
  std::string meaning = {};
  /// The meaning of logits that a softmax over the last axis makes probabilities of (a model
  /// trained with CrossEntropy).
  static constexpr const char* logits_for_softmax = "logits (softmax gives probabilities)";
  /// The values are such logits: what OnnxExportOptions::softmax applies a softmax to.
  bool softmax_makes_probabilities() const { return meaning == logits_for_softmax; }
  /// What each entry of the last axis stands for (Model::set_class_names, or the training data's
  /// Dataset::class_names taken by fit); empty when unknown.
  std::vector<std::string> class_names = {};
};

struct ModelSignature {
  std::vector<InputSignature> inputs = {};
  std::vector<OutputSignature> outputs = {};
  /// One line per input and output, as in the comment above.
  std::string str() const;
  /// How datasets::csv reads a file's rows as the model's inputs, from the columns each input
  /// states (InputSignature::table): one group per input, named after it, no target. Columns may
  /// stand in any order in the file, and others may be there too:
  ///
  ///   Model model = load_model("weather.safetensors");
  ///   Dataset rows = datasets::csv("tomorrow.csv", model.signature().csv_options());
  ///
  /// Throws ValueError naming an input that states no columns.
  datasets::CsvOptions csv_options() const;
};

}  // namespace accrue
