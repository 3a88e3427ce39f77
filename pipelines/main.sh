#!/usr/bin/env bash
# The main job, as it stands today: decode Fashion-MNIST (Debian's
# dataset-fashion-mnist) into an rv stream, print its summary, and draw a
# contact sheet of the first samples.  Later stages (augment, refurbish,
# score, train) extend this pipeline.  Run it from `make demo`, or directly
# after `make`: OUT=dir pipelines/main.sh
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${RV_BIN:-$here/build/bin}"
data="${FMNIST:-/usr/share/datasets/fashion-mnist}"
out="${OUT:-$here/out}"
mkdir -p "$out"
PATH="$bin:$PATH"

echo "== decoding Fashion-MNIST (train and test) into $out" >&2
rv-decode -v "$data/train-images-idx3-ubyte.gz" \
    "$data/train-labels-idx1-ubyte.gz" -o "$out/fmnist-train.rvs"
rv-decode -v "$data/t10k-images-idx3-ubyte.gz" \
    "$data/t10k-labels-idx1-ubyte.gz" -o "$out/fmnist-test.rvs"

echo "== summary of the training stream" >&2
rv-inspect "$out/fmnist-train.rvs"

rv-inspect -q --grid "$out/fmnist-grid.png" -k 100 "$out/fmnist-train.rvs"
echo "== contact sheet of the first 100 samples: $out/fmnist-grid.png" >&2
echo "== streams: $out/fmnist-train.rvs ($(du -h "$out/fmnist-train.rvs" | cut -f1)), $out/fmnist-test.rvs" >&2
