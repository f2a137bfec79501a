"""The Python side of bench/python_worker.hpp, shared by the PyTorch workers of the benchmarks.

serve() prints "ready <torch version> <threads>", then reads one request a line until "quit" (or
the end of stdin). "peak" prints the bytes torch.cuda.max_memory_allocated saw since the last
request on CUDA; on the CPU what `cpu_peak()` says (by default 0: PyTorch keeps no count there).
Any other request's words go to `prepare`, which readies what is not timed (data, autocast) and returns what is; serve runs it,
synchronised on CUDA before and after, and prints the seconds it took."""
import sys
import time

import torch


def serve(device, prepare, cpu_peak=lambda: 0):
    cuda = device.type == "cuda"
    print("ready", torch.__version__, torch.get_num_threads(), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "peak":
            print(torch.cuda.max_memory_allocated(device) if cuda else cpu_peak(), flush=True)
            continue
        run = prepare(words)
        if cuda:
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        start = time.perf_counter()
        run()
        if cuda:
            torch.cuda.synchronize(device)
        print(f"{time.perf_counter() - start:.6f}", flush=True)


def accumulate(model, opt, n, batch, every, micro_batch, step=None):
    """The loop the tutorials write by hand, in training mode from zeroed gradients: micro_batch(i)
    runs forward and backward on samples [i, i + batch) of n (its loss divided by `every`); after
    each `every` of them and after the last, step() (opt.step() when None) and zeroed gradients."""
    model.train()
    opt.zero_grad()
    batches = (n + batch - 1) // batch
    for b, i in enumerate(range(0, n, batch)):
        micro_batch(i)
        if (b + 1) % every == 0 or b + 1 == batches:
            (step or opt.step)()
            opt.zero_grad()
