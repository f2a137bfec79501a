#pragma once
// The training-checkpoint file: a safetensors file (so any safetensors reader can look inside)
// whose metadata holds the run's state as JSON and a CRC-32 over everything else. The checksum
// covers every tensor's name, dtype, shape and bytes and every metadata entry, so a file that was
// truncated, bit-flipped or edited is refused before anything is taken from it.

#include <string>

#include "safetensors.hpp"

namespace accrue::serialization {

struct CheckpointFile {
  NamedTensors tensors;
  /// The run's state, JSON text as the writer gave it.
  std::string state;
};

/// Writes a checkpoint atomically (temporary file, fsync, rename, fsync of the folder), so a crash
/// at any moment leaves the previous file at `path` intact. Throws IoError naming the path.
void save_checkpoint(const std::string& path, const NamedTensors& tensors, const std::string& state);

/// Reads and verifies a checkpoint. Throws IoError saying the file is damaged and why (truncated,
/// checksum mismatch, not a checkpoint, a newer format) without returning any part of it.
CheckpointFile load_checkpoint(const std::string& path, const SafetensorsLimits& limits = {});

/// The verification of load_checkpoint (format, version, checksum) for a file `path` already
/// read by load_safetensors.
CheckpointFile verify_checkpoint(const std::string& path, SafetensorsFile file);

/// Whether a safetensors file's metadata marks it as a training checkpoint.
bool is_training_checkpoint(const SafetensorsFile& file);

/// The CRC-32 a checkpoint stores: over the tensors in name order and the metadata in key order,
/// leaving out the "checksum" entry itself.
std::uint32_t checkpoint_checksum(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata);

}  // namespace accrue::serialization
