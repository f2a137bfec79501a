#!/usr/bin/env bash
# Installs what is missing, builds Accrue with its tests, examples and benchmarks in ./build, and
# runs the test suite. Tests that need something absent (a GPU) are reported as skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/examples/install_deps.sh"
build=${ACCRUE_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
