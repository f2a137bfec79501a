#include "checkpoint.hpp"

#include <zlib.h>

#include <algorithm>
#include <filesystem>

#include "../core/error.hpp"
#include "../core/files.hpp"

namespace accrue::serialization {
namespace {

constexpr const char* format_name = "accrue-training-checkpoint";
constexpr int format_version = 1;

struct Crc {
  uLong value = crc32_z(0L, Z_NULL, 0);
  void add(const void* data, std::size_t n) { value = crc32_z(value, static_cast<const Bytef*>(data), n); }
  void add(const std::string& s) { add(s.data(), s.size() + 1); }  // with the terminator, so "ab","c" != "a","bc"
  void add(std::uint64_t v) {
    std::uint8_t b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
    add(b, 8);
  }
};

}  // namespace

std::uint32_t checkpoint_checksum(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  Crc crc;
  for (const auto& [key, value] : metadata) {
    if (key == "checksum") continue;
    crc.add(key);
    crc.add(value);
  }
  std::vector<const std::pair<std::string, Tensor>*> sorted;
  for (const auto& e : tensors) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* e : sorted) {
    const Tensor host = e->second.to(Device::cpu());
    crc.add(e->first);
    crc.add(static_cast<std::uint64_t>(host.dtype()));
    crc.add(static_cast<std::uint64_t>(host.rank()));
    for (std::int64_t d : host.shape()) crc.add(static_cast<std::uint64_t>(d));
    crc.add(host.data_ptr(), host.nbytes());
  }
  return static_cast<std::uint32_t>(crc.value);
}

bool is_training_checkpoint(const SafetensorsFile& file) {
  const auto it = file.metadata.find("format");
  return it != file.metadata.end() && it->second == format_name;
}

void save_checkpoint(const std::string& path, const NamedTensors& tensors, const std::string& state) {
  std::map<std::string, std::string> metadata{{"format", format_name},
                                              {"format_version", std::to_string(format_version)},
                                              {"state", state}};
  metadata["checksum"] = fmt::format("{:08x}", checkpoint_checksum(tensors, metadata));
  save_safetensors(path, tensors, metadata);
}

CheckpointFile load_checkpoint(const std::string& path, const SafetensorsLimits& limits) {
  require_readable_file(path, "checkpoint");  // outside the try: a file that cannot be read is not damaged
  SafetensorsFile file;
  try {
    file = load_safetensors(path, limits);
  } catch (const IoError& e) {
    throw IoError(fmt::format("checkpoint {} is damaged or not a checkpoint, and was not loaded: {}", path, e.what()));
  }
  return verify_checkpoint(path, std::move(file));
}

CheckpointFile verify_checkpoint(const std::string& path, SafetensorsFile file) {
  const auto meta = [&](const char* key) -> const std::string* {
    const auto it = file.metadata.find(key);
    return it == file.metadata.end() ? nullptr : &it->second;
  };
  const std::string* format = meta("format");
  if (format == nullptr || *format != format_name)
    throw IoError(fmt::format("{} is not a training checkpoint (its metadata has no format \"{}\"); weights saved by "
                              "save_weights load with load_weights",
                              path, format_name));
  const std::string* version = meta("format_version");
  if (version == nullptr || *version != std::to_string(format_version))
    throw IoError(fmt::format("checkpoint {} has format version {}; this build reads version {}", path,
                              version ? *version : std::string{"(none)"}, format_version));
  const std::string* stored = meta("checksum");
  const std::string* state = meta("state");
  if (stored == nullptr || state == nullptr)
    throw IoError(fmt::format("checkpoint {} is damaged: its {} is missing; it was not loaded", path,
                              stored == nullptr ? "checksum" : "state"));
  const std::string computed = fmt::format("{:08x}", checkpoint_checksum(file.tensors, file.metadata));
  if (*stored != computed)
    throw IoError(fmt::format("checkpoint {} is damaged: its checksum is {} but its contents give {} (a truncated, "
                              "corrupted or edited file); it was not loaded",
                              path, *stored, computed));
  return {std::move(file.tensors), *state};
}

}  // namespace accrue::serialization
