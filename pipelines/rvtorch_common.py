"""What the PyTorch trainers in this directory share: rvstream (from the
tree when it is not installed) and rv-train-gpu's cnn-small model.
pipelines/torch-train.py trains it in one process, pipelines/ddp-train.py
in several (DistributedDataParallel)."""

import os
import sys

import torch.nn as nn

try:
    import rvstream
except ImportError:  # run from the repository: use its python/
    sys.path.insert(0, os.path.join(os.path.dirname(
        os.path.abspath(__file__)), os.pardir, "python"))
    import rvstream

__all__ = ["CnnSmall", "rvstream"]


class CnnSmall(nn.Module):
    """rv-train-gpu's cnn-small: two conv stages, a small classifier.
    body() gives the last layer's input, which the gradnorm needs."""

    def __init__(self, c, h, w, classes):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(64 * (h // 4) * (w // 4), 128), nn.ReLU(),
            nn.Dropout(0.25))
        self.head = nn.Linear(128, classes)

    def forward(self, x):
        return self.head(self.body(x))
