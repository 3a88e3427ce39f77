"""rvstream's version: the rv release it belongs to, which its programs
print (rv-decode --version); python/pyproject.toml's build reads it here,
and tests/bats/install.bats checks it against lib/base/opt.h's."""

__version__ = "0.1.0"
