#!/usr/bin/env bash
# Installs what is missing, builds Accrue in ./build, and trains the FashionMNIST tutorial MLP on the
# default device (the CPU where there is no GPU). Arguments go to the program, e.g. --epochs 5.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/examples/install_deps.sh"
build=${ACCRUE_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --target 01_fashion_mnist_mlp
"$build/examples/01_fashion_mnist_mlp" "$@"
