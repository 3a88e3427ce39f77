#!/usr/bin/env bash
# Standard training, the baseline the other pipelines are measured against:
# rv-decode drives the epochs, each in its own shuffled order, and
# rv-augment draws a fresh RandAugment, random crop and flip for every
# sample in every epoch (its random numbers are keyed by the sample's epoch
# and id, so no two epochs see the same image); rv-batch collates and
# rv-train-gpu trains cnn-small on Fashion-MNIST, evaluating on the test
# set after every epoch.
#   rv-decode --epochs E --shuffle | rv-augment SPEC | rv-batch | rv-train-gpu
# Run it after `make`:
#   [OUT=dir] [EPOCHS=5] [TARGET=acc] [EVAL_EVERY=N] [LIMIT=N] \
#       [EVAL_LIMIT=N] [SEED=S] [PARTIAL=spec] [FINAL=spec] \
#       pipelines/standard.sh
# OUT (default out/standard) receives the test set, the trainer's log
# (train.log), its summary (summary.txt, also printed) and the learning
# curves (curves.png).  TARGET stops training at the first evaluation whose
# test accuracy reaches it (rv-train-gpu --target-acc); LIMIT uses only the
# first N training images, EVAL_LIMIT the first N test images (a quick
# run); RV_BIN names the programs' directory (default build/bin), FMNIST
# the dataset's (Debian's dataset-fashion-mnist).
# EVAL_EVERY N evaluates every N steps too (rv-train-gpu --eval-every).
# SEED (default 0) seeds every stage; the augmentation is PARTIAL then
# FINAL, as the refurbishing pipelines split it (pipelines/common.bash).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=pipelines/common.bash
. "$here/pipelines/common.bash"
pipeline_env standard
spec="$partial; $final"

echo "== decoding the Fashion-MNIST test set into $out" >&2
decode_fmnist test -q

# One core each for decoding and augmenting 28x28 images, which cost
# little; the trainer takes every core and says in its summary whether it
# waited for input.
echo "== training cnn-small for $epochs epochs, every sample augmented afresh in every epoch: '$spec'" >&2
upstream rv-decode -q -j 1 "${limit[@]}" --epochs "$epochs" --shuffle \
    --seed "$seed" \
    "$data/train-images-idx3-ubyte.gz" "$data/train-labels-idx1-ubyte.gz" |
    upstream rv-augment -v -j 1 --seed "$seed" "$spec" |
    upstream rv-batch -q -b 128 |
    rv-train-gpu -v -m cnn-small --schedule cosine --epochs "$epochs" \
	--seed "$seed" \
	--eval "$out/fmnist-test.rvs" "${target[@]}" "${evalopt[@]}" \
	--log "$out/train.log" -o "$out/summary.txt"
cat "$out/summary.txt"
rv-plot -o "$out/curves.png" --x epoch \
    --title "cnn-small, Fashion-MNIST, standard augmentation" \
    "standard=$out/train.log"
echo "== summary: $out/summary.txt; learning curves: $out/curves.png" >&2
