#!/usr/bin/env bash
# Data refurbishing: the augmentation of pipelines/standard.sh split in two.
# rv-refurbish reads the decoded dataset once, runs the expensive partial
# (RandAugment) once per $reuse epochs, caches it, and runs the cheap final
# (random crop and flip) at every use, so each cached partial is served 3
# times, each time cropped and flipped afresh; its cache-aware shuffle
# orders every epoch.  rv-batch collates and rv-train-gpu trains cnn-small
# on Fashion-MNIST, evaluating on the test set after every epoch.
#   rv-decode -o train.rvs | rv-refurbish --partial P --final F --reuse 3 |
#       rv-batch | rv-train-gpu
# Run it after `make`:
#   [OUT=dir] [EPOCHS=5] [TARGET=acc] [EVAL_EVERY=N] [LIMIT=N] \
#       [EVAL_LIMIT=N] [SEED=S] [PARTIAL=spec] [FINAL=spec] [REUSE=r] \
#       pipelines/refurbish.sh
# OUT (default out/refurbish) receives the decoded data, the trainer's log
# (train.log), its summary (summary.txt, also printed) and the learning
# curves (curves.png); rv-refurbish -v says per epoch how many partials it
# computed and how many it served from the cache.  TARGET stops training at
# the first evaluation whose test accuracy reaches it; LIMIT uses only the
# first N training images, EVAL_LIMIT the first N test images (a quick
# run); RV_BIN names the programs' directory (default build/bin), FMNIST
# the dataset's (Debian's dataset-fashion-mnist).
# EVAL_EVERY N evaluates every N steps too (rv-train-gpu --eval-every).
# SEED (default 0) seeds every stage; PARTIAL, FINAL and REUSE set the
# split and the reuse (pipelines/common.bash has the defaults).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=pipelines/common.bash
. "$here/pipelines/common.bash"
pipeline_env refurbish

# rv-refurbish reads its input once; from a file it indexes the records and
# reads back by offset the samples whose partial it must compute afresh.
echo "== decoding Fashion-MNIST (train and test) into $out" >&2
decode_fmnist train -q
decode_fmnist test -q

# One core for refurbishing 28x28 images, which costs little; the trainer
# takes every core and says in its summary whether it waited for input.
echo "== training cnn-small for $epochs epochs on a refurbished stream: partial '$partial' once per $reuse epochs, final '$final' every epoch" >&2
upstream rv-refurbish -v -j 1 --partial "$partial" --final "$final" \
    --reuse "$reuse" --epochs "$epochs" --batch 128 --seed "$seed" \
    "$out/fmnist-train.rvs" |
    upstream rv-batch -q -b 128 |
    rv-train-gpu -v -m cnn-small --schedule cosine --epochs "$epochs" \
	--seed "$seed" \
	--eval "$out/fmnist-test.rvs" "${target[@]}" "${evalopt[@]}" \
	--log "$out/train.log" -o "$out/summary.txt"
cat "$out/summary.txt"
rv-plot -o "$out/curves.png" --x epoch \
    --title "cnn-small, Fashion-MNIST, refurbished (reuse $reuse)" \
    "refurbished=$out/train.log"
echo "== summary: $out/summary.txt; learning curves: $out/curves.png" >&2
