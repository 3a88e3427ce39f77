"""The torchvision side of bench/augment.sh: torchvision 0.14 transforms on
PIL images (Pillow 9.4), one process, torch.set_num_threads(1).  Run it
with /usr/bin/python3 (the only interpreter with torch and torchvision).

usage: tv_augment.py ops [-r REPEAT] [-t MS] [-R MS] CASES file ...
    Decodes the files with PIL (convert('RGB')), makes the input pools
    (INPUT full: as decoded; N: F.resize(N) then F.center_crop(N); a
    trailing 't': then F.pil_to_tensor, a u8 CHW tensor, for the tensor-only
    transforms), and times each case's TV EXPR (a Python expression giving
    a callable, evaluated with T, F, I = InterpolationMode, math and torch
    in scope) over the pool, like augment_ops.c: repeats of about MS CPU
    milliseconds after a calibration.  Prints, tab-separated, one line per
    repeat: GROUP NAME INPUT US WALL_US 0 CALLS (US, WALL_US: process CPU
    and wall microseconds per call).
usage: tv_augment.py pipeline [--transform EXPR] [--passes N] [--seed S]
                             file ...
    The DataLoader-free loop: for each file, Image.open(path).convert('RGB')
    as ImageFolder's loader does, then the transform (none: decode only);
    with --seed, torch.manual_seed(S) first, so that the transforms'
    random draws are the same from run to run.
    Prints one line: images=N seconds=S cpu=C (the loop's wall and
    process CPU seconds; start-up and imports are not timed).
usage: tv_augment.py loader [--transform EXPR] [--passes N] [--workers W]
                            [--batch B] file ...
    What a PyTorch user runs: a DataLoader over the files (PIL decode as
    above, the transform, then F.pil_to_tensor: u8 CHW), W worker
    processes (persistent across passes, the loader's fastest setting),
    batches of B collated by default_collate, N passes (epochs).
    Prints one line: images=N seconds=S cpu=C (wall from the first
    iterator to the last batch, worker start-up included, as rv's
    programs' start-up is; cpu: this process and its workers, from
    /proc, user + system).
"""
import argparse
import math
import os
import sys
import time

import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms import InterpolationMode as I

torch.set_num_threads(1)
SCOPE = {"T": T, "F": F, "I": I, "math": math, "torch": torch}


def load(path):
    with open(path, "rb") as f:
        img = Image.open(f)
        return img.convert("RGB")


def make_pool(decoded, inp):
    tensor = inp.endswith("t")
    kind = inp[:-1] if tensor else inp
    if kind == "full":
        pool = list(decoded)
    else:
        side = int(kind)
        pool = [F.center_crop(F.resize(im, side), side) for im in decoded]
    if tensor:
        pool = [F.pil_to_tensor(im) for im in pool]
    return pool


def loop(fn, pool, iters):
    n = len(pool)
    c0 = time.process_time()
    w0 = time.perf_counter()
    for i in range(iters):
        fn(pool[i % n])
    return time.process_time() - c0, time.perf_counter() - w0


def bench(fn, pool, target, repeat):
    """As bench() in augment_ops.c: grow the call count until a run takes
    about target CPU seconds, then (CPU us, wall us) per call of each of
    repeat runs, and the call count."""
    iters = len(pool)
    while True:
        cpu, _ = loop(fn, pool, iters)
        if cpu >= target / 2 or iters > 10 ** 8:
            break
        iters *= 2 if cpu > target / 64 else 16
    if cpu > 0:
        iters = int(iters * target / cpu) + 1
    runs = []
    for _ in range(repeat):
        cpu, wall = loop(fn, pool, iters)
        runs.append((cpu / iters * 1e6, wall / iters * 1e6))
    return runs, iters


def cmd_ops(a):
    decoded = [load(p) for p in a.files]
    pools = {}
    with open(a.cases) as f:
        lines = [ln.rstrip("\r\n") for ln in f]
    for ln in lines:
        if not ln.strip() or ln.startswith("#"):
            continue
        group, name, inp, _spec, expr = ln.split("\t")[:5]
        fn = eval(expr, SCOPE)  # the case table's own expression
        if inp not in pools:
            pools[inp] = make_pool(decoded, inp)
        target = (a.t if group == "op" else a.R) / 1000
        runs, calls = bench(fn, pools[inp], target, a.r)
        for us, wall_us in runs:
            print("%s\t%s\t%s\t%.3f\t%.3f\t0\t%d"
                  % (group, name, inp, us, wall_us, calls), flush=True)


def cmd_pipeline(a):
    fn = eval(a.transform, SCOPE) if a.transform else None
    load(a.files[0])  # warm the imports' lazy parts
    if a.seed is not None:
        torch.manual_seed(a.seed)
    n = 0
    c0 = time.process_time()
    w0 = time.perf_counter()
    for _ in range(a.passes):
        for p in a.files:
            img = load(p)
            if fn is not None:
                img = fn(img)
            n += 1
    cpu = time.process_time() - c0
    wall = time.perf_counter() - w0
    print("images=%d seconds=%.3f cpu=%.3f" % (n, wall, cpu))


class Files(torch.utils.data.Dataset):
    def __init__(self, files, fn):
        self.files = files
        self.fn = fn

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        img = load(self.files[i])
        if self.fn is not None:
            img = self.fn(img)
        return F.pil_to_tensor(img)


def tree_cpu(pid):
    """User + system CPU seconds of pid and its live children (/proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%d/task/%d/children" % (p, p)) as f:
                todo += [int(c) for c in f.read().split()]
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def cmd_loader(a):
    fn = eval(a.transform, SCOPE) if a.transform else None
    ds = Files(a.files, fn)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True,
                                     num_workers=a.workers,
                                     persistent_workers=a.workers > 0)
    n = 0
    c0 = tree_cpu(os.getpid())
    w0 = time.perf_counter()
    for _ in range(a.passes):
        for b in dl:
            n += b.shape[0]
    wall = time.perf_counter() - w0
    cpu = tree_cpu(os.getpid()) - c0  # the workers are still alive here
    print("images=%d seconds=%.3f cpu=%.3f" % (n, wall, cpu))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("ops")
    o.add_argument("-r", type=int, default=5)
    o.add_argument("-t", type=float, default=25)
    o.add_argument("-R", type=float, default=150)
    o.add_argument("cases")
    o.add_argument("files", nargs="+")
    p = sub.add_parser("pipeline")
    p.add_argument("--transform", default="")
    p.add_argument("--passes", type=int, default=1)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("files", nargs="+")
    d = sub.add_parser("loader")
    d.add_argument("--transform", default="")
    d.add_argument("--passes", type=int, default=1)
    d.add_argument("--workers", type=int, default=2)
    d.add_argument("--batch", type=int, default=256)
    d.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.cmd == "ops":
        cmd_ops(a)
    elif a.cmd == "loader":
        cmd_loader(a)
    else:
        cmd_pipeline(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
