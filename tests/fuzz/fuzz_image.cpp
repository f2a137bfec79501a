// PNG and JPEG files through libpng and libjpeg-turbo, to each channel count Accrue converts to.
#include <accrue/accrue.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes{reinterpret_cast<const char*>(data), size};
  for (const int channels : {1, 3, 4}) {
    try {
      // A limit far below the default: an image claiming millions of pixels is refused, not allocated.
      const auto image = accrue::datasets::decode_image(bytes, "fuzz", channels, {.max_pixels = 1 << 20});
      if (image.pixels.size() != static_cast<std::size_t>(image.width * image.height * channels)) __builtin_trap();
    } catch (const accrue::Error&) {
    }
  }
  return 0;
}
