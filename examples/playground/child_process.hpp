#pragma once
// A process the playground starts to train one run: its stdin takes control lines and its stdout
// gives events, one JSON object per line. A run in its own process has its own memory accounting
// and cap, its own random generator and its own compute threads, and whatever it does (a crash, an
// out-of-memory kill) ends only itself.

#include <sys/types.h>

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace playground {

class ChildProcess {
 public:
  /// Starts `argv` (argv[0] a path) with this process's environment plus `environment` (NAME=value
  /// each, replacing a variable of the same name); its stderr is this process's. Throws
  /// accrue::IoError when it cannot start.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& environment);
  /// Kills the process if it still runs, and reaps it.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  /// Writes `line` and a newline to its stdin; false once it has closed stdin or ended (never a
  /// SIGPIPE).
  bool send(std::string_view line);
  /// The next line of its stdout, without the newline; none at its end. Lines longer than
  /// `longest` are cut there. Blocks: for one reading thread.
  std::optional<std::string> read_line(std::size_t longest = 1 << 20);
  /// SIGKILL, when it still runs.
  void kill();
  /// Waits for it to end (from any one thread): "" when it exited with status 0, else what ended it ("exit status 3",
  /// "signal 9 (Killed)").
  std::string wait();

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int input_ = -1, output_ = -1;  // our ends of its stdin (a socket: send() can refuse SIGPIPE) and stdout
  std::string buffer_;
  std::mutex mutex_;  // kill() against the reaping in wait()
  bool reaped_ = false;
  std::string ended_;
};

}  // namespace playground
