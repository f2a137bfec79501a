#include "stop_signal.hpp"

#include <unistd.h>

#include <atomic>
#include <mutex>

namespace accrue {
namespace {

std::atomic<int> received_signal{0};
std::mutex guard_mutex;
int guards = 0;
struct sigaction previous_int, previous_term;

void on_signal(int signal) {
  int none = 0;
  if (!received_signal.compare_exchange_strong(none, signal)) {
    // The second one: what the signal does without a handler, at once.
    ::signal(signal, SIG_DFL);
    ::raise(signal);
    return;
  }
  static constexpr char message[] =
      "\n[accrue] stopping after this micro-batch, or this batch of a validation (a checkpoint is written when there "
      "is a checkpoint folder); send the signal again to stop at once\n";
  // write() is safe in a signal handler; what it returns cannot be acted on here.
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, message, sizeof message - 1);
}

}  // namespace

StopSignal::StopSignal() {
  const std::lock_guard lock{guard_mutex};
  if (guards++ > 0) return;
  received_signal.store(0);
  struct sigaction action = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

StopSignal::~StopSignal() {
  const std::lock_guard lock{guard_mutex};
  if (--guards > 0) return;
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

int StopSignal::received() const { return received_signal.load(); }

int pending_stop_signal() {
  const std::lock_guard lock{guard_mutex};
  return guards > 0 ? received_signal.load() : 0;
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace accrue
