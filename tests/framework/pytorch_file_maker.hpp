#pragma once
// Files as torch.save writes them, made byte by byte (no Python): a ZIP archive of stored entries
// and a pickle written opcode by opcode, for the tests of serialization/pytorch_file.hpp and the
// hostile files it must refuse.

#include <zlib.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace accrue::test {

inline void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

/// A ZIP archive of `entries` (name, bytes), stored uncompressed, as torch.save writes.
inline std::string zip_of(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out, directory;
  for (const auto& [name, bytes] : entries) {
    const auto crc = static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
    const std::uint64_t offset = out.size();
    put_le(out, 0x04034b50, 4), put_le(out, 20, 2), put_le(out, 0, 2), put_le(out, 0, 2), put_le(out, 0, 4);
    put_le(out, crc, 4), put_le(out, bytes.size(), 4), put_le(out, bytes.size(), 4), put_le(out, name.size(), 2), put_le(out, 0, 2);
    out += name + bytes;
    put_le(directory, 0x02014b50, 4), put_le(directory, 20, 2), put_le(directory, 20, 2), put_le(directory, 0, 2);
    put_le(directory, 0, 2), put_le(directory, 0, 4), put_le(directory, crc, 4), put_le(directory, bytes.size(), 4);
    put_le(directory, bytes.size(), 4), put_le(directory, name.size(), 2), put_le(directory, 0, 2), put_le(directory, 0, 2);
    put_le(directory, 0, 2), put_le(directory, 0, 2), put_le(directory, 0, 4), put_le(directory, offset, 4);
    directory += name;
  }
  const std::uint64_t at = out.size();
  out += directory;
  put_le(out, 0x06054b50, 4), put_le(out, 0, 2), put_le(out, 0, 2), put_le(out, entries.size(), 2);
  put_le(out, entries.size(), 2), put_le(out, directory.size(), 4), put_le(out, at, 4), put_le(out, 0, 2);
  return out;
}

/// A pickle written opcode by opcode (protocol 2, as torch.save).
struct PickleWriter {
  std::string bytes = "\x80\x02";

  PickleWriter& op(char c) { return bytes += c, *this; }
  PickleWriter& text(const std::string& s) { return op('X'), put_le(bytes, s.size(), 4), bytes += s, *this; }
  PickleWriter& integer(std::int64_t v) {
    if (v >= 0 && v < 256) return op('K'), put_le(bytes, static_cast<std::uint64_t>(v), 1), *this;
    return op('\x8a'), put_le(bytes, 8, 1), put_le(bytes, static_cast<std::uint64_t>(v), 8), *this;
  }
  PickleWriter& global(const std::string& module, const std::string& name) { return op('c'), bytes += module + "\n" + name + "\n", *this; }
  PickleWriter& tuple(const std::vector<std::int64_t>& values) {
    op('(');
    for (const std::int64_t v : values) integer(v);
    return op('t');
  }
  PickleWriter& ordered_dict() { return global("collections", "OrderedDict").op(')').op('R'); }
  /// torch._utils._rebuild_tensor_v2 of storage data/`key` (`type`: "FloatStorage", ...).
  PickleWriter& tensor(const std::string& type, const std::string& key, std::int64_t count, std::int64_t offset,
                       const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& strides) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    op('(').text("storage").global("torch", type).text(key).text("cpu").integer(count).op('t').op('Q');
    integer(offset).tuple(sizes).tuple(strides).op('\x89').ordered_dict();
    return op('t').op('R');
  }
  std::string done() { return bytes + "."; }
};

/// The bytes of `values` as stored in a storage entry (little-endian, as on x86-64).
template <class T>
std::string storage_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

}  // namespace accrue::test
