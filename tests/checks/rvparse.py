#!/usr/bin/env python3
"""Independent reader of raw rv records, for tests: it does not share code
with lib/, so the tests check the format against rv-stream(5) itself.

usage: zstd -dc x.rvs | python3 tests/checks/rvparse.py [--idx IMAGES LABELS]
    prints one TSV line per record: kind epoch id label HxWxC dtype count
    payload_len; samples inside batches are listed as kind 'bsample'.
    --idx checks every u8 sample's pixels and label against the IDX files
    (gzipped) and prints 'idx ok N' at the end, or exits 1 at a mismatch.
    --sha prints a sha1 of each sample's pixels as a last column.
"""
import gzip
import hashlib
import struct
import sys

HDR = struct.Struct("<IHHBBHIQiIIIIIffQ")
KINDS = {1: "sample", 2: "batch", 3: "epoch-end", 4: "meta"}
DTYPES = {0: "none", 1: "u8", 2: "jpeg", 3: "png"}


def records(data):
    off = 0
    while off < len(data):
        (magic, ver, hlen, kind, dtype, flags, epoch, rid, label, h, w, c,
         count, uses, weight, score, plen) = HDR.unpack_from(data, off)
        if magic != 0x31525652:
            raise SystemExit(f"bad magic at byte {off}")
        payload = data[off + hlen: off + hlen + plen]
        if len(payload) != plen:
            raise SystemExit(f"short payload at byte {off}")
        yield dict(kind=kind, dtype=dtype, flags=flags, epoch=epoch, id=rid,
                   label=label, h=h, w=w, c=c, count=count, uses=uses,
                   weight=weight, score=score, payload=payload)
        off += hlen + plen


def main():
    args = sys.argv[1:]
    idx = None
    sha = "--sha" in args
    if "--idx" in args:
        i = args.index("--idx")
        img = gzip.open(args[i + 1]).read()
        lab = gzip.open(args[i + 2]).read()
        idx = (img, lab)
    data = sys.stdin.buffer.read()
    checked = 0
    out = sys.stdout
    for r in records(data):
        k = KINDS.get(r["kind"], "?")
        if k == "batch":
            n = r["count"]
            ids = struct.unpack_from(f"<{n}Q", r["payload"], 0)
            labels = struct.unpack_from(f"<{n}i", r["payload"], 8 * n)
            px = r["payload"][16 * n:]
            size = r["h"] * r["w"] * r["c"]
            out.write(f"batch\t{r['epoch']}\t-\t-\t{r['h']}x{r['w']}x{r['c']}"
                      f"\tu8\t{n}\t{len(r['payload'])}\n")
            for j in range(n):
                p = px[j * size:(j + 1) * size]
                extra = "\t" + hashlib.sha1(p).hexdigest() if sha else ""
                out.write(f"bsample\t{r['epoch']}\t{ids[j]}\t{labels[j]}"
                          f"\t{r['h']}x{r['w']}x{r['c']}\tu8\t1\t{size}"
                          f"{extra}\n")
            continue
        extra = ""
        if sha and k == "sample":
            extra = "\t" + hashlib.sha1(r["payload"]).hexdigest()
        out.write(f"{k}\t{r['epoch']}\t{r['id']}\t{r['label']}\t"
                  f"{r['h']}x{r['w']}x{r['c']}\t{DTYPES.get(r['dtype'], '?')}"
                  f"\t{r['count']}\t{len(r['payload'])}{extra}\n")
        if k == "meta":
            for line in r["payload"].decode().splitlines():
                out.write(f"#meta\t{line}\n")
        if idx and k == "sample" and r["dtype"] == 1:
            i = r["id"]
            want = idx[0][16 + 784 * i: 16 + 784 * (i + 1)]
            if r["payload"] != want or r["label"] != idx[1][8 + i]:
                sys.exit(f"sample {i} differs from the IDX files")
            checked += 1
    if idx:
        out.write(f"idx ok {checked}\n")


main()
