#!/usr/bin/env python3
"""Writes tests/data/loss_reference.json for tests/dsl/test_losses.cpp: BinaryCrossEntropy,
Huber and KLDivergence on fixed predictions and targets, their mean values and their gradients
with respect to the predictions, from PyTorch 1.13's own losses (BCEWithLogitsLoss, BCELoss,
HuberLoss, KLDivLoss with reduction 'batchmean'). Run with Debian's python3-torch:
/usr/bin/python3 tests/data/make_loss_reference.py"""
import json
import os

import torch

torch.manual_seed(20261126)
B, C = 6, 5
logits = torch.randn(B, C) * 2
probabilities = torch.sigmoid(torch.randn(B, C))
binary = torch.randint(0, 2, (B, C)).float()
regression_pred, regression_target = torch.randn(B, C) * 2, torch.randn(B, C) * 2
dist_target = torch.softmax(torch.randn(B, C), dim=1)
dist_pred = torch.softmax(torch.randn(B, C), dim=1)


def case(name, options, prediction, target, loss_fn):
    p = prediction.clone().requires_grad_(True)
    value = loss_fn(p, target)
    value.backward()
    return {"loss": name, "options": options, "prediction": prediction.flatten().tolist(),
            "target": target.flatten().tolist(), "value": value.item(), "grad": p.grad.flatten().tolist()}


def smoothed(y, s):
    return y * (1 - s) + 0.5 * s


cases = [
    case("BinaryCrossEntropy", {"from_logits": True}, logits, binary,
         lambda p, y: torch.nn.BCEWithLogitsLoss()(p, y)),
    case("BinaryCrossEntropy", {"from_logits": True, "label_smoothing": 0.2, "pos_weight": 3.0}, logits, binary,
         lambda p, y: torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(3.0))(p, smoothed(y, 0.2))),
    case("BinaryCrossEntropy", {"from_logits": False}, probabilities, binary,
         lambda p, y: torch.nn.BCELoss()(p, y)),
    case("BinaryCrossEntropy", {"from_logits": False, "label_smoothing": 0.1}, probabilities, binary,
         lambda p, y: torch.nn.BCELoss()(p, smoothed(y, 0.1))),
    case("Huber", {"delta": 1.0}, regression_pred, regression_target, lambda p, y: torch.nn.HuberLoss(delta=1.0)(p, y)),
    case("Huber", {"delta": 0.5}, regression_pred, regression_target, lambda p, y: torch.nn.HuberLoss(delta=0.5)(p, y)),
    case("KLDivergence", {"from_logits": False}, dist_pred, dist_target,
         lambda p, y: torch.nn.KLDivLoss(reduction="batchmean")(torch.log(p), y)),
    case("KLDivergence", {"from_logits": True}, logits, dist_target,
         lambda p, y: torch.nn.KLDivLoss(reduction="batchmean")(torch.log_softmax(p, dim=1), y)),
]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loss_reference.json")
with open(path, "w") as f:
    json.dump({"shape": [B, C], "cases": cases}, f)
print("wrote", path, "with torch", torch.__version__)
