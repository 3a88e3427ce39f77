"""Writing per-sample feedback (rv-feedback(5)) that rv-score learns from.

The writer behaves as rv-train-gpu's: training never waits on feedback.
Lines queue in a bounded deque; each write() hands the FIFO as many whole
lines as it takes right now, in non-blocking writes of at most PIPE_BUF
bytes (atomic on a FIFO: in whole or not at all); a full queue drops its
oldest line and counts it; a FIFO with no reader is opened again at most
every 200 ms.  A regular file (or a path that does not exist yet) is
created or truncated and written normally.
"""

import collections
import errno
import math
import os
import select
import stat
import time

PIPE_BUF = getattr(select, "PIPE_BUF", 512)
REOPEN_EVERY = 0.2
U64 = (1 << 64) - 1
F32_MAX = 3.4028234663852886e38


def _tolist(x):
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu()
    if hasattr(x, "tolist"):
        return x.tolist()
    return list(x)


class FeedbackWriter:
    """Write rv-feedback(5) lines to path, a FIFO or a file.

    write(ids, epoch, step, losses, gradnorms) queues one line per sample
    (ids, losses, gradnorms: tensors, arrays or sequences of equal length;
    epoch: one value or one per sample; step: one value) and writes what
    the FIFO takes without waiting.  written, dropped and queued count
    every line (each is in exactly one); close() tries for up to
    `timeout` seconds to write what is queued, then counts it dropped.
    """

    def __init__(self, path, queue_lines=65536):
        if queue_lines < 1:
            raise ValueError("queue_lines must be at least 1")
        self.path = os.fspath(path)
        self.written = 0
        self.dropped = 0
        # full, the deque drops its oldest line as a new one comes
        self._q = collections.deque(maxlen=queue_lines)
        self._fd = None
        self._file = None
        self._next_open = 0.0
        try:
            st = os.stat(self.path)
            self._fifo = stat.S_ISFIFO(st.st_mode)
        except FileNotFoundError:
            self._fifo = False
        if not self._fifo:
            # a regular file, a new one, or a device such as /dev/null
            self._file = open(self.path, "wb")
        else:
            self._try_open()

    @property
    def queued(self):
        return len(self._q)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _try_open(self):
        now = time.monotonic()
        if now < self._next_open:
            return
        self._next_open = now + REOPEN_EVERY
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK |
                               os.O_CLOEXEC)
        except OSError as e:
            # ENXIO: no reader yet; ENOENT: the FIFO is being remade
            if e.errno not in (errno.ENXIO, errno.ENOENT):
                raise

    def write(self, ids, epoch, step, losses, gradnorms):
        ids, losses, gns = _tolist(ids), _tolist(losses), _tolist(gradnorms)
        n = len(ids)
        if len(losses) != n or len(gns) != n:
            raise ValueError(f"{n} ids, {len(losses)} losses and "
                             f"{len(gns)} gradnorms")
        if isinstance(epoch, int):
            epochs = [epoch] * n
        else:
            epochs = _tolist(epoch)
            if len(epochs) != n:
                raise ValueError(f"{n} ids and {len(epochs)} epochs")
        step = int(step)
        if not 0 <= step <= U64:
            raise ValueError(f"step {step} is out of range")
        # every line checked before any is queued: all or nothing
        lines = []
        for i, e, lo, g in zip(ids, epochs, losses, gns):
            for name, v in (("loss", lo), ("gradnorm", g)):
                if not (math.isfinite(v) and 0 <= v <= F32_MAX):
                    raise ValueError(
                        f"sample {int(i) & U64}: {name} {v} is not a "
                        "finite non-negative number (rv-feedback(5))")
            if not 0 <= int(e) <= 0xFFFFFFFF:
                raise ValueError(f"epoch {e} is out of range")
            lines.append(b"%d\t%d\t%d\t%.6g\t%.6g\n" %
                         (int(i) & U64, int(e), step, lo, g))
        q = self._q
        self.dropped += max(len(q) + len(lines) - q.maxlen, 0)
        q.extend(lines)
        self._pump()

    def _pump(self):
        q = self._q
        if self._file is not None:
            if q:
                self._file.write(b"".join(q))
                self._file.flush()
                self.written += len(q)
                q.clear()
            return
        if self._fd is None:
            self._try_open()
            if self._fd is None:
                return
        while q:
            chunk, k, size = [], 0, 0
            for line in q:
                if size + len(line) > PIPE_BUF:
                    break
                chunk.append(line)
                size += len(line)
                k += 1
            try:
                os.write(self._fd, b"".join(chunk))
            except BlockingIOError:
                return  # full: the lines stay queued
            except BrokenPipeError:
                # the reader left: its lines stay queued for the next
                os.close(self._fd)
                self._fd = None
                self._next_open = 0.0
                return
            for _ in range(k):
                q.popleft()
            self.written += k

    def flush(self, timeout=0.2):
        """Write what is queued, trying for up to timeout seconds;
        return True when the queue is empty."""
        end = time.monotonic() + timeout
        while True:
            self._pump()
            if not self._q or time.monotonic() >= end:
                return not self._q
            time.sleep(0.005)

    def close(self, timeout=0.2):
        """Flush for up to timeout seconds, count the rest as dropped."""
        if self._fd is None and self._file is None and not self._q:
            return
        self.flush(timeout)
        self.dropped += len(self._q)
        self._q.clear()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._file is not None:
            self._file.close()
            self._file = None


def last_layer_gradnorm(logits, labels, features, label_smoothing=0.0):
    """Per-sample norm of the gradient of the cross-entropy loss with
    respect to the last linear layer's weight and bias, from forward
    quantities only:

        ||softmax(z) - q|| * sqrt(||h||^2 + 1)

    z the logits (N x K), q the one-hot label (smoothed as by
    label_smoothing), h the last layer's input (N x D).  This is the
    gradnorm of rv-feedback(5), what rv-train-gpu writes.  No graph is
    built; the result is a float32 tensor of N norms on z's device.
    """
    import torch

    with torch.no_grad():
        z = logits.detach().float()
        p = torch.softmax(z, dim=1)
        q = torch.zeros_like(p)
        q.scatter_(1, labels.detach().view(-1, 1).long().to(z.device), 1.0)
        if label_smoothing:
            q = q * (1.0 - label_smoothing) + label_smoothing / z.shape[1]
        h = features.detach().float().flatten(1)
        return (p - q).norm(dim=1) * torch.sqrt((h * h).sum(dim=1) + 1.0)
