#!/usr/bin/env python3
"""The PyTorch side of bench/memory_tradeoffs: the same networks trained plain and with
torch.utils.checkpoint(use_reentrant=False) on the segments Accrue recomputes.

  gpt: the GPT of bench/pytorch_char_lm.py (causal pre-LayerNorm nn.TransformerEncoderLayer blocks
       with GELU), each block checkpointed (Accrue's RecomputePolicy::of_types({"TransformerBlock"}));
  cnn: the CNN of examples/05_fashion_mnist_cnn.cpp (two blocks of 3x3 convolution, ReLU, 2x2
       max-pool; a hidden layer of 128), its layers [0, 3), [3, 6) and [6, 9) checkpointed
       (Accrue's RecomputePolicy::every(), sqrt(n) segments of its 10 layers less the last).

Protocol on stdin/stdout, one line each: the worker prints "ready ..."; "train B K plain|ckpt N" trains
N random samples in micro-batches of B, K accumulated per AdamW step (loss / K, as the tutorials
write it), and prints the seconds it took; "peak" prints the bytes torch.cuda.max_memory_allocated
saw since the last "train" on CUDA, 0 on the CPU (where PyTorch keeps no count); "quit" ends.

  pytorch_memory_tradeoffs.py gpt VOCAB CONTEXT WIDTH LAYERS HEADS DEVICE
  pytorch_memory_tradeoffs.py cnn DEVICE
Run with Debian's python3-torch (/usr/bin/python3)."""
import os
import sys

import torch
from torch.utils.checkpoint import checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_char_lm import GPT  # noqa: E402
from pytorch_worker import accumulate, serve  # noqa: E402


class CheckpointedGPT(GPT):
    def forward(self, x, recompute=False):
        h = self.tokens(x) + self.positions.weight[: x.shape[1]]
        for b in self.blocks:
            h = checkpoint(b, h, self.mask, use_reentrant=False) if recompute else b(h, src_mask=self.mask)
        return self.head(self.norm(h))


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(64 * 7 * 7, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))

    def forward(self, x, recompute=False):
        if not recompute:
            return self.layers(x)
        for begin in (0, 3, 6):
            x = checkpoint(self.layers[begin:begin + 3], x, use_reentrant=False)
        return self.layers[9](x)


def main():
    kind = sys.argv[1]
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    torch.manual_seed(0)
    if kind == "gpt":
        vocab, context, width, layers, heads = (int(a) for a in sys.argv[2:7])
        device = torch.device(sys.argv[7])
        model = CheckpointedGPT(vocab, context, width, layers, heads)
    else:
        device = torch.device(sys.argv[2])
        model = CNN()
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()

    def prepare(words):
        batch, every, recompute, n = int(words[1]), int(words[2]), words[3] == "ckpt", int(words[4])
        if kind == "gpt":
            data = torch.randint(0, vocab, (n, context + 1), device=device)
            x, y = data[:, :-1], data[:, 1:]
        else:
            x, y = torch.rand(n, 1, 28, 28, device=device), torch.randint(0, 10, (n,), device=device)

        def micro_batch(i):
            out = model(x[i:i + batch], recompute)
            loss = loss_fn(out.reshape(-1, out.shape[-1]), y[i:i + batch].reshape(-1))
            (loss / every).backward()
        return lambda: accumulate(model, opt, n, batch, every, micro_batch)

    serve(device, prepare)


if __name__ == "__main__":
    main()
