#!/usr/bin/env bash
# Installs npm's onnxruntime-node (ONNX Runtime's CPU library inside; the version pinned in
# package-lock.json) into FOLDER/node_modules, where onnx::run_onnxruntime finds it
# (BUILD_DIR/onnxruntime-node by default, or $ACCRUE_ONNXRUNTIME_NODE). Its install step, which
# would fetch GPU libraries, is skipped. Exits 0 once it is there, 77 with the reason when it
# cannot be installed (no node and npm, no registry).
#   install_onnxruntime.sh FOLDER
set -uo pipefail
folder=$1
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "SKIPPED: ONNX Runtime checks: $1"; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null || skip "no node and npm (Debian's nodejs and npm; tests/run_tests.sh installs them)"
if [[ -f "$folder/node_modules/onnxruntime-node/package.json" ]] && cmp -s "$here/package-lock.json" "$folder/package-lock.json"; then
  exit 0
fi
mkdir -p "$folder"
cp "$here/package.json" "$here/package-lock.json" "$folder/"
(cd "$folder" && ONNXRUNTIME_NODE_INSTALL=skip timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >npm.log 2>&1) ||
  skip "npm could not install onnxruntime-node from the registry: $(tail -1 "$folder/npm.log")"
echo "onnxruntime-node $(node -p "require('$folder/node_modules/onnxruntime-node/package.json').version") in $folder"
