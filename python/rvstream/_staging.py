"""Where a batch's tensors live: page-locked (pinned) host memory, so that
.to(device, non_blocking=True) overlaps the copy with the host's work, or
ordinary memory.

Pinned buffers come from torch's caching host allocator
(torch.empty(..., pin_memory=True)), which is the ring they are reused
from: a freed block goes back to its cache and is handed out again, but
only once the non_blocking copies that read it (recorded on their CUDA
streams) are done.  The reader keeps no pinned pool of its own, as it
does for ordinary buffers: a batch the caller has dropped may still be
on its way to the device, and only the allocator knows.  For that to
hold, every tensor of a pinned batch is a view of the allocator's tensor
(slices and .view(dtype)), never a torch.from_numpy of it.

Pinning needs CUDA: without it, pin_memory=True warns once and the batches
are ordinary, as torch's DataLoader does.
"""

import warnings

try:
    import torch
except ImportError:  # numpy arrays instead of tensors
    torch = None

_warned = set()


def warn_once(key, msg, stacklevel=3):
    """warnings.warn(msg) the first time key is seen in this process."""
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(msg, stacklevel=stacklevel + 1)


def cuda_available():
    """Whether page-locked memory can be had (a hook for the tests)."""
    return torch is not None and torch.cuda.is_available()


def use_pinned(pin_memory, stacklevel=3):
    """pin_memory, as it can be had: False, with one warning per process,
    without torch or CUDA."""
    if not pin_memory:
        return False
    if cuda_available():
        return True
    why = "torch is not installed" if torch is None else \
        "CUDA is not available"
    warn_once("pin", f"rvstream: pin_memory=True, but {why}: batches are "
              "not pinned", stacklevel)
    return False


def pinned_empty(nbytes):
    """A 1-D uint8 tensor of nbytes page-locked bytes, from torch's caching
    host allocator.  The reader's only way to pinned memory: the tests
    replace it to see that it is called."""
    return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
