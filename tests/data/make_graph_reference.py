#!/usr/bin/env python3
"""Writes tests/data/graph_reference.json: a model of two inputs and two outputs (a Linear shared by
both inputs, a concatenation, a skip connection added back, a class head and a score head) trained
by PyTorch as Accrue's fit trains it: windows of 16 samples accumulated from micro-batches of 4
(the last window of each epoch 8), cross-entropy + 0.5 x MSE, gradients clipped to norm 1, AdamW,
six optimizer steps. For tests/dsl/test_several_outputs.cpp. Run with Debian's python3-torch:
/usr/bin/python3 this_file."""
import json
import os

import torch

torch.manual_seed(20261206)
N, F, MICRO, WINDOW, EPOCHS, SCORE_WEIGHT = 24, 6, 4, 16, 3, 0.5
left = torch.randn(N, F)
right = torch.randn(N, F)
labels = torch.randint(0, 3, (N,))
scores = torch.randn(N, 1)


class TwoHeaded(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = torch.nn.Linear(F, 8)
        self.mix = torch.nn.Linear(16, 16)
        self.label = torch.nn.Linear(16, 3)
        self.score = torch.nn.Linear(8, 1)

    def forward(self, l, r):
        a, b = self.shared(l), self.shared(r)
        h = torch.relu(torch.cat([a, b], dim=1))
        s = torch.relu(self.mix(h) + h)
        return self.label(s), self.score(a + b)


def losses(model, rows):
    label, score = model(left[rows], right[rows])
    return (torch.nn.functional.cross_entropy(label, labels[rows], reduction="sum"),
            torch.nn.functional.mse_loss(score, scores[rows], reduction="sum"))


model = TwoHeaded()
initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
epochs = []
for epoch in range(EPOCHS):
    logged = {"loss": 0.0, "label_loss": 0.0, "score_loss": 0.0}
    for start in range(0, N, WINDOW):
        window = range(start, min(N, start + WINDOW))
        # What fit logs: each micro-batch's losses with the window's weights.
        with torch.no_grad():
            for m in range(window.start, window.stop, MICRO):
                ce, mse = losses(model, slice(m, min(window.stop, m + MICRO)))
                n = min(window.stop, m + MICRO) - m
                logged["loss"] += (ce.item() / n + SCORE_WEIGHT * mse.item() / n) * n
                logged["label_loss"] += ce.item()
                logged["score_loss"] += mse.item()
        ce, mse = losses(model, slice(window.start, window.stop))
        opt.zero_grad()
        ((ce + SCORE_WEIGHT * mse) / len(window)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    epochs.append({k: v / N for k, v in logged.items()})

out = {
    "left": {"shape": list(left.shape), "values": left.flatten().tolist()},
    "right": {"shape": list(right.shape), "values": right.flatten().tolist()},
    "labels": {"shape": list(labels.shape), "values": labels.tolist()},
    "scores": {"shape": list(scores.shape), "values": scores.flatten().tolist()},
    "initial": {k: {"shape": list(v.shape), "values": v.flatten().tolist()} for k, v in initial.items()},
    "epochs": epochs,
    "final": {k: {"shape": list(v.shape), "values": v.flatten().tolist()} for k, v in model.state_dict().items()},
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "graph_reference.json")
with open(path, "w") as f:
    json.dump(out, f)
print(path)
