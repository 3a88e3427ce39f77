"""Pillow baseline of bench/decode.sh: decode JPEG files to RGB the way a
PyTorch ImageFolder loader does (Image.open(...).convert('RGB')), files
preloaded in memory, one process, one thread.  With --max-side, img.draft()
first asks libjpeg for its DCT scaling (1/2, 1/4, 1/8: the largest that
keeps both sides at least the fitted size), which is Pillow's counterpart of
rv-decode --max-side; no resize follows.

usage: pil_decode.py [--max-side N] [--passes N | --seconds S] file ...
Prints one line: images=N seconds=S rate=R loop_minflt=F pixels=P
loop_cpu=C (the timed loop's process CPU seconds).
"""
import argparse
import io
import resource
import sys
import time

from PIL import Image


def fit(w, h, side):
    """The size to ask draft() for: longer side = side, shorter side
    rounded down, since draft() scales only while both sides stay >= the
    request (rounding up would stop 500x375 -> 250x188 at 1/1)."""
    if side <= 0 or max(w, h) <= side:
        return w, h
    if w >= h:
        return side, max(1, h * side // w)
    return max(1, w * side // h), side


def decode(data, side):
    img = Image.open(io.BytesIO(data))
    if side:
        img.draft('RGB', fit(img.width, img.height, side))
    img = img.convert('RGB')
    img.load()
    return img


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--max-side', type=int, default=0)
    ap.add_argument('--passes', type=int, default=0)
    ap.add_argument('--seconds', type=float, default=1.0)
    ap.add_argument('files', nargs='+')
    a = ap.parse_args()

    blobs = []
    for path in a.files:
        with open(path, 'rb') as f:
            blobs.append(f.read())
    pixels = 0
    for b in blobs:
        img = decode(b, a.max_side)
        pixels += img.width * img.height

    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    c0 = time.process_time()
    t0 = time.perf_counter()
    done = 0
    while True:
        for b in blobs:
            decode(b, a.max_side)
        done += 1
        t = time.perf_counter() - t0
        if (done >= a.passes) if a.passes else (t >= a.seconds):
            break
    cpu = time.process_time() - c0
    f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    n = done * len(blobs)
    print(f'images={n} seconds={t:.4f} rate={n / t:.1f} '
          f'loop_minflt={f1 - f0} pixels={pixels} loop_cpu={cpu:.4f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
