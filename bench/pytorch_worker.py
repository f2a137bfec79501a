"""The Python side of bench/python_worker.hpp, shared by the PyTorch workers of the benchmarks.

serve() prints "ready <torch version> <threads>", then reads one request a line until "quit" (or
the end of stdin). "peak" prints the bytes torch.cuda.max_memory_allocated saw since the last
request on CUDA; on the CPU, how far the process's peak resident memory (VmHWM) rose above what it
held when the last request began, which serve resets the peak to (/proc/self/clear_refs). Any other request's words go to
`prepare`, which readies what is not timed (data, autocast) and returns what is; serve runs it,
synchronised on CUDA before and after, and prints the seconds it took."""
import re
import sys
import time

import torch


def resident_kib(field):
    with open("/proc/self/status") as f:
        return int(re.search(field + r":\s+(\d+)", f.read()).group(1))


def reset_peak_resident():
    """Sets the peak resident memory to what the process holds now; returns that, in KiB."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return resident_kib("VmRSS")


def serve(device, prepare):
    cuda = device.type == "cuda"
    print("ready", torch.__version__, torch.get_num_threads(), flush=True)
    resident_at_start = 0
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "peak":
            print(torch.cuda.max_memory_allocated(device) if cuda else 1024 * (resident_kib("VmHWM") - resident_at_start), flush=True)
            continue
        run = prepare(words)
        if cuda:
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        else:
            resident_at_start = reset_peak_resident()
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
