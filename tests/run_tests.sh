#!/usr/bin/env bash
# Installs what is missing, builds Accrue with its tests, examples and benchmarks in ./build, and
# runs the test suite. Tests that need something absent (a GPU) are reported as skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Where the time goes: each phase's minutes, printed as it ends and together at the end.
phases=()
phase_start=$SECONDS
phase_done() {
  local took=$((SECONDS - phase_start)) line
  line=$(printf '%-38s %3dm %02ds' "$1" $((took / 60)) $((took % 60)))
  phases+=("$line")
  echo "== $line"
  phase_start=$SECONDS
}
# Only the browser tests (label browser) use these: chromium, headless; node and npm to install and
# run puppeteer-core (a node that came without Debian's package brings its own npm).
browser=(chromium)
command -v node >/dev/null && command -v npm >/dev/null || browser+=(nodejs npm)
# The packages' test: cpack's DEB generator (dpkg-shlibdeps, file) and pkg-config. The CPU kernels'
# run as older processors: qemu-user (tests/kernels/under_qemu.sh). The API reference: doxygen
# (test_api_reference).
tools=(dpkg-dev file pkg-config qemu-user doxygen)
"$root/examples/install_deps.sh" "${browser[@]}" "${tools[@]}"
phase_done "installing missing packages"
build=${ACCRUE_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build"
phase_done "configuring and building"
status=0
# Soak tests (label soak: the classroom's load test for minutes) are run by hand: ctest -L soak.
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -LE 'long|soak' || status=$?
phase_done "tests (ctest -LE 'long|soak')"
# The slowest tests of the suite (seconds each, from ctest's record of its runs). awk takes the first
# twelve and reads the rest: head would close the pipe under sort, which pipefail makes a failure.
costs="$build/Testing/Temporary/CTestCostData.txt"
if [[ -f "$costs" ]]; then
  echo "The slowest tests (seconds):"
  sed '/^---/,$d' "$costs" | sort -k3 -g -r | awk 'NR <= 12 { printf "  %7.1f  %s\n", $3, $1 }'
fi
# Long training runs (label long) after the rest, one at a time with every core.
ctest --test-dir "$build" --output-on-failure -L long || status=$?
phase_done "long training runs (ctest -L long)"
# ctest lists skipped tests without their reason; the tests print it.
log="$build/Testing/Temporary/LastTest.log"
if [[ -f "$log" ]] && grep -q '^SKIPPED:' "$log"; then
  echo "Skipped, and why:"
  grep '^SKIPPED:' "$log" | sed 's/^SKIPPED: /  /'
fi
# In CI (or when ACCRUE_FUZZ_SECONDS is set), a short run of each file-reader fuzzer as well.
fuzz_seconds=${ACCRUE_FUZZ_SECONDS:-$([[ "${CI:-}" == "true" ]] && echo 15 || echo 0)}
if [[ "$fuzz_seconds" -gt 0 ]]; then
  "$root/tests/fuzz/run_fuzzers.sh" "$fuzz_seconds" || status=$?
  phase_done "fuzzers, ${fuzz_seconds} s each"
fi
echo "Where the time went:"
printf '  %s\n' "${phases[@]}"
exit "$status"
