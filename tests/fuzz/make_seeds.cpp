// Writes the fuzz_checkpoint seeds: checkpoints of the run in fuzz_checkpoint_run.hpp after every
// micro-batch, each twice (first byte 0: as it is; 1: with its checksum rewritten).
//
//   make_seeds OUT_DIR

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz_checkpoint_run.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  namespace fs = std::filesystem;
  const fs::path out = argv[1];
  const fs::path tmp = fs::temp_directory_path() / "accrue-fuzz-seeds";
  fs::remove_all(tmp);
  accrue::Sequential model = accrue::fuzz::checkpoint_model();
  accrue::FitOptions options = accrue::fuzz::checkpoint_options();
  options.checkpoint = {.dir = tmp.string(), .every_micro_batches = 1, .keep = 100};
  model.fit(accrue::fuzz::checkpoint_data(), options);
  fs::create_directories(out);
  // Three are enough to start from: inside a window, at an epoch's end, at the run's end.
  accrue::fuzz::CheckpointRun run;
  for (const char* name : {"checkpoint-0000000003.safetensors", "checkpoint-0000000004.safetensors",
                           "checkpoint-0000000008.safetensors"}) {
    // A seed the fuzz target cannot restore would leave the restore unexplored.
    run.restore(accrue::detail::TrainingCheckpoint::read((tmp / name).string()));
    fmt::print("{}: restores (epoch {}, next micro-batch {}, {} epochs of history)\n", name, run.run.epoch + 1,
               run.run.next_slot + 1, run.run.history.epochs());
    std::ifstream in(tmp / name, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    for (char mode : {'\0', '\1'}) {
      std::ofstream f(out / (std::string(mode == '\0' ? "raw-" : "resealed-") + name), std::ios::binary);
      f.put(mode);
      f << bytes;
    }
  }
  fs::remove_all(tmp);
  return 0;
}
