#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, AddressSanitizer and UndefinedBehaviorSanitizer in
# ./build-fuzz and runs each for SECONDS (default 600), starting from tests/fuzz/seeds and keeping
# what it finds in build-fuzz/corpus-<target>. A crash leaves its input as build-fuzz/crash-* and
# fails the script. Inputs go up to 1 MB: JSON nested 100,000 deep (300 KB) crashed the readers, and
# a cap of 64 KB never reached it.
#
#   tests/fuzz/run_fuzzers.sh [SECONDS] [TARGET...]     targets: fuzz_idx fuzz_safetensors fuzz_checkpoint fuzz_npy
#                                                      fuzz_npz fuzz_csv fuzz_image fuzz_cifar fuzz_model_file
#                                                      fuzz_model_graph fuzz_pytorch_file
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-600}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(fuzz_idx fuzz_safetensors fuzz_checkpoint fuzz_npy fuzz_npz fuzz_csv fuzz_image fuzz_cifar fuzz_model_file
  fuzz_model_graph fuzz_pytorch_file)
"$root/examples/install_deps.sh" clang-14 libclang-rt-14-dev
build=${ACCRUE_FUZZ_BUILD_DIR:-$root/build-fuzz}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DACCRUE_FUZZ=ON -DACCRUE_CUDA=OFF -DACCRUE_MPI=OFF -DACCRUE_CPU_VARIANTS=OFF -DACCRUE_BUILD_TESTS=OFF \
  -DACCRUE_BUILD_EXAMPLES=OFF -DACCRUE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target "${targets[@]}"
for t in "${targets[@]}"; do
  seeds="$root/tests/fuzz/seeds/${t#fuzz_}"
  corpus="$build/corpus-$t"
  mkdir -p "$corpus"
  echo "== $t for ${seconds}s (seeds: $seeds)"
  (cd "$build" && "./tests/fuzz/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=1048576 -print_final_stats=1 \
     "$corpus" "$seeds" 2>&1 | grep -E "^#[0-9]+.*DONE|stat::number_of_executed_units|ERROR|SUMMARY|crash-" || true)
  # Any one kind of artifact fails the run (`ls` of the three patterns together succeeded only when
  # all three kinds were there, so a lone crash passed).
  found=$(find "$build" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \))
  if [[ -n $found ]]; then
    echo "$t found a failing input: $found"
    exit 1
  fi
done
