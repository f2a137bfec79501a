#pragma once
// What the server keeps of one workspace (internal to playground_server.cpp and workspaces.cpp).

#include <cmath>
#include <memory>
#include <string>
#include <thread>

#include "child_process.hpp"
#include "playground_server.hpp"

namespace playground {

struct Playground::Workspace {
  enum class State { idle, queued, running };
  std::string name, key;
  EventLog events;  // the current run's
  // The rest under Playground::mutex_.
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
