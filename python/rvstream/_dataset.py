"""An rv stream as a torch IterableDataset, for code built on DataLoader.

The stream is already batched (or collated here with batch_size), so
the DataLoader takes batch_size=None.  A pipe has one reader: with
workers, each worker reads the whole file and keeps every n-th batch,
which only pays when a file is shared and decompressing it is cheaper
than what the workers do after; for stdin, workers are refused.
"""

import os

import torch

from ._stream import Reader


class RvDataset(torch.utils.data.IterableDataset):
    """Yields (images, labels, ids, weights) per batch, or Batch objects
    with raw=True.  src, batch_size: as for Reader.  Use with
    DataLoader(RvDataset(...), batch_size=None)."""

    def __init__(self, src="-", batch_size=None, raw=False):
        super().__init__()
        self.src, self.batch_size, self.raw = src, batch_size, raw

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        k, n = (info.id, info.num_workers) if info else (0, 1)
        if n > 1 and (not isinstance(self.src, (str, os.PathLike)) or
                      os.fspath(self.src) == "-"):
            raise RuntimeError(
                "RvDataset: a pipe or file object has one reader: use "
                "num_workers=0 (rv's own programs do the parallel work)")
        with Reader(self.src, self.batch_size) as r:
            for i, b in enumerate(r):
                if i % n != k:
                    continue
                yield b if self.raw else (b.images, b.labels, b.ids,
                                          b.weights)
