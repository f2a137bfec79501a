#!/usr/bin/python3
"""Writes a folder in CIFAR-10's binary layout (data_batch_1.bin ... data_batch_5.bin,
test_batch.bin, batches.meta.txt) with N random records per file, for running examples/11_cifar10
where CIFAR-10 itself is absent:  make_cifar_like.py DIR [N]"""
import pathlib
import random
import sys

out = pathlib.Path(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
out.mkdir(parents=True, exist_ok=True)
rng = random.Random(1)
for name in [f"data_batch_{b}.bin" for b in range(1, 6)] + ["test_batch.bin"]:
    records = bytearray()
    for _ in range(n):
        records.append(rng.randrange(10))
        records += rng.randbytes(3072)
    (out / name).write_bytes(bytes(records))
(out / "batches.meta.txt").write_text("\n".join(["airplane", "automobile", "bird", "cat", "deer", "dog", "frog",
                                                  "horse", "ship", "truck"]) + "\n\n")
