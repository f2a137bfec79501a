#!/usr/bin/env python3
"""Writes tests/data/optimizer_reference.json for tests/framework/test_optimizer_reference.cpp:
a few steps of each optimizer over four parameters and given gradients. RMSprop and Adagrad are
PyTorch's own (float32); LARS, LAMB and Lion are the papers' equations written here in float64:
LARS (arXiv 1708.03888, Algorithm 1), LAMB (arXiv 1904.00962, Algorithm 2, apex FusedLAMB's
choices), Lion (arXiv 2302.06675, Algorithm 2). Run with Debian's python3-torch:
/usr/bin/python3 tests/data/make_optimizer_reference.py"""
import json
import math
import os

import torch

torch.manual_seed(20261126)
STEPS = 6
SHAPES = {"0.weight": (4, 3), "0.bias": (3,), "1.weight": (2, 2), "2.weight": (3, 2)}
initial = {name: torch.randn(shape) for name, shape in SHAPES.items()}
initial["1.weight"].zero_()  # a zero weight: trust ratio 1
grads = []
for t in range(STEPS):
    g = {name: torch.randn(shape) * (0.5 + t * 0.3) for name, shape in SHAPES.items()}
    if t in (0, 2):
        g["2.weight"].zero_()  # a zero gradient: trust ratio 1 (LARS), a zero update (LAMB, first step)
    grads.append(g)


def excluded(name, p, exclude):
    if exclude.get("vectors", True) and p.dim() <= 1:
        return True
    return any(name == n or name.endswith("." + n) for n in exclude.get("names", []))


def run_torch(make):
    params = {n: v.clone().requires_grad_(True) for n, v in initial.items()}
    opt = make(list(params.values()))
    for g in grads:
        for n, p in params.items():
            p.grad = g[n].clone()
        opt.step()
    return {n: p.detach().flatten().tolist() for n, p in params.items()}, {}


def run_lars(lr, momentum, weight_decay, trust_coefficient, eps, exclude, larc_clip):
    p = {n: v.double().clone() for n, v in initial.items()}
    v = {n: torch.zeros_like(x) for n, x in p.items()}
    ratios = {}
    for g32 in grads:
        for n in p:
            g = g32[n].double()
            out = excluded(n, p[n], exclude)
            wd = 0.0 if out else weight_decay
            trust, scaled = 1.0, lr
            if not out:
                w_norm, g_norm = p[n].norm().item(), g.norm().item()
                trust = trust_coefficient * w_norm / (g_norm + wd * w_norm + eps) if w_norm > 0 and g_norm > 0 else 1.0
                scaled = min(trust, lr) if larc_clip else lr * trust
            ratios[n] = trust
            d = g + wd * p[n]
            if momentum != 0:
                v[n] = momentum * v[n] + scaled * d
                p[n] = p[n] - v[n]
            else:
                p[n] = p[n] - scaled * d
    return {n: x.flatten().tolist() for n, x in p.items()}, ratios


def run_lamb(lr, betas, eps, weight_decay, exclude, bias_correction):
    b1, b2 = betas
    p = {n: v.double().clone() for n, v in initial.items()}
    m = {n: torch.zeros_like(x) for n, x in p.items()}
    v = {n: torch.zeros_like(x) for n, x in p.items()}
    ratios = {}
    for t, g32 in enumerate(grads, start=1):
        for n in p:
            g = g32[n].double()
            out = excluded(n, p[n], exclude)
            m[n] = b1 * m[n] + (1 - b1) * g
            v[n] = b2 * v[n] + (1 - b2) * g * g
            bc1 = 1 - b1 ** t if bias_correction else 1.0
            bc2 = 1 - b2 ** t if bias_correction else 1.0
            r = (m[n] / bc1) / ((v[n] / bc2).sqrt() + eps) + (0.0 if out else weight_decay) * p[n]
            w_norm, r_norm = p[n].norm().item(), r.norm().item()
            trust = w_norm / r_norm if not out and w_norm > 0 and r_norm > 0 else 1.0
            ratios[n] = trust
            p[n] = p[n] - lr * trust * r
    return {n: x.flatten().tolist() for n, x in p.items()}, ratios


def run_lion(lr, betas, weight_decay):
    b1, b2 = betas
    p = {n: v.double().clone() for n, v in initial.items()}
    m = {n: torch.zeros_like(x) for n, x in p.items()}
    for g32 in grads:
        for n in p:
            g = g32[n].double()
            c = b1 * m[n] + (1 - b1) * g
            p[n] = p[n] * (1 - lr * weight_decay) - lr * torch.sign(c)
            m[n] = b2 * m[n] + (1 - b2) * g
    return {n: x.flatten().tolist() for n, x in p.items()}, {}


cases = [
    ("RMSprop", {"lr": 1e-2}, lambda: run_torch(lambda ps: torch.optim.RMSprop(ps, lr=1e-2))),
    ("RMSprop", {"lr": 5e-3, "momentum": 0.5},
     lambda: run_torch(lambda ps: torch.optim.RMSprop(ps, lr=5e-3, momentum=0.5))),
    ("RMSprop", {"lr": 1e-2, "alpha": 0.9, "momentum": 0.9, "centered": True, "weight_decay": 0.01},
     lambda: run_torch(lambda ps: torch.optim.RMSprop(ps, lr=1e-2, alpha=0.9, momentum=0.9, centered=True,
                                                      weight_decay=0.01))),
    ("Adagrad", {"lr": 0.1}, lambda: run_torch(lambda ps: torch.optim.Adagrad(ps, lr=0.1))),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.01, "initial_accumulator_value": 0.1},
     lambda: run_torch(lambda ps: torch.optim.Adagrad(ps, lr=0.1, lr_decay=0.05, weight_decay=0.01,
                                                      initial_accumulator_value=0.1))),
    ("LARS", {"lr": 0.5, "momentum": 0.9, "weight_decay": 5e-4, "trust_coefficient": 0.02},
     lambda: run_lars(0.5, 0.9, 5e-4, 0.02, 0.0, {}, False)),
    ("LARS", {"lr": 0.5, "momentum": 0.0, "weight_decay": 1e-2, "trust_coefficient": 0.02, "eps": 1e-6,
              "exclude_vectors": False},
     lambda: run_lars(0.5, 0.0, 1e-2, 0.02, 1e-6, {"vectors": False}, False)),
    ("LARS", {"lr": 0.01, "momentum": 0.9, "weight_decay": 1e-3, "trust_coefficient": 0.02, "larc_clip": True,
              "exclude_names": ["2.weight"]},
     lambda: run_lars(0.01, 0.9, 1e-3, 0.02, 0.0, {"names": ["2.weight"]}, True)),
    ("LAMB", {"lr": 1e-2}, lambda: run_lamb(1e-2, (0.9, 0.999), 1e-6, 0.01, {}, True)),
    ("LAMB", {"lr": 2e-2, "betas": [0.8, 0.99], "weight_decay": 0.1, "bias_correction": False,
              "exclude_vectors": False},
     lambda: run_lamb(2e-2, (0.8, 0.99), 1e-6, 0.1, {"vectors": False}, False)),
    ("Lion", {"lr": 1e-3, "weight_decay": 0.1}, lambda: run_lion(1e-3, (0.9, 0.99), 0.1)),
    ("Lion", {"lr": 3e-3, "betas": [0.95, 0.98]}, lambda: run_lion(3e-3, (0.95, 0.98), 0.0)),
]

out = {
    "shapes": {n: list(s) for n, s in SHAPES.items()},
    "initial": {n: v.flatten().tolist() for n, v in initial.items()},
    "grads": [{n: g[n].flatten().tolist() for n in SHAPES} for g in grads],
    "cases": [],
}
for kind, options, run in cases:
    final, ratios = run()
    out["cases"].append({"type": kind, "options": options, "final": final, "last_trust_ratios": ratios})

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizer_reference.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path, "with torch", torch.__version__)
