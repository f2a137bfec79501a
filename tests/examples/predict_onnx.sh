#!/usr/bin/env bash
# The tutorial's model leaves Accrue two ways and is classified the same by both: 01_fashion_mnist_mlp
# --save-model and --export-onnx (which runs the file in ONNX Runtime beside predict), then
# 12_predict on the saved model and 12_predict --onnx on the exported file print the same classes.
#   predict_onnx.sh TRAIN_PROGRAM PREDICT_PROGRAM WORK_DIR
# Exits 77 (skipped, with the reason) where ONNX Runtime is not installed.
set -euo pipefail
train=$1 predict=$2 work=$3
images="${ACCRUE_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz"
mkdir -p "$work"
"$train" --epochs 1 --lr 0.05 --verbose 0 --save-model "$work/predict.safetensors" --export-onnx "$work/predict.onnx" \
  | tee "$work/train.log"
if grep -q '^Not run in ONNX Runtime' "$work/train.log"; then
  echo "SKIPPED: example_predict_onnx: $(grep '^Not run in ONNX Runtime' "$work/train.log")"
  exit 77
fi
grep -q 'ONNX Runtime against predict, batch 7: .*(within' "$work/train.log"
"$predict" "$work/predict.safetensors" "$images" --classes fashion_mnist --first 20 --top 1 >"$work/accrue.txt"
"$predict" --onnx "$work/predict.onnx" "$images" --classes fashion_mnist --first 20 --top 1 >"$work/onnx.txt"
cat "$work/onnx.txt"
# The classes, without the percentages (a last digit may round differently).
if ! diff <(sed 's/ ([0-9.]*%)//g' "$work/accrue.txt") <(sed 's/ ([0-9.]*%)//g' "$work/onnx.txt"); then
  echo "FAILED: 12_predict and 12_predict --onnx classify differently"
  exit 1
fi
echo "the same classes for all 20 images"
