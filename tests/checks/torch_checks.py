"""Checks of python/rvstream for tests/bats/torch.bats, one per subcommand.

Each reads what rv's programs wrote and checks it against an independent
source (the IDX files, a struct parse of `zstd -dc`, autograd), prints
one line saying what it checked, and exits 1 with a message at the first
difference.  usage: python3 tests/checks/torch_checks.py CHECK ARGS...
"""

import gzip
import os
import random
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, os.pardir, "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import rvstream  # noqa: E402


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def idx(images_gz, labels_gz):
    img = gzip.open(images_gz).read()
    lab = gzip.open(labels_gz).read()
    return img, lab


def check_idx(src, images_gz, labels_gz, epochs, limit):
    """Every batch's ids, labels and pixels equal the IDX files; weights
    are 1; each epoch holds ids 0..limit-1 once."""
    img, lab = idx(images_gz, labels_gz)
    epochs, limit = int(epochs), int(limit)
    seen = {}
    nb = 0
    with rvstream.Reader(src) as r:
        for b in r:
            nb += 1
            if b.images.dtype != torch.uint8 or b.labels.dtype != torch.int64:
                fail(f"dtypes {b.images.dtype} {b.labels.dtype}")
            if not torch.all(b.weights == 1):
                fail("weights not 1")
            for j in range(len(b)):
                i = int(b.ids[j])
                want = np.frombuffer(img, np.uint8, 784, 16 + 784 * i)
                if not np.array_equal(b.images[j].numpy().reshape(-1), want):
                    fail(f"pixels of sample {i} differ from the IDX file")
                if int(b.labels[j]) != lab[8 + i]:
                    fail(f"label of sample {i} differs")
                seen.setdefault(b.epoch, []).append(i)
        ends = [(e.epoch, e.count) for e in r.epoch_ends]
    if sorted(seen) != list(range(epochs)):
        fail(f"epochs {sorted(seen)}")
    for e, ids in seen.items():
        if sorted(ids) != list(range(limit)):
            fail(f"epoch {e} ids are not 0..{limit - 1} once each")
    if ends != [(e, limit) for e in range(epochs)]:
        fail(f"epoch ends {ends}")
    print(f"idx ok: {nb} batches, {epochs} epochs of {limit}")


def raw_batches(raw):
    """Batches parsed with struct from `zstd -dc` output, independently
    of rvstream: (epoch, ids, labels, weights, pixels) each."""
    hdr = struct.Struct("<IHHBBHIQiIIIIIffQ")
    off, out = 0, []
    while off < len(raw):
        h = hdr.unpack_from(raw, off)
        hl, kind, plen = h[2], h[3], h[16]
        p = raw[off + hl:off + hl + plen]
        if kind == 2:
            n = h[12]
            out.append((h[6], struct.unpack_from(f"<{n}Q", p, 0),
                        struct.unpack_from(f"<{n}i", p, 8 * n),
                        struct.unpack_from(f"<{n}f", p, 12 * n),
                        bytes(p[16 * n:])))
        off += hl + plen
    return out


def check_raw(src, rawfile):
    """rvstream's batches equal a struct parse of the same records."""
    want = raw_batches(open(rawfile, "rb").read())
    got = list(rvstream.Reader(src))
    if len(got) != len(want):
        fail(f"{len(got)} batches, raw parse has {len(want)}")
    nw = 0
    for b, (e, ids, labels, weights, px) in zip(got, want):
        if b.epoch != e or tuple(b.ids.tolist()) != ids or \
                tuple(b.labels.tolist()) != labels or \
                tuple(b.weights.tolist()) != weights or \
                b.images.numpy().tobytes() != px:
            fail(f"a batch of epoch {e} differs from the raw parse")
        nw += sum(w != 1 for w in weights)
    print(f"raw ok: {len(got)} batches, {nw} weights not 1")


def check_collate(samples, batched, bs):
    """Sample records collated by rvstream equal rv-batch's batches."""
    a = list(rvstream.Reader(samples, batch_size=int(bs)))
    b = list(rvstream.Reader(batched))
    if len(a) != len(b):
        fail(f"{len(a)} collated batches, rv-batch wrote {len(b)}")
    for x, y in zip(a, b):
        for f in ("ids", "labels", "weights", "images"):
            if not torch.equal(getattr(x, f), getattr(y, f)):
                fail(f"{f} differ in a batch of epoch {x.epoch}")
        if x.epoch != y.epoch or x.flags != y.flags:
            fail("epoch or flags differ")
    print(f"collate ok: {len(a)} batches")


def check_epochs(src, prefetch):
    """epochs() gives each epoch's batches, whatever the caller skips;
    prefetching changes nothing."""
    r = rvstream.Reader(src, prefetch=int(prefetch))
    counts = []
    for k, ep in enumerate(r.epochs()):
        n = 0
        for i, b in enumerate(ep):
            if b.epoch != ep.epoch:
                fail(f"batch of epoch {b.epoch} in epoch {ep.epoch}")
            n += len(b)
            if k == 1 and i == 2:
                break  # leave the rest of epoch 1 unread
        counts.append((ep.epoch, n))
    plain = [(b.epoch, len(b)) for b in rvstream.Reader(src)]
    if [e for e, _ in counts] != sorted({e for e, _ in plain}):
        fail(f"epochs {counts}")
    print("epochs ok: " + " ".join(f"{e}:{n}" for e, n in counts))


def check_keep(src):
    """Batches a caller keeps are never overwritten by later ones (the
    reader reuses only buffers nothing references): keeping every batch,
    every other one, or none, gives the same pixels."""
    import hashlib

    def digest(b):
        return hashlib.sha1(b.images.numpy().tobytes()).hexdigest()

    once = [digest(b) for b in rvstream.Reader(src)]  # none kept
    kept = list(rvstream.Reader(src))
    half = [b for i, b in enumerate(rvstream.Reader(src)) if i % 2 == 0]
    views = [b.images[0] for b in rvstream.Reader(src)]  # a view only
    if [digest(b) for b in kept] != once or \
            [digest(b) for b in half] != once[::2]:
        fail("a kept batch changed")
    for v, b in zip(views, kept):
        if not torch.equal(v, b.images[0]):
            fail("a kept view changed")
    print(f"keep ok: {len(once)} batches")


def make_batch_record(images, ids, labels, weights, epoch=0):
    """An rv batch record (header and payload), written independently of
    rvstream from rv-stream(5)."""
    n, h, w, c = images.shape
    payload = (np.asarray(ids, "<u8").tobytes() +
               np.asarray(labels, "<i4").tobytes() +
               np.asarray(weights, "<f4").tobytes() + images.tobytes())
    hdr = struct.pack("<IHHBBHIQiIIIIIffQ", 0x31525652, 1, 64, 2, 1, 0,
                      epoch, 0, -1, h, w, c, n, 0, 1.0, float("nan"),
                      len(payload))
    return hdr + payload


def first_block_type(frame):
    fhd = frame[4]
    single = fhd >> 5 & 1
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + \
        (single, 2, 4, 8)[fhd >> 6]
    return int.from_bytes(frame[pos:pos + 3], "little") >> 1 & 3


def check_blocks():
    """Frames of stored blocks (what rv writes to a pipe) are read
    straight into the payload (with python3-xxhash), and frames that mix
    stored and compressed blocks, in either order, fall back and read
    the same: the pixels equal the source, with the stored-block path on
    and off."""
    import zstandard
    rng = np.random.default_rng(7)
    noise = rng.integers(0, 256, (2, 256, 256, 3), dtype=np.uint8)
    flat = np.zeros((2, 256, 256, 3), np.uint8)
    epoch_end = struct.pack("<IHHBBHIQiIIIIIffQ", 0x31525652, 1, 64, 3, 0,
                            0, 0, 0, -1, 0, 0, 0, 4, 0, 1.0, float("nan"), 0)
    z = zstandard.ZstdCompressor(level=1, write_checksum=True,
                                 write_content_size=True)
    cases = {
        "noise first": np.concatenate([noise, flat]),
        "flat first": np.concatenate([flat, noise]),
    }
    for name, imgs in cases.items():
        rec = make_batch_record(imgs, [1, 2, 3, 4], [0, 1, 2, 3],
                                [1, 1, 1, 1])
        frame = z.compress(rec)
        want_first = 0 if name == "noise first" else 2
        if first_block_type(frame) != want_first:
            fail(f"{name}: zstd made a first block of type "
                 f"{first_block_type(frame)}")
        data = frame + z.compress(epoch_end)
        for direct in (True, False):
            r = rvstream.Reader(data)
            r._direct = direct and rvstream._stream.xxhash is not None
            got = list(r)
            if len(got) != 1 or not np.array_equal(got[0].images.numpy(),
                                                   imgs):
                fail(f"{name}, direct {direct}: pixels differ")
            if r.direct_records:
                fail(f"{name}: a mixed frame was read as stored")
    # stored frames (stdin): the direct path reads what zstd reads
    raw = sys.stdin.buffer.read()
    px, direct_n, n = [], [], 0
    for direct in (True, False):
        r = rvstream.Reader(raw)
        r._direct = direct and rvstream._stream.xxhash is not None
        px.append([b.images.numpy().tobytes() for b in r])
        direct_n.append(r.direct_records)
        n = r.records_read
    if px[0] != px[1]:
        fail("the stored-block path reads other pixels")
    if rvstream._stream.xxhash is not None and direct_n[0] != n:
        fail(f"{direct_n[0]} of {n} stored records read directly")
    print(f"blocks ok: mixed frames both ways, {len(px[0])} stored "
          f"batches, direct {direct_n[0]} of {n} records")


def read_all(data):
    n = 0
    for b in rvstream.Reader(data):
        n += len(b)
    return n


def check_truncations(src):
    """Every prefix of a stream reads whole or raises RvStreamError
    naming a byte offset; only prefixes ending after an epoch-end read."""
    data = open(src, "rb").read()
    full = read_all(data)
    ok = errs = 0
    for k in range(len(data)):
        try:
            n = read_all(data[:k])
        except rvstream.RvStreamError as e:
            msg = str(e)
            if " at byte " not in msg or "\n" in msg or \
                    not msg.startswith("<bytes>: record "):
                fail(f"prefix {k}: unclear message '{msg}'")
            errs += 1
            continue
        except Exception as e:  # anything else is a bug
            fail(f"prefix {k}: {type(e).__name__}: {e}")
        if n >= full and k < len(data):
            fail(f"prefix {k} read as much as the whole stream")
        ok += 1
    print(f"truncations ok: {len(data)} prefixes, {errs} errors, "
          f"{ok} whole shorter streams")


def check_corruptions(src, count):
    """Random byte flips raise RvStreamError or read; nothing else."""
    data = open(src, "rb").read()
    rng = random.Random(1)
    errs = 0
    for _ in range(int(count)):
        bad = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        try:
            read_all(bytes(bad))
        except rvstream.RvStreamError:
            errs += 1
        except Exception as e:
            fail(f"{type(e).__name__}: {e}")
    if errs < int(count) * 9 // 10:
        fail(f"only {errs} of {count} corruptions detected")
    print(f"corruptions ok: {errs} of {count} raised RvStreamError")


def check_error(src, *args):
    """Reading src raises RvStreamError: print its message."""
    kw = {}
    if args:
        kw["batch_size"] = int(args[0])
    try:
        read = 0
        for b in rvstream.Reader(src, **kw):
            read += len(b)
    except rvstream.RvStreamError as e:
        print(f"error: {e}")
        return
    fail(f"no error, {read} samples read")


def check_gradnorm():
    """last_layer_gradnorm equals the per-sample gradient norm of the
    last linear layer (weight and bias) by autograd."""
    torch.manual_seed(0)
    body = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU())
    head = torch.nn.Linear(16, 7)
    x = torch.randn(12, 20)
    y = torch.randint(0, 7, (12,))
    for ls in (0.0, 0.1):
        h = body(x)
        z = head(h)
        got = rvstream.last_layer_gradnorm(z, y, h, label_smoothing=ls)
        for i in range(len(x)):
            head.zero_grad()
            loss = torch.nn.functional.cross_entropy(
                head(body(x[i:i + 1])), y[i:i + 1], label_smoothing=ls)
            loss.backward()
            want = torch.sqrt(head.weight.grad.pow(2).sum() +
                              head.bias.grad.pow(2).sum())
            if abs(got[i].item() - want.item()) > 1e-5 * max(1, want):
                fail(f"sample {i} ls {ls}: {got[i].item()} vs "
                     f"{want.item()}")
    print("gradnorm ok: 12 samples, label smoothing 0 and 0.1")


def check_feedback_file(src, path):
    """Feedback for every sample of src, written to a file; the lines
    match rv-feedback(5)'s format."""
    n = 0
    with rvstream.FeedbackWriter(path) as fb:
        for step, b in enumerate(rvstream.Reader(src)):
            loss = torch.rand(len(b)) * 3
            loss[0] = 0.0
            gn = torch.rand(len(b)) * 1e-3
            fb.write(b.ids, b.epoch, step, loss, gn)
            n += len(b)
    if fb.written != n or fb.dropped or fb.queued:
        fail(f"{fb.written} written, {fb.dropped} dropped of {n}")
    import re
    pat = re.compile(rb"[0-9]+\t[0-9]+\t[0-9]+\t[0-9.e+-]+\t[0-9.e+-]+\n")
    lines = open(path, "rb").readlines()
    if len(lines) != n or not all(pat.fullmatch(ln) for ln in lines):
        fail("lines do not match rv-feedback(5)")
    print(f"feedback file ok: {n} lines")


def check_feedback_bad(path):
    """Values rv-feedback(5) forbids raise ValueError, and a call that
    raises queues none of its lines, not even those before the bad one."""
    fb = rvstream.FeedbackWriter(path)
    fb.write([1, 2], 0, 0, [0.5, 0.5], [1.0, 1.0])
    bad = [([1, 2, 3], 0, 1, [0.5, float("nan"), 0.5], [1.0, 1.0, 1.0],
            "sample 2: loss nan is not a finite non-negative number"),
           ([1, 2], 0, 1, [0.5, 0.5], [1.0, -1.0],
            "sample 2: gradnorm -1.0 is not a finite non-negative number"),
           ([1, 2], 0, 1, [0.5, 0.5], [1.0, 1e39],
            "sample 2: gradnorm 1e+39 is not a finite non-negative number"),
           ([1, 2], 1 << 32, 1, [0.5, 0.5], [1.0, 1.0],
            "epoch 4294967296 is out of range"),
           ([1, 2], 0, -1, [0.5, 0.5], [1.0, 1.0],
            "step -1 is out of range"),
           ([1, 2], 0, 1, [0.5], [1.0, 1.0],
            "2 ids, 1 losses and 2 gradnorms"),
           ([1, 2], [0], 1, [0.5, 0.5], [1.0, 1.0], "2 ids and 1 epochs")]
    for ids, ep, step, lo, gn, want in bad:
        try:
            fb.write(ids, ep, step, lo, gn)
            fail(f"no error for '{want}'")
        except ValueError as e:
            if not str(e).startswith(want):
                fail(f"'{e}', not '{want}'")
    fb.close()
    got = open(path, "rb").read()
    if got != b"1\t0\t0\t0.5\t1\n2\t0\t0\t0.5\t1\n" or \
            fb.written != 2 or fb.dropped:
        fail(f"{fb.written} written, {fb.dropped} dropped: {got!r}")
    print(f"bad feedback ok: {len(bad)} refused, nothing of them written")


def check_feedback_noreader(fifo):
    """With no reader, write() never blocks: the queue keeps the newest
    lines and counts the dropped."""
    fb = rvstream.FeedbackWriter(fifo, queue_lines=1000)
    t = time.monotonic()
    ids = torch.arange(100)
    for step in range(1000):
        fb.write(ids, 0, step, torch.ones(100), torch.ones(100))
    dt = time.monotonic() - t
    if fb.written or fb.queued != 1000 or fb.dropped != 99000:
        fail(f"{fb.written} written, {fb.queued} queued, "
             f"{fb.dropped} dropped")
    t = time.monotonic()
    fb.close(timeout=0.2)
    dt2 = time.monotonic() - t
    if fb.dropped != 100000 or dt2 > 2:
        fail(f"close: {fb.dropped} dropped after {dt2:.2f} s")
    print(f"no reader ok: 100000 lines in {dt:.2f} s, none blocked")


def check_feedback_fifo(fifo, n):
    """A reader (cat) on the FIFO gets whole lines, in order, for every
    line written; the writer flushes what the pipe would not take."""
    n = int(n)
    with rvstream.FeedbackWriter(fifo) as fb:
        deadline = time.monotonic() + 10
        while fb._fd is None and time.monotonic() < deadline:
            fb.flush(0.05)  # wait for the reader to open
        for step in range(n // 100):
            fb.write(torch.arange(step * 100, step * 100 + 100), 3, step,
                     torch.full((100,), 0.5), torch.full((100,), 2.0))
        fb.flush(10)
    if fb.written != n:
        fail(f"{fb.written} of {n} written, {fb.dropped} dropped")
    print(f"fifo writer ok: {n} lines")


def check_dataset(src):
    """RvDataset in a DataLoader yields the Reader's batches; workers
    are refused on stdin."""
    dl = torch.utils.data.DataLoader(rvstream.RvDataset(src),
                                     batch_size=None)
    a = [(x, y, i, w) for x, y, i, w in dl]
    b = list(rvstream.Reader(src))
    if len(a) != len(b) or not all(
            torch.equal(x, bb.images) and torch.equal(i, bb.ids)
            for (x, _, i, _), bb in zip(a, b)):
        fail("DataLoader batches differ from the Reader's")
    dl2 = torch.utils.data.DataLoader(rvstream.RvDataset(src),
                                      batch_size=None, num_workers=2)
    c = sorted(int(i[0]) * 1000 + len(i) for _, _, i, _ in dl2)
    if c != sorted(int(bb.ids[0]) * 1000 + len(bb) for bb in b):
        fail("two workers do not split the batches")
    try:
        list(torch.utils.data.DataLoader(rvstream.RvDataset("-"),
                                         batch_size=None, num_workers=2))
        fail("workers on stdin were not refused")
    except RuntimeError as e:
        if "num_workers=0" not in str(e):
            fail(f"unclear: {e}")
    print(f"dataset ok: {len(a)} batches, 2 workers split them")


def _decode_ids(index, shard, decode):
    """{epoch: sorted ids} of rv-decode --index INDEX --shard SHARD."""
    import subprocess
    rv = os.path.join(os.environ["RV_BIN"], "rv-decode")
    out = subprocess.run([rv, "-q", "--index", index, "--shard", shard,
                          *decode.split(), "--level", "0"],
                         capture_output=True, check=True).stdout
    got = {}
    for rec in rvstream.Reader(out, batch_size=1).records():
        if isinstance(rec, rvstream.Sample):
            got.setdefault(rec.epoch, []).append(rec.id)
    return {e: sorted(v) for e, v in got.items()}


def check_index(index, world, workers, decode):
    """RvDataset over an index: each rank's batches, read by `workers`
    DataLoader workers, hold the samples rv-decode --shard rank/world
    gives it, epoch by epoch; each worker's are rv-decode's for its slot
    (rank * workers + worker of world * workers), and the Python rule
    (slot_shards, slot_samples) names that slot's shards and count."""
    from rvstream import _split
    world, workers = int(world), int(workers)
    ix = _split.Index(index)
    seen, batches = [], 0
    for r in range(world):
        ds = rvstream.RvDataset(index, batch_size=8, rank=r, world=world,
                                decode=decode, raw=True)
        got = {}
        for b in torch.utils.data.DataLoader(ds, batch_size=None,
                                             num_workers=workers):
            got.setdefault(b.epoch, []).extend(b.ids.tolist())
            batches += 1
        # the same samples; and, without padding (which repeats a
        # slot's first ones, so W slots repeat more than one rank), as
        # many of each
        dec = " ".join(ds.decode)  # with RvDataset's --even pad
        want = _decode_ids(index, f"{r}/{world}", dec)
        same = ({e: sorted(v) for e, v in got.items()} == want
                if "--even none" in dec else
                {e: set(v) for e, v in got.items()} ==
                {e: set(v) for e, v in want.items()})
        if not same:
            fail(f"rank {r}: RvDataset's samples are not rv-decode "
                 f"--shard {r}/{world}'s")
        for w in range(workers):
            s, n = r * workers + w, world * workers
            slot = _decode_ids(index, f"{s}/{n}", dec)
            for e, ids in slot.items():
                if len(ids) != ds.slot_samples(w, workers, e):
                    fail(f"slot {s}/{n} epoch {e}: {len(ids)} samples, "
                         f"slot_samples says {ds.slot_samples(w, workers, e)}")
                paths = ds.slot_shards(w, workers, e)
                have = {k for k, (p, _) in enumerate(ix.shards)
                        if p in paths}
                mine = {k for k in range(len(ix.shards))
                        if any(ix.base[k] <= i < ix.base[k] +
                               ix.shards[k][1] for i in ids)}
                if have != mine:
                    fail(f"slot {s}/{n} epoch {e}: the rule names shards "
                         f"{sorted(have)}, rv-decode read {sorted(mine)}")
        seen.extend(i for v in got.values() for i in v)
    print(f"index ok: {world} ranks x {workers} workers, {batches} batches, "
          f"{len(seen)} samples, {len(set(seen))} distinct")


def check_float(src):
    """Batch.float() normalises as rv-train-gpu does: (x/255 - m) / s."""
    b = next(iter(rvstream.Reader(src)))
    x = b.float()
    want = (b.images.permute(0, 3, 1, 2).float() / 255 - 0.5) / 0.5
    if x.shape != want.shape or not torch.allclose(x, want, atol=1e-6):
        fail("float() differs")
    x = b.float(mean=0.25, std=0.125, channels_last=True)
    want = (b.images.permute(0, 3, 1, 2).float() / 255 - 0.25) / 0.125
    if not torch.allclose(x, want, atol=1e-5) or \
            not x.is_contiguous(memory_format=torch.channels_last):
        fail("float(mean, std, channels_last) differs")
    print(f"float ok: {tuple(x.shape)}")


CHECKS = {k[6:]: v for k, v in globals().items() if k.startswith("check_")}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in CHECKS:
        sys.exit(f"usage: torch_checks.py {'|'.join(CHECKS)} ARGS...")
    CHECKS[sys.argv[1]](*sys.argv[2:])
