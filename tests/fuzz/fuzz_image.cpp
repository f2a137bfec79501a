// PNG and JPEG files through libpng and libjpeg-turbo, to each channel count Accrue converts to;
// and the PNGs Accrue decodes without libpng decoded by libpng too, which must give the same pixels.
#include <accrue/accrue.hpp>
#include <zlib.h>

#include <string>

namespace {

void same_as_libpng(std::string_view bytes, const accrue::datasets::ImageLimits& limits) {
  const auto plain = accrue::datasets::detail::decode_plain_png(bytes, limits);
  if (!plain) return;
  accrue::datasets::DecodedImage reference;
  try {
    reference = accrue::datasets::detail::decode_png_with_libpng(bytes, "fuzz", limits);
  } catch (const accrue::Error&) {
    __builtin_trap();  // accepted without libpng, refused by it
  }
  const auto c = static_cast<std::size_t>(plain->channels);
  if (plain->width != reference.width || plain->height != reference.height) __builtin_trap();
  for (std::size_t p = 0; p < static_cast<std::size_t>(plain->width * plain->height); ++p)
    for (std::size_t k = 0; k < 4; ++k) {
      const std::uint8_t got = k == 3 && c < 4 ? 255 : plain->pixels[p * c + (c == 1 ? 0 : k)];
      if (got != reference.pixels[p * 4 + k]) __builtin_trap();
    }
}

// The bytes with every chunk's CRC made right, so that mutations inside a chunk reach the decoders
// rather than stopping at the CRC.
std::string with_right_crcs(std::string_view bytes) {
  std::string png{bytes};
  std::size_t at = 8;
  while (png.size() >= at + 12) {
    const auto* u = reinterpret_cast<const unsigned char*>(png.data() + at);
    const std::size_t length = std::size_t{u[0]} << 24 | std::size_t{u[1]} << 16 | std::size_t{u[2]} << 8 | u[3];
    if (length > png.size() - at - 12) break;
    const auto crc = static_cast<std::uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(png.data() + at + 4), static_cast<uInt>(length + 4)));
    for (int k = 0; k < 4; ++k) png[at + 8 + length + static_cast<std::size_t>(k)] = static_cast<char>(crc >> (24 - 8 * k));
    at += 12 + length;
  }
  return png;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes{reinterpret_cast<const char*>(data), size};
  // A limit far below the default: an image claiming millions of pixels is refused, not allocated.
  const accrue::datasets::ImageLimits limits{.max_pixels = 1 << 20};
  same_as_libpng(bytes, limits);
  if (bytes.starts_with("\x89PNG")) same_as_libpng(with_right_crcs(bytes), limits);
  for (const int channels : {1, 3, 4}) {
    try {
      const auto image = accrue::datasets::decode_image(bytes, "fuzz", channels, limits);
      if (image.pixels.size() != static_cast<std::size_t>(image.width * image.height * channels)) __builtin_trap();
    } catch (const accrue::Error&) {
    }
  }
  return 0;
}
