#pragma once
// Checks on paths before Accrue reads or writes them, so that a missing file, a folder where a file
// belongs, a loop of symbolic links or a permission is reported as an IoError naming the path and
// the reason, instead of escaping as std::filesystem_error or showing up later as "damaged data";
// the one way Accrue replaces a file, atomically; and the byte order file formats store numbers in.

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace accrue {

/// The unsigned 32-bit number stored big-endian at `bytes` (IDX headers, PNG chunks).
inline std::uint32_t big_endian_u32(const void* bytes) {
  const auto* u = static_cast<const unsigned char*>(bytes);
  return std::uint32_t{u[0]} << 24 | std::uint32_t{u[1]} << 16 | std::uint32_t{u[2]} << 8 | std::uint32_t{u[3]};
}

/// Throws IoError unless `path` is a regular file this process can open for reading: "<what> <path>
/// does not exist", "... is a folder, not a file", "... cannot be read (Permission denied)".
/// `what` names the file for the user ("checkpoint", "weights file").
void require_readable_file(const std::string& path, std::string_view what);

/// Throws IoError unless a file can be written at `path`: its folder exists and takes a new file,
/// and `path` is not a folder, nor a device, pipe or socket (replacing /dev/null with a regular
/// file would break every program that writes there). Checked by creating and removing a file
/// beside it, so nothing that is there already is touched. For checks before long work ("--save"
/// before training).
void require_writable_file(const std::string& path, std::string_view what);

/// require_writable_file, and `path` must not be any of `inputs` (files, or folders whose files
/// count), however named (links included): "--report d/x would overwrite the training data d/x;
/// name another file". `inputs` pairs each path with what it is, for the message.
void require_output_file(const std::string& path, std::string_view what,
                         const std::vector<std::pair<std::string, std::string>>& inputs);

/// Throws IoError when two of `outputs` (path, what writes it: "--save-model") name one file, also
/// before either exists ("m.safetensors" and "./m.safetensors"): one would silently replace the
/// other. Empty paths (an output not asked for) are left out.
void require_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

/// The entries of folder `dir` (full paths), or IoError with the reason when it cannot be listed.
std::vector<std::string> list_folder(const std::string& dir, std::string_view what);

/// Whether `path` is a folder; IoError when that cannot be found out (permissions, a loop of
/// symbolic links), false when nothing is there.
bool is_folder(const std::string& path, std::string_view what);

/// Replaces `path` atomically: `write` fills a temporary file beside it ("<path>.tmp-<pid>") and
/// returns false when a write failed; the file is flushed to disk, renamed over `path`, and the
/// folder's entry flushed too. A crash or an error at any moment leaves the previous file intact;
/// throws IoError naming `path` and the reason then. A symbolic link to a file is kept and its file
/// replaced; a path that is a device, pipe, socket or folder is refused before anything is written.
void write_atomically(const std::string& path, const std::function<bool(std::FILE*)>& write);
/// write_atomically of `text`.
void write_text_atomically(const std::string& path, std::string_view text);

}  // namespace accrue
