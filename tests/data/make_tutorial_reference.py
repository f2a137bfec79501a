#!/usr/bin/env python3
"""Writes tests/data/pytorch_tutorial_accuracy.json: the test accuracy PyTorch's FashionMNIST tutorial
reaches after each of 5 epochs (Flatten, Linear 512, ReLU, Linear 512, ReLU, Linear 10; SGD lr 1e-3;
batch 64, shuffled), mean and spread over seeds 0..8. For tests/dsl/test_tutorial_accuracy.cpp.
Run with Debian's python3-torch: OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 this_file (takes minutes)."""
import gzip
import json
import os
import statistics
import struct

import torch


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


folder = "/usr/share/datasets/fashion-mnist"
x = read_idx(f"{folder}/train-images-idx3-ubyte.gz").float().div(255).unsqueeze(1)
y = read_idx(f"{folder}/train-labels-idx1-ubyte.gz").long()
tx = read_idx(f"{folder}/t10k-images-idx3-ubyte.gz").float().div(255).unsqueeze(1)
ty = read_idx(f"{folder}/t10k-labels-idx1-ubyte.gz").long()
torch.set_num_threads(2)
EPOCHS, SEEDS = 5, range(9)
per_epoch = [[] for _ in range(EPOCHS)]
for seed in SEEDS:
    torch.manual_seed(seed)
    train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    for epoch in range(EPOCHS):
        for xb, yb in train:
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            per_epoch[epoch].append((model(tx).argmax(1) == ty).float().mean().item())
    print("seed", seed, [round(a[-1], 4) for a in per_epoch], flush=True)

out = {
    "torch": torch.__version__,
    "seeds": list(SEEDS),
    "mean_accuracy": [statistics.mean(a) for a in per_epoch],
    "stdev_accuracy": [statistics.stdev(a) for a in per_epoch],
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch_tutorial_accuracy.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", path)
