#!/usr/bin/env bash
# Replaces the vendored uPlot with npm's uplot@VERSION (dist files and licence, unchanged).
set -euo pipefail
version=${1:?usage: update.sh VERSION}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "uplot@$version" >/dev/null && tar xzf "uplot-$version.tgz")
cp "$work/package/dist/uPlot.iife.min.js" "$work/package/dist/uPlot.min.css" "$work/package/LICENSE" "$here/"
sed -i "s/[0-9]\+\.[0-9]\+\.[0-9]\+/$version/g" "$here/README.md"
echo "uPlot $version vendored in $here"
