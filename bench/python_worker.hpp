#pragma once
// A Python process (the PyTorch side of a benchmark) that answers each request line with one line
// holding a number of seconds, after first printing "ready ..." (its banner).

#include <sys/wait.h>
#include <unistd.h>

#include <accrue/framework/core/error.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace accrue::bench {

/// The benchmark's Python script `name`: the one beside the program (the GPU bundle carries both),
/// else the source tree's (`source_dir`).
inline std::string script_beside(const char* argv0, const std::string& name, const std::string& source_dir) {
  const std::string here = std::filesystem::path(argv0).parent_path().string() + "/" + name;
  return std::filesystem::exists(here) ? here : source_dir + "/" + name;
}

class PythonWorker {
 public:
  /// Runs `python` with `args` (the script first) and the environment additions `env`; throws
  /// Error when it does not start or does not say "ready".
  PythonWorker(const std::string& python, const std::vector<std::string>& args,
               const std::vector<std::pair<std::string, std::string>>& env) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) throw Error("pipe() failed");
    pid_ = fork();
    if (pid_ < 0) throw Error("fork() failed");
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv{const_cast<char*>(python.c_str())};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(python.c_str(), argv.data());
      std::perror("exec python");
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    in_ = fdopen(to_child[1], "w");
    out_ = fdopen(from_child[0], "r");
    banner_ = read_line();
    if (banner_.rfind("ready", 0) != 0) throw Error("the PyTorch worker did not start: " + banner_);
  }
  ~PythonWorker() {
    std::fputs("quit\n", in_);
    std::fflush(in_);
    std::fclose(in_);
    std::fclose(out_);
    waitpid(pid_, nullptr, 0);
  }
  PythonWorker(const PythonWorker&) = delete;
  PythonWorker& operator=(const PythonWorker&) = delete;

  /// Sends one request line and returns the number the worker answers.
  double ask(const std::string& request) {
    std::fprintf(in_, "%s\n", request.c_str());
    std::fflush(in_);
    return std::stod(read_line());
  }
  const std::string& banner() const { return banner_; }

 private:
  std::string read_line() {
    char buf[256];
    if (std::fgets(buf, sizeof buf, out_) == nullptr) throw Error("the PyTorch worker stopped");
    std::string s{buf};
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }
  pid_t pid_ = -1;
  std::FILE* in_ = nullptr;
  std::FILE* out_ = nullptr;
  std::string banner_;
};

}  // namespace accrue::bench
