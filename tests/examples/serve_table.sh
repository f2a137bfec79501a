#!/usr/bin/env bash
# Models trained on tables serve CSV rows with none of their code: the model file says which
# columns make each input (ModelSignature::csv_options), so 12_predict reads a file's rows as
# training read its own.
#   - 09_tabular_csv on scikit-learn's breast_cancer.csv (no header: columns by position) -> 12_predict
#     on the file's 569 rows: the classes agree with the file's labels at least 95% of the time;
#   - 14_two_inputs on the penguins (two inputs; the island's name looked up inside the model, "NA"
#     as a missing measure) -> 12_predict on the file, and on a copy with its columns in another
#     order and one island renamed to one never seen: the same answers for every other row, and for
#     the renamed row the answer of the lookup's unknown index; the classes agree with the species at
#     least 90% of the time;
#   - 12_predict --onnx on each exported file: the same classes and probabilities (to the printed 0.1%).
#   serve_table.sh TABULAR_PROGRAM TWO_INPUTS_PROGRAM PREDICT_PROGRAM WORK_DIR
# Exits 77 (skipped, with the reason) without the tables; the ONNX half without ONNX Runtime.
set -euo pipefail
tabular=$1 two_inputs=$2 predict=$3 work=$4
cancer=/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv
penguins=/usr/lib/R/site-library/palmerpenguins/extdata/penguins.csv
for f in "$cancer" "$penguins"; do
  if [ ! -f "$f" ]; then
    echo "SKIPPED: example_serve_table: $f is not there (Debian's python3-sklearn, r-cran-palmerpenguins)"
    exit 77
  fi
done
mkdir -p "$work"
"$tabular" --epochs 20 --verbose 0 --save-model "$work/cancer.safetensors" --export-onnx "$work/cancer.onnx" | tee "$work/cancer.log"
"$two_inputs" --verbose 0 --save-model "$work/penguins.safetensors" --export-onnx "$work/penguins.onnx" | tee "$work/penguins.log"
"$predict" "$work/cancer.safetensors" "$cancer" --skip-rows 1 --top 2 >"$work/cancer.txt"
"$predict" "$work/penguins.safetensors" "$penguins" --top 3 >"$work/penguins.txt"
# The penguins again: the columns reversed, and the first penguin's island never seen before.
python3 - "$penguins" "$work/shuffled.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
header, body = rows[0], rows[1:]
island = header.index("island")
body[0][island] = "Atlantis"
with open(sys.argv[2], "w", newline="") as out:
    w = csv.writer(out)
    for row in [header] + body:
        w.writerow(row[::-1])
PY
"$predict" "$work/penguins.safetensors" "$work/shuffled.csv" --top 3 >"$work/shuffled.txt"
python3 - "$cancer" "$work/cancer.txt" "$penguins" "$work/penguins.txt" "$work/shuffled.txt" <<'PY'
import csv, re, sys
cancer, cancer_out, penguins, penguins_out, shuffled_out = sys.argv[1:6]
def answers(path):
    lines = open(path).read().splitlines()
    return [re.findall(r"[:,] (.+?) \(([0-9.]+)%\)", line) for line in lines]
labels = [row[-1] for row in list(csv.reader(open(cancer)))[1:]]
got = answers(cancer_out)
assert len(got) == len(labels) == 569, (len(got), len(labels))
right = sum(a[0][0] == label for a, label in zip(got, labels))
print(f"breast_cancer.csv served by 12_predict: {right} of {len(labels)} rows as labelled")
assert right >= 0.95 * len(labels), right
rows = list(csv.DictReader(open(penguins)))
got, moved = answers(penguins_out), answers(shuffled_out)
assert len(got) == len(moved) == len(rows) == 344, (len(got), len(moved), len(rows))
assert got[1:] == moved[1:], "the same rows with the columns in another order answer differently"
right = sum(a[0][0] == row["species"] for a, row in zip(got, rows))
print(f"penguins.csv served by 12_predict: {right} of {len(rows)} as their species; the reversed columns: the same answers")
assert right >= 0.9 * len(rows), right
print("the penguin from an island never seen:", moved[0])
PY
# The renamed island is the unknown index whatever its name: another unseen name answers the same.
sed 's/^\([^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,\)Atlantis/\1Lemuria/' "$work/shuffled.csv" >"$work/renamed.csv"
grep -q Lemuria "$work/renamed.csv"
"$predict" "$work/penguins.safetensors" "$work/renamed.csv" --top 3 | sed 's/renamed.csv/shuffled.csv/' | cmp - "$work/shuffled.txt"
for model in cancer penguins; do
  if grep -q '^Not run in ONNX Runtime' "$work/$model.log"; then
    echo "SKIPPED: the ONNX half: $(grep '^Not run in ONNX Runtime' "$work/$model.log")"
    exit 77
  fi
done
"$predict" --onnx "$work/cancer.onnx" "$cancer" --skip-rows 1 --top 2 >"$work/cancer_onnx.txt"
"$predict" --onnx "$work/penguins.onnx" "$work/shuffled.csv" --top 3 >"$work/shuffled_onnx.txt"
python3 "$(dirname "$0")/same_answers.py" "$work/cancer.txt" "$work/cancer_onnx.txt" 569
python3 "$(dirname "$0")/same_answers.py" "$work/shuffled.txt" "$work/shuffled_onnx.txt" 344
