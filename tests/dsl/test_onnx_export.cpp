// ONNX export: every model of the zoo and every layer type exported, passed by onnx.checker
// (python3-onnx, full check), run in ONNX Runtime (npm's onnxruntime-node) at a dynamic batch of
// 1 and of 7 and held within 1e-5 absolute or 1e-4 relative of predict; a layer with no ONNX form
// refused with its name, one of the user's own with a to_onnx exported.

#include "../test_util.hpp"
#include "model_zoo.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <accrue/dsl/onnx.hpp>

using namespace accrue;
using namespace accrue::test;
using accrue::test::zoo::images;
using accrue::test::zoo::Scale;
using accrue::test::zoo::tokens;

namespace {

// zoo::Scale with an ONNX form.
class ExportableScale final : public LayerBase<ExportableScale, "ExportableScale"> {
 public:
  explicit ExportableScale(float factor) : factor_(factor) {}
  Tensor forward(const Tensor& x) override { return x * factor_; }
  std::string to_onnx(onnx::Graph& graph, const std::string& x) const override {
    return graph.node("Mul", {x, graph.scalar(factor_)});
  }

 private:
  float factor_;
};

// Debian's Python, with Debian's python3-onnx.
const std::string python = "/usr/bin/python3";

// Why onnx.checker cannot run, or empty when it can.
std::string checker_missing() {
  if (std::system((python + " -c 'import onnx' >/dev/null 2>&1").c_str()) != 0)
    return python + " cannot import onnx (Debian's python3-onnx; tests/run_tests.sh installs it)";
  return {};
}

// onnx.checker with full_check (strict shape inference) on `path`; its complaint, or empty.
std::string onnx_checker(const std::string& path) {
  const std::string log = path + ".checker.log";
  const std::string command = python + " -c 'import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), "
                              "full_check=True)' '" + path + "' >'" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(log);
  std::stringstream s;
  s << in.rdbuf();
  return status == 0 ? std::string{} : "onnx.checker: " + s.str();
}

// Whether ONNX Runtime can run here; prints why not once.
bool runtime_here() {
  std::string why;
  if (!onnx::onnxruntime_folder(&why).empty()) return true;
  BOOST_TEST_MESSAGE("SKIPPED: ONNX Runtime comparisons: " << why);
  return false;
}

// Exports `model`, checks the file, and compares ONNX Runtime with predict at batch 1 and 7.
void check_export(Sequential& model, const Tensor& x7, const std::string& what, const OnnxExportOptions& options = {}) {
  BOOST_TEST_CONTEXT(what) {
    test::TempDir dir{"onnx_export"};
    const std::string path = (dir.path / "m.onnx").string();
    const OnnxExport e = model.export_onnx(path, options);
    BOOST_TEST(e.layers.size() <= model.size());
    if (const std::string missing = checker_missing(); missing.empty()) BOOST_TEST(onnx_checker(path) == "");
    else BOOST_TEST_MESSAGE("SKIPPED: onnx.checker: " << missing);
    if (!runtime_here()) return;
    for (const std::int64_t batch : {std::int64_t{1}, std::int64_t{7}}) {
      const Tensor x = batch == 7 ? x7 : ops::slice(x7, 0, 2, 3);
      const Tensor expected = model.predict(x, batch);
      const std::vector<Tensor> got = onnx::run_onnxruntime(path, {x});
      BOOST_REQUIRE(got.size() == 1u);
      const onnx::Difference d = onnx::compare(got[0], expected);
      BOOST_TEST_MESSAGE(what << ": " << d.str());
      BOOST_TEST(d.within, d.str());
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(differences_are_measured_as_documented) {
  const Tensor accrue = Tensor::from({1.0f, 0.0f, 100.0f}, {3});
  // 5e-6 absolute is within 1e-5; 0.005 at 100 is beyond it but 5e-5 relative.
  onnx::Difference d = onnx::compare(Tensor::from({1.000005f, 0.0f, 100.005f}, {3}), accrue);
  BOOST_TEST(d.within, d.str());
  BOOST_TEST(d.max_abs == 0.005, boost::test_tools::tolerance(1e-3));
  BOOST_TEST(d.max_rel == 5e-5, boost::test_tools::tolerance(1e-2));
  // Beyond 1e-5 where Accrue's value is 0: no relative bound can hold.
  d = onnx::compare(Tensor::from({1.0f, 2e-5f, 100.0f}, {3}), accrue);
  BOOST_TEST(!d.within);
  BOOST_TEST(std::isinf(d.max_rel));
  d = onnx::compare(Tensor::from({1.0f, NAN, 100.0f}, {3}), accrue);
  BOOST_TEST(!d.within);
  BOOST_TEST(std::isnan(d.max_abs));
  BOOST_CHECK_THROW(onnx::compare(Tensor::from({1.0f, 2.0f}, {2}), accrue), ShapeError);
}

BOOST_AUTO_TEST_CASE(the_zoo_runs_in_onnx_runtime_as_in_accrue) {
  manual_seed(5);
  for (const test::zoo::Example& e : test::zoo::image_models()) {
    Sequential model = e.make();
    test::zoo::train_one_step(model, e);
    check_export(model, e.x, e.name);
  }
  for (const test::zoo::Example& e : test::zoo::sequence_models()) {
    Sequential model = e.make();
    test::zoo::train_one_step(model, e);
    check_export(model, tokens(7, 8, 11, 5), e.name);
  }
}

BOOST_AUTO_TEST_CASE(every_other_layer_form_runs_in_onnx_runtime_as_in_accrue) {
  manual_seed(6);
  const Tensor x = tokens(7, 8, 11, 5);
  Sequential sequences{layers::Input{8},
                       layers::Embedding{11, 8},
                       layers::SinusoidalEncoding{16},
                       layers::MultiHeadAttention{2, 8},
                       layers::LayerNorm{{.affine = false}},
                       layers::TransformerBlock{4, 8, {.dropout = 0.0f}},
                       layers::GRU{6, {.return_sequences = true}},
                       layers::LSTM{4, {.return_sequences = true, .bias = false}},
                       layers::Dense{5},
                       layers::GELU{},
                       layers::Softmax{0},
                       layers::Flatten{},
                       layers::Dense{3}};
  sequences.build(Shape{8});
  check_export(sequences, x, "sequence layers");

  Tensor features = images(40, {6}, 7) * 4.0f + 2.0f;
  layers::Normalization norm;
  norm.adapt(features);
  Sequential tabular{layers::Input{6},   norm,
                     layers::Dense{8}, layers::BatchNorm1d{{.track_running_stats = false}},
                     layers::ReLU{},   layers::Residual{layers::Dense{8}, layers::Tanh{}},
                     layers::Dense{2}, layers::Softmax{}};
  tabular.build(Shape{6});
  check_export(tabular, ops::slice(features, 0, 0, 7), "Normalization, batch statistics, Residual");

  Sequential images_ungrouped{layers::Input{4, 6, 6}, layers::GroupNorm{2, {.affine = false}},
                              layers::BatchNorm2d{{.affine = false, .track_running_stats = false}},
                              layers::MaxPool2d{3, {.stride = 2, .padding = 1}}, layers::Flatten{}};
  images_ungrouped.build(Shape{4, 6, 6});
  check_export(images_ungrouped, images(7, {4, 6, 6}, 8), "GroupNorm and BatchNorm without affine parts");

  Sequential cut{layers::Input{12},   layers::Reshape{{3, 4}}, layers::Slice{{.axis = 1, .begin = 1, .end = 3}},
                 layers::Slice{{.axis = -1, .begin = 0, .end = 3}}, layers::Reshape{{-1}}, layers::Dense{2}};
  cut.build(Shape{12});
  check_export(cut, images(7, {12}, 10), "Reshape and Slice");
}

BOOST_AUTO_TEST_CASE(preprocessing_can_be_left_out_and_the_batch_fixed) {
  manual_seed(7);
  Tensor features = images(20, {3}, 9) * 5.0f - 1.0f;
  layers::Normalization norm;
  norm.adapt(features);
  Sequential model{layers::Input{3}, norm, layers::Dense{4}};
  model.build(Shape{3});
  test::TempDir dir{"onnx_preprocessing"};
  const std::string path = (dir.path / "m.onnx").string();
  const OnnxExport without = model.export_onnx(path, {.batch = 7, .include_preprocessing = false});
  BOOST_TEST(without.layers.size() == 1u);
  BOOST_TEST(without.layers[0].ops_str() == "Gemm");
  if (!runtime_here()) return;
  const Tensor x = ops::slice(features, 0, 0, 7);
  const Tensor normalized = model.layer(0).forward(x);
  const std::vector<Tensor> got = onnx::run_onnxruntime(path, {normalized});
  BOOST_TEST(onnx::compare(got[0], model.predict(x)).within);
  // A fixed batch of 7 refuses a batch of 1.
  BOOST_CHECK_EXCEPTION(onnx::run_onnxruntime(path, {ops::slice(normalized, 0, 0, 1)}), Error,
                        message_has({"ONNX Runtime could not run", "m.onnx"}));
}

BOOST_AUTO_TEST_CASE(verification_is_built_in_and_summary_shows_the_nodes) {
  manual_seed(8);
  Sequential model{layers::Input{8}, layers::Embedding{11, 6, {.padding_idx = 0}},
                   layers::LSTM{5, {.return_sequences = false}}, layers::Dense{3}};
  model.build(Shape{8});
  test::TempDir dir{"onnx_verify"};
  const std::string path = (dir.path / "m.onnx").string();
  if (runtime_here()) {
    const OnnxExport e = model.export_onnx(path, {.verify = true});
    BOOST_REQUIRE(e.verification.size() == 2u);
    BOOST_TEST(e.verification[0].batch == 1);
    BOOST_TEST(e.verification[1].batch == 7);
    for (const onnx::Difference& d : e.verification) BOOST_TEST(d.within, d.str());
    BOOST_TEST(e.str().find("ONNX Runtime against predict, batch 7") != std::string::npos, e.str());
  } else {
    model.export_onnx(path);
  }
  const std::string summary = model.summary_str();
  BOOST_TEST(summary.find("Gather") != std::string::npos, summary);
  BOOST_TEST(summary.find("Transpose, LSTM, Squeeze x2") != std::string::npos, summary);
  BOOST_TEST(summary.find("written as ONNX's i,o,f,c") != std::string::npos, summary);
}

BOOST_AUTO_TEST_CASE(a_layer_without_an_onnx_form_is_named) {
  Sequential model{layers::Input{4}, layers::Dense{3}, Scale{2.0f}};
  model.build(Shape{4});
  test::TempDir dir{"onnx_refused"};
  const std::string path = (dir.path / "m.onnx").string();
  BOOST_CHECK_EXCEPTION(model.export_onnx(path), ValueError,
                        message_has({"m.onnx", "layer 1", "'scale", "(Scale) has no ONNX form", "Layer::to_onnx"}));
  BOOST_TEST(!std::filesystem::exists(path));
  Sequential own{layers::Input{4}, layers::Dense{3}, ExportableScale{2.0f}};
  own.build(Shape{4});
  check_export(own, images(7, {4}, 11), "a layer of the user's own with to_onnx");
  Sequential unbuilt{layers::Dense{3}};
  BOOST_CHECK_EXCEPTION(unbuilt.export_onnx(path), ValueError, message_has({"not built yet"}));
  BOOST_CHECK_EXCEPTION(own.export_onnx(path, {.opset = 13}), ValueError, message_has({"opset 13", "opset 17"}));
}

BOOST_AUTO_TEST_CASE(a_loaded_model_exports_the_same_file) {
  manual_seed(9);
  const test::zoo::Example e = test::zoo::sequence_models().back();
  Sequential model = e.make();
  test::zoo::train_one_step(model, e);
  test::TempDir dir{"onnx_loaded"};
  const std::string saved = (dir.path / "m.safetensors").string();
  model.save(saved);
  Model loaded = load_model(saved);
  model.export_onnx((dir.path / "a.onnx").string());
  loaded.export_onnx((dir.path / "b.onnx").string());
  const auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  BOOST_TEST((bytes(dir.path / "a.onnx") == bytes(dir.path / "b.onnx")));
}

// A Transformer whose key-padding mask is an input of its own: the file takes the mask as a second
// int32 input, and ONNX Runtime gives predict's outputs within 1e-5 with keys padded in every way
// (none, the last ones, all but one, the first).
BOOST_AUTO_TEST_CASE(a_key_padding_mask_is_a_second_input_of_the_file) {
  manual_seed(15);
  Model model = zoo::masked_transformer();
  test::TempDir dir{"onnx_mask"};
  const std::string path = (dir.path / "masked.onnx").string();
  const bool runtime = runtime_here();
  const OnnxExport e = model.export_onnx(path, {.verify = runtime});
  if (const std::string missing = checker_missing(); missing.empty()) BOOST_TEST(onnx_checker(path) == "");
  else BOOST_TEST_MESSAGE("SKIPPED: onnx.checker: " << missing);
  if (!runtime) return;
  for (const onnx::Difference& d : e.verification) BOOST_TEST(d.within, d.str());
  const std::vector<Tensor> x = zoo::masked_tokens();
  const std::vector<Tensor> got = onnx::run_onnxruntime(path, x);
  BOOST_REQUIRE(got.size() == 1u);
  const onnx::Difference d = onnx::compare(got[0], model.predict(x).front());
  BOOST_TEST_MESSAGE("masked: " << d.str());
  BOOST_TEST(d.within, d.str());
}

// A functional model: two named inputs, a nested Sequential called on both, a shared Dense, every
// merge, and two outputs, one of them also read by the other's head. The file names its inputs and
// outputs as the model does; ONNX Runtime gives each output within 1e-5 of predict.
BOOST_AUTO_TEST_CASE(a_graph_exports_with_its_inputs_and_outputs) {
  manual_seed(12);
  const zoo::TwoInputGraph g = zoo::two_input_graph();
  const Symbol features = layers::Dense{8, {.name = "features"}}(g.merged);
  const Symbol label = layers::Dense{3, {.name = "label"}}(layers::ReLU{}(features));
  Model model{{g.left, g.right}, {label, features}};
  test::TempDir dir{"onnx_graph"};
  const std::string path = (dir.path / "graph.onnx").string();
  const bool runtime = runtime_here();
  const OnnxExport e = model.export_onnx(path, {.verify = runtime});
  BOOST_TEST(e.layers.size() == 16u);  // one entry per call: the encoder's and the shared Dense's twice
  BOOST_TEST(onnx::sample_shape(path) == Shape{5});
  if (const std::string missing = checker_missing(); missing.empty()) BOOST_TEST(onnx_checker(path) == "");
  else BOOST_TEST_MESSAGE("SKIPPED: onnx.checker: " << missing);
  if (!runtime) return;
  BOOST_TEST(e.verification.size() == 4u);  // two outputs at batch 1 and at 7
  for (const onnx::Difference& d : e.verification) BOOST_TEST(d.within, d.str());
  BOOST_TEST(e.verification[1].output == "features");
  // The outputs in the model's order, from inputs fed in its order.
  const std::vector<Tensor> x{random_tensor({3, 5}, 1), random_tensor({3, 5}, 2)};
  const std::vector<Tensor> got = onnx::run_onnxruntime(path, x), expected = model.predict(x);
  BOOST_REQUIRE(got.size() == 2u);
  for (std::size_t o = 0; o < 2; ++o) BOOST_TEST(onnx::compare(got[o], expected[o]).within);
}
