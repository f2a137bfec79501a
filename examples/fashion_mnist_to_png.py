#!/usr/bin/python3
"""Writes FashionMNIST's 70,000 images as PNG files sorted in class folders, a large image folder
for examples/10_image_folder and bench/input_pipeline:

    examples/fashion_mnist_to_png.py OUT [--data /usr/share/datasets/fashion-mnist] [--limit N]

makes OUT/train/<class>/<index>.png and OUT/test/<class>/<index>.png (8-bit grey, 28 x 28). Only
Python's standard library: the IDX files are read with gzip, the PNGs written with zlib.
"""
import argparse
import gzip
import pathlib
import struct
import sys
import zlib

CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle-boot"]


def idx(path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return shape, data[4 + 4 * dims:]


def png(width, height, grey):
    rows = b"".join(b"\x00" + grey[r * width:(r + 1) * width] for r in range(height))
    chunk = lambda kind, body: struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b""))


def find(folder, stem):
    for name in (stem, stem + ".gz"):
        if (folder / name).exists():
            return folder / name
    sys.exit(f"{folder / stem}: not found (Debian's dataset-fashion-mnist installs the files)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--data", type=pathlib.Path, default=pathlib.Path("/usr/share/datasets/fashion-mnist"))
    parser.add_argument("--limit", type=int, default=0, help="write the first N images of each split only")
    args = parser.parse_args()
    for split, prefix in (("train", "train"), ("test", "t10k")):
        (count, h, w), pixels = idx(find(args.data, f"{prefix}-images-idx3-ubyte"))
        _, labels = idx(find(args.data, f"{prefix}-labels-idx1-ubyte"))
        n = min(count, args.limit) if args.limit else count
        for c in CLASSES:
            (args.out / split / c).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            image = pixels[i * h * w:(i + 1) * h * w]
            (args.out / split / CLASSES[labels[i]] / f"{i:05d}.png").write_bytes(png(w, h, image))
        print(f"{args.out / split}: {n} images")


if __name__ == "__main__":
    main()
