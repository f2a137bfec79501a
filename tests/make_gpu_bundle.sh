#!/usr/bin/env bash
# Packs what a GPU machine needs to run Accrue's GPU work with one command, for a machine that has
# CUDA, cuBLAS, cuDNN (inside its PyTorch install), CMake and Ninja but no package registry and
# none of Debian's packages:
#
#   tests/make_gpu_bundle.sh [BUNDLE_DIR]      (default ./gpu-bundle; builds in ./build-gpu-bundle)
#   BUNDLE_DIR/run.sh [RESULTS_DIR]            on the GPU machine (see tests/gpu/bundle_run.sh)
#
# The bundle holds the gpu tests, the examples and the benchmark built for sm_80 and sm_90 (PTX for
# later GPUs) with CPU kernels for every x86-64 (chosen at run time), the shared libraries they load that such a machine
# lacks (OpenBLAS and its Fortran runtime, Boost.Test, fmt, zlib) packed with xz, a FashionMNIST
# copy, and run.sh. CUDA's own libraries are not packed (cuDNN alone is larger than what can be
# copied to such a machine): run.sh finds the machine's and checks their versions. The bundle must
# stay under 60 MB; this script fails when it does not, and checks that the packed programs load
# every library they need from the bundle, the CUDA folders or the C and C++ runtimes alone, then
# runs it as a machine without Debian's packages would (tests/gpu/check_bundle.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=${1:-$root/gpu-bundle}
build=${ACCRUE_GPU_BUNDLE_BUILD_DIR:-$root/build-gpu-bundle}
limit_bytes=$((60 * 1000 * 1000))
"$root/examples/install_deps.sh" xz-utils
# The GPU machine runs one process: its programs need no MPI libraries.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DACCRUE_CUDA=ON -DACCRUE_MPI=OFF >/dev/null
programs=(test_gpu_libraries test_gpu_ops test_gpu_training 01_fashion_mnist_mlp 05_fashion_mnist_cnn mlp_epoch)
# The CUDA backend is loaded with dlopen, so no program depends on it: built by name.
cmake --build "$build" --target "${programs[@]}" accrue_cuda

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for p in "${programs[@]}"; do cp "$(find "$build" -type f -name "$p" -perm -u+x | head -n 1)" "$stage/bin/"; done
cp "$root/bench/pytorch_mlp.py" "$root/bench/pytorch_worker.py" "$stage/bin/"
strip --strip-unneeded "$stage"/bin/* 2>/dev/null || true

# The libraries the programs need, but not the C and C++ runtimes (every Linux has newer ones) nor
# CUDA's (run.sh finds the machine's). OpenBLAS and the CUDA backend are loaded with dlopen, so they are
# named here.
is_system() { [[ $1 =~ ^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s) ]]; }
is_cuda() { [[ $1 =~ ^(libcudart|libcublas|libcublasLt|libcudnn|libcuda\.) ]]; }
pack_needs() {  # FILE: packs the libraries FILE loads
  local dep path
  while read -r dep _ path _; do
    [[ -n ${path:-} && $path == /* ]] || continue
    is_system "$dep" || is_cuda "$dep" || pack_library "$path"
  done < <(ldd "$1")
}
pack_library() {  # PATH: copies it (under its soname) and what it needs
  local name; name=$(basename "$1")
  [[ -e $stage/lib/$name ]] && return
  cp -L "$1" "$stage/lib/$name"
  pack_needs "$1"
}
for p in "$stage"/bin/*; do [[ $p == *.py ]] || pack_needs "$p"; done
pack_library "$(ldconfig -p | awk '$1 == "libopenblas.so.0" {print $NF; exit}')"
# The CUDA backend is loaded with dlopen too, from beside libaccrue.
backend=$(ls "$build"/libaccrue_cuda.so.*.* 2>/dev/null | sort | head -n 1)  # the soname, libaccrue_cuda.so.X.Y
[[ -n $backend ]] || { echo "no CUDA backend library (libaccrue_cuda.so) in $build"; exit 1; }
pack_library "$backend"

rm -rf "$bundle"
mkdir -p "$bundle/data/fashion-mnist"
tar -C "$stage" -cJf "$bundle/programs.tar.xz" bin lib
cp /usr/share/datasets/fashion-mnist/*.gz "$bundle/data/fashion-mnist/"
cp "$root/tests/gpu/bundle_run.sh" "$bundle/run.sh"
chmod +x "$bundle/run.sh"
git -C "$root" describe --always --dirty > "$bundle/VERSION" 2>/dev/null || echo unknown > "$bundle/VERSION"

# What each packed program loads, resolved as run.sh will: the bundle's folder first, then the
# CUDA toolkit's here (the GPU machine's own there). Anything else from this machine's packages is
# a library the GPU machine would lack.
check=$(mktemp -d)
tar -C "$check" -xJf "$bundle/programs.tar.xz"
cuda_dir=$(dirname "$(ldconfig -p | awk '$1 == "libcudart.so.13" {print $NF; exit}')" 2>/dev/null || true)
[[ -n $cuda_dir && -d $cuda_dir ]] || cuda_dir=/usr/local/cuda/lib64
strays=()
for p in "$check"/bin/* "$check"/lib/*; do
  [[ $p == *.py ]] && continue
  while read -r dep _ path _; do
    [[ -n ${path:-} && $path == /* ]] || continue
    is_system "$dep" || is_cuda "$dep" || [[ $path == "$check"/lib/* ]] || strays+=("$(basename "$p") -> $path")
  done < <(LD_LIBRARY_PATH="$check/lib:$cuda_dir" ldd "$p")
done
rm -rf "$check"
if ((${#strays[@]} > 0)); then
  printf 'these libraries would come from this machine, not the bundle:\n'; printf '  %s\n' "${strays[@]}"
  exit 1
fi
size=$(du -sb "$bundle" | cut -f1)
echo "GPU bundle in $bundle: $((size / 1000000)) MB (limit 60 MB):"
du -ab "$bundle" | sort -n | awk '{printf "  %10d %s\n", $1, $2}'
tar -tJvf "$bundle/programs.tar.xz" | awk '{printf "    %10d %s\n", $3, $6}'
if ((size > limit_bytes)); then
  echo "the bundle is $size bytes, over the limit of $limit_bytes"
  exit 1
fi
# Its run here as on a machine without Debian's packages (the GPU steps skip without a GPU).
"$root/tests/gpu/check_bundle.sh" "$bundle"
