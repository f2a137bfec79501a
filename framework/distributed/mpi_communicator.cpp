// The MPI backend of Communicator (built when CMake finds MPI). Errors are returned, not fatal
// (MPI_ERRORS_RETURN), so a failed collective becomes a CommunicationError naming the rank.
//
// One thread of the process makes every MPI call, in the order the calls were started: gradient
// buckets started during backward travel while the training thread goes on, MPI needs only
// MPI_THREAD_FUNNELED, and a wait can give up after the timeout (the watchdog) even though the
// MPI call itself cannot be interrupted.

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "communicator.hpp"
#include "../core/error.hpp"

namespace accrue::distributed::detail {

namespace {

void check(int code, const char* call, int rank) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw CommunicationError(fmt::format("rank {}: {} failed: {}", rank, call, std::string(text, static_cast<std::size_t>(length))));
}

// One MPI call (or a few in a row) on the MPI thread, and its outcome.
struct Call {
  std::string what;  // "MPI_Allgather", for the watchdog's message
  std::function<void()> body;
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::exception_ptr error;
  double seconds = 0;
};

// The thread that makes the process's MPI calls, one after the other.
class MpiThread {
 public:
  MpiThread() : thread_([this] { run(); }) {}
  ~MpiThread() {
    {
      const std::lock_guard lock{mutex_};
      stopping_ = true;
    }
    queued_.notify_one();
    thread_.join();
  }

  std::shared_ptr<Call> start(std::string what, std::function<void()> body) {
    auto call = std::make_shared<Call>();
    call->what = std::move(what);
    call->body = std::move(body);
    {
      const std::lock_guard lock{mutex_};
      calls_.push_back(call);
    }
    queued_.notify_one();
    return call;
  }

  // Waits for `call` for at most `timeout` seconds (the watchdog); rethrows its error. A call that
  // did not finish leaves this thread inside MPI for good: stuck() says so from then on.
  void wait(Call& call, double timeout, int rank) {
    std::unique_lock lock{call.mutex};
    if (!call.finished.wait_for(lock, std::chrono::duration<double>(timeout), [&] { return call.done; })) {
      stuck_ = true;
      throw CommunicationError(fmt::format(
          "rank {}: {} did not finish within {} s; another process of the run has stopped, hangs, called a "
          "different collective, or cannot be reached{} (distributed::world().set_timeout_seconds changes the limit)",
          rank, call.what, timeout, peers_.empty() ? "" : " (" + peers_ + ")"));
    }
    if (call.error) std::rethrow_exception(call.error);
  }
  bool stuck() const { return stuck_; }
  // Who the other processes are, for the watchdog's message: "rank 1 on node7, ...". Set once,
  // before the first wait.
  void set_peers(std::string peers) { peers_ = std::move(peers); }

 private:
  void run() {
    for (;;) {
      std::shared_ptr<Call> call;
      {
        std::unique_lock lock{mutex_};
        queued_.wait(lock, [&] { return stopping_ || !calls_.empty(); });
        if (calls_.empty()) return;
        call = std::move(calls_.front());
        calls_.pop_front();
      }
      const auto start = std::chrono::steady_clock::now();
      std::exception_ptr error;
      try {
        call->body();
      } catch (...) {
        error = std::current_exception();
      }
      // The body's captures (the tensor it wrote) go while the caller still waits and holds the
      // tensor too: a last reference dropped here later could free memory after the process began
      // to exit and its allocator was gone.
      call->body = nullptr;
      {
        const std::lock_guard lock{call->mutex};
        call->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        call->error = error;
        call->done = true;
      }
      call->finished.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<std::shared_ptr<Call>> calls_;
  bool stopping_ = false;
  std::atomic<bool> stuck_{false};
  std::string peers_;
  std::thread thread_;  // last: starts once the queue exists
};

// The parts of a tensor that reduce-scatters and allgathers cut, as MPI takes them (int counts
// and offsets, in elements).
struct Parts {
  std::vector<int> counts, offsets;
  Parts(std::span<const std::int64_t> elements, const char* call) {
    std::int64_t at = 0;
    for (const std::int64_t c : elements) {
      ACCRUE_CHECK(at + c <= std::numeric_limits<int>::max(), "{}: {} elements exceed one MPI call", call, at + c);
      counts.push_back(static_cast<int>(c));
      offsets.push_back(static_cast<int>(at));
      at += c;
    }
  }
};

// Every rank's part `me` of `data` summed into it, in rank order: each rank sends part r to rank r
// (MPI_Alltoallv), which adds the pieces it receives left to right, rank 0's first. The order does
// not depend on how the tensor is cut, so a reduce-scatter gives the bits an allreduce does.
void reduce_scatter_in_rank_order(float* data, const Parts& p, int me, int ranks) {
  const int mine = p.counts[static_cast<std::size_t>(me)];
  std::vector<float> pieces(static_cast<std::size_t>(mine) * static_cast<std::size_t>(ranks));
  std::vector<int> receive_counts(static_cast<std::size_t>(ranks), mine), receive_offsets;
  for (int r = 0; r < ranks; ++r) receive_offsets.push_back(r * mine);
  check(MPI_Alltoallv(data, p.counts.data(), p.offsets.data(), MPI_FLOAT, pieces.data(), receive_counts.data(),
                      receive_offsets.data(), MPI_FLOAT, MPI_COMM_WORLD),
        "MPI_Alltoallv (reduce_scatter_sum)", me);
  float* out = data + p.offsets[static_cast<std::size_t>(me)];
  std::copy(pieces.begin(), pieces.begin() + mine, out);
  for (int r = 1; r < ranks; ++r) {
    const float* piece = pieces.data() + static_cast<std::ptrdiff_t>(r) * mine;
    for (int i = 0; i < mine; ++i) out[i] += piece[i];
  }
}

void allgather_parts(float* data, const Parts& p, int me) {
  check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, p.counts.data(), p.offsets.data(), MPI_FLOAT, MPI_COMM_WORLD),
        "MPI_Allgatherv (allgather)", me);
}

class Mpi;

// What a started tensor collective was, for the statistics.
enum class Collective { allreduce, reduce_scatter, allgather };

class MpiWork final : public Work {
 public:
  MpiWork(Mpi& owner, std::shared_ptr<Call> call, std::size_t bytes, Collective kind = Collective::allreduce)
      : owner_(owner), call_(std::move(call)), bytes_(bytes), kind_(kind) {}
  ~MpiWork() override;
  void wait() override;

 private:
  Mpi& owner_;
  std::shared_ptr<Call> call_;
  std::size_t bytes_;
  Collective kind_;
  bool waited_ = false;
};

class Mpi final : public Communicator {
 public:
  Mpi(std::unique_ptr<MpiThread> thread, int rank, int size) : Communicator(rank, size), thread_(std::move(thread)) {}
  ~Mpi() override { finalize(timeout_seconds()); }

  // MPI_Finalize waits for every process to call it. A process that cannot finalize (its MPI
  // thread is stuck in a call the watchdog gave up on, or the others do not come within `seconds`)
  // ends the run instead of hanging.
  void finalize(double seconds) {
    if (finalized_) return;
    finalized_ = true;
    if (thread_->stuck())
      abort("a collective call did not finish earlier (see above), so MPI cannot be finalized");
    try {
      run("MPI_Finalize", [] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
      }, seconds);
    } catch (const Error&) {
      abort(fmt::format("MPI_Finalize waited {} s for the other processes, which did not come (one may be waiting "
                        "for this one in a collective call)",
                        seconds));
    }
  }

  // A process that exits with a failure may have left the others waiting for it in a collective
  // call: it waits a little for them at MPI_Finalize (they finish too when they failed together),
  // then ends the run.
  void exiting(int status) override {
    if (status != 0 && size() > 1) finalize(10);
  }
  std::string_view backend() const override { return "mpi"; }

  // Every element is added in rank order, in one place, and sent on, so every rank holds the same
  // bits, and the bits a sharded run's reduce-scatter gives. Between two processes MPI_Allreduce
  // does that whatever its algorithm (one addition per element, and x0 + x1 == x1 + x0), and is
  // 1.3x faster here than the general way: a reduce-scatter in rank order over even parts, then an
  // allgather (MPI_Allreduce's algorithms for three or more may group the additions otherwise).
  // tests/distributed/test_communicator.cpp checks both; a training run compares its replicas'
  // parameters at every epoch's end.
  std::unique_ptr<Work> start_allreduce_sum(const Tensor& t) override {
    require_float32_cpu(t);
    ACCRUE_CHECK(t.numel() <= std::numeric_limits<int>::max(), "allreduce_sum: {} elements exceed one MPI call", t.numel());
    const Parts parts{even_parts(t.numel(), 16), "allreduce_sum"};
    t.bump_version();
    float* data = t.data<float>();
    const int me = rank(), ranks = size(), n = static_cast<int>(t.numel());
    auto call = thread_->start("allreduce_sum", [=, keep = t] {
      if (n == 0) return;
      if (ranks == 2) {
        check(MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce (allreduce_sum)", me);
        return;
      }
      reduce_scatter_in_rank_order(data, parts, me, ranks);
      allgather_parts(data, parts, me);
    });
    return std::make_unique<MpiWork>(*this, std::move(call), t.nbytes());
  }

  std::unique_ptr<Work> start_reduce_scatter_sum(const Tensor& t, std::span<const std::int64_t> counts) override {
    return start_on_parts(t, counts, Collective::reduce_scatter);
  }
  std::unique_ptr<Work> start_allgather(const Tensor& t, std::span<const std::int64_t> counts) override {
    return start_on_parts(t, counts, Collective::allgather);
  }

  // A reduce-scatter or an allgather of `t` cut into parts of `counts` elements.
  std::unique_ptr<Work> start_on_parts(const Tensor& t, std::span<const std::int64_t> counts, Collective kind) {
    const bool reduce = kind == Collective::reduce_scatter;
    const char* what = reduce ? "reduce_scatter_sum" : "allgather";
    require_float32_cpu(t);
    require_parts(t, counts, what);
    const Parts parts{counts, what};
    t.bump_version();
    float* data = t.data<float>();
    const int me = rank(), ranks = size();
    auto call = thread_->start(reduce ? "reduce_scatter_sum (MPI_Alltoallv)" : "allgather (MPI_Allgatherv)", [=, keep = t] {
      if (keep.numel() == 0) return;
      if (reduce) reduce_scatter_in_rank_order(data, parts, me, ranks);
      else allgather_parts(data, parts, me);
    });
    return std::make_unique<MpiWork>(*this, std::move(call), t.nbytes(), kind);
  }

  void allreduce_sum(std::span<double> values) override {
    ACCRUE_CHECK(values.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
                 "allreduce_sum: {} values exceed one MPI call", values.size());
    if (values.empty()) return;
    const int n = static_cast<int>(values.size()), me = rank();
    double* data = values.data();
    run("allreduce_sum of host values (MPI_Allreduce)", [=] {
      check(MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce (allreduce_sum)", me);
    });
  }

  void broadcast(const Tensor& t, int root) override {
    ACCRUE_CHECK(root >= 0 && root < size(), "broadcast from rank {}: the run has ranks 0..{}", root, size() - 1);
    ACCRUE_CHECK(t.device().is_cpu(), "broadcast: expects a CPU tensor, got one on {}", t.device());
    ACCRUE_CHECK(t.nbytes() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
                 "broadcast: {} bytes exceed one MPI call", t.nbytes());
    if (t.nbytes() == 0) return;
    t.bump_version();
    void* data = t.data_ptr();
    const int bytes = static_cast<int>(t.nbytes()), me = rank();
    run("broadcast (MPI_Bcast)", [=] { check(MPI_Bcast(data, bytes, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast", me); });
  }

  void barrier() override {
    const int me = rank();
    run("barrier (MPI_Barrier)", [=] { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", me); });
  }

  std::vector<std::int64_t> allgather(std::int64_t value) override {
    std::vector<std::int64_t> all(static_cast<std::size_t>(size()));
    std::int64_t* out = all.data();
    const int me = rank();
    run("allgather (MPI_Allgather)", [=, &value] {
      check(MPI_Allgather(&value, 1, MPI_INT64_T, out, 1, MPI_INT64_T, MPI_COMM_WORLD), "MPI_Allgather", me);
    });
    return all;
  }

  // From this thread while the MPI thread may be inside a collective: MPI_Abort only asks the
  // launcher to end the job, which is what is wanted.
  void stop_all() override { MPI_Abort(MPI_COMM_WORLD, 1); }

  MpiThread& thread() { return *thread_; }

  // A tensor collective's cost, once it was waited for.
  void count(const Call& call, std::size_t tensor_bytes, Collective kind) {
    if (kind != Collective::allreduce) return count_sharded(kind == Collective::reduce_scatter, tensor_bytes, call.seconds);
    ++stats_.tensor_allreduces;
    stats_.tensor_allreduce_bytes += static_cast<std::int64_t>(tensor_bytes);
    stats_.tensor_allreduce_seconds += call.seconds;
  }

 private:
  // A blocking collective: started on the MPI thread after everything started before it.
  void run(std::string what, std::function<void()> body, std::optional<double> timeout = std::nullopt) {
    const std::shared_ptr<Call> call = thread_->start(std::move(what), std::move(body));
    thread_->wait(*call, timeout.value_or(timeout_seconds()), rank());
    ++stats_.other_calls;
  }

  std::unique_ptr<MpiThread> thread_;
  bool finalized_ = false;
};

MpiWork::~MpiWork() {
  // A call that was started must finish before the tensor it writes into may go (the call keeps
  // the tensor's storage, so one stuck in MPI is not waited for: the run is ending then).
  if (!waited_ && !owner_.thread().stuck()) {
    std::unique_lock lock{call_->mutex};
    call_->finished.wait(lock, [&] { return call_->done; });
  }
}

void MpiWork::wait() {
  if (waited_) return;
  owner_.thread().wait(*call_, owner_.timeout_seconds(), owner_.rank());
  waited_ = true;
  owner_.count(*call_, bytes_, kind_);
}

// Every process's host (MPI_Get_processor_name), in rank order.
std::vector<std::string> host_names(int rank, int size) {
  std::vector<char> names(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME, '\0');
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  check(MPI_Get_processor_name(mine, &length), "MPI_Get_processor_name", rank);
  check(MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                      MPI_COMM_WORLD),
        "MPI_Allgather (host names)", rank);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) {
    const char* name = names.data() + static_cast<std::ptrdiff_t>(r) * MPI_MAX_PROCESSOR_NAME;
    out.emplace_back(name, strnlen(name, MPI_MAX_PROCESSOR_NAME));
  }
  return out;
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_world() {
  auto thread = std::make_unique<MpiThread>();
  int rank = -1, size = 1;
  std::vector<std::string> hosts;
  const std::shared_ptr<Call> init = thread->start("MPI_Init_thread", [&] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread", -1);
    }
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", -1);
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank", -1);
    check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size", rank);
    hosts = host_names(rank, size);
  });
  thread->wait(*init, 600, -1);
  std::string peers;
  for (int r = 0, named = 0; r < size; ++r) {
    if (r == rank) continue;
    if (++named > 8) {
      peers += fmt::format(", and {} more", size - 1 - 8);
      break;
    }
    peers += fmt::format("{}rank {} on {}", peers.empty() ? "" : ", ", r, hosts[static_cast<std::size_t>(r)]);
  }
  thread->set_peers(std::move(peers));
  return std::make_unique<Mpi>(std::move(thread), rank, size);
}

}  // namespace accrue::distributed::detail
