"""Read an rv stream of batches from stdin with rvstream, as a PyTorch
training loop would, and report the reader's time (bench/torch-reader.sh).

usage: python3 bench/torch_reader.py [--float] [--ready FILE] [STREAM]
It imports torch first, then creates FILE (so that the caller can start
the writer only then: importing torch takes a second), then reads STREAM
(default stdin).  Each batch becomes tensors (u8 images, ids, labels, weights); with
--float the images are also normalised to float32 N x C x H x W, as a
loop does before its forward pass.  Prints one JSON line: batches,
samples, megabytes of pixels, seconds in the reader (inside next()),
seconds in float(), the wall time from the first byte asked for, and
the time of day at the end (end), which the caller measures to, so that
the interpreter's slow exit with torch loaded is not counted.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "python"))
import torch  # noqa: E402

import rvstream  # noqa: E402

torch.set_num_threads(1)
args = sys.argv[1:]
to_float = "--float" in args
if "--float" in args:
    args.remove("--float")
if args[:1] == ["--ready"]:
    open(args[1], "w").close()
    args = args[2:]
it = iter(rvstream.Reader(args[0] if args else "-"))
nb = ns = px = 0
t_read = t_float = 0.0
t0 = time.perf_counter()
while True:
    t = time.perf_counter()
    b = next(it, None)
    t_read += time.perf_counter() - t
    if b is None:
        break
    nb += 1
    ns += len(b)
    px += b.images.numel()
    if to_float:
        t = time.perf_counter()
        b.float()
        t_float += time.perf_counter() - t
wall = time.perf_counter() - t0
end = time.time()
print(json.dumps(dict(batches=nb, samples=ns, mb=round(px / 1e6, 3),
                      read_s=round(t_read, 4), float_s=round(t_float, 4),
                      wall_s=round(wall, 4), end=end)))
