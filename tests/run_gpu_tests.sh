#!/usr/bin/env bash
# The GPU suite: installs what is missing, builds Accrue with the CUDA backend required
# (-DACCRUE_CUDA=ON) in ./build-cuda, runs the ctest label `gpu` (every op, layer, optimizer, the
# scaler and fit against the CPU backend, and a FashionMNIST epoch), then trains the tutorial MLP on
# cuda:0 for one epoch. Unlike tests/run_tests.sh, a missing GPU is a failure here, with its reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/examples/install_deps.sh"
build=${ACCRUE_BUILD_DIR:-$root/build-cuda}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DACCRUE_CUDA=ON
cmake --build "$build"
status=0
ctest --test-dir "$build" -L gpu --output-on-failure -V -j 1 || status=$?
log="$build/Testing/Temporary/LastTest.log"
if [[ -f "$log" ]] && grep -q '^SKIPPED:' "$log"; then
  echo "The GPU suite did not run:"
  grep '^SKIPPED:' "$log" | sed 's/^SKIPPED: /  /'
  exit 1
fi
[[ $status -eq 0 ]] || exit "$status"
"$build/examples/01_fashion_mnist_mlp" --device cuda --epochs "${ACCRUE_GPU_EPOCHS:-1}"
