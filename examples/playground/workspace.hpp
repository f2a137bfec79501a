#pragma once
// What the server keeps of one workspace (internal to playground_server.cpp and workspaces.cpp).

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "child_process.hpp"
#include "playground_server.hpp"

namespace playground {

struct Playground::Workspace {
  using Clock = std::chrono::steady_clock;
  enum class State { idle, queued, running };
  std::string name, key;
  std::string address;  // the client's that opened it
  EventLog events;      // the current run's
  // The rest under Playground::mutex_.
  Clock::time_point last_seen = Clock::now();  // its last request or page
  int watchers = 0;                            // its pages watching now
  Clock::time_point started{};                 // when its run began training
  std::optional<Clock::time_point> stop_sent;  // when it was asked to stop, to kill it if it does not
  State state = State::idle;
  Settings settings;
  std::int64_t run = 0;
  std::unique_ptr<ChildProcess> process;
  std::thread relay;  // reads the process's events
  bool stopping = false;
  std::int64_t micro_batches = 0, optimizer_steps = 0;
  double loss = NAN;
  std::string outcome;
};

}  // namespace playground
