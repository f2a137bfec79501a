#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <accrue/accrue.hpp>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace playground {

namespace {

std::string errno_text() { return std::strerror(errno); }

// This process's environment with `changes` (NAME=value) put in, each replacing its name.
std::vector<std::string> merged_environment(const std::vector<std::string>& changes) {
  std::vector<std::string> out;
  const auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry{*e};
    bool replaced = false;
    for (const std::string& c : changes) replaced = replaced || name_of(c) == name_of(entry);
    if (!replaced) out.emplace_back(entry);
  }
  out.insert(out.end(), changes.begin(), changes.end());
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& environment) {
  ACCRUE_CHECK(!argv.empty(), "a child process needs a program");
  std::vector<std::string> args = argv, env = merged_environment(environment);
  std::vector<char*> arg_pointers = pointers(args), env_pointers = pointers(env);
  int input[2], output[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, input) != 0)
    throw accrue::IoError(fmt::format("could not start {}: socketpair: {}", argv[0], errno_text()));
  if (::pipe2(output, O_CLOEXEC) != 0) {
    const std::string why = errno_text();
    ::close(input[0]);
    ::close(input[1]);
    throw accrue::IoError(fmt::format("could not start {}: pipe: {}", argv[0], why));
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    // Only async-signal-safe calls until exec: this process may have other threads.
    ::dup2(input[1], STDIN_FILENO);
    ::dup2(output[1], STDOUT_FILENO);
    ::close_range(3, ~0U, 0);  // the server's sockets stay with the server
    ::execve(arg_pointers[0], arg_pointers.data(), env_pointers.data());
    ::_exit(127);
  }
  const std::string why = errno_text();
  ::close(input[1]);
  ::close(output[1]);
  input_ = input[0];
  output_ = output[0];
  if (pid_ < 0) {
    ::close(input_);
    ::close(output_);
    throw accrue::IoError(fmt::format("could not start {}: fork: {}", argv[0], why));
  }
}

ChildProcess::~ChildProcess() {
  kill();
  wait();
  ::close(input_);
  ::close(output_);
}

bool ChildProcess::send(std::string_view line) {
  std::string text{line};
  text += '\n';
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::send(input_, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<std::string> ChildProcess::read_line(std::size_t longest) {
  for (;;) {
    if (const std::size_t end = buffer_.find('\n'); end != std::string::npos || buffer_.size() >= longest) {
      const std::size_t cut = std::min(end, longest);
      std::string line = buffer_.substr(0, cut);
      buffer_.erase(0, end == std::string::npos ? cut : end + 1);
      return line;
    }
    char chunk[65536];
    const ssize_t n = ::read(output_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (buffer_.empty()) return std::nullopt;
      return std::exchange(buffer_, {});
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

void ChildProcess::kill() {
  const std::lock_guard lock{mutex_};
  if (!reaped_) ::kill(pid_, SIGKILL);
}

std::string ChildProcess::wait() {
  // Waits without reaping first: until it is reaped under the mutex its pid cannot be reused, so
  // kill() from another thread cannot reach another process.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  const std::lock_guard lock{mutex_};
  if (reaped_) return ended_;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) ended_ = fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) ended_ = fmt::format("signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  return ended_;
}

}  // namespace playground
