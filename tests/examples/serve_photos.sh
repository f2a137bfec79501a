#!/usr/bin/env bash
# A model trained on a folder of photos with its preprocessing inside it serves files as they are:
# 10_image_folder --save-model and --export-onnx, then 12_predict on the saved model and 12_predict
# --onnx on the exported file give each raw photo (PNGs of many sizes) the same classes and the same
# probabilities (to the printed 0.1%, allowing a last digit rounded the other way), and 17_serve
# answers with 4 threads as with 1.
#   serve_photos.sh TRAIN_PROGRAM PREDICT_PROGRAM SERVE_PROGRAM WORK_DIR [IMAGE_FOLDER]
# Exits 77 (skipped, with the reason) without the stamps; the ONNX half without ONNX Runtime.
set -euo pipefail
train=$1 predict=$2 serve=$3 work=$4 stamps=${5:-/usr/share/tuxpaint/stamps}
if [ ! -d "$stamps" ]; then
  echo "SKIPPED: example_serve_photos: $stamps is not there (Debian's tuxpaint-stamps-default)"
  exit 77
fi
mkdir -p "$work"
"$train" --data "$stamps" --epochs 2 --verbose 0 --save-model "$work/stamps.safetensors" --export-onnx "$work/stamps.onnx" \
  | tee "$work/train.log"
# Two photos of each of the first six categories, whatever their sizes.
mapfile -t photos < <(for category in "$stamps"/*/; do find "$category" -name '*.png' | sort | head -2; done | head -12)
"$predict" "$work/stamps.safetensors" "${photos[@]}" --top 2 >"$work/accrue.txt"
cat "$work/accrue.txt"
grep -q "resized inside the model" <("$serve" "$work/stamps.safetensors" --threads 1 "${photos[0]}")
"$serve" "$work/stamps.safetensors" --threads 1 "${photos[@]}" >"$work/serve1.txt"
"$serve" "$work/stamps.safetensors" --threads 4 "${photos[@]}" >"$work/serve4.txt"
if ! diff "$work/serve1.txt" "$work/serve4.txt"; then
  echo "FAILED: 17_serve answers differently with 4 threads"
  exit 1
fi
if grep -q '^Not run in ONNX Runtime' "$work/train.log"; then
  echo "SKIPPED: the ONNX half: $(grep '^Not run in ONNX Runtime' "$work/train.log")"
  exit 77
fi
"$predict" --onnx "$work/stamps.onnx" "${photos[@]}" --top 2 >"$work/onnx.txt"
python3 "$(dirname "$0")/same_answers.py" "$work/accrue.txt" "$work/onnx.txt" 12
