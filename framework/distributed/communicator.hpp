#pragma once
// The processes of a data-parallel run and the collective calls between them: the one seam through
// which Accrue communicates. Every rank calls the same collectives in the same order; each call
// returns once this rank's part is done (start_allreduce_sum returns at once and is waited for
// later, so gradients travel while backward goes on). Backends: MPI (Open MPI, CPU tensors) and, in
// one process started without mpirun, a single-process communicator for which every collective is
// the identity.
//
//   mpirun -np 4 ./train        // world().size() == 4 in each process
//   ./train                     // world().size() == 1, as without data parallelism

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../core/device.hpp"
#include "../core/tensor.hpp"

namespace accrue::distributed {

/// A collective call that was started and not yet waited for.
class Work {
 public:
  virtual ~Work() = default;
  /// Returns once this rank's part is done. Throws CommunicationError when the call failed, or when
  /// it did not finish within the communicator's timeout (a process of the run stopped or hangs).
  virtual void wait() = 0;
};

/// What a rank's collective calls have cost, counted when they are waited for.
struct CommunicationStats {
  std::int64_t tensor_allreduces = 0;    // allreduce_sum and start_allreduce_sum of tensors
  std::int64_t tensor_allreduce_bytes = 0;
  double tensor_allreduce_seconds = 0;   // from the call's start on the backend to its end
  /// Reduce-scatters and allgathers of tensors (sharded training): their count and the bytes of
  /// the whole tensors given; their time is in tensor_allreduce_seconds too.
  std::int64_t tensor_reduce_scatters = 0;
  std::int64_t tensor_reduce_scatter_bytes = 0;
  std::int64_t tensor_allgathers = 0;
  std::int64_t tensor_allgather_bytes = 0;
  std::int64_t other_calls = 0;          // broadcasts, barriers, allgathers of values, host allreduces
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's place, from 0, and the number of processes.
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// "mpi" or "single process".
  virtual std::string_view backend() const = 0;

  /// Starts summing `t` element-wise over all ranks, in place, and returns at once: every rank ends
  /// with the same sum. On the CPU (MPI) each element is added in rank order, rank 0's value first:
  /// ((x0 + x1) + x2) + ..., the same bits on every rank and the same as start_reduce_scatter_sum
  /// gives (between two processes any order is that one). float32, contiguous, on the CPU. `t` must be left alone until wait() returns. Calls run
  /// in the order they were started (so every rank must start the same ones in the same order),
  /// before any collective started after them.
  virtual std::unique_ptr<Work> start_allreduce_sum(const Tensor& t) = 0;
  /// start_allreduce_sum, waited for.
  void allreduce_sum(const Tensor& t) { start_allreduce_sum(t)->wait(); }
  /// Starts summing `t` over all ranks into each rank's part only (ZeRO's reduce-scatter): `t` is
  /// cut into consecutive parts of `counts` elements, one per rank in rank order (a count may be 0:
  /// a rank with no part); afterwards this rank's part holds every rank's part summed, the bits
  /// allreduce_sum gives those elements; the rest of `t` is left as it was. Same tensor
  /// requirements and ordering as start_allreduce_sum.
  virtual std::unique_ptr<Work> start_reduce_scatter_sum(const Tensor& t, std::span<const std::int64_t> counts) = 0;
  /// Starts copying each rank's part of `t` (parts as start_reduce_scatter_sum cuts them) to every
  /// rank: afterwards every rank's `t` holds rank r's part r, for every r.
  virtual std::unique_ptr<Work> start_allgather(const Tensor& t, std::span<const std::int64_t> counts) = 0;
  /// The parts of `elements` that the ranks own when they share it evenly in units of `align`
  /// elements: rank r gets units [U r / n, U (r + 1) / n) of the U = ceil(elements / align) units,
  /// the last unit cut short. A rank gets none when there are fewer units than ranks.
  std::vector<std::int64_t> even_parts(std::int64_t elements, std::int64_t align = 1) const;
  /// Makes every rank's `t` a copy of rank `root`'s (same shape and dtype everywhere).
  virtual void broadcast(const Tensor& t, int root) = 0;
  /// Returns once every rank has called it.
  virtual void barrier() = 0;
  /// The same for host values (metric counts and sums), in double.
  virtual void allreduce_sum(std::span<double> values) = 0;
  /// Every rank's `value`, in rank order: counts, flags and hashes, not tensors.
  virtual std::vector<std::int64_t> allgather(std::int64_t value) = 0;
  /// Rank `root`'s `text` on every rank (messages, descriptions of options).
  std::string broadcast(const std::string& text, int root);

  /// Stops every process of the run after writing `message` to stderr with this rank's name: for
  /// an error on one rank while the others wait in a collective call for it.
  [[noreturn]] void abort(std::string_view message);
  /// What abort() does after its message: ends the other processes too (MPI_Abort), where this
  /// backend can; this process then exits with status 1.
  virtual void stop_all() {}
  /// Called as the process exits with `status` (world() arranges it): a process that fails must not
  /// leave the others waiting for it.
  virtual void exiting(int /*status*/) {}

  /// How long one collective call may take before wait() gives up (the watchdog), in seconds.
  double timeout_seconds() const { return timeout_seconds_; }
  void set_timeout_seconds(double seconds);
  const CommunicationStats& stats() const { return stats_; }

 protected:
  Communicator(int rank, int size) : rank_(rank), size_(size) {}
  /// What allreduce_sum takes on every backend, so a program that runs alone runs under mpirun too.
  static void require_float32_cpu(const Tensor& t);
  /// Throws ValueError unless `counts` has one count >= 0 per rank, adding up to t's elements.
  void require_parts(const Tensor& t, std::span<const std::int64_t> counts, const char* call) const;
  /// Counts a reduce-scatter (or an allgather) of `bytes` that took `seconds`.
  void count_sharded(bool reduce_scatter, std::size_t bytes, double seconds);
  CommunicationStats stats_;

 private:
  int rank_, size_;
  double timeout_seconds_ = 600;
};

/// Whether this process was started by an MPI launcher (mpirun, mpiexec), from its environment.
bool launched_by_mpi();

/// The communicator of all processes of this run: over MPI when launched by mpirun (MPI starts on
/// the first call and finishes at exit), else this process alone. Throws CommunicationError when
/// launched by mpirun in a build without MPI. Under mpirun no process leaves the others waiting
/// for ever: an exception that escapes main ends the run (MPI_Abort) with this rank's name and
/// message; a process that exits with a failure status waits up to 10 s for the others at
/// MPI_Finalize, then ends the run; and one whose collective call timed out (the watchdog) ends it
/// at exit, as MPI cannot be finalized.
Communicator& world();

/// The communicator for tensors on `device`: world() for the CPU (and for a run of one process);
/// for a GPU, an NCCL communicator of the same processes, made on first use from an ncclUniqueId
/// that rank 0 creates and broadcasts over world(), with its collectives on their own stream.
/// Throws NotSupported in a build without NCCL.
Communicator& for_device(Device device);

/// This process's place among the processes mpirun started on this machine (0 without mpirun):
/// a distributed run on GPUs gives each process cuda:local_rank().
int local_rank();

/// A communicator of this process alone, whatever launched it (tests, and runs that do not train
/// data-parallel).
std::unique_ptr<Communicator> single_process();

}  // namespace accrue::distributed
