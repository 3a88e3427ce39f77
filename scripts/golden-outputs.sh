#!/usr/bin/env bash
# scripts/golden-outputs.sh BIN OUT: run every program on fixed inputs into
# OUT and print the SHA-256 of each output, for a change that must not
# change bytes (issue 32's refactors): run it with the binaries before and
# after, then diff the two listings.  Inputs: Debian's Fashion-MNIST and
# tests/fixtures (make fixtures).  Covers rv-decode (IDX shuffled at -j 2,
# a tar, an image folder, CIFAR), rv-augment -j 2 (RandAugment, crop,
# flip; the fused rrc decode on JPEGs), rv-refurbish (r = 3, 3 epochs),
# rv-score, rv-batch, rv-inspect and rv-train-gpu's first 8 steps (the
# checkpoint but its wall and wait seconds and checksum, the feedback, the
# summary but its timing lines).  Error messages are kept and summed too.
set -euo pipefail
[ $# = 2 ] || { echo "usage: golden-outputs.sh BIN OUT" >&2; exit 2; }
B=$1 O=$2
root=$(cd "$(dirname "$0")/.." && pwd)
F=${FMNIST:-/usr/share/datasets/fashion-mnist} X=$root/tests/fixtures
rm -rf "$O"
mkdir -p "$O"
"$B/rv-decode" -q -j 2 --limit 3000 --shuffle --seed 3 \
    "$F/train-images-idx3-ubyte.gz" "$F/train-labels-idx1-ubyte.gz" -o "$O/fm.rvs"
"$B/rv-decode" -q -j 2 "$X/ds/dirs.tar" -o "$O/tar.rvs" 2> "$O/tar.err"
"$B/rv-decode" -q -j 2 --channels 3 "$X/ds/folder" -o "$O/folder.rvs" \
    2> "$O/folder.err" || echo "rc $?" >> "$O/folder.err"
"$B/rv-decode" -q -j 2 "$X/ds/cifar/data_batch_1.bin" -o "$O/cifar.rvs" \
    2> "$O/cifar.err" || echo "rc $?" >> "$O/cifar.err"
"$B/rv-augment" -q -j 2 --seed 5 'randaugment n=2 m=9; random_crop size=28 padding=2; flip' \
    "$O/fm.rvs" -o "$O/aug.rvs"
"$B/rv-augment" -q -j 2 --seed 6 'rrc size=24; flip; randaugment n=2 m=9 interp=bilinear' \
    "$O/folder.rvs" -o "$O/augf.rvs" 2> "$O/augf.err" || echo "rc $?" >> "$O/augf.err"
"$B/rv-refurbish" -q -j 2 --reuse 3 --epochs 3 --seed 2 --batch 64 \
    --partial 'randaugment n=2 m=9' --final 'random_crop size=28 padding=2; flip' \
    "$O/fm.rvs" -o "$O/ref.rvs"
"$B/rv-score" -q --policy uniform --keep 0.5 --seed 1 "$O/ref.rvs" -o "$O/score.rvs" 2> "$O/score.err"
"$B/rv-batch" -q -b 64 --shuffle 256 --seed 7 "$O/score.rvs" -o "$O/b.rvs" 2> "$O/batch.err"
"$B/rv-train-gpu" -q -j 1 --device cpu -m cnn-small --seed 4 --max-steps 8 \
    --save "$O/t.ck" --feedback "$O/t.fb" -o "$O/t.sum" "$O/b.rvs"
# The checkpoint but its wall and wait seconds and checksum.
# shellcheck source=tests/bats/ckpt.bash
. "$root/tests/bats/ckpt.bash"
ck_stable "$O/t.ck" > "$O/t.ck.stable"
rm "$O/t.ck"
grep -v '^wall\|^wait' "$O/t.sum" > "$O/t.sum.stable"
rm "$O/t.sum"
"$B/rv-inspect" "$O/b.rvs" > "$O/inspect.txt" 2>&1 || echo "rc $?" >> "$O/inspect.txt"
cd "$O" && sha256sum -- *
