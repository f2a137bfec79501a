#include "random.hpp"

#include "error.hpp"
#include "philox.hpp"

namespace accrue {

std::uint32_t Generator::next_u32() {
  const std::uint64_t block = reserve(1);
  return kernels::common::philox4x32_10(seed_, block).v[0];
}

std::uint64_t Generator::below(std::uint64_t n) {
  ACCRUE_CHECK(n > 0, "Generator::below needs a positive bound");
  // Two draws give 64 bits; rejecting the incomplete top range removes the modulo bias.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  for (;;) {
    const std::uint64_t block = reserve(4);
    const auto bits = kernels::common::philox4x32_10(seed_, block);
    const std::uint64_t x = (static_cast<std::uint64_t>(bits.v[0]) << 32) | bits.v[1];
    if (x < limit) return x % n;
  }
}

double Generator::next_double() {
  const std::uint64_t block = reserve(4);
  const auto bits = kernels::common::philox4x32_10(seed_, block);
  const std::uint64_t x = (static_cast<std::uint64_t>(bits.v[0]) << 21) ^ bits.v[1];
  return static_cast<double>(x & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(std::uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace accrue
