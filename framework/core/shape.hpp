#pragma once
// Shape of a tensor: up to 8 dimensions held inline, so copying a shape never allocates.
// Shape letters used across Accrue: B batch, C classes or channels, N features.

#include <fmt/format.h>

#include "printable.hpp"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>

namespace accrue {

class Shape {
 public:
  static constexpr int max_rank = 8;

  Shape() = default;
  /// Throws ValueError for a negative dimension or more than max_rank dimensions.
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::span<const std::int64_t> dims);

  int rank() const { return rank_; }
  /// Dimension i; negative i counts from the end, as in Python. Throws on out-of-range i.
  std::int64_t operator[](int i) const { return dims_[normalize(i)]; }
  std::int64_t& operator[](int i) { return dims_[normalize(i)]; }
  std::int64_t numel() const;

  const std::int64_t* begin() const { return dims_.data(); }
  const std::int64_t* end() const { return dims_.data() + rank_; }
  std::span<const std::int64_t> dims() const { return {dims_.data(), static_cast<std::size_t>(rank_)}; }

  /// This shape with `d` put in front: the batch shape of a sample shape.
  Shape prepend(std::int64_t d) const;
  /// This shape without its first `n` dimensions: the sample shape of a batch shape.
  Shape drop_front(int n = 1) const;
  /// This shape without its last `n` dimensions.
  Shape drop_back(int n = 1) const;
  void push_back(std::int64_t d);

  /// Resolves a dimension index against this shape's rank (negative counts from the end).
  int normalize(int i) const;

  /// "(64, 784)", and "(64,)" for one dimension, as Python prints tuples.
  std::string str() const;

  friend bool operator==(const Shape& a, const Shape& b);

 private:
  std::array<std::int64_t, max_rank> dims_{};
  int rank_ = 0;
};

inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

/// n / d rounded up, for n >= 0 and d >= 1. Not (n + d - 1) / d, which overflows for a huge d (a
/// batch size of 2^63 - 1 over a dataset is one batch).
constexpr std::int64_t ceil_div(std::int64_t n, std::int64_t d) { return n / d + (n % d != 0 ? 1 : 0); }

/// A size per axis of an image, (height, width): kernel sizes, strides, padding. `3` means (3, 3).
struct Size2 {
  std::int64_t h = 0, w = 0;
  constexpr Size2(std::int64_t both) : h(both), w(both) {}  // NOLINT: 3 reads as (3, 3)
  constexpr Size2(std::int64_t height, std::int64_t width) : h(height), w(width) {}
  friend constexpr bool operator==(const Size2&, const Size2&) = default;
  /// "3" when both agree, "(3, 5)" otherwise.
  std::string str() const;
};

}  // namespace accrue

template <>
struct fmt::formatter<accrue::Shape> : accrue::StrFormatter<accrue::Shape> {};
