#!/usr/bin/python3
# PyTorch baseline of the training benchmark (bench/train.sh): the
# cnn-small model of rv-train-gpu, trained on Fashion-MNIST with the same
# optimiser, batch and normalisation, on the CPU.  The data are read from
# the IDX files and held in memory as tensors before any timing, so the
# time per epoch is the training loop alone (no data loading: the
# comparison with rv, whose time includes its whole pipeline, is
# conservative).  Prints one JSON line per epoch on standard output:
# epoch (from 0), train_s (the loop's wall seconds), samples_per_s,
# train_loss and train_acc (means over the epoch), test_loss and test_acc
# (all 10000 test images, eval mode), eval_s, cpu_s (the process's CPU
# seconds so far, start-up and loading included), threads, lr, batch.
#
# Run with /usr/bin/python3 (torch 1.13 lives there).
import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

FMNIST = "/usr/share/datasets/fashion-mnist"
MOMENTUM = 0.9
WEIGHT_DECAY = 5e-4
EVAL_BATCH = 1000


def read_idx(path):
    """An IDX file (gzipped or raw) as a numpy array of u8."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 8:
        raise ValueError("'%s': not an IDX file of u8" % path)
    ndim = data[3]
    hdr = 4 + 4 * ndim
    dims = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
                 for i in range(ndim))
    n = int(np.prod(dims))
    if len(data) != hdr + n:
        raise ValueError("'%s': %d bytes of data for shape %s"
                         % (path, len(data) - hdr, dims))
    return np.frombuffer(data, dtype=np.uint8, offset=hdr).reshape(dims)


def load(data_dir, split):
    """Images normalised (x/255 - 0.5)/0.5 as N x 1 x 28 x 28 float32,
    labels as int64."""
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))
    if x.shape[0] != y.shape[0]:
        raise ValueError("%s: %d images, %d labels"
                         % (split, x.shape[0], y.shape[0]))
    xt = torch.from_numpy(x.astype(np.float32))
    xt = ((xt / 255.0 - 0.5) / 0.5).unsqueeze(1).contiguous()
    yt = torch.from_numpy(y.astype(np.int64))
    return xt, yt


def cnn_small(classes=10):
    """rv's cnn-small preset, layer for layer."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(3136, 128),
        nn.ReLU(),
        nn.Dropout(0.25),
        nn.Linear(128, classes),
    )


def evaluate(model, x, y):
    model.eval()
    loss = 0.0
    correct = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], EVAL_BATCH):
            z = model(x[i:i + EVAL_BATCH])
            t = y[i:i + EVAL_BATCH]
            loss += F.cross_entropy(z, t, reduction="sum").item()
            correct += (z.argmax(1) == t).sum().item()
    return loss / x.shape[0], correct / x.shape[0]


def main():
    ap = argparse.ArgumentParser(
        description="PyTorch cnn-small on Fashion-MNIST (rv's baseline)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--schedule", choices=("const", "cosine"),
                    default="const",
                    help="cosine: lr * (1 + cos(pi * pos / epochs)) / 2 "
                    "at every step, pos = epoch + samples before the "
                    "batch / samples an epoch (rv-train-gpu's formula)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--data", default=FMNIST,
                    help="directory of the Fashion-MNIST IDX .gz files")
    a = ap.parse_args()
    if a.epochs < 1 or a.threads < 1 or a.batch < 1 or not a.lr > 0:
        ap.error("--epochs, --threads, --batch and --lr must be positive")

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    try:
        xtr, ytr = load(a.data, "train")
        xte, yte = load(a.data, "test")
    except (OSError, ValueError) as e:
        print("train_torch.py: %s" % e, file=sys.stderr)
        return 1
    model = cnn_small()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=MOMENTUM,
                          weight_decay=WEIGHT_DECAY)
    gen = torch.Generator().manual_seed(a.seed)
    n = xtr.shape[0]

    for epoch in range(a.epochs):
        model.train()
        loss_sum = torch.zeros(())
        correct = torch.zeros((), dtype=torch.int64)
        t0 = time.perf_counter()
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n, a.batch):
            if a.schedule == "cosine":
                pos = min((epoch + i / n) / a.epochs, 1.0)
                for g in opt.param_groups:
                    g["lr"] = a.lr * 0.5 * (1 + math.cos(math.pi * pos))
            idx = perm[i:i + a.batch]
            x = xtr[idx]
            t = ytr[idx]
            z = model(x)
            loss = F.cross_entropy(z, t)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                loss_sum += loss.detach() * t.shape[0]
                correct += (z.argmax(1) == t).sum()
        train_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        test_loss, test_acc = evaluate(model, xte, yte)
        eval_s = time.perf_counter() - t1
        print(json.dumps({
            "epoch": epoch,
            "train_s": round(train_s, 3),
            "samples_per_s": round(n / train_s, 1),
            "train_loss": round(loss_sum.item() / n, 5),
            "train_acc": round(correct.item() / n, 5),
            "test_loss": round(test_loss, 5),
            "test_acc": round(test_acc, 5),
            "eval_s": round(eval_s, 3),
            "cpu_s": round(time.process_time(), 3),
            "threads": a.threads,
            "lr": a.lr,
            "schedule": a.schedule,
            "batch": a.batch,
        }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
