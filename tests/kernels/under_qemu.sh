#!/usr/bin/env bash
# The build as older processors run it: under qemu-user emulating a Haswell (AVX2 and FMA, no
# AVX-512) and a Nehalem (SSE4.2, no AVX), each finds its level, passes the kernel suites and trains
# the tutorial, with no illegal instruction. Level `avx512` and above run natively (the `capability`
# ctest label).
#
#   tests/kernels/under_qemu.sh BUILD_DIR [--quick]
#
# By default: five kernel suites and the tutorial for one full epoch (60,000 samples; about 10
# minutes per processor, emulation being 10 to 40 times slower). --quick (ctest's test_under_qemu):
# two suites (test_cpu_capability runs every level the emulated processor has) and an epoch of the
# first 500 samples, tested on 500. Skipped (77), saying so,
# without qemu-x86_64.
set -uo pipefail
build=$(cd "$1" && pwd)
samples=60000
suites=(test_cpu_capability test_elementwise test_gemm test_softmax_cross_entropy test_ops)
if [[ ${2:-} == --quick ]]; then
  samples=500
  suites=(test_cpu_capability test_softmax_cross_entropy)
fi
qemu=$(command -v qemu-x86_64) || { echo "SKIPPED: no qemu-x86_64 (Debian's qemu-user)"; exit 77; }
data=${ACCRUE_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
if ((samples < 60000)); then  # the first N training and test samples, as IDX files of their own
  subset=$(mktemp -d)
  trap 'rm -rf "$subset"' EXIT
  be32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }
  { printf '\x00\x00\x08\x03'; be32 "$samples"; be32 28; be32 28
    gzip -dc "$data/train-images-idx3-ubyte.gz" | tail -c +17 | head -c $((samples * 784)); } > "$subset/train-images-idx3-ubyte"
  { printf '\x00\x00\x08\x01'; be32 "$samples"
    gzip -dc "$data/train-labels-idx1-ubyte.gz" | tail -c +9 | head -c "$samples"; } > "$subset/train-labels-idx1-ubyte"
  { printf '\x00\x00\x08\x03'; be32 "$samples"; be32 28; be32 28
    gzip -dc "$data/t10k-images-idx3-ubyte.gz" | tail -c +17 | head -c $((samples * 784)); } > "$subset/t10k-images-idx3-ubyte"
  { printf '\x00\x00\x08\x01'; be32 "$samples"
    gzip -dc "$data/t10k-labels-idx1-ubyte.gz" | tail -c +9 | head -c "$samples"; } > "$subset/t10k-labels-idx1-ubyte"
  data=$subset
fi
status=0
# OpenBLAS picks its kernels from CPUID too, and under emulation may pick ones the emulated
# processor lacks (Debian's 0.3.21 chose AVX code under -cpu Nehalem on an AMD EPYC host): its core
# type is pinned to the emulated processor, so that what is tested is Accrue's own dispatch.
for model in Haswell:avx2 Nehalem:baseline; do
  cpu=${model%%:*} want=${model##*:}
  export OPENBLAS_CORETYPE=${cpu^^}
  echo "== qemu-x86_64 -cpu $cpu (wanted: $want)"
  levels=$("$qemu" -cpu "$cpu" "$build/tests/run_at_capability" --list)
  highest=$(tail -n 1 <<< "$levels")
  if [[ $highest != "$want" ]]; then echo "FAILED: found level $highest, wanted $want"; status=1; continue; fi
  for suite in "${suites[@]}"; do
    start=$SECONDS
    if "$qemu" -cpu "$cpu" "$build/tests/$suite" --log_level=nothing --report_level=short > "$build/qemu_$suite.log" 2>&1; then
      echo "  $suite: passed ($((SECONDS - start)) s)"
    else
      echo "  $suite: FAILED ($((SECONDS - start)) s)"; tail -n 15 "$build/qemu_$suite.log" | sed 's/^/    /'; status=1
    fi
  done
  start=$SECONDS
  if "$qemu" -cpu "$cpu" "$build/examples/01_fashion_mnist_mlp" --epochs 1 --verbose 0 --data "$data" > "$build/qemu_tutorial.log" 2>&1; then
    echo "  01_fashion_mnist_mlp, 1 epoch of $samples samples: $(tail -n 1 "$build/qemu_tutorial.log") ($((SECONDS - start)) s)"
  else
    echo "  01_fashion_mnist_mlp: FAILED"; tail -n 15 "$build/qemu_tutorial.log" | sed 's/^/    /'; status=1
  fi
done
exit "$status"
