#!/usr/bin/env python3
"""The PyTorch side of bench/mlp_epoch: trains the tutorial MLP (SGD 1e-3) or the CNN of
examples/05_fashion_mnist_cnn.cpp (Adam 1e-3) for one epoch per request.

Protocol on stdin/stdout, one line each: the worker prints "ready"; "epoch B K f32|amp mlp|cnn"
trains one epoch of micro-batches of B (shuffled, data already in memory as tensors) with gradients
accumulated over K of them per optimizer step, the way the tutorials write it by hand (loss / K,
step every K and at the end of the epoch), and prints the seconds it took; "amp" runs under
torch.autocast("cpu", dtype=torch.bfloat16), or on a GPU torch.autocast("cuda", dtype=torch.float16)
with a GradScaler (what Accrue's .amp() does there); "quit" ends. Each model keeps its weights and
optimizer state from one request to the next, as Accrue's do.

  pytorch_mlp.py [DATA_DIR] [DEVICE]        DEVICE: cpu (default), cuda, cuda:N; on a GPU the data
                                            is moved there once, and each epoch ends synchronised.
Run with Debian's python3-torch (/usr/bin/python3), or a GPU machine's PyTorch."""
import gzip
import os
import struct
import sys

import torch
from pytorch_worker import accumulate, serve


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


def load(folder):
    for suffix in (".gz", ""):
        images = os.path.join(folder, "train-images-idx3-ubyte" + suffix)
        labels = os.path.join(folder, "train-labels-idx1-ubyte" + suffix)
        if os.path.exists(images) and os.path.exists(labels):
            return read_idx(images).float().div(255).unsqueeze(1), read_idx(labels).long()
    g = torch.Generator().manual_seed(0)
    return torch.rand(60000, 1, 28, 28, generator=g), torch.randint(0, 10, (60000,), generator=g)


def make_scaler():
    """PyTorch's GradScaler for float16 on a GPU, under its newer or older name."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda")
    return torch.cuda.amp.GradScaler()


def main():
    threads = int(os.environ.get("BENCH_THREADS", "2"))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x, y = load(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist")
    device = torch.device(sys.argv[2] if len(sys.argv) > 2 else "cpu")
    x, y = x.to(device), y.to(device)
    mlp = torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(784, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    )
    cnn = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(3136, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10),
    )
    mlp.to(device)
    cnn.to(device)
    gpu = device.type == "cuda"
    if gpu:
        # No TF32, as in Accrue's float32 GEMMs and convolutions.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    setups = {"mlp": (mlp, torch.optim.SGD(mlp.parameters(), lr=1e-3)),
              "cnn": (cnn, torch.optim.Adam(cnn.parameters(), lr=1e-3))}
    loss_fn = torch.nn.CrossEntropyLoss()

    def prepare(words):
        batch = int(words[1])
        every = int(words[2]) if len(words) > 2 else 1
        amp = len(words) > 3 and words[3] == "amp"
        autocast = torch.autocast(device.type, dtype=torch.float16 if gpu else torch.bfloat16, enabled=amp)
        scaler = make_scaler() if gpu and amp else None
        model, opt = setups[words[4] if len(words) > 4 else "mlp"]

        order = None

        def micro_batch(i):
            idx = order[i:i + batch]
            with autocast:
                loss = loss_fn(model(x[idx]), y[idx])
            scaled = loss / every if every > 1 else loss
            (scaler.scale(scaled) if scaler else scaled).backward()
            loss.item()

        def step():
            scaler.step(opt)
            scaler.update()

        def epoch():
            nonlocal order
            order = torch.randperm(len(x), device=device)
            accumulate(model, opt, len(x), batch, every, micro_batch, step if scaler else None)
        return epoch

    serve(device, prepare)


if __name__ == "__main__":
    main()
