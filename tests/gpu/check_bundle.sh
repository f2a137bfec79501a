#!/usr/bin/env bash
# Runs a GPU bundle's run.sh here as on a machine without Debian's packages: in a private mount
# namespace every file of the packages the bundle stands in for (OpenBLAS, its Fortran runtime,
# Boost.Test, fmt) is hidden, and so is the system's FashionMNIST; the environment is emptied but
# for PATH and HOME. Passes when run.sh ends well, the CPU epoch of the tutorial trained from the
# bundle's data, and the GPU steps ran or were skipped saying so.
#
#   tests/gpu/check_bundle.sh [BUNDLE_DIR] [RESULTS_DIR]      (tests/make_gpu_bundle.sh runs it)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$(cd "${1:-$root/gpu-bundle}" && pwd)
results=${2:-$(mktemp -d /tmp/accrue-bundle-check.XXXXXX)}
mkdir -p "$results"
hidden=()
for package in libopenblas0-pthread libopenblas0-openmp libopenblas0-serial libopenblas0 libboost-test1.74.0 libfmt9 \
               libgfortran5 libquadmath0; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || continue
  while read -r f; do [[ -f $f && ! -L $f && $f == *.so* ]] && hidden+=("$f"); done < <(dpkg -L "$package")
done
printf '%s\n' "${hidden[@]}" > "$results/hidden_libraries.txt"
echo "hiding ${#hidden[@]} library files of Debian's packages and /usr/share/datasets"
status=0
unshare -m bash -c '
  for f in "${@:3}"; do mount --bind /dev/null "$f"; done
  [[ -d /usr/share/datasets ]] && mount -t tmpfs none /usr/share/datasets
  exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp bash "$1/run.sh" "$2"
' check "$bundle" "$results" "${hidden[@]}" || status=$?
summary=$results/summary.txt
fail() { echo "bundle check: $*"; exit 1; }
[[ $status -eq 0 ]] || fail "run.sh exited with $status (see $results)"
grep -q "^Accuracy:" "$results/cpu_tutorial_1_epoch.log" || fail "the CPU epoch of the tutorial did not train"
# Without a GPU the reason must be the driver or the device, not a CUDA backend library missing from
# the bundle or unable to load.
! grep -q "CUDA backend library.*could not be loaded" "$results/libraries.txt" ||
  fail "the bundle's CUDA backend library did not load: $(grep -A3 'could not be loaded' "$results/libraries.txt")"
grep -q "^CUDA devices: [1-9]" "$results/libraries.txt" ||
  grep -q "the GPU training and the benchmark were not run" "$summary" || fail "the GPU steps neither ran nor said why not"
echo "bundle check passed: $results"
