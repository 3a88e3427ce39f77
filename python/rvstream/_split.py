"""The split rule of rv-decode --shard, in Python, from a dataset index.

rv-index(5) lists a dataset's shards with their sample counts.
rv-decode --index FILE --shard I/N lays the shards that hold samples end
to end, in the index's order or, with --shuffle, in an order drawn from
the seed and the epoch (rv's Philox generator, the same draws as the C
code), and takes samples floor(I T / N) to floor((I + 1) T / N) of the T
samples.  This module computes the same shares, so that a Python job
knows which shards each rank (and each DataLoader worker: slot
rank * workers + worker of world * workers) reads and how many samples it
gets, without reading a shard, and RvDataset asks rv-decode for exactly
that slot.  tests/bats/torch.bats checks the two against each other.
"""

import os

MAGIC = "rv-index\t1"
_M64 = (1 << 64) - 1
_M32 = (1 << 32) - 1
STAGE_DECODE_ORDER = 1  # lib/base/rng.h


class Index:
    """A parsed index: path, samples (T), and shards, a list of
    (path as resolved for opening, samples)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        with open(self.path, "rb") as f:
            text = f.read()
        try:
            lines = text.decode("utf-8", "surrogateescape").split("\n")
        except UnicodeDecodeError as e:  # pragma: no cover
            raise ValueError(f"{self.path}: {e}") from None
        if not lines or lines[0] != MAGIC:
            raise ValueError(f"'{self.path}': not an rv index (its first "
                             "line is not 'rv-index<TAB>1')")
        if lines[-1] != "":
            raise ValueError(f"'{self.path}': cut short (no newline at "
                             "its end)")
        base = os.path.dirname(self.path)
        self.shards, head = [], {}
        for no, line in enumerate(lines[1:-1], 2):
            if line.startswith("#"):
                continue
            f = line.split("\t")
            if f[0] == "shard" and len(f) == 9:
                p = _unescape(f[8])
                if not os.path.isabs(p) and base:
                    p = os.path.join(base, p)
                p = os.path.normpath(p)  # as rv-decode resolves it
                self.shards.append((p, _num(f[1], self.path, no)))
            elif f[0] in ("samples", "shards", "classes") and len(f) == 2:
                head[f[0]] = _num(f[1], self.path, no)
            elif f[0] != "class":
                raise ValueError(f"'{self.path}': line {no}: not a line "
                                 "of an index")
        self.samples = sum(n for _, n in self.shards)
        if head.get("shards") != len(self.shards):
            raise ValueError(f"'{self.path}': {len(self.shards)} shard "
                             f"lines, but it says {head.get('shards')} "
                             "(cut short?)")
        if head.get("samples") != self.samples:
            raise ValueError(f"'{self.path}': its shards hold "
                             f"{self.samples} samples, but it says "
                             f"{head.get('samples')}")
        self.classes = head.get("classes", 0)
        base_id, self.base = 0, []
        for _, n in self.shards:
            self.base.append(base_id)
            base_id += n


def _num(s, path, no):
    if not s.isdigit():
        raise ValueError(f"'{path}': line {no}: '{s}' is not a number")
    return int(s)


def _unescape(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = s[i + 1:i + 2]
        if e == "x":
            out.append(chr(int(s[i + 2:i + 4], 16)))
            i += 4
            continue
        out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}[e])
        i += 2
    return "".join(out)


# -- rv's generator (lib/base/rng.c): Philox4x32-10, keyed by splitmix64

def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _philox(k0, k1, c0, c1, c2, c3):
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & _M32,
                          (p0 >> 32) ^ c3 ^ k1, p0 & _M32)
        k0 = (k0 + 0x9E3779B9) & _M32
        k1 = (k1 + 0xBB67AE85) & _M32
    return (c0, c1, c2, c3)


class Rng:
    """rv_rng: the stream of (seed, stage, op, epoch, id)."""

    def __init__(self, seed, stage, op, epoch, ident):
        k = _splitmix64(seed ^ _splitmix64((stage << 32 | op) & _M64))
        self.key = (k & _M32, k >> 32)
        self.ctr = [0, epoch & _M32, ident & _M32, (ident >> 32) & _M32]
        self.out, self.used = (), 4

    def u32(self):
        if self.used == 4:
            self.out = _philox(*self.key, *self.ctr)
            self.ctr[0] = (self.ctr[0] + 1) & _M32
            self.used = 0
        self.used += 1
        return self.out[self.used - 1]

    def u64(self):
        hi = self.u32()
        return hi << 32 | self.u32()

    def below(self, n):
        if n == 0:
            return 0
        m = self.u64() * n
        if m & _M64 < n:
            t = (-n) % n
            while m & _M64 < t:
                m = self.u64() * n
        return m >> 64

    def shuffle(self, v):
        for i in range(len(v), 1, -1):
            j = self.below(i)
            v[i - 1], v[j] = v[j], v[i - 1]
        return v


# -- the rule (lib/src/shard.c, cmd/rv-decode.c)

def share(total, r, n):
    """Rank r of n's samples [start, end) of total."""
    q, rem = divmod(total, n)
    return q * r + rem * r // n, q * (r + 1) + rem * (r + 1) // n


def epoch_order(index, epoch=0, seed=0, shuffle=False, limit=None):
    """The shards of an epoch in the order they are laid end to end:
    (shard number, samples used) of those with samples (--limit cuts the
    listing)."""
    counts = []
    for k, (_, n) in enumerate(index.shards):
        b = index.base[k]
        if limit is not None:
            n = max(0, min(n, limit - b))
        counts.append(n)
    order = [k for k, n in enumerate(counts) if n > 0]
    if shuffle:
        Rng(seed, STAGE_DECODE_ORDER, 1, epoch, 0).shuffle(order)
    return [(k, counts[k]) for k in order]


def segments(index, r, n, epoch=0, seed=0, shuffle=False, limit=None):
    """Shard r of n of an epoch: [(shard number, first, count)], in the
    order rv-decode reads them.  Raises ValueError where rv-decode
    refuses the index (fewer shards with samples than n)."""
    order = epoch_order(index, epoch, seed, shuffle, limit)
    if len(order) < n:
        raise ValueError(f"'{index.path}': {len(order)} shards, fewer "
                         f"than the {n} ranks: rebuild the index over "
                         "smaller shards")
    total = sum(c for _, c in order)
    start, end = share(total, r, n)
    out, at = [], 0
    for k, c in order:
        if at >= end:
            break
        lo, hi = max(start - at, 0), min(end - at, c)
        if lo < hi:
            out.append((k, lo, hi - lo))
        at += c
    return out


def slot_ids(index, r, n, epoch=0, seed=0, shuffle=False, limit=None):
    """The sample ids shard r of n holds in an epoch, as a set (its order
    within the shard is rv-decode's)."""
    ids = set()
    for k, first, count in segments(index, r, n, epoch, seed, shuffle,
                                     limit):
        b = index.base[k] + first
        ids.update(range(b, b + count))
    return ids


def target(total, n, even):
    """Samples an epoch of each of n shards holds under --even: pad
    (ceil), drop (floor); None for none (each its own share)."""
    if n == 1 or even == "none":
        return None
    return -(-total // n) if even == "pad" else total // n


# -- elastic resume (rv-decode --resume, lib/src/shard.c rv_shard_served)

def parse_resume(spec):
    """'E:N:K' or 'E:N:K0,K1,...' -> (epoch, [K per rank of N]);
    'E:@FILE' -> (epoch, FILE), the file of the ids trained."""
    e, _, rest = spec.partition(":")
    if rest.startswith("@") and e.isdigit() and len(rest) > 1:
        return int(e), rest[1:]
    try:
        e, n, ks = spec.split(":")
        e, n = int(e), int(n)
        k = [int(x) for x in ks.split(",")]
    except ValueError:
        raise ValueError(f"--resume '{spec}': not of the form E:N:K") \
            from None
    if len(k) == 1:
        k = k * n
    if n < 1 or len(k) != n or e < 0 or min(k) < 0:
        raise ValueError(f"--resume '{spec}': {len(k)} counts for {n} "
                         "ranks: give one, or one a rank")
    return e, k


def served(total, ks, cut, seed, epoch, shuffle):
    """The positions of an epoch the stopped job's ranks had served: rank
    r of len(ks) its first ks[r] of its share, in its order (permuted by
    (seed, op 2, epoch, r) with shuffle), cut at `cut` (--even drop)."""
    n, out = len(ks), set()
    for r in range(n):
        start, end = share(total, r, n)
        keep = min(end - start, cut if cut is not None else end)
        k = min(ks[r], keep)
        if k <= 0 and keep == end - start:
            continue
        pos = list(range(start, end))
        if shuffle:
            Rng(seed, STAGE_DECODE_ORDER, 2, epoch, r).shuffle(pos)
        out.update(pos[:k])
        out.update(pos[keep:])  # --even drop left them out
    return out


def resumed_segments(index, r, n, resume, even="none", seed=0,
                     shuffle=False, limit=None):
    """Shard r of n of the epoch rv-decode --resume starts with:
    [(shard number, first, count)] runs of the samples not served."""
    epoch, ks = parse_resume(resume)
    order = epoch_order(index, epoch, seed, shuffle, limit)
    total = sum(c for _, c in order)
    if isinstance(ks, str):  # E:@FILE: the ids trained, wherever they lay
        with open(ks) as f:
            ids = {int(x) for x in (ln.strip() for ln in f)
                   if x and not x.startswith("#")}
        done, at = set(), 0
        for k, c in order:
            b = index.base[k]
            done.update(at + i for i in range(c) if b + i in ids)
            at += c
    else:
        cut = total // len(ks) if even == "drop" else None
        done = served(total, ks, cut, seed, epoch, shuffle)
    left = total - len(done)
    lo, hi = share(left, r, n)
    out, at, u = [], 0, 0
    for k, c in order:
        for i in range(c):
            if at + i in done:
                continue
            if lo <= u < hi:
                if out and out[-1][0] == k and out[-1][1] + out[-1][2] == i:
                    out[-1] = (k, out[-1][1], out[-1][2] + 1)
                else:
                    out.append((k, i, 1))
            u += 1
        at += c
    return out, left
