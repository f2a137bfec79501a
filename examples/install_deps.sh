#!/usr/bin/env bash
# Installs the Debian or Ubuntu packages Accrue needs that are not installed yet (apt-get, with sudo
# when not root). Extra package names given as arguments are installed too.
#
#   cmake ninja-build g++     the build
#   libopenblas-dev           GEMM on the CPU
#   librange-v3-dev           data loaders as ranges
#   libfmt-dev                formatting (g++ 12 has no <format>)
#   zlib1g-dev                gzip-compressed IDX files
#   libcli11-dev              the examples' and benchmarks' flags
#   libboost-test-dev         the test suites
#   nlohmann-json3-dev        the PyTorch reference data of the parity test
#   dataset-fashion-mnist     the FashionMNIST files the tutorial trains on
#   fortunes                  the text the character-level language model trains on (examples/07_char_lm)
#   libopenmpi-dev openmpi-bin  data-parallel training over several processes (mpirun)
#   libboost-dev              Boost.Beast and Asio: the playground's HTTP server (examples/playground)
#   libpng-dev libjpeg62-turbo-dev  decoding PNG and JPEG files (datasets::image_folder)
#   python3-sklearn           scikit-learn's CSV tables (examples/tabular_csv, tests/datasets/test_csv)
#   tuxpaint-stamps-default   PNG images sorted in category folders (examples/image_folder)
#   r-cran-palmerpenguins     the Palmer penguins table (examples/14_two_inputs); it brings R, whose library holds the CSV
#   libonnx-dev libprotobuf-dev  ONNX export: the onnx library's protobuf classes and checker
#   python3-onnx              onnx.checker on every exported file (tests/dsl/test_onnx_export)
#   python3-torch python3-torchvision  the PyTorch side of the tests that compare with it (test_interop,
#                             test_resnet: torchvision's ResNets and the .pth files torch.save writes)
set -euo pipefail

packages=(cmake ninja-build g++ libopenblas-dev librange-v3-dev libfmt-dev zlib1g-dev libcli11-dev
          libboost-test-dev nlohmann-json3-dev dataset-fashion-mnist fortunes libopenmpi-dev openmpi-bin
          libboost-dev libpng-dev libjpeg62-turbo-dev python3-sklearn tuxpaint-stamps-default r-cran-palmerpenguins libonnx-dev libprotobuf-dev python3-onnx
          python3-torch python3-torchvision "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
echo "Installing the missing packages: ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
