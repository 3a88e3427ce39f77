#!/usr/bin/env python3
"""One rank of a data-parallel (DistributedDataParallel) PyTorch trainer
fed by its own rv pipeline, writing per-sample feedback to its own
rv-score.

Each rank is a process with its own stream of batches on stdin (its share
of the dataset: rv-decode --shard, refurbished, shrunk and batched by its
own rv-refurbish | rv-score | rv-batch) and its own feedback FIFO.  The
ranks train one model: DDP averages the gradients of every step, so every
rank must take the same number of steps in every epoch.  The trainer
checks that in lock step: before each step the ranks tell each other
whether they have a batch (one small all_gather), so a rank whose epoch
ends early stops every rank at that step, with the step counts of each
(it does not hang, and DDP never pairs one rank's gradients with another
rank's bookkeeping), and at each epoch end they compare their steps and
samples.  Evaluation is split over the ranks, correct counts summed.
Rank 0 prints a JSON summary.

Launched by pipelines/ddp-rank.sh under torchrun (pipelines/ddp-train.sh)
or srun (pipelines/slurm-ddp.sbatch), with RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR and MASTER_PORT set; without WORLD_SIZE it is one rank alone.

    rv-decode --shard auto ... | rv-refurbish ... |
        rv-score --feedback fb.$RANK --budget 0.5 | rv-batch -b 64 |
        python3 pipelines/ddp-train.py --feedback fb.$RANK --eval test.rvs

Progress goes to stderr (rank 0, one line per epoch); the summary, one
JSON object, to stdout (rank 0).  Exit 1 on a failure of any rank, which
every rank reports.
"""

import argparse
import datetime
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

# rvstream, and the model (shared with pipelines/torch-train.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rvtorch_common import CnnSmall, rvstream  # noqa: E402

PROG = "ddp-train"
END, BATCH, ERROR = 0, 1, 2  # what a rank has at a step
# in the errors of a collective that another rank left hanging
COMM_WORDS = ("gloo", "nccl", "timed out", "timeout", "connection",
              "socket", "peer")


class Stop(Exception):
    """Every rank stops: the message says why."""


class WithFeatures(nn.Module):
    """The model's logits and the last layer's input (for the gradnorm),
    from one forward: DDP must see the forward that builds the graph."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        h = self.m.body(x)
        return self.m.head(h), h


def env_int(name, default):
    v = os.environ.get(name, "")
    if v == "":
        return default
    try:
        return int(v)
    except ValueError:
        sys.exit(f"{PROG}: {name}: '{v}': not an integer")


class Group:
    """The ranks, and the collectives the loop agrees with."""

    def __init__(self, backend, timeout):
        self.rank = env_int("RANK", 0)
        self.world = env_int("WORLD_SIZE", 1)
        self.local = env_int("LOCAL_RANK", 0)
        nlocal = env_int("LOCAL_WORLD_SIZE", 1)
        if not 0 <= self.rank < self.world:
            sys.exit(f"{PROG}: RANK {self.rank}: not below WORLD_SIZE "
                     f"{self.world}")
        if backend == "auto":
            backend = "nccl" if torch.cuda.is_available() and \
                torch.cuda.device_count() >= nlocal else "gloo"
        self.backend = backend
        if backend == "nccl":
            # a collective that times out raises instead of hanging
            os.environ.setdefault("NCCL_ASYNC_ERROR_HANDLING", "1")
            torch.cuda.set_device(self.local)
            self.dev = torch.device("cuda", self.local)
        else:
            self.dev = torch.device("cpu")
        to = datetime.timedelta(seconds=timeout)
        if "WORLD_SIZE" in os.environ:
            dist.init_process_group(backend, timeout=to)
        else:  # one rank alone, no launcher
            dist.init_process_group(backend, store=dist.HashStore(),
                                    rank=0, world_size=1, timeout=to)

    def gather(self, vals):
        """Each rank's list of integers, by rank."""
        t = torch.tensor(vals, dtype=torch.int64, device=self.dev)
        out = [torch.empty_like(t) for _ in range(self.world)]
        dist.all_gather(out, t)
        return [o.tolist() for o in out]

    def sum(self, vals):
        t = torch.tensor(vals, dtype=torch.float64, device=self.dev)
        dist.all_reduce(t)
        return t.tolist()

    def objects(self, obj):
        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out


def by_rank(vals):
    return ", ".join(f"rank {r}: {v}" for r, v in enumerate(vals))


def evaluate(g, model, test):
    """Accuracy and loss over the test set, each rank taking every
    world-th sample, the sums added up."""
    for b in model.buffers():  # rank 0's BatchNorm statistics everywhere
        dist.broadcast(b, 0)
    model.eval()
    right = n = 0
    loss = 0.0
    with torch.no_grad():
        for b in test:
            x = b.float(device=g.dev, channels_last=True)[g.rank::g.world]
            y = b.labels.to(g.dev)[g.rank::g.world]
            z = model(x)
            loss += F.cross_entropy(z, y, reduction="sum").item()
            right += (z.argmax(1) == y).sum().item()
            n += len(y)
    model.train()
    right, n, loss = g.sum([right, n, loss])
    return loss / max(n, 1), right / max(n, 1)


def main():
    ap = argparse.ArgumentParser(
        prog=PROG, description="one rank of a DDP trainer of cnn-small "
        "fed by an rv stream")
    ap.add_argument("input", nargs="?", default="-",
                    help="this rank's rv stream of batches (default stdin)")
    ap.add_argument("--eval", metavar="FILE",
                    help="evaluate on this rv stream at every epoch end "
                         "(split over the ranks)")
    ap.add_argument("--feedback", metavar="PATH",
                    help="write rv-feedback(5) lines to PATH (this rank's "
                         "FIFO)")
    ap.add_argument("--epochs", type=int, default=5,
                    help="the cosine schedule's length (default 5)")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--wd", type=float, default=5e-4)
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads (default: the CPUs over the "
                         "ranks on this node)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", choices=("auto", "gloo", "nccl"),
                    default="auto",
                    help="nccl when every local rank has a GPU, else "
                         "gloo on the CPU (default auto)")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds a collective waits for the other ranks "
                         "before failing (default 300)")
    ap.add_argument("--ids-out", metavar="FILE",
                    help="rank 0 writes 'epoch rank id' for every sample "
                         "each rank trained on")
    ap.add_argument("--summary", metavar="FILE",
                    help="rank 0 writes the JSON summary there too")
    ap.add_argument("--log", metavar="FILE",
                    help="rank 0 writes one JSON line per epoch")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args()

    g = Group(a.backend, a.timeout)
    me = f"{PROG}: rank {g.rank}" if g.world > 1 else PROG
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads or max(
        1, len(os.sched_getaffinity(0)) // env_int("LOCAL_WORLD_SIZE", 1)))
    say = (lambda m: None) if a.quiet or g.rank != 0 else \
        (lambda m: print(f"{PROG}: {m}", file=sys.stderr, flush=True))

    try:
        train(a, g, say)
    except Stop as e:
        sys.exit(f"{me}: {e}")
    except RuntimeError as e:
        # a collective failed: a rank died, or hangs (gloo and NCCL say
        # so in their own words); anything else is a bug: the traceback
        if not any(w in str(e).lower() for w in COMM_WORDS):
            raise
        sys.exit(f"{me}: the ranks lost each other (a rank died, or "
                 f"none answered in {a.timeout:g} s): {e}")
    dist.destroy_process_group()


def train(a, g, say):
    # Open everything, then agree that every rank could.
    err = ""
    test = []
    stream = fb = None
    try:
        stream = rvstream.Reader(a.input, prefetch=4)
        if a.eval:
            test = list(rvstream.Reader(a.eval, batch_size=1000))
        if a.feedback:
            fb = rvstream.FeedbackWriter(a.feedback)
    except (OSError, rvstream.RvStreamError) as e:
        err = str(e)
    bad = [r for r, (x,) in enumerate(g.gather([int(bool(err))])) if x]
    if bad:
        raise Stop(err or f"rank {bad[0]} could not start (see its error)")
    ids_out = open(a.ids_out, "w") if a.ids_out and g.rank == 0 else None
    log = open(a.log, "w") if a.log and g.rank == 0 else None

    model = ddp = opt = None
    step = 0
    acc = loss_eval = None
    wait = 0.0
    per_epoch = None  # samples per epoch, over all ranks: the schedule's
    steps_tab, samples_tab = [], []
    t0 = time.monotonic()
    epochs = stream.epochs()

    def fetch(it):
        """(what, value): the next item of it, or the end, or the
        error."""
        try:
            x = next(it, None)
        except rvstream.RvStreamError as e:
            return ERROR, str(e)
        return (END, None) if x is None else (BATCH, x)

    try:
        while True:
            # Every rank has the next epoch, or none has.
            what, ep = fetch(epochs)
            meta = stream.meta.get("samples", "") if what == BATCH else ""
            tab = g.gather([what, ep.epoch if what == BATCH else -1,
                            int(meta) if meta.isdigit() else -1])
            check_errors(tab, ep)
            if all(t[0] == END for t in tab):
                break
            if any(t[0] == END for t in tab):
                raise Stop(f"epoch {len(steps_tab)}: unequal epochs "
                           f"across ranks: " + by_rank(
                               f"epoch {t[1]}" if t[0] else "stream ended"
                               for t in tab))
            if len({t[1] for t in tab}) != 1:
                raise Stop("the ranks are at different epochs: " +
                           by_rank(t[1] for t in tab))
            e = tab[0][1]
            if per_epoch is None and all(t[2] >= 0 for t in tab):
                per_epoch = sum(t[2] for t in tab)
            it = iter(ep)
            steps = n = nall = 0
            loss_sum = 0.0
            ids = []
            while True:
                tw = time.monotonic()
                what, b = fetch(it)
                wait += time.monotonic() - tw
                tab = g.gather([what, len(b) if what == BATCH else 0])
                check_errors(tab, b)
                if all(t[0] == END for t in tab):
                    break
                if any(t[0] == END for t in tab):
                    unequal_steps(g, e, steps, n, what, b, it)
                if model is None:
                    _, h, w, c = b.images.shape
                    classes = int(stream.meta.get("classes", "10"))
                    # channels-last, as oneDNN makes the gradients
                    # of a 1-channel convolution: DDP's buckets must
                    # have their strides
                    model = CnnSmall(c, h, w, classes).to(
                        g.dev, memory_format=torch.channels_last)
                    ddp = DistributedDataParallel(
                        WithFeatures(model),
                        device_ids=[g.local] if g.dev.type == "cuda"
                        else None)
                    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr,
                                          momentum=a.momentum,
                                          weight_decay=a.wd)
                # the same schedule on every rank: from the samples of
                # every rank
                frac = nall / per_epoch if per_epoch else 0.0
                t = min((e + min(frac, 1.0)) / a.epochs, 1.0)
                for pg in opt.param_groups:
                    pg["lr"] = a.lr * 0.5 * (1 + math.cos(math.pi * t))
                x = b.float(device=g.dev, channels_last=True)
                y = b.labels.to(g.dev)
                z, hid = ddp(x)
                loss = F.cross_entropy(z, y, reduction="none")
                opt.zero_grad(set_to_none=True)
                (loss * b.weights.to(g.dev)).mean().backward()  # averaged
                opt.step()
                if fb:
                    fb.write(b.ids, b.epoch, step, loss,
                             rvstream.last_layer_gradnorm(z, y, hid))
                if a.ids_out:
                    ids.extend(b.ids.tolist())
                loss_sum += loss.sum().item()
                step += 1
                steps += 1
                n += len(b)
                nall += sum(t[1] for t in tab)
            # The epoch's counts, compared (equal by the lock step above).
            tab = g.gather([steps, n])
            if len({t[0] for t in tab}) != 1:
                raise Stop(f"epoch {e}: unequal steps across ranks: " +
                           by_rank(f"{t[0]} steps" for t in tab))
            steps_tab.append([t[0] for t in tab])
            samples_tab.append([t[1] for t in tab])
            if nall:
                per_epoch = max(per_epoch or 0, nall)
            if a.ids_out:
                got = g.objects(ids)
                if ids_out:
                    for r, lst in enumerate(got):
                        ids_out.writelines(f"{e}\t{r}\t{i}\n" for i in lst)
                    ids_out.flush()
            if test and model is not None:
                loss_eval, acc = evaluate(g, model, test)
            loss_all, = g.sum([loss_sum])
            wall = time.monotonic() - t0
            say(f"epoch {e}: {steps} steps on each of {g.world} ranks, "
                f"samples {'+'.join(str(t[1]) for t in tab)}, loss "
                f"{loss_all / max(nall, 1):.4f}, eval acc "
                f"{acc if acc is not None else float('nan'):.4f}, "
                f"{wall:.1f} s")
            if log:
                log.write(json.dumps(dict(
                    event="epoch", epoch=e, steps=step,
                    steps_per_rank=steps, samples=samples_tab[-1],
                    wall=round(wall, 3), loss=loss_all / max(nall, 1),
                    eval_acc=acc, eval_loss=loss_eval)) + "\n")
                log.flush()
    finally:
        if fb:
            fb.close()
    wall = time.monotonic() - t0
    fbc = g.gather([fb.written, fb.dropped] if fb else [0, 0])
    if g.rank != 0:
        return
    summary = dict(
        ranks=g.world, backend=g.backend, epochs=len(steps_tab),
        steps_per_epoch=steps_tab, samples_per_epoch=samples_tab,
        steps=step, test_acc=acc, test_loss=loss_eval,
        wall=round(wall, 3), wait=round(wait / wall, 4) if wall else 0,
        feedback_written=[t[0] for t in fbc],
        feedback_dropped=[t[1] for t in fbc])
    text = json.dumps(summary)
    print(text, flush=True)
    if a.summary:
        with open(a.summary, "w") as f:
            f.write(text + "\n")
    for f in (ids_out, log):
        if f:
            f.close()


def check_errors(tab, x):
    """Stop every rank when one's input failed: its message there, the
    others name it."""
    bad = [r for r, t in enumerate(tab) if t[0] == ERROR]
    if bad:
        raise Stop(x if isinstance(x, str) else
                   f"rank {bad[0]}'s input failed (see its error)")


def unequal_steps(g, e, steps, n, what, b, it):
    """Some ranks' epoch ended, others have a batch: count what each rank
    has in the epoch (the rest read, not trained), and stop every rank
    saying so."""
    if what == BATCH:
        steps, n = steps + 1, n + len(b)
        try:
            for b in it:
                steps, n = steps + 1, n + len(b)
        except rvstream.RvStreamError as e:
            print(f"{PROG}: rank {g.rank}: {e}", file=sys.stderr)
    tab = g.gather([steps, n])
    raise Stop(
        f"epoch {e}: unequal steps across ranks: " +
        by_rank(f"{t[0]} steps ({t[1]} samples)" for t in tab) +
        ": DDP needs the same number of batches on every rank "
        "(rv-decode --shard auto, rv-score --budget)")


if __name__ == "__main__":
    main()
