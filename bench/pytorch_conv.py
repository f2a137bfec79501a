#!/usr/bin/env python3
"""The PyTorch side of bench/conv_shapes: milliseconds per call of a 3x3, padding-1 convolution,
forward and forward + backward, with oneDNN (mkldnn) on and off.
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
    print("| conv | batch | oneDNN forward | oneDNN fwd+bwd | no oneDNN forward | no oneDNN fwd+bwd |")
    print("|---|---|---|---|---|---|")
    for spec in sys.argv[2:]:
        n, c, h, k = (int(v) for v in spec.split(":"))
        x = torch.rand(n, c, h, h) * 2 - 1
        conv = torch.nn.Conv2d(c, k, 3, padding=1)
        g = torch.rand(n, k, h, h) * 2 - 1
        if c != 1:
            x.requires_grad_(True)
        row = []
        for enabled in (True, False):
            with torch.backends.mkldnn.flags(enabled=enabled):
                def fwd():
                    with torch.no_grad():
                        conv(x)

                def both():
                    (conv(x) * g).sum().backward()

                row += [best(reps, fwd) * 1e3, best(reps, both) * 1e3]
        print(f"| {c}->{k} {h}x{h} | {n} | " + " | ".join(f"{v:.3f}" for v in row) + " |", flush=True)


if __name__ == "__main__":
    main()
