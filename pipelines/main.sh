#!/usr/bin/env bash
# The main job, as it stands today: decode Fashion-MNIST (Debian's
# dataset-fashion-mnist) into an rv stream, print its summary, draw a
# contact sheet of the first samples, then refurbish three epochs
# (RandAugment as the partial, reused 3 times; crop and flip as the final)
# and draw what the trainer would see.  Later stages (score, train) extend
# this pipeline.  Run it from `make demo`, or after `make`:
# OUT=dir pipelines/main.sh
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

rv-inspect -q --grid "$out/fmnist-grid.png" -k 100 "$out/fmnist-train.rvs" \
    > /dev/null
echo "== contact sheet of the first 100 samples: $out/fmnist-grid.png" >&2

echo "== refurbishing 3 epochs: partial 'randaugment n=2 m=9' once per 3 epochs, final 'random_crop size=28 padding=4; flip' every epoch" >&2
rv-refurbish -v --partial 'randaugment n=2 m=9' \
    --final 'random_crop size=28 padding=4; flip' --reuse 3 --epochs 3 \
    --batch 256 "$out/fmnist-train.rvs" -o "$out/fmnist-refurbished.rvs"
rv-inspect -q --grid "$out/fmnist-refurbished.png" -k 100 \
    "$out/fmnist-refurbished.rvs" > /dev/null
echo "== contact sheet of the first 100 refurbished samples: $out/fmnist-refurbished.png" >&2
echo "== streams: $out/fmnist-train.rvs ($(du -h "$out/fmnist-train.rvs" | cut -f1)), $out/fmnist-test.rvs" >&2
