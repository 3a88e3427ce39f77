"""Finding the rv programs: in $RV_BIN when it is set (the one variable
rvstream reads for them), else on PATH; and their version, which must be
rvstream's own (rvstream.__version__): a bridge and programs of two
releases may disagree on the stream."""

import os
import shutil
import subprocess

from ._version import __version__


def bin_dir():
    """$RV_BIN, or None."""
    return os.environ.get("RV_BIN") or None


def find(name):
    """The path of rv program `name` (rv-decode ...)."""
    d = bin_dir()
    if d:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
        raise FileNotFoundError(f"rvstream: RV_BIN={d}: no {name} there")
    p = shutil.which(name)
    if p is None:
        raise FileNotFoundError(f"rvstream: {name} is not on PATH: install "
                                "rv (make install) or set RV_BIN to the "
                                "directory of its programs")
    return p


def env():
    """The environment for a pipeline of rv programs: PATH with $RV_BIN
    first."""
    e = dict(os.environ)
    d = bin_dir()
    if d:
        e["PATH"] = d + os.pathsep + e.get("PATH", "")
    return e


_checked = {}


def version(name="rv-decode"):
    """The version the program prints (`rv-decode --version`)."""
    p = find(name)
    out = subprocess.run([p, "--version"], capture_output=True, text=True,
                         check=True).stdout.split()
    return out[-1] if out else ""


def check(name="rv-decode"):
    """Raise RuntimeError when the program's version is not rvstream's."""
    p = find(name)
    if p not in _checked:
        v = version(name)
        if v != __version__:
            raise RuntimeError(f"rvstream {__version__}, but {p} is rv "
                               f"{v}: install the rvstream of the same rv "
                               "(pip install ./python in its tree)")
        _checked[p] = v
    return p
