#include "zip_archive.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "../core/error.hpp"
#include "../core/files.hpp"
#include "../core/utf8.hpp"

namespace accrue::serialization {
namespace {

constexpr std::uint32_t local_header_signature = 0x04034b50, central_header_signature = 0x02014b50,
                        end_signature = 0x06054b50, zip64_end_signature = 0x06064b50, zip64_locator_signature = 0x07064b50;
constexpr std::uint64_t end_size = 22, central_header_size = 46, local_header_size = 30;
constexpr std::uint64_t zip64_marker = 0xffffffff;

std::uint64_t little_endian(const unsigned char* bytes, int count) {
  std::uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = value << 8 | bytes[i];
  return value;
}

// Deflate makes at most 1032 bytes of one compressed byte (zlib's technical details).
bool deflate_can_give(std::uint64_t size, std::uint64_t compressed) { return size <= compressed * 1032 + 1024; }

// ZIP64: the sizes and offset of `e` that did not fit in 32 bits are in extra field 1, in this
// order. False when that field is too short for them.
bool read_zip64_sizes(const std::vector<unsigned char>& extra, ZipArchive::Entry& e) {
  for (std::uint64_t x = 0; x + 4 <= extra.size();) {
    const std::uint64_t id = little_endian(&extra[x], 2), length = little_endian(&extra[x + 2], 2);
    if (id != 1) {
      x += 4 + length;
      continue;
    }
    const std::uint64_t field_end = std::min<std::uint64_t>(x + 4 + length, extra.size());
    std::uint64_t p = x + 4;
    for (std::uint64_t* v : {&e.size, &e.compressed, &e.header}) {
      if (*v != zip64_marker) continue;
      if (p + 8 > field_end) return false;
      *v = little_endian(&extra[p], 8);
      p += 8;
    }
    return true;
  }
  return true;
}

}  // namespace

ZipArchive ZipArchive::open(const std::string& path) {
  require_readable_file(path, "file");
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(fmt::format("{}: cannot find its size ({})", path, ec.message()));
  ZipArchive zip{path, size};
  zip.file_ = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*zip.file_) throw IoError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  zip.read_directory();
  return zip;
}

ZipArchive ZipArchive::in_memory(std::string_view bytes, const std::string& name) {
  ZipArchive zip{name, bytes.size()};
  zip.memory_ = bytes;
  zip.read_directory();
  return zip;
}

void ZipArchive::fail(std::uint64_t offset, const std::string& what) const {
  throw IoError(fmt::format("{}: byte {} of the ZIP archive: {}", name_, offset, what));
}

void ZipArchive::read_at(std::uint64_t offset, void* into, std::uint64_t bytes, const char* what) const {
  if (offset > size_ || size_ - offset < bytes) fail(offset, fmt::format("{} passes the end of the archive (truncated?)", what));
  if (bytes == 0) return;  // `into` may be null then (an empty vector's data())
  if (!file_) {
    std::memcpy(into, memory_.data() + offset, bytes);
    return;
  }
  file_->clear();
  file_->seekg(static_cast<std::streamoff>(offset));
  if (!file_->read(static_cast<char*>(into), static_cast<std::streamsize>(bytes)))
    fail(offset, fmt::format("{} cannot be read: the file changed while it was read", what));
}

std::uint64_t ZipArchive::field(std::uint64_t offset, int bytes) const {
  unsigned char b[8];
  read_at(offset, b, static_cast<std::uint64_t>(bytes), "a record");
  return little_endian(b, bytes);
}

void ZipArchive::read_directory() {
  if (size_ < end_size) fail(0, "too short to be a ZIP archive: not a ZIP archive");
  // The end record is the last thing in the archive but for a comment of at most 65535 bytes.
  const std::uint64_t tail = std::min<std::uint64_t>(size_, end_size + 0xffff);
  std::vector<unsigned char> bytes(tail);
  read_at(size_ - tail, bytes.data(), tail, "its end");
  std::uint64_t end = tail - end_size;
  while (little_endian(&bytes[end], 4) != end_signature) {
    if (end == 0) fail(0, "no end of central directory record: not a ZIP archive, or one cut short");
    --end;
  }
  end += size_ - tail;
  std::uint64_t count = field(end + 10, 2), length = field(end + 12, 4), at = field(end + 16, 4);
  if (count == 0xffff || length == zip64_marker || at == zip64_marker) {
    if (end < 20 || field(end - 20, 4) != zip64_locator_signature) fail(end, "ZIP64 sizes without the ZIP64 locator");
    const std::uint64_t record = field(end - 20 + 8, 8);
    if (field(record, 4) != zip64_end_signature) fail(record, "no ZIP64 end of central directory record here");
    count = field(record + 32, 8), length = field(record + 40, 8), at = field(record + 48, 8);
  }
  if (at > size_ || length > size_ - at) fail(at, fmt::format("the central directory of {} bytes passes the end of the archive", length));
  if (count > length / central_header_size) fail(at, fmt::format("{} entries cannot fit in a central directory of {} bytes", count, length));
  const std::uint64_t directory_end = at + length;
  for (std::uint64_t k = 0; k < count; ++k) entries_.push_back(read_entry(at, directory_end));
}

// The central directory's entry at `at`, which is moved past it.
ZipArchive::Entry ZipArchive::read_entry(std::uint64_t& at, std::uint64_t end) {
  if (end - at < central_header_size || field(at, 4) != central_header_signature)
    fail(at, "not a central directory entry where one belongs");
  unsigned char h[central_header_size];
  read_at(at, h, central_header_size, "a central directory entry");
  const std::uint64_t name_size = little_endian(h + 28, 2), extra_size = little_endian(h + 30, 2), comment = little_endian(h + 32, 2);
  if (end - at - central_header_size < name_size + extra_size + comment) fail(at, "a central directory entry passes its end");
  Entry e;
  e.name.resize(name_size);
  read_at(at + central_header_size, e.name.data(), name_size, "an entry's name");
  const std::string shown = printable_excerpt(e.name);
  const auto flags = little_endian(h + 8, 2);
  e.method = static_cast<std::uint16_t>(little_endian(h + 10, 2));
  e.crc = static_cast<std::uint32_t>(little_endian(h + 16, 4));
  e.compressed = little_endian(h + 20, 4), e.size = little_endian(h + 24, 4), e.header = little_endian(h + 42, 4);
  std::vector<unsigned char> extra(extra_size);
  read_at(at + central_header_size + name_size, extra.data(), extra_size, "an entry's extra fields");
  if (!read_zip64_sizes(extra, e)) fail(at, fmt::format("entry {}: a ZIP64 field shorter than its sizes", shown));
  at += central_header_size + name_size + extra_size + comment;
  if ((flags & 1) != 0) fail(e.header, fmt::format("entry {} is encrypted", shown));
  if (e.method != 0 && e.method != 8) fail(e.header, fmt::format("entry {} uses compression method {} (stored and deflated are read)", shown, e.method));
  if (e.method == 0 && e.compressed != e.size) fail(e.header, fmt::format("stored entry {} changes size", shown));
  if (e.method == 8 && !deflate_can_give(e.size, e.compressed))
    fail(e.header, fmt::format("entry {} claims {} bytes from {} compressed, more than deflate can give (damaged)", shown, e.size, e.compressed));
  if (field(e.header, 4) != local_header_signature) fail(e.header, fmt::format("no local header of entry {}", shown));
  e.offset = e.header + local_header_size + field(e.header + 26, 2) + field(e.header + 28, 2);
  if (e.offset > size_ || e.compressed > size_ - e.offset)
    fail(e.header, fmt::format("entry {} of {} bytes passes the end of the archive (truncated?)", shown, e.compressed));
  return e;
}

void ZipArchive::read(const Entry& entry, void* into) const {
  const std::string shown = printable_excerpt(entry.name);
  if (entry.method == 0) {
    read_at(entry.offset, into, entry.size, "an entry's data");
  } else {
    std::string stored(entry.compressed, '\0');
    read_at(entry.offset, stored.data(), entry.compressed, "an entry's data");
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail(entry.header, "zlib cannot start");
    z.next_in = reinterpret_cast<Bytef*>(stored.data());
    z.avail_in = static_cast<uInt>(std::min<std::uint64_t>(stored.size(), UINT32_MAX));
    z.next_out = static_cast<Bytef*>(into);
    z.avail_out = static_cast<uInt>(std::min<std::uint64_t>(entry.size, UINT32_MAX));
    const int status = inflate(&z, Z_FINISH);
    const std::uint64_t produced = z.total_out;
    inflateEnd(&z);
    if (status != Z_STREAM_END || produced != entry.size)
      fail(entry.offset, fmt::format("entry {} does not inflate to its {} bytes (damaged)", shown, entry.size));
  }
  const auto crc = static_cast<std::uint32_t>(crc32_z(crc32(0, nullptr, 0), static_cast<const Bytef*>(into), entry.size));
  if (crc != entry.crc) fail(entry.offset, fmt::format("entry {} fails its CRC-32 check (damaged)", shown));
}

std::string ZipArchive::read_bytes(const Entry& entry, std::uint64_t max_bytes) const {
  if (entry.size > max_bytes)
    fail(entry.header, fmt::format("entry {} holds {} bytes, over the limit of {}", printable_excerpt(entry.name), entry.size, max_bytes));
  std::string bytes(entry.size, '\0');
  read(entry, bytes.data());
  return bytes;
}

const ZipArchive::Entry* ZipArchive::find(const std::string& name) const {
  const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.name == name; });
  return it == entries_.end() ? nullptr : &*it;
}

bool ZipArchive::looks_like_zip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "PK\3\4", 4) == 0;
}

}  // namespace accrue::serialization
