#pragma once
// data_parallel --shard (data_parallel_shard.cpp): sharded data parallelism for the char-level GPT.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace accrue::bench {

struct ShardOptions {
  std::int64_t blocks = 256, block_size = 128, width = 128, heads = 4, vocab = 113, micro_batch = 8;
  int layers = 4, accumulate = 4, reps = 3;
  /// Gradient buckets (FitOptions::bucket_bytes), the same for every run: smaller than the model's
  /// gradients, so that stage 2 reduced every micro-batch frees some while backward goes on.
  double bucket_mib = 1;
};

/// What `command` printed (stdout and stderr), its status in `status`.
std::string command_output(const std::string& command, int& status);

/// The --shard options (besides --accumulate and --reps, which the benchmark has).
void add_shard_options(CLI::App& app, ShardOptions& o);
/// One process of a 2-process run under mpirun: an epoch of the GPT sharded as `shard` says
/// (none, optimizer_state, gradients_at_close, gradients_each); prints its "shardresult" line.
int shard_worker(const ShardOptions& o, const std::string& shard);
/// The table: each way, Accrue's under `mpirun_np2 self` and PyTorch's under `python` (none when
/// empty); status 1 when stage 1 misses its bars.
int shard_table(const ShardOptions& o, const std::string& self, const std::string& mpirun_np2, const std::string& python);

}  // namespace accrue::bench
