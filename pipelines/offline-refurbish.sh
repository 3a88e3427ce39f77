#!/usr/bin/env bash
# Refurbishing ahead of time: rv-refurbish writes each epoch of the
# refurbished stream of pipelines/refurbish.sh to its own file (-o with a
# %d pattern), and the trainer reads the files later, with no augmentation
# left to wait for.  The epochs are written in two runs, as two tasks of a
# cluster job or a job killed half-way would: the first half with
# --epoch-range, then the rest with --resume, which skips the files that
# exist (a file appears only complete); the files are the same bytes as
# those of one whole run.  The schedule of each file is checked (misses:
# the partials computed afresh; uses: how often the most reused partial
# has been served), then the files are concatenated and trained on:
#   rv-refurbish ... --epoch-range 0-H -o 'epochs/%03d.rvs' train.rvs
#   rv-refurbish ... --resume -o 'epochs/%03d.rvs' train.rvs
#   cat epochs/*.rvs | rv-batch | rv-train-gpu
# Run it after `make`:
#   [OUT=dir] [EPOCHS=5] [LIMIT=N] [EVAL_LIMIT=N] \
#       [SEED=S] [PARTIAL=spec] [FINAL=spec] [REUSE=r] \
#       pipelines/offline-refurbish.sh
# OUT (default out/offline-refurbish) receives the decoded data, the epoch
# files (epochs/000.rvs ...), the trainer's log (train.log), its summary
# (summary.txt, also printed) and the learning curves (curves.png).  LIMIT
# uses only the first N training images, EVAL_LIMIT the first N test images
# (a quick run); RV_BIN names the programs' directory (default
# build/bin), FMNIST the dataset's (Debian's dataset-fashion-mnist).
# SEED (default 0) seeds every stage; PARTIAL, FINAL and REUSE set the
# split and the reuse (pipelines/common.bash has the defaults).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=pipelines/common.bash
. "$here/pipelines/common.bash"
pipeline_env offline-refurbish
# Epoch files of an earlier run, perhaps of other options, would be
# resumed from: start afresh.
rm -rf "$out/epochs"
mkdir -p "$out/epochs"
# The options that decide the bytes of the epochs: the same in both runs.
refurbish=(rv-refurbish -v --partial "$partial" --final "$final" --reuse "$reuse"
    --seed "$seed" --epochs "$epochs" --batch 128 -o "$out/epochs/%03d.rvs")

echo "== decoding Fashion-MNIST (train and test) into $out" >&2
decode_fmnist train -q
decode_fmnist test -q

# Nothing else runs yet: rv-refurbish takes every core.
half=$(((epochs + 1) / 2))
echo "== refurbishing epochs 0 to $((half - 1)) of $epochs into $out/epochs" >&2
"${refurbish[@]}" --epoch-range "0-$((half - 1))" "$out/fmnist-train.rvs"
echo "== refurbishing the rest: --resume skips the epochs written" >&2
"${refurbish[@]}" --resume "$out/fmnist-train.rvs"

files=()
for ((e = 0; e < epochs; e++)); do
	files+=("$(printf '%s/epochs/%03d.rvs' "$out" "$e")")
done
echo "== the schedule, per epoch file: samples, misses, most uses of a partial" >&2
for f in "${files[@]}"; do
	rv-inspect -q --dump "$f" | awk -F '\t' -v f="${f##*/}" '
	    $3 == "sample" { n++; if ($12 !~ /cached/) m++; if ($13 > u) u = $13 }
	    END { printf "%s: %d samples, %d misses, uses up to %d\n", f, n, m, u }'
done >&2

echo "== training cnn-small on the $epochs epoch files" >&2
cat "${files[@]}" |
    rv-batch -q -b 128 |
    rv-train-gpu -v -m cnn-small --schedule cosine --epochs "$epochs" \
	--eval "$out/fmnist-test.rvs" \
	--log "$out/train.log" -o "$out/summary.txt"
cat "$out/summary.txt"
rv-plot -o "$out/curves.png" --x epoch \
    --title "cnn-small, Fashion-MNIST, refurbished offline (reuse $reuse)" \
    "offline=$out/train.log"
echo "== summary: $out/summary.txt; learning curves: $out/curves.png; epochs: $out/epochs" >&2
