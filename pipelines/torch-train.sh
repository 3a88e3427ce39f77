#!/usr/bin/env bash
# A PyTorch trainer fed by an rv pipeline: rv-refurbish computes
# RandAugment (the partial) once per 3 epochs and a fresh crop and flip
# (the final) at every use, rv-score's assistant keeps the half of every
# group of 256 it predicts most informative (--budget 0.5, misses and
# cache hits in proportion: every batch of 128 holds the same number of
# fresh partials, +-1), rv-batch collates, and pipelines/torch-train.py trains
# cnn-small in PyTorch, writing each sample's loss and gradient norm back
# to rv-score through a FIFO.  Fashion-MNIST, Debian's
# dataset-fashion-mnist.
# Run it after `make`, with a python3 that has torch (Debian:
# python3-torch) and python3-zstandard:
#   [OUT=dir] [EPOCHS=5] [LIMIT=N] [EVAL_LIMIT=N] [PYTHON=python3] \
#       [SEED=S] [PARTIAL=spec] [FINAL=spec] [REUSE=r] \
#       pipelines/torch-train.sh
# OUT (default out/torch-train) receives the data, the summary and the
# per-epoch log; LIMIT uses only the first N training images, EVAL_LIMIT
# the first N test images (a quick run).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=pipelines/common.bash
. "$here/pipelines/common.bash"
pipeline_env torch-train
torch_python torch-train.sh torch

decode_fmnist train -q
decode_fmnist test -q

fifo="$out/feedback.fifo"
rm -f "$fifo"
mkfifo "$fifo"
trap 'rm -f "$fifo"' EXIT
echo "== training cnn-small in PyTorch ($py) for $epochs epochs on a refurbished, shrunk rv stream" >&2
rv-refurbish -q -j 1 --partial "$partial" --final "$final" \
    --reuse "$reuse" --seed "$seed" \
    --epochs "$epochs" --batch 256 "$out/fmnist-train.rvs" |
    rv-score -v --feedback "$fifo" --budget 0.5 --seed "$seed" |
    rv-batch -q -b 128 |
    "$py" "$here/pipelines/torch-train.py" --feedback "$fifo" \
	--eval "$out/fmnist-test.rvs" --epochs "$epochs" --seed "$seed" \
	--log "$out/torch-train.log" | tee "$out/summary.txt"
echo "== summary: $out/summary.txt; per-epoch log: $out/torch-train.log" >&2
