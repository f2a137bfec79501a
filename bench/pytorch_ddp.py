#!/usr/bin/env python3
"""The PyTorch side of bench/data_parallel: one epoch of the tutorial MLP (SGD 1e-3) or the CNN of
examples/05_fashion_mnist_cnn.cpp (Adam 1e-3) in one process with 2 threads, or in N processes with
one thread each under DistributedDataParallel over gloo (loopback), at the same effective batch.

Each epoch's shuffled order is split into global micro-batches of batch / accumulate samples, each
shared evenly by the processes; the non-final micro-batches of a window run under no_sync(), and
each process's loss is divided by the accumulation (DDP averages over the processes), the canonical
loop of PyTorch's documentation. Prints "result SECONDS" (the epoch, after start-up).

  pytorch_ddp.py --model mlp|cnn --batch 64 --accumulate 1 --processes 2 --samples 60000 --data DIR
Run with Debian's python3-torch (/usr/bin/python3)."""
import argparse
import contextlib
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from pytorch_mlp import load


def make_model(name):
    if name == "cnn":
        return torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(3136, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    return torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(784, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))


def train(rank, args, port, queue):
    processes = args.processes
    torch.set_num_threads(2 if processes == 1 else 1)
    if processes > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=processes)
    torch.manual_seed(0)
    x, y = load(args.data)
    x, y = x[:args.samples], y[:args.samples]
    model = make_model(args.model)
    if processes > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = (torch.optim.Adam(model.parameters(), lr=1e-3) if args.model == "cnn"
           else torch.optim.SGD(model.parameters(), lr=1e-3))
    loss_fn = torch.nn.CrossEntropyLoss()
    micro = args.batch // args.accumulate  # global micro-batch
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    starts = list(range(0, len(x), micro))
    if processes > 1:
        dist.barrier()
    start = time.perf_counter()
    opt.zero_grad()
    for b, i in enumerate(starts):
        idx = order[i:i + micro]
        share = (len(idx) + processes - 1) // processes
        mine = idx[rank * share:(rank + 1) * share]
        last = (b + 1) % args.accumulate == 0 or b + 1 == len(starts)
        sync = contextlib.nullcontext() if last or processes == 1 else model.no_sync()
        with sync:
            loss = loss_fn(model(x[mine]), y[mine]) / args.accumulate
            loss.backward()
        if last:
            opt.step()
            opt.zero_grad()
    if processes > 1:
        dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        queue.put(seconds)
    if processes > 1:
        dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    queue = mp.get_context("spawn").SimpleQueue()
    if args.processes == 1:
        train(0, args, 0, queue)
    else:
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        mp.spawn(train, args=(args, port, queue), nprocs=args.processes)
    print(f"result {queue.get():.6f} 0 0 0 0", flush=True)


if __name__ == "__main__":
    main()
