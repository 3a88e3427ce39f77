#!/usr/bin/env python3
"""PyTorch's training images/s for bench/gpu.sh: a torchvision ResNet,
SGD with momentum, a synthetic u8 batch on the device normalised each
step (as rv-train-gpu does on the device), cudnn.benchmark; fp32 with
TF32 off, tf32 with it on, bf16 under autocast with channels-last.
Prints one JSON line."""
import argparse
import json
import time

import torch
import torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="resnet50")
ap.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "bf16"])
ap.add_argument("--batch", type=int, default=256)
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--warm", type=int, default=20)
ap.add_argument("--device", default="cuda",
                help="cpu: check this script without a GPU")
a = ap.parse_args()

torch.backends.cudnn.benchmark = True
tf32 = a.precision == "tf32"
torch.backends.cudnn.allow_tf32 = tf32
torch.backends.cuda.matmul.allow_tf32 = tf32
dev = torch.device(a.device)
sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
model = getattr(torchvision.models, a.model)(num_classes=1000).to(dev)
cl = a.precision == "bf16"
if cl:
    model = model.to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9,
                      weight_decay=5e-4)
px = torch.randint(0, 256, (a.batch, 224, 224, 3), dtype=torch.uint8,
                   device=dev)
y = torch.randint(0, 1000, (a.batch,), device=dev)
mean = torch.tensor([0.5, 0.5, 0.5], device=dev).view(1, 3, 1, 1)
std = torch.tensor([0.5, 0.5, 0.5], device=dev).view(1, 3, 1, 1)


def step():
    x = px.permute(0, 3, 1, 2).float().div_(255).sub_(mean).div_(std)
    x = x.contiguous(memory_format=torch.channels_last if cl else
                     torch.contiguous_format)
    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=cl):
        loss = torch.nn.functional.cross_entropy(model(x), y,
                                                 reduction="none")
    opt.zero_grad(set_to_none=True)
    loss.mean().backward()
    opt.step()


for _ in range(a.warm):
    step()
sync()
t0 = time.perf_counter()
for _ in range(a.steps - a.warm):
    step()
sync()
dt = time.perf_counter() - t0
print(json.dumps({"model": a.model, "precision": a.precision,
                  "images_per_s": round((a.steps - a.warm) * a.batch / dt, 1),
                  "torch": torch.__version__}))
