#pragma once
// PNG and JPEG files decoded to 8-bit pixels as PIL (and so torchvision) decodes them (and
// written, for tests, examples and looking at augmented samples): libpng (every bit depth,
// palette, grey, alpha, transparency and interlaced PNGs; 16 bits read as their high byte, no
// gamma applied, as PIL does) and libjpeg-turbo (baseline and progressive JPEGs, grey, YCbCr, and
// CMYK converted to RGB with PIL's formula). The format is told by the file's first bytes, not its
// name. One difference from PIL 9: it reads a 16-bit grey PNG as 32-bit integers and clips them to
// 255 when converting; Accrue takes their high byte, as PIL does for 16-bit colour.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scratch.hpp"

namespace accrue::datasets {

/// Pixels row-major, `channels` interleaved per pixel: 1 grey, 3 RGB, 4 RGBA.
struct DecodedImage {
  std::int64_t width = 0, height = 0;
  int channels = 0;
  ScratchVector<std::uint8_t> pixels;
};

struct ImageLimits {
  /// Images claiming more pixels than this are refused before anything is allocated.
  std::int64_t max_pixels = std::int64_t{1} << 26;
  /// Files larger than this are refused before they are read (the largest image of max_pixels,
  /// stored without compression, is 256 MiB).
  std::uint64_t max_file_bytes = std::uint64_t{256} << 20;
};

/// Whether `bytes` start as a PNG or a JPEG file does.
bool looks_like_image(std::string_view bytes);
/// Decodes `bytes` (a whole PNG or JPEG file) to `channels` (1, 3 or 4): colour to grey as libpng
/// and libjpeg do it, grey to colour by repetition, alpha dropped or added opaque. Throws IoError
/// naming `name` for anything not a complete, valid image.
DecodedImage decode_image(std::string_view bytes, const std::string& name, int channels, const ImageLimits& limits = {});
/// The file at `path`, read and decoded.
DecodedImage read_image(const std::string& path, int channels, const ImageLimits& limits = {});
/// Writes `image` (1, 3 or 4 channels) as an 8-bit PNG file, replacing what is there.
void write_png(const std::string& path, const DecodedImage& image);
/// Writes `image` (1 or 3 channels) as a baseline JPEG file of `quality` (1 to 100).
void write_jpeg(const std::string& path, const DecodedImage& image, int quality = 90);

namespace detail {
/// The common PNGs (8-bit grey, grey and alpha, RGB or RGBA, not interlaced, in sRGB or without
/// colour management, without palette or transparency chunks, every CRC and the zlib stream intact) decoded without
/// libpng, as libpng would decode them (grey and alpha as RGBA); anything else is nullopt.
std::optional<DecodedImage> decode_plain_png(std::string_view bytes, const ImageLimits& limits);
/// libpng's decoding of any PNG to RGBA; throws IoError naming `name` for a damaged file.
DecodedImage decode_png_with_libpng(std::string_view bytes, const std::string& name, const ImageLimits& limits);
}  // namespace detail

}  // namespace accrue::datasets
