#include "image_files.hpp"

#include <jpeglib.h>
// jerror.h after jpeglib.h, which it needs.
#include <jerror.h>
#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "../framework/core/error.hpp"
#include "../framework/core/files.hpp"

namespace accrue::datasets {
namespace {

constexpr std::string_view png_magic{"\x89PNG\r\n\x1a\n", 8};
constexpr std::string_view jpeg_magic{"\xFF\xD8\xFF", 3};

void check_size(std::int64_t width, std::int64_t height, const std::string& name, const ImageLimits& limits) {
  if (width <= 0 || height <= 0 || width > limits.max_pixels / height)
    throw IoError(fmt::format("{}: an image of {}x{} pixels (the limit is {} pixels)", name, width, height,
                              limits.max_pixels));
}

// PNG's five row filters undone in place (filtered bytes in, pixel bytes out), `bpp` bytes per pixel.
bool unfilter(unsigned char* row, const unsigned char* above, std::size_t length, std::size_t bpp, int filter) {
  switch (filter) {
    case 0: return true;
    case 1:
      for (std::size_t i = bpp; i < length; ++i) row[i] = static_cast<unsigned char>(row[i] + row[i - bpp]);
      return true;
    case 2:
      if (above)
        for (std::size_t i = 0; i < length; ++i) row[i] = static_cast<unsigned char>(row[i] + above[i]);
      return true;
    case 3:
      for (std::size_t i = 0; i < length; ++i) {
        const unsigned left = i >= bpp ? row[i - bpp] : 0u, up = above ? above[i] : 0u;
        row[i] = static_cast<unsigned char>(row[i] + ((left + up) >> 1));
      }
      return true;
    case 4:
      for (std::size_t i = 0; i < length; ++i) {
        const int a = i >= bpp ? row[i - bpp] : 0, b = above ? above[i] : 0, c = above && i >= bpp ? above[i - bpp] : 0;
        const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
        row[i] = static_cast<unsigned char>(row[i] + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c));
      }
      return true;
    default: return false;
  }
}

}  // namespace

namespace {

// A plain PNG's header and compressed image data, as decode_plain_png decodes it.
struct PlainPng {
  std::int64_t width = 0, height = 0;
  int channels = 0;
  std::vector<std::string_view> idat;
};

// Chunks: IHDR first, the IDATs in one run, IEND; every CRC checked. Anything with colour
// management other than sRGB, a palette, transparency by chunk, 16 bits or interlacing is libpng's:
// nothing then.
std::optional<PlainPng> plain_png_chunks(std::string_view bytes, const ImageLimits& limits) {
  if (!bytes.starts_with(png_magic)) return std::nullopt;
  std::size_t at = png_magic.size();
  PlainPng png;
  bool header = false, ended = false, in_idat = false, idat_done = false;
  while (!ended) {
    if (bytes.size() - at < 12) return std::nullopt;
    const std::uint32_t length = big_endian_u32(bytes.data() + at);
    if (length > bytes.size() - at - 12) return std::nullopt;
    const std::string_view type = bytes.substr(at + 4, 4), data = bytes.substr(at + 8, length);
    // A chunk type is four ASCII letters (PNG 5.4); libpng refuses anything else, and so must we.
    if (!std::all_of(type.begin(), type.end(), [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }))
      return std::nullopt;
    const auto crc = static_cast<std::uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(bytes.data() + at + 4), length + 4));
    if (crc != big_endian_u32(bytes.data() + at + 8 + length)) return std::nullopt;
    at += 12 + std::size_t{length};
    if (!header) {
      if (type != "IHDR" || length != 13) return std::nullopt;
      png.width = big_endian_u32(data.data());
      png.height = big_endian_u32(data.data() + 4);
      const int depth = data[8], colour = data[9];
      png.channels = colour == 0 ? 1 : colour == 2 ? 3 : colour == 4 ? 2 : colour == 6 ? 4 : 0;
      if (depth != 8 || png.channels == 0 || data[10] != 0 || data[11] != 0 || data[12] != 0) return std::nullopt;
      // libpng's own limit on each side is a million pixels.
      if (png.width <= 0 || png.height <= 0 || png.width > 1000000 || png.height > 1000000 ||
          png.width > limits.max_pixels / png.height)
        return std::nullopt;
      header = true;
    } else if (type == "IDAT") {
      if (idat_done) return std::nullopt;
      in_idat = true;
      png.idat.push_back(data);
    } else {
      idat_done = in_idat;
      if (type == "IEND") ended = true;
      // sRGB (which libpng's writer adds) and sRGB's gamma change nothing for 8-bit output.
      else if (type == "gAMA" ? data != std::string_view("\0\0\xb1\x8f", 4)
                              : type == "IHDR" || type == "PLTE" || type == "tRNS" || type == "cHRM" || type == "iCCP" ||
                                    type == "sBIT" || std::isupper(static_cast<unsigned char>(type[0])))
        return std::nullopt;
    }
  }
  if (!in_idat) return std::nullopt;
  return png;
}

// The IDATs inflated at once into `raw`, which must come out exactly full (libpng inflates a row at
// a time, which keeps zlib off its fast path for small images).
bool inflate_whole(const std::vector<std::string_view>& idat, ScratchVector<unsigned char>& raw) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return false;
  z.next_out = raw.data();
  z.avail_out = static_cast<uInt>(raw.size());
  int status = Z_OK;
  for (std::size_t k = 0; k < idat.size() && status == Z_OK; ++k) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(idat[k].data()));
    z.avail_in = static_cast<uInt>(idat[k].size());
    status = inflate(&z, k + 1 == idat.size() ? Z_FINISH : Z_NO_FLUSH);
    if (status == Z_BUF_ERROR && z.avail_in == 0 && k + 1 < idat.size()) status = Z_OK;  // an empty IDAT
    if (status == Z_STREAM_END && (z.avail_in != 0 || k + 1 != idat.size())) status = Z_DATA_ERROR;  // data after the stream
  }
  const bool whole = status == Z_STREAM_END && z.avail_out == 0;
  inflateEnd(&z);
  return whole;
}

}  // namespace

namespace detail {

std::optional<DecodedImage> decode_plain_png(std::string_view bytes, const ImageLimits& limits) {
  const std::optional<PlainPng> png = plain_png_chunks(bytes, limits);
  if (!png) return std::nullopt;
  const std::int64_t width = png->width, height = png->height;
  const int channels = png->channels;
  // The whole image inflated, then unfiltered row by row into place.
  const auto row_bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  if (static_cast<std::size_t>(height) * (row_bytes + 1) > UINT32_MAX) return std::nullopt;
  ScratchVector<unsigned char> raw(static_cast<std::size_t>(height) * (row_bytes + 1));
  if (!inflate_whole(png->idat, raw)) return std::nullopt;
  const int out_channels = channels == 2 ? 4 : channels;
  DecodedImage out{width, height, out_channels, ScratchVector<std::uint8_t>(static_cast<std::size_t>(width * height * out_channels))};
  const unsigned char* above = nullptr;
  for (std::int64_t y = 0; y < height; ++y) {
    unsigned char* row = raw.data() + static_cast<std::size_t>(y) * (row_bytes + 1);
    if (!unfilter(row + 1, above, row_bytes, static_cast<std::size_t>(channels), row[0])) return std::nullopt;
    above = row + 1;
    std::uint8_t* to = out.pixels.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(width * out_channels);
    if (channels != 2) {
      std::memcpy(to, row + 1, row_bytes);
      continue;
    }
    for (std::int64_t x = 0; x < width; ++x, to += 4)  // grey and alpha as libpng gives them: grey repeated
      to[0] = to[1] = to[2] = row[1 + 2 * x], to[3] = row[2 + 2 * x];
  }
  return out;
}

namespace {

// libpng's classic reader over bytes in memory. It reports errors by longjmp, so each step that
// may fail runs in a frame of its own with nothing to destroy (png_begin, png_finish), and what
// outlives them is plain data.
struct PngReading {
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::string_view bytes;
  std::size_t at = 0;
  char message[256] = {};
  png_uint_32 width = 0, height = 0;
};

void png_read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReading*>(png_get_io_ptr(png));
  if (r->bytes.size() - r->at < n) png_error(png, "the file ends before the image does");
  std::memcpy(out, r->bytes.data() + r->at, n);
  r->at += n;
}

[[noreturn]] void png_failed(png_structp png, png_const_charp message) {
  auto* r = static_cast<PngReading*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof r->message, "%s", message);
  png_longjmp(png, 1);
}

// Reads the header and sets the transforms to 8-bit RGBA: palettes, low bit depths and tRNS
// expanded, 16 bits to their high byte (as PIL reads 16-bit PNGs), grey repeated, opaque alpha
// added. No gamma is applied, as PIL applies none: libpng's simplified API converts 16-bit and
// gAMA-tagged files to sRGB, which made a 16-bit mid-grey 186 where PIL gives 128.
bool png_begin(PngReading& r) {
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, png_failed, [](png_structp, png_const_charp) {});
  if (r.png == nullptr) return false;
  r.info = png_create_info_struct(r.png);
  if (r.info == nullptr || setjmp(png_jmpbuf(r.png))) return false;
  png_set_read_fn(r.png, &r, png_read_bytes);
  png_read_info(r.png, r.info);
  r.width = png_get_image_width(r.png, r.info);
  r.height = png_get_image_height(r.png, r.info);
  const int colour = png_get_color_type(r.png, r.info);
  png_set_expand(r.png);
  if (png_get_bit_depth(r.png, r.info) == 16) png_set_strip_16(r.png);
  if ((colour & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(r.png);
  if ((colour & PNG_COLOR_MASK_ALPHA) == 0 && png_get_valid(r.png, r.info, PNG_INFO_tRNS) == 0)
    png_set_filler(r.png, 0xFF, PNG_FILLER_AFTER);
  png_set_interlace_handling(r.png);
  png_read_update_info(r.png, r.info);
  if (png_get_rowbytes(r.png, r.info) != std::size_t{r.width} * 4) png_error(r.png, "unexpected row size after conversion");
  return true;
}

bool png_finish(PngReading& r, png_bytepp rows) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_read_image(r.png, rows);
  png_read_end(r.png, nullptr);
  return true;
}

}  // namespace

DecodedImage decode_png_with_libpng(std::string_view bytes, const std::string& name, const ImageLimits& limits) {
  PngReading r;
  r.bytes = bytes;
  struct Free {
    PngReading& r;
    ~Free() { png_destroy_read_struct(&r.png, r.info != nullptr ? &r.info : nullptr, nullptr); }
  } free{r};
  if (!png_begin(r)) throw IoError(fmt::format("{}: not a valid PNG file ({})", name, r.message));
  check_size(r.width, r.height, name, limits);
  DecodedImage out{r.width, r.height, 4, {}};
  out.pixels.resize(std::size_t{r.width} * r.height * 4);
  std::vector<png_bytep> rows(r.height);
  for (png_uint_32 y = 0; y < r.height; ++y) rows[y] = out.pixels.data() + std::size_t{y} * r.width * 4;
  if (!png_finish(r, rows.data())) throw IoError(fmt::format("{}: a damaged or truncated PNG file ({})", name, r.message));
  return out;
}

}  // namespace detail

namespace {

DecodedImage decode_png(std::string_view bytes, const std::string& name, const ImageLimits& limits) {
  if (auto plain = detail::decode_plain_png(bytes, limits)) return std::move(*plain);
  return detail::decode_png_with_libpng(bytes, name, limits);
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
  if (info.image_width == 0 || info.image_height == 0 ||
      static_cast<std::int64_t>(info.image_width) > limits.max_pixels / static_cast<std::int64_t>(info.image_height)) {
    problem = fmt::format("{}x{} pixels, over the limit of {}", info.image_width, info.image_height, limits.max_pixels);
    jpeg_destroy_decompress(&info);
    return false;
  }
  // CMYK (and YCCK, which libjpeg turns into CMYK) is converted to RGB afterwards, as PIL does.
  const bool cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
  info.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
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

// PIL's reading of a CMYK JPEG: its bytes inverted (Adobe's convention, which PIL assumes for
// every CMYK JPEG), then to RGB as PIL's convert() does: each channel (255 - ink) x (255 - black)
// / 255, rounded as its MULDIV255.
DecodedImage cmyk_to_rgb(const DecodedImage& in) {
  DecodedImage out{in.width, in.height, 3, {}};
  const auto n = static_cast<std::size_t>(in.width * in.height);
  out.pixels.resize(n * 3);
  const auto muldiv255 = [](unsigned a, unsigned b) {
    const unsigned t = a * b + 128;
    return ((t >> 8) + t) >> 8;
  };
  for (std::size_t p = 0; p < n; ++p) {
    const std::uint8_t* s = &in.pixels[p * 4];
    const unsigned white = s[3];  // 255 - black, black stored inverted
    for (std::size_t c = 0; c < 3; ++c) {
      const unsigned ink = 255u - s[c];
      out.pixels[p * 3 + c] = static_cast<std::uint8_t>(white - muldiv255(ink, white));
    }
  }
  return out;
}

DecodedImage decode_jpeg(std::string_view bytes, const std::string& name, const ImageLimits& limits) {
  DecodedImage out;
  JpegError error{};
  std::string problem;
  if (!decode_jpeg_into(bytes, limits, out, error, problem))
    throw IoError(fmt::format("{}: a damaged or truncated JPEG file ({})", name, problem));
  return out.channels == 4 ? cmyk_to_rgb(out) : out;
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
  // A regular file of a bounded size: a FIFO, a device or a sparse file of gigabytes named .png is
  // refused before anything is read.
  require_readable_file(path, "image");
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(fmt::format("{}: cannot find its size ({})", path, ec.message()));
  if (size > limits.max_file_bytes)
    throw IoError(fmt::format("{}: {} bytes, over the limit of {} for an image file (ImageLimits::max_file_bytes)", path,
                              size, limits.max_file_bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot open it ({})", path, std::strerror(errno)));
  ScratchVector<char> bytes(static_cast<std::size_t>(size));
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
