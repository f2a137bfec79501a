#!/usr/bin/env python3
"""Writes tests/data/pytorch_reference.json: a small MLP trained a few steps by PyTorch, for
tests/dsl/test_pytorch_parity.cpp. Run with Debian's python3-torch: /usr/bin/python3 this_file."""
import json
import os

import torch

torch.manual_seed(20261121)
N, F, C, BATCH, EPOCHS = 12, 8, 4, 4, 2
x = torch.randn(N, F)
y = torch.randint(0, C, (N,))


def make_model():
    return torch.nn.Sequential(
        torch.nn.Linear(F, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.GELU(), torch.nn.Linear(16, C)
    )


base = make_model()
initial = {k: v.detach().clone() for k, v in base.state_dict().items()}
cases = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.05, amsgrad=True),
}
out = {
    "x": x.flatten().tolist(),
    "y": y.tolist(),
    "shape": [N, F],
    "classes": C,
    "batch_size": BATCH,
    "epochs": EPOCHS,
    "initial": {k: v.flatten().tolist() for k, v in initial.items()},
    "initial_logits": base(x).detach().flatten().tolist(),
    "label_smoothing_loss": torch.nn.functional.cross_entropy(base(x), y, label_smoothing=0.1).item(),
    "cases": {},
}
for name, make_opt in cases.items():
    model = make_model()
    model.load_state_dict(initial)
    opt = make_opt(model.parameters())
    epoch_losses = []
    for epoch in range(EPOCHS):
        total = 0.0
        for start in range(0, N, BATCH):
            xb, yb = x[start:start + BATCH], y[start:start + BATCH]
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(yb)
        epoch_losses.append(total / N)
    out["cases"][name] = {
        "epoch_losses": epoch_losses,
        "final": {k: v.flatten().tolist() for k, v in model.state_dict().items()},
    }

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch_reference.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path, "with torch", torch.__version__)
