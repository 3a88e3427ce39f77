#!/usr/bin/env python3
"""Streams with hostile values, and the Python bridge's reading of them,
for hostile-values.bats.

usage: hostile_values_checks.py edit IN OUT EDIT...
           rewrite records of the stream IN into OUT, each record its own
           zstd frame with a checksum, as rv writes them.  EDIT is one of
             weight:R=W      the weight of sample record R
             bweight:R:I=W   the weight of member I of batch record R
             count:R=N       the count of epoch-end record R
             meta:R:KEY=VAL  KEY set to VAL in meta record R
           R counts records from 0, as rv-inspect --dump does.
       hostile_values_checks.py read FILE [float]
           read FILE with rvstream (batches of 4 when it holds samples;
           with `float`, normalise each batch as b.float() does); print
           `ok N` (the batches read) and exit 0, or print
           `TYPE: message` and exit 1.  A float tensor holding NaN or
           inf is reported as `nonfinite` with exit 3.
"""
import math
import os
import struct
import subprocess
import sys

HDR = struct.Struct("<IHHBBHIQiIIIIIffQ")
SAMPLE, BATCH, EPOCH_END, META = 1, 2, 3, 4


def records(raw):
    off = 0
    while off < len(raw):
        h = list(HDR.unpack_from(raw, off))
        hlen, plen = h[2], h[16]
        yield h, raw[off + HDR.size:off + hlen], \
            bytearray(raw[off + hlen:off + hlen + plen])
        off += hlen + plen


def edit(src, dst, edits):
    import zstandard
    raw = subprocess.run(["zstd", "-dcq", src], capture_output=True,
                         check=True).stdout
    recs = list(records(raw))
    for e in edits:
        what, _, rest = e.partition(":")
        if what == "meta":
            r, _, kv = rest.partition(":")
            key, _, val = kv.partition("=")
            h, extra, payload = recs[int(r)]
            assert h[3] == META, e
            lines = [ln for ln in payload.decode("utf-8", "surrogateescape").split("\n")
                     if ln and ln.partition("=")[0] != key]
            lines.append(f"{key}={val}")
            payload[:] = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
            h[16] = len(payload)
            continue
        where, _, val = rest.partition("=")
        if what == "weight":
            h = recs[int(where)][0]
            assert h[3] == SAMPLE, e
            h[14] = float(val)
        elif what == "bweight":
            r, _, i = where.partition(":")
            h, _, payload = recs[int(r)]
            assert h[3] == BATCH, e
            struct.pack_into("<f", payload, 12 * h[12] + 4 * int(i),
                             float(val))
        elif what == "count":
            h = recs[int(where)][0]
            assert h[3] == EPOCH_END, e
            h[12] = int(val)
        else:
            raise SystemExit(f"bad edit {e}")
    z = zstandard.ZstdCompressor(level=1, write_checksum=True,
                                 write_content_size=True)
    with open(dst, "wb") as f:
        for h, extra, payload in recs:
            f.write(z.compress(HDR.pack(*h) + extra + bytes(payload)))


def read(path, mode):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                    "python"))
    import numpy as np
    import rvstream
    n = 0
    try:
        with rvstream.open_stream(path, batch_size=4,
                                  as_torch=False) as r:
            for b in r:
                n += 1
                if mode == "float":
                    x = b.float()
                    if not np.isfinite(np.asarray(x)).all():
                        print("nonfinite")
                        return 3
    except Exception as ex:  # the type and message are the test's
        print(f"{type(ex).__name__}: {ex}")
        return 1
    print(f"ok {n}")
    return 0


def main():
    a = sys.argv[1:]
    if len(a) >= 3 and a[0] == "edit":
        edit(a[1], a[2], a[3:])
        return 0
    if len(a) in (2, 3) and a[0] == "read":
        return read(a[1], a[2] if len(a) == 3 else "")
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
