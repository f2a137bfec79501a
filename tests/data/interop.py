#!/usr/bin/env python3
"""The PyTorch side of tests/dsl/test_interop.cpp. Reads and writes safetensors with the standard
library (Debian has no python3-safetensors): an 8-byte little-endian header length, a JSON header,
raw little-endian data.

  interop.py to_torch WEIGHTS INPUT OUT   load Accrue's weights into the PyTorch model, write its logits on INPUT
  interop.py from_torch SEED INPUT OUT    write a PyTorch model's weights (seed SEED) and its logits on INPUT
Run with Debian's python3-torch (/usr/bin/python3)."""
import json
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "I32": torch.int32, "I64": torch.int64, "F16": torch.float16, "BF16": torch.bfloat16}
NAMES = {v: k for k, v in DTYPES.items()}


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        out[name] = torch.frombuffer(raw, dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"]).clone()
    return out


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        raw = t.detach().contiguous().numpy().tobytes()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def model():
    # The same layers as the Accrue model of the test, so the state_dict names match.
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3),
    )


def main():
    mode, arg, input_path, out = sys.argv[1:5]
    x = read(input_path)["x"]
    m = model()
    if mode == "to_torch":
        m.load_state_dict(read(arg), strict=True)  # num_batches_tracked is filled in when absent
    else:
        torch.manual_seed(int(arg))
        m = model()
        m.train()
        with torch.no_grad():  # move the running statistics away from their initial values
            m(torch.randn(8, 1, 8, 8) * 2 + 1)
    m.eval()
    with torch.no_grad():
        logits = m(x)
    tensors = {"logits": logits}
    if mode == "from_torch":
        tensors.update({k: v for k, v in m.state_dict().items() if not k.endswith("num_batches_tracked")})
    write(out, tensors)


if __name__ == "__main__":
    main()
