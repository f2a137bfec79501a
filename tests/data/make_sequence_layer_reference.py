#!/usr/bin/env python3
"""Writes tests/data/pytorch_sequence_layers.json: Embedding, nn.MultiheadAttention (causal, and
with a key padding mask), a pre-LayerNorm nn.TransformerEncoderLayer, nn.LSTM and nn.GRU run forward and backward
on fixed inputs and PyTorch's own initial weights, for tests/dsl/test_sequence_layers.cpp.
Each case: the configuration, the input x (tokens for Embedding), parameters, the upstream
gradient g, the output y, and the gradients of sum(y * g) for x and every parameter. Then
"training": four optimizer steps of a tiny GPT as examples/07_char_lm trains it (train_tiny_gpt).
Run with Debian's python3-torch: /usr/bin/python3 this_file."""
import json
import os

import torch

import layer_reference

torch.manual_seed(20261123)


def flat(t):
    return layer_reference.flat(t, 8)


def run(name, config, module, x, call):
    return layer_reference.forward_backward(name, config, module, x, call, 8)[0]


B, T, E, H = 3, 6, 8, 2
causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
padding = torch.zeros(B, T, dtype=torch.bool)
padding[0, 4:] = True  # the first sequence has 4 tokens, the third 5
padding[2, 5:] = True

tokens = torch.randint(0, 11, (B, T))
tokens[0, 4:] = 0
cases = [
    run("embedding with padding_idx 0", {"type": "embedding", "vocab": 11, "dim": 5, "padding_idx": 0},
        torch.nn.Embedding(11, 5, padding_idx=0), tokens, lambda m, x: m(x)),
    run("multi-head attention causal", {"type": "attention", "heads": H, "dim": E, "causal": True},
        torch.nn.MultiheadAttention(E, H, batch_first=True), torch.randn(B, T, E),
        lambda m, x: m(x, x, x, attn_mask=causal, need_weights=False)[0]),
    run("multi-head attention key padding", {"type": "attention", "heads": H, "dim": E, "causal": False,
                                             "key_padding": padding.int().flatten().tolist()},
        torch.nn.MultiheadAttention(E, H, batch_first=True), torch.randn(B, T, E),
        lambda m, x: m(x, x, x, key_padding_mask=padding, need_weights=False)[0]),
    run("transformer block causal", {"type": "transformer", "heads": H, "dim": E, "mlp_dim": 16, "causal": True},
        torch.nn.TransformerEncoderLayer(E, H, 16, dropout=0.0, activation="gelu", batch_first=True,
                                         norm_first=True), torch.randn(B, T, E),
        lambda m, x: m(x, src_mask=causal)),
    run("transformer block", {"type": "transformer", "heads": H, "dim": E, "mlp_dim": 12, "causal": False},
        torch.nn.TransformerEncoderLayer(E, H, 12, dropout=0.0, activation="gelu", batch_first=True,
                                         norm_first=True), torch.randn(B, T, E),
        lambda m, x: m(x)),
    run("lstm 2 layers, every step", {"type": "lstm", "hidden": 5, "layers": 2, "return_sequences": True},
        torch.nn.LSTM(E, 5, num_layers=2, batch_first=True), torch.randn(B, T, E), lambda m, x: m(x)[0]),
    run("lstm, the last state", {"type": "lstm", "hidden": 4, "layers": 1, "return_sequences": False},
        torch.nn.LSTM(E, 4, batch_first=True), torch.randn(B, T, E), lambda m, x: m(x)[1][0][-1]),
    run("gru 2 layers, every step", {"type": "gru", "hidden": 5, "layers": 2, "return_sequences": True},
        torch.nn.GRU(E, 5, num_layers=2, batch_first=True), torch.randn(B, T, E), lambda m, x: m(x)[0]),
    run("gru, the last state", {"type": "gru", "hidden": 6, "layers": 1, "return_sequences": False},
        torch.nn.GRU(E, 6, batch_first=True), torch.randn(B, T, E), lambda m, x: m(x)[1][-1]),
]



def train_tiny_gpt():
    """A few optimizer steps of a tiny char_lm GPT: AdamW, clipping to 1.0, micro-batches of 3 with
    their gradients accumulated 2 per step (loss / 2, every micro-batch holding the same number of
    tokens), two epochs in order. Parameters are stored under Accrue's Sequential names."""
    V, T, W, H = 11, 8, 8, 2
    tokens = torch.nn.Embedding(V, W)
    positions = torch.nn.Embedding(T, W)
    block = torch.nn.TransformerEncoderLayer(W, H, 16, dropout=0.0, activation="gelu", batch_first=True,
                                             norm_first=True)
    norm = torch.nn.LayerNorm(W)
    head = torch.nn.Linear(W, V)
    named = {"0.weight": tokens.weight, "1.weight": positions.weight}
    named.update({"2." + k: v for k, v in block.named_parameters()})
    named.update({"3.weight": norm.weight, "3.bias": norm.bias, "4.weight": head.weight, "4.bias": head.bias})
    initial = {k: flat(v) for k, v in named.items()}
    mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)

    def model(x):
        h = tokens(x) + positions.weight
        return head(norm(block(h, src_mask=mask)))

    data = torch.randint(0, V, (12, T + 1))
    x, y = data[:, :-1], data[:, 1:]
    params = list(named.values())
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1)
    step_losses = []
    for epoch in range(2):
        for window in range(2):
            total = 0.0
            for m in range(2):
                i = (window * 2 + m) * 3
                loss = torch.nn.functional.cross_entropy(model(x[i:i + 3]).reshape(-1, V), y[i:i + 3].reshape(-1))
                (loss / 2).backward()
                total += loss.item() / 2
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad()
            step_losses.append(total)
    return {"x": flat(x), "y": flat(y), "initial": initial, "step_losses": step_losses,
            "final": {k: flat(v) for k, v in named.items()}}


path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch_sequence_layers.json")
with open(path, "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases, "training": train_tiny_gpt()}, f)
print("wrote", path, "with torch", torch.__version__, f"({os.path.getsize(path)} bytes)")
