#pragma once
// The processes of a data-parallel run and the collective calls between them: the one seam through
// which Accrue communicates. Every rank calls the same collectives in the same order; each call
// returns once this rank's part is done. Backends: MPI (Open MPI, CPU tensors) and, in one process
// started without mpirun, a single-process communicator for which every collective is the identity.
//
//   mpirun -np 4 ./train        // world().size() == 4 in each process
//   ./train                     // world().size() == 1, as without data parallelism

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "accrue/framework/tensor.hpp"

namespace accrue::distributed {

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's place, from 0, and the number of processes.
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// "mpi" or "single process".
  virtual std::string_view backend() const = 0;

  /// Sums `t` element-wise over all ranks, in place: every rank ends with the same sum, added in
  /// the same order. float32, contiguous, on the CPU.
  virtual void allreduce_sum(const Tensor& t) = 0;
  /// Makes every rank's `t` a copy of rank `root`'s (same shape and dtype everywhere).
  virtual void broadcast(const Tensor& t, int root) = 0;
  /// Returns once every rank has called it.
  virtual void barrier() = 0;
  /// The same for host values (metric counts and sums), in double.
  virtual void allreduce_sum(std::span<double> values) = 0;
  /// Every rank's `value`, in rank order: counts, flags and hashes, not tensors.
  virtual std::vector<std::int64_t> allgather(std::int64_t value) = 0;

 protected:
  Communicator(int rank, int size) : rank_(rank), size_(size) {}
  /// What allreduce_sum takes on every backend, so a program that runs alone runs under mpirun too.
  static void require_float32_cpu(const Tensor& t);

 private:
  int rank_, size_;
};

/// Whether this process was started by an MPI launcher (mpirun, mpiexec), from its environment.
bool launched_by_mpi();

/// The communicator of all processes of this run: over MPI when launched by mpirun (MPI starts on
/// the first call and finishes at exit), else this process alone. Throws CommunicationError when
/// launched by mpirun in a build without MPI.
Communicator& world();

/// A communicator of this process alone, whatever launched it (tests, and runs that do not train
/// data-parallel).
std::unique_ptr<Communicator> single_process();

}  // namespace accrue::distributed
