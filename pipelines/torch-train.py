#!/usr/bin/env python3
"""Train a CNN in PyTorch on batches from an rv pipeline, and feed the
per-sample loss and gradient norm back to rv-score through a FIFO.

This is what a PyTorch user keeps: their model, optimiser and loop.  rv
does the data (decode, refurbish, shrink, batch) in other processes; the
loop reads the batches with rvstream, weights the loss by each sample's
weight (1/P(keep) under rv-score --reweight), and writes the feedback
lines rv-score's assistant learns from.  The model is rv-train-gpu's
cnn-small, so the two trainers can be compared.  See
pipelines/torch-train.sh for the whole pipeline, and README.md, "Training
in PyTorch".

    rv-refurbish ... | rv-score --feedback fb.fifo | rv-batch -b 128 |
        python3 pipelines/torch-train.py --feedback fb.fifo \\
            --eval test.rvs --epochs 5

With --steps N instead of --epochs, it trains N steps and counts the
schedule in steps, as rv-train-gpu --steps does, so that a run on a
shrunk stream sees the curve of a run on every sample at the same step.
--schedule cosine (default) or linear (to 0 at the end: the budgeted
training schedule, as rv-train-gpu --schedule linear); either is fitted to
the run's length, decayed to 0 at its last step.

Progress goes to stderr, one line per epoch; the summary to stdout.
"""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

# rvstream, and the model (shared with pipelines/ddp-train.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rvtorch_common import CnnSmall, rvstream  # noqa: E402

PROG = "torch-train"


def evaluate(model, batches):
    model.eval()
    right = n = 0
    loss = 0.0
    with torch.no_grad():
        for b in batches:
            z = model(b.float())
            loss += F.cross_entropy(z, b.labels, reduction="sum").item()
            right += (z.argmax(1) == b.labels).sum().item()
            n += len(b)
    model.train()
    return loss / max(n, 1), right / max(n, 1)


def main():
    ap = argparse.ArgumentParser(
        prog=PROG, description="train cnn-small from an rv stream")
    ap.add_argument("input", nargs="?", default="-",
                    help="rv stream of batches (default stdin)")
    ap.add_argument("--eval", metavar="FILE",
                    help="evaluate on this rv stream at every epoch end")
    ap.add_argument("--feedback", metavar="PATH",
                    help="write rv-feedback(5) lines to PATH (a FIFO)")
    length = ap.add_mutually_exclusive_group()
    length.add_argument("--epochs", type=int, default=None,
                        help="the schedule's length (default 5)")
    length.add_argument("--steps", type=int, default=None,
                        help="train this many steps, the schedule "
                             "counted in steps (as rv-train-gpu --steps)")
    ap.add_argument("--schedule", choices=("cosine", "linear"),
                    default="cosine",
                    help="the rate's decay to 0 over the run: cosine "
                         "(default) or linear")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--wd", type=float, default=5e-4)
    ap.add_argument("--batch-size", type=int, default=None,
                    help="collate sample records (default: the stream "
                         "holds batches)")
    ap.add_argument("--target-acc", type=float, default=None,
                    help="stop once evaluation accuracy reaches this")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads (default: all cores)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log", metavar="FILE",
                    help="one JSON line per epoch to FILE")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args()
    if a.steps is not None and a.steps < 1:
        ap.error("--steps: at least 1")
    if a.epochs is None:
        a.epochs = 5

    torch.manual_seed(a.seed)
    if a.threads:
        torch.set_num_threads(a.threads)
    say = (lambda *x: None) if a.quiet else \
        (lambda m: print(f"{PROG}: {m}", file=sys.stderr, flush=True))
    try:
        test = list(rvstream.Reader(a.eval, batch_size=1000)) \
            if a.eval else []
        stream = rvstream.Reader(a.input, prefetch=4)
        fb = rvstream.FeedbackWriter(a.feedback) if a.feedback else None
        log = open(a.log, "w") if a.log else None
    except (OSError, rvstream.RvStreamError) as e:
        sys.exit(f"{PROG}: {e}")

    model = opt = None
    step = seen = 0
    acc = None
    wait = 0.0
    t0 = time.monotonic()
    per_epoch = None  # samples per epoch, for the schedule
    try:
        for ep in stream.epochs():
            if per_epoch is None and stream.meta.get("samples", "").isdigit():
                per_epoch = int(stream.meta["samples"])
            n = 0
            loss_sum = 0.0
            it = iter(ep)
            while True:
                tw = time.monotonic()
                b = next(it, None)
                wait += time.monotonic() - tw
                if b is None:
                    break
                if model is None:
                    _, h, w, c = b.images.shape
                    classes = int(stream.meta.get("classes", "10"))
                    model = CnnSmall(c, h, w, classes)
                    opt = torch.optim.SGD(model.parameters(), lr=a.lr,
                                          momentum=a.momentum,
                                          weight_decay=a.wd)
                if a.steps:  # the same curve at the same step, however
                    t = min(step / a.steps, 1.0)  # many samples an epoch
                else:
                    frac = n / per_epoch if per_epoch else 0.0
                    t = min((ep.epoch + min(frac, 1.0)) / a.epochs, 1.0)
                for g in opt.param_groups:
                    g["lr"] = a.lr * (1 - t if a.schedule == "linear"
                                      else 0.5 * (1 + math.cos(math.pi * t)))
                x = b.float()
                hid = model.body(x)
                z = model.head(hid)
                loss = F.cross_entropy(z, b.labels, reduction="none")
                opt.zero_grad(set_to_none=True)
                (loss * b.weights).mean().backward()
                opt.step()
                if fb:
                    fb.write(b.ids, b.epoch, step, loss,
                             rvstream.last_layer_gradnorm(z, b.labels, hid))
                loss_sum += loss.sum().item()
                step += 1
                n += len(b)
                if a.steps and step >= a.steps:
                    break
            seen += n
            if n:
                per_epoch = max(per_epoch or 0, n)
            if test and model is not None:
                _, acc = evaluate(model, test)
            wall = time.monotonic() - t0
            say(f"epoch {ep.epoch}: {n} samples, loss "
                f"{loss_sum / max(n, 1):.4f}, eval acc "
                f"{acc if acc is not None else float('nan'):.4f}, "
                f"{wall:.1f} s")
            if log:
                log.write(json.dumps(dict(
                    event="epoch", epoch=ep.epoch, samples=seen, steps=step,
                    wall=round(wall, 3), loss=loss_sum / max(n, 1),
                    eval_acc=acc,
                    lr=opt.param_groups[0]["lr"] if opt else None)) + "\n")
                log.flush()
            if a.target_acc is not None and acc is not None and \
                    acc >= a.target_acc:
                say(f"target accuracy {a.target_acc} reached")
                break
            if a.steps and step >= a.steps:
                break
    except rvstream.RvStreamError as e:
        sys.exit(f"{PROG}: {e}")
    finally:
        if fb:
            fb.close()
    wall = time.monotonic() - t0
    print(f"epochs    {len(stream.epoch_ends)}")
    print(f"steps     {step}")
    print(f"samples   {seen}")
    print(f"wall      {wall:.1f} s, waiting for input {wait / wall:.1%}"
          if wall > 0 else "wall      0 s")
    if acc is not None:
        print(f"eval      acc {acc:.4f}")
    if fb:
        print(f"feedback  {fb.written} lines written, {fb.dropped} dropped")
    if log:
        log.close()


if __name__ == "__main__":
    main()
