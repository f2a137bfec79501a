#!/usr/bin/env python3
"""The PyTorch side of bench/input_pipeline: torchvision's ImageFolder with the same transforms
behind a DataLoader with worker processes, one epoch per request.

Protocol on stdin/stdout, one line each: the worker prints "ready"; "epoch DIR png32|jpeg224 BATCH
WORKERS" reads one shuffled epoch of the folder DIR in batches (read, decode, augment, collate) and
prints the seconds it took; "quit" ends. Each (folder, kind) keeps its DataLoader with persistent
workers, so that starting them is not counted.

Run with Debian's python3-torch and python3-torchvision (/usr/bin/python3)."""
import os
import sys
import time

import torch
import torchvision
from torchvision import transforms as T

CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def pipeline(kind):
    if kind == "png32":
        return T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                          T.Normalize(CIFAR_MEAN, CIFAR_STD)])
    return T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                      T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


def main():
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    loaders = {}
    print(f"ready torch {torch.__version__} torchvision {torchvision.__version__}", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        _, folder, kind, batch, workers = words
        key = (folder, kind, int(batch), int(workers))
        if key not in loaders:
            data = torchvision.datasets.ImageFolder(folder, transform=pipeline(kind))
            loaders[key] = torch.utils.data.DataLoader(data, batch_size=int(batch), shuffle=True,
                                                       num_workers=int(workers), persistent_workers=int(workers) > 0)
        start = time.perf_counter()
        samples = 0
        for x, y in loaders[key]:
            samples += x.shape[0]
        print(f"{time.perf_counter() - start:.6f}", flush=True)


if __name__ == "__main__":
    main()
