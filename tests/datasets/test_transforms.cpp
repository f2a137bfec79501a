// The transforms against torchvision's functions on the same images and parameters
// (tests/data/make_transform_reference.py), and the randomness that depends on (seed, epoch,
// sample, transform) alone.

#include "../test_util.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

#include <accrue/datasets/transforms.hpp>

using namespace accrue;
using namespace accrue::transforms;
using namespace accrue::test;
using nlohmann::json;

namespace {

const json& reference() {
  static const json j = [] {
    std::ifstream in{std::string(ACCRUE_TEST_DATA_DIR) + "/torchvision_transforms.json"};
    return json::parse(in);
  }();
  return j;
}

Image image_of(const json& j) {
  const auto shape = j["shape"].get<std::vector<std::int64_t>>();
  Image image(shape[0], shape[1], shape[2]);
  const auto values = j["values"].get<std::vector<float>>();
  image.pixels.assign(values.begin(), values.end());
  return image;
}

Interpolation interpolation_of(const std::string& name) {
  return name == "nearest" ? Interpolation::nearest : name == "bicubic" ? Interpolation::bicubic : Interpolation::bilinear;
}

PaddingMode mode_of(const std::string& name) {
  return name == "edge" ? PaddingMode::edge : name == "reflect" ? PaddingMode::reflect
       : name == "symmetric" ? PaddingMode::symmetric : PaddingMode::constant;
}

Image run(const json& c, Image image) {
  const json& p = c["params"];
  const std::string op = p["op"];
  namespace f = functional;
  if (op == "pad") {
    const auto v = p["padding"].get<std::vector<std::int64_t>>();
    const std::int64_t pad[4] = {v[0], v[1], v[2], v[3]};
    return f::pad(image, pad, mode_of(p["mode"]), p["fill"].get<float>());
  }
  if (op == "crop") return f::crop(image, p["top"], p["left"], p["height"], p["width"]);
  if (op == "hflip") return f::hflip(image), image;
  if (op == "vflip") return f::vflip(image), image;
  if (op == "resize")
    return f::resize(image, {p["height"].get<std::int64_t>(), p["width"].get<std::int64_t>()},
                     interpolation_of(p["interpolation"]), p["antialias"].get<bool>());
  if (op == "center_crop") return f::center_crop(image, {p["height"].get<std::int64_t>(), p["width"].get<std::int64_t>()});
  if (op == "brightness") return f::adjust_brightness(image, p["factor"]), image;
  if (op == "contrast") return f::adjust_contrast(image, p["factor"]), image;
  if (op == "saturation") return f::adjust_saturation(image, p["factor"]), image;
  if (op == "hue") return f::adjust_hue(image, p["factor"]), image;
  if (op == "rotate") return f::rotate(image, p["angle"], interpolation_of(p["interpolation"]), p["fill"].get<float>());
  if (op == "normalize") return f::normalize(image, p["mean"], p["std"]), image;
  if (op == "resized_crop") {
    const std::int64_t size = p["size"];
    return f::resize(f::crop(image, p["top"], p["left"], p["height"], p["width"]), size);
  }
  BOOST_FAIL("unknown op " << op);
  return image;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_function_equals_torchvisions_on_the_same_image) {
  const json& ref = reference();
  BOOST_TEST_MESSAGE("reference from torch " << ref["torch"] << ", torchvision " << ref["torchvision"]);
  BOOST_TEST(ref["cases"].size() >= 30u);
  for (const json& c : ref["cases"]) {
    const std::string name = c["name"];
    const Image out = run(c, image_of(ref["images"][c["image"].get<std::string>()]));
    const auto expected = c["values"].get<std::vector<float>>();
    const auto shape = c["shape"].get<std::vector<std::int64_t>>();
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST(out.shape() == Shape(std::span<const std::int64_t>(shape)));
      BOOST_REQUIRE(out.pixels.size() == expected.size());
      double worst = 0;
      for (std::size_t k = 0; k < expected.size(); ++k) worst = std::max(worst, double(std::abs(out.pixels[k] - expected[k])));
      // Well inside one grey level (1/255 = 0.0039): the same arithmetic, in another order.
      BOOST_TEST(worst < 2e-5, name << ": largest difference " << worst);
    }
  }
}

BOOST_AUTO_TEST_CASE(draws_depend_on_seed_epoch_sample_and_transform_alone) {
  const auto first = [](std::uint64_t seed, std::int64_t epoch, std::int64_t sample, int transform) {
    Draws d{seed, epoch, sample, transform};
    return std::pair{d.uniform(), d.below(1000)};
  };
  BOOST_TEST((first(1, 2, 3, 0) == first(1, 2, 3, 0)));
  std::set<std::pair<double, std::int64_t>> seen;
  for (auto [s, e, i, t] : {std::tuple{1, 2, 3, 0}, {2, 2, 3, 0}, {1, 3, 3, 0}, {1, 2, 4, 0}, {1, 2, 3, 1}})
    seen.insert(first(static_cast<std::uint64_t>(s), e, i, t));
  BOOST_TEST(seen.size() == 5u);
  // Uniform and below cover their ranges.
  Draws d{7, 0, 0, 0};
  double low = 1, high = 0;
  std::set<std::int64_t> values;
  for (int k = 0; k < 2000; ++k) {
    const double u = d.uniform();
    low = std::min(low, u), high = std::max(high, u);
    values.insert(d.below(6));
  }
  BOOST_TEST(low < 0.01);
  BOOST_TEST(high > 0.99);
  BOOST_TEST(values.size() == 6u);
}

BOOST_AUTO_TEST_CASE(random_transforms_draw_within_their_ranges) {
  Image image(1, 8, 8);
  for (std::size_t k = 0; k < image.pixels.size(); ++k) image.pixels[k] = static_cast<float>(k);
  // RandomCrop with padding 2 of an 8x8 image to 8x8: every offset in [0, 4]^2 appears, and the
  // crop is that window of the padded image.
  const Compose crop{RandomCrop{8, {.padding = {2}}}};
  std::set<std::pair<std::int64_t, std::int64_t>> offsets;
  for (std::int64_t sample = 0; sample < 400; ++sample) {
    Image out = image;
    crop.apply(out, 3, 0, sample);
    // Locate pixel (0,0)'s value 0 or the largest value to infer the offset.
    const std::int64_t pad[4] = {2, 2, 2, 2};
    const Image padded = functional::pad(image, pad, PaddingMode::constant);
    for (std::int64_t top = 0; top <= 4; ++top)
      for (std::int64_t left = 0; left <= 4; ++left)
        if (functional::crop(padded, top, left, 8, 8).pixels == out.pixels) offsets.insert({top, left});
  }
  BOOST_TEST(offsets.size() == 25u);
  // A flip with p = 0.5 flips about half the samples, the same ones for the same seed and epoch.
  const Compose flip{RandomHorizontalFlip{}};
  int flipped = 0;
  for (std::int64_t sample = 0; sample < 1000; ++sample) {
    Image a = image, b = image;
    flip.apply(a, 11, 4, sample);
    flip.apply(b, 11, 4, sample);
    BOOST_TEST((a.pixels == b.pixels));
    flipped += a.pixels != image.pixels;
  }
  BOOST_TEST(flipped > 430);
  BOOST_TEST(flipped < 570);
}

BOOST_AUTO_TEST_CASE(random_crop_is_the_padded_image_cropped_at_the_drawn_offset) {
  // Constant padding is done as one crop at an offset, other modes pad first: both must equal
  // torchvision's order (pad, then pad_if_needed on each side, then crop at offsets drawn in that
  // order), for asymmetric padding, a fill, and an image too small for the crop.
  Image image(2, 5, 7);
  for (std::size_t k = 0; k < image.pixels.size(); ++k) image.pixels[k] = static_cast<float>(k) + 1.0f;
  for (const PaddingMode mode : {PaddingMode::constant, PaddingMode::edge, PaddingMode::reflect, PaddingMode::symmetric})
    for (const Size2 size : {Size2{6, 8}, Size2{12, 9}}) {
      const RandomCrop crop{size, {.padding = {1, 2, 3, 4}, .pad_if_needed = true, .fill = 7.0f, .padding_mode = mode}};
      for (std::int64_t sample = 0; sample < 50; ++sample) {
        Image out = image;
        Draws draws{5, 1, sample, 0};
        crop.apply(out, draws);
        const std::int64_t pad[4] = {1, 2, 3, 4};
        Image expected = functional::pad(image, pad, mode, 7.0f);
        if (expected.width < size.w) {
          const std::int64_t d = size.w - expected.width, p[4] = {d, 0, d, 0};
          expected = functional::pad(expected, p, mode, 7.0f);
        }
        if (expected.height < size.h) {
          const std::int64_t d = size.h - expected.height, p[4] = {0, d, 0, d};
          expected = functional::pad(expected, p, mode, 7.0f);
        }
        Draws same{5, 1, sample, 0};
        if (expected.height != size.h || expected.width != size.w) {
          const std::int64_t top = same.below(expected.height - size.h + 1), left = same.below(expected.width - size.w + 1);
          expected = functional::crop(expected, top, left, size.h, size.w);
        }
        BOOST_TEST((out.shape() == expected.shape()));
        BOOST_TEST((out.pixels == expected.pixels), "mode " << static_cast<int>(mode) << " " << size.str() << " sample " << sample);
      }
    }
}

BOOST_AUTO_TEST_CASE(output_shapes_follow_torchvision_and_bad_inputs_are_named) {
  BOOST_TEST(Resize::smaller_edge(32).output_shape({3, 40, 80}) == Shape({3, 32, 64}));
  BOOST_TEST(Resize::smaller_edge(32).output_shape({3, 90, 40}) == Shape({3, 72, 32}));
  // As torchvision's Resize: an int sets the shorter side, (h, w) is exact.
  BOOST_TEST(Resize{256}.output_shape({3, 300, 400}) == Shape({3, 256, 341}));
  BOOST_TEST(Resize{256}.output_shape({3, 500, 256}) == Shape({3, 500, 256}));
  BOOST_TEST((Resize{{256, 128}}.output_shape({3, 300, 400}) == Shape({3, 256, 128})));
  BOOST_TEST(Resize{Size2{64}}.output_shape({3, 300, 400}) == Shape({3, 64, 64}));
  // The header's own example: padding as one number.
  const RandomCrop padded{32, {.padding = 4}};
  BOOST_TEST(padded.describe() == RandomCrop(32, {.padding = {4, 4, 4, 4}}).describe());
  BOOST_TEST(padded.describe().find("padding=[4, 4, 4, 4]") != std::string::npos);
  BOOST_TEST(RandomCrop(32, {.padding = {2, 6}}).describe().find("padding=[2, 6, 2, 6]") != std::string::npos);
  BOOST_TEST(RandomResizedCrop{24}.output_shape({3, 40, 80}) == Shape({3, 24, 24}));
  BOOST_TEST(Compose(RandomCrop{32, {.padding = {4}}}, CenterCrop{28}).output_shape({3, 32, 32}) == Shape({3, 28, 28}));
  BOOST_CHECK_EXCEPTION(RandomCrop{40}.output_shape({3, 32, 32}), ShapeError, message_has({"RandomCrop", "32x32", "pad_if_needed"}));
  BOOST_TEST(RandomCrop(40, {.pad_if_needed = true}).output_shape({3, 32, 32}) == Shape({3, 40, 40}));
  BOOST_CHECK_EXCEPTION(Normalize({0.5f}, {0.5f}).output_shape({3, 8, 8}), ShapeError, message_has({"Normalize", "3 channels"}));
  BOOST_CHECK_EXCEPTION(RandomHorizontalFlip{1.5}, ValueError, message_has({"RandomHorizontalFlip", "1.5"}));
  BOOST_CHECK_EXCEPTION(ColorJitter({.hue = 0.7}), ValueError, message_has({"hue", "0.7"}));
  BOOST_CHECK_EXCEPTION(Normalize({0.5f}, {0.0f}), ValueError, message_has({"Normalize", "positive"}));
  // A dataset of vectors cannot be cropped: the error names the dataset and the sample shape.
  const Dataset vectors{Tensor::zeros({4, 10}), Tensor::zeros({4}), "vectors"};
  BOOST_CHECK_EXCEPTION(vectors.map({RandomCrop{4}}), ShapeError, message_has({"vectors", "(C, H, W)", "(10,)"}));
}

BOOST_AUTO_TEST_CASE(a_mapped_dataset_transforms_each_sample_by_its_index_seed_and_epoch) {
  Tensor x = Tensor::uniform({6, 3, 10, 10}, 0.0f, 1.0f);
  const Dataset data{x, Tensor::zeros({6}), "images"};
  const Dataset augmented = data.map({RandomResizedCrop{6}, RandomHorizontalFlip{}, ColorJitter({.brightness = 0.4, .hue = 0.1})});
  BOOST_TEST(!augmented.in_memory());
  BOOST_TEST(augmented.sample_shape() == Shape({3, 6, 6}));
  const std::vector<std::int64_t> all{0, 1, 2, 3, 4, 5}, reversed{5, 4, 3, 2, 1, 0};
  const Tensor a = augmented.gather(all, {.seed = 9, .epoch = 2}).input();
  const Tensor b = augmented.gather(reversed, {.seed = 9, .epoch = 2}).input();
  const Tensor other_epoch = augmented.gather(all, {.seed = 9, .epoch = 3}).input();
  const auto av = a.to_vector<float>(), bv = b.to_vector<float>(), ov = other_epoch.to_vector<float>();
  const std::size_t per = 3 * 6 * 6;
  for (std::size_t i = 0; i < 6; ++i)
    BOOST_TEST(std::equal(av.begin() + i * per, av.begin() + (i + 1) * per, bv.begin() + (5 - i) * per));
  BOOST_TEST((av != ov));
  // The fingerprint names the pipeline: another pipeline over the same data differs.
  BOOST_TEST(augmented.fingerprint() != data.map({RandomHorizontalFlip{}}).fingerprint());
  BOOST_TEST(augmented.fingerprint() == data.map({RandomResizedCrop{6}, RandomHorizontalFlip{},
                                                  ColorJitter({.brightness = 0.4, .hue = 0.1})}).fingerprint());
}

BOOST_AUTO_TEST_CASE(a_lambda_that_changes_the_shape_must_say_so) {
  const Dataset data{Tensor::zeros({2, 1, 4, 4}), Tensor::zeros({2}), "small"};
  const Lambda shrink{"drop a row", [](Image& image, Draws&) { image = functional::crop(image, 0, 0, 3, 4); }};
  const Dataset wrong = data.map({shrink});
  BOOST_CHECK_EXCEPTION(wrong.slice(0, 1), ShapeError, message_has({"small", "sample 0", "drop a row", "output_shape"}));
  const Lambda said{"drop a row", [](Image& image, Draws&) { image = functional::crop(image, 0, 0, 3, 4); },
                    [](const Shape& s) { return Shape{s[0], 3, s[2]}; }};
  BOOST_TEST(data.map({said}).slice(0, 2).input().shape() == Shape({2, 1, 3, 4}));
}
