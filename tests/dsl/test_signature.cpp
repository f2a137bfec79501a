// What a model takes and gives (signature.hpp): the input's shape, layout and range, the output's
// meaning and class names; set by the user or taken by fit from an image folder or a CSV file;
// kept by the model file, shown by summary(), written into an ONNX file's metadata.

#include "../test_util.hpp"

#include <fstream>

#include <accrue/dsl/onnx.hpp>

using namespace accrue;
using namespace accrue::test;

namespace {

Sequential flowers_model() {
  manual_seed(3);
  Sequential model{layers::Input{3, 40, 40},
                   layers::Resizing{{24, 24}, {.crop_to_aspect_ratio = true}},
                   layers::CenterCrop{20},
                   layers::Rescaling{1.0f / 255},
                   layers::Flatten{},
                   layers::Dense{3}};
  model.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  return model;
}

// A folder of `per_class` small PNGs in each of `classes`, of two sizes.
void write_image_folder(const std::filesystem::path& dir, const std::vector<std::string>& classes, int per_class) {
  Generator g{4};
  for (const std::string& c : classes) {
    std::filesystem::create_directories(dir / c);
    for (int i = 0; i < per_class; ++i) {
      datasets::DecodedImage d{.width = 30 + 7 * i, .height = 20 + 5 * i, .channels = 3, .pixels = {}};
      d.pixels.resize(static_cast<std::size_t>(d.width * d.height * 3));
      for (auto& p : d.pixels) p = static_cast<std::uint8_t>(g.below(256));
      datasets::write_png((dir / c / fmt::format("{}.png", i)).string(), d);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_signature_says_what_the_model_takes_and_gives) {
  Sequential model = flowers_model();
  model.set_input_range(0, 255).set_class_names({"daisy", "rose", "tulip"});
  const ModelSignature s = model.signature();
  BOOST_REQUIRE(s.inputs.size() == 1u);
  BOOST_TEST(s.inputs[0].name == "input");
  BOOST_TEST(s.inputs[0].any_image_size);
  BOOST_TEST(s.inputs[0].layout == "NCHW");
  BOOST_TEST((s.inputs[0].shape == Shape{3, 40, 40}));
  BOOST_TEST((*s.inputs[0].resized_to == Shape{3, 24, 24}));
  BOOST_TEST(s.inputs[0].range->second == 255.0f);
  BOOST_REQUIRE(s.outputs.size() == 1u);
  BOOST_TEST(s.outputs[0].meaning == "logits (softmax gives probabilities)");
  BOOST_TEST(s.outputs[0].softmax_makes_probabilities());
  BOOST_TEST(s.outputs[0].class_names == (std::vector<std::string>{"daisy", "rose", "tulip"}), boost::test_tools::per_element());
  const std::string text = s.str();
  BOOST_TEST(text.find("input 'input': float32 (3, any, any), NCHW, values in [0, 255], resized inside the model to (3, 24, 24)") !=
                 std::string::npos,
             text);
  BOOST_TEST(text.find("output 'output': (3,) logits (softmax gives probabilities) of daisy, rose, tulip") != std::string::npos, text);
  BOOST_TEST(model.summary_str().find("of daisy, rose, tulip") != std::string::npos);

  // Through the file: what was stated comes back, and the rest follows from the model.
  test::TempDir dir{"signature"};
  const std::string path = (dir.path / "m.safetensors").string();
  model.save(path);
  Model loaded = load_model(path);
  BOOST_TEST(loaded.signature().str() == text);

  // A softmax at the end: probabilities; a model not compiled and without one: values.
  Sequential probabilities{layers::Input{4}, layers::Dense{2}, layers::Softmax{}};
  BOOST_TEST(probabilities.signature().outputs[0].meaning == "probabilities");
  BOOST_TEST(probabilities.signature().inputs[0].layout == "NC");
  Sequential values{layers::Input{4}, layers::Dense{1}};
  BOOST_TEST(values.signature().outputs[0].meaning == "values");
  BOOST_TEST(!values.signature().inputs[0].any_image_size);
}

BOOST_AUTO_TEST_CASE(wrong_class_names_and_ranges_are_refused) {
  Sequential model = flowers_model();
  BOOST_CHECK_EXCEPTION(model.set_class_names({"a", "b"}), Error, message_has({"3 entries per sample", "2 names"}));
  BOOST_CHECK_EXCEPTION(model.set_class_names({"a", "b", "c"}, 1), Error, message_has({"1 output, not 2"}));
  BOOST_CHECK_EXCEPTION(model.set_input_range(1, 1), Error, message_has({"[1, 1]"}));
  // A file whose class names do not fit its model names the file and the place.
  test::TempDir dir{"signature_damaged"};
  const std::string path = (dir.path / "m.safetensors").string();
  model.set_class_names({"daisy", "rose", "tulip"});
  model.save(path);
  std::string bytes = read_file(path);
  const std::size_t at = bytes.find("\\\"tulip\\\"");
  BOOST_REQUIRE(at != std::string::npos);
  bytes.replace(at, 9, "\\\"tul\\\"  ");  // same length: one name less is not what changes here
  const std::size_t list = bytes.find("[\\\"daisy\\\",");
  BOOST_REQUIRE(list != std::string::npos);
  bytes.replace(list, 11, std::string("[") + std::string(10, ' '));  // the list now holds two names
  std::ofstream(path, std::ios::binary) << bytes;
  BOOST_CHECK_EXCEPTION(load_model(path), Error, message_has({path, "signature", "3 entries per sample", "2 names"}));
}

BOOST_AUTO_TEST_CASE(fit_takes_the_class_names_of_an_image_folder_and_a_csv_file) {
  test::TempDir dir{"signature_folder"};
  write_image_folder(dir.path / "photos", {"cat", "dog", "owl"}, 2);
  const Dataset photos = datasets::image_folder((dir.path / "photos").string(), {.image_size = 40, .raw_pixels = true});
  BOOST_TEST(photos.class_names() == (std::vector<std::string>{"cat", "dog", "owl"}), boost::test_tools::per_element());
  BOOST_TEST(photos.take(4).split(0.5, 1).first.class_names().size() == 3u);  // subsets keep them
  Sequential model = flowers_model();
  model.fit(photos, {.epochs = 1, .batch_size = 3, .verbose = 0});
  BOOST_TEST(model.class_names() == photos.class_names(), boost::test_tools::per_element());
  // The raw files, at their own sizes, as the model serves them.
  const Tensor x = datasets::read_image_pixels((dir.path / "photos" / "owl" / "1.png").string());
  BOOST_TEST((x.shape() == Shape{3, 25, 37}));
  BOOST_TEST(model.predict(x.reshape(Shape{1, 3, 25, 37})).size(1) == 3);

  const std::string csv = (dir.path / "weather.csv").string();
  std::ofstream(csv) << "temperature,humidity,sky\n21,0.3,sunny\n12,0.9,rain\n15,0.7,cloudy\n25,0.2,sunny\n";
  const Dataset table = datasets::csv(csv, {.target = "sky"});
  BOOST_TEST(table.class_names() == (std::vector<std::string>{"cloudy", "rain", "sunny"}), boost::test_tools::per_element());
  Sequential tabular{layers::Input{2}, layers::Dense{3}};
  tabular.compile(optim::SGD{.lr = 0.01}, losses::CrossEntropy{});
  tabular.fit(table, {.epochs = 1, .batch_size = 2, .verbose = 0});
  BOOST_TEST(tabular.class_names() == table.class_names(), boost::test_tools::per_element());
  // Names the user gave stay.
  Sequential named{layers::Input{2}, layers::Dense{3}};
  named.compile(optim::SGD{.lr = 0.01}, losses::CrossEntropy{});
  named.set_class_names({"c", "r", "s"});
  named.fit(table, {.epochs = 1, .batch_size = 2, .verbose = 0});
  BOOST_TEST(named.class_names() == (std::vector<std::string>{"c", "r", "s"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_onnx_file_states_the_signature_and_can_give_probabilities) {
  Sequential model = flowers_model();
  model.set_input_range(0, 255).set_class_names({"daisy", "rose", "tulip"});
  test::TempDir dir{"signature_onnx"};
  const std::string path = (dir.path / "m.onnx").string();
  model.export_onnx(path, {.softmax = true});
  const std::string bytes = read_file(path);
  BOOST_TEST(bytes.find("accrue.signature") != std::string::npos);
  BOOST_TEST(bytes.find(R"(["daisy","rose","tulip"])") != std::string::npos);
  BOOST_TEST(bytes.find("height") != std::string::npos);
  std::string why;
  if (onnx::onnxruntime_folder(&why).empty()) {
    BOOST_TEST_MESSAGE("SKIPPED: ONNX Runtime comparison: " << why);
    return;
  }
  std::vector<float> raw(2 * 3 * 31 * 45);
  Generator g{5};
  for (float& v : raw) v = static_cast<float>(g.below(256));
  const Tensor x = Tensor::from(raw, {2, 3, 31, 45});
  const Tensor got = onnx::run_onnxruntime(path, {x}).at(0);
  const onnx::Difference d = onnx::compare(got, ops::softmax(model.predict(x), -1));
  BOOST_TEST(d.within, d.str());
}
