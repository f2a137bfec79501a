#!/usr/bin/env bash
# The report page in a real browser (Debian's chromium, headless): a short run (03_accumulation_schedule:
# accumulation 8 then 4, warmup-cosine, clipping) opens with no errors and one point per optimizer
# step in the LR chart and its confusion matrices as tables, a report as long as 20 tutorial epochs renders in under a second, and
# 04_memory_comparison's page draws its bars, and the tutorial's page links the ONNX file it exported.
# Screenshots go to SHOTS.
#   test_report.sh BUILD_DIR SHOTS_DIR
# Exits 77 (skipped, with the reason) without chromium or the FashionMNIST files.
set -uo pipefail
build=$1 shots=$2
chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$chromium" ]]; then
  echo "SKIPPED: test_report_browser: no chromium (Debian's package chromium; tests/run_tests.sh installs it)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$shots"
# Flags for a closed network: no background connections, no first-run work.
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --user-data-dir="$work/profile" --hide-scrollbars)
failed=0
# The <body> element after the page's scripts ran: data-errors, data-lr-points, data-render-ms.
body() { timeout 60 "$chromium" "${flags[@]}" --dump-dom "file://$1" 2>/dev/null | grep -o '<body[^>]*>'; }
attribute() { sed -n "s/.* $2=\"\\([^\"]*\\)\".*/\\1/p" <<<"$1"; }
check() {  # what, condition
  if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; failed=1; fi
}

if "$build/examples/03_accumulation_schedule" --epochs 3 --report "$work/run.html" >"$work/run.log" 2>&1; then
  b=$(body "$work/run.html")
  steps=$(grep -c '^{"type":"step"' "$work/run.jsonl")
  echo "short run: $steps optimizer steps; $b"
  check "the page reports no errors" '[[ -n "$b" && -z "$(attribute "$b" data-errors)" ]]'
  check "one point per optimizer step in the LR chart" '[[ "$(attribute "$b" data-lr-points)" == "$steps" && "$steps" -gt 0 ]]'
  check "the confusion matrices, training and validation, as tables" '[[ "$(attribute "$b" data-tables)" == 2 ]]'
  timeout 60 "$chromium" "${flags[@]}" --window-size=1280,1500 --screenshot="$shots/report.png" "file://$work/run.html" \
    >/dev/null 2>&1
  check "a screenshot" '[[ -s "$shots/report.png" ]]'
elif grep -q "FashionMNIST" "$work/run.log"; then
  echo "SKIPPED: the short run needs the FashionMNIST files (Debian's dataset-fashion-mnist): $(tail -1 "$work/run.log")"
  exit 77
else
  cat "$work/run.log"
  check "03_accumulation_schedule trains with --report" false
fi

ACCRUE_REPORT_OUT="$work/large.html" "$build/tests/test_report" --run_test=twenty_tutorial_epochs_of_steps_stay_under_2_mb \
  >/dev/null 2>&1
b=$(body "$work/large.html")
ms=$(attribute "$b" data-render-ms)
echo "20 epochs: $(stat -c %s "$work/large.html") bytes, $(attribute "$b" data-lr-points) steps, rendered ${ms:-?} ms after navigation"
check "the long report opens without errors" '[[ -n "$b" && -z "$(attribute "$b" data-errors)" ]]'
check "the long report renders in under a second" '[[ -n "$ms" && "$ms" -lt 1000 ]]'
if "$build/examples/04_memory_comparison" --configs 64,16x4 --report "$work/memory.html" >"$work/memory.log" 2>&1; then
  b=$(body "$work/memory.html")
  echo "memory comparison: $b"
  check "the memory comparison page opens without errors" '[[ -n "$b" && -z "$(attribute "$b" data-errors)" ]]'
  check "it draws both configurations" '[[ "$(attribute "$b" data-bars)" == 2 ]]'
  timeout 60 "$chromium" "${flags[@]}" --window-size=1280,1100 --screenshot="$shots/memory_comparison.png" \
    "file://$work/memory.html" >/dev/null 2>&1
else
  cat "$work/memory.log"
  check "04_memory_comparison writes its page" false
fi
if "$build/examples/01_fashion_mnist_mlp" --epochs 1 --verbose 0 --report "$work/mlp.html" --export-onnx "$work/mlp.onnx" \
  >"$work/mlp.log" 2>&1; then
  dom=$(timeout 60 "$chromium" "${flags[@]}" --dump-dom "file://$work/mlp.html" 2>/dev/null)
  b=$(grep -o '<body[^>]*>' <<<"$dom")
  check "the tutorial's page opens without errors" '[[ -n "$b" && -z "$(attribute "$b" data-errors)" ]]'
  check "it links the exported ONNX file" 'grep -q "<a href=\"mlp.onnx\">ONNX model (mlp.onnx)</a>" <<<"$dom"'
else
  cat "$work/mlp.log"
  check "01_fashion_mnist_mlp exports with --report" false
fi
exit $failed
