#!/usr/bin/env bash
# A text model leaves with its vocabulary: 07_char_lm --save-model, then 07_char_lm --generate-from
# the file (no training, no text read) prints the same sample as the trained model did.
#   char_lm_generate.sh CHAR_LM_PROGRAM WORK_DIR
set -euo pipefail
program=$1 work=$2
mkdir -p "$work"
small=(--max-blocks 64 --width 32 --layers 1 --heads 2 --block-size 32 --sample-tokens 60 --prompt "The " --seed 3)
"$program" --epochs 1 --verbose 0 "${small[@]}" --save-model "$work/lm.safetensors" | tee "$work/train.log"
trained=$(grep '^sample: ' "$work/train.log" | tail -1 | sed 's/^sample: //')
loaded=$("$program" --generate-from "$work/lm.safetensors" --sample-tokens 60 --prompt "The " --seed 3)
echo "loaded: $loaded"
[[ "$trained" == "$loaded" ]] || { echo "FAILED: the loaded model generates another sample"; exit 1; }
echo "the same sample from the loaded model"
