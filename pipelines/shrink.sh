#!/usr/bin/env bash
# Instance shrinking: the stream of pipelines/standard.sh, thinned by
# rv-score.  rv-decode drives shuffled epochs, rv-augment draws a fresh
# RandAugment, crop and flip for every sample in every epoch, and rv-score
# keeps each sample with probability 0.3 + 0.7 p, where p is its AutoAssist
# assistant's prediction that the sample is still informative.  The
# assistant learns online from the per-sample gradient norms the trainer
# writes to a FIFO, which closes the loop; neither side ever blocks on it
# (rv-feedback(5)).  The first epoch passes whole, as warm-up.  The pipes
# between rv-score and the trainer hold about 4000 of these small samples,
# so a run much shorter than that (LIMIT times EPOCHS) ends before any
# feedback comes back, and nothing is learned or dropped.
#   mkfifo fb
#   rv-decode --epochs E --shuffle | rv-augment SPEC | rv-score --feedback fb |
#       rv-batch | rv-train-gpu --feedback fb
# Run it after `make`:
#   [OUT=dir] [EPOCHS=5] [TARGET=acc] [EVAL_EVERY=N] [LIMIT=N] \
#       [EVAL_LIMIT=N] [SEED=S] [PARTIAL=spec] [FINAL=spec] \
#       pipelines/shrink.sh
# OUT (default out/shrink) receives the test set, the trainer's log
# (train.log), its summary (summary.txt, also printed) and the learning
# curves (curves.png); rv-score -v says per epoch how many samples it kept
# and how well its assistant predicts.  TARGET stops training at the first
# evaluation whose test accuracy reaches it; LIMIT uses only the first N
# training images, EVAL_LIMIT the first N test images (a quick run);
# RV_BIN names the programs' directory (default build/bin), FMNIST the
# dataset's (Debian's dataset-fashion-mnist).
# EVAL_EVERY N evaluates every N steps too (rv-train-gpu --eval-every).
# SEED (default 0) seeds every stage; the augmentation is PARTIAL then
# FINAL, as the refurbishing pipelines split it (pipelines/common.bash).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=pipelines/common.bash
. "$here/pipelines/common.bash"
pipeline_env shrink
spec="$partial; $final"

echo "== decoding the Fashion-MNIST test set into $out" >&2
decode_fmnist test -q

fifo="$out/feedback.fifo"
rm -f "$fifo"
mkfifo "$fifo"
trap 'rm -f "$fifo"' EXIT
echo "== training cnn-small for $epochs epochs on a shrunk stream: '$spec' afresh in every epoch, rv-score's assistant keeping samples with probability 0.3 + 0.7 p" >&2
upstream rv-decode -q -j 1 "${limit[@]}" --epochs "$epochs" --shuffle \
    --seed "$seed" \
    "$data/train-images-idx3-ubyte.gz" "$data/train-labels-idx1-ubyte.gz" |
    upstream rv-augment -q -j 1 --seed "$seed" "$spec" |
    upstream rv-score -v --feedback "$fifo" --seed "$seed" |
    upstream rv-batch -q -b 128 |
    rv-train-gpu -v -m cnn-small --schedule cosine --epochs "$epochs" \
	--seed "$seed" \
	--eval "$out/fmnist-test.rvs" "${target[@]}" "${evalopt[@]}" --feedback "$fifo" \
	--log "$out/train.log" -o "$out/summary.txt"
cat "$out/summary.txt"
rv-plot -o "$out/curves.png" --x epoch \
    --title "cnn-small, Fashion-MNIST, shrunk by rv-score" \
    "shrunk=$out/train.log"
echo "== summary: $out/summary.txt; learning curves: $out/curves.png" >&2
