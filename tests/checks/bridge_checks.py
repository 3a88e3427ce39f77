"""Checks of python/rvstream's data-parallel bridge for tests/bats/bridge.bats,
one per subcommand: dtypes, pinned staging, len(), ranks and workers,
resuming.  Each prints one line saying what it checked and exits 1 with
a message at the first difference.
usage: python3 tests/checks/bridge_checks.py CHECK ARGS...
"""

import collections
import hashlib
import os
import subprocess
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, os.pardir, "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import rvstream  # noqa: E402
from rvstream import _staging  # noqa: E402


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def rchar():
    """Bytes this process has read (read, pread...), from /proc."""
    with open("/proc/self/io") as f:
        for ln in f:
            if ln.startswith("rchar:"):
                return int(ln.split()[1])
    fail("no rchar in /proc/self/io")


def key(b):
    return (b.epoch, tuple(b.ids.tolist()))


# -- dtypes
def check_dtype(src):
    """float(dtype) equals float32's result cast to dtype, within the
    dtype's rounding, in both memory formats; numpy dtypes and no torch
    work too."""
    b = next(iter(rvstream.Reader(src)))
    want = (b.images.permute(0, 3, 1, 2).double() / 255 - 0.25) / 0.125
    n = 0
    for dt in (torch.float16, torch.bfloat16, torch.float32):
        eps = torch.finfo(dt).eps
        for cl in (False, True):
            ref = b.float(mean=0.25, std=0.125).to(dt)
            x = b.float(mean=0.25, std=0.125, dtype=dt, channels_last=cl,
                        device="cpu", non_blocking=True)
            fmt = torch.channels_last if cl else torch.contiguous_format
            if x.dtype != dt or x.shape != ref.shape or \
                    not x.is_contiguous(memory_format=fmt):
                fail(f"{dt} channels_last={cl}: {x.dtype} {x.shape}")
            # one rounding of the float32 value: within half an ulp of
            # the cast, an ulp of the exact value
            tol = eps * want.abs().max().item()
            if (x.double() - ref.double()).abs().max().item() > tol / 2 or \
                    (x.double() - want).abs().max().item() > tol:
                fail(f"{dt} channels_last={cl} differs from float32 cast")
            n += 1
    # the GPU's one-pass path (run here on the CPU for float32)
    f = rvstream._stream._normalise(b.images, [0.5], [0.5], torch.float32,
                                    False, fused=True)
    if not torch.allclose(f, b.float(), atol=1e-6):
        fail("the fused path differs")
    x = b.float(dtype=np.float16)
    if x.dtype != torch.float16:
        fail(f"numpy float16 gave {x.dtype}")
    # as_torch=False: numpy in, numpy out
    a = next(iter(rvstream.Reader(src, as_torch=False)))
    y = a.float(dtype=np.float16, channels_last=True)
    w5 = (a.images.transpose(0, 3, 1, 2) / 255.0 - 0.5) / 0.5
    if not isinstance(y, np.ndarray) or y.dtype != np.float16 or \
            y.shape != w5.shape or \
            np.abs(y - w5).max() > np.finfo(np.float16).eps:
        fail("numpy float16 differs")
    # without torch at all
    code = (
        "import sys; sys.modules['torch'] = None\n"
        f"sys.path.insert(0, {os.path.dirname(rvstream.__path__[0])!r})\n"
        "import numpy as np, rvstream\n"
        f"b = next(iter(rvstream.Reader({src!r})))\n"
        "x = b.float(); h = b.float(dtype=np.float16)\n"
        "w = (b.images.transpose(0, 3, 1, 2) / 255.0 - 0.5) / 0.5\n"
        "assert type(b.images) is np.ndarray and x.dtype == np.float32\n"
        "assert np.abs(x - w).max() < 1e-6 and h.dtype == np.float16\n"
        "assert np.abs(h - w).max() < 1e-3\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True)
    if out.returncode or out.stdout.strip() != "ok":
        fail(f"without torch: {out.stderr.strip()[-300:]}")
    print(f"dtype ok: {n} dtype and format pairs, numpy with and without "
          "torch")


# -- pinned staging
def digest(b):
    h = hashlib.sha1()
    for t in (b.images, b.ids, b.labels, b.weights):
        h.update(str(t.dtype).encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def check_pin(batched, samples, bs):
    """pin_memory=True without CUDA warns once and reads the same; with
    pinning (the helper stood in for), every tensor of every batch is a
    view of a tensor from _staging.pinned_empty, and batches the caller
    keeps stay intact."""
    bs = int(bs)
    ref = [digest(b) for b in rvstream.Reader(batched)]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a = [digest(b) for b in rvstream.Reader(batched, pin_memory=True)]
        c = [digest(b) for b in rvstream.batches(samples, batch_size=bs,
                                                 pin_memory=True)]
        ds = rvstream.RvDataset(batched, pin_memory=True, raw=True)
        d = [digest(b) for b in torch.utils.data.DataLoader(
            ds, batch_size=None)]
    pin_warnings = [str(x.message) for x in w
                    if "pin_memory" in str(x.message)]
    if len(pin_warnings) != 1 or "not pinned" not in pin_warnings[0]:
        fail(f"warnings: {pin_warnings}")
    if a != ref or c != ref or d != ref:
        fail("unpinned reads differ")
    # the pinning path, with CUDA and the allocator stood in for
    made = {}

    def fake(n):
        t = torch.empty(n, dtype=torch.uint8)
        made[t.storage().data_ptr()] = n
        return t
    _staging.cuda_available = lambda: True
    _staging.pinned_empty = fake
    for kw in (dict(src=batched), dict(src=batched, prefetch=3),
               dict(src=samples, batch_size=bs)):
        kept = list(rvstream.Reader(pin_memory=True, **kw))
        if [digest(b) for b in kept] != ref:
            fail(f"pinned batches differ ({kw})")
        for b in kept:
            for f in ("images", "ids", "labels", "weights"):
                if getattr(b, f).storage().data_ptr() not in made:
                    fail(f"{f} is not from the pinned staging ({kw})")
        x = kept[0].float(device="cpu", non_blocking=True)
        if not torch.equal(x, next(iter(rvstream.Reader(batched))).float()):
            fail("float() of a pinned batch differs")
    ds = rvstream.RvDataset([batched], pin_memory=True, raw=True)
    got = list(torch.utils.data.DataLoader(ds, batch_size=None))
    if [digest(b) for b in got] != ref or not all(
            b.images.storage().data_ptr() in made for b in got):
        fail("RvDataset(pin_memory=True) in the main process is not pinned")
    print(f"pin ok: 1 warning, {len(ref)} batches pinned from "
          f"{len(made)} staging tensors, kept intact")


# -- len()
def count_len(src, kw):
    """(len() or 'TypeError', length_hint(), batches yielded)."""
    if src == "-":
        src = sys.stdin.buffer
    r = rvstream.Reader(src, **kw)
    try:
        n = len(r)
    except TypeError:
        n = "TypeError"
    hint = r.length_hint()
    return n, hint, sum(1 for _ in r)


def check_len(src, *args):
    """len() against the batches yielded: prints 'len L hint H yielded Y'
    and, with 'epochs', each epoch's len(); batch_size=N and skip=K
    options."""
    kw = {}
    for a in args:
        k, _, v = a.partition("=")
        if k in ("batch_size", "skip_batches"):
            kw[k] = int(v)
    n, hint, got = count_len(src, kw)
    if n != "TypeError" and n != got:
        fail(f"len() {n}, {got} yielded")
    line = f"len {n} hint {hint} yielded {got}"
    if "epochs" in args:
        eps = []
        for ep in rvstream.Reader(src, **kw).epochs():
            m = sum(1 for _ in ep)
            if len(ep) != m:
                fail(f"epoch {ep.epoch}: len {len(ep)}, {m} yielded")
            eps.append(f"{ep.epoch}:{m}")
        line += " epochs " + ",".join(eps)
    print(line)


def check_dataset_len(*files):
    """RvDataset's len() is what a DataLoader yields, for one file and
    for several, from metadata or from the index."""
    out = []
    for src in [[f] for f in files] + [list(files)]:
        ds = rvstream.RvDataset(src)
        got = sum(1 for _ in torch.utils.data.DataLoader(ds,
                                                         batch_size=None))
        if len(ds) != got:
            fail(f"{src}: len {len(ds)}, {got} yielded")
        out.append(f"{got}/{ds._infos[0].how}")
    print("dataset len ok: " + " ".join(out))


# -- ranks and workers
class Measured(torch.utils.data.IterableDataset):
    """ds's items, then ('rchar', worker, bytes this worker read)."""

    def __init__(self, ds):
        super().__init__()
        self.ds = ds

    def __iter__(self):
        before = rchar()
        yield from self.ds
        info = torch.utils.data.get_worker_info()
        yield ("rchar", info.id if info else 0, rchar() - before)


def run_rank(files, rank, world, workers, **kw):
    """(batches as keys in order, {worker: bytes read}, len(ds))."""
    ds = rvstream.RvDataset(files, rank=rank, world=world, raw=True, **kw)
    dl = torch.utils.data.DataLoader(Measured(ds), batch_size=None,
                                     num_workers=workers)
    got, io = [], {}
    for x in dl:
        if isinstance(x, (tuple, list)) and x[0] == "rchar":
            io[x[1]] = x[2]
        else:
            got.append(key(x))
    return got, io, len(ds)


def once(per_slot):
    """How many times each (epoch, id) was read over the slots."""
    return collections.Counter((e, i) for got in per_slot
                               for e, ids in got for i in ids)


def check_ranks(world, workers, *files):
    """Every (rank, worker) slot of world ranks of workers DataLoader
    workers: the union of their samples is every (epoch, id) of the files
    once, every rank yields as many batches as len() says and as the
    others, and each worker reads about its share of the bytes."""
    world, workers = int(world), int(workers)
    want = collections.Counter()
    for f in files:
        for b in rvstream.Reader(f):
            want.update((b.epoch, i) for i in b.ids.tolist())
    size = sum(os.path.getsize(f) for f in files)
    slots = world * workers
    per_rank, worst = [], 0.0
    for r in range(world):
        got, io, n = run_rank(list(files), r, world, workers)
        if len(got) != n:
            fail(f"rank {r}: {len(got)} batches, len() {n}")
        per_rank.append(got)
        if len(io) != workers:
            fail(f"rank {r}: {len(io)} workers reported")
        for w, nbytes in io.items():
            share = nbytes / (size / slots)
            worst = max(worst, share)
            if not 0.8 <= share <= 1.2:
                fail(f"rank {r} worker {w} read {nbytes} bytes, its share "
                     f"is {size // slots}")
    counts = {len(g) for g in per_rank}
    if len(counts) != 1:
        fail(f"ranks yield {[len(g) for g in per_rank]} batches")
    seen = once(per_rank)
    if seen != want:
        fail(f"{sum(seen.values())} samples read, {len(want)} wanted once")
    print(f"ranks ok: {world} ranks x {workers} workers, "
          f"{counts.pop()} batches each, every sample once, "
          f"each worker read at most {worst:.2f} of its share")


def check_split(one, *unequal):
    """One file over 2 slots (2 ranks; 2 workers of one rank): each reads
    about half of it, never the whole, and together every sample once.
    Then files of unequal shares over 2 ranks: equal steps, the short
    rank repeating its first batches (pad) or the long one cutting its
    last (drop_last), each as DistributedSampler would."""
    size = os.path.getsize(one)
    want = collections.Counter()
    for b in rvstream.Reader(one):
        want.update((b.epoch, i) for i in b.ids.tolist())
    fracs = []
    for world, workers in ((2, 1), (1, 2)):
        per_slot = []
        for r in range(world):
            ds = rvstream.RvDataset(one, rank=r, world=world)
            for w in range(workers):
                before = rchar()
                got = [key(b) for b in ds.slot_batches(w, workers)]
                nbytes = rchar() - before
                fracs.append(nbytes / size)
                if nbytes > 0.6 * size:
                    fail(f"{world} ranks x {workers} workers: slot {r},{w} "
                         f"read {nbytes} of {size} bytes")
                per_slot.append(got)
        if once(per_slot) != want:
            fail(f"{world} ranks x {workers} workers: not every sample once")
    # unequal shares: each rank's batches in order in one process (as
    # a DataLoader without workers yields them), and over 2 workers
    nat = {}
    for r in range(2):
        n = rvstream.RvDataset(list(unequal), rank=r,
                               world=2).plan().rank_natural[r]
        nat[r] = run_rank(list(unequal), r, 2, 0)[0][:n]  # pads after
    sizes = sorted(len(v) for v in nat.values())
    if sizes[0] == sizes[1]:
        fail("the shares are not unequal")
    C = collections.Counter
    for drop in (False, True):
        want_n = sizes[0] if drop else sizes[1]
        for workers in (0, 2):
            for r in range(2):
                got, _, ln = run_rank(list(unequal), r, 2, workers,
                                      drop_last=drop)
                mine = nat[r]
                if len(got) != want_n or ln != want_n:
                    fail(f"drop_last={drop}, {workers} workers: rank {r} "
                         f"yields {len(got)} (len {ln}), not {want_n}")
                if workers == 0:
                    # pad: all its own, then its first again; drop: its
                    # first want_n
                    exp = mine[:want_n] if drop else \
                        mine + mine[:want_n - len(mine)]
                    if got != exp:
                        fail(f"drop_last={drop}: rank {r} is not its own "
                             "batches, cut or padded from the first")
                elif (drop and not C(got) <= C(mine)) or \
                        (not drop and not C(got) >= C(mine)):
                    fail(f"drop_last={drop}, {workers} workers: rank {r} "
                         "reads other batches than its own")
    # a pipe still refuses workers
    try:
        list(torch.utils.data.DataLoader(rvstream.RvDataset("-"),
                                         batch_size=None, num_workers=2))
        fail("workers on stdin were not refused")
    except RuntimeError as e:
        if "num_workers=0" not in str(e):
            fail(f"unclear: {e}")
    print(f"split ok: one file, each slot read {min(fracs):.2f} to "
          f"{max(fracs):.2f} of it; unequal shares {sizes[0]} and "
          f"{sizes[1]} batches: equal steps padded and dropped; stdin "
          "refuses workers")


# -- resuming
def check_resume(batched, samples, bs, *ks):
    """skip_batches=K yields batches K.. of a full read, for a file, a
    pipe (stdin: the same bytes) and samples collated, whatever K (epoch
    boundaries, past the end), without decompressing a batch it skips."""
    bs = int(bs)
    data = open(batched, "rb").read()
    full = [key(b) for b in rvstream.Reader(batched)]
    coll = [key(b) for b in rvstream.Reader(samples, batch_size=bs)]
    if coll != full:
        fail("the collated samples are not rv-batch's batches")
    n = 0
    for k in map(int, ks):
        for name, src, kw in (("file", batched, {}),
                              ("bytes", data, {"prefetch": 2}),
                              ("samples", samples, {"batch_size": bs})):
            r = rvstream.Reader(src, skip_batches=k, **kw)
            got = [key(b) for b in r]
            if got != full[k:]:
                fail(f"{name}, skip {k}: {len(got)} batches, not "
                     f"{len(full[k:])} from {k}")
            if name != "samples" and r.skipped_records != min(k, len(full)):
                fail(f"{name}, skip {k}: {r.skipped_records} records "
                     "skipped undecoded")
            n += 1
    print(f"resume ok: {n} restarts, {len(full)} batches")


def check_resume_pipe(k, ref):
    """stdin skipped to K equals batches K.. of the file ref."""
    k = int(k)
    full = [key(b) for b in rvstream.Reader(ref)]
    r = rvstream.Reader("-", skip_batches=k)
    got = [key(b) for b in r]
    if got != full[k:] or r.skipped_records != k:
        fail(f"pipe skip {k}: {len(got)} batches, {r.skipped_records} "
             "skipped")
    print(f"resume pipe ok: {len(got)} batches after {k}")


def check_resume_ranks(world, workers, *files):
    """RvDataset(skip_batches=K) in a DataLoader with workers yields what
    the full pass yielded from its K-th batch on, on every rank."""
    world, workers = int(world), int(workers)
    n = 0
    for r in range(world):
        full = run_rank(list(files), r, world, workers)[0]
        for k in (1, len(full) // 2 + 1, len(full) - 1):
            got, _, ln = run_rank(list(files), r, world, workers,
                                  skip_batches=k)
            if got != full[k:] or ln != len(got):
                fail(f"rank {r} skip {k}: {len(got)} batches (len {ln}), "
                     f"not the {len(full) - k} from {k}")
            n += 1
    print(f"resume ranks ok: {n} restarts over {world} ranks x {workers} "
          "workers")


def check_onecycle(src, *args):
    """Train a linear model under OneCycleLR(total_steps=len(reader)),
    as a PyTorch user sizes the schedule: torch refuses a step past
    total_steps, and the schedule must end exactly when the stream does
    (the last step's rate is its floor, max_lr / 25 / 1e4).  Prints
    'onecycle ok: N steps, epochs A,B,...' (each epoch's batches).
    batch_size=N collates samples."""
    kw = {}
    for a in args:
        k, _, v = a.partition("=")
        if k == "batch_size":
            kw[k] = int(v)
    if src == "-":
        src = sys.stdin.buffer
    r = rvstream.Reader(src, **kw)
    total = len(r)
    model = torch.nn.Linear(28 * 28, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1,
                                                total_steps=total)
    steps, per = 0, collections.Counter()
    for b in r:
        x = b.float().flatten(1)
        loss = torch.nn.functional.cross_entropy(model(x), b.labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        last = opt.param_groups[0]["lr"]  # the rate this step used
        sched.step()  # raises ValueError past total_steps
        steps += 1
        per[b.epoch] += 1
    if steps != total:
        fail(f"len() {total}, {steps} steps")
    floor = 0.1 / 25 / 1e4
    if steps > 1 and not abs(last - floor) < 1e-12:
        fail(f"the last step's rate {last}, not the schedule's floor "
             f"{floor}: it did not end with the stream")
    print(f"onecycle ok: {steps} steps, epochs "
          + ",".join(str(per[e]) for e in sorted(per)))


CHECKS = {k[6:]: v for k, v in globals().items() if k.startswith("check_")}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in CHECKS:
        sys.exit(f"usage: bridge_checks.py {'|'.join(CHECKS)} ARGS...")
    CHECKS[sys.argv[1]](*sys.argv[2:])
