#!/usr/bin/env python3
"""The PyTorch side of bench/data_parallel --shard: one epoch of the char-level GPT of
bench/pytorch_char_lm.py (AdamW, weight decay 0.1, clipping to 1.0) in 2 processes with one thread
each under DistributedDataParallel over gloo (loopback), with plain AdamW ("ddp") or AdamW inside
torch.distributed.optim.ZeroRedundancyOptimizer ("zero": each process keeps the state of its share
of the parameters and broadcasts them after its step).

The epoch's random blocks are split into global micro-batches of 2 x micro-batch blocks, each process
taking its half; the non-final micro-batches of a window run under no_sync(), each loss divided by
the accumulation. Each process prints "shardresult RANK SECONDS PEAK OPTIMIZER_STATE SENT_PER_STEP":
the epoch's seconds, its resident set's peak (ru_maxrss), the bytes of its optimizer's state, and
the bytes it sends per optimizer step as a ring would (2(p-1)/p of the gradients' allreduce, and
with ZeRO (p-1)/p of the parameters broadcast).

  pytorch_zero.py --optimizer ddp|zero --accumulate 4 --blocks 256 --block-size 128 --width 128
                  --layers 4 --heads 4 --vocab 113 --micro-batch 8
Run with Debian's python3-torch (/usr/bin/python3)."""
import argparse
import contextlib
import os
import resource
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.optim import ZeroRedundancyOptimizer

from pytorch_char_lm import GPT

PROCESSES = 2


def train(rank, args, port, queue):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=PROCESSES)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        GPT(args.vocab, args.block_size, args.width, args.layers, args.heads))
    if args.optimizer == "zero":
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3,
                                      weight_decay=0.1)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randint(0, args.vocab, (args.blocks, args.block_size + 1), generator=torch.Generator().manual_seed(0))
    micro = args.micro_batch * PROCESSES
    starts = list(range(0, args.blocks, micro))
    dist.barrier()
    start = time.perf_counter()
    steps = 0
    for b, i in enumerate(starts):
        mine = x[i + rank * args.micro_batch:i + (rank + 1) * args.micro_batch]
        last = (b + 1) % args.accumulate == 0 or b + 1 == len(starts)
        with contextlib.nullcontext() if last else model.no_sync():
            logits = model(mine[:, :-1])
            loss = loss_fn(logits.reshape(-1, args.vocab), mine[:, 1:].reshape(-1)) / args.accumulate
            loss.backward()
        if last:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
            steps += 1
    dist.barrier()
    seconds = time.perf_counter() - start
    local = opt.optim if args.optimizer == "zero" else opt
    state = sum(t.numel() * t.element_size() for s in local.state.values() for t in s.values() if torch.is_tensor(t))
    parameters = sum(p.numel() * p.element_size() for p in model.parameters())
    part = (PROCESSES - 1) / PROCESSES
    sent = 2 * part * parameters + (part * parameters if args.optimizer == "zero" else 0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    queue.put(f"shardresult {rank} {seconds:.6f} {peak} {state} {sent:.0f}")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--optimizer", choices=["ddp", "zero"], default="zero")
    parser.add_argument("--accumulate", type=int, default=4)
    for name, default in [("blocks", 256), ("block-size", 128), ("width", 128), ("layers", 4), ("heads", 4),
                          ("vocab", 113), ("micro-batch", 8)]:
        parser.add_argument(f"--{name}", type=int, default=default)
    args = parser.parse_args()
    queue = mp.get_context("spawn").SimpleQueue()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(train, args=(args, port, queue), nprocs=PROCESSES)
    for _ in range(PROCESSES):
        print(queue.get(), flush=True)


if __name__ == "__main__":
    main()
