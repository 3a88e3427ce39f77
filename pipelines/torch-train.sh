#!/usr/bin/env bash
# A PyTorch trainer fed by an rv pipeline: rv-refurbish computes
# RandAugment (the partial) once per 3 epochs and a fresh crop and flip
# (the final) at every use, rv-score's assistant drops samples it predicts
# uninformative, rv-batch collates, and pipelines/torch-train.py trains
# cnn-small in PyTorch, writing each sample's loss and gradient norm back
# to rv-score through a FIFO.  Fashion-MNIST, Debian's
# dataset-fashion-mnist.
# Run it after `make`, with a python3 that has torch (Debian:
# python3-torch) and python3-zstandard:
#   OUT=dir [EPOCHS=5] [LIMIT=N] [PYTHON=python3] pipelines/torch-train.sh
# LIMIT decodes only the first N training samples (a quick run).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${RV_BIN:-$here/build/bin}"
data="${FMNIST:-/usr/share/datasets/fashion-mnist}"
out="${OUT:-$here/out-torch}"
epochs="${EPOCHS:-5}"
limit=()
[ -n "${LIMIT:-}" ] && limit=(--limit "$LIMIT")
PATH="$bin:$PATH"
py="${PYTHON:-}"
if [ -z "$py" ]; then	# the first python3 that has torch
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import torch, zstandard' 2>/dev/null; then
			py="$p"
			break
		fi
	done
fi
[ -n "$py" ] || {
	echo "torch-train.sh: no python3 with torch and zstandard: apt-get install python3-torch python3-zstandard" >&2
	exit 1
}
mkdir -p "$out"

rv-decode -q "${limit[@]}" "$data/train-images-idx3-ubyte.gz" \
    "$data/train-labels-idx1-ubyte.gz" -o "$out/fmnist-train.rvs"
rv-decode -q "$data/t10k-images-idx3-ubyte.gz" \
    "$data/t10k-labels-idx1-ubyte.gz" -o "$out/fmnist-test.rvs"

fifo="$out/feedback.fifo"
rm -f "$fifo"
mkfifo "$fifo"
trap 'rm -f "$fifo"' EXIT
echo "== training cnn-small in PyTorch ($py) for $epochs epochs on a refurbished, shrunk rv stream" >&2
rv-refurbish -q -j 1 --partial 'randaugment n=1 m=5' \
    --final 'random_crop size=28 padding=2; flip' --reuse 3 \
    --epochs "$epochs" --batch 128 "$out/fmnist-train.rvs" |
    rv-score -v --feedback "$fifo" |
    rv-batch -q -b 128 |
    "$py" "$here/pipelines/torch-train.py" --feedback "$fifo" \
	--eval "$out/fmnist-test.rvs" --epochs "$epochs" \
	--log "$out/torch-train.log" | tee "$out/summary.txt"
echo "== summary: $out/summary.txt; per-epoch log: $out/torch-train.log" >&2
