#!/usr/bin/env bash
# Installs what is missing, builds Accrue with its tests, examples and benchmarks in ./build, and
# runs the test suite. Tests that need something absent (a GPU) are reported as skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Only the browser tests (label browser) use these: chromium, headless; node and npm to install and
# run puppeteer-core (a node that came without Debian's package brings its own npm).
browser=(chromium)
command -v node >/dev/null && command -v npm >/dev/null || browser+=(nodejs npm)
# The packages' test: cpack's DEB generator (dpkg-shlibdeps, file) and pkg-config. The CPU kernels'
# run as older processors: qemu-user (tests/kernels/under_qemu.sh). The API reference: doxygen
# (test_api_reference).
tools=(dpkg-dev file pkg-config qemu-user doxygen)
"$root/examples/install_deps.sh" "${browser[@]}" "${tools[@]}"
build=${ACCRUE_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build"
status=0
# Soak tests (label soak: the classroom's load test for minutes) are run by hand: ctest -L soak.
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -LE 'long|soak' || status=$?
# Long training runs (label long) after the rest, one at a time with every core.
ctest --test-dir "$build" --output-on-failure -L long || status=$?
# ctest lists skipped tests without their reason; the tests print it.
log="$build/Testing/Temporary/LastTest.log"
if [[ -f "$log" ]] && grep -q '^SKIPPED:' "$log"; then
  echo "Skipped, and why:"
  grep '^SKIPPED:' "$log" | sed 's/^SKIPPED: /  /'
fi
# In CI (or when ACCRUE_FUZZ_SECONDS is set), a short run of each file-reader fuzzer as well.
fuzz_seconds=${ACCRUE_FUZZ_SECONDS:-$([[ "${CI:-}" == "true" ]] && echo 30 || echo 0)}
if [[ "$fuzz_seconds" -gt 0 ]]; then
  "$root/tests/fuzz/run_fuzzers.sh" "$fuzz_seconds" || status=$?
fi
exit "$status"
