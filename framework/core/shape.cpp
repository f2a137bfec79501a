#include "shape.hpp"

#include "error.hpp"

namespace accrue {

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::int64_t> dims) {
  ACCRUE_CHECK(dims.size() <= static_cast<std::size_t>(max_rank), "a shape has at most {} dimensions, got {}", max_rank,
               dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    ACCRUE_CHECK(dims[i] >= 0, "dimension {} of a shape is negative ({})", i, dims[i]);
    dims_[i] = dims[i];
  }
  rank_ = static_cast<int>(dims.size());
}

int Shape::normalize(int i) const {
  const int j = i < 0 ? i + rank_ : i;
  ACCRUE_CHECK(j >= 0 && j < rank_, "dimension index {} is out of range for shape {}", i, str());
  return j;
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i)
    if (__builtin_mul_overflow(n, dims_[i], &n)) throw ShapeError(fmt::format("shape {} has more elements than 2^63", str()));
  return n;
}

Shape Shape::prepend(std::int64_t d) const {
  ACCRUE_CHECK(rank_ < max_rank, "cannot add a dimension to {}: at most {} dimensions", str(), max_rank);
  Shape s;
  s.rank_ = rank_ + 1;
  s.dims_[0] = d;
  for (int i = 0; i < rank_; ++i) s.dims_[i + 1] = dims_[i];
  return s;
}

Shape Shape::drop_front(int n) const {
  ACCRUE_CHECK(n >= 0 && n <= rank_, "cannot drop {} dimensions from {}", n, str());
  Shape s;
  s.rank_ = rank_ - n;
  for (int i = 0; i < s.rank_; ++i) s.dims_[i] = dims_[i + n];
  return s;
}

Shape Shape::drop_back(int n) const {
  ACCRUE_CHECK(n >= 0 && n <= rank_, "cannot drop {} dimensions from {}", n, str());
  Shape s;
  s.rank_ = rank_ - n;
  for (int i = 0; i < s.rank_; ++i) s.dims_[i] = dims_[i];
  return s;
}

void Shape::push_back(std::int64_t d) {
  ACCRUE_CHECK(rank_ < max_rank, "cannot add a dimension to {}: at most {} dimensions", str(), max_rank);
  ACCRUE_CHECK(d >= 0, "dimension {} of a shape is negative ({})", rank_, d);
  dims_[rank_++] = d;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < rank_; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims_[i]);
  }
  if (rank_ == 1) s += ",";
  return s + ")";
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i)
    if (a.dims_[i] != b.dims_[i]) return false;
  return true;
}

std::string Size2::str() const { return h == w ? fmt::format("{}", h) : fmt::format("({}, {})", h, w); }

}  // namespace accrue
