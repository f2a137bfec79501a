#!/usr/bin/env python3
"""Writes tests/data/pytorch_sequence_layers.json: Embedding, nn.MultiheadAttention (causal, and
with a key padding mask) and a pre-LayerNorm nn.TransformerEncoderLayer run forward and backward
on fixed inputs and PyTorch's own initial weights, for tests/dsl/test_sequence_layers.cpp.
Each case: the configuration, the input x (tokens for Embedding), parameters, the upstream
gradient g, the output y, and the gradients of sum(y * g) for x and every parameter.
Run with Debian's python3-torch: /usr/bin/python3 this_file."""
import json
import os

import torch

torch.manual_seed(20261123)


def flat(t):
    return {"shape": list(t.shape), "values": [round(v, 8) for v in t.detach().flatten().tolist()]}


def run(name, config, module, x, call):
    if x.dtype.is_floating_point:
        x = x.clone().requires_grad_(True)
    params = {k: v.detach().clone() for k, v in module.named_parameters()}
    module.train()
    y = call(module, x)
    g = torch.randn_like(y)
    (y * g).sum().backward()
    case = {
        "name": name,
        "config": config,
        "x": flat(x),
        "params": {k: flat(v) for k, v in params.items()},
        "g": flat(g),
        "y": flat(y),
        "grad_params": {k: flat(v.grad) for k, v in module.named_parameters()},
    }
    if x.dtype.is_floating_point:
        case["grad_x"] = flat(x.grad)
    return case


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
]

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch_sequence_layers.json")
with open(path, "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f)
print("wrote", path, "with torch", torch.__version__, f"({os.path.getsize(path)} bytes)")
