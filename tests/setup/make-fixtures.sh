#!/usr/bin/env bash
# Make every test fixture under DIR (default tests/fixtures): images of
# every flavour rv-decode must read, broken ones, and datasets built from
# them.  Deterministic, a few seconds, rerunnable; "DIR/.done" marks success.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/fixtures}"
mkdir -p "$dir"
rm -f "$dir/.done"
bash "$here/fixtures-images.sh" "$dir/img"
bash "$here/fixtures-datasets.sh" "$dir/img" "$dir/ds"
touch "$dir/.done"
