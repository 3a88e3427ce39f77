"""The build backend of rvstream (PEP 517 and PEP 660), in-tree and on the
standard library alone, so that `pip install ./python` needs nothing it
would have to download (a cluster node offline, a venv of Debian's
python3): it writes the wheel of the pure-Python package rvstream, its
version rvstream/_version.py's, the rv release its programs print.

Hooks: build_wheel, build_editable (a .pth file naming this tree),
build_sdist, and the metadata and requirement hooks pip may call.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "rvstream"
TAG = "py3-none-any"


def _version():
    with open(os.path.join(HERE, NAME, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m:
        raise RuntimeError("rvstream/_version.py: no __version__")
    return m.group(1)


def _metadata():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {_version()}\n"
        "Summary: Train in PyTorch from an rv pipeline: read rv streams "
        "into tensors, write rv-score's feedback\n"
        "License: see the rv source tree\n"
        "Requires-Python: >=3.9\n"
        "Requires-Dist: numpy\n"
        "Requires-Dist: zstandard\n"
        "Provides-Extra: torch\n"
        "Requires-Dist: torch; extra == \"torch\"\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme)


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _files():
    """The package's modules, as (path in the wheel, bytes)."""
    out = []
    pkg = os.path.join(HERE, NAME)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name), "rb") as f:
                out.append((f"{NAME}/{name}", f.read()))
    return out


def _write_wheel(directory, files):
    name = f"{NAME}-{_version()}-{TAG}.whl"
    di = _dist_info()
    files = list(files) + [
        (f"{di}/METADATA", _metadata().encode()),
        (f"{di}/WHEEL", ("Wheel-Version: 1.0\nGenerator: rvbuild\n"
                         f"Root-Is-Purelib: true\nTag: {TAG}\n").encode()),
        (f"{di}/top_level.txt", f"{NAME}\n".encode()),
    ]
    record = []
    for path, data in files:
        h = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
        record.append(f"{path},sha256={h.rstrip(b'=').decode()},"
                      f"{len(data)}")
    record.append(f"{di}/RECORD,,")
    files.append((f"{di}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(directory, name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            info = zipfile.ZipInfo(path, (1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_editable = get_requires_for_build_wheel
get_requires_for_build_sdist = get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory,
                                     config_settings=None):
    di = os.path.join(metadata_directory, _dist_info())
    os.makedirs(di, exist_ok=True)
    with open(os.path.join(di, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    return _write_wheel(wheel_directory, _files())


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    return _write_wheel(wheel_directory,
                        [(f"_{NAME}_editable.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{_version()}"
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "README.md",
                    "build_backend/rvbuild.py"] + [p for p, _ in _files()]:
            t.add(os.path.join(HERE, rel), arcname=f"{base}/{rel}")
        pkg = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\n"
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg)
        t.addfile(info, io.BytesIO(pkg.encode()))
    return name
