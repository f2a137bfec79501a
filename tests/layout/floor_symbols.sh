#!/usr/bin/env bash
# The floors at link level: the objects of framework/core, framework/runtime and kernels/ must not
# call what stands above them (autograd, ops, optimizers, training, distributed, serialization), so
# that kernels build and are tested without autograd. The core and the runtime must not call a
# kernel either, only the device runtime's CUDA loader and device query (the core declares what it
# asks of the runtime: the allocators, the device query). Reads the library's objects with nm.
#
#   floor_symbols.sh OBJECT_DIR   (build/CMakeFiles/accrue.dir)
set -uo pipefail
dir=${1:?the folder of the library objects}
cd "$dir" || exit 1
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
for o in $(find kernels -name '*.o'); do check "$o" "$upward" "what stands above the kernels"; done
below=0
for o in $(find framework/core framework/runtime -name '*.o'); do
  check "$o" "$upward|accrue::kernels::(?!cuda::|cuda_device_count|cuda_libraries|common::)" "above the core and runtime"
  below=$((below + 1))
done
(( below > 10 )) || { echo "FAIL only $below objects of framework/core and framework/runtime found"; exit 1; }
(( objects > 50 )) || { echo "FAIL only $objects objects found in $dir"; exit 1; }
(( failed == 0 )) && echo "floors hold at link level: $objects objects checked"
exit $failed
