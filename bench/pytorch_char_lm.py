#!/usr/bin/env python3
"""The PyTorch side of bench/char_lm_tokens: the GPT of examples/07_char_lm.cpp (token and learned
position embeddings, causal pre-LayerNorm nn.TransformerEncoderLayer blocks with GELU, a last
LayerNorm, a linear head), trained with AdamW (weight decay 0.1) and gradient clipping to 1.0.

Protocol on stdin/stdout, one line each: the worker prints "ready"; "train B K f32|amp N" trains on
N random blocks in micro-batches of B, the gradients of K of them accumulated per optimizer step
(loss / K, as the tutorials write it), under torch.autocast("cpu", dtype=torch.bfloat16) for
"amp", and prints the seconds it took; "quit" ends.

  pytorch_char_lm.py VOCAB BLOCK WIDTH LAYERS HEADS DEVICE
Run with Debian's python3-torch (/usr/bin/python3)."""
import os
import sys

import torch
from pytorch_worker import accumulate, serve


class GPT(torch.nn.Module):
    def __init__(self, vocab, block, width, layers, heads):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(block, width)
        self.blocks = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1, activation="gelu", batch_first=True,
                                             norm_first=True) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocab)
        self.register_buffer("mask", torch.triu(torch.full((block, block), float("-inf")), diagonal=1))

    def forward(self, x):
        h = self.tokens(x) + self.positions.weight[: x.shape[1]]
        for b in self.blocks:
            h = b(h, src_mask=self.mask)
        return self.head(self.norm(h))


def main():
    vocab, block, width, layers, heads = (int(a) for a in sys.argv[1:6])
    device = torch.device(sys.argv[6] if len(sys.argv) > 6 else "cpu")
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    torch.manual_seed(0)
    model = GPT(vocab, block, width, layers, heads).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()

    def prepare(words):
        batch, every, amp, blocks = int(words[1]), int(words[2]), words[3] == "amp", int(words[4])
        x = torch.randint(0, vocab, (blocks, block + 1), device=device)
        autocast = torch.autocast(device.type, dtype=torch.bfloat16 if device.type == "cpu" else torch.float16,
                                  enabled=amp)

        def micro_batch(i):
            with autocast:
                logits = model(x[i:i + batch, :-1])
                loss = loss_fn(logits.reshape(-1, vocab).float(), x[i:i + batch, 1:].reshape(-1))
            (loss / every).backward()
            loss.item()

        def step():
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        return lambda: accumulate(model, opt, blocks, batch, every, micro_batch, step)

    serve(device, prepare)


if __name__ == "__main__":
    main()
