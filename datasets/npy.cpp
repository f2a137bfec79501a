#include "npy.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <fstream>
#include <numeric>
#include <optional>

#include "../framework/core/error.hpp"
#include "../framework/core/files.hpp"
#include "../framework/core/memory.hpp"
#include "../framework/ops/ops.hpp"
#include "../framework/core/utf8.hpp"

namespace accrue::datasets {
namespace {

// What the header says.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  bool has_descr = false, has_order = false, has_shape = false;
};

// The header's dict literal, read as Python writes it; errors give the byte offset in the file.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, std::string_view text, std::size_t offset)
      : path_(path), text_(text), offset_(offset) {}

  Header parse() {
    Header h;
    expect('{');
    while (skip_spaces(), peek() != '}') {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        h.descr = string_literal();
        h.has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        h.has_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        h.has_shape = true;
      } else {
        fail(fmt::format("unknown key {} (a .npy header has descr, fortran_order and shape)", printable_excerpt(key)));
      }
      skip_spaces();
      if (peek() == ',') ++at_;
    }
    if (!h.has_descr || !h.has_order || !h.has_shape) fail("the header lacks descr, fortran_order or shape");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw IoError(fmt::format("{}: byte {} of the .npy header: {}", path_, offset_ + at_, what));
  }
  void skip_spaces() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t')) ++at_;
  }
  char peek() {
    if (at_ >= text_.size()) fail("the header ends inside its dict");
    return text_[at_];
  }
  void expect(char c) {
    skip_spaces();
    if (peek() != c) fail(fmt::format("{} where '{}' belongs", printable_excerpt(text_.substr(at_, 1)), c));
    ++at_;
  }
  std::string string_literal() {
    skip_spaces();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("a key or descr that is not a quoted string");
    const std::size_t end = text_.find(quote, at_ + 1);
    if (end == std::string_view::npos) fail("a string without its closing quote");
    std::string s{text_.substr(at_ + 1, end - at_ - 1)};
    at_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_spaces();
    if (text_.substr(at_, 4) == "True") return at_ += 4, true;
    if (text_.substr(at_, 5) == "False") return at_ += 5, false;
    fail("fortran_order is neither True nor False");
  }
  std::vector<std::int64_t> tuple() {
    expect('(');
    std::vector<std::int64_t> dims;
    while (skip_spaces(), peek() != ')') {
      std::int64_t d = 0;
      const std::size_t start = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
        if (__builtin_mul_overflow(d, 10, &d) || __builtin_add_overflow(d, text_[at_] - '0', &d))
          fail("a dimension too large for 64 bits");
        ++at_;
      }
      if (at_ == start) fail("a dimension that is not a non-negative whole number");
      if (dims.size() == static_cast<std::size_t>(Shape::max_rank))
        fail(fmt::format("more than {} dimensions", Shape::max_rank));
      dims.push_back(d);
      skip_spaces();
      if (peek() == ',') ++at_;
    }
    ++at_;
    return dims;
  }

  const std::string& path_;
  std::string_view text_;
  std::size_t offset_, at_ = 0;
};

// How the file stores its elements, and the Accrue dtype they are read as.
struct Stored {
  DType dtype;             // what the tensor holds
  std::size_t size;        // bytes per element in the file
  char kind;               // 'f' float, 'i' signed integer
  bool swap;               // big-endian in the file
  bool converts() const { return size != dtype_size(dtype); }
};

// The descr ('<f4', '>i8', '=f2', ...): float32, float16 and int32 as they are; float64 read as
// float32 and int64 as int32 (NumPy's defaults, which Keras casts to its compute type too).
Stored stored_of_descr(const std::string& path, const std::string& descr) {
  static const std::vector<std::pair<std::string, DType>> types = {
      {"f4", DType::f32}, {"f2", DType::f16}, {"i4", DType::i32}, {"f8", DType::f32}, {"i8", DType::i32}};
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '>' || descr[0] == '='))
    for (const auto& [code, dtype] : types)
      if (descr.substr(1) == code) return {dtype, static_cast<std::size_t>(code[1] - '0'), code[0], descr[0] == '>'};
  throw IoError(fmt::format("{}: its dtype {} is not one Accrue reads (float32 '<f4', float64 '<f8' as float32, float16 "
                            "'<f2', int32 '<i4', int64 '<i8' as int32, either byte order); save it with "
                            "array.astype(numpy.float32) or .astype(numpy.int32)",
                            path, printable_excerpt(descr)));
}

// Elements [first, first + n) of the file's `raw` bytes into `out` as float32 or int32: a float64
// beyond float32's range or an int64 beyond int32's is refused by its index, not turned into inf or
// wrapped around.
void convert(const Stored& s, const unsigned char* raw, std::uint64_t n, std::uint64_t first, void* out,
             const std::string& path) {
  for (std::uint64_t i = 0; i < n; ++i) {
    unsigned char b[8];
    std::memcpy(b, raw + i * 8, 8);
    if (s.swap) std::reverse(b, b + 8);
    if (s.kind == 'f') {
      double v;
      std::memcpy(&v, b, 8);
      if (std::isfinite(v) && std::abs(v) > static_cast<double>(std::numeric_limits<float>::max()))
        throw IoError(fmt::format("{}: element {} is {:g}, beyond float32's range (about 3.4e38)", path, first + i, v));
      static_cast<float*>(out)[i] = static_cast<float>(v);
    } else {
      std::int64_t v;
      std::memcpy(&v, b, 8);
      if (!std::in_range<std::int32_t>(v))
        throw IoError(fmt::format("{}: element {} is {}, beyond int32's range (Accrue reads int64 arrays as int32)", path,
                                  first + i, v));
      static_cast<std::int32_t*>(out)[i] = static_cast<std::int32_t>(v);
    }
  }
}

// The bytes of a .npy file, from a stream or from memory: read(dst, n) gives how many it copied.
struct FileBytes {
  std::ifstream& in;
  std::size_t read(void* dst, std::size_t n) {
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    return static_cast<std::size_t>(in.gcount());
  }
};
struct MemoryBytes {
  std::string_view bytes;
  std::size_t read(void* dst, std::size_t n) {
    n = std::min(n, bytes.size());
    std::memcpy(dst, bytes.data(), n);
    bytes.remove_prefix(n);
    return n;
  }
};

template <class Bytes>
Tensor parse_npy(Bytes in, std::uint64_t file_size, const std::string& path, const NpyLimits& limits) {
  char lead[12] = {};
  if (in.read(lead, 10) < 10 || std::memcmp(lead, "\x93NUMPY", 6) != 0)
    throw IoError(fmt::format("{}: not a .npy file (it does not start with \\x93NUMPY)", path));
  const int major = static_cast<unsigned char>(lead[6]);
  if (major < 1 || major > 3)
    throw IoError(fmt::format("{}: .npy version {} (Accrue reads versions 1 to 3)", path, major));
  std::uint32_t header_bytes = static_cast<unsigned char>(lead[8]) | static_cast<unsigned char>(lead[9]) << 8;
  std::size_t start = 10;
  if (major >= 2) {
    if (in.read(lead + 10, 2) < 2) throw IoError(fmt::format("{}: truncated in its header's length", path));
    header_bytes |= static_cast<std::uint32_t>(static_cast<unsigned char>(lead[10])) << 16 |
                    static_cast<std::uint32_t>(static_cast<unsigned char>(lead[11])) << 24;
    start = 12;
  }
  if (header_bytes > limits.max_header_bytes || header_bytes > file_size - start)
    throw IoError(fmt::format("{}: the header claims {} bytes; the file has {} after its start and the limit is {}",
                              path, header_bytes, file_size - start, limits.max_header_bytes));
  std::string text(header_bytes, '\0');
  in.read(text.data(), header_bytes);
  const Header h = HeaderParser{path, text, start}.parse();
  const Stored stored_as = stored_of_descr(path, h.descr);
  const DType dtype = stored_as.dtype;

  std::uint64_t count = 1;
  for (const std::int64_t d : h.shape)
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count))
      throw IoError(fmt::format("{}: its shape holds more elements than a 64-bit count", path));
  const std::uint64_t size = stored_as.size, data_bytes = count * size;
  if (count > limits.max_bytes / size)
    throw IoError(fmt::format("{}: {} elements of {} are over the limit of {} bytes", path, count, h.descr,
                              limits.max_bytes));
  const std::uint64_t after_header = file_size - start - header_bytes;
  if (after_header != data_bytes)
    throw IoError(fmt::format("{}: shape {} of {} needs {} bytes of data, the file has {} after its header{}", path,
                              Shape(h.shape), h.descr, data_bytes, after_header,
                              after_header < data_bytes ? " (truncated)" : ""));
  // Fortran order is C order of the reversed shape, read as that and transposed back.
  std::vector<std::int64_t> stored = h.shape;
  if (h.fortran_order) std::reverse(stored.begin(), stored.end());
  require_memory_for_file(count * dtype_size(dtype) * (h.fortran_order ? 2 : 1), path);
  Tensor t = Tensor::empty(Shape(stored), {.dtype = dtype, .category = MemoryCategory::data});
  auto* bytes = static_cast<unsigned char*>(t.data_ptr());
  if (stored_as.converts()) {
    // A slice of the file's elements at a time, so the wider copy never exists whole.
    constexpr std::uint64_t slice = 1 << 17;
    std::vector<unsigned char> raw(static_cast<std::size_t>(std::min(count, slice) * size));
    for (std::uint64_t first = 0; first < count; first += slice) {
      const std::uint64_t n = std::min(slice, count - first);
      if (in.read(raw.data(), n * size) != n * size) throw IoError(fmt::format("{}: truncated in its data", path));
      convert(stored_as, raw.data(), n, first, bytes + first * dtype_size(dtype), path);
    }
  } else {
    if (in.read(bytes, data_bytes) != data_bytes) throw IoError(fmt::format("{}: truncated in its data", path));
    if (stored_as.swap)
      for (std::uint64_t i = 0; i < count; ++i) std::reverse(bytes + i * size, bytes + (i + 1) * size);
  }
  if (!h.fortran_order || h.shape.size() < 2) return t;
  std::vector<int> reversed(h.shape.size());
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  Tensor c_order = Tensor::empty(Shape(h.shape), {.dtype = dtype, .category = MemoryCategory::data});
  c_order.copy_(ops::permute(t, reversed));
  return c_order;
}

}  // namespace

Tensor npy(const std::string& path, const NpyLimits& limits) {
  require_readable_file(path, "file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw IoError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  return parse_npy(FileBytes{in}, file_size, path, limits);
}

Tensor npy_from_memory(std::string_view bytes, const std::string& name, const NpyLimits& limits) {
  return parse_npy(MemoryBytes{bytes}, bytes.size(), name, limits);
}

}  // namespace accrue::datasets
