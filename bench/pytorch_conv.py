#!/usr/bin/env python3
"""The PyTorch side of bench/conv_shapes: milliseconds per call of a 3x3, padding-1 convolution,
forward and forward + backward (from a given output gradient), with oneDNN (mkldnn) on and off, and
with oneDNN under bfloat16 autocast.
Arguments: REPS then N:C:H:K per shape. Run with Debian's python3-torch (/usr/bin/python3)."""
import sys
import time

import torch


def best(reps, f):
    f()
    out = 1e9
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        out = min(out, (time.perf_counter() - t) / reps)
    return out


def main():
    torch.set_num_threads(2)
    reps = int(sys.argv[1])
    print(f"torch {torch.__version__}, mkldnn available: {torch.backends.mkldnn.is_available()}")
    print("| conv | batch | oneDNN forward | oneDNN fwd+bwd | no oneDNN forward | no oneDNN fwd+bwd "
          "| oneDNN bfloat16 forward | oneDNN bfloat16 fwd+bwd |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in sys.argv[2:]:
        n, c, h, k = (int(v) for v in spec.split(":"))
        conv = torch.nn.Conv2d(c, k, 3, padding=1)
        row = []
        for enabled, dtype in ((True, torch.float32), (False, torch.float32), (True, torch.bfloat16)):
            # As autocast runs the CNN: the first layer reads float32 images, the second bfloat16.
            x = torch.rand(n, c, h, h) * 2 - 1
            if c != 1:
                x = x.to(dtype).requires_grad_(True)
            g = (torch.rand(n, k, h, h) * 2 - 1).to(dtype)
            # A fresh autocast scope per call, as per training step (its cache of bfloat16 weights
            # lives as long as the scope).
            def autocast():
                return torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16)

            def fwd():
                with torch.no_grad(), autocast():
                    conv(x)

            def both():
                with autocast():
                    y = conv(x)
                y.backward(g)

            with torch.backends.mkldnn.flags(enabled=enabled):
                row += [best(reps, fwd) * 1e3, best(reps, both) * 1e3]
        print(f"| {c}->{k} {h}x{h} | {n} | " + " | ".join(f"{v:.3f}" for v in row) + " |", flush=True)


if __name__ == "__main__":
    main()
