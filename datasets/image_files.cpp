#include "accrue/datasets/image_files.hpp"

#include <jpeglib.h>
// jerror.h after jpeglib.h, which it needs.
#include <jerror.h>
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "accrue/framework/error.hpp"
#include "accrue/framework/files.hpp"

namespace accrue::datasets {
namespace {

constexpr std::string_view png_magic{"\x89PNG\r\n\x1a\n", 8};
constexpr std::string_view jpeg_magic{"\xFF\xD8\xFF", 3};

void check_size(std::int64_t width, std::int64_t height, const std::string& name, const ImageLimits& limits) {
  if (width <= 0 || height <= 0 || width > limits.max_pixels / height)
    throw IoError(fmt::format("{}: an image of {}x{} pixels (the limit is {} pixels)", name, width, height,
                              limits.max_pixels));
}

DecodedImage decode_png(std::string_view bytes, const std::string& name, const ImageLimits& limits) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  struct Free {
    png_image& image;
    ~Free() { png_image_free(&image); }
  } free{image};
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    throw IoError(fmt::format("{}: not a valid PNG file ({})", name, image.message));
  check_size(image.width, image.height, name, limits);
  // RGBA whatever the file holds (libpng expands palettes, grey and 16 bits); converted to the
  // channels asked for as PIL's convert() does, which torchvision's ImageFolder uses.
  image.format = PNG_FORMAT_RGBA;
  DecodedImage out{image.width, image.height, 4, {}};
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr))
    throw IoError(fmt::format("{}: a damaged or truncated PNG file ({})", name, image.message));
  return out;
}

struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;
};

[[noreturn]] void on_jpeg_error(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

// libjpeg reports through longjmp: nothing with a destructor may live in this frame.
bool decode_jpeg_into(std::string_view bytes, const ImageLimits& limits, DecodedImage& out,
                      JpegError& error, std::string& problem) {
  jpeg_decompress_struct info{};
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = on_jpeg_error;
  // Warnings are not printed; the one that says the data ended early makes the file damaged.
  error.manager.emit_message = [](j_common_ptr info, int level) {
    if (level >= 0) return;
    ++info->err->num_warnings;
    if (info->err->msg_code == JWRN_JPEG_EOF) reinterpret_cast<JpegError*>(info->err)->truncated = true;
  };
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&info);
    problem = error.message;
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&info);
    problem = "a CMYK JPEG (convert it to RGB)";
    return false;
  }
  if (info.image_width == 0 || info.image_height == 0 ||
      static_cast<std::int64_t>(info.image_width) > limits.max_pixels / static_cast<std::int64_t>(info.image_height)) {
    problem = fmt::format("{}x{} pixels, over the limit of {}", info.image_width, info.image_height, limits.max_pixels);
    jpeg_destroy_decompress(&info);
    return false;
  }
  info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&info);
  out.width = info.output_width;
  out.height = info.output_height;
  out.channels = info.output_components;
  out.pixels.resize(static_cast<std::size_t>(out.width * out.height * out.channels));
  while (info.output_scanline < info.output_height) {
    unsigned char* row = out.pixels.data() + static_cast<std::size_t>(info.output_scanline) * out.width * out.channels;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  if (error.truncated) {
    problem = "the file ends before the image does";
    return false;
  }
  return true;
}

DecodedImage decode_jpeg(std::string_view bytes, const std::string& name, const ImageLimits& limits) {
  DecodedImage out;
  JpegError error{};
  std::string problem;
  if (!decode_jpeg_into(bytes, limits, out, error, problem))
    throw IoError(fmt::format("{}: a damaged or truncated JPEG file ({})", name, problem));
  return out;
}

// PIL's convert(): RGB(A) to grey by ITU-R 601-2 luma in its fixed point, alpha dropped or added
// opaque, grey repeated.
DecodedImage converted(DecodedImage in, int channels) {
  if (in.channels == channels) return in;
  DecodedImage out{in.width, in.height, channels, {}};
  const auto n = static_cast<std::size_t>(in.width * in.height);
  out.pixels.resize(n * static_cast<std::size_t>(channels));
  const auto from = static_cast<std::size_t>(in.channels), to = static_cast<std::size_t>(channels);
  for (std::size_t p = 0; p < n; ++p) {
    const std::uint8_t* s = &in.pixels[p * from];
    std::uint8_t* d = &out.pixels[p * to];
    if (to == 1) {
      d[0] = static_cast<std::uint8_t>((s[0] * 19595u + s[1] * 38470u + s[2] * 7471u + 0x8000u) >> 16);
      continue;
    }
    for (std::size_t c = 0; c < 3; ++c) d[c] = from == 1 ? s[0] : s[c];
    if (to == 4) d[3] = from == 4 ? s[3] : 255;
  }
  return out;
}

}  // namespace

bool looks_like_image(std::string_view bytes) { return bytes.starts_with(png_magic) || bytes.starts_with(jpeg_magic); }

DecodedImage decode_image(std::string_view bytes, const std::string& name, int channels, const ImageLimits& limits) {
  ACCRUE_CHECK(channels == 1 || channels == 3 || channels == 4, "images: channels must be 1, 3 or 4, got {}", channels);
  if (bytes.starts_with(png_magic)) return converted(decode_png(bytes, name, limits), channels);
  if (bytes.starts_with(jpeg_magic)) return converted(decode_jpeg(bytes, name, limits), channels);
  throw IoError(fmt::format("{}: not a PNG or JPEG file (it starts with neither's signature)", name));
}

DecodedImage read_image(const std::string& path, int channels, const ImageLimits& limits) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw IoError(fmt::format("{}: cannot open it ({})", path, std::strerror(errno)));
  ScratchVector<char> bytes(static_cast<std::size_t>(in.tellg()));
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<std::size_t>(in.gcount()) != bytes.size()) throw IoError(fmt::format("{}: could not read it whole", path));
  return decode_image({bytes.data(), bytes.size()}, path, channels, limits);
}

namespace {
void check_image(const DecodedImage& image, const std::string& path) {
  ACCRUE_CHECK(image.width > 0 && image.height > 0 &&
                   image.pixels.size() == static_cast<std::size_t>(image.width * image.height * image.channels),
               "{}: an image of {}x{}x{} with {} bytes cannot be written", path, image.width, image.height,
               image.channels, image.pixels.size());
}

// jpeg_stdio_dest's file, closed however writing ends.
bool compress_jpeg(std::FILE* file, const DecodedImage& image, int quality, JpegError& error) {
  jpeg_compress_struct info{};
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = on_jpeg_error;
  if (setjmp(error.jump)) {
    jpeg_destroy_compress(&info);
    return false;
  }
  jpeg_create_compress(&info);
  jpeg_stdio_dest(&info, file);
  info.image_width = static_cast<JDIMENSION>(image.width);
  info.image_height = static_cast<JDIMENSION>(image.height);
  info.input_components = image.channels;
  info.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    auto* row = const_cast<unsigned char*>(image.pixels.data()) +
                static_cast<std::size_t>(info.next_scanline) * static_cast<std::size_t>(image.width * image.channels);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  return true;
}
}  // namespace

void write_png(const std::string& path, const DecodedImage& image) {
  check_image(image, path);
  ACCRUE_CHECK(image.channels == 1 || image.channels == 3 || image.channels == 4,
               "{}: PNG files are written from 1, 3 or 4 channels, not {}", path, image.channels);
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = image.channels == 1 ? PNG_FORMAT_GRAY : image.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  if (!png_image_write_to_file(&png, path.c_str(), 0, image.pixels.data(), 0, nullptr))
    throw IoError(fmt::format("{}: cannot write the PNG file ({})", path, png.message));
}

void write_jpeg(const std::string& path, const DecodedImage& image, int quality) {
  check_image(image, path);
  ACCRUE_CHECK(image.channels == 1 || image.channels == 3, "{}: JPEG files are written from 1 or 3 channels, not {}",
               path, image.channels);
  ACCRUE_CHECK(quality >= 1 && quality <= 100, "{}: JPEG quality {} is not in [1, 100]", path, quality);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) throw IoError(fmt::format("{}: cannot write it ({})", path, std::strerror(errno)));
  JpegError error{};
  const bool written = compress_jpeg(file, image, quality, error);
  const bool closed = std::fclose(file) == 0;
  if (!written) throw IoError(fmt::format("{}: cannot write the JPEG file ({})", path, error.message));
  if (!closed) throw IoError(fmt::format("{}: cannot write it ({})", path, std::strerror(errno)));
}

}  // namespace accrue::datasets
