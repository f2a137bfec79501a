#!/usr/bin/env bash
# A CPU program needs none of CUDA's libraries: ldd of the tutorial and of libaccrue shows no
# libcudart, libcublas, libcudnn or libnccl, whether or not the build has the CUDA backend (which
# is libaccrue_cuda.so, loaded at the first CUDA device). Asking for cuda:0 where the backend library
# cannot be loaded is an error that says so (exit status 1), and the CPU still trains.
#
#   tests/examples/cpu_program_links.sh PATH/TO/01_fashion_mnist_mlp
set -uo pipefail
program=$1
fail() { echo "FAILED: $*"; exit 1; }
cuda_libraries='libcudart|libcublas|libcudnn|libnccl|libcuda\.'
for file in "$program" "$(ldd "$program" | awk '$1 ~ /^libaccrue\.so/ {print $3}')"; do
  [[ -f $file ]] || fail "no libaccrue in ldd $program"
  if ldd "$file" | grep -E "$cuda_libraries"; then fail "$file links CUDA's libraries (above)"; fi
  echo "$(basename "$file") links: $(ldd "$file" | awk '{print $1}' | tr '\n' ' ')"
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ACCRUE_CUDA_BACKEND=/nonexistent/libaccrue_cuda.so.0.1 "$program" --device cuda:0 --epochs 1 > "$work/out" 2>&1
status=$?
cat "$work/out"
[[ $status -eq 1 ]] || fail "--device cuda:0 without the backend library exited $status, wanted 1"
grep -qE "CUDA backend library.*could not be loaded|has no CUDA backend" "$work/out" ||
  fail "the error does not say the backend library could not be loaded"
ACCRUE_CUDA_BACKEND=/nonexistent/libaccrue_cuda.so.0.1 "$program" --version | grep -q "CUDA backend:" || fail "--version"
echo "cpu_program_links: all checks passed"
