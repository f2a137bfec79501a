// Keras's preprocessing layers in the model (layers/preprocessing.hpp, layers/augmentation.hpp):
// Rescaling, Resizing and CenterCrop against finite differences and against the image_folder
// resize they must reproduce; the random augmentation layers' semantics, their draws keyed by
// (seed, epoch, sample) and so exact under accumulation and resume; a model of them through its
// file and through ONNX Runtime.

#include "../test_util.hpp"

#include <cmath>
#include <numeric>
#include <set>

#include <accrue/dsl/onnx.hpp>

using namespace accrue;
using namespace accrue::test;
namespace functional = accrue::transforms::functional;

namespace {

// Raw pixels as a model that serves takes them: (C, H, W) floats in [0, 255].
Tensor pixels(const datasets::DecodedImage& d) {
  std::vector<float> v(static_cast<std::size_t>(d.channels * d.height * d.width));
  for (std::int64_t y = 0; y < d.height; ++y)
    for (std::int64_t x = 0; x < d.width; ++x)
      for (int c = 0; c < d.channels; ++c)
        v[static_cast<std::size_t>((c * d.height + y) * d.width + x)] = d.pixels[static_cast<std::size_t>((y * d.width + x) * d.channels + c)];
  return Tensor::from(v, Shape{d.channels, d.height, d.width});
}

transforms::Image as_image(const Tensor& sample) {
  transforms::Image image(sample.size(0), sample.size(1), sample.size(2));
  const std::vector<float> v = sample.to_vector();
  std::copy(v.begin(), v.end(), image.pixels.begin());
  return image;
}

std::vector<float> values(const transforms::Image& image) { return {image.pixels.begin(), image.pixels.end()}; }

// `layer` built for samples of `sample`, run on the batch x.
Tensor run(Layer& layer, const Tensor& x) {
  Generator generator{1};
  layer.ensure_built(x.shape().drop_front(), generator);
  return layer.forward(x);
}

// A batch of images of whole pixel values in [0, 255].
Tensor raw_images(std::int64_t n, const Shape& sample, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n * sample.numel()));
  Generator g{seed};
  for (float& p : v) p = static_cast<float>(g.below(256));
  return Tensor::from(v, sample.prepend(n));
}

std::vector<float> sample_of(const Tensor& batch, std::int64_t i) { return ops::slice(batch, 0, i, i + 1).to_vector(); }

}  // namespace

BOOST_AUTO_TEST_CASE(rescaling_resizing_center_crop_and_normalization_pass_the_layer_check) {
  const auto check = [](const Layer& layer, const Shape& sample, const char* what) {
    const LayerCheckResult r = check_layer(layer, sample);
    BOOST_TEST(r.ok, what << ": " << r.report);
  };
  check(layers::Rescaling{0.5f, {.offset = 1.0f}}, {3, 5, 7}, "Rescaling");
  check(layers::Resizing{{4, 3}}, {2, 9, 8}, "Resizing down, antialiased");
  check(layers::Resizing{{7, 10}, {.interpolation = transforms::Interpolation::bicubic}}, {2, 5, 6}, "Resizing up, bicubic");
  check(layers::Resizing{{3, 5}, {.interpolation = transforms::Interpolation::nearest}}, {1, 6, 4}, "Resizing, nearest");
  check(layers::Resizing{{4, 4}, {.crop_to_aspect_ratio = true, .antialias = false}}, {2, 6, 9}, "Resizing, cropped to 1:1");
  check(layers::CenterCrop{{3, 4}}, {2, 6, 7}, "CenterCrop");
  check(layers::CenterCrop{{8, 4}}, {2, 6, 7}, "CenterCrop of a larger window");
  check(layers::Normalization{{.axis = 0, .mean = {1.0f, -2.0f}, .variance = {4.0f, 0.25f}}}, {2, 3, 3},
        "Normalization per channel");
}

BOOST_AUTO_TEST_CASE(resizing_computes_what_the_image_transforms_compute) {
  const Tensor x = raw_images(2, {3, 37, 50}, 4);
  using I = transforms::Interpolation;
  for (const I interpolation : {I::bilinear, I::bicubic, I::nearest})
    for (const bool antialias : {true, false})
      for (const bool crop : {false, true})
        for (const Size2 size : {Size2{24, 32}, Size2{61, 40}, Size2{37, 20}}) {
          layers::Resizing resizing{size, {.interpolation = interpolation, .crop_to_aspect_ratio = crop, .antialias = antialias}};
          const Tensor y = run(resizing, x);
          BOOST_TEST((y.shape() == Shape{2, 3, size.h, size.w}));
          for (std::int64_t i = 0; i < 2; ++i) {
            transforms::Image image = as_image(ops::slice(x, 0, i, i + 1).reshape(Shape{3, 37, 50}));
            if (crop) {
              const functional::Window w = functional::aspect_ratio_window(37, 50, size);
              image = functional::crop(image, w.top, w.left, w.height, w.width);
            }
            // Pixels up to 255: float32 sums in another order differ by a few units in the last place.
            check_close(sample_of(y, i), values(functional::resize(image, size, interpolation, antialias)), 2e-4, 1e-6,
                        fmt::format("{} antialias={} crop={} to {}", static_cast<int>(interpolation), antialias, crop, size.str()));
          }
        }
}

BOOST_AUTO_TEST_CASE(a_model_resizing_a_file_sees_what_image_folder_made_of_it) {
  test::TempDir dir{"preprocessing_file"};
  datasets::DecodedImage d{.width = 53, .height = 41, .channels = 3, .pixels = {}};
  d.pixels.resize(static_cast<std::size_t>(53 * 41 * 3));
  Generator g{9};
  for (auto& p : d.pixels) p = static_cast<std::uint8_t>(g.below(256));
  const std::string path = (dir.path / "photo.png").string();
  datasets::write_png(path, d);
  for (const bool crop : {false, true}) {
    const Tensor sample = datasets::read_image_sample(path, {.image_size = {24, 20}, .crop_to_aspect_ratio = crop});
    Sequential model{layers::Input{3, 41, 53}, layers::Resizing{{24, 20}, {.crop_to_aspect_ratio = crop}},
                     layers::Rescaling{1.0f / 255}};
    const Tensor served = model.predict(pixels(datasets::read_image(path, 3)).reshape(Shape{1, 3, 41, 53}));
    check_close(served.reshape(sample.shape()), sample, 1e-6, 1e-6, crop ? "cropped to the aspect ratio" : "stretched");
  }
}

BOOST_AUTO_TEST_CASE(center_crop_takes_keras_window_and_resizes_a_smaller_image) {
  std::vector<float> v(5 * 6);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k);
  const Tensor x = Tensor::from(v, {1, 1, 5, 6});
  layers::CenterCrop crop{{3, 3}};
  // Rows (5 - 3) / 2 = 1.., columns (6 - 3) / 2 = 1.. (rounded down, as Keras; torchvision would start at 2).
  BOOST_TEST(run(crop, x).to_vector() == (std::vector<float>{7, 8, 9, 13, 14, 15, 19, 20, 21}), boost::test_tools::per_element());
  layers::CenterCrop larger{{6, 6}};
  layers::Resizing resized{{6, 6}, {.crop_to_aspect_ratio = true}};
  BOOST_TEST(run(larger, x).to_vector() == run(resized, x).to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(preprocessing_computes_in_float32_under_autocast) {
  const Tensor x = raw_images(2, {3, 20, 30}, 5);
  Sequential model{layers::Input{3, 20, 30}, layers::Resizing{{12, 12}, {.crop_to_aspect_ratio = true}},
                   layers::CenterCrop{10}, layers::Rescaling{1.0f / 255}};
  const Tensor plain = model.forward(x);
  const AutocastGuard bf16{DType::bf16};
  const Tensor mixed = model.forward(x);
  BOOST_TEST(mixed.dtype() == DType::f32);
  BOOST_TEST(mixed.to_vector() == plain.to_vector(), boost::test_tools::per_element());
}

// ---- the random augmentation layers ----------------------------------------------------------

namespace {

Sequential augmenting(std::uint64_t seed = 3) {
  manual_seed(seed);
  return Sequential{layers::Input{3, 12, 12},
                    layers::RandomFlip{},
                    layers::RandomRotation{0.05},
                    layers::RandomZoom{0.2},
                    layers::RandomCrop{10},
                    layers::RandomContrast{0.3},
                    layers::RandomBrightness{0.2},
                    layers::Rescaling{1.0f / 255},
                    layers::Flatten{},
                    layers::Dense{16},
                    layers::ReLU{},
                    layers::Dense{4}};
}

// The model's first seven layers (the augmentation) on x, as fit runs them for `samples`.
Tensor augmented(Sequential& model, const Tensor& x, std::uint64_t seed, std::int64_t epoch, std::vector<std::int64_t> samples) {
  const TrainingModeGuard training{model, true};
  const layers::AugmentationKeys keys{seed, epoch, samples};
  Tensor y = x;
  for (std::size_t i = 0; i < 6; ++i) y = model.layer(i).forward(y);
  return y;
}

}  // namespace

BOOST_AUTO_TEST_CASE(augmentation_is_left_out_outside_training) {
  Sequential model = augmenting();
  const Tensor x = raw_images(3, {3, 12, 12}, 6);
  const EvaluationScope evaluation;
  Tensor y = x;
  for (std::size_t i = 0; i < 6; ++i) y = model.layer(i).forward(y);
  // All but RandomCrop pass the images on; RandomCrop takes the central window of its aspect ratio, resized.
  layers::Resizing central{{10, 10}, {.crop_to_aspect_ratio = true}};
  BOOST_TEST(y.to_vector() == run(central, x).to_vector(), boost::test_tools::per_element());
  layers::RandomCrop same{12};
  BOOST_TEST(run(same, x).to_vector() == x.to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_sample_looks_the_same_wherever_it_is_in_a_batch_and_differs_by_epoch_seed_and_sample) {
  Sequential model = augmenting();
  const Tensor x = raw_images(4, {3, 12, 12}, 7);
  const Tensor a = augmented(model, x, 11, 2, {40, 41, 42, 43});
  // The same images as samples 43, 42 (reversed), then alone.
  const Tensor reversed = ops::cat(std::vector<Tensor>{ops::slice(x, 0, 3, 4), ops::slice(x, 0, 2, 3)}, 0);
  const Tensor b = augmented(model, reversed, 11, 2, {43, 42});
  BOOST_TEST(sample_of(b, 0) == sample_of(a, 3), boost::test_tools::per_element());
  BOOST_TEST(sample_of(b, 1) == sample_of(a, 2), boost::test_tools::per_element());
  BOOST_TEST(sample_of(augmented(model, ops::slice(x, 0, 1, 2), 11, 2, {41}), 0) == sample_of(a, 1),
             boost::test_tools::per_element());
  // Another epoch, seed or sample number: other draws.
  BOOST_TEST(augmented(model, x, 11, 3, {40, 41, 42, 43}).to_vector() != a.to_vector());
  BOOST_TEST(augmented(model, x, 12, 2, {40, 41, 42, 43}).to_vector() != a.to_vector());
  BOOST_TEST(sample_of(augmented(model, x, 11, 2, {50, 41, 42, 43}), 0) != sample_of(a, 0));
  // A model loaded from another process's file draws the same (the layers' names key the draws).
  test::TempDir dir{"augmentation_names"};
  model.save((dir.path / "m.safetensors").string());
  Model loaded = load_model((dir.path / "m.safetensors").string());
  const TrainingModeGuard training{loaded, true};
  const std::vector<std::int64_t> samples{40, 41, 42, 43};
  const layers::AugmentationKeys keys{11, 2, samples};
  Tensor y = x;
  for (std::size_t i = 0; i < 6; ++i) y = loaded.layer(i).forward(y);
  BOOST_TEST(y.to_vector() == a.to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(each_augmentation_does_what_keras_describes) {
  const Tensor x = raw_images(200, {2, 6, 6}, 8);
  std::vector<std::int64_t> samples(200);
  std::iota(samples.begin(), samples.end(), 0);
  const auto draw = [&](Layer& layer, const Tensor& in) {
    Generator generator{1};
    layer.ensure_built(in.shape().drop_front(), generator);
    const layers::AugmentationKeys keys{5, 0, samples};
    return layer.forward(in);
  };
  // RandomFlip: each image as it was or mirrored, each way about half the time.
  for (const layers::FlipMode mode : {layers::FlipMode::horizontal, layers::FlipMode::vertical}) {
    layers::RandomFlip flip{mode};
    const Tensor y = draw(flip, x);
    int flipped = 0;
    for (std::int64_t i = 0; i < 200; ++i) {
      transforms::Image mirrored = as_image(ops::slice(x, 0, i, i + 1).reshape(Shape{2, 6, 6}));
      if (mode == layers::FlipMode::horizontal) functional::hflip(mirrored);
      else functional::vflip(mirrored);
      const std::vector<float> got = sample_of(y, i);
      flipped += got == values(mirrored) ? 1 : 0;
      BOOST_TEST((got == values(mirrored) || got == sample_of(x, i)));
    }
    BOOST_TEST(flipped > 70);
    BOOST_TEST(flipped < 130);
  }
  // RandomCrop: a window of the image, at every place over the samples.
  layers::RandomCrop crop{{4, 5}};
  const Tensor cropped = draw(crop, x);
  std::set<std::pair<std::int64_t, std::int64_t>> places;
  for (std::int64_t i = 0; i < 200; ++i) {
    const transforms::Image image = as_image(ops::slice(x, 0, i, i + 1).reshape(Shape{2, 6, 6}));
    for (std::int64_t top = 0; top <= 2; ++top)
      for (std::int64_t left = 0; left <= 1; ++left)
        if (values(functional::crop(image, top, left, 4, 5)) == sample_of(cropped, i)) places.insert({top, left});
  }
  BOOST_TEST(places.size() == 6u);
  // RandomRotation by exactly a quarter turn: counter-clockwise, the top right corner to the top left.
  layers::RandomRotation quarter{{0.25, 0.25}};
  const Tensor turned = draw(quarter, x);
  const std::vector<float> in = sample_of(x, 0), out = sample_of(turned, 0);
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t y = 0; y < 6; ++y)
      for (std::int64_t q = 0; q < 6; ++q)
        BOOST_TEST(out[static_cast<std::size_t>((c * 6 + y) * 6 + q)] ==
                       in[static_cast<std::size_t>((c * 6 + q) * 6 + 5 - y)],
                   boost::test_tools::tolerance(1e-4f));
  // RandomContrast: each channel's distances from its mean scaled by one factor in [0.7, 1.3]
  // (the images lie well inside [0, 255], so nothing is clipped).
  const Tensor mid = ops::affine(x, 0.25f, 96.0f);
  layers::RandomContrast contrast{0.3};
  const Tensor c = draw(contrast, mid);
  for (std::int64_t i = 0; i < 5; ++i) {
    const std::vector<float> a = sample_of(mid, i), b = sample_of(c, i);
    double mean = 0.0;
    for (std::size_t k = 0; k < 36; ++k) mean += a[k];
    mean /= 36.0;
    const double f = (b[0] - mean) / (a[0] - mean);
    BOOST_TEST((f >= 0.7 && f <= 1.3));
    for (std::size_t k = 0; k < 36; ++k) BOOST_TEST(b[k] - mean == f * (a[k] - mean), boost::test_tools::tolerance(1e-3));
  }
  // RandomBrightness: one delta per image, at most 0.2 x 255, clipped to [0, 255].
  layers::RandomBrightness brightness{0.2};
  const Tensor bright = draw(brightness, mid);
  for (std::int64_t i = 0; i < 5; ++i) {
    const std::vector<float> a = sample_of(mid, i), b = sample_of(bright, i);
    const float delta = b[0] - a[0];
    BOOST_TEST(std::abs(delta) <= 51.0f);
    for (std::size_t k = 0; k < a.size(); ++k) BOOST_TEST(b[k] - a[k] == delta, boost::test_tools::tolerance(1e-3f));
  }
  layers::RandomBrightness white{{1.0, 1.0}};
  for (const float v : draw(white, mid).to_vector()) BOOST_TEST(v == 255.0f);
}

BOOST_AUTO_TEST_CASE(zoom_reads_past_the_edges_as_the_fill_mode_says) {
  // One row a b c d zoomed out twice (nearest): x = 0..3 read -2, 1, 3 and 5 (half away from zero).
  const Tensor x = Tensor::from({10.0f, 20.0f, 30.0f, 40.0f}, {1, 1, 1, 4});
  const std::vector<std::int64_t> samples{0};
  const auto zoomed = [&](layers::FillMode mode) {
    layers::RandomZoom zoom{{0.0, 0.0}, layers::FactorRange{1.0, 1.0},
                            {.fill_mode = mode, .interpolation = transforms::Interpolation::nearest, .fill_value = -1.0f}};
    Generator generator{1};
    zoom.ensure_built(Shape{1, 1, 4}, generator);
    const layers::AugmentationKeys keys{0, 0, samples};
    return zoom.forward(x).to_vector();
  };
  using F = layers::FillMode;
  using V = std::vector<float>;
  BOOST_TEST(zoomed(F::reflect) == (V{20, 20, 40, 30}), boost::test_tools::per_element());   // d c b a | a b c d | d c b a
  BOOST_TEST(zoomed(F::wrap) == (V{30, 20, 40, 20}), boost::test_tools::per_element());      // a b c d | a b c d | a b c d
  BOOST_TEST(zoomed(F::nearest) == (V{10, 20, 40, 40}), boost::test_tools::per_element());   // a a a a | a b c d | d d d d
  BOOST_TEST(zoomed(F::constant) == (V{-1, 20, 40, -1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(augmentation_refuses_what_it_cannot_do) {
  layers::RandomFlip flip;
  Tensor x = raw_images(2, {3, 4, 4}, 1);
  x.set_requires_grad(true);
  BOOST_CHECK_EXCEPTION(run(flip, x), Error, message_has({"RandomFlip", "no gradient passes"}));
  layers::RandomZoom zoom{0.1};
  Generator g{1};
  BOOST_CHECK_EXCEPTION(zoom.ensure_built(Shape{12}, g), ShapeError, message_has({"RandomZoom", "(channels, height, width)"}));
  BOOST_CHECK_EXCEPTION(layers::RandomContrast{1.5}, Error, message_has({"[0, 1]"}));
  BOOST_CHECK_EXCEPTION(layers::RandomBrightness({0.5, -0.5}), Error, message_has({"lower first"}));
  BOOST_CHECK_EXCEPTION(layers::RandomRotation(0.1, {.interpolation = transforms::Interpolation::bicubic}), Error,
                        message_has({"nearest or bilinear"}));
  BOOST_CHECK_EXCEPTION(layers::Normalization({.axis = 0, .mean = {1.0f}, .variance = {}}), Error,
                        message_has({"1 means and 0 variances"}));
}

BOOST_AUTO_TEST_CASE(sixteen_times_four_with_augmentation_layers_equals_a_batch_of_64) {
  const Tensor x = raw_images(200, {3, 12, 12}, 9);
  std::vector<std::int32_t> y(200);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>(i % 4);
  const Dataset data{x, Tensor::from(y, {200}), "raw images"};
  Sequential large = augmenting(), accumulated = augmenting();
  large.compile(optim::SGD{.lr = 0.01, .momentum = 0.9}, losses::CrossEntropy{});
  accumulated.compile(optim::SGD{.lr = 0.01, .momentum = 0.9}.accumulate(4), losses::CrossEntropy{});
  FitOptions a{.epochs = 2, .batch_size = 64, .seed = 21, .verbose = 0}, b = a;
  b.batch_size = 16;
  large.fit(data, a);
  accumulated.fit(data, b);
  check_close(large.parameters()[0].to_vector(), accumulated.parameters()[0].to_vector(), 2e-6, 1e-5, "16 x 4 against 64");
  check_close(large.parameters()[3].to_vector(), accumulated.parameters()[3].to_vector(), 2e-6, 1e-5, "16 x 4 against 64");
  Sequential checked = augmenting();
  checked.compile(optim::SGD{.lr = 0.01}.accumulate(4), losses::CrossEntropy{});
  const AccumulationCheck check = verify_accumulation(checked, data, {.micro_batch = 16});
  BOOST_TEST(check.likely_causes.empty(), check.str());
  BOOST_TEST(check.max_relative_difference < 1e-5, check.str());
}

BOOST_AUTO_TEST_CASE(a_run_with_augmentation_layers_killed_inside_an_epoch_resumes_to_the_same_bits) {
  const Tensor x = raw_images(60, {3, 12, 12}, 10);
  std::vector<std::int32_t> y(60);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>(i % 4);
  const Dataset data{x, Tensor::from(y, {60}), "raw images"};
  const auto compiled = [] {
    Sequential m = augmenting();
    m.compile(optim::AdamW{.lr = 1e-2}.accumulate(3), losses::CrossEntropy{});
    return m;
  };
  const FitOptions base{.epochs = 2, .batch_size = 8, .shuffle = true, .seed = 8, .verbose = 0};
  Sequential whole = compiled();
  whole.fit(data, base);
  struct Crash final : Callback {
    std::int64_t seen = 0;
    void on_micro_batch_end(const StepRecord&, const Logs&) override {
      if (++seen == 11) throw std::runtime_error("killed");
    }
  };
  test::TempDir dir{"augmentation_resume"};
  Sequential first = compiled();
  FitOptions o = base;
  o.checkpoint = {.dir = dir.path.string(), .every_micro_batches = 4};
  o.callbacks = {Crash{}};
  BOOST_CHECK_THROW(first.fit(data, o), std::runtime_error);
  Sequential resumed = compiled();
  default_generator().manual_seed(999);  // a fresh process: the model's generator plays no part in the draws
  FitOptions r = base;
  r.checkpoint = {.dir = dir.path.string(), .every_micro_batches = 4};
  resumed.fit(data, r);
  for (std::size_t p = 0; p < whole.parameters().size(); ++p)
    BOOST_TEST(resumed.parameters()[p].to_vector() == whole.parameters()[p].to_vector(), "parameter " << p);
}

BOOST_AUTO_TEST_CASE(a_model_with_preprocessing_comes_back_from_its_file_and_runs_in_onnx_runtime) {
  manual_seed(12);
  const Tensor x = raw_images(7, {3, 30, 40}, 11);
  layers::Normalization norm{{.axis = 0, .mean = {0.485f, 0.456f, 0.406f}, .variance = {0.0524f, 0.0502f, 0.0506f}}};
  Sequential model{layers::Input{3, 30, 40},
                   layers::RandomFlip{layers::FlipMode::horizontal},
                   layers::RandomRotation{0.1, {.fill_mode = layers::FillMode::constant, .fill_value = 3.0f}},
                   layers::RandomZoom{{-0.2, 0.1}, layers::FactorRange{0.1}},
                   layers::Resizing{{20, 24}, {.crop_to_aspect_ratio = true}},
                   layers::RandomCrop{{18, 22}},
                   layers::CenterCrop{{16, 16}},
                   layers::RandomContrast{0.2},
                   layers::RandomBrightness{{-0.1, 0.2}, {.low = 0.0f, .high = 255.0f}},
                   layers::Rescaling{1.0f / 255},
                   norm,
                   layers::Resizing{{9, 7}, {.interpolation = transforms::Interpolation::bicubic, .antialias = false}},
                   layers::Resizing{{5, 5}, {.interpolation = transforms::Interpolation::nearest}},
                   layers::Flatten{},
                   layers::Dense{3}};
  const Tensor expected = model.predict(x);
  test::TempDir dir{"preprocessing_model"};
  const std::string path = (dir.path / "m.safetensors").string();
  model.save(path);
  Model loaded = load_model(path);
  BOOST_TEST(loaded.predict(x).to_vector() == expected.to_vector(), boost::test_tools::per_element());
  for (std::size_t i = 0; i < model.size(); ++i)
    BOOST_TEST(loaded.layer(i).config_lines() == model.layer(i).config_lines(), model.layer(i).describe());

  std::string why;
  if (onnx::onnxruntime_folder(&why).empty()) {
    BOOST_TEST_MESSAGE("SKIPPED: ONNX Runtime comparison: " << why);
    return;
  }
  const std::string onnx_path = (dir.path / "m.onnx").string();
  model.export_onnx(onnx_path);
  const onnx::Difference d = onnx::compare(onnx::run_onnxruntime(onnx_path, {x}).at(0), expected);
  BOOST_TEST_MESSAGE("ONNX Runtime against predict: " << d.str());
  BOOST_TEST(d.within, d.str());
}

// ---- images of any size ----------------------------------------------------------------------

namespace {

// The model's layers run one by one in evaluation on x, as predict would if shapes allowed.
Tensor layer_by_layer(Sequential& model, Tensor x) {
  const EvaluationScope evaluation;
  const NoGradGuard no_grad;
  for (std::size_t i = 0; i < model.size(); ++i) x = model.layer(i).forward(x);
  return x;
}

// Exports `model` and compares ONNX Runtime with predict on images of each size.
void check_any_size_export(Sequential& model, const std::vector<Size2>& sizes, const std::string& what) {
  std::string why;
  if (onnx::onnxruntime_folder(&why).empty()) {
    BOOST_TEST_MESSAGE("SKIPPED: ONNX Runtime comparison of " << what << ": " << why);
    return;
  }
  test::TempDir dir{"any_size_onnx"};
  const std::string path = (dir.path / "m.onnx").string();
  model.export_onnx(path);
  std::uint64_t seed = 20;
  for (const Size2 size : sizes) {
    const Tensor x = raw_images(2, {3, size.h, size.w}, ++seed);
    const onnx::Difference d = onnx::compare(onnx::run_onnxruntime(path, {x}).at(0), model.predict(x));
    BOOST_TEST_MESSAGE(what << " at " << size.str() << ": " << d.str());
    BOOST_TEST(d.within, what << " at " << size.str() << ": " << d.str());
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_model_that_resizes_takes_images_of_any_size) {
  manual_seed(13);
  layers::Normalization norm{{.axis = 0, .mean = {0.5f, 0.4f, 0.3f}, .variance = {0.06f, 0.05f, 0.04f}}};
  Sequential model{layers::Input{3, 24, 32}, layers::RandomFlip{},     layers::Rescaling{1.0f / 255}, norm,
                   layers::Resizing{{16, 16}, {.crop_to_aspect_ratio = true}}, layers::CenterCrop{12},
                   layers::Flatten{},         layers::Dense{4}};
  BOOST_TEST(model.takes_any_image_size());
  for (const Size2 size : {Size2{24, 32}, Size2{41, 53}, Size2{7, 90}}) {
    const Tensor x = raw_images(3, {3, size.h, size.w}, 14);
    BOOST_TEST(model.predict(x).to_vector() == layer_by_layer(model, x).to_vector(), boost::test_tools::per_element());
  }
  BOOST_CHECK_EXCEPTION(model.predict(raw_images(1, {1, 30, 30}, 15)), ShapeError, message_has({"(3, 24, 32)", "(1, 30, 30)"}));
  // A layer that needs the built size before the resize, or no resize at all: that size only.
  Sequential fixed{layers::Input{3, 8, 8}, layers::Conv2d{2, 3}, layers::Resizing{{4, 4}}, layers::Flatten{}, layers::Dense{2}};
  BOOST_TEST(!fixed.takes_any_image_size());
  BOOST_CHECK_EXCEPTION(fixed.predict(raw_images(1, {3, 9, 9}, 16)), ShapeError, message_has({"(3, 8, 8)", "(3, 9, 9)"}));
  Sequential unresized{layers::Input{3, 8, 8}, layers::Rescaling{2.0f}, layers::Flatten{}};
  BOOST_TEST(!unresized.takes_any_image_size());
}

BOOST_AUTO_TEST_CASE(onnx_runtime_resizes_images_of_any_size_as_the_model_does) {
  using I = transforms::Interpolation;
  struct Variant {
    std::string what;
    std::function<void(Sequential&)> add;
  };
  const std::vector<Variant> variants{
      {"Resizing, antialiased bilinear", [](Sequential& m) { m.add(layers::Resizing{{12, 10}}); }},
      {"Resizing, antialiased bicubic", [](Sequential& m) { m.add(layers::Resizing{{12, 10}, {.interpolation = I::bicubic}}); }},
      {"Resizing, bilinear", [](Sequential& m) { m.add(layers::Resizing{{12, 10}, {.antialias = false}}); }},
      {"Resizing, bicubic", [](Sequential& m) { m.add(layers::Resizing{{12, 10}, {.interpolation = I::bicubic, .antialias = false}}); }},
      {"Resizing, nearest", [](Sequential& m) { m.add(layers::Resizing{{12, 10}, {.interpolation = I::nearest}}); }},
      {"Resizing, cropped to the aspect ratio", [](Sequential& m) { m.add(layers::Resizing{{12, 10}, {.crop_to_aspect_ratio = true}}); }},
      {"CenterCrop", [](Sequential& m) { m.add(layers::CenterCrop{{12, 10}}); }},
      {"RandomCrop", [](Sequential& m) { m.add(layers::RandomCrop{{12, 10}}); }},
  };
  for (const Variant& v : variants) {
    manual_seed(17);
    Sequential model{layers::Input{3, 20, 24}, layers::RandomContrast{0.1}, layers::Rescaling{1.0f / 255}};
    v.add(model);
    model.add(layers::Flatten{});
    model.add(layers::Dense{3});
    model.build(Shape{3, 20, 24});
    BOOST_TEST(model.takes_any_image_size(), v.what);
    // The built size, larger, smaller than the window, and of other aspect ratios.
    check_any_size_export(model, {Size2{20, 24}, Size2{33, 17}, Size2{9, 40}, Size2{5, 6}}, v.what);
  }
}
