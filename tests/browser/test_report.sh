#!/usr/bin/env bash
# The report page in a real browser (Debian's chromium, headless): a short run (03_accumulation_schedule:
# accumulation 8 then 4, warmup-cosine, clipping) opens with no errors, titled with the run's name and
# its test accuracy, one point per optimizer step in the LR chart, its confusion matrices as tables and
# no legend showing "--"; a float16 run draws its loss scale; accrue-report overlays the two; a report
# as long as 20 tutorial epochs renders in under a second; 04_memory_comparison's page draws its
# bars; and the tutorial's page links the ONNX file it exported.
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
  dom=$(timeout 60 "$chromium" "${flags[@]}" --dump-dom "file://$work/run.html" 2>/dev/null)
  b=$(grep -o '<body[^>]*>' <<<"$dom")
  check "the page's title is the run's name" 'grep -q "<h1 id=\"title\">03_accumulation_schedule --epochs 3</h1>" <<<"$dom"'
  check "the header gives the test accuracy" 'grep -q "<div id=\"results\">test accuracy: [0-9.]*%</div>" <<<"$dom"'
  check "no legend shows --" '! grep -q "class=\"u-value\">--<" <<<"$dom"'
  check "captions say what ran: warmup (warmup-cosine), clipping (on)" \
    'grep -q "id=\"lr-note\">[^<]*(the warmup)" <<<"$dom" && grep -q "id=\"norms-note\">[^<]*before and after clipping" <<<"$dom"'
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

# float16: the loss scale on a chart of its own; then two runs side by side (accrue-report).
if "$build/examples/01_fashion_mnist_mlp" --epochs 1 --verbose 0 --amp=f16 --report "$work/f16.html" >"$work/f16.log" 2>&1; then
  dom=$(timeout 60 "$chromium" "${flags[@]}" --dump-dom "file://$work/f16.html" 2>/dev/null)
  check "a float16 run's page draws its loss scale on a chart of its own" 'grep -q "<div id=\"scale-box\"><div id=\"scale\" class=\"chart\"><div class=\"uplot" <<<"$dom"'
  check "it says why the planned peak moved against float32" 'grep -q "float16 autocast [a-z]* the planned peak" <<<"$dom"'
  check "its captions say no clipping and no warmup" \
    'grep -q "id=\"norms-note\">[^<]*does not clip" <<<"$dom" && grep -q "id=\"lr-note\">The learning rate of every optimizer step.</p>" <<<"$dom"'
  if "$build/examples/accrue-report" "$work/run.jsonl" "$work/f16.jsonl" -o "$work/compare.html" >"$work/compare.log" 2>&1; then
    b=$(body "$work/compare.html")
    echo "comparison: $b"
    check "the comparison page opens without errors and overlays both runs" \
      '[[ -n "$b" && -z "$(attribute "$b" data-errors)" && "$(attribute "$b" data-runs)" == 2 && "$(attribute "$b" data-loss-series)" == 2 ]]'
    timeout 60 "$chromium" "${flags[@]}" --window-size=1280,1000 --screenshot="$shots/compare.png" "file://$work/compare.html" >/dev/null 2>&1
  else
    cat "$work/compare.log"
    check "accrue-report writes the comparison" false
  fi
else
  cat "$work/f16.log"
  check "01_fashion_mnist_mlp --amp=f16 trains with --report" false
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
