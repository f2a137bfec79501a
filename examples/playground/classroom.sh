#!/usr/bin/env bash
# The classroom in one command: installs what is missing, builds the playground (and nothing else)
# in ./build, and serves it to the room, printing the address students type and the teacher's link.
# Arguments go to the server, e.g. --max-runs 10 --threads-per-run 1 --port 8080.
#
#   examples/playground/classroom.sh --max-runs 10
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/examples/install_deps.sh"
build=${ACCRUE_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --target playground
exec "$build/examples/playground" --classroom --host 0.0.0.0 "$@"
