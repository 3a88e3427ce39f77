#!/usr/bin/env bash
# The main job: decode Fashion-MNIST (Debian's dataset-fashion-mnist) into
# rv streams, print the training set's summary and draw a contact sheet,
# then train cnn-small on the CPU from a refurbished and shrunk stream:
# rv-refurbish computes RandAugment (the partial) once per 3 epochs and a
# fresh crop and flip (the final) at every use; rv-score's assistant,
# learning online from the trainer's per-sample gradient norms (fed back
# through a FIFO), drops samples it predicts uninformative; the trainer
# evaluates on the test set after every epoch and the learning curves are
# drawn.
# Run it from `make demo`, or after `make`:
#   OUT=dir [EPOCHS=5] [LIMIT=N] pipelines/main.sh
# LIMIT decodes only the first N training samples (a quick run).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${RV_BIN:-$here/build/bin}"
data="${FMNIST:-/usr/share/datasets/fashion-mnist}"
out="${OUT:-$here/out}"
epochs="${EPOCHS:-5}"
limit=()
[ -n "${LIMIT:-}" ] && limit=(--limit "$LIMIT")
mkdir -p "$out"
PATH="$bin:$here/scripts:$PATH"
partial='randaugment n=1 m=5'
final='random_crop size=28 padding=2; flip'

echo "== decoding Fashion-MNIST (train and test) into $out" >&2
rv-decode -v "${limit[@]}" "$data/train-images-idx3-ubyte.gz" \
    "$data/train-labels-idx1-ubyte.gz" -o "$out/fmnist-train.rvs"
rv-decode -v "$data/t10k-images-idx3-ubyte.gz" \
    "$data/t10k-labels-idx1-ubyte.gz" -o "$out/fmnist-test.rvs"

echo "== summary of the training stream" >&2
rv-inspect "$out/fmnist-train.rvs"

rv-inspect -q --grid "$out/fmnist-grid.png" -k 100 "$out/fmnist-train.rvs" \
    > /dev/null
echo "== contact sheet of the first 100 samples: $out/fmnist-grid.png" >&2

# What the trainer sees: the first epoch's first 100 refurbished samples.
rv-refurbish -q --partial "$partial" --final "$final" --reuse 3 \
    --epochs 1 --batch 128 "$out/fmnist-train.rvs" |
    rv-inspect -q --grid "$out/fmnist-refurbished.png" -k 100 > /dev/null
echo "== contact sheet of the first 100 refurbished samples: $out/fmnist-refurbished.png" >&2

# Refurbishing and scoring 28x28 images cost little: one thread for them,
# every core for the trainer (rv-train-gpu(1), THREADS); the trainer's
# summary says whether it waited for input.  The feedback FIFO closes the
# loop; neither side ever blocks on it (rv-feedback(5)).
fifo="$out/feedback.fifo"
rm -f "$fifo"
mkfifo "$fifo"
echo "== training cnn-small for $epochs epochs on a refurbished, shrunk stream: partial '$partial' once per 3 epochs, final '$final' every epoch, rv-score's assistant keeping samples with probability 0.3 + 0.7 p" >&2
rv-refurbish -v -j 1 --partial "$partial" --final "$final" --reuse 3 \
    --epochs "$epochs" --batch 128 "$out/fmnist-train.rvs" |
    rv-score -v --feedback "$fifo" |
    rv-batch -q -b 128 |
    rv-train-gpu -v -m cnn-small --schedule cosine --epochs "$epochs" \
	--eval "$out/fmnist-test.rvs" --feedback "$fifo" \
	--log "$out/train.log" --save "$out/cnn-small.ck" \
	-o "$out/summary.txt"
rm -f "$fifo"
cat "$out/summary.txt"
rv-plot -o "$out/curves.png" --x epoch --title "cnn-small, Fashion-MNIST, refurbished" \
    "refurbished+shrunk=$out/train.log"
echo "== summary: $out/summary.txt; learning curves: $out/curves.png; checkpoint: $out/cnn-small.ck" >&2
