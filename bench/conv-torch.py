"""conv-torch: the PyTorch side of bench/conv-backends.sh.

Times the layers of the same table as conv-backends.c with PyTorch 1.13
on CPU (run with /usr/bin/python3), NCHW float32 tensors as a PyTorch
training loop holds them, so each call pays ideep's reorders to and from
oneDNN's blocked layouts.  Passes: fwd (F.conv2d under no_grad),
bwd_data, bwd_weights, bwd (aten.convolution_backward with the output
mask of that pass; bwd: what autograd asks for in a step) and step
(nn.Conv2d forward, then backward through autograd, grads set to None
first as zero_grad does).  Prints, tab-separated:
  info NAME BACKEND        the convolution backend torch selects
  time NAME PASS MS        median of the timed repetitions
"""

import argparse
import sys
import time

import torch
import torch.nn.functional as F


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def timed(fn, reps, warm):
    for _ in range(warm):
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return median(t)


def read_layers(path):
    layers = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split('#', 1)[0].split()
            if not line:
                continue
            if len(line) != 11:
                sys.exit(f"conv-torch.py: '{path}': line {lineno}: bad layer")
            layers.append((line[0], *map(int, line[1:])))
    return layers


def run(layer, reps, warm):
    name, n, ci, h, w, co, k, stride, pad, bias, dx = layer
    g = torch.Generator().manual_seed(0x5eed)
    x = torch.rand(n, ci, h, w, generator=g) * 2 - 1
    m = torch.nn.Conv2d(ci, co, k, stride, pad, bias=bool(bias))
    wt, bt = m.weight.detach(), m.bias.detach() if bias else None
    with torch.no_grad():
        y = F.conv2d(x, wt, bt, stride, pad)
    dy = torch.rand(y.shape, generator=g) * 2 - 1
    be = torch._C._select_conv_backend(x, wt, bt, [stride] * 2, [pad] * 2,
                                       [1, 1], False, [0, 0], 1)
    print(f"info\t{name}\t{str(be).split('.')[-1]}")

    def fwd():
        with torch.no_grad():
            F.conv2d(x, wt, bt, stride, pad)

    def bwd(mask):
        def f():
            torch.ops.aten.convolution_backward(
                dy, x, wt, [co] if bias else None, [stride] * 2, [pad] * 2,
                [1, 1], False, [0, 0], 1, mask)
        return f

    xs = x.clone().requires_grad_(bool(dx))

    def step():
        m.weight.grad = None
        if bias:
            m.bias.grad = None
        xs.grad = None
        m(xs).backward(dy)

    res = [
        ('fwd', timed(fwd, reps, warm)),
        ('bwd_data', timed(bwd([True, False, False]), reps, warm)),
        ('bwd_weights', timed(bwd([False, True, bool(bias)]), reps, warm)),
        ('bwd', timed(bwd([bool(dx), True, bool(bias)]), reps, warm)),
        ('step', timed(step, reps, warm)),
    ]
    for p, ms in res:
        print(f"time\t{name}\t{p}\t{ms:.4f}")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(prog='conv-torch.py')
    ap.add_argument('-r', type=int, default=25, help='timed repetitions')
    ap.add_argument('-w', type=int, default=3, help='warm-up repetitions')
    ap.add_argument('-t', type=int, default=2, help='threads')
    ap.add_argument('layers')
    a = ap.parse_args()
    if a.r < 1 or a.w < 0 or a.t < 1:
        ap.error('-r and -t must be at least 1, -w at least 0')
    torch.set_num_threads(a.t)
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads,"
          f" mkldnn {torch.backends.mkldnn.is_available()},"
          f" {a.r} reps after {a.w} warm-up")
    for layer in read_layers(a.layers):
        run(layer, a.r, a.w)


if __name__ == '__main__':
    main()
