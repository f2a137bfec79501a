#pragma once
// The readers take paths, so each input is written to a file in memory (/dev/shm) first.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace accrue::fuzz {

inline const std::string& input_path(const char* name) {
  static const std::string path = "/dev/shm/accrue-" + std::string(name) + "-" + std::to_string(::getpid());
  return path;
}

inline const std::string& write_input(const char* name, const std::uint8_t* data, std::size_t size) {
  const std::string& path = input_path(name);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace accrue::fuzz
