#!/usr/bin/env bash
# Refurbishing ahead of time, each partial stored once: rv-refurbish
# --partials-out writes the partials of pipelines/refurbish.sh's split
# the one time the schedule makes them (epoch e's file: the partials
# made fresh in e, N in epoch 0, N/r after), in FORMAT;
# the trainer then reads them with rv-refurbish --from-partials, which
# runs the cheap final on every use, in the order, with the uses and the
# random numbers of the online run.  The store is written in two runs,
# as two tasks of a cluster job or a job killed half-way would: the first
# half with --epoch-range, then the rest with --resume, which skips the
# files that exist (a file appears only complete); the files are the same
# bytes as those of one whole run.  Each file's partials are counted,
# then the epochs are served from the store and trained on:
#   rv-refurbish --partial ... --epoch-range 0-H --partials-out 'parts/%03d.rvs' train.rvs
#   rv-refurbish --partial ... --resume --partials-out 'parts/%03d.rvs' train.rvs
#   rv-refurbish --from-partials 'parts/%03d.rvs' --final ... | rv-batch | rv-train-gpu
# Run it after `make`:
#   [OUT=dir] [EPOCHS=5] [LIMIT=N] [EVAL_LIMIT=N] [SEED=S] [PARTIAL=spec]
#       [FINAL=spec] [REUSE=r] [FORMAT=jpeg|png|raw] [QUALITY=Q] \
#       pipelines/offline-refurbish.sh
# OUT (default out/offline-refurbish) receives the decoded data, the store
# (parts/000.rvs ...), the trainer's log (train.log), its summary
# (summary.txt, also printed) and the learning curves (curves.png).  LIMIT
# uses only the first N training images, EVAL_LIMIT the first N test images
# (a quick run); RV_BIN names the programs' directory (default
# build/bin), FMNIST the dataset's (Debian's dataset-fashion-mnist).
# SEED (default 0) seeds every stage; PARTIAL, FINAL and REUSE set the
# split and the reuse (pipelines/common.bash has the defaults); FORMAT
# (default raw: Fashion-MNIST's 28x28 partials take fewer bytes raw than
# as PNG or JPEG) and QUALITY (jpeg's, default 90) how they are stored.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=pipelines/common.bash
. "$here/pipelines/common.bash"
pipeline_env offline-refurbish
format=${FORMAT:-raw}
quality=()
[ "$format" != jpeg ] || quality=(--quality "${QUALITY:-90}")
# A store of an earlier run, perhaps of other options, would be resumed
# from: start afresh.
rm -rf "$out/parts"
mkdir -p "$out/parts"
# The options that decide the bytes of the store: the same in both runs.
refurbish=(rv-refurbish -v --partial "$partial" --reuse "$reuse" --seed "$seed"
    --epochs "$epochs" --format "$format" "${quality[@]}"
    --partials-out "$out/parts/%03d.rvs")

echo "== decoding Fashion-MNIST (train and test) into $out" >&2
decode_fmnist train -q
decode_fmnist test -q

# Nothing else runs yet: rv-refurbish takes every core.
half=$(((epochs + 1) / 2))
echo "== storing the partials of epochs 0 to $((half - 1)) of $epochs in $out/parts ($format)" >&2
"${refurbish[@]}" --epoch-range "0-$((half - 1))" "$out/fmnist-train.rvs"
echo "== storing the rest: --resume skips the files written" >&2
"${refurbish[@]}" --resume "$out/fmnist-train.rvs"

echo "== the store, per epoch file: partials, bytes" >&2
for ((e = 0; e < epochs; e++)); do
	f=$(printf '%s/parts/%03d.rvs' "$out" "$e")
	rv-inspect -q --dump "$f" | awk -F '\t' -v f="${f##*/}" \
	    -v b="$(wc -c < "$f")" '$3 == "sample" { n++ }
	    END { printf "%s: %d partials, %d bytes\n", f, n, b }'
done >&2

echo "== training cnn-small on $epochs epochs served from the store" >&2
rv-refurbish -q --from-partials "$out/parts/%03d.rvs" --final "$final" \
    --batch 128 |
    rv-batch -q -b 128 |
    rv-train-gpu -v -m cnn-small --schedule cosine --epochs "$epochs" \
	--eval "$out/fmnist-test.rvs" \
	--log "$out/train.log" -o "$out/summary.txt"
cat "$out/summary.txt"
rv-plot -o "$out/curves.png" --x epoch \
    --title "cnn-small, Fashion-MNIST, refurbished offline (reuse $reuse)" \
    "offline=$out/train.log"
echo "== summary: $out/summary.txt; learning curves: $out/curves.png; store: $out/parts" >&2
