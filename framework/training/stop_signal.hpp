#pragma once
// SIGINT (Ctrl-C) and SIGTERM during training: the first asks the loop to stop after the current
// micro-batch (it writes a checkpoint when it has a folder for them, then throws Interrupted); a
// second ends the process at once, as the signal would have without Accrue.

#include <csignal>

#include "../core/non_copyable.hpp"

namespace accrue {

/// While an instance lives, SIGINT and SIGTERM are caught and remembered instead of ending the
/// process (the first one; a second ends it). The handlers before it come back when the last
/// instance goes. Instances nest; the signal is shared.
class StopSignal : NonCopyable {
 public:
  StopSignal();
  ~StopSignal();

  /// The signal received since the first instance was made (SIGINT, SIGTERM), or 0.
  int received() const;
};

/// The signal a living StopSignal has received, or 0 (also when none lives): for work inside
/// training that stops early when asked (the validation at an epoch's end).
int pending_stop_signal();

/// "SIGINT", "SIGTERM", or "a signal".
const char* signal_name(int signal);

}  // namespace accrue
