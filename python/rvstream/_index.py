"""Where a stream file's records lie, found from Zstandard headers alone.

A FileIndex walks a file frame by frame with small pread()s: each
frame's header (magic, descriptor, content size), then each block's
3-byte header, seeking over the block's bytes.  Nothing is decompressed
except, for frames it must classify, the first block of the frame
(enough for the 64-byte record header):

- every frame until the first sample or batch (the head's metadata,
  and that first record, which gives the record shape);
- every frame whose content size could not be a record of that shape
  (metadata, epoch-ends: small);
- a frame whose first block is stored (rv's level 0) has its record
  header read as it lies, 64 bytes.

Any other frame whose content size is that of a sample, or of a batch
of some count, of the first record's shape is taken to be one, with that
count, without reading it.  A metadata record whose text has exactly
such a length would be taken for data: the slot that then reads it still
applies it, the others do not see it (the head's metadata, which all
read, is never taken so).

Per record read it costs about 20 bytes plus 3 per 128 KiB block
(compressed frames: per block of at most 128 KiB of content), so a slot
that reads 1/n of a file reads 1/n of its bytes plus these headers and
the small records every slot reads.
"""

import os
import stat

import zstandard

from ._stream import (BATCH, EPOCH_END, HDR, HDR_LEN, MAGIC, META, SAMPLE,
                      SKIP_HI, SKIP_LO, U8, WINDOW_MAX, ZMAGIC,
                      RvStreamError)

DATA = 0  # a frame's kind in the index: DATA, META or EPOCH_END


class FileIndex:
    """The frames of an rv stream file.

    offs, lens: each frame's byte offset and length (skippable frames
    left out); kinds: DATA, META (or any record that is not data) or
    EPOCH_END; counts: the samples of a DATA record; ends: the epoch
    number of an EPOCH_END.  data_kind is BATCH or SAMPLE (the first data
    record's), None for a file without data.  epochs: per epoch (joined
    as rv-stream(5) joins them), (index of its first data record among
    all data records, number of data records).  bytes_read: what the
    walk read.

    stop_after_end: stop at the first epoch-end record (the first epoch's
    records are then all there is).  first: (offset, header tuple) of a
    record already read (a reader's first sample or batch), which the
    walk then does not decompress again.
    """

    def __init__(self, path, stop_after_end=False, first=None):
        self.path = os.fspath(path)
        self._known = first if first and first[1] is not None else None
        self.offs, self.lens, self.kinds = [], [], []
        self.counts, self.ends = [], []
        self.data_kind = None
        self.bytes_read = 0
        self._hlen = self._px = None
        fd = os.open(self.path, os.O_RDONLY)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ValueError(f"{self.path}: not a regular file, "
                                 "cannot be indexed")
            self.size = st.st_size
            self._walk(fd, stop_after_end)
        finally:
            os.close(fd)
        self.epochs = self._epochs()

    # -- the walk
    def _err(self, off, reason):
        return RvStreamError(self.path, off, len(self.offs), reason)

    def _pread(self, fd, n, off):
        b = os.pread(fd, n, off)
        self.bytes_read += len(b)
        return b

    def _walk(self, fd, stop_after_end):
        pos, size = 0, self.size
        while pos < size:
            head = self._pread(fd, 18, pos)
            if len(head) < 4:
                raise self._err(pos, "truncated frame header")
            magic = int.from_bytes(head[:4], "little")
            if SKIP_LO <= magic <= SKIP_HI:
                if len(head) < 8:
                    raise self._err(pos, "truncated skippable frame")
                pos += 8 + int.from_bytes(head[4:8], "little")
                if pos > size:
                    raise self._err(pos, "truncated skippable frame")
                continue
            if magic != ZMAGIC:
                what = "not an rv stream" if pos == 0 else "garbage"
                raise self._err(pos, f"{what}: no Zstandard frame here "
                                     f"(magic {magic:08x})")
            if len(head) < 5:
                raise self._err(pos, "truncated frame header")
            fhd = head[4]
            single = fhd >> 5 & 1
            did_len = (0, 1, 2, 4)[fhd & 3]
            fcs_len = (single, 2, 4, 8)[fhd >> 6]
            hl = 5 + (0 if single else 1) + did_len + fcs_len
            if len(head) < hl:
                raise self._err(pos, "truncated frame header")
            fcs = None
            if fcs_len:
                at = hl - fcs_len
                fcs = int.from_bytes(head[at:hl], "little")
                if fcs_len == 2:
                    fcs += 256
            p = pos + hl
            first = None
            while True:
                bh3 = self._pread(fd, 3, p)
                if len(bh3) < 3:
                    raise self._err(pos, "truncated block header")
                bh = int.from_bytes(bh3, "little")
                btype, bsize = bh >> 1 & 3, bh >> 3
                if btype == 3:
                    raise self._err(pos, "corrupt block header")
                if first is None:
                    first = (p + 3, btype, bsize)
                p += 3 + (1 if btype == 1 else bsize)
                if bh & 1:
                    break
                if p > size:
                    raise self._err(pos, "truncated block")
            if fhd & 0x04:
                p += 4
            if p > size:
                raise self._err(pos, "truncated frame")
            kind, count, ep = self._classify(fd, pos, p - pos, fcs, first)
            self.offs.append(pos)
            self.lens.append(p - pos)
            self.kinds.append(kind)
            self.counts.append(count)
            self.ends.append(ep)
            pos = p
            if stop_after_end and kind == EPOCH_END:
                break

    def _fits(self, fcs):
        """The count of a data record of fcs content bytes, or None."""
        if self._px is None or fcs is None or fcs < self._hlen:
            return None
        if self.data_kind == SAMPLE:
            return 1 if fcs == self._hlen + self._px else None
        q, r = divmod(fcs - self._hlen, 16 + self._px)
        return q if r == 0 and q >= 1 else None

    def _classify(self, fd, pos, length, fcs, first):
        data, btype, bsize = first
        raw = btype == 0 and bsize >= HDR_LEN
        n = self._fits(fcs)
        if n is not None and not raw:
            return DATA, n, None
        if self._known and self._known[0] == pos:
            h = self._known[1]
        elif raw:
            h = HDR.unpack(self._pread(fd, HDR_LEN, data))
        else:
            h = self._decompress_header(fd, pos, length, data, btype,
                                        bsize)
        if h[0] != MAGIC:
            raise self._err(pos, f"bad record magic {h[0]:08x}, not an rv "
                                 "record")
        kind = h[3]
        if kind in (SAMPLE, BATCH):
            if self.data_kind is None:
                self.data_kind = kind
                self._hlen = h[2]
                u8 = h[4] == U8
                self._px = h[9] * h[10] * h[11] if u8 else None
            return DATA, (h[12] if kind == BATCH else 1), None
        if kind == EPOCH_END:
            return EPOCH_END, 0, h[6]
        return META, 0, None

    def _decompress_header(self, fd, pos, length, data, btype, bsize):
        """The record header of the frame at pos: its first block (the
        whole frame if that is not enough) decompressed."""
        for n in (data + (1 if btype == 1 else bsize) - pos, length):
            frame = self._pread(fd, n, pos)
            try:
                r = zstandard.ZstdDecompressor(
                    max_window_size=WINDOW_MAX).stream_reader(
                        frame, read_across_frames=False)
                h = r.read(HDR_LEN)
            except zstandard.ZstdError as e:
                raise self._err(pos, f"corrupt frame: {e}") from None
            if len(h) == HDR_LEN:
                return HDR.unpack(h)
        raise self._err(pos, "frame ends inside the record's header")

    def _epochs(self):
        """(first data index, data records) per epoch, epoch-ends of one
        number in a row joined, as rv-stream(5) joins them."""
        out = []
        start = idx = 0
        last_end = None
        for kind, ep in zip(self.kinds, self.ends):
            if kind == DATA:
                idx += 1
            elif kind == EPOCH_END:
                if last_end == ep and out:
                    out[-1][1] += idx - start
                else:
                    out.append([start, idx - start])
                last_end = ep
                start = idx
        if idx > start:  # no epoch-end after them: the reader says so
            out.append([start, idx - start])
        return [tuple(e) for e in out]

    @property
    def data_records(self):
        return sum(1 for k in self.kinds if k == DATA)

    def ranges(self, part, unit=1):
        """[offset, length] byte ranges of the frames a slot reads: every
        record that is not data, and the data records part owns (see
        Part), unit being the data records of one batch (batch_size for
        a stream of samples, 1 for batches).  Adjacent frames are joined
        into one range."""
        keep = part.owned_records([n for _, n in self.epochs], unit)
        out = []
        i = 0
        for off, ln, kind in zip(self.offs, self.lens, self.kinds):
            if kind == DATA:
                mine = i in keep
                i += 1
                if not mine:
                    continue
            if out and out[-1][0] + out[-1][1] == off:
                out[-1][1] += ln
            else:
                out.append([off, ln])
        return out


def owned(start, n, stride, offset):
    """How many of the indices start..start+n-1 are offset mod stride."""
    def below(x):  # indices i < x with i % stride == offset
        return (x - offset + stride - 1) // stride if x > offset else 0
    return below(start + n) - below(start)


def _ceil(a, b):
    return -(-a // b)


class Part:
    """What one slot reads of one file.

    Its rank takes the file's data records (samples or batches, numbered
    from 0 over the whole file) whose number i has i % stride == offset
    (stride 1: all), and reads them in batches: a batch record is one, a
    sample stream is collated per epoch into batches of batch_size.
    Numbered from 0 over the file, the rank's batches whose number u has
    u % workers == worker are this slot's (workers 1: all).  So the
    batches a rank reads, and their number, do not depend on how many
    workers it has.
    """

    __slots__ = ("file", "stride", "offset", "workers", "worker")

    def __init__(self, file, stride=1, offset=0, workers=1, worker=0):
        self.file, self.stride, self.offset = file, stride, offset
        self.workers, self.worker = workers, worker

    def __repr__(self):
        return (f"Part(file={self.file}, records {self.offset} mod "
                f"{self.stride}, batches {self.worker} mod {self.workers})")

    def __getstate__(self):
        return (self.file, self.stride, self.offset, self.workers,
                self.worker)

    def __setstate__(self, st):
        (self.file, self.stride, self.offset, self.workers,
         self.worker) = st

    @property
    def whole(self):
        return self.stride == 1 and self.workers == 1

    def counts(self, epochs, unit=1):
        """This part's batches in each epoch, the file's epochs holding
        epochs[e] data records, unit of them to a batch."""
        out = []
        a = u = 0
        for m in epochs:
            units = _ceil(owned(a, m, self.stride, self.offset), unit)
            out.append(owned(u, units, self.workers, self.worker))
            a += m
            u += units
        return out

    def owned_records(self, epochs, unit=1):
        """The numbers of the data records this part reads (a set)."""
        keep = set()
        a = u = 0
        for m in epochs:
            j = 0
            for i in range(a + (self.offset - a) % self.stride, a + m,
                           self.stride):
                if (u + j // unit) % self.workers == self.worker:
                    keep.add(i)
                j += 1
            a += m
            u += _ceil(j, unit)
        return keep


class RangesSource:
    """A reader source (see _stream._Source) that is the concatenation of
    byte ranges of a file, read with pread: what one slot reads.  off is
    the file offset of the next byte, so errors name real offsets."""

    _rv_source = True

    def __init__(self, path, ranges, name=None):
        self.name = name or os.fspath(path)
        self.fd = os.open(path, os.O_RDONLY)
        self.ranges = ranges
        self.i = 0
        self.pos = ranges[0][0] if ranges else 0
        self.off = self.pos
        self.bytes_read = 0

    def _end(self):
        o, n = self.ranges[self.i]
        return o + n

    def _next_range(self):
        while self.i < len(self.ranges) and self.pos >= self._end():
            self.i += 1
            if self.i < len(self.ranges):
                self.pos = self.ranges[self.i][0]
        self.off = self.pos

    def readinto(self, mv):
        got, n = 0, len(mv)
        while got < n and self.i < len(self.ranges):
            want = min(n - got, self._end() - self.pos)
            k = os.preadv(self.fd, [mv[got:got + want]], self.pos)
            if not k:
                break  # the file shrank: the reader says truncated
            got += k
            self.pos += k
            self.bytes_read += k
            self._next_range()
        return got

    def skip(self, n):
        if self.i >= len(self.ranges) or self.pos + n > self._end():
            return False
        self.pos += n
        self._next_range()
        return True

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
