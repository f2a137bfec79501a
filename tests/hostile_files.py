#!/usr/bin/env python3
"""Crafts the small hostile files tests/hostile_inputs.sh feeds the examples: safetensors headers
and model descriptions nested 100,000 deep, a model file describing gigabytes of layers it does not
hold, a model whose input shape asks for a resize of gigabytes. Standard library only.

  hostile_files.py deep_header DEST
  hostile_files.py deep_model MODEL DEST          (MODEL: a file Sequential::save wrote)
  hostile_files.py many_dense MODEL DEST N UNITS  (N Dense(UNITS) layers described, MODEL's tensors kept)
  hostile_files.py input_shape MODEL DEST C H W
  hostile_files.py deep_jsonl DEST"""
import json
import struct
import sys

DEPTH = 100000


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_safetensors(path, header_text, body):
    text = header_text.encode()
    text += b" " * (-len(text) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + body)


def with_model(src, dest, change):
    header, body = read_safetensors(src)
    meta = header["__metadata__"]
    meta["accrue.model"] = change(meta["accrue.model"])
    write_safetensors(dest, json.dumps(header), body)


def main(kind, *args):
    if kind == "deep_header":
        write_safetensors(args[0], "[" * DEPTH + "]" * DEPTH, b"")
    elif kind == "deep_model":
        with_model(args[0], args[1], lambda _: "[" * DEPTH + "]" * DEPTH)
    elif kind == "many_dense":
        n, units = int(args[2]), int(args[3])

        def many(text):
            model = json.loads(text)
            model["layers"] = [model["layers"][0]] + [{"type": "Dense", "name": f"d{i}", "config": {"units": units, "bias": True}}
                                                      for i in range(n)]
            return json.dumps(model)
        with_model(args[0], args[1], many)
    elif kind == "input_shape":
        def shape(text):
            model = json.loads(text)
            model["input_shape"] = [int(v) for v in args[2:5]]
            return json.dumps(model)
        with_model(args[0], args[1], shape)
    elif kind == "deep_jsonl":
        with open(args[0], "w") as f:
            f.write(json.dumps({"type": "run", "title": "deep"}) + "\n")
            f.write("[" * DEPTH + "]" * DEPTH + "\n")
    else:
        sys.exit(f"unknown kind {kind}")


if __name__ == "__main__":
    main(*sys.argv[1:])
