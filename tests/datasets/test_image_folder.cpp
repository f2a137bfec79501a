// Folders of images: labels from sorted class folders, PNG and JPEG decoded on demand, grey,
// colour and alpha converted as PIL's convert(), resizing, Keras's validation split, and damaged
// files named when their sample is read.

#include <accrue/datasets/image_folder.hpp>
#include <filesystem>
#include <fstream>

#include "test_util.hpp"

using namespace accrue;
using accrue::test::message_has;
namespace fs = std::filesystem;

namespace {

datasets::DecodedImage pattern(std::int64_t w, std::int64_t h, int channels, int seed) {
  datasets::DecodedImage image{w, h, channels, {}};
  for (std::int64_t k = 0; k < w * h * channels; ++k) image.pixels.push_back(static_cast<std::uint8_t>((k * 37 + seed * 11) % 256));
  return image;
}

// cat: 3 PNGs (one RGBA, one grey, one in a nested folder); dog: 2 JPEGs; fish: 1 PNG; plus a
// text file, a .gif and a folder with no images.
struct Zoo {
  test::TempDir dir{"image_folder"};
  Zoo() {
    for (const char* c : {"cat", "dog", "fish", "empty"}) fs::create_directories(dir.path / c);
    fs::create_directories(dir.path / "cat" / "nested");
    datasets::write_png(file("cat/a.png"), pattern(8, 6, 3, 1));
    datasets::write_png(file("cat/b.PNG"), pattern(8, 6, 4, 2));
    datasets::write_png(file("cat/nested/c.png"), pattern(8, 6, 1, 3));
    datasets::write_jpeg(file("dog/d.jpg"), pattern(16, 12, 3, 4), 95);
    datasets::write_jpeg(file("dog/e.jpeg"), pattern(7, 9, 1, 5), 95);
    datasets::write_png(file("fish/f.png"), pattern(5, 5, 3, 6));
    std::ofstream(file("cat/notes.txt")) << "not an image";
    std::ofstream(file("fish/anim.gif")) << "GIF89a";
  }
  std::string file(const std::string& name) const { return (dir.path / name).string(); }
  std::string path() const { return dir.path.string(); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(labels_come_from_sorted_folders_and_images_decode_on_demand) {
  const Zoo zoo;
  BOOST_TEST(datasets::image_folder_classes(zoo.path()) == std::vector<std::string>({"cat", "dog", "empty", "fish"}));
  const Dataset d = datasets::image_folder(zoo.path(), {.image_size = {6, 8}});
  BOOST_TEST(!d.in_memory());
  BOOST_TEST(d.size() == 6);
  BOOST_TEST(d.sample_shape() == Shape({3, 6, 8}));
  BOOST_TEST(d.targets().to_vector<std::int32_t>() == std::vector<std::int32_t>({0, 0, 0, 1, 1, 3}));
  // cat/a.png is 8x6 already: its pixels / 255, as planes.
  const datasets::DecodedImage a = pattern(8, 6, 3, 1);
  const auto x = d[0].inputs.to_vector();
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 48; ++p) BOOST_TEST(x[static_cast<std::size_t>(c * 48 + p)] == a.pixels[static_cast<std::size_t>(p * 3 + c)] / 255.0f);
  // RGBA drops alpha; grey repeats into every channel.
  const datasets::DecodedImage b = pattern(8, 6, 4, 2), g = pattern(8, 6, 1, 3);
  const auto xb = d[1].inputs.to_vector(), xg = d[2].inputs.to_vector();
  BOOST_TEST(xb[47 + 48] == b.pixels[47 * 4 + 1] / 255.0f);
  BOOST_TEST(xg[5] == g.pixels[5] / 255.0f);
  BOOST_TEST(xg[5 + 48] == g.pixels[5] / 255.0f);
  // A JPEG of another size is decoded (lossily) and resized to the asked size.
  const Example dog = d[3];
  BOOST_TEST(dog.inputs.shape() == Shape({1, 3, 6, 8}));
  // Grey output: PIL's luma of the colour images.
  const Dataset grey = datasets::image_folder(zoo.path(), {.image_size = {6, 8}, .channels = 1});
  const float luma = (a.pixels[0] * 19595u + a.pixels[1] * 38470u + a.pixels[2] * 7471u + 0x8000u) / 65536 / 255.0f;
  BOOST_TEST(grey[0].inputs.to_vector()[0] == luma);
  // The fingerprint follows the files: one more image changes it.
  const std::string before = d.fingerprint();
  datasets::write_png(zoo.file("fish/g.png"), pattern(5, 5, 3, 7));
  BOOST_TEST(datasets::image_folder(zoo.path(), {.image_size = {6, 8}}).fingerprint() != before);
  BOOST_TEST(datasets::image_folder(zoo.path(), {.image_size = {6, 8}, .class_names = {"fish", "cat"}})
                 .targets()
                 .to_vector<std::int32_t>() == std::vector<std::int32_t>({0, 0, 1, 1, 1}));  // fish first, as named
}

BOOST_AUTO_TEST_CASE(a_validation_split_is_reproducible_and_disjoint) {
  const Zoo zoo;
  const auto [train, val] = datasets::image_folder_split(zoo.path(), {.image_size = 4, .validation_split = 0.34, .seed = 7});
  BOOST_TEST(train.size() == 4);
  BOOST_TEST(val.size() == 2);  // int(0.34 x 6)
  const auto [again, val_again] = datasets::image_folder_split(zoo.path(), {.image_size = 4, .validation_split = 0.34, .seed = 7});
  BOOST_TEST(val.slice(0, 2).inputs.to_vector() == val_again.slice(0, 2).inputs.to_vector());
  const Dataset only = datasets::image_folder(zoo.path(), {.image_size = 4, .validation_split = 0.34, .subset = datasets::Subset::validation, .seed = 7});
  BOOST_TEST(only.fingerprint() == val.fingerprint());
  BOOST_TEST(train.fingerprint() != val.fingerprint());
  BOOST_CHECK_EXCEPTION(datasets::image_folder(zoo.path(), {.validation_split = 0.2}), ValueError, message_has({"subset"}));
  BOOST_CHECK_EXCEPTION(datasets::image_folder_split(zoo.path(), {.validation_split = 0.1}), IoError,
                        message_has({"validation_split 0.1 of its 6 images leaves the validation subset empty"}));
}

BOOST_AUTO_TEST_CASE(damaged_files_and_bad_folders_are_named) {
  const Zoo zoo;
  const auto write = [&](const std::string& name, const std::string& bytes) { std::ofstream(zoo.file(name), std::ios::binary) << bytes; };
  write("fish/text.png", "this is not a PNG");
  std::ifstream png(zoo.file("cat/a.png"), std::ios::binary), jpg(zoo.file("dog/d.jpg"), std::ios::binary);
  const std::string png_bytes{std::istreambuf_iterator<char>(png), {}}, jpg_bytes{std::istreambuf_iterator<char>(jpg), {}};
  write("fish/truncated.png", png_bytes.substr(0, png_bytes.size() / 2));
  write("fish/truncated.jpg", jpg_bytes.substr(0, jpg_bytes.size() / 2));
  const Dataset d = datasets::image_folder(zoo.path(), {.image_size = 4});
  const auto index_of = [&](const std::string& name) {
    for (std::int64_t i = 0; i < d.size(); ++i)
      try {
        (void)d[i];
      } catch (const IoError& e) {
        if (std::string(e.what()).find(name) != std::string::npos) return i;
      }
    return std::int64_t{-1};
  };
  for (const auto& [name, why] : std::vector<std::pair<std::string, std::string>>{
           {"text.png", "not a PNG or JPEG"}, {"truncated.png", "damaged or truncated PNG"}, {"truncated.jpg", "damaged or truncated JPEG"}}) {
    const std::int64_t i = index_of(name);
    BOOST_TEST_CONTEXT(name) {
      BOOST_REQUIRE(i >= 0);
      BOOST_CHECK_EXCEPTION(d[i], IoError, message_has({name, why}));
    }
  }
  // Read through a loader's background threads, the error reaches the batch that holds it.
  const DataLoader loader{d, {.batch_size = 2}};
  BatchQueue queue{loader, {.workers = 2}};
  bool thrown = false;
  for (std::int64_t b = 0; b < loader.size(); ++b) try {
      (void)queue.get(b);
    } catch (const IoError& e) {
      thrown = std::string(e.what()).find("fish") != std::string::npos;
    }
  BOOST_TEST(thrown);
  BOOST_CHECK_EXCEPTION(datasets::image_folder(zoo.file("absent")), IoError, message_has({"absent", "not a folder"}));
  BOOST_CHECK_EXCEPTION(datasets::image_folder(zoo.file("cat/nested")), IoError, message_has({"nested", "no sub-folders"}));
  BOOST_CHECK_EXCEPTION(datasets::image_folder(zoo.path(), {.class_names = {"cow"}}), IoError, message_has({"'cow'", "cat, dog"}));
  BOOST_CHECK_EXCEPTION(datasets::image_folder(zoo.path(), {.class_names = {"empty"}}), IoError, message_has({"no .png"}));
  // A huge claimed size is refused before anything is allocated.
  datasets::DecodedImage wide{64, 4, 3, datasets::ScratchVector<std::uint8_t>(64 * 4 * 3, 9)};
  datasets::write_png(zoo.file("fish/wide.png"), wide);
  BOOST_CHECK_EXCEPTION(datasets::read_image(zoo.file("fish/wide.png"), 3, {.max_pixels = 100}), IoError,
                        message_has({"wide.png", "64x4", "limit"}));
}

BOOST_AUTO_TEST_CASE(crop_to_aspect_ratio_keeps_the_central_window) {
  const Zoo zoo;
  // dog/d.jpg is 16x12; a square crop takes its central 12x12, then shrinks it to 6x6.
  const Dataset cropped = datasets::image_folder(zoo.path(), {.image_size = 6, .crop_to_aspect_ratio = true, .class_names = {"dog"}});
  const Dataset stretched = datasets::image_folder(zoo.path(), {.image_size = 6, .class_names = {"dog"}});
  BOOST_TEST(cropped[0].inputs.shape() == Shape({1, 3, 6, 6}));
  BOOST_TEST(cropped[0].inputs.to_vector() != stretched[0].inputs.to_vector());
}
