#!/usr/bin/env python3
"""The PyTorch side of tests/dsl/test_resnet.cpp and examples/16_transfer_learning: torchvision's
ResNets, seeded, saved as torch.save writes them (and as safetensors), with their logits in
evaluation and their state after two steps of SGD with momentum.

  pytorch_resnet.py weights ARCH SEED OUT.pth
      a seeded torchvision ARCH (resnet18, resnet34, resnet50) whose BatchNorm statistics have seen
      three batches, as torch.save(model.state_dict()) writes it: what torchvision downloads
  pytorch_resnet.py reference ARCH SEED INPUT OUT_DIR
      the same weights as OUT_DIR/ARCH.pth and OUT_DIR/ARCH.safetensors, and the logits in
      evaluation on INPUT's x (OUT_DIR/ARCH_eval.safetensors); a model made with zero_init_residual
      (OUT_DIR/ARCH_zero.pth) and its state_dict after SGD(lr=0.05, momentum=0.9) on INPUT's (x, y)
      in batches of 4, in order, with cross-entropy (OUT_DIR/ARCH_step.safetensors). The steps start
      from zero_init_residual because from torchvision's default start a ResNet-50's gradients are
      so ill-conditioned that PyTorch in float32 and in float64 differ by 100x the tolerance after a
      step; from the identity blocks they agree to 1% of it.
Run with Debian's python3-torch and python3-torchvision (/usr/bin/python3)."""
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop import read, write  # noqa: E402  (safetensors with the standard library)


def seeded(arch, seed, height, width, zero_init_residual=False):
    torch.manual_seed(seed)
    model = getattr(torchvision.models, arch)(zero_init_residual=zero_init_residual)
    model.train()
    with torch.no_grad():  # running statistics and num_batches_tracked away from their start
        for _ in range(3):
            model(torch.randn(4, 3, height, width) * 0.5 + 0.2)
    return model


def main():
    mode, arch, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "weights":
        torch.save(seeded(arch, seed, 64, 64).state_dict(), sys.argv[4])
        return
    data, out = read(sys.argv[4]), sys.argv[5]
    x, y = data["x"], data["y"].long()
    model = seeded(arch, seed, x.shape[2], x.shape[3])
    torch.save(model.state_dict(), os.path.join(out, arch + ".pth"))
    write(os.path.join(out, arch + ".safetensors"), model.state_dict())
    model.eval()
    with torch.no_grad():
        write(os.path.join(out, arch + "_eval.safetensors"), {"logits": model(x)})
    model = seeded(arch, seed, x.shape[2], x.shape[3], zero_init_residual=True)
    torch.save(model.state_dict(), os.path.join(out, arch + "_zero.pth"))
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for begin in range(0, x.shape[0], 4):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x[begin:begin + 4]), y[begin:begin + 4]).backward()
        optimizer.step()
    write(os.path.join(out, arch + "_step.safetensors"), model.state_dict())


if __name__ == "__main__":
    main()
