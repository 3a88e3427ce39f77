"""rvstream: train in PyTorch from an rv pipeline.

Read an rv stream (rv-stream(5)) of batches or samples into tensors, and
write the per-sample feedback (rv-feedback(5)) that rv-score learns from:

    import rvstream, torch.nn.functional as F

    fb = rvstream.FeedbackWriter("feedback.fifo")
    for step, b in enumerate(rvstream.batches(sys.stdin.buffer)):
        x = b.float()                       # N x C x H x W, normalised
        h = body(x)                         # input of the last layer
        z = head(h)
        loss = F.cross_entropy(z, b.labels, reduction="none")
        (b.weights * loss).mean().backward()
        ...
        fb.write(b.ids, b.epoch, step, loss,
                 rvstream.last_layer_gradnorm(z, b.labels, h))
    fb.close()

For data-parallel training, RvDataset splits a list of shard files
between ranks and DataLoader workers (each reading only its part), gives
every rank the same number of steps, and resumes at a step:

    ds = rvstream.RvDataset(files, skip_batches=step)   # rank from torchrun
    for x, y, ids, w in DataLoader(ds, batch_size=None, num_workers=4,
                                   pin_memory=True):
        x = x.to("cuda", non_blocking=True)

Reader(..., pin_memory=True, skip_batches=K), len(reader), and
Batch.float(dtype=torch.bfloat16) do the same for one stream.

Pure Python on numpy and python3-zstandard; torch is needed only for
tensors (without it, batches hold numpy arrays).  See python/README.md.
"""

from ._stream import (Batch, EpochEnd, Meta, Reader, RvStreamError, Sample,
                      batches, open_stream)
from ._feedback import FeedbackWriter, last_layer_gradnorm
from ._version import __version__

__all__ = [
    "Batch", "EpochEnd", "Meta", "Reader", "RvStreamError", "Sample",
    "batches", "open_stream", "FeedbackWriter", "last_layer_gradnorm",
    "RvDataset",
]


def __getattr__(name):
    # RvDataset subclasses torch's IterableDataset: import torch only
    # when it is asked for.
    if name == "RvDataset":
        from ._dataset import RvDataset
        return RvDataset
    raise AttributeError(f"module 'rvstream' has no attribute '{name}'")
