#pragma once
// Reading ZIP archives: the entries of NumPy's .npz files (stored or deflated, with ZIP64 sizes)
// and of PyTorch's files (torch.save stores "<name>/data.pkl", "<name>/data/0", ... uncompressed).
// Every offset and size is checked against the archive before anything is read, and what an entry
// claims against what deflate can make of its compressed bytes, so that a damaged or crafted archive
// is refused naming the file, the entry and the byte, never read past its end nor allocated beyond
// what it can hold. Entries are read with their CRC-32 checked.

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace accrue::serialization {

class ZipArchive {
 public:
  struct Entry {
    std::string name;
    /// Where the entry's stored bytes start in the archive, how many there are, and how many it
    /// holds once inflated (the same for a stored entry).
    std::uint64_t offset = 0;
    std::uint64_t compressed = 0;
    std::uint64_t size = 0;
    std::uint32_t crc = 0;
    /// 0: stored; 8: deflated.
    std::uint16_t method = 0;
    /// Where its local header is: the byte messages name.
    std::uint64_t header = 0;
  };

  /// The archive at `path`, read by seeking: only its directory is read now. Throws IoError naming
  /// the file for one that is no ZIP archive, is cut short, or has an entry that is encrypted,
  /// compressed otherwise than by deflate, outside the file, or claims more than deflate can give.
  static ZipArchive open(const std::string& path);
  /// The archive in `bytes` (which must outlive it), named `name` in messages.
  static ZipArchive in_memory(std::string_view bytes, const std::string& name);

  const std::string& name() const { return name_; }
  std::uint64_t size() const { return size_; }
  const std::vector<Entry>& entries() const { return entries_; }
  /// The first entry named `name`, or null.
  const Entry* find(const std::string& name) const;
  /// Reads `entry`'s `entry.size` bytes into `into`, inflating a deflated one, and checks its
  /// CRC-32. Throws IoError naming the entry when its bytes are damaged.
  void read(const Entry& entry, void* into) const;
  /// The bytes of `entry`; IoError when it holds more than `max_bytes`.
  std::string read_bytes(const Entry& entry, std::uint64_t max_bytes) const;
  /// Throws IoError "<name>: byte <offset> of the ZIP archive: <what>".
  [[noreturn]] void fail(std::uint64_t offset, const std::string& what) const;

  /// Whether `path` starts as a ZIP archive does ("PK\3\4"); false for a file that cannot be read.
  static bool looks_like_zip(const std::string& path);

 private:
  ZipArchive(std::string name, std::uint64_t size) : name_(std::move(name)), size_(size) {}
  void read_at(std::uint64_t offset, void* into, std::uint64_t bytes, const char* what) const;
  std::uint64_t field(std::uint64_t offset, int bytes) const;
  void read_directory();
  Entry read_entry(std::uint64_t& at, std::uint64_t end);

  std::string name_;
  std::uint64_t size_ = 0;
  std::string_view memory_;
  std::unique_ptr<std::ifstream> file_;  // for an archive read from a file
  std::vector<Entry> entries_;
};

}  // namespace accrue::serialization
