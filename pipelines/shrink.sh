#!/usr/bin/env bash
# Instance shrinking: the stream of pipelines/standard.sh, thinned by
# rv-score before the augmentation, so that a dropped sample costs the data
# stage nothing.  rv-decode drives shuffled epochs; rv-score keeps each
# sample with probability 0.3 + 0.7 p, where p is its assistant's
# prediction that the sample is still informative; rv-augment draws a
# fresh RandAugment, crop and flip for the kept samples only.  The
# assistant learns online from the per-sample gradient norms the trainer
# writes to a FIFO, which closes the loop; neither side ever blocks on it
# (rv-feedback(5)).  The first epoch passes whole, as warm-up.
#
# The trainer counts its cosine schedule in steps, as long as standard
# training's (EPOCHS epochs of every sample): a shrunk epoch has fewer
# steps, and a schedule in epochs would anneal in fewer steps than
# standard's.  rv-decode supplies enough epochs for the fewest samples
# rv-score can keep (the floor, 0.3), and ends by SIGPIPE when the trainer
# stops.  The pipes between rv-score and the trainer hold a few thousand
# of these small samples (rv-score -v prints the lag), so a run much
# shorter than that ends before any feedback comes back.
#   mkfifo fb
#   rv-decode --epochs E/0.3 --shuffle | rv-score --feedback fb |
#       rv-augment SPEC | rv-batch | rv-train-gpu --steps N --feedback fb
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
# standard training's steps: EPOCHS epochs of every sample, 128 a batch
n=${LIMIT:-60000}
[ "$n" -le 60000 ] || n=60000
steps=$((epochs * ((n + 127) / 128)))
# the epochs that many steps take at the floor's 0.3 kept, and one more
feed=$(((epochs * 10 + 2) / 3 + 1))
echo "== training cnn-small for $steps steps ($epochs epochs of every sample) on a shrunk stream: rv-score's assistant keeping samples with probability 0.3 + 0.7 p, then '$spec' afresh for those kept" >&2
upstream rv-decode -q -j 1 "${limit[@]}" --epochs "$feed" --shuffle \
    --seed "$seed" \
    "$data/train-images-idx3-ubyte.gz" "$data/train-labels-idx1-ubyte.gz" |
    upstream rv-score -v --feedback "$fifo" --seed "$seed" |
    upstream rv-augment -q -j 1 --seed "$seed" "$spec" |
    upstream rv-batch -q -b 128 |
    rv-train-gpu -v -m cnn-small --schedule cosine --steps "$steps" \
	--seed "$seed" \
	--eval "$out/fmnist-test.rvs" "${target[@]}" "${evalopt[@]}" --feedback "$fifo" \
	--log "$out/train.log" -o "$out/summary.txt"
cat "$out/summary.txt"
rv-plot -o "$out/curves.png" --x epoch \
    --title "cnn-small, Fashion-MNIST, shrunk by rv-score" \
    "shrunk=$out/train.log"
echo "== summary: $out/summary.txt; learning curves: $out/curves.png" >&2
