#!/usr/bin/python3
"""Writes tests/data/torchvision_transforms.json: torchvision's image functions on fixed images and
fixed parameters, which tests/datasets/test_transforms.cpp compares with Accrue's transforms.

Needs Debian's python3-torchvision (run with /usr/bin/python3); CI reads the JSON and needs neither.
"""
import json
import pathlib

import torch
import torchvision
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode as IM

torch.manual_seed(20261126)
rgb = torch.rand(3, 13, 17)
grey = torch.rand(1, 11, 8)
cases = []


def case(name, image, out, **params):
    cases.append({"name": name, "image": "rgb" if image is rgb else "grey", "params": params,
                  "shape": list(out.shape), "values": [round(float(v), 7) for v in out.flatten()]})


for mode in ["constant", "edge", "reflect", "symmetric"]:
    case(f"pad_{mode}", rgb, F.pad(rgb, [2, 1, 3, 2], fill=0.25 if mode == "constant" else 0, padding_mode=mode),
         op="pad", padding=[2, 1, 3, 2], mode=mode, fill=0.25 if mode == "constant" else 0.0)
case("crop_inside", rgb, F.crop(rgb, 2, 3, 7, 9), op="crop", top=2, left=3, height=7, width=9)
case("crop_past_the_edge", rgb, F.crop(rgb, -1, 10, 6, 9), op="crop", top=-1, left=10, height=6, width=9)
case("hflip", rgb, F.hflip(rgb), op="hflip")
case("vflip", rgb, F.vflip(rgb), op="vflip")
for (h, w), interp, aa in [((7, 9), IM.BILINEAR, True), ((30, 25), IM.BILINEAR, True), ((5, 6), IM.BICUBIC, True),
                           ((7, 9), IM.BILINEAR, False), ((30, 25), IM.BICUBIC, False), ((7, 9), IM.NEAREST, False),
                           ((30, 25), IM.NEAREST, False), ((4, 30), IM.BILINEAR, True)]:
    case(f"resize_{h}x{w}_{interp.value}_{'aa' if aa else 'plain'}", rgb, F.resize(rgb, [h, w], interp, antialias=aa),
         op="resize", height=h, width=w, interpolation=interp.value, antialias=aa)
case("center_crop_inside", rgb, F.center_crop(rgb, [9, 10]), op="center_crop", height=9, width=10)
case("center_crop_padded", rgb, F.center_crop(rgb, [16, 20]), op="center_crop", height=16, width=20)
case("brightness", rgb, F.adjust_brightness(rgb, 1.3), op="brightness", factor=1.3)
case("contrast", rgb, F.adjust_contrast(rgb, 0.6), op="contrast", factor=0.6)
case("contrast_grey", grey, F.adjust_contrast(grey, 1.8), op="contrast", factor=1.8)
case("saturation", rgb, F.adjust_saturation(rgb, 1.7), op="saturation", factor=1.7)
case("hue_forward", rgb, F.adjust_hue(rgb, 0.23), op="hue", factor=0.23)
case("hue_back", rgb, F.adjust_hue(rgb, -0.4), op="hue", factor=-0.4)
for angle, interp, fill in [(30.0, IM.NEAREST, 0.0), (-17.5, IM.BILINEAR, 0.0), (45.0, IM.BILINEAR, 0.5),
                            (90.0, IM.NEAREST, 0.0)]:
    case(f"rotate_{angle}_{interp.value}_{fill}", rgb, F.rotate(rgb, angle, interp, fill=[fill] * 3), op="rotate",
         angle=angle, interpolation=interp.value, fill=fill)
case("normalize", rgb, F.normalize(rgb, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), op="normalize",
     mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
case("resized_crop", rgb, F.resized_crop(rgb, 1, 2, 10, 12, [8, 8], IM.BILINEAR, antialias=True), op="resized_crop",
     top=1, left=2, height=10, width=12, size=8)

out = {"torch": torch.__version__, "torchvision": torchvision.__version__,
       "images": {"rgb": {"shape": list(rgb.shape), "values": [float(v) for v in rgb.flatten()]},
                  "grey": {"shape": list(grey.shape), "values": [float(v) for v in grey.flatten()]}},
       "cases": cases}
path = pathlib.Path(__file__).with_name("torchvision_transforms.json")
path.write_text(json.dumps(out, separators=(",", ":")) + "\n")
print(f"wrote {path} ({len(cases)} cases)")
