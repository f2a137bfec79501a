#include "files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "error.hpp"

namespace accrue {
namespace fs = std::filesystem;

void require_readable_file(const std::string& path, std::string_view what) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found)
    throw IoError(fmt::format("{} {} does not exist", what, path));
  if (ec) throw IoError(fmt::format("{} {} cannot be read ({})", what, path, ec.message()));
  if (status.type() == fs::file_type::directory)
    throw IoError(fmt::format("{} {} is a folder, not a file", what, path));
  if (status.type() != fs::file_type::regular)
    throw IoError(fmt::format("{} {} is not a regular file (a device, pipe or socket)", what, path));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(fmt::format("{} {} cannot be read ({})", what, path, std::strerror(errno)));
  ::close(fd);
}

namespace {

// Refuses to replace what is not a regular file (following symbolic links).
void require_replaceable(const std::string& path, std::string_view what) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::directory)
    throw IoError(fmt::format("{} {} is a folder; name a file in it", what, path));
  if (status.type() != fs::file_type::not_found && status.type() != fs::file_type::regular &&
      status.type() != fs::file_type::none)
    throw IoError(fmt::format("{} {} is not a regular file (a device, pipe or socket); name a file to write", what, path));
}

}  // namespace

void require_writable_file(const std::string& path, std::string_view what) {
  ACCRUE_CHECK(!path.empty(), "{}: the path is empty", what);
  require_replaceable(path, what);
  const fs::path folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  const std::string probe = (folder / fmt::format(".accrue-write-check-{}", ::getpid())).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw IoError(fmt::format("{} {} cannot be written: no new file can be made in {} ({})", what, path, folder.string(),
                              std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
}

void require_output_file(const std::string& path, std::string_view what,
                         const std::vector<std::pair<std::string, std::string>>& inputs) {
  require_writable_file(path, what);
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  for (const auto& [input, role] : inputs) {
    std::vector<fs::path> files;
    if (fs::is_directory(input, ec))
      for (fs::directory_iterator it{input, ec}; !ec && it != fs::directory_iterator{}; it.increment(ec))
        files.push_back(it->path());
    else
      files.push_back(input);
    for (const fs::path& f : files)
      if (fs::equivalent(path, f, ec) && !ec)
        throw IoError(fmt::format("{} {} would overwrite {} {}; name another file", what, path, role, f.string()));
  }
}

namespace {

// Whether two paths name one file: the same file when both exist (links included), else the same
// path once made absolute, "." and ".." resolved and links followed as far as they exist.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
  const fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

}  // namespace

void require_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t j = i + 1; j < outputs.size(); ++j)
      if (!outputs[i].first.empty() && !outputs[j].first.empty() && same_file(outputs[i].first, outputs[j].first))
        throw IoError(fmt::format("{} and {} both name {}: the second would overwrite the first; name two files",
                                  outputs[i].second, outputs[j].second, outputs[j].first));
}

std::vector<std::string> list_folder(const std::string& dir, std::string_view what) {
  std::vector<std::string> entries;
  std::error_code ec;
  fs::directory_iterator it{dir, ec};
  for (; !ec && it != fs::directory_iterator{}; it.increment(ec)) entries.push_back(it->path().string());
  if (ec) throw IoError(fmt::format("{} {} cannot be listed ({})", what, dir, ec.message()));
  return entries;
}

bool is_folder(const std::string& path, std::string_view what) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) return false;
  if (ec) throw IoError(fmt::format("{} {} cannot be reached ({})", what, path, ec.message()));
  return status.type() == fs::file_type::directory;
}

void write_atomically(const std::string& path_given, const std::function<bool(std::FILE*)>& write) {
  require_replaceable(path_given, "the output");
  // Through a symbolic link: its file is replaced, the link stays.
  std::string path = path_given;
  std::error_code ec;
  if (fs::is_symlink(path_given, ec))
    if (const fs::path target = fs::canonical(path_given, ec); !ec) path = target.string();
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) throw IoError(fmt::format("{}: cannot write ({})", tmp, std::strerror(errno)));
  bool ok = write(f);
  ok = ok && std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw IoError(fmt::format("{}: writing failed ({}); the previous file, if any, is unchanged", path, reason));
  }
  // The rename lives in the folder's entry: flush it too, so the new file survives a power loss.
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY); dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_text_atomically(const std::string& path, std::string_view text) {
  write_atomically(path, [&](std::FILE* f) { return std::fwrite(text.data(), 1, text.size(), f) == text.size(); });
}

}  // namespace accrue
