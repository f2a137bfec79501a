#!/usr/bin/env bash
# examples/16_transfer_learning on a slice of Tux Paint's stamps, from a ResNet-18 state_dict that
# torchvision writes with torch.save (seeded: the ImageNet download needs a network), saved and
# exported. Exits 77 (skipped) without python3-torchvision.
#
#   transfer_learning.sh EXAMPLE WORK_DIR
set -euo pipefail
example=$1 work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
  echo "SKIPPED: /usr/bin/python3 cannot import torch and torchvision (Debian's python3-torch and python3-torchvision)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 "$root/tests/data/pytorch_resnet.py" weights resnet18 0 "$work/resnet18.pth"
"$example" --weights "$work/resnet18.pth" --train-images 48 --image-size 40 --crop 32 --head-epochs 1 --epochs 1 \
  --batch-size 8 --accumulate 2 --verbose 2 --save-model "$work/tuned.safetensors" --export-onnx "$work/tuned.onnx"
