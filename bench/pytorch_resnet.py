#!/usr/bin/env python3
"""The PyTorch side of bench/resnet: torchvision's ResNet-18 (or 34, 50) trained with SGD (lr 0.01,
momentum 0.9) and cross-entropy on random images, as bench/resnet trains Accrue's.

Requests (pytorch_worker.py's protocol): "steps B K N" trains on N images in micro-batches of B,
an optimizer step every K of them (the tutorials' loop by hand: loss / K), and prints the seconds;
"peak" prints how far the process's peak resident memory (VmHWM) rose above what it held before
the model was made, in bytes (on a GPU, torch.cuda.max_memory_allocated): the weights, gradients,
momentum and activations, with what the allocator keeps besides. bench/resnet starts a worker per
configuration.

  pytorch_resnet.py ARCH SIZE [DEVICE]
Run with Debian's python3-torch and python3-torchvision (/usr/bin/python3), or a GPU machine's."""
import os
import re
import sys

import torch
import torchvision
from pytorch_worker import accumulate, serve


def resident_kib(field):
    with open("/proc/self/status") as f:
        return int(re.search(field + r":\s+(\d+)", f.read()).group(1))


def main():
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    torch.manual_seed(0)
    arch, size = sys.argv[1], int(sys.argv[2])
    device = torch.device(sys.argv[3] if len(sys.argv) > 3 else "cpu")
    images, labels = torch.rand(256, 3, size, size, device=device), torch.randint(0, 1000, (256,), device=device)
    with open("/proc/self/clear_refs", "w") as f:  # the peak from here on
        f.write("5")
    before = resident_kib("VmRSS")
    model = getattr(torchvision.models, arch)().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def prepare(words):
        batch, every, n = int(words[1]), int(words[2]), int(words[3])

        def micro_batch(i):
            x, y = images[i % 256:i % 256 + batch], labels[i % 256:i % 256 + batch]
            (torch.nn.functional.cross_entropy(model(x), y) / every).backward()

        return lambda: accumulate(model, opt, n, batch, every, micro_batch)

    serve(device, prepare, lambda: 1024 * (resident_kib("VmHWM") - before))


if __name__ == "__main__":
    main()
