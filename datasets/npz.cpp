#include "npz.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../framework/core/error.hpp"
#include "../framework/core/files.hpp"
#include "../framework/core/memory.hpp"
#include "../framework/core/utf8.hpp"

namespace accrue::datasets {
namespace {

// Little-endian fields of the archive, each read checked against its end.
class ZipReader {
 public:
  ZipReader(std::string_view bytes, const std::string& name) : bytes_(bytes), name_(name) {}

  [[noreturn]] void fail(std::uint64_t offset, const std::string& what) const {
    throw IoError(fmt::format("{}: byte {} of the .npz archive: {}", name_, offset, what));
  }
  std::uint64_t field(std::uint64_t offset, int size) const {
    if (offset > bytes_.size() || bytes_.size() - offset < static_cast<std::uint64_t>(size))
      fail(offset, "the archive ends inside a record (truncated?)");
    std::uint64_t v = 0;
    for (int i = size - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(bytes_[offset + static_cast<std::uint64_t>(i)]);
    return v;
  }
  std::string_view span(std::uint64_t offset, std::uint64_t size, const std::string& what) const {
    if (offset > bytes_.size() || bytes_.size() - offset < size) fail(offset, what + " passes the end of the archive");
    return bytes_.substr(offset, size);
  }
  std::uint64_t size() const { return bytes_.size(); }

 private:
  std::string_view bytes_;
  const std::string& name_;
};

struct Member {
  std::string name;
  std::uint64_t compressed, uncompressed, local_offset;
  std::uint32_t crc;
  std::uint16_t method, flags;
};

// The central directory's place and size, from the end record (or its ZIP64 form).
std::pair<std::uint64_t, std::uint64_t> central_directory(const ZipReader& zip) {
  constexpr std::uint64_t end_size = 22;
  if (zip.size() < end_size) zip.fail(0, "too short to be a ZIP archive (np.savez writes one)");
  std::uint64_t end = zip.size() - end_size;
  const std::uint64_t lowest = zip.size() > end_size + 0xFFFF ? zip.size() - end_size - 0xFFFF : 0;
  while (zip.field(end, 4) != 0x06054b50) {
    if (end == lowest) zip.fail(0, "no end of central directory: not a ZIP archive (np.savez writes one)");
    --end;
  }
  std::uint64_t entries = zip.field(end + 10, 2), size = zip.field(end + 12, 4), offset = zip.field(end + 16, 4);
  if (entries == 0xFFFF || size == 0xFFFFFFFF || offset == 0xFFFFFFFF) {
    if (end < 20 || zip.field(end - 20, 4) != 0x07064b50) zip.fail(end, "ZIP64 sizes without the ZIP64 locator");
    const std::uint64_t record = zip.field(end - 20 + 8, 8);
    if (zip.field(record, 4) != 0x06064b50) zip.fail(record, "no ZIP64 end of central directory record here");
    entries = zip.field(record + 32, 8);
    size = zip.field(record + 40, 8);
    offset = zip.field(record + 48, 8);
  }
  (void)zip.span(offset, size, "the central directory");
  return {offset, entries};
}

std::vector<Member> members(const ZipReader& zip) {
  auto [at, entries] = central_directory(zip);
  std::vector<Member> out;
  for (std::uint64_t k = 0; k < entries; ++k) {
    if (zip.field(at, 4) != 0x02014b50) zip.fail(at, "not a central directory entry where one belongs");
    Member m{};
    m.flags = static_cast<std::uint16_t>(zip.field(at + 8, 2));
    m.method = static_cast<std::uint16_t>(zip.field(at + 10, 2));
    m.crc = static_cast<std::uint32_t>(zip.field(at + 16, 4));
    m.compressed = zip.field(at + 20, 4);
    m.uncompressed = zip.field(at + 24, 4);
    const std::uint64_t name_size = zip.field(at + 28, 2), extra_size = zip.field(at + 30, 2), comment = zip.field(at + 32, 2);
    m.local_offset = zip.field(at + 42, 4);
    m.name = std::string(zip.span(at + 46, name_size, "a member's name"));
    // ZIP64: the sizes and offset that did not fit are in extra field 1, in this order.
    std::uint64_t extra = at + 46 + name_size;
    const std::uint64_t extra_end = extra + extra_size;
    (void)zip.span(extra, extra_size, "a member's extra fields");
    while (extra + 4 <= extra_end) {
      const std::uint64_t id = zip.field(extra, 2), length = zip.field(extra + 2, 2);
      std::uint64_t p = extra + 4;
      if (id == 1) {
        for (std::uint64_t* v : {&m.uncompressed, &m.compressed, &m.local_offset})
          if (*v == 0xFFFFFFFF) {
            if (p + 8 > extra + 4 + length) zip.fail(p, "a ZIP64 field shorter than its sizes");
            *v = zip.field(p, 8);
            p += 8;
          }
      }
      extra += 4 + length;
    }
    out.push_back(std::move(m));
    at = extra_end + comment;
  }
  return out;
}

std::string member_bytes(const ZipReader& zip, const Member& m, const std::string& where) {
  if (m.flags & 1) zip.fail(m.local_offset, fmt::format("member {} is encrypted", printable_excerpt(m.name)));
  if (zip.field(m.local_offset, 4) != 0x04034b50) zip.fail(m.local_offset, fmt::format("no local header of {}", printable_excerpt(m.name)));
  const std::uint64_t data = m.local_offset + 30 + zip.field(m.local_offset + 26, 2) + zip.field(m.local_offset + 28, 2);
  const std::string_view stored = zip.span(data, m.compressed, fmt::format("member {}", printable_excerpt(m.name)));
  std::string out;
  if (m.method == 0) {
    if (m.compressed != m.uncompressed) zip.fail(m.local_offset, fmt::format("stored member {} changes size", printable_excerpt(m.name)));
    out = std::string(stored);
  } else if (m.method == 8) {
    out.resize(m.uncompressed);
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw IoError(fmt::format("{}: zlib cannot start", where));
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(stored.data()));
    z.avail_in = static_cast<uInt>(std::min<std::uint64_t>(stored.size(), UINT32_MAX));
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(std::min<std::uint64_t>(out.size(), UINT32_MAX));
    const int status = inflate(&z, Z_FINISH);
    const std::uint64_t produced = z.total_out;
    inflateEnd(&z);
    if (status != Z_STREAM_END || produced != m.uncompressed)
      zip.fail(data, fmt::format("member {} does not inflate to its {} bytes (damaged)", printable_excerpt(m.name), m.uncompressed));
  } else {
    zip.fail(m.local_offset, fmt::format("member {} uses compression method {} (np.savez writes 0 and 8)", printable_excerpt(m.name), m.method));
  }
  const auto crc = static_cast<std::uint32_t>(crc32_z(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(out.data()), out.size()));
  if (crc != m.crc) zip.fail(data, fmt::format("member {} fails its CRC-32 check (damaged)", printable_excerpt(m.name)));
  return out;
}

// What the members claim, checked before any is inflated: each within the limit and within what
// deflate can make of its compressed bytes (at most 1032 bytes out of one in), and all of them
// together within the limit and the memory this process may take. A 184-byte archive can claim a
// 4 GiB member, and a 1 MB one the same 1 GiB of data under 40 names.
void check_claims(const ZipReader& zip, const std::vector<Member>& all, const std::string& name, const NpyLimits& limits) {
  const std::uint64_t most = limits.max_bytes + limits.max_header_bytes + 12;
  std::uint64_t total = 0, largest = 0;
  for (const Member& m : all) {
    if (m.uncompressed > most)
      zip.fail(m.local_offset, fmt::format("member {} of {} bytes is over the limit of {}", printable_excerpt(m.name),
                                           m.uncompressed, limits.max_bytes));
    if (m.method == 8 && m.uncompressed > m.compressed * 1032 + 1024)
      zip.fail(m.local_offset, fmt::format("member {} claims {} bytes from {} compressed, more than deflate can give "
                                           "(damaged)",
                                           printable_excerpt(m.name), m.uncompressed, m.compressed));
    total += m.uncompressed;
    largest = std::max(largest, m.uncompressed);
  }
  if (total > most)
    zip.fail(0, fmt::format("its {} members hold {} bytes in all, over the limit of {}", all.size(), total, limits.max_bytes));
  // Each member is inflated, then copied into its array: every array and one member at a time
  // besides the archive, which is in memory already.
  require_memory_for_file(total + largest, fmt::format("{} ({} arrays)", name, all.size()));
}

}  // namespace

std::map<std::string, Tensor> npz_from_memory(std::string_view bytes, const std::string& name, const NpyLimits& limits) {
  const ZipReader zip{bytes, name};
  std::map<std::string, Tensor> arrays;
  const std::vector<Member> all = members(zip);
  check_claims(zip, all, name, limits);
  for (const Member& m : all) {
    if (!m.name.ends_with(".npy"))
      zip.fail(m.local_offset, fmt::format("member {} is not a .npy file", printable_excerpt(m.name)));
    const std::string where = fmt::format("{}:{}", name, printable_excerpt(m.name, 200));
    const std::string key = m.name.substr(0, m.name.size() - 4);
    if (arrays.contains(key)) zip.fail(m.local_offset, fmt::format("member {} appears twice", printable_excerpt(m.name)));
    arrays.emplace(key, npy_from_memory(member_bytes(zip, m, where), where, limits));
  }
  if (arrays.empty()) throw IoError(fmt::format("{}: an archive with no arrays", name));
  return arrays;
}

std::map<std::string, Tensor> npz(const std::string& path, const NpyLimits& limits) {
  require_readable_file(path, "file");
  const std::uint64_t size = std::filesystem::file_size(path);
  if (size > 2 * limits.max_bytes + (1u << 20))
    throw IoError(fmt::format("{}: {} bytes, over the limit of {}", path, size, 2 * limits.max_bytes));
  std::string bytes(size, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uint64_t>(in.gcount()) != size) throw IoError(fmt::format("{}: could not read it whole", path));
  return npz_from_memory(bytes, path, limits);
}

}  // namespace accrue::datasets
