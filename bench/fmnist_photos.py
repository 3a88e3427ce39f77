"""Build "Fashion-MNIST on photographs": a labelled JPEG set of
ImageNet-sized photographs for `bench/frontier.sh photos`, made from data
Debian ships.

usage: fmnist_photos.py FMNIST_DIR PHOTO_DIR OUT N_TRAIN N_TEST

Each image is a 480x360 crop of one of the photographs in PHOTO_DIR (the
12 of mate-backgrounds, bench/photos.sh's full/nature), scaled first so
that its shorter side is 480, mirrored half the time, with a
Fashion-MNIST garment laid on it: the 28x28 image scaled (bicubic) to a
random side from 192 to 336, at a random place wholly inside the crop,
painted a random colour shaded by the garment's own intensity, opaque
where the garment is (its intensity times 4, at most 1), transparent
around it.  The label is the garment's.  JPEG quality 90, 4:2:0.  The
first N_TRAIN training images go to OUT/train/C/NNNNN.jpg and the first
N_TEST test images to OUT/test/C/NNNNN.jpg, C the class 0-9 (rv-decode
labels a folder's subdirectories in sorted order, so directory C is
label C).  Each file is written to a temporary name and renamed.

Every image's draws come from its own generator, seeded by its set and
index, so the same inputs give the same files whatever the process count.
Run it with /usr/bin/python3 (Debian's python3-pil and python3-numpy).
"""
import gzip
import multiprocessing
import os
import random
import struct
import sys

import numpy as np
from PIL import Image

W, H = 480, 360
SIDE_MIN, SIDE_MAX = 192, 336
QUALITY = 90

PHOTOS = None  # the photographs, shorter side scaled to 480; per worker


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, n * rows * cols, 16).reshape(
            n, rows, cols)
    if magic == 2049:
        return np.frombuffer(data, np.uint8, n, 8)
    raise SystemExit("fmnist_photos.py: %s: not an IDX file" % path)


def photo_names(d):
    names = [n for n in sorted(os.listdir(d)) if n.lower().endswith(".jpg")]
    if not names:
        raise SystemExit("fmnist_photos.py: %s: no photographs (*.jpg)" % d)
    return names


def load_photos(d):
    out = []
    for name in photo_names(d):
        im = Image.open(os.path.join(d, name)).convert("RGB")
        s = 480 / min(im.size)
        im = im.resize((round(im.size[0] * s), round(im.size[1] * s)),
                       Image.BICUBIC)
        out.append(np.asarray(im, dtype=np.float32))
    return out


def init(photo_dir):
    global PHOTOS
    PHOTOS = load_photos(photo_dir)


def make(job):
    """job: (set name, index, 28x28 garment bytes, label, path)."""
    name, i, garment, label, path = job
    rng = random.Random("%s-%d" % (name, i))
    ph = PHOTOS[rng.randrange(len(PHOTOS))]
    y = rng.randrange(ph.shape[0] - H + 1)
    x = rng.randrange(ph.shape[1] - W + 1)
    bg = ph[y:y + H, x:x + W].copy()
    if rng.random() < 0.5:
        bg = bg[:, ::-1]
    side = rng.randint(SIDE_MIN, SIDE_MAX)
    g = Image.frombytes("L", (28, 28), garment).resize((side, side),
                                                        Image.BICUBIC)
    g = np.asarray(g, dtype=np.float32)[:, :, None] / 255.0
    a = np.clip(4 * g, 0, 1)
    tint = np.array([rng.randint(40, 255) for _ in range(3)], np.float32)
    tint = tint * (0.35 + 0.65 * g)
    gy = rng.randrange(H - side + 1)
    gx = rng.randrange(W - side + 1)
    region = bg[gy:gy + side, gx:gx + side]
    bg[gy:gy + side, gx:gx + side] = region * (1 - a) + tint * a
    out = Image.fromarray(np.clip(bg + 0.5, 0, 255).astype(np.uint8), "RGB")
    tmp = path + ".tmp"
    out.save(tmp, "JPEG", quality=QUALITY, subsampling=2)
    os.replace(tmp, path)
    return label


def main():
    if len(sys.argv) != 6:
        raise SystemExit(__doc__.split("\n\n")[1])
    fm, photo_dir, out = sys.argv[1:4]
    try:
        counts = {"train": int(sys.argv[4]), "test": int(sys.argv[5])}
    except ValueError:
        raise SystemExit("fmnist_photos.py: N_TRAIN, N_TEST: not integers")
    photo_names(photo_dir)
    jobs = []
    for name, prefix in (("train", "train"), ("test", "t10k")):
        images = idx(os.path.join(fm, prefix + "-images-idx3-ubyte.gz"))
        labels = idx(os.path.join(fm, prefix + "-labels-idx1-ubyte.gz"))
        n = counts[name]
        if n < 1 or n > len(images):
            raise SystemExit("fmnist_photos.py: %s: %d images, not %d"
                             % (name, len(images), n))
        for i in range(n):
            path = os.path.join(out, name, str(int(labels[i])),
                                "%05d.jpg" % i)
            jobs.append((name, i, images[i].tobytes(), int(labels[i]), path))
    for name in counts:
        for c in range(10):
            os.makedirs(os.path.join(out, name, str(c)), exist_ok=True)
    with multiprocessing.Pool(os.cpu_count(), init, (photo_dir,)) as pool:
        for _ in pool.imap_unordered(make, jobs, chunksize=64):
            pass


if __name__ == "__main__":
    main()
