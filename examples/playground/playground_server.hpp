#pragma once
// The playground's server: one page and a small HTTP API over real training of the tutorial's
// FashionMNIST MLP or CNN, one run at a time, its events streamed to every page that watches.
//
//   GET  /             the page
//   GET  /api/status   whether a run is going, its settings and counters
//   POST /api/plan     settings -> the memory plan by category against the cap, and the advice
//                      an out-of-memory error would give when it does not fit
//   POST /api/runs     settings -> 201 {"run": id}; 400 {"error": ...} for bad settings; 409
//                      {"error": ..., "settings": ...} while another run is going
//   GET  /api/events   Server-Sent Events: the current run's from its start, then the next runs'
//   POST /api/stop     ends the run after its current micro-batch; 409 when none is going
//
// Settings are a JSON object; keys left out keep their defaults (Settings). What the server refuses
// before a request reaches these routes (slow or oversized requests, other machines, pages of other
// sites) is in http_server.hpp.

#include <accrue/accrue.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http_server.hpp"

namespace playground {

using json = nlohmann::ordered_json;

/// What a run trains and how: the JSON keys are the member names.
struct Settings {
  std::string model = "mlp";                 // "mlp" (the tutorial's) or "cnn"
  std::int64_t micro_batch = 16;             // samples per forward pass
  std::int64_t accumulate = 4;               // micro-batches per optimizer step
  double memory_cap_mib = 0;                 // the model's memory (datasets not counted); 0: no cap
  bool amp = false;                          // .amp(): bfloat16 on the CPU
  bool recompute = false;                    // RecomputePolicy::every(): sqrt(n) segments recomputed in backward
  std::string normalization = "per_window";  // or the tutorials' "per_micro_batch"
  double lr = 0.2;                           // SGD's learning rate
  std::string schedule = "constant";         // or "warmup_cosine" (10% warmup) over the epochs' optimizer steps
  std::int64_t epochs = 1;
  std::int64_t max_steps = 0;  // stop after this many optimizer steps; 0: run the epochs
  std::int64_t pace_ms = 0;    // a pause after each micro-batch, to watch it happen
  std::uint64_t seed = 0;

  json to_json() const;
  /// The cap in bytes (0: none).
  std::size_t cap_bytes() const { return static_cast<std::size_t>(memory_cap_mib * 1024 * 1024); }
};

/// A setting that cannot be used, with the message the 400 answer carries.
struct SettingsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The settings in `body` (a JSON object); SettingsError naming the key and what is wrong with it
/// (text where a number belongs, a micro-batch of 0, an accumulation of 10^9, an unknown key). The
/// message describes a client's value by its type and size, never by quoting it whole, and JSON
/// nested deeper than max_settings_depth is refused as it is read.
Settings parse_settings(std::string_view body, std::int64_t training_samples);
inline constexpr int max_settings_depth = 8;

/// The events of the current run, kept from its start so that a page opened late sees all of it.
class EventLog {
 public:
  struct Cursor {
    std::int64_t run = -1;
    std::size_t next = 0;
  };
  void begin_run(std::int64_t run);
  void publish(std::string event);
  /// The events after `cursor` (all of a newer run's); advances it. Never blocks.
  std::vector<std::string> take(Cursor& cursor);
  /// Calls `wake` after every change, until unsubscribe(id) returns.
  std::uint64_t subscribe(std::function<void()> wake);
  void unsubscribe(std::uint64_t id);

 private:
  void changed();  // with mutex_ held: the wake-ups run under it, so none comes after unsubscribe
  std::mutex mutex_;
  std::int64_t run_ = 0;
  std::vector<std::string> events_;
  std::vector<std::pair<std::uint64_t, std::function<void()>>> subscribers_;
  std::uint64_t next_id_ = 0;
};

class Playground {
 public:
  /// Trains on `train` on `device`.
  Playground(accrue::Dataset train, accrue::Device device);
  /// Stops the run and waits for its thread.
  ~Playground();
  Playground(const Playground&) = delete;
  Playground& operator=(const Playground&) = delete;

  /// Adds the page and the API to `server`.
  void serve(http::Server& server, std::string page);

  /// The memory plan of `settings` against its cap (POST /api/plan).
  json plan(const Settings& settings) const;
  /// Starts a run in its own thread and gives its id; none while a run is going or the server closes.
  std::optional<std::int64_t> start(const Settings& settings);
  /// Ends the run after its current micro-batch and waits for its thread; false when none was going.
  bool stop();
  json status() const;
  /// Training threads alive: 0 or 1 (for the load test).
  int training_threads() const { return threads_alive_.load(); }

  static constexpr int max_streams = 48;

 private:
  class Stream;
  class Watcher;
  http::Response plan_request(const http::Request& request) const;
  http::Response start_request(const http::Request& request);
  http::Response stop_request();
  void train(std::int64_t run, Settings settings);
  accrue::Sequential build(const Settings& settings) const;
  void join_finished();

  accrue::Dataset train_;
  accrue::Device device_;
  EventLog events_;
  std::mutex control_;        // start and stop, one at a time (held while a stop waits for the thread)
  mutable std::mutex mutex_;  // what the training thread shares with the server's threads
  std::condition_variable stop_requested_;
  std::thread worker_;
  bool running_ = false, stopping_ = false;
  std::int64_t run_ = 0;
  Settings settings_;
  std::int64_t micro_batches_ = 0, optimizer_steps_ = 0;
  double last_loss_ = std::numeric_limits<double>::quiet_NaN();
  std::string outcome_;
  std::atomic<int> threads_alive_{0}, streams_{0};
  std::atomic<bool> closing_{false};
};

}  // namespace playground
