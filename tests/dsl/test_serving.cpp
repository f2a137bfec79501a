// A model that serves: trained on an image folder with its preprocessing inside it (Resizing,
// CenterCrop, Rescaling, Normalization, random augmentation), then given the raw files at their own
// sizes by the training program itself, by load_model in another "program", and by ONNX Runtime:
// the same probabilities within 1e-5; and several threads answering at once as one does.

#include "../test_util.hpp"

#include <atomic>
#include <thread>

#include <accrue/dsl/onnx.hpp>

using namespace accrue;
using namespace accrue::test;

namespace {

// Photos of three kinds, of several sizes and aspect ratios: each kind brighter in its own channel.
std::vector<std::string> write_photos(const std::filesystem::path& dir) {
  Generator g{6};
  std::vector<std::string> files;
  const std::vector<std::string> kinds{"red", "green", "blue"};
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    std::filesystem::create_directories(dir / kinds[k]);
    for (int i = 0; i < 8; ++i) {
      datasets::DecodedImage d{.width = 24 + 9 * i, .height = 30 + 5 * (i % 3), .channels = 3, .pixels = {}};
      d.pixels.resize(static_cast<std::size_t>(d.width * d.height * 3));
      for (std::size_t p = 0; p < d.pixels.size(); ++p)
        d.pixels[p] = static_cast<std::uint8_t>(g.below(120) + (p % 3 == k ? 120 : 0));
      files.push_back((dir / kinds[k] / fmt::format("{}.png", i)).string());
      datasets::write_png(files.back(), d);
    }
  }
  return files;
}

Sequential photo_model(const Dataset& train) {
  manual_seed(8);
  layers::Normalization normalize{{.axis = 0}};
  Sequential model{layers::Input{3, 36, 36},
                   layers::Resizing{{36, 36}, {.crop_to_aspect_ratio = true}},
                   layers::RandomFlip{layers::FlipMode::horizontal},
                   layers::RandomRotation{0.05},
                   layers::RandomZoom{0.1},
                   layers::RandomContrast{0.2},
                   layers::RandomBrightness{0.1},
                   layers::CenterCrop{32},
                   layers::Rescaling{1.0f / 255},
                   normalize,
                   layers::Conv2d{8, 3, {.stride = 2}},
                   layers::ReLU{},
                   layers::GlobalAvgPool2d{},
                   layers::Dense{3}};
  // The statistics of what reaches it in training, as Keras adapts a Normalization after the
  // layers before it.
  Tensor rescaled = train.to_memory().inputs();
  {
    const EvaluationScope evaluation;
    for (std::size_t i = 0; i < 8; ++i) rescaled = model.layer(i).forward(rescaled);
  }
  model.layer<layers::Normalization>(8).adapt(rescaled);
  model.compile(optim::Adam{.lr = 1e-2}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  model.set_input_range(0, 255);
  return model;
}

// The probabilities of each file, read as it is, one at a time.
std::vector<std::vector<float>> probabilities(Model& model, const std::vector<std::string>& files) {
  std::vector<std::vector<float>> out;
  for (const std::string& f : files) {
    const Tensor x = datasets::read_image_pixels(f);
    out.push_back(ops::softmax(model.predict(x.reshape(x.shape().prepend(1))), -1).to_vector());
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_training_program_a_loaded_model_and_onnx_runtime_answer_alike_on_raw_files) {
  test::TempDir dir{"serving"};
  const std::vector<std::string> files = write_photos(dir.path / "photos");
  const Dataset photos = datasets::image_folder((dir.path / "photos").string(),
                                                {.image_size = 36, .crop_to_aspect_ratio = true, .raw_pixels = true});
  Sequential model = photo_model(photos);
  model.fit(photos, {.epochs = 6, .batch_size = 8, .seed = 2, .verbose = 0});
  BOOST_TEST(model.class_names() == (std::vector<std::string>{"blue", "green", "red"}), boost::test_tools::per_element());
  const std::vector<std::vector<float>> trained = probabilities(model, files);
  // Each file's own class, mostly: the preprocessing the model serves with is the one it learned with.
  int right = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto best = std::max_element(trained[i].begin(), trained[i].end()) - trained[i].begin();
    right += files[i].find("/" + model.class_names()[static_cast<std::size_t>(best)] + "/") != std::string::npos ? 1 : 0;
  }
  BOOST_TEST(right >= 20, right << " of 24 right");

  const std::string path = (dir.path / "photos.safetensors").string();
  model.save(path);
  Model served = load_model(path);
  BOOST_TEST(served.class_names() == model.class_names(), boost::test_tools::per_element());
  const std::vector<std::vector<float>> loaded = probabilities(served, files);
  for (std::size_t i = 0; i < files.size(); ++i) check_close(loaded[i], trained[i], 1e-5, 0.0, files[i] + " loaded");

  std::string why;
  if (onnx::onnxruntime_folder(&why).empty()) {
    BOOST_TEST_MESSAGE("SKIPPED: ONNX Runtime's answers: " << why);
    return;
  }
  const std::string onnx_path = (dir.path / "photos.onnx").string();
  model.export_onnx(onnx_path, {.softmax = true});
  BOOST_TEST(onnx::signature(onnx_path).outputs[0].class_names == model.class_names(), boost::test_tools::per_element());
  BOOST_TEST(!onnx::signature(onnx_path).inputs[0].uint8);
  // The same file taking the decoded bytes as they are (uint8), checked by its own verification.
  const std::string bytes_path = (dir.path / "photos_uint8.onnx").string();
  const OnnxExport exported = model.export_onnx(bytes_path, {.softmax = true, .uint8_pixels = true, .verify = true});
  for (const onnx::Difference& d : exported.verification) BOOST_TEST(d.within, d.str());
  BOOST_TEST(onnx::signature(bytes_path).inputs[0].uint8);
  BOOST_TEST(onnx::signature(bytes_path).str().starts_with("input 'input': uint8 (3, any, any)"), onnx::signature(bytes_path).str());
  double largest = 0.0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const Tensor pixels = datasets::read_image_pixels(files[i]);
    const Tensor x = pixels.reshape(pixels.shape().prepend(1));
    for (const std::string& file : {onnx_path, bytes_path}) {
      const std::vector<float> p = onnx::run_onnxruntime(file, {x}).at(0).to_vector();
      check_close(p, trained[i], 1e-5, 0.0, files[i] + " in ONNX Runtime, " + file);
      for (std::size_t k = 0; k < p.size(); ++k) largest = std::max(largest, static_cast<double>(std::abs(p[k] - trained[i][k])));
    }
  }
  BOOST_TEST_MESSAGE("ONNX Runtime (float32 and uint8 input) against the training program, 24 files of 12 sizes: largest difference "
                     << largest);
  // A value no byte holds is refused, naming the input and the value.
  BOOST_CHECK_EXCEPTION(onnx::run_onnxruntime(bytes_path, {Tensor::full({1, 3, 20, 20}, 0.5f)}), Error,
                        message_has({"input 0 is uint8 in the file", "0.5"}));
}

BOOST_AUTO_TEST_CASE(four_threads_answer_as_one) {
  test::TempDir dir{"serving_threads"};
  const std::vector<std::string> files = write_photos(dir.path / "photos");
  const Dataset photos = datasets::image_folder((dir.path / "photos").string(), {.image_size = 36, .raw_pixels = true});
  Sequential model = photo_model(photos);
  model.fit(photos, {.epochs = 1, .batch_size = 8, .verbose = 0});
  const std::vector<std::vector<float>> alone = probabilities(model, files);
  // Each file asked for five times, by whichever thread is free.
  std::vector<std::vector<float>> answers(files.size() * 5);
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < answers.size();) {
        const Tensor x = datasets::read_image_pixels(files[i % files.size()]);
        answers[i] = ops::softmax(model.predict(x.reshape(x.shape().prepend(1))), -1).to_vector();
      }
    });
  for (std::thread& t : threads) t.join();
  for (std::size_t i = 0; i < answers.size(); ++i)
    BOOST_TEST(answers[i] == alone[i % files.size()], boost::test_tools::per_element());
}
