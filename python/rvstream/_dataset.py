"""rv streams as a torch IterableDataset, for DataLoader and for
data-parallel training (DDP: several ranks, each with DataLoader
workers).

A list of stream files (one per shard, as rv-decode --shard writes them)
is split over the slots, (rank, worker): each slot reads only its part,
so no slot reads a whole file that others read too.

- Ranks.  With F files and W ranks (world), the first F - F % W files go
  whole to ranks round robin (file f to rank f % W); each of the other
  F % W files (all of them when F < W) is split over every rank by
  records: rank r takes its data records (samples, or batches as
  rv-batch wrote them) i with i % W == r, as DistributedSampler takes
  indices.  A rank collates its samples (batch_size) per file and epoch.
- Workers.  The same, one level down, with the rank's batches as the
  unit: a rank's whole files go whole to its N workers round robin, up
  to a multiple of N, and each of its other files and parts is split by
  batches, batch u (numbered over the part) to worker u % N.  A rank
  reads the same batches whatever its number of workers.
- A file shared by several slots is indexed (_index.FileIndex: frame
  and block headers, no decompression) and each slot reads only the
  frames of its records, plus the metadata and epoch-end records every
  slot reads.
- A slot reads its parts epoch by epoch: the first epoch of each of its
  files in turn, then the second, so that epochs stay in order.

Equal steps: with several ranks, every rank yields the same number of
batches in a pass, T: the most any rank has (drop_last=False, the
default: a rank with fewer repeats its first batches, in order, as
DistributedSampler pads), or the fewest (drop_last=True: a rank with
more leaves its last ones).  The counts come from the files' metadata
(_length.py), or, where it cannot tell (rv-score's output), from the
index of the file; every rank works them out alike.

A pipe (stdin, "-", a FIFO), a file object or bytes is one stream: it is
read whole, by each rank (its own pipeline: rv-decode --shard upstream),
and refuses DataLoader workers.

A dataset index (rv-index(5), rv-decode --index-out) is the dataset
itself: each slot runs its own rv pipeline,

    rv-decode -q --index INDEX --shard S/W*N DECODE... | PIPELINE

where slot S = rank * workers + worker of world * workers, and reads its
stream.  rv-decode's split rule gives a rank exactly the samples
rv-decode --shard rank/world gives it (contiguous shares compose: the
shares of a rank's workers are its share, cut in W), and each worker
reads only its own shards (_split.py computes the same shares in Python:
slot_shards(), slot_samples()).
"""

import os
import shlex
import signal
import stat
import subprocess

import torch

from . import _programs, _split, _staging
from ._index import FileIndex, Part, RangesSource
from ._length import FIRST_DATA
from ._stream import Batch, EpochEnd, Reader

_EPOCH = object()  # a part's epoch ended


def _rank_world(rank, world):
    """rank and world: given, else torch.distributed's when it is
    initialised, else RANK and WORLD_SIZE, else 0 and 1."""
    if rank is None or world is None:
        d = torch.distributed
        if d.is_available() and d.is_initialized():
            r0, w0 = d.get_rank(), d.get_world_size()
        else:
            r0 = int(os.environ.get("RANK", "0") or 0)
            w0 = int(os.environ.get("WORLD_SIZE", "1") or 1)
        rank = r0 if rank is None else rank
        world = w0 if world is None else world
    rank, world = int(rank), int(world)
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank {rank} of world {world}: need 0 <= rank "
                         "< world")
    return rank, world


def _is_index(src):
    if not isinstance(src, (str, os.PathLike)) or os.fspath(src) == "-":
        return False
    try:
        with open(src, "rb") as f:
            return f.read(len(_split.MAGIC)) == _split.MAGIC.encode()
    except OSError:
        return False


# rv-decode's options that take a value, and those that do not; the rest
# (--shard, --index, -o, operands) are RvDataset's to set, and refused.
_DECODE_VALUE = {"--seed", "--epochs", "--limit", "--even", "--channels",
                 "--classes", "--class-level", "--max-pixels", "--max-side",
                 "--level", "-j", "--jobs", "--resume"}
_DECODE_FLAG = {"--shuffle", "--encoded", "--strict", "-v", "--verbose"}


def _decode_opts(decode):
    """rv-decode's options as a list, and the ones the split depends on:
    {seed, epochs, shuffle, limit, even}."""
    args = shlex.split(decode) if isinstance(decode, str) else \
        [str(a) for a in decode]
    o = {"seed": 0, "epochs": 1, "shuffle": False, "limit": None,
         "even": None, "resume": None}
    i = 0
    while i < len(args):
        a = args[i]
        name, eq, val = a.partition("=")
        if name in _DECODE_FLAG and not eq:
            o["shuffle"] |= name == "--shuffle"
            i += 1
            continue
        if name not in _DECODE_VALUE:
            raise ValueError(f"RvDataset: decode: '{a}': not an rv-decode "
                             "option RvDataset passes on (it sets --index "
                             "and --shard itself)")
        if not eq:
            if i + 1 == len(args):
                raise ValueError(f"RvDataset: decode: {a} needs a value")
            val = args[i + 1]
            i += 1
        i += 1
        key = name.lstrip("-")
        if key in ("seed", "epochs", "limit"):
            if not val.isdigit():
                raise ValueError(f"RvDataset: decode: {name} {val}: not "
                                 "a number")
            o[key] = int(val)
        elif key == "resume":
            _split.parse_resume(val)
            o["resume"] = val
        elif key == "even":
            if val not in ("pad", "drop", "none"):
                raise ValueError(f"RvDataset: decode: --even {val}: use "
                                 "pad, drop or none")
            o["even"] = val
    if o["even"] is None:  # equal steps on every rank, as --shard auto
        args += ["--even", "pad"]
        o["even"] = "pad"
    return args, o


def _is_file(src):
    if not isinstance(src, (str, os.PathLike)) or os.fspath(src) == "-":
        return False
    try:
        return stat.S_ISREG(os.stat(src).st_mode)
    except OSError:
        return True  # let the reader say what is wrong with it


class _Info:
    """What a file holds: kind ("batch", "sample" or None), epochs (data
    records per epoch), how ("metadata" or "index"), its index when one
    was made, and first, (offset, header) of its first data record."""

    def __init__(self, kind, epochs, how, index=None, first=None):
        self.kind, self.epochs, self.how = kind, epochs, how
        self.index, self.first = index, first


def _file_info(path, batch_size):
    """The file's _Info: from its metadata when it says the batches of
    every epoch (reading only its head), else from its index."""
    r = Reader(path, batch_size=batch_size, as_torch=False)
    try:
        sz = r._size()
        head = r._head
    finally:
        r.close()
    first = None
    if head is not None and head[1] == FIRST_DATA:
        first = (head[4], head[5])
        if head[2] == "sample" and batch_size is None:
            raise ValueError(f"{path}: the stream holds samples, not "
                             "batches: pipe it through rv-batch(1) or "
                             "pass batch_size")
    if sz is not None and sz.total is not None:
        if sz.kind == "sample":
            if sz.samples is not None and sz.first_samples is not None:
                return _Info("sample", [sz.first_samples] +
                             [sz.samples] * (sz.epochs - 1) if sz.epochs
                             else [], "metadata", first=first)
        else:
            return _Info(sz.kind, sz.every(), "metadata", first=first)
    ix = FileIndex(path, first=first)
    kind = {1: "sample", 2: "batch"}.get(ix.data_kind)
    return _Info(kind, [n for _, n in ix.epochs], "index", ix, first)


def assign(nfiles, world, workers):
    """The parts of each slot: {(rank, worker): [Part, ...]} (see the
    module's docstring)."""
    slots = {(r, w): [] for r in range(world) for w in range(workers)}
    q = nfiles // world
    for r in range(world):
        mine = [f for f in range(q * world) if f % world == r]
        whole = len(mine) // workers * workers
        for j, f in enumerate(mine):
            if j < whole:
                slots[(r, j % workers)].append(Part(f))
            else:
                for w in range(workers):
                    slots[(r, w)].append(Part(f, 1, 0, workers, w))
        for f in range(q * world, nfiles):
            for w in range(workers):
                slots[(r, w)].append(Part(f, world, r, workers, w))
    return slots


def _spread(counts, total):
    """Quotas summing to total, from counts, padding the workers that
    have batches (the fewest first) or cutting the most."""
    q = list(counts)
    diff = total - sum(q)
    can = [w for w, c in enumerate(counts) if c > 0]
    while diff > 0 and can:
        w = min(can, key=lambda k: (q[k], k))
        q[w] += 1
        diff -= 1
    while diff < 0:
        w = max(range(len(q)), key=lambda k: (q[k], k))
        q[w] -= 1
        diff += 1
    return q


def round_robin_taken(counts, k):
    """How many of each worker's batches a DataLoader has yielded after
    k in all, and the worker it takes the next from: it takes one from
    each worker in turn, leaving out those that have ended."""
    left, taken = list(counts), [0] * len(counts)
    last = -1
    while k > 0:
        alive = [w for w, c in enumerate(left) if c > 0]
        if not alive:
            break
        rounds = min(min(left[w] for w in alive), k // len(alive))
        if rounds == 0:
            for w in alive[:k]:
                taken[w] += 1
                left[w] -= 1
            last = alive[k - 1]
            break
        for w in alive:
            taken[w] += rounds
            left[w] -= rounds
        last = alive[-1]
        k -= rounds * len(alive)
    n = len(counts)
    nxt = next((w % n for w in range(last + 1, last + 1 + n)
                if left[w % n] > 0), 0)
    return taken, nxt


class Plan:
    """Every slot's parts, batches per part and epoch, natural count and
    quota (what it yields in a pass), for one number of workers."""

    def __init__(self, infos, world, workers, batch_size, drop_last):
        self.world, self.workers = world, workers
        self.parts = assign(len(infos), world, workers)
        self.counts, self.natural = {}, {}
        for slot, parts in self.parts.items():
            cs = []
            for p in parts:
                info = infos[p.file]
                unit = batch_size if info.kind == "sample" else 1
                cs.append(p.counts(info.epochs, unit) if info.kind else
                          [0] * len(info.epochs))
            self.counts[slot] = cs
            self.natural[slot] = sum(sum(c) for c in cs)
        self.rank_natural = [sum(self.natural[(r, w)]
                                 for w in range(workers))
                             for r in range(world)]
        if world > 1:
            pick = min if drop_last else max
            self.per_rank = pick(self.rank_natural)
            self.quota = {}
            for r in range(world):
                q = _spread([self.natural[(r, w)] for w in range(workers)],
                            self.per_rank)
                for w in range(workers):
                    self.quota[(r, w)] = q[w]
        else:
            self.per_rank = self.rank_natural[0]
            self.quota = None  # one rank: each slot yields what it has

    def slot_count(self, r, w):
        return self.quota[(r, w)] if self.quota else self.natural[(r, w)]


class RvDataset(torch.utils.data.IterableDataset):
    """Yields (images, labels, ids, weights) per batch, or Batch objects
    with raw=True.  Use with DataLoader(RvDataset(...), batch_size=None).

    src: a path, a list of paths (shards: split over ranks and workers,
    see the module's docstring), "-" for stdin, a file object or bytes.
    batch_size: collate sample records (as Reader).
    rank, world: this process's rank and the number of ranks; default
    torch.distributed's when initialised, else RANK and WORLD_SIZE, else
    0 and 1.
    drop_last: with several ranks, every rank yields the same number of
    batches: the most any has, the others repeating their first ones
    (False, as DistributedSampler), or the fewest (True).
    skip_batches: this rank's DataLoader has already yielded this many
    batches of a pass (a job restarted at that step): each worker starts
    after its share of them, reckoned as DataLoader takes batches from
    its workers, one from each in turn.  Every pass of the dataset
    skips them; set the attribute to 0 for the next.
    pin_memory: batches in page-locked memory, in the main process only
    (num_workers=0); with workers, give DataLoader pin_memory=True.
    prefetch: Reader's, per file a slot reads.

    len() is the batches this rank yields in a pass, less skip_batches:
    exact for files (from their metadata, else from their index); for a
    stream as Reader's len().
    """

    def __init__(self, src="-", batch_size=None, raw=False, *, rank=None,
                 world=None, drop_last=False, skip_batches=0,
                 pin_memory=False, prefetch=0, decode=(), pipeline=None):
        super().__init__()
        self.src, self.batch_size, self.raw = src, batch_size, raw
        self.rank, self.world = _rank_world(rank, world)
        self.drop_last = drop_last
        if not isinstance(skip_batches, int) or skip_batches < 0:
            raise ValueError("skip_batches must be a non-negative int")
        self.skip_batches = skip_batches
        self.pin_memory, self.prefetch = pin_memory, prefetch
        self.index = None
        if _is_index(src):
            self.index = _split.Index(src)
            self.decode, self._split_opts = _decode_opts(decode)
            self.pipeline = pipeline
            if pipeline is None and batch_size is None:
                raise ValueError("RvDataset: an index needs batch_size, or "
                                 "a pipeline that ends in rv-batch")
            if skip_batches:
                raise ValueError("RvDataset: skip_batches with an index: "
                                 "give decode='--resume E:N:K' (the "
                                 "epoch, the slots of the job before and "
                                 "the samples each had served), which "
                                 "any number of ranks and workers can "
                                 "resume from")
            self.files = None
            self._stream_reader = None
            self._plans, self._infos = {}, None
            return
        if decode or pipeline is not None:
            raise ValueError("RvDataset: decode and pipeline go with a "
                             "dataset index (rv-index(5)) only")
        if isinstance(src, (list, tuple)):
            files = [os.fspath(p) for p in src]
            if not files:
                raise ValueError("RvDataset: an empty list of files")
            bad = [p for p in files if not _is_file(p)]
            if bad:
                raise ValueError(f"RvDataset: {bad[0]} is not a regular "
                                 "file: give a list of files, or one "
                                 "stream")
        elif _is_file(src):
            files = [os.fspath(src)]
        else:
            files = None
        self.files = files
        self._stream_reader = None  # len() of a stream reads its head
        self._plans = {}
        self._infos = None
        if files is not None:
            self._infos = [_file_info(p, batch_size) for p in files]

    def __getstate__(self):
        st = self.__dict__.copy()
        st["_stream_reader"] = None
        return st

    # -- planning
    def plan(self, workers=1):
        """The Plan for this many DataLoader workers per rank."""
        p = self._plans.get(workers)
        if p is None:
            p = self._plans[workers] = Plan(
                self._infos, self.world, workers, self.batch_size,
                self.drop_last)
        return p

    def _index(self, f):
        info = self._infos[f]
        if info.index is None:
            info.index = FileIndex(self.files[f], first=info.first)
        return info.index

    # -- a dataset index
    def _slot(self, worker, workers):
        return self.rank * workers + worker, self.world * workers

    def _segments(self, worker, workers, epoch):
        """A slot's runs of samples in an epoch, and the epoch's total."""
        s, n = self._slot(worker, workers)
        o = self._split_opts
        if o["resume"] and _split.parse_resume(o["resume"])[0] == epoch:
            return _split.resumed_segments(
                self.index, s, n, o["resume"], o["even"], o["seed"],
                o["shuffle"], o["limit"])
        segs = _split.segments(self.index, s, n, epoch, o["seed"],
                               o["shuffle"], o["limit"])
        return segs, sum(c for _, c in _split.epoch_order(
            self.index, epoch, o["seed"], o["shuffle"], o["limit"]))

    def slot_shards(self, worker=0, workers=1, epoch=0):
        """The shards (paths) DataLoader worker `worker` of `workers` of
        this rank reads in an epoch (an index only)."""
        segs, _ = self._segments(worker, workers, epoch)
        return list(dict.fromkeys(self.index.shards[k][0]
                                  for k, _, _ in segs))

    def slot_samples(self, worker=0, workers=1, epoch=0):
        """The samples that worker's rv-decode writes in an epoch (an
        index only): its share, or with --even pad (the default) or drop
        every slot's count."""
        segs, total = self._segments(worker, workers, epoch)
        t = _split.target(total, self._slot(worker, workers)[1],
                          self._split_opts["even"])
        return sum(c for _, _, c in segs) if t is None else t

    def slot_command(self, worker=0, workers=1):
        """The pipeline a worker runs, as argv."""
        s, n = self._slot(worker, workers)
        cmd = [_programs.check("rv-decode"), "-q", "--index",
               self.index.path, "--shard", f"{s}/{n}"] + self.decode
        if self.pipeline is None:
            return cmd
        return ["bash", "-o", "pipefail", "-c",
                '"$@" | ' + self.pipeline, "rv-decode"] + cmd

    def _index_batches(self, worker, workers, pin):
        s, n = self._slot(worker, workers)
        if n > len(self.index.shards):
            raise ValueError(f"RvDataset: '{self.index.path}': "
                             f"{len(self.index.shards)} shards, fewer than "
                             f"the {n} slots ({self.world} ranks x "
                             f"{workers} workers): fewer workers, or an "
                             "index over smaller shards")
        argv = self.slot_command(worker, workers)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                env=_programs.env(), start_new_session=True)
        try:
            with Reader(proc.stdout, self.batch_size,
                        prefetch=self.prefetch, pin_memory=pin) as r:
                yield from r
            rc = proc.wait()
            if rc != 0:
                raise RuntimeError(
                    f"RvDataset: rank {self.rank} worker {worker}: its "
                    f"pipeline exited {rc}: {shlex.join(argv)}")
        finally:
            if proc.poll() is None:  # the loop stopped early
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
            proc.stdout.close()

    # -- length
    def __len__(self):
        if self.index is not None:
            raise TypeError("RvDataset over an index: its pipeline decides "
                            "the batches (slot_samples() gives the "
                            "samples)")
        if self.files is None:
            if self._stream_reader is None:
                self._stream_reader = self._open_stream()
            return len(self._stream_reader)
        return max(0, self.plan(1).per_rank - self.skip_batches)

    def __bool__(self):
        return True

    def length_hint(self):
        if self.index is not None:
            return None
        if self.files is not None:
            return len(self)
        if self._stream_reader is None:
            self._stream_reader = self._open_stream()
        return self._stream_reader.length_hint()

    def __length_hint__(self):
        n = self.length_hint()
        return NotImplemented if n is None else n

    # -- iteration
    def _pinned(self, in_worker):
        if not self.pin_memory:
            return False
        if in_worker:
            _staging.warn_once(
                "pin-worker", "rvstream: RvDataset(pin_memory=True) in a "
                "DataLoader worker: its tensors reach the main process "
                "through shared memory, which is not pinned; give "
                "DataLoader pin_memory=True instead")
            return False
        return True

    def _open_stream(self, skip=None, pin=False):
        return Reader(self.src, self.batch_size, prefetch=self.prefetch,
                      pin_memory=pin,
                      skip_batches=self.skip_batches if skip is None
                      else skip)

    def _out(self, b):
        return b if self.raw else (b.images, b.labels, b.ids, b.weights)

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        k, n = (info.id, info.num_workers) if info else (0, 1)
        if self.index is not None:
            for b in self._index_batches(k, n,
                                         self._pinned(info is not None)):
                yield self._out(b)
            return
        if self.files is None:
            if n > 1:
                raise RuntimeError(
                    "RvDataset: a pipe or file object has one reader: use "
                    "num_workers=0 (rv's own programs do the parallel "
                    "work)")
            r, self._stream_reader = self._stream_reader, None
            if r is None:
                r = self._open_stream(pin=self._pinned(False))
            with r:
                for b in r:
                    yield self._out(b)
            return
        for b in self.slot_batches(k, n, pin=self._pinned(info is not None)):
            yield self._out(b)

    def slot_batches(self, worker=0, workers=1, pin=False):
        """The batches DataLoader worker `worker` of `workers` yields
        (files only): those of slot (self.rank, worker), or after a
        restart (skip_batches) of the slot whose turn it takes."""
        plan = self.plan(workers)
        every = [plan.slot_count(self.rank, w) for w in range(workers)]
        taken, nxt = round_robin_taken(every, self.skip_batches)
        # a DataLoader takes from its worker 0 first: after a restart,
        # worker k plays the part of the worker k places after the one
        # the batch after skip_batches would have come from
        worker = (worker + nxt) % workers
        slot = (self.rank, worker)
        counts = plan.counts[slot]
        natural = plan.natural[slot]
        quota = every[worker]
        pos = taken[worker]
        if plan.quota is None:  # one rank: what the files hold
            yield from self._natural(slot, plan.parts[slot], counts, pos,
                                     pin)
            return
        start = pos % natural if natural else 0
        while pos < quota:
            if not natural:
                raise RuntimeError(
                    f"RvDataset: rank {self.rank} has no batches to pad "
                    f"its {quota} with (worker {worker})")
            got = 0
            gen = self._natural(slot, plan.parts[slot], counts, start, pin)
            try:
                for b in gen:
                    if pos >= quota:
                        break
                    yield b
                    pos += 1
                    got += 1
            finally:
                gen.close()
            if pos >= quota:
                break
            if got + start != natural:
                _staging.warn_once(
                    ("count", self.rank, worker), f"rvstream: rank "
                    f"{self.rank} worker {worker}: {got + start} batches "
                    f"read, the files' metadata said {natural}: the "
                    "slot pads or cuts to its share", 2)
            if got == 0 and start == 0:
                raise RuntimeError(f"RvDataset: rank {self.rank} worker "
                                   f"{worker} read no batches to pad with")
            start = 0

    def _natural(self, slot, parts, counts, start, pin):
        """The slot's batches from the start-th on: its parts epoch by
        epoch, each from where start falls in it."""
        skip = [0] * len(parts)
        left = start
        for e in range(max((len(c) for c in counts), default=0)):
            for p, cs in enumerate(counts):
                if e < len(cs) and left:
                    t = min(left, cs[e])
                    skip[p] += t
                    left -= t
        readers, gens = [], []
        try:
            for p, part in enumerate(parts):
                path = self.files[part.file]
                if part.whole:
                    src = path
                else:
                    info = self._infos[part.file]
                    unit = self.batch_size if info.kind == "sample" else 1
                    src = RangesSource(path, self._index(part.file).ranges(
                        part, unit))
                readers.append(Reader(src, self.batch_size,
                                      prefetch=self.prefetch,
                                      pin_memory=pin,
                                      skip_batches=skip[p]))
            gens = [_epochs_of(r) for r in readers]
            live = list(range(len(gens)))
            while live:
                nxt = []
                for p in live:
                    for item in gens[p]:
                        if item is _EPOCH:
                            nxt.append(p)
                            break
                        yield item
                live = nxt
        finally:
            for g in gens:
                g.close()  # stops a prefetching thread
            for r in readers:
                r.close()


def _epochs_of(reader):
    """A reader's batches, with _EPOCH after each epoch (skipped or
    empty ones too)."""
    for ev in reader.events():
        if isinstance(ev, Batch):
            yield ev
        elif isinstance(ev, EpochEnd):
            yield _EPOCH
