// Training checkpoints: the file, its checksum, the run state in its JSON and the restore into a
// model, optimizer, scaler-less recipe, metrics and callbacks. The first byte picks the depth:
// even bytes give the rest to the reader as it is (the checksum must refuse almost all of it);
// odd bytes parse the rest as safetensors and, when that works, write it again with a correct
// checksum, so that the state inside is what gets fuzzed. Seeds in tests/fuzz/seeds/checkpoint
// are checkpoints of the run below (make_seeds.cpp writes them).

#include <accrue/accrue.hpp>
#include <accrue/dsl/training_checkpoint.hpp>
#include <accrue/framework/serialization/checkpoint.hpp>

#include "fuzz_checkpoint_run.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace accrue;
  if (size == 0) return 0;
  const std::string& path = fuzz::write_input("checkpoint", data + 1, size - 1);
  if (data[0] % 2 == 1) {
    try {
      serialization::SafetensorsFile file = serialization::load_safetensors(path);
      const auto state = file.metadata.find("state");
      if (state == file.metadata.end()) return 0;
      serialization::save_checkpoint(path, file.tensors, state->second);
    } catch (const Error&) {
      return 0;
    }
  }
  static fuzz::CheckpointRun* run = new fuzz::CheckpointRun();  // built once; restore checks before it changes anything
  try {
    const detail::TrainingCheckpoint checkpoint = detail::TrainingCheckpoint::read(path);
    (void)checkpoint.batch_size();
    (void)checkpoint.accumulation_factor();
    (void)checkpoint.loader_seed();
    checkpoint.check_signature({});
    run->restore(checkpoint);
  } catch (const Error&) {
  }
  return 0;
}
