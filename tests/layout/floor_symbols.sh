#!/usr/bin/env bash
# The floors at link level: the objects of framework's core and of the kernels (with Tensor's
# members that run them, framework/tensor_values.cpp) must not call what stands above them
# (autograd, ops, optimizers, training, distributed, serialization), so that kernels build and are
# tested without autograd. The core must not call a kernel either, only the device runtime
# (kernels/cuda/context, the device query). Reads the library's objects with nm.
#
#   floor_symbols.sh OBJECT_DIR   (build/CMakeFiles/accrue.dir)
set -uo pipefail
dir=${1:?the folder of the library objects}
here=$(cd "$(dirname "$0")" && pwd)
cd "$dir" || exit 1
mapfile -t core < <(grep -v '^#' "$here/core_units.txt")
upward='accrue::(ops|optim|distributed|serialization|training)::|accrue::(run_backward|Node|GradSink|SavedTensor|NoGradGuard|AutocastGuard|DeferredWeightGradients|gradcheck)\b|accrue::Tensor::(backward|reshape|narrow|clone)\('
failed=0 objects=0
check() {  # object, pattern of symbols it must not call, what they are
  local bad
  bad=$(nm -C --undefined-only "$1" | grep -P "$2" | sed 's/^ *U //' | sort -u)
  objects=$((objects + 1))
  if [[ -n $bad ]]; then
    echo "FAIL $1 calls $3:"; echo "$bad" | sed 's/^/  /'; failed=1
  fi
}
for o in $(find kernels -name '*.o') framework/tensor_values.cpp.o; do check "$o" "$upward" "what stands above the kernels"; done
for unit in "${core[@]}"; do
  for o in "$unit".cpp.o; do
    [[ -f $o ]] || continue
    check "$o" "$upward|accrue::kernels::(?!cuda::|cuda_device_count|cuda_libraries|common::)" "above the core"
  done
done
(( ${#core[@]} > 10 )) || { echo "FAIL the core's units were not read"; exit 1; }
(( objects > 50 )) || { echo "FAIL only $objects objects found in $dir"; exit 1; }
(( failed == 0 )) && echo "floors hold at link level: $objects objects checked"
exit $failed
