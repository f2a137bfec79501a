#pragma once
// Seeded random numbers. A Generator is a (seed, offset) pair over the Philox counter-based
// generator: every draw reserves a range of counters, so a run repeats exactly from the same seed,
// and the state is two integers to save in a checkpoint.

#include <cstdint>

namespace accrue {

class Generator {
 public:
  static constexpr std::uint64_t default_seed = 67280421310721ull;

  explicit Generator(std::uint64_t seed = default_seed) : seed_(seed) {}

  /// Restarts the stream from `seed`.
  void manual_seed(std::uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  std::uint64_t seed() const { return seed_; }
  /// Counter blocks used so far.
  std::uint64_t offset() const { return offset_; }
  void set_state(std::uint64_t seed, std::uint64_t offset) {
    seed_ = seed;
    offset_ = offset;
  }

  /// Reserves the counter blocks for `elements` values and returns the first block.
  std::uint64_t reserve(std::uint64_t elements) {
    const std::uint64_t first = offset_;
    offset_ += (elements + 3) / 4;
    return first;
  }

  /// 32 random bits (host-side draws: shuffles, splits).
  std::uint32_t next_u32();
  /// Uniform integer in [0, n), without modulo bias. n must be positive.
  std::uint64_t below(std::uint64_t n);
  /// Uniform in [0, 1).
  double next_double();

 private:
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

/// SplitMix64: spreads nearby seeds (a seed and an epoch, a transform's place) over the whole seed
/// space, so that they give unrelated streams.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// The process-wide generator that layers use for initialisation and dropout unless given one.
Generator& default_generator();
/// Reseeds the default generator, as torch.manual_seed.
void manual_seed(std::uint64_t seed);

}  // namespace accrue
