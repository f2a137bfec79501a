"""What the layer reference generators share: a PyTorch module run forward and backward on x,
written as a test case (make_cnn_layer_reference.py, make_sequence_layer_reference.py)."""
import torch


def flat(t, digits):
    return {"shape": list(t.shape), "values": [round(v, digits) for v in t.detach().flatten().tolist()]}


def forward_backward(name, config, module, x, call, digits):
    """The case: configuration, x, the parameters before, an upstream gradient g (drawn after the
    output), the output y = call(module, x) in training mode, and the gradients of sum(y * g) for
    every parameter and, when x is floating point, for x."""
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
        "x": flat(x, digits),
        "params": {k: flat(v, digits) for k, v in params.items()},
        "g": flat(g, digits),
        "y": flat(y, digits),
    }
    if x.dtype.is_floating_point:
        case["grad_x"] = flat(x.grad, digits)
    case["grad_params"] = {k: flat(v.grad, digits) for k, v in module.named_parameters()}
    return case, x
