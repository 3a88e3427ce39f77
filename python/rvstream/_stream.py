"""Reading rv streams (rv-stream(5)): Zstandard frames of one record each.

The reader walks each frame's block headers to find where it ends, so an
error names the frame's byte offset in the compressed input, then
decompresses the frame straight into the buffer the tensors will view:
a batch's pixels are copied once, by the decompressor, and never again.
A frame of stored blocks, which is what rv writes to a pipe, does not
even go through the decompressor when python3-xxhash is there: its
blocks are read from the input into their place in that buffer, and the
frame's XXH64 checksum is checked here (_direct_body).
Every record is checked as rv's own reader checks it (magic, version,
kinds, shapes, sizes, frame boundaries, checksums) before any buffer is
sized from it, so a hostile stream raises RvStreamError, never a bigger
allocation than its bytes justify.
"""

import collections
import functools
import io
import math
import os
import queue
import stat
import struct
import sys
import threading

import numpy as np

try:
    import zstandard
except ImportError as e:  # pragma: no cover - depends on the machine
    raise ImportError(
        "rvstream needs python3-zstandard (Debian: apt-get install "
        "python3-zstandard; pip: pip install zstandard)") from e

try:
    import torch
except ImportError:  # numpy arrays instead of tensors
    torch = None

try:  # python3-xxhash: stored frames without a trip through zstd
    import xxhash
except ImportError:
    xxhash = None

from . import _staging
from ._length import FIRST_DATA, FIRST_END, NO_DATA, size_from_meta

HDR = struct.Struct("<IHHBBHIQiIIIIIffQ")
HDR_LEN = HDR.size  # 64
MAGIC = 0x31525652  # "RVR1"
ZMAGIC = 0xFD2FB528
SKIP_LO, SKIP_HI = 0x184D2A50, 0x184D2A5F
WINDOW_MAX = 1 << 24  # 16 MiB, as rv's reader
PAYLOAD_CAP = 2 << 30  # 2 GiB unless RV_MAX_RECORD says otherwise
BLOCK_MAX = 128 << 10
POOL_MAX = 8  # payload buffers kept for reuse

SAMPLE, BATCH, EPOCH_END, META = 1, 2, 3, 4
NONE, U8, JPEG, PNG = 0, 1, 2, 3
KIND_NAMES = {SAMPLE: "sample", BATCH: "batch", EPOCH_END: "epoch-end",
              META: "meta"}
DTYPE_NAMES = {NONE: "none", U8: "u8", JPEG: "jpeg", PNG: "png"}

FLAG_PARTIAL, FLAG_FINAL, FLAG_CACHED = 0x1, 0x2, 0x4
FLAG_SCORED, FLAG_REWEIGHTED = 0x8, 0x10


class RvStreamError(ValueError):
    """A stream that breaks rv-stream(5): truncated, corrupt or not one.

    name is the input's name, offset the byte offset in it of the frame
    (or field) at fault, record the index of the record from 0.
    """

    def __init__(self, name, offset, record, reason):
        where = f"{name}: record {record} at byte {offset}"
        super().__init__(f"{where}: {reason}")
        self.name, self.offset, self.record = name, offset, record
        self.reason = reason


def _parse_size(s):
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    s = s.strip()
    unit = s[-1:].lower() if s[-1:].isalpha() else ""
    num = s[:-1] if unit else s
    if unit not in mult or not num.isdigit():
        return None
    return int(num) * mult[unit]


def payload_cap():
    """The largest payload accepted: RV_MAX_RECORD if valid, else 2 GiB."""
    v = _parse_size(os.environ.get("RV_MAX_RECORD", "") or "x")
    return min(v, 1 << 48) if v else PAYLOAD_CAP


class Meta(dict):
    """A meta record: its key=value pairs (the reader merges them all)."""


class EpochEnd:
    """The end of an epoch: epoch, and count, the samples it held.
    skipped: the batches of it that skip_batches skipped (events())."""

    __slots__ = ("epoch", "count", "skipped")

    def __init__(self, epoch, count):
        self.epoch, self.count = epoch, count
        self.skipped = 0

    def __repr__(self):
        return f"EpochEnd(epoch={self.epoch}, count={self.count})"


class Sample:
    """One sample record.  pixels is an H x W x C u8 numpy array for a u8
    sample, or the encoded file's bytes for jpeg and png."""

    __slots__ = ("epoch", "id", "label", "weight", "score", "flags", "uses",
                 "dtype", "shape", "pixels")

    def __init__(self, h, payload):
        (_, _, _, _, self.dtype, self.flags, self.epoch, self.id, self.label,
         hh, ww, cc, _, self.uses, self.weight, self.score, _) = h
        self.shape = (hh, ww, cc)
        if self.dtype == U8:
            self.pixels = np.frombuffer(payload, np.uint8).reshape(hh, ww, cc)
        else:
            self.pixels = bytes(payload)

    def __repr__(self):
        return (f"Sample(epoch={self.epoch}, id={self.id}, "
                f"label={self.label}, shape={self.shape}, "
                f"dtype={DTYPE_NAMES[self.dtype]})")


class Batch:
    """N samples of one shape, as rv-batch(1) collates them.

    images   N x H x W x C, u8, a view of the decompressed record
    ids      N, the samples' dataset ids (int64 tensor: torch has no
             uint64; numpy keeps uint64)
    labels   N, int64 tensor (what cross_entropy wants; a small copy),
             int32 numpy array without torch
    weights  N, float32: 1, or 1/P(keep) under rv-score --reweight
    epoch    the epoch the samples belong to
    flags    the OR of the samples' flags (rv-stream(5))

    With the reader's pin_memory (and CUDA), all four tensors are in
    page-locked memory: .to(device, non_blocking=True) overlaps.
    """

    __slots__ = ("epoch", "flags", "ids", "labels", "weights", "images",
                 "_mean", "_std")

    def __init__(self, epoch, flags, n, shape, buf, mean, std, as_torch,
                 pinned=False):
        h, w, c = shape
        base = getattr(buf, "base", None)
        if as_torch and pinned and isinstance(base, torch.Tensor):
            # views of the pinned tensor itself, never from_numpy: the
            # caching host allocator must see the copies that read it
            # (see _staging)
            t = base
            ids = t[:8 * n].view(torch.int64)
            labels = _staging.pinned_empty(8 * n).view(torch.int64)
            labels.copy_(t[8 * n:12 * n].view(torch.int32))
            weights = t[12 * n:16 * n].view(torch.float32)
            images = t[16 * n:16 * n + n * h * w * c].view(n, h, w, c)
        else:
            ids = np.frombuffer(buf, "<u8", n, 0)
            labels = np.frombuffer(buf, "<i4", n, 8 * n)
            weights = np.frombuffer(buf, "<f4", n, 12 * n)
            images = np.frombuffer(buf, np.uint8, n * h * w * c, 16 * n)
            images = images.reshape(n, h, w, c)
            if as_torch:
                ids = torch.from_numpy(ids.view(np.int64))
                labels = torch.from_numpy(labels.astype(np.int64))
                weights = torch.from_numpy(weights)
                images = torch.from_numpy(images)
        self.epoch, self.flags = epoch, flags
        self.ids, self.labels, self.weights = ids, labels, weights
        self.images = images
        self._mean, self._std = mean, std

    def __len__(self):
        return len(self.ids)

    def __bool__(self):
        return True

    def __repr__(self):
        n, h, w, c = self.images.shape
        return f"Batch(epoch={self.epoch}, n={n}, shape={h}x{w}x{c})"

    def float(self, mean=None, std=None, device=None, channels_last=False,
              dtype=None, non_blocking=True):
        """The images as an N x C x H x W tensor of dtype (float32, or
        float16, bfloat16) on device, scaled to [0, 1] and normalised by
        (x - mean) / std per channel.

        mean and std default to the stream's `mean` and `std` metadata
        when it has both, else 0.5, as rv-train-gpu(1) does.  The u8 pixels move to the
        device first (a quarter of float32's bytes; non_blocking, which
        overlaps when they are pinned) and are converted there: on a GPU
        in one pass that reads the u8 and writes dtype, computing in
        float32 and rounding once; on the CPU float32 is computed in
        place in the result, another dtype through one float32
        temporary.  channels_last gives that memory format.

        Without torch (or for a reader with as_torch=False, when neither
        device nor a torch dtype is asked for) the result is a numpy
        array of dtype (a numpy float dtype, default float32), computed
        in float32; channels_last gives an N x C x H x W view of N x H x
        W x C memory.
        """
        x = self.images
        c = x.shape[3]
        mean = _per_channel(mean if mean is not None else self._mean, c)
        std = _per_channel(std if std is not None else self._std, c)
        torch_dtype = torch is not None and isinstance(dtype, torch.dtype)
        if isinstance(x, np.ndarray):
            if torch is None or (device is None and not torch_dtype):
                if device is not None:
                    raise RuntimeError("Batch.float(device=...) needs torch")
                return _float_numpy(x, mean, std, channels_last, dtype)
            x = torch.from_numpy(x)
        if dtype is None:
            dtype = torch.float32
        elif not torch_dtype:
            dtype = _torch_dtype(dtype)
        if not dtype.is_floating_point:
            raise ValueError(f"dtype {dtype}: use torch.float32, "
                             "torch.float16 or torch.bfloat16")
        if device is not None:
            x = x.to(device, non_blocking=non_blocking)
        return _normalise(x, mean, std, dtype, channels_last,
                          fused=x.device.type != "cpu")


_fused_ok = True  # the device's addcmul casts u8 in, dtype out


def _torch_dtype(dtype):
    """A numpy float dtype (or its name) as torch's."""
    try:
        return {"float32": torch.float32, "float16": torch.float16,
                "float64": torch.float64, "bfloat16": torch.bfloat16}[
                    np.dtype(dtype).name if dtype != "bfloat16" else dtype]
    except (TypeError, KeyError):
        raise ValueError(f"dtype {dtype}: use torch.float32, "
                         "torch.float16 or torch.bfloat16") from None


def _normalise(x, mean, std, dtype, channels_last, fused):
    """(x/255 - mean) / std of the N x H x W x C u8 tensor x, as an
    N x C x H x W tensor of dtype on x's device.

    (x/255 - m) / s == x * (1/(255 s)) - m/s: one addcmul.  fused: read
    the u8 straight into it, computing in float32 (the common dtype) and
    writing dtype, one rounding and no intermediate; that is the GPU's
    way (TensorIterator casts in the kernel).  Else, on the CPU, which
    would make float32 temporaries of the inputs and of a float16
    output itself, the pixels are converted into a float32 tensor first
    and normalised in place: the result itself for float32.
    """
    n, h, w, c = x.shape
    dev = x.device
    scale = torch.tensor([1.0 / (255.0 * s) for s in std],
                         dtype=torch.float32, device=dev).view(1, c, 1, 1)
    shift = torch.tensor([-m / s for m, s in zip(mean, std)],
                         dtype=torch.float32, device=dev).view(1, c, 1, 1)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    out = torch.empty((n, c, h, w), dtype=dtype, device=dev,
                      memory_format=fmt)
    xp = x.permute(0, 3, 1, 2)
    global _fused_ok
    if fused and _fused_ok:
        try:
            return torch.addcmul(shift, xp, scale, out=out)
        except RuntimeError as e:  # a device without in-kernel casts
            if "memory" in str(e):
                raise
            _fused_ok = False
    f32 = out if dtype == torch.float32 else torch.empty(
        (n, c, h, w), dtype=torch.float32, device=dev, memory_format=fmt)
    f32.copy_(xp)
    torch.addcmul(shift, f32, scale, out=f32)
    if f32 is not out:
        out.copy_(f32)
    return out


def _float_numpy(x, mean, std, channels_last, dtype):
    """Batch.float() without torch: numpy, computed in float32."""
    dt = np.dtype(np.float32 if dtype is None else dtype)
    if dt.kind != "f":
        raise ValueError(f"dtype {dtype}: use a numpy float dtype")
    n, h, w, c = x.shape
    scale = np.array([1.0 / (255.0 * s) for s in std], np.float32)
    shift = np.array([-m / s for m, s in zip(mean, std)], np.float32)
    if channels_last:
        out = np.empty((n, h, w, c), np.float32)
        np.multiply(x, scale, out=out)
        np.add(out, shift, out=out)
    else:
        out = np.empty((n, c, h, w), np.float32)
        np.multiply(x.transpose(0, 3, 1, 2), scale.reshape(1, c, 1, 1),
                    out=out)
        np.add(out, shift.reshape(1, c, 1, 1), out=out)
    if dt != np.float32:
        out = out.astype(dt)
    return out.transpose(0, 3, 1, 2) if channels_last else out


def _per_channel(v, c):
    if v is None:
        v = 0.5
    if isinstance(v, (int, float)):
        return [float(v)] * c
    where = getattr(v, "where", None)
    v = [float(x) for x in v]
    if len(v) == 1:
        return v * c
    if len(v) != c:
        why = (f"{len(v)} values for {c} channel{'' if c == 1 else 's'}: "
               "give one value, or one per channel")
        raise ValueError(f"{where}: {why}" if where else why)
    return v


class _MetaFloats(list):
    """The values of a stream's mean or std; where: the record and
    key=value they came from, for messages."""

    __slots__ = ("where",)


# The keys whose form rv-stream(5) fixes and that readers act on, checked
# as lib/stream/meta.c's rv_meta_check() does: (key, integer, lo, lo_open, hi).
_META_RULES = (("classes", True, 0, False, (1 << 32) - 1),
               ("samples", True, 0, False, (1 << 64) - 1),
               ("mean", False, 0, False, 1),
               ("std", False, 0, True, 1000))
_INT_CHARS = frozenset("0123456789")
_NUM_CHARS = frozenset("0123456789.eE+-")


def _meta_bad(m):
    """The first value of meta m that breaks rv-stream(5), as rv's C
    readers word it ("metadata 'key=value': reason"), or None."""
    for key, integer, lo, lo_open, hi in _META_RULES:
        v = m.get(key)
        if v is None:
            continue
        what = f"metadata '{key}={v[:64]}{'...' if len(v) > 64 else ''}'"
        if integer:
            if not v or not set(v) <= _INT_CHARS:
                return f"{what}: not a decimal integer"
            d = v.lstrip("0") or "0"  # as long as C's, without int()'s
            if len(d) > 20 or not lo <= int(d) <= hi:  # digit limit
                return f"{what}: out of range [{lo}, {hi}]"
            continue
        toks = v.split(",")
        for k, t in enumerate(toks):
            try:
                if not t or not set(t) <= _NUM_CHARS:
                    raise ValueError
                d = float(t)
                if not math.isfinite(d):
                    raise ValueError
            except ValueError:
                return (f"{what}: not a list of decimal numbers "
                        "separated by commas")
            if k == 4:
                return f"{what}: more than 4 values"
            if d < lo or (lo_open and d == lo) or d > hi:
                return (f"{what}: {t} is out of range "
                        f"{'(' if lo_open else '['}{lo:g}, {hi:g}]")
    return None


def _meta_floats(meta, key, where):
    s = meta.get(key)
    if not s:
        return None
    v = _MetaFloats(float(x) for x in s.split(","))
    v.where = f"{where}: metadata '{key}={s}'"
    return v


_END = object()


class _Raised:
    def __init__(self, ex):
        self.ex = ex


class _Source:
    """The compressed input, read exactly, with the offset of what was
    read so far."""

    def __init__(self, src):
        self.own = False
        self.size = None  # a regular file's size: skip() seeks
        if isinstance(src, (bytes, bytearray, memoryview)):
            self.f = io.BytesIO(src)
            self.name = "<bytes>"
        elif isinstance(src, (str, os.PathLike)):
            if os.fspath(src) == "-":
                self.f = sys.stdin.buffer
                self.name = "<stdin>"
            else:
                self.f = open(src, "rb")
                self.own = True
                self.name = os.fspath(src)
                st = os.fstat(self.f.fileno())
                if stat.S_ISREG(st.st_mode):
                    self.size = st.st_size
        else:
            self.f = getattr(src, "buffer", src)  # a text stdin
            self.name = str(getattr(src, "name", "<stream>"))
        self.off = 0
        self._readinto = getattr(self.f, "readinto", None)

    def readinto(self, mv):
        """Fill mv; return how many bytes came before end of file."""
        got, n = 0, len(mv)
        while got < n:
            if self._readinto:
                k = self._readinto(mv[got:])
            else:
                b = self.f.read(n - got)
                k = len(b) if b else 0
                mv[got:got + k] = b or b""
            if not k:
                break
            got += k
        self.off += got
        return got

    def skip(self, n):
        if self.size is not None and self.off + n <= self.size:
            self.f.seek(n, 1)
            self.off += n
            return True
        buf = bytearray(min(n, 1 << 16))
        while n > 0:
            k = self.readinto(memoryview(buf)[:min(n, len(buf))])
            if not k:
                return False
            n -= k
        return True

    def close(self):
        if self.own:
            self.f.close()


class _Skipped:
    """A sample or batch record that skip_batches skipped: its header was
    read and checked, its payload neither decompressed nor checked."""

    __slots__ = ("epoch", "kind", "count")

    def __init__(self, h):
        self.epoch, self.kind, self.count = h[6], h[3], h[12]


class _Resumed:
    """events(): the batches after this one in its epoch follow `skipped`
    batches of it that skip_batches skipped."""

    __slots__ = ("skipped",)

    def __init__(self, skipped):
        self.skipped = skipped


class Reader:
    """Iterate over an rv stream's batches.

    src: a path ('-' for stdin), a binary file object, or bytes.
    batch_size: collate sample records into batches of this many (never
    spanning an epoch; the last of an epoch may be short); without it a
    stream of samples is an error, since training wants batches.
    as_torch: tensors (default when torch is importable) or numpy arrays.
    prefetch: read and decompress up to this many records ahead on a
    thread of its own, so that the training loop never waits on parsing
    (0: read in the caller's thread).
    pin_memory: batch tensors in page-locked memory (from torch's
    caching host allocator), for .to(device, non_blocking=True); without
    CUDA it warns once and reads unpinned, as DataLoader does.
    skip_batches: start after the first K batches of the stream, counted
    across epochs as the stream goes (what a job restarted at global step
    K has done): their records are not decompressed, only their headers
    (see python/README.md).

    for b in Reader(src) yields Batch objects; epochs() yields one
    iterable per epoch; records() yields every record.  meta holds the
    merged metadata; epoch_ends the EpochEnd records seen so far.
    len(reader) is the number of batches iteration yields when the
    stream's metadata says it (else TypeError); length_hint() estimates.
    """

    def __init__(self, src="-", batch_size=None, as_torch=None, prefetch=0,
                 pin_memory=False, skip_batches=0):
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if prefetch < 0:
            raise ValueError("prefetch must not be negative")
        if not isinstance(skip_batches, int) or skip_batches < 0:
            raise ValueError("skip_batches must be a non-negative int")
        self.prefetch = prefetch
        if as_torch is None:
            as_torch = torch is not None
        if as_torch and torch is None:
            raise RuntimeError("as_torch=True needs torch")
        self._src = src if getattr(src, "_rv_source", False) else \
            _Source(src)
        self.name = self._src.name
        self.batch_size = batch_size
        self.as_torch = as_torch
        self.pin_memory = bool(pin_memory)
        if pin_memory and torch is not None and not as_torch:
            _staging.warn_once("pin-numpy", "rvstream: pin_memory=True "
                               "with as_torch=False: numpy arrays are "
                               "not pinned")
        self._pinned = as_torch and _staging.use_pinned(pin_memory)
        self.skip_batches = skip_batches
        self.meta = {}
        self._normv = (None, None)  # the meta's mean and std, parsed
        self._norm = (None, None)  # those the batches use: both or none
        self.epoch_ends = []
        self.records_read = 0
        self._cap = payload_cap()
        self._dctx = zstandard.ZstdDecompressor(max_window_size=WINDOW_MAX)
        self._fbuf = bytearray(1 << 16)
        self._hdr = bytearray(HDR_LEN)
        self._open_epoch = None  # epoch with data and no epoch-end yet
        self._pool = []  # payload buffers, reused once nothing views them
        self.direct_records = 0  # records read by the stored-block path
        self.skipped_records = 0  # skip_batches': payload not decoded
        self._direct = xxhash is not None
        # records read ahead (len() reads the head), under _lock
        self._lock = threading.Lock()
        self._ahead = collections.deque()
        self._head = None  # (meta, first, kind, count, offset) once read
        self._sz = None  # the Size, once worked out
        self._len_said = None  # what len() answered
        # skip_batches: batches left to skip, samples skipped of the
        # batch being skipped (collating), the epoch of an epoch-end that
        # may yet be joined, batches skipped of the epoch, and of each
        # (joined) epoch ended, for its EpochEnd
        self._skip_left = skip_batches
        self._skip_fill = 0
        self._skip_pend = None
        self._ep_skipped = 0
        self._closed = collections.deque()
        self._decided = False  # _skippable decided on this record

    # -- context manager and closing
    def close(self):
        self._src.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- frames
    def _err(self, off, reason):
        return RvStreamError(self.name, off, self.records_read, reason)

    def _err_rec(self, off, reason):
        """An error of the record just counted in records_read."""
        return RvStreamError(self.name, off, self.records_read - 1, reason)

    def _need(self, mv, off, what):
        if self._src.readinto(mv) != len(mv):
            raise self._err(off, f"truncated {what}")

    def _frame(self):
        """Read the next record's frame: (length, offset, content size,
        record), the frame in _fbuf[:length] and record None, or record
        (header, payload) when the stored-block path read it whole; None
        at the end of the input."""
        src = self._src
        while True:
            off = src.off
            mv = memoryview(self._fbuf)
            k = src.readinto(mv[:4])
            if k == 0:
                return None
            if k < 4:
                raise self._err(off, "truncated frame header")
            magic = struct.unpack_from("<I", self._fbuf)[0]
            if SKIP_LO <= magic <= SKIP_HI:
                self._need(mv[:4], off, "skippable frame")
                size = struct.unpack_from("<I", self._fbuf)[0]
                if not src.skip(size):
                    raise self._err(off, "truncated skippable frame")
                continue
            if magic != ZMAGIC:
                what = "not an rv stream" if off == 0 else "garbage"
                raise self._err(off, f"{what}: no Zstandard frame here "
                                     f"(magic {magic:08x})")
            return self._frame_body(off)

    def _frame_body(self, off):
        mv = memoryview(self._fbuf)
        self._need(mv[4:5], off, "frame header")
        fhd = self._fbuf[4]
        if fhd & 0x08:
            raise self._err(off, "corrupt frame header (reserved bit set)")
        single = fhd >> 5 & 1
        did_len = (0, 1, 2, 4)[fhd & 3]
        fcs_len = (single, 2, 4, 8)[fhd >> 6]
        rest = (0 if single else 1) + did_len + fcs_len
        self._need(mv[5:5 + rest], off, "frame header")
        pos = 5
        window = None
        if not single:
            wd = self._fbuf[5]
            base = 1 << (10 + (wd >> 3))
            window = base + (base >> 3) * (wd & 7)
            pos += 1
        if did_len and int.from_bytes(self._fbuf[pos:pos + did_len],
                                      "little"):
            raise self._err(off, "frame needs a dictionary")
        pos += did_len
        fcs = None
        if fcs_len:
            fcs = int.from_bytes(self._fbuf[pos:pos + fcs_len], "little")
            if fcs_len == 2:
                fcs += 256
        pos += fcs_len
        if window is not None and window > WINDOW_MAX:
            raise self._err(off, f"frame window {window} bytes is over "
                                 f"the {WINDOW_MAX} limit")
        if fcs is not None and not HDR_LEN <= fcs <= self._cap + 65535:
            raise self._err(off, f"frame content size {fcs} is out of "
                                 "range for a record")
        blk_max = min(window if window else BLOCK_MAX, BLOCK_MAX)
        # Blocks: a 3-byte header each, last flag in bit 0.  A frame of
        # stored (raw) blocks, what rv writes to a pipe, goes straight
        # into the payload buffer: see _direct_body.
        skipping = self._skip_left > 0
        direct = self._direct and fhd & 0x04 and not skipping
        while True:
            self._grow(pos + 3 + BLOCK_MAX + 4)
            mv = memoryview(self._fbuf)
            self._need(mv[pos:pos + 3], off, "block header")
            bh = int.from_bytes(self._fbuf[pos:pos + 3], "little")
            pos += 3
            btype, bsize = self._block(bh, off, blk_max)
            n = 1 if btype == 1 else bsize
            self._need(mv[pos:pos + n], off, "block")
            pos += n
            last = bh & 1
            if skipping:
                # skip_batches: a sample or batch to skip goes no further
                # than its header (the first block's)
                skipping = None
                h = self._skippable(off, fcs, pos - n, btype, bsize, pos)
                if h is not None:
                    if not last:
                        self._skip_blocks(off, blk_max)
                    if fhd & 0x04 and not self._src.skip(4):
                        raise self._err(off, "truncated frame checksum")
                    self.skipped_records += 1
                    return None, off, fcs, (h, None)
            if direct and btype == 0 and bsize >= HDR_LEN:
                rec, pos, last = self._direct_body(off, fcs, pos - n,
                                                   bsize, last, blk_max)
                if rec is not None:
                    return pos, off, fcs, rec
                # _fbuf holds the frame so far: walk on
            direct = False
            if last:
                break
        if fhd & 0x04:
            self._need(memoryview(self._fbuf)[pos:pos + 4], off,
                       "frame checksum")
            pos += 4
        return pos, off, fcs, None

    def _direct_body(self, off, fcs, data, first_size, last, blk_max):
        """Read a frame whose first block is stored straight into the
        payload buffer: the record header is checked from the first
        block, and each later stored block is read into its place in the
        payload, with the XXH64 of the content checked at the end as the
        decompressor would.  No copy through _fbuf, no decompression.

        data is the first block's offset in _fbuf.  Returns (record, pos,
        ended): record (header, payload) when the frame was read whole;
        else None, and the frame read so far is in _fbuf up to pos (the
        blocks that went to the payload copied back, their headers
        remade), ended saying whether its last block was read: the caller
        walks on and decompresses as usual.  That happens at a compressed
        or RLE block, or when the header is longer than the first block.
        """
        fb = self._fbuf
        h = HDR.unpack_from(fb, data)
        plen = self._check(h, off, fcs)
        hlen = h[2]
        if hlen > first_size:
            return None, data + first_size, last
        payload = self._buffer(plen, h[3] == BATCH)
        pv = memoryview(payload)
        k = first_size - hlen
        if k > plen:
            raise self._err(off, "frame holds more than one record")
        pv[:k] = memoryview(fb)[data + hlen:data + first_size]
        hasher = xxhash.xxh64()
        hasher.update(memoryview(fb)[data:data + first_size])
        filled = k
        segs = []  # (offset in payload, size) of the later stored blocks
        bh3 = bytearray(3)
        while not last:
            self._need(memoryview(bh3), off, "block header")
            bh = int.from_bytes(bh3, "little")
            btype, bsize = self._block(bh, off, blk_max)
            if btype != 0:
                pos = self._refill(data + first_size, segs, pv, bh3)
                n = 1 if btype == 1 else bsize
                self._need(memoryview(self._fbuf)[pos:pos + n], off,
                           "block")
                return None, pos + n, bh & 1
            if filled + bsize > plen:
                raise self._err(off, "frame holds more than one record")
            seg = pv[filled:filled + bsize]
            self._need(seg, off, "block")
            hasher.update(seg)
            segs.append((filled, bsize))
            filled += bsize
            last = bh & 1
        if filled != plen:
            raise self._err(off, "frame ends inside the record's payload")
        ck = bytearray(4)
        self._need(memoryview(ck), off, "frame checksum")
        if int.from_bytes(ck, "little") != hasher.intdigest() & 0xFFFFFFFF:
            raise self._err(off, "corrupt frame: checksum mismatch")
        self.direct_records += 1
        return (h, payload), None, True

    def _skippable(self, off, fcs, data, btype, bsize, end):
        """The record header of the frame being read, when it is a record
        skip_batches skips (checked as any header); else None.  data is
        the first block's offset in _fbuf, end where it ends: a stored
        block holds the header as it lies, a compressed one is
        decompressed (at most 128 KiB: that block only)."""
        if btype == 0 and bsize >= HDR_LEN:
            h = HDR.unpack_from(self._fbuf, data)
        else:
            try:
                r = self._dctx.stream_reader(memoryview(self._fbuf)[:end],
                                             read_across_frames=False)
                hb = r.read(HDR_LEN)
            except zstandard.ZstdError:
                return None  # read it whole: that says what is wrong
            if len(hb) < HDR_LEN:
                return None
            h = HDR.unpack(hb)
        if h[0] != MAGIC or h[3] not in (SAMPLE, BATCH):
            return None
        self._check(h, off, fcs)
        self._decided = True
        return h if self._skip_decide(h) else None

    def _skip_decide(self, h):
        """Whether skip_batches skips this sample or batch record (h its
        header), keeping count; called once for every one."""
        kind = h[3]
        self._skip_see(kind, h[6])
        if self._skip_left <= 0:
            return False
        if kind == BATCH:
            if self._skip_fill:  # a batch record ends a collated batch
                self._skip_done()
            if self._skip_left <= 0:
                return False
            self._skip_done()
            return True
        if self.batch_size is None or h[4] != U8:
            return False  # read, to raise what is wrong
        # a sample met while batches are left to skip belongs to one of
        # them: fewer are done than are to be skipped
        self._skip_fill += 1
        if self._skip_fill == self.batch_size:
            self._skip_done()
        return True

    def _skip_done(self):
        self._skip_left -= 1
        self._skip_fill = 0
        self._ep_skipped += 1

    def _skip_see(self, kind, epoch):
        """Epochs as records() joins them, for skip_batches: an epoch-end
        ends its epoch (and a short batch being skipped) only once a
        record of another epoch, or the end of the input, follows it."""
        if self._skip_pend is not None and self._skip_pend != epoch:
            if self._skip_fill:
                self._skip_done()
            self._closed.append(self._ep_skipped)
            self._ep_skipped = 0
        self._skip_pend = epoch if kind == EPOCH_END else None

    def _skip_blocks(self, off, blk_max):
        """Pass over the rest of a frame's blocks without reading them
        (a seek in a file)."""
        bh3 = bytearray(3)
        while True:
            self._need(memoryview(bh3), off, "block header")
            bh = int.from_bytes(bh3, "little")
            btype, bsize = self._block(bh, off, blk_max)
            if not self._src.skip(1 if btype == 1 else bsize):
                raise self._err(off, "truncated block")
            if bh & 1:
                return

    def _block(self, bh, off, blk_max):
        """The type and size of the block whose 3-byte header is bh."""
        btype, bsize = bh >> 1 & 3, bh >> 3
        if btype == 3 or bsize > blk_max:
            raise self._err(off, "corrupt block header")
        return btype, bsize

    def _refill(self, pos, segs, pv, bh3):
        """Write the stored blocks segs of pv back into _fbuf from pos, as
        they were in the frame (header, data), then the block header bh3;
        return where _fbuf's frame now ends."""
        self._grow(pos + sum(3 + n for _, n in segs) + 3 + BLOCK_MAX + 4)
        fb = self._fbuf
        for o, n in segs:
            fb[pos:pos + 3] = (n << 3).to_bytes(3, "little")
            fb[pos + 3:pos + 3 + n] = pv[o:o + n]
            pos += 3 + n
        fb[pos:pos + 3] = bh3
        return pos + 3

    def _grow(self, n):
        # a new buffer, not extend(): memoryviews of the old may live on
        if len(self._fbuf) < n:
            new = bytearray(max(n, 2 * len(self._fbuf)))
            new[:len(self._fbuf)] = self._fbuf
            self._fbuf = new

    # -- records
    def _read_full(self, r, mv, off, what):
        got = 0
        while got < len(mv):
            k = r.readinto(mv[got:])
            if not k:
                raise self._err(off, f"frame ends inside the record's {what}")
            got += k

    def _record(self):
        """Decode the next record: (header tuple, payload, offset)."""
        fr = self._frame()
        if fr is None:
            return None
        flen, off, fcs, rec = fr
        if rec is not None:  # read by the stored-block path
            return rec[0], rec[1], off
        try:
            r = self._dctx.stream_reader(memoryview(self._fbuf)[:flen],
                                         read_across_frames=False)
            self._read_full(r, memoryview(self._hdr), off, "header")
            h = HDR.unpack(self._hdr)
            plen = self._check(h, off, fcs)
            if h[2] > HDR_LEN:
                extra = bytearray(h[2] - HDR_LEN)
                self._read_full(r, memoryview(extra), off, "header")
            payload = self._buffer(plen, h[3] == BATCH)
            self._read_full(r, memoryview(payload), off, "payload")
            if r.read(1):
                raise self._err(off, "frame holds more than one record")
        except zstandard.ZstdError as e:
            raise self._err(off, f"corrupt frame: {e}") from None
        return h, payload, off

    def _buffer(self, n, batch=False):
        """A buffer of n bytes for a payload, which the tensors will view.

        A batch's, with pin_memory, is page-locked memory fresh from
        torch's caching host allocator (see _staging): a numpy view of
        it, whose base is the tensor.  Otherwise:

        A fresh one costs page faults on every page as the decompressor
        fills it (about 20 ms for a 38 MB batch); a buffer that nothing
        references any more (no Batch, tensor or array made from it: they
        all hold a reference) is reused instead, its pages already
        mapped.  Buffers are uninitialised: the decompressor fills all n
        bytes or the record is an error.
        """
        if batch and self._pinned:
            return _staging.pinned_empty(n).numpy()
        for a in self._pool:
            # 3 references when free: the pool, `a`, getrefcount's own
            if a.size == n and sys.getrefcount(a) == 3:
                return a
        a = np.empty(n, np.uint8)
        if n >= 1 << 16:
            if len(self._pool) >= POOL_MAX:
                self._pool.pop(0)
            self._pool.append(a)
        return a

    def _check(self, h, off, fcs):
        (magic, ver, hlen, kind, dtype, _, _, _, _, hh, ww, cc, count, _,
         _, _, plen) = h
        e = self._err
        if magic != MAGIC:
            raise e(off, f"bad record magic {magic:08x}, not an rv record")
        if ver != 1:
            raise e(off, f"record version {ver}, this reader knows 1")
        if hlen < HDR_LEN:
            raise e(off, f"header length {hlen} is under {HDR_LEN}")
        if kind not in KIND_NAMES:
            raise e(off, f"unknown record kind {kind}")
        if dtype not in DTYPE_NAMES:
            raise e(off, f"unknown data type {dtype}")
        if plen > self._cap:
            raise e(off, f"payload of {plen} bytes is over the "
                         f"{self._cap}-byte cap (RV_MAX_RECORD)")
        kname = KIND_NAMES[kind]
        if kind in (SAMPLE, BATCH):
            if kind == SAMPLE and count != 1:
                raise e(off, f"sample with count {count}")
            if kind == BATCH and (dtype != U8 or count < 1):
                raise e(off, "batch must be u8 with count at least 1")
            if dtype == U8:
                if not (hh and ww and cc) or cc > 4:
                    raise e(off, f"bad shape {hh}x{ww}x{cc}")
                px = hh * ww * cc * (count if kind == BATCH else 1)
                if px >= 1 << 62:
                    raise e(off, f"shape {hh}x{ww}x{cc} x {count} overflows")
                want = px + (16 * count if kind == BATCH else 0)
                if plen != want:
                    raise e(off, f"{kname} payload is {plen} bytes, its "
                                 f"shape says {want}")
            elif dtype in (JPEG, PNG):
                if plen == 0:
                    raise e(off, f"empty {DTYPE_NAMES[dtype]} sample")
            else:
                raise e(off, "sample with data type none")
        elif dtype != NONE:
            raise e(off, f"{kname} record with data type "
                         f"{DTYPE_NAMES[dtype]}")
        elif kind == EPOCH_END and plen:
            raise e(off, "epoch-end record with a payload")
        if fcs is not None and fcs != hlen + plen:
            raise e(off, f"frame content size {fcs} differs from the "
                         f"record's {hlen + plen} bytes")
        return plen

    def records(self):
        """Every record, in order: Meta, Sample, Batch or EpochEnd.
        Batches here are never collated from samples; those skip_batches
        skipped are left out.

        Epochs are as rv-stream(5) defines them, as every rv program reads
        them: consecutive epoch-ends of one epoch number, with only
        metadata or that epoch's samples and batches between them, are one
        epoch (cat of shards), given as one EpochEnd whose count is their
        sum, after the metadata read between them.  A sample or batch of
        another epoch than those before it with no epoch-end between, or
        an epoch-end of another epoch than its samples, is an error."""
        for r in self._records():
            if not isinstance(r, _Skipped):
                yield r

    def _records(self):
        """records(), with the records skip_batches skipped as _Skipped."""
        pend = None  # an EpochEnd that may go on
        carry = None  # (epoch, count) of the open epoch's ends so far
        seg = None  # epoch of the samples since the last epoch-end
        for rec, off in self._raw_records():
            if isinstance(rec, Meta):
                yield rec
                continue
            kind = "epoch-end" if isinstance(rec, EpochEnd) else \
                "sample" if isinstance(rec, Sample) or (
                    isinstance(rec, _Skipped) and rec.kind == SAMPLE) \
                else "batch"
            if seg is not None and rec.epoch != seg:
                if kind == "epoch-end":
                    why = (f"epoch-end of epoch {rec.epoch} after samples "
                           f"of epoch {seg}")
                else:
                    why = (f"{kind} of epoch {rec.epoch} after samples of "
                           f"epoch {seg} with no epoch-end between them")
                raise RvStreamError(self.name, off, self.records_read - 1,
                                    why)
            if kind == "epoch-end":
                seg = None
                if pend is not None and pend.epoch == rec.epoch:
                    pend.count += rec.count
                    continue
                if pend is not None:
                    self._ended(pend)
                    yield pend
                pend = EpochEnd(rec.epoch, rec.count)
                if carry is not None and carry[0] == rec.epoch:
                    pend.count += carry[1]
                carry = None
                continue
            seg = rec.epoch
            if pend is not None:
                if pend.epoch == rec.epoch:
                    carry = (pend.epoch, pend.count)  # the epoch goes on
                else:
                    self._ended(pend)
                    yield pend
                pend = None
            yield rec
        if pend is not None:
            self._ended(pend)
            yield pend

    def _ended(self, end):
        self.epoch_ends.append(end)
        if self._closed:
            end.skipped = self._closed.popleft()

    def _raw_records(self):
        """(record, offset) for every record as it lies in the input:
        those len() read ahead first."""
        while True:
            with self._lock:
                item = self._ahead.popleft() if self._ahead else \
                    self._read_raw()
            if item is None:
                return
            if isinstance(item, _Raised):
                raise item.ex
            yield item

    def _read_raw(self):
        """The next (record, offset), None at the end; under _lock."""
        self._decided = False
        rec = self._record()
        if rec is None:
            if self.skip_batches:
                self._skip_see(NO_DATA, None)
            if self._head is None:
                self._set_head(NO_DATA)
            if self._open_epoch is not None:
                raise self._err(
                    self._src.off, f"the stream ends inside epoch "
                    f"{self._open_epoch}, with no epoch-end record "
                    "(truncated?)")
            return None
        h, payload, off = rec
        self.records_read += 1
        kind = h[3]
        if kind == META:
            m = self._meta(payload, off)
            bad = _meta_bad(m)
            if bad:
                raise self._err_rec(off, bad)
            self.meta.update(m)
            where = f"{self.name}: record {self.records_read - 1} at " \
                f"byte {off}"
            self._normv = (
                _meta_floats(self.meta, "mean", where) if "mean" in m
                else self._normv[0],
                _meta_floats(self.meta, "std", where) if "std" in m
                else self._normv[1])
            # both or neither, as rv-train-gpu takes them
            self._norm = self._normv if None not in self._normv \
                else (None, None)
            return m, off
        if kind == EPOCH_END:
            self._open_epoch = None
            if self._head is None:
                self._set_head(FIRST_END)
            if self.skip_batches:
                self._skip_see(EPOCH_END, h[6])
            return EpochEnd(h[6], h[12]), off
        self._open_epoch = h[6]
        if self._head is None:
            self._set_head(FIRST_DATA, h, off)
        if self.skip_batches and not self._decided and \
                self._skip_decide(h):
            payload = None  # its first block was not enough to tell
        if payload is None:
            return _Skipped(h), off
        self._check_weights(h, payload, off)
        if kind == SAMPLE:
            return Sample(h, payload), off
        return Batch(h[6], h[5], h[12], (h[9], h[10], h[11]), payload,
                     *self._norm, self.as_torch, self._pinned), off

    def _check_weights(self, h, payload, off):
        """Refuse a weight that is not finite or is negative (0 is
        allowed), as rv-batch and rv-train-gpu do."""
        if h[3] == SAMPLE:
            ids, w = [h[7]], [h[14]]
        else:
            n = h[12]
            w = np.frombuffer(payload, "<f4", n, 12 * n)
            bad = ~(w >= 0) | np.isinf(w)
            if not bad.any():
                return
            i = int(np.argmax(bad))
            ids, w = [int(np.frombuffer(payload, "<u8", 1, 8 * i)[0])], \
                [float(w[i])]
        if not (w[0] >= 0) or math.isinf(w[0]):
            raise self._err_rec(off, f"sample {ids[0]} has weight "
                                     f"{w[0]:g}: a weight must be finite "
                                     "and not negative")

    def _set_head(self, first, h=None, off=None):
        kind = count = None
        if h is not None:
            kind = "batch" if h[3] == BATCH else "sample"
            count = h[12]
        self._head = (dict(self.meta), first, kind, count, off, h)

    def _peek_head(self):
        """Read records ahead until the head (the metadata before the
        first sample or batch, and that record) is known; an error is
        kept for the iteration to raise."""
        with self._lock:
            while self._head is None:
                if self._ahead and isinstance(self._ahead[-1], _Raised):
                    return
                try:
                    item = self._read_raw()
                except Exception as ex:  # raised when iterating
                    self._ahead.append(_Raised(ex))
                    return
                if item is None:
                    return
                self._ahead.append(item)

    def _meta(self, payload, off):
        try:
            text = bytes(payload).decode("utf-8")
        except UnicodeDecodeError:
            raise self._err_rec(off, "meta record is not UTF-8") from None
        m = Meta()
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for ln in lines:
            k, eq, v = ln.partition("=")
            if not eq or not k or len(k) > 128 or "\0" in ln or not all(
                    ch.isascii() and (ch.isalnum() or ch in "._-")
                    for ch in k):
                raise self._err_rec(off, f"bad meta line '{ln[:40]}'")
            m[k] = v
        return m

    def _collate(self, samples):
        s0 = samples[0]
        n = len(samples)
        h, w, c = s0.shape
        size = h * w * c
        if self._pinned:
            buf = _staging.pinned_empty(16 * n + n * size).numpy()
        else:
            buf = bytearray(16 * n + n * size)
        struct.pack_into(f"<{n}Q", buf, 0, *(s.id for s in samples))
        struct.pack_into(f"<{n}i", buf, 8 * n, *(s.label for s in samples))
        struct.pack_into(f"<{n}f", buf, 12 * n, *(s.weight for s in samples))
        px = np.frombuffer(buf, np.uint8, n * size, 16 * n).reshape(n, -1)
        flags = 0
        for i, s in enumerate(samples):
            px[i] = s.pixels.reshape(-1)
            flags |= s.flags
        return Batch(s0.epoch, flags, n, s0.shape, buf, *self._norm,
                     self.as_torch, self._pinned)

    def events(self):
        """Batches (collated when batch_size is set), EpochEnd and Meta.
        After skip_batches, an EpochEnd's skipped says how many of its
        batches were skipped, and a _Resumed event comes before the first
        batch of an epoch that lost some."""
        if not self.prefetch:
            yield from self._events()
            return
        q = queue.Queue(self.prefetch)
        stop = threading.Event()

        def put(x):
            while not stop.is_set():
                try:
                    q.put(x, timeout=0.1)
                    return True
                except queue.Full:
                    pass
            return False

        def run():
            try:
                for e in self._events():
                    if not put(e):
                        return
                put(_END)
            except BaseException as ex:  # handed to the consumer
                put(_Raised(ex))

        t = threading.Thread(target=run, name="rvstream-reader",
                             daemon=True)
        t.start()
        try:
            while True:
                e = q.get()
                if e is _END:
                    return
                if isinstance(e, _Raised):
                    raise e.ex
                yield e
        finally:
            # not joined: the thread may be blocked reading a pipe; it
            # sees stop at its next record and ends
            stop.set()

    def _events(self):
        pend = []
        ep_skipped = None  # batches skipped of this epoch, at its first
        resumed = False  # _Resumed said for this epoch
        for r in self._records():
            if isinstance(r, _Skipped):
                continue
            if isinstance(r, (Sample, Batch)) and ep_skipped is None:
                ep_skipped = self._ep_skipped
            if isinstance(r, Sample):
                if self.batch_size is None:
                    raise self._err(
                        self._src.off, "the stream holds samples, not "
                        "batches: pipe it through rv-batch(1) or pass "
                        "batch_size")
                if r.dtype != U8:
                    raise self._err(
                        self._src.off, f"{DTYPE_NAMES[r.dtype]} sample "
                        f"{r.id}: decode it first (rv-decode(1))")
                if pend and (pend[0].shape != r.shape or
                             pend[0].epoch != r.epoch):
                    if pend[0].shape != r.shape:
                        raise self._err(
                            self._src.off, "samples of shapes %s and %s "
                            "in one batch: resize them first" %
                            ("x".join(map(str, pend[0].shape)),
                             "x".join(map(str, r.shape))))
                    yield self._collate(pend)
                    pend = []
                pend.append(r)
                if len(pend) == self.batch_size:
                    if ep_skipped and not resumed:
                        resumed = True
                        yield _Resumed(ep_skipped)
                    yield self._collate(pend)
                    pend = []
                continue
            if pend:
                if ep_skipped and not resumed:
                    resumed = True
                    yield _Resumed(ep_skipped)
                yield self._collate(pend)
                pend = []
            if isinstance(r, EpochEnd):
                ep_skipped, resumed = None, False
            elif isinstance(r, Batch) and ep_skipped and not resumed:
                resumed = True
                yield _Resumed(ep_skipped)
            yield r

    def __iter__(self):
        n = 0
        for r in self.events():
            if isinstance(r, Batch):
                n += 1
                yield r
        said = self._len_said
        if said is not None and n != said:
            _staging.warn_once(
                ("len", id(self)), f"rvstream: {self.name}: "
                f"{n} batches read, len() said {said}: the stream's "
                "metadata does not describe it (a cat of streams, or "
                "samples rv-decode skipped?)", 2)

    def __bool__(self):
        return True

    # -- length
    def _size(self, count=False):
        """The stream's Size (_length.py) from its head, which is read
        ahead for it; None if the head could not be read.  count: where
        the metadata cannot size a file, count its frames (a walk of
        its headers: for len() and length_hint(), not for epochs(),
        which counts only when an epoch's len() is asked)."""
        if self._sz is None:
            self._peek_head()
            if self._head is None:
                return None
            meta, first, kind, count_, off, h = self._head
            self._sz = size_from_meta(meta, first, kind, count_,
                                      self.batch_size)
        sz = self._sz
        if count and sz.total is None and sz.index is None and \
                self._src.size is not None and \
                (sz.kind != "sample" or self.batch_size is not None):
            # from the frame headers: nothing decompressed but the small
            # records
            from ._index import FileIndex
            meta, first, kind, count_, off, h = self._head
            try:
                ix = FileIndex(self.name, first=(off, h) if first ==
                               FIRST_DATA else None)
                sz.from_index(ix, self.batch_size)
            except (OSError, ValueError):  # RvStreamError included
                pass
        return sz

    def batches_per_epoch(self):
        """The batches of each epoch of the stream when every epoch has
        as many and they are known (see len()), else None;
        batches_by_epoch() gives each epoch's."""
        sz = self._size()
        return None if sz is None else sz.uniform()

    def batches_by_epoch(self):
        """The batches of each epoch of the stream, a list, when they are
        known (see len()), else None."""
        sz = self._size(count=True)
        return None if sz is None else sz.every()

    def __len__(self):
        """The batches iteration yields: those of the whole stream, every
        epoch, less skip_batches, when the metadata says it (see
        python/README.md, "Length"); else TypeError, as for an
        IterableDataset without a length."""
        sz = self._size(count=True)
        total = None if sz is None else sz.total
        if total is None:
            why = "the stream's head could not be read" if sz is None \
                else sz.reason()
            raise TypeError(f"len() of {self.name} is unknown: {why} "
                            "(length_hint() estimates it)")
        n = max(0, total - self.skip_batches)
        self._len_said = n
        return n

    def length_hint(self):
        """The best estimate of the batches iteration yields (len() when
        it is known: a file's frames counted too), or None."""
        sz = self._size(count=True)
        t = None if sz is None else (
            sz.total if sz.total is not None else sz.hint_total)
        return None if t is None else max(0, t - self.skip_batches)

    def __length_hint__(self):
        n = self.length_hint()
        return NotImplemented if n is None else n

    def epochs(self):
        """One iterable of batches per epoch, in order, each ended by the
        epoch's epoch-end record (an epoch whose samples were all dropped
        upstream is an empty one); what the caller leaves of an epoch is
        skipped.  Epochs that skip_batches skipped whole are left out.
        len(epoch) is its batches (those left after skip_batches) when
        the metadata says it, else TypeError."""
        sz = self._size()  # before the iteration starts

        def per(i):
            return None if sz is None else sz.at(i)

        def counted(i):  # len(ep) where the metadata cannot say it
            c = self._size(count=True)
            return None if c is None else c.at(i)
        it = self.events()

        def rest():
            for r in it:
                if isinstance(r, Batch):
                    yield r
                elif isinstance(r, EpochEnd):
                    return

        skipped = 0
        i = 0  # the epoch's place in the stream, skipped ones counted
        for r in it:
            if isinstance(r, _Resumed):
                skipped = r.skipped
            elif isinstance(r, EpochEnd):
                if not r.skipped:
                    yield _Epoch(r.epoch, None, iter(()), 0)
                skipped = 0
                i += 1
            elif isinstance(r, Batch):
                tail = rest()
                n = per(i)
                if n is None and self._src.size is not None:
                    n = functools.partial(counted, i)
                yield _Epoch(r.epoch, r, tail, n, skipped)
                skipped = 0
                for _ in tail:  # skip what the caller left
                    pass
                i += 1


class _Epoch:
    """The batches of one epoch (see Reader.epochs)."""

    def __init__(self, epoch, first, rest, length=None, skipped=0):
        self.epoch = epoch
        self._first, self._rest = first, rest
        self._length = length  # an int, None, or a function giving one
        self._skipped = skipped  # of it, by skip_batches

    def __len__(self):
        if callable(self._length):
            self._length = self._length()
        if self._length is None:
            raise TypeError(f"len() of epoch {self.epoch} is unknown: the "
                            "stream's metadata does not say it")
        return max(0, self._length - self._skipped)

    def __bool__(self):
        return True

    def __iter__(self):
        if self._first is not None:
            b, self._first = self._first, None
            yield b
        # not `yield from`: a caller that stops early would close the
        # shared iterator, and epochs() could not skip the rest
        for b in self._rest:
            yield b


def open_stream(src="-", batch_size=None, as_torch=None, prefetch=0,
                pin_memory=False, skip_batches=0):
    """A Reader over src; see Reader."""
    return Reader(src, batch_size, as_torch, prefetch, pin_memory,
                  skip_batches)


batches = open_stream
