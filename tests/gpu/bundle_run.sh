#!/usr/bin/env bash
# Runs everything Accrue can run on a GPU machine, from the bundle tests/make_gpu_bundle.sh packs:
#
#   run.sh [RESULTS_DIR]      (default: $OUT when set, else ./gpu-results)
#
# 1. unpacks the programs and the libraries the machine lacks (OpenBLAS, Boost.Test, fmt, ...);
# 2. finds the CUDA runtime, cuBLAS and cuDNN the machine has (the CUDA toolkit's, or the cuDNN
#    that its PyTorch install carries) and says which files and versions it uses;
# 3. runs the `gpu` ctest label (every op, layer, optimizer and fit on cuda:0 against the CPU);
# 4. trains the tutorial MLP and the CNN on the GPU, and times both against the machine's PyTorch
#    (bench/mlp_epoch --device cuda);
# 5. writes each step's log and a summary to RESULTS_DIR.
# Without a GPU the GPU steps are skipped, saying so, and the CPU ones still run.
set -uo pipefail
bundle=$(cd "$(dirname "$0")" && pwd)
results=${1:-${OUT:-$PWD/gpu-results}}
mkdir -p "$results"
results=$(cd "$results" && pwd)
summary=$results/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

# ---- 1. unpack ---------------------------------------------------------------------------------
work=${ACCRUE_BUNDLE_WORK:-$(mktemp -d /tmp/accrue-bundle.XXXXXX)}
if command -v xz >/dev/null && command -v tar >/dev/null; then
  tar -xJf "$bundle/programs.tar.xz" -C "$work"
else  # Python's tarfile reads xz without the xz program
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle/programs.tar.xz" "$work"
fi
say "Accrue GPU bundle $(cat "$bundle/VERSION") unpacked in $work"

# ---- 2. the machine's CUDA libraries -------------------------------------------------------------
# Folders that may hold a library: ACCRUE_CUDA_LIBS, the loader's cache, the CUDA toolkit, and the
# nvidia-* and torch packages of the Python that has PyTorch.
candidates() {
  [[ -n ${ACCRUE_CUDA_LIBS:-} ]] && tr ':' '\n' <<< "$ACCRUE_CUDA_LIBS"
  ldconfig -p 2>/dev/null | awk -v n="$1" '$1 ~ "^"n {print $NF}' | xargs -r -n1 dirname
  for d in "${CUDA_HOME:-/usr/local/cuda}"/lib64 "${CUDA_HOME:-/usr/local/cuda}"/lib /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/lib/x86_64-linux-gnu; do echo "$d"; done
  for py in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    command -v "$py" >/dev/null || continue
    "$py" - "$1" <<'EOF' 2>/dev/null
import glob, os, site, sys
roots = set(site.getsitepackages() + [site.getusersitepackages()])
for root in roots:
    for pattern in ("nvidia/*/lib", "nvidia/*/*/lib", "nvidia/lib", "torch/lib"):
        for d in glob.glob(os.path.join(root, pattern)):
            if glob.glob(os.path.join(d, sys.argv[1] + "*")):
                print(d)
EOF
  done
}
find_library() {  # NAME: the first folder that holds NAME
  local d
  while read -r d; do
    [[ -n $d && -e $d/$1 ]] && { echo "$d"; return 0; }
  done < <(candidates "$1")
  return 1
}
library_path=$work/lib
missing=()
for name in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9; do
  if dir=$(find_library "$name"); then
    say "  $name: $dir"
    [[ ":$library_path:" == *":$dir:"* ]] || library_path=$library_path:$dir
  else
    missing+=("$name")
    say "  $name: NOT FOUND (set ACCRUE_CUDA_LIBS to the folder that holds it)"
  fi
done
export LD_LIBRARY_PATH=$library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ACCRUE_FASHION_MNIST_DIR=$bundle/data/fashion-mnist
if ((${#missing[@]} > 0)); then
  say "Accrue's programs need ${missing[*]}, which this machine does not have where it was looked for; stopping."
  exit 1
fi
"$work/bin/test_gpu_libraries" 2>&1 | tee "$results/libraries.txt" | tee -a "$summary"
libraries_status=${PIPESTATUS[0]}
gpu=1
grep -q "^CUDA devices: 0" "$results/libraries.txt" && gpu=0

# ---- 3. the gpu ctest label ------------------------------------------------------------------------
status=$libraries_status
run_step() {  # NAME COMMAND...: runs COMMAND with its output in RESULTS/NAME.log
  local name=$1; shift
  say "== $name: $*"
  "$@" > "$results/$name.log" 2>&1
  local s=$?
  tail -n 15 "$results/$name.log"
  say "   $name exit status $s (log: $results/$name.log)"
  [[ $s -eq 0 ]] || status=1
  return "$s"
}
{
  echo "add_test(test_gpu_libraries \"$work/bin/test_gpu_libraries\")"
  for t in test_gpu_ops test_gpu_training; do echo "add_test($t \"$work/bin/$t\" --log_level=message --report_level=short)"; done
  echo "set_tests_properties(test_gpu_libraries test_gpu_ops test_gpu_training PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 1200)"
} > "$work/CTestTestfile.cmake"
if command -v ctest >/dev/null; then
  run_step ctest_gpu ctest --test-dir "$work" -L gpu --output-on-failure
else
  say "ctest is not on the PATH: running the gpu tests one by one"
  for t in test_gpu_ops test_gpu_training; do run_step "$t" "$work/bin/$t" --log_level=message --report_level=short; done
fi

# ---- 4. training and the benchmark ---------------------------------------------------------------
run_step cpu_tutorial_1_epoch "$work/bin/01_fashion_mnist_mlp" --device cpu --epochs 1 --verbose 2
if [[ $gpu -eq 1 ]]; then
  run_step gpu_tutorial "$work/bin/01_fashion_mnist_mlp" --device cuda --epochs 5 --verbose 2
  run_step gpu_cnn "$work/bin/05_fashion_mnist_cnn" --device cuda --epochs 2 --verbose 2
  run_step gpu_cnn_amp "$work/bin/05_fashion_mnist_cnn" --device cuda --epochs 1 --amp --verbose 2
  python=$(command -v python3 || echo /usr/bin/python3)
  run_step gpu_bench "$work/bin/mlp_epoch" --device cuda --reps 3 --python "$python" \
    --data "$ACCRUE_FASHION_MNIST_DIR" --configs 64,16x4,64amp,16x4amp,cnn64,cnn16x4
else
  say "No usable GPU here (see libraries.txt): the GPU training and the benchmark were not run."
fi
say "Done: exit status $status; results in $results"
exit "$status"
