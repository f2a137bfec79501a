// Folders of images: labels from sorted class folders, PNG and JPEG decoded on demand, grey,
// colour and alpha converted as PIL's convert(), resizing, Keras's validation split, and damaged
// files named when their sample is read.

#include <accrue/datasets/image_folder.hpp>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;
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

void put_chunk(std::string& png, std::string_view type, std::string_view data) {
  const auto put32 = [&](std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) png.push_back(static_cast<char>((v >> shift) & 0xFF));
  };
  put32(static_cast<std::uint32_t>(data.size()));
  const std::size_t at = png.size();
  png.append(type).append(data);
  put32(static_cast<std::uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(png.data() + at), static_cast<uInt>(png.size() - at))));
}

// A PNG written by hand: arbitrary filtered bytes (every one is valid) behind filter type y % 5 on
// row y, so each filter is exercised against every kind of neighbour; the zlib stream split over
// several IDAT chunks (one empty), with a text chunk before them; `extra` chunks after IHDR.
std::string hand_made_png(std::uint32_t w, std::uint32_t h, int colour, int depth, std::uint32_t seed,
                          const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  const int channels = colour == 0 ? 1 : colour == 2 ? 3 : colour == 3 ? 1 : colour == 4 ? 2 : 4;
  const std::size_t row = (std::size_t{w} * static_cast<std::size_t>(channels * depth) + 7) / 8;
  std::string raw;
  std::uint32_t state = seed;
  for (std::uint32_t y = 0; y < h; ++y) {
    raw.push_back(static_cast<char>(y % 5));
    for (std::size_t i = 0; i < row; ++i) raw.push_back(static_cast<char>((state = state * 1664525u + 1013904223u) >> 24));
  }
  std::string packed(compressBound(static_cast<uLong>(raw.size())), '\0');
  uLongf size = static_cast<uLongf>(packed.size());
  BOOST_REQUIRE(compress2(reinterpret_cast<Bytef*>(packed.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
                          static_cast<uLong>(raw.size()), 6) == Z_OK);
  packed.resize(size);
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string header(13, '\0');
  for (int k = 0; k < 4; ++k) header[static_cast<std::size_t>(k)] = static_cast<char>(w >> (24 - 8 * k));
  for (int k = 0; k < 4; ++k) header[static_cast<std::size_t>(4 + k)] = static_cast<char>(h >> (24 - 8 * k));
  header[8] = static_cast<char>(depth);
  header[9] = static_cast<char>(colour);
  put_chunk(png, "IHDR", header);
  for (const auto& [type, data] : extra) put_chunk(png, type, data);
  put_chunk(png, "tEXt", std::string("Comment\0hand made", 17));
  const std::size_t third = packed.size() / 3;
  put_chunk(png, "IDAT", packed.substr(0, third));
  put_chunk(png, "IDAT", "");
  put_chunk(png, "IDAT", packed.substr(third));
  put_chunk(png, "IEND", "");
  return png;
}

}  // namespace

BOOST_AUTO_TEST_CASE(plain_pngs_decode_without_libpng_exactly_as_libpng_decodes_them) {
  // The common PNGs skip libpng (which inflates a row at a time); everything else is still
  // libpng's. Both must give the same pixels: grey, grey and alpha, RGB, RGBA, widths 1 to 37.
  int decoded = 0;
  for (const int colour : {0, 2, 4, 6})
    for (const std::uint32_t w : {1u, 2u, 5u, 16u, 37u})
      for (const std::uint32_t h : {1u, 3u, 11u}) {
        // As libpng's writer makes them (an sRGB chunk), with sRGB's gamma, or with neither.
        const std::vector<std::pair<std::string, std::string>> colour_chunks[3] = {
            {{"sRGB", std::string(1, '\0')}}, {{"gAMA", std::string("\0\0\xb1\x8f", 4)}}, {}};
        const std::string png = hand_made_png(w, h, colour, 8, w * 131 + h * 7 + static_cast<std::uint32_t>(colour),
                                              colour_chunks[(w + h) % 3]);
        const std::optional<datasets::DecodedImage> plain = datasets::detail::decode_plain_png(png, {});
        BOOST_REQUIRE_MESSAGE(plain, "colour type " << colour << ", " << w << "x" << h);
        const datasets::DecodedImage reference = datasets::detail::decode_png_with_libpng(png, "hand-made", {});
        BOOST_TEST(reference.channels == 4);
        const int c = plain->channels;
        BOOST_TEST(c == (colour == 0 ? 1 : colour == 2 ? 3 : 4));
        std::size_t differing = 0;
        for (std::size_t p = 0; p < std::size_t{w} * h; ++p)
          for (int k = 0; k < 4; ++k) {
            const std::uint8_t expected = reference.pixels[p * 4 + static_cast<std::size_t>(k)];
            const std::uint8_t got = k == 3 && c < 4 ? 255 : plain->pixels[p * static_cast<std::size_t>(c) + static_cast<std::size_t>(c == 1 ? 0 : k)];
            differing += got != expected;
          }
        BOOST_TEST(differing == 0u, "colour type " << colour << ", " << w << "x" << h);
        ++decoded;
      }
  BOOST_TEST(decoded == 60);
  // What the direct path leaves to libpng: other depths, palettes, interlacing, colour management,
  // transparency chunks, a damaged CRC or zlib stream, a missing end.
  BOOST_TEST(!datasets::detail::decode_plain_png(hand_made_png(4, 4, 2, 16, 1), {}));
  BOOST_TEST(!datasets::detail::decode_plain_png(hand_made_png(4, 4, 0, 4, 1), {}));
  BOOST_TEST(!datasets::detail::decode_plain_png(hand_made_png(4, 4, 3, 8, 1, {{"PLTE", std::string(768, '\x10')}}), {}));
  BOOST_TEST(!datasets::detail::decode_plain_png(hand_made_png(4, 4, 2, 8, 1, {{"gAMA", std::string("\0\0\xaf\xc8", 4)}}), {}));
  BOOST_TEST(!datasets::detail::decode_plain_png(hand_made_png(4, 4, 2, 8, 1, {{"iCCP", std::string("p\0\0x", 4)}}), {}));
  BOOST_TEST(!datasets::detail::decode_plain_png(hand_made_png(4, 4, 2, 8, 1, {{"tRNS", std::string(6, '\0')}}), {}));
  std::string interlaced = hand_made_png(4, 4, 2, 8, 1);
  interlaced[8 + 8 + 12] = 1;  // IHDR's interlace byte, and the chunk's CRC to match
  const auto crc = static_cast<std::uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(interlaced.data() + 12), 17));
  for (int k = 0; k < 4; ++k) interlaced[static_cast<std::size_t>(29 + k)] = static_cast<char>(crc >> (24 - 8 * k));
  BOOST_CHECK_EXCEPTION(datasets::detail::decode_png_with_libpng(interlaced, "interlaced", {}), IoError,
                        message_has({"filter"}));  // libpng takes it (the CRC is right); the rows are not in passes
  BOOST_TEST(!datasets::detail::decode_plain_png(interlaced, {}));
  const std::string good = hand_made_png(9, 7, 6, 8, 3);
  BOOST_TEST(datasets::detail::decode_plain_png(good, {}).has_value());
  std::string bad_crc = good;
  bad_crc[bad_crc.size() - 20] ^= 1;  // inside the last IDAT
  BOOST_TEST(!datasets::detail::decode_plain_png(bad_crc, {}));
  BOOST_TEST(!datasets::detail::decode_plain_png(good.substr(0, good.size() - 12), {}));
  BOOST_CHECK_EXCEPTION(datasets::decode_image(bad_crc, "bad.png", 3), IoError, message_has({"bad.png", "PNG"}));
}

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
  const auto x = d[0].input().to_vector();
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 48; ++p) BOOST_TEST(x[static_cast<std::size_t>(c * 48 + p)] == a.pixels[static_cast<std::size_t>(p * 3 + c)] / 255.0f);
  // RGBA drops alpha; grey repeats into every channel.
  const datasets::DecodedImage b = pattern(8, 6, 4, 2), g = pattern(8, 6, 1, 3);
  const auto xb = d[1].input().to_vector(), xg = d[2].input().to_vector();
  BOOST_TEST(xb[47 + 48] == b.pixels[47 * 4 + 1] / 255.0f);
  BOOST_TEST(xg[5] == g.pixels[5] / 255.0f);
  BOOST_TEST(xg[5 + 48] == g.pixels[5] / 255.0f);
  // A JPEG of another size is decoded (lossily) and resized to the asked size.
  const Example dog = d[3];
  BOOST_TEST(dog.input().shape() == Shape({1, 3, 6, 8}));
  // Grey output: PIL's luma of the colour images.
  const Dataset grey = datasets::image_folder(zoo.path(), {.image_size = {6, 8}, .channels = 1});
  const float luma = (a.pixels[0] * 19595u + a.pixels[1] * 38470u + a.pixels[2] * 7471u + 0x8000u) / 65536 / 255.0f;
  BOOST_TEST(grey[0].input().to_vector()[0] == luma);
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
  BOOST_TEST(val.slice(0, 2).input().to_vector() == val_again.slice(0, 2).input().to_vector());
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

BOOST_AUTO_TEST_CASE(sixteen_bit_pngs_and_cmyk_jpegs_decode_as_pil_decodes_them) {
  // tests/data/make_image_reference.py wrote the files and what PIL's convert("RGB") gives.
  const std::string folder = std::string(ACCRUE_TEST_DATA_DIR) + "/images/";
  std::ifstream in(folder + "pil_rgb.json");
  const nlohmann::json pil = nlohmann::json::parse(in);
  for (const auto& [name, expected] : pil.items()) {
    BOOST_TEST_CONTEXT(name << " (PIL mode " << expected.at("mode").get<std::string>() << ")") {
      const datasets::DecodedImage image = datasets::read_image(folder + name, 3);
      std::vector<int> got(image.pixels.begin(), image.pixels.end()), want;
      for (const auto& pixel : expected.at("rgb"))
        for (const auto& v : pixel) want.push_back(v.get<int>());
      // PIL 9 reads a 16-bit grey PNG as 32-bit integers and clips them to 255 converting to RGB;
      // Accrue takes their high byte, as PIL does for 16-bit colour.
      if (name == "grey16.png") want = {128, 128, 128, 3, 3, 3, 255, 255, 255, 0, 0, 0, 0, 0, 0, 127, 127, 127};
      BOOST_TEST(got == want, boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(links_pipes_and_huge_files_in_a_folder) {
  const Zoo zoo;
  // A loop of symbolic links, and a link to a folder above: the rest of the folder is read, each
  // folder once, and what was skipped is said.
  fs::create_symlink("loop_b", zoo.file("cat/loop_a"));
  fs::create_symlink("loop_a", zoo.file("cat/loop_b"));
  fs::create_directory_symlink("..", zoo.file("dog/up"));
  test::CapturedLog log;
  const std::int64_t plain = datasets::image_folder(zoo.path()).size();
  const Dataset linked = datasets::image_folder(zoo.path(), {.follow_links = true});
  BOOST_TEST(linked.size() >= plain);
  BOOST_TEST(log.text().find("entries skipped that cannot be looked at") != std::string::npos, log.text());
  // A FIFO or an oversized file named .png is refused as that, not waited on or read whole.
  const std::string fifo = zoo.file("fish/pipe.png");
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  BOOST_CHECK_EXCEPTION(datasets::read_image(fifo, 3), IoError, message_has({"pipe.png", "not a regular file"}));
  std::filesystem::remove(fifo);
  const std::string big = zoo.file("fish/big.png");
  std::filesystem::copy_file(zoo.file("cat/a.png"), big);
  std::filesystem::resize_file(big, (std::uintmax_t{300} << 20));  // sparse: no disk taken
  BOOST_CHECK_EXCEPTION(datasets::read_image(big, 3), IoError, message_has({"big.png", "over the limit", "max_file_bytes"}));
  std::filesystem::remove(big);
  // A resize as large as a model file's input shape may ask for, checked before it is made.
  set_memory_limit(Device::cpu(), std::size_t{1} << 30);
  BOOST_CHECK_EXCEPTION(datasets::read_image_sample(zoo.file("cat/a.png"), {.image_size = Size2{20000, 20000}}), IoError,
                        message_has({"a.png resized to 20000x20000 needs", "memory limit"}));
  set_memory_limit(Device::cpu(), 0);
}

BOOST_AUTO_TEST_CASE(crop_to_aspect_ratio_keeps_the_central_window) {
  const Zoo zoo;
  // dog/d.jpg is 16x12; a square crop takes its central 12x12, then shrinks it to 6x6.
  const Dataset cropped = datasets::image_folder(zoo.path(), {.image_size = 6, .crop_to_aspect_ratio = true, .class_names = {"dog"}});
  const Dataset stretched = datasets::image_folder(zoo.path(), {.image_size = 6, .class_names = {"dog"}});
  BOOST_TEST(cropped[0].input().shape() == Shape({1, 3, 6, 6}));
  BOOST_TEST(cropped[0].input().to_vector() != stretched[0].input().to_vector());
}
