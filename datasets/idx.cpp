#include "idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "../framework/core/error.hpp"
#include "../framework/core/files.hpp"

namespace accrue::datasets {
namespace {

std::size_t element_size(IdxType t) {
  switch (t) {
    case IdxType::u8:
    case IdxType::i8: return 1;
    case IdxType::i16: return 2;
    case IdxType::i32:
    case IdxType::f32: return 4;
    case IdxType::f64: return 8;
  }
  return 0;
}

bool known_type(std::uint8_t t) { return t == 0x08 || t == 0x09 || t == 0x0B || t == 0x0C || t == 0x0D || t == 0x0E; }

// gzread reads gzip and plain files alike, which is what lets one reader take both.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (file_ == nullptr) throw IoError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  }
  ~GzFile() { gzclose(file_); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads up to n bytes; returns how many were read. Throws on a corrupt stream.
  std::size_t read(void* out, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      const int got = gzread(file_, static_cast<char*>(out) + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* message = gzerror(file_, &code);
        throw IoError(fmt::format("{}: the compressed data is corrupt ({})", path_, message));
      }
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    return done;
  }

 private:
  std::string path_;
  gzFile file_;
};

void to_host_order(std::vector<std::uint8_t>& bytes, std::size_t width) {
  if (width == 1) return;
  for (std::size_t i = 0; i + width <= bytes.size(); i += width) std::reverse(bytes.begin() + i, bytes.begin() + i + width);
}

}  // namespace

IdxArray read_idx(const std::string& path, const IdxLimits& limits) {
  require_readable_file(path, "IDX file");
  GzFile file{path};
  std::uint8_t magic[4];
  if (file.read(magic, 4) != 4) throw IoError(fmt::format("{}: too short for an IDX file (under 4 bytes)", path));
  if (magic[0] != 0 || magic[1] != 0)
    throw IoError(fmt::format("{}: not an IDX file (magic bytes {:#04x} {:#04x} {:#04x} {:#04x}; IDX starts with 0x00 0x00)",
                              path, magic[0], magic[1], magic[2], magic[3]));
  if (!known_type(magic[2])) throw IoError(fmt::format("{}: unknown IDX element type {:#04x}", path, magic[2]));
  const int rank = magic[3];
  if (rank < 1 || rank > Shape::max_rank)
    throw IoError(fmt::format("{}: {} dimensions in the IDX header; Accrue reads 1 to {}", path, rank, Shape::max_rank));

  IdxArray array;
  array.type = static_cast<IdxType>(magic[2]);
  std::uint8_t dims[4 * Shape::max_rank];
  const std::size_t header = 4 * static_cast<std::size_t>(rank);
  if (file.read(dims, header) != header)
    throw IoError(fmt::format("{}: truncated in the header ({} dimensions announced)", path, rank));
  const std::size_t width = element_size(array.type);
  std::uint64_t total = width;
  for (int i = 0; i < rank; ++i) {
    const std::uint32_t d = big_endian_u32(dims + 4 * i);
    if (d != 0 && total > limits.max_bytes / d)
      throw IoError(fmt::format("{}: dimensions give more than {} bytes of data (dimension {} is {})", path,
                                limits.max_bytes, i, d));
    total *= d;
    array.shape.push_back(d);
  }
  if (total > limits.max_bytes)
    throw IoError(fmt::format("{}: {} bytes of data is over the limit of {}", path, total, limits.max_bytes));

  array.bytes.resize(static_cast<std::size_t>(total));
  const std::size_t got = file.read(array.bytes.data(), array.bytes.size());
  if (got != array.bytes.size())
    throw IoError(fmt::format("{}: truncated: the header {} announces {} bytes of data, the file has {}", path,
                              array.shape, total, got));
  std::uint8_t extra;
  if (file.read(&extra, 1) != 0)
    throw IoError(fmt::format("{}: has bytes after the {} bytes of data its header {} announces", path, total, array.shape));
  to_host_order(array.bytes, width);
  return array;
}

namespace {
template <class F>
void for_each_element(const IdxArray& a, F&& f) {
  const std::size_t n = a.bytes.size() / element_size(a.type);
  const std::uint8_t* p = a.bytes.data();
  for (std::size_t i = 0; i < n; ++i) {
    switch (a.type) {
      case IdxType::u8: f(i, static_cast<double>(p[i])); break;
      case IdxType::i8: f(i, static_cast<double>(static_cast<std::int8_t>(p[i]))); break;
      case IdxType::i16: {
        std::int16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        f(i, static_cast<double>(v));
        break;
      }
      case IdxType::i32: {
        std::int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        f(i, static_cast<double>(v));
        break;
      }
      case IdxType::f32: {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        f(i, static_cast<double>(v));
        break;
      }
      case IdxType::f64: {
        double v;
        std::memcpy(&v, p + 8 * i, 8);
        f(i, v);
        break;
      }
    }
  }
}
}  // namespace

Tensor idx_to_float(const IdxArray& array, float scale, const TensorOptions& options) {
  TensorOptions o = options;
  o.dtype = DType::f32;
  Tensor t = Tensor::empty(array.shape, o);
  float* out = t.data<float>();
  for_each_element(array, [&](std::size_t i, double v) { out[i] = static_cast<float>(v) * scale; });
  return t;
}

Tensor idx_to_int(const IdxArray& array, const TensorOptions& options) {
  ACCRUE_CHECK(array.type != IdxType::f32 && array.type != IdxType::f64,
               "idx_to_int: the IDX array holds floating-point values, not labels");
  TensorOptions o = options;
  o.dtype = DType::i32;
  Tensor t = Tensor::empty(array.shape, o);
  std::int32_t* out = t.data<std::int32_t>();
  for_each_element(array, [&](std::size_t i, double v) { out[i] = static_cast<std::int32_t>(v); });
  return t;
}

}  // namespace accrue::datasets
