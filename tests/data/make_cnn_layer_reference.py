#!/usr/bin/env python3
"""Writes tests/data/pytorch_cnn_layers.json: Conv2d, pooling and normalization layers of PyTorch
run forward and backward on fixed inputs and weights, for tests/dsl/test_cnn_layers.cpp.
Each case: the layer's configuration, input x, parameters, the upstream gradient g, the output y,
the gradients of sum(y * g) for x and every parameter, and for batch normalization the running
statistics after the step and the evaluation-mode output.
Run with Debian's python3-torch: /usr/bin/python3 this_file."""
import json
import os

import torch

import layer_reference

torch.manual_seed(20261122)
F = torch.nn.functional


def flat(t):
    return layer_reference.flat(t, 7)


def run(name, config, module, x):
    # Non-default parameters, so that scale and shift matter (drawn before x is copied: the same
    # draws as when this file ran them itself).
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    case, x = layer_reference.forward_backward(name, config, module, x, lambda m, v: m(v), 7)
    buffers = {k: v for k, v in module.named_buffers() if k != "num_batches_tracked"}
    if buffers:
        case["buffers_after"] = {k: flat(v) for k, v in buffers.items()}
        module.eval()
        case["y_eval"] = flat(module(x))
    return case


cases = [
    run("conv 3x3 padding 1", {"type": "conv2d", "filters": 4, "kernel": [3, 3], "stride": [1, 1], "padding": [1, 1],
                               "dilation": [1, 1], "groups": 1, "bias": True},
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.randn(2, 3, 7, 6)),
    run("conv (3, 2) stride (2, 1) padding (1, 0) dilation (2, 1) groups 2",
        {"type": "conv2d", "filters": 6, "kernel": [3, 2], "stride": [2, 1], "padding": [1, 0], "dilation": [2, 1],
         "groups": 2, "bias": True},
        torch.nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 1), groups=2), torch.randn(2, 4, 9, 8)),
    run("conv depthwise no bias", {"type": "conv2d", "filters": 3, "kernel": [3, 3], "stride": [1, 1],
                                   "padding": [1, 1], "dilation": [1, 1], "groups": 3, "bias": False},
        torch.nn.Conv2d(3, 3, 3, padding=1, groups=3, bias=False), torch.randn(1, 3, 5, 5)),
    run("conv 1x1 stride 2", {"type": "conv2d", "filters": 3, "kernel": [1, 1], "stride": [2, 2], "padding": [0, 0],
                              "dilation": [1, 1], "groups": 1, "bias": True},
        torch.nn.Conv2d(2, 3, 1, stride=2), torch.randn(2, 2, 6, 6)),
    run("max pool 3 stride 2 padding 1", {"type": "max_pool2d", "kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]},
        torch.nn.MaxPool2d(3, stride=2, padding=1), torch.randn(2, 3, 7, 6)),
    run("max pool 2", {"type": "max_pool2d", "kernel": [2, 2], "stride": [2, 2], "padding": [0, 0]},
        torch.nn.MaxPool2d(2), torch.randn(2, 2, 6, 7)),
    run("avg pool 3 stride 2 padding 1", {"type": "avg_pool2d", "kernel": [3, 3], "stride": [2, 2], "padding": [1, 1],
                                          "count_include_pad": True},
        torch.nn.AvgPool2d(3, stride=2, padding=1), torch.randn(2, 3, 7, 6)),
    run("avg pool 3 stride 2 padding 1 exclude padding",
        {"type": "avg_pool2d", "kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "count_include_pad": False},
        torch.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), torch.randn(2, 3, 7, 6)),
    run("batch norm 2d", {"type": "batch_norm", "momentum": 0.1, "eps": 1e-5, "affine": True},
        torch.nn.BatchNorm2d(3), torch.randn(4, 3, 5, 5) * 2 + 1),
    run("batch norm 1d", {"type": "batch_norm", "momentum": 0.3, "eps": 1e-3, "affine": True},
        torch.nn.BatchNorm1d(5, momentum=0.3, eps=1e-3), torch.randn(6, 5) * 3 - 2),
    run("group norm 3 groups", {"type": "group_norm", "groups": 3, "eps": 1e-5, "affine": True},
        torch.nn.GroupNorm(3, 6), torch.randn(2, 6, 4, 4) + 0.5),
    run("layer norm last dimension", {"type": "layer_norm", "dims": 1, "eps": 1e-5, "affine": True},
        torch.nn.LayerNorm(5), torch.randn(3, 4, 5)),
    run("layer norm two dimensions", {"type": "layer_norm", "dims": 2, "eps": 1e-5, "affine": True},
        torch.nn.LayerNorm([4, 5]), torch.randn(3, 4, 5) * 2),
]

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch_cnn_layers.json")
with open(path, "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f)
print("wrote", path, "with torch", torch.__version__, f"({os.path.getsize(path)} bytes)")
