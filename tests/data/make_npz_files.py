#!/usr/bin/python3
"""Writes the .npz archives of tests/datasets/test_npz_cifar.cpp with NumPy itself (Debian's
python3-numpy): np.savez (stored members) and np.savez_compressed (deflated), the ZIP64 fields
NumPy writes included. The arrays are given by formula so that the test can check every value."""
import pathlib

import numpy as np

out = pathlib.Path(__file__).with_name("npz")
out.mkdir(exist_ok=True)
x = (np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 1.0)
y = np.array([2, 0, 1], dtype=np.int32)
z = np.asfortranarray(np.arange(6, dtype=">f4").reshape(2, 3))
h = np.array([1.5, -2.25], dtype=np.float16)
np.savez(out / "stored.npz", x=x, y=y, z=z)
np.savez_compressed(out / "compressed.npz", x=x, y=y, h=h)
# NumPy's defaults: float64 and int64, each member read as its own (float32, int32 when it fits).
np.savez(out / "float64.npz", d=np.array([0.1, -2.5e30, 3.0]))
np.savez(out / "defaults.npz", x=np.arange(6, dtype=np.float64).reshape(2, 3) / 4, y=np.array([1, 0], dtype=np.int64),
         w=np.array([0.5, 2.0], dtype=np.float32))
np.savez(out / "int64_big.npz", y=np.array([1, 2**40], dtype=np.int64), x=np.zeros(2, dtype=np.float32))
np.savez(out / "float64_big.npz", d=np.array([1.0, 1e39]))
print("wrote", sorted(p.name for p in out.iterdir()))
