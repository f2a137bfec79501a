#include "npz.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../framework/core/error.hpp"
#include "../framework/core/files.hpp"
#include "../framework/core/memory.hpp"
#include "../framework/core/utf8.hpp"
#include "../framework/serialization/zip_archive.hpp"

namespace accrue::datasets {
namespace {

// What the members claim, checked before any is inflated: each within the limit (the archive
// checks that deflate can make it of its compressed bytes), and all of them together within the
// limit and the memory this process may take. A 1 MB archive can claim the same 1 GiB of data under
// 40 names.
void check_claims(const serialization::ZipArchive& zip, const std::string& name, const NpyLimits& limits) {
  const std::uint64_t most = limits.max_bytes + limits.max_header_bytes + 12;
  std::uint64_t total = 0, largest = 0;
  for (const auto& m : zip.entries()) {
    if (m.size > most)
      zip.fail(m.header, fmt::format("member {} of {} bytes is over the limit of {}", printable_excerpt(m.name), m.size,
                                     limits.max_bytes));
    total += m.size;
    largest = std::max(largest, m.size);
  }
  if (total > most)
    zip.fail(0, fmt::format("its {} members hold {} bytes in all, over the limit of {}", zip.entries().size(), total,
                            limits.max_bytes));
  // Each member is inflated, then copied into its array: every array and one member at a time
  // besides the archive, which is in memory already.
  require_memory_for_file(total + largest, fmt::format("{} ({} arrays)", name, zip.entries().size()));
}

}  // namespace

std::map<std::string, Tensor> npz_from_memory(std::string_view bytes, const std::string& name, const NpyLimits& limits) {
  const auto zip = serialization::ZipArchive::in_memory(bytes, name);
  check_claims(zip, name, limits);
  std::map<std::string, Tensor> arrays;
  for (const auto& m : zip.entries()) {
    if (!m.name.ends_with(".npy")) zip.fail(m.header, fmt::format("member {} is not a .npy file", printable_excerpt(m.name)));
    const std::string where = fmt::format("{}:{}", name, printable_excerpt(m.name, 200));
    const std::string key = m.name.substr(0, m.name.size() - 4);
    if (arrays.contains(key)) zip.fail(m.header, fmt::format("member {} appears twice", printable_excerpt(m.name)));
    arrays.emplace(key, npy_from_memory(zip.read_bytes(m, m.size), where, limits));
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
