#!/usr/bin/python3
"""Writes tests/data/images/ for tests/datasets/test_image_folder.cpp: PNGs of 16 bits per channel
(grey, grey and alpha, RGB, RGBA), 8-bit PNGs with a gamma chunk, and a CMYK JPEG as PIL saves it,
with what PIL (Debian's python3-pil, which torchvision's ImageFolder uses) decodes each to after
convert("RGB"): images/pil_rgb.json. Run with /usr/bin/python3 tests/data/make_image_reference.py"""
import json
import pathlib
import struct
import zlib

from PIL import Image

out = pathlib.Path(__file__).with_name("images")
out.mkdir(exist_ok=True)


def png(path, width, height, depth, colour, rows, extra=b""):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + row for row in rows)
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", zlib.compress(raw)) +
                     chunk(b"IEND", b""))


def words(*values):
    return struct.pack(">" + "H" * len(values), *values)


# 3 x 2 pixels each; mid-grey 32768 is 128 in PIL (the high byte), not the 186 a gamma conversion gives.
png(out / "rgb16.png", 3, 2, 16, 2, [words(32768, 1000, 65535, 256, 511, 0, 12345, 54321, 40000),
                                      words(0, 65535, 32767, 65280, 255, 128, 300, 60000, 1)])
png(out / "rgba16.png", 3, 2, 16, 6, [words(32768, 1000, 65535, 32768, 256, 511, 0, 65535, 1, 2, 3, 0),
                                       words(0, 65535, 32767, 4000, 65280, 255, 128, 65535, 9, 99, 999, 9999)])
png(out / "ga16.png", 3, 2, 16, 4, [words(32768, 1000, 65535, 32768, 256, 511), words(0, 65535, 32767, 4000, 65280, 255)])
png(out / "grey16.png", 3, 2, 16, 0, [words(32768, 1000, 65535), words(0, 200, 32767)])
# 8-bit RGB with a gAMA chunk of 1/1.0 (linear): PIL ignores it.
gama = struct.pack(">I", 4) + b"gAMA" + struct.pack(">I", 100000) + struct.pack(">I", zlib.crc32(b"gAMA" + struct.pack(">I", 100000)) & 0xFFFFFFFF)
png(out / "gamma8.png", 2, 1, 8, 2, [bytes([10, 128, 250, 64, 32, 16])], gama)
# A CMYK JPEG as PIL writes one (Adobe's inverted convention).
cmyk = Image.new("CMYK", (4, 2))
cmyk.putdata([(0, 0, 0, 0), (255, 0, 0, 0), (0, 255, 0, 0), (0, 0, 255, 0), (0, 0, 0, 255), (60, 120, 180, 40),
              (200, 10, 90, 128), (128, 128, 128, 128)])
cmyk.save(out / "cmyk.jpg", quality=100)

pil = {}
for name in ["rgb16.png", "rgba16.png", "ga16.png", "grey16.png", "gamma8.png", "cmyk.jpg"]:
    image = Image.open(out / name)
    pil[name] = {"mode": image.mode, "rgb": [list(p) for p in image.convert("RGB").getdata()]}
(out / "pil_rgb.json").write_text(json.dumps(pil, indent=1) + "\n")
print("wrote", sorted(p.name for p in out.iterdir()))
