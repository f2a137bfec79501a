#!/usr/bin/env bash
# The Debian packages as a user meets them: builds them with CPack from BUILD_DIR, checks what they
# declare, unpacks them into a fresh root (as dpkg -i would lay them out, without touching this
# system) and builds tests/install/consumer against that root twice, with find_package(accrue) and
# with `pkg-config --cflags --libs accrue`, then runs both and an example's --version.
#
#   tests/install/check_packages.sh BUILD_DIR WORK_DIR      (ctest runs it as test_packages)
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
work=$2
rm -rf "$work"
mkdir -p "$work/root"
fail() { echo "FAILED: $*"; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/packages" > "$work/cpack.log" 2>&1) || { tail -n 30 "$work/cpack.log"; fail "cpack -G DEB"; }
version=$(sed -n 's/^#define ACCRUE_VERSION "\(.*\)"$/\1/p' "$build/include/accrue/config.hpp")
for package in libaccrue libaccrue-dev accrue-examples; do
  deb=$(ls "$work/packages/${package}_${version}_"*.deb 2>/dev/null | head -n 1)
  [[ -n $deb ]] || fail "no package $package $version in $work/packages: $(ls "$work/packages")"
  echo "$package: $(du -h "$deb" | cut -f1)"
  dpkg-deb -f "$deb" Depends | sed 's/^/  Depends: /'
  dpkg-deb -x "$deb" "$work/root"
  declare "depends_${package//-/_}=$(dpkg-deb -f "$deb" Depends)"
done
# The libraries the shared library links, found by dpkg-shlibdeps; OpenBLAS, which it loads itself.
[[ $depends_libaccrue == *libfmt* && $depends_libaccrue == *libopenblas0* && $depends_libaccrue == *libpng* ]] ||
  fail "libaccrue's Depends lacks fmt, OpenBLAS or libpng: $depends_libaccrue"
[[ $depends_libaccrue_dev == *"libaccrue (= $version)"* && $depends_libaccrue_dev == *libfmt-dev* ]] ||
  fail "libaccrue-dev's Depends: $depends_libaccrue_dev"
[[ $depends_accrue_examples == *"libaccrue (= $version)"* ]] || fail "accrue-examples' Depends: $depends_accrue_examples"
# The CUDA backend is a package of its own; the library a CPU program needs depends on nothing of CUDA's.
[[ ! $depends_libaccrue =~ cuda|cublas|cudnn|nccl ]] || fail "libaccrue depends on CUDA: $depends_libaccrue"
if grep -q '^#define ACCRUE_WITH_CUDA 1' "$build/include/accrue/config.hpp"; then
  deb=$(ls "$work/packages/libaccrue-cuda_${version}_"*.deb 2>/dev/null | head -n 1)
  [[ -n $deb ]] || fail "no package libaccrue-cuda in a build with the CUDA backend"
  dpkg-deb -c "$deb" > "$work/cuda_contents.txt"
  grep -q "libaccrue_cuda.so.${version%.*}" "$work/cuda_contents.txt" || fail "libaccrue-cuda lacks libaccrue_cuda.so"
  echo "libaccrue-cuda: $(du -h "$deb" | cut -f1), $(dpkg-deb -f "$deb" Depends)"
fi

usr=$work/root/usr
library=$(find "$usr" -name 'libaccrue.so.*.*.*' | head -n 1)
[[ -n $library ]] || fail "no libaccrue.so.X.Y.Z in the packages"
soname=$(readelf -d "$library" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
major_minor=${version%.*}
[[ $soname == "libaccrue.so.$major_minor" ]] || fail "soname $soname, wanted libaccrue.so.$major_minor"
libdir=$(dirname "$library")
echo "soname $soname in ${libdir#"$work/root"}"
export LD_LIBRARY_PATH=$libdir

cmake -S "$source_dir/tests/install/consumer" -B "$work/with_cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_PREFIX_PATH=$usr" > "$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "find_package(accrue) from the packages"; }
cmake --build "$work/with_cmake" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building with find_package"; }
"$work/with_cmake/consumer" || fail "the consumer built with find_package"

pc_dir=$(dirname "$(find "$usr" -name accrue.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs accrue) || fail "pkg-config --cflags --libs accrue"
echo "pkg-config --cflags --libs accrue: $flags"
# shellcheck disable=SC2086
g++ -std=c++20 -O1 "$source_dir/tests/install/consumer/main.cpp" -o "$work/with_pkg_config" $flags ||
  fail "building with pkg-config"
"$work/with_pkg_config" || fail "the consumer built with pkg-config"

"$usr/libexec/accrue/examples/01_fashion_mnist_mlp" --version | tee "$work/version.txt"
grep -q "^Accrue $version " "$work/version.txt" || fail "01_fashion_mnist_mlp --version does not start with Accrue $version"
echo "packages: all checks passed"
