// The checkpoint folder: the files' names and order, the lock that keeps a second run out, and
// keeping the newest.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>

#include "training_checkpoint.hpp"
#include "../framework/core/files.hpp"
#include "../framework/core/log.hpp"

namespace accrue::detail {

std::string checkpoint_name(std::int64_t micro_batches) {
  return fmt::format("checkpoint-{:010}.safetensors", micro_batches);
}

std::vector<std::string> checkpoints_in(const std::string& dir) {
  static const std::regex pattern{R"(checkpoint-(\d{1,18})\.safetensors)"};
  std::vector<std::pair<std::int64_t, std::string>> found;
  if (!is_folder(dir, "checkpoint folder")) return {};  // not made yet: no checkpoint
  for (const std::string& path : list_folder(dir, "checkpoint folder")) {
    std::smatch m;
    const std::string name = std::filesystem::path(path).filename().string();
    std::error_code ec;
    if (std::regex_match(name, m, pattern) && std::filesystem::is_regular_file(path, ec))
      found.emplace_back(std::stoll(m[1].str()), path);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

CheckpointFolderLock::CheckpointFolderLock(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / ".accrue-lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError(fmt::format("checkpoint folder {}: cannot open its lock file {} ({})", dir, path, std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char holder[32] = {};
    const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
    ::close(fd_);
    if (error == EWOULDBLOCK)
      throw IoError(fmt::format("checkpoint folder {} is in use by another training run (process {}, which holds {}); "
                                "two runs in one folder would take over each other's checkpoints: wait for it to end "
                                "or give this run another folder",
                                dir, n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : std::string{"unknown"},
                                path));
    throw IoError(fmt::format("checkpoint folder {}: cannot lock {} ({})", dir, path, std::strerror(error)));
  }
  // The holder's process id, for the message of a run that finds the folder taken.
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    log::warning("checkpoint folder {}: could not write this process's id into {} ({})", dir, path, std::strerror(errno));
}

CheckpointFolderLock::~CheckpointFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

CheckpointFolderLock prepare_checkpoint_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError(fmt::format("checkpoint: cannot create the folder {} ({})", dir, ec.message()));
  CheckpointFolderLock lock{dir};
  // save_safetensors writes "<name>.tmp-<pid>" and renames it; a kill in between leaves it behind.
  // With the folder locked, no other run is writing one.
  for (const std::string& path : list_folder(dir, "checkpoint folder")) {
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.starts_with("checkpoint-") && name.find(".safetensors.tmp-") != std::string::npos)
      std::filesystem::remove(path, ec);
  }
  return lock;
}

void keep_newest_checkpoints(const std::string& dir, int keep) {
  const std::vector<std::string> all = checkpoints_in(dir);
  std::vector<std::string> kept;  // their names without ".safetensors"
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::error_code ec;
    if (i < static_cast<std::size_t>(keep)) kept.push_back(std::filesystem::path(all[i]).stem().string());
    else std::filesystem::remove(all[i], ec);
  }
  // Optimizer shards ("checkpoint-<n>.shard-<r>-of-<p>.safetensors") go with their checkpoint, and
  // those of one never written (its run ended between the shards and it) go too.
  for (const std::string& path : list_folder(dir, "checkpoint folder")) {
    const std::string name = std::filesystem::path(path).filename().string();
    const std::size_t shard = name.find(".shard-");
    if (!name.starts_with("checkpoint-") || shard == std::string::npos || !name.ends_with(".safetensors")) continue;
    std::error_code ec;
    if (std::find(kept.begin(), kept.end(), name.substr(0, shard)) == kept.end()) std::filesystem::remove(path, ec);
  }
}

}  // namespace accrue::detail
