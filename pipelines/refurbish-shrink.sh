#!/usr/bin/env bash
# The main job: decode Fashion-MNIST (Debian's dataset-fashion-mnist) into
# rv streams, print the training set's summary and draw contact sheets,
# then train cnn-small on the CPU from a refurbished and shrunk stream:
# rv-refurbish computes RandAugment (the partial) once per $reuse epochs and a
# fresh crop and flip (the final) at every use; rv-score's assistant,
# learning online from the trainer's per-sample gradient norms (fed back
# through a FIFO), keeps half of every group of 256 that rv-refurbish
# dealt (rv-score --budget 0.5), the half it predicts most informative,
# misses and cache hits in proportion, so that every batch of 128 holds
# the same number of fresh partials, give or take one; the trainer
# evaluates on the test set after every epoch, optionally stopping at a
# target accuracy, and the learning curves are drawn.  A short summary
# closes the run: test accuracy, wall time, the share of it the trainer
# waited for input, the samples rv-score dropped and the partials
# rv-refurbish reused.
#   mkfifo fb
#   rv-refurbish --partial P --final F --reuse 3 --batch 256 train.rvs |
#       rv-score --feedback fb --budget 0.5 | rv-batch -b 128 |
#       rv-train-gpu --feedback fb
# Run it from `make demo`, or after `make`:
#   [OUT=dir] [EPOCHS=5] [TARGET=acc] [EVAL_EVERY=N] [LIMIT=N] \
#       [EVAL_LIMIT=N] [SEED=S] [PARTIAL=spec] [FINAL=spec] [REUSE=r] \
#       pipelines/refurbish-shrink.sh
# OUT (default out) receives the decoded data, the contact sheets
# (fmnist-grid.png, fmnist-refurbished.png), the trainer's log (train.log),
# summary (train-summary.txt) and checkpoint (cnn-small.ck), the learning
# curves (curves.png) and the run's summary (summary.txt, also printed).
# TARGET stops training at the first evaluation whose test accuracy
# reaches it; LIMIT uses only the first N training images, EVAL_LIMIT the
# first N test images (a quick run); RV_BIN names the programs' directory
# (default build/bin), FMNIST the dataset's.
# EVAL_EVERY N evaluates every N steps too (rv-train-gpu --eval-every).
# SEED (default 0) seeds every stage; PARTIAL, FINAL and REUSE set the
# split and the reuse (pipelines/common.bash has the defaults).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=pipelines/common.bash
. "$here/pipelines/common.bash"
pipeline_env ""

echo "== decoding Fashion-MNIST (train and test) into $out" >&2
decode_fmnist train -v
decode_fmnist test -v

echo "== summary of the training stream" >&2
rv-inspect "$out/fmnist-train.rvs"

rv-inspect -q --grid "$out/fmnist-grid.png" -k 100 "$out/fmnist-train.rvs" \
    > /dev/null
echo "== contact sheet of the first 100 samples: $out/fmnist-grid.png" >&2

# What the trainer sees: the first epoch's first 100 refurbished samples.
rv-refurbish -q --partial "$partial" --final "$final" --reuse "$reuse" \
    --seed "$seed" --epochs 1 --batch 128 "$out/fmnist-train.rvs" |
    rv-inspect -q --grid "$out/fmnist-refurbished.png" -k 100 > /dev/null
echo "== contact sheet of the first 100 refurbished samples: $out/fmnist-refurbished.png" >&2

# Refurbishing and scoring 28x28 images cost little: one thread for them,
# every core for the trainer (rv-train-gpu(1), THREADS); the trainer's
# summary says whether it waited for input.  The feedback FIFO closes the
# loop; neither side ever blocks on it (rv-feedback(5)).  The stages'
# standard error goes on to ours and into train.err too, for the summary.
fifo="$out/feedback.fifo"
rm -f "$fifo"
mkfifo "$fifo"
trap 'rm -f "$fifo"' EXIT
echo "== training cnn-small for $epochs epochs on a refurbished, shrunk stream: partial '$partial' once per $reuse epochs, final '$final' every epoch, rv-score's assistant keeping the half of every 256 it predicts most informative (the first epoch whole)" >&2
{
	upstream rv-refurbish -v -j 1 --partial "$partial" --final "$final" \
	    --reuse "$reuse" --epochs "$epochs" --batch 256 --seed "$seed" \
	    "$out/fmnist-train.rvs" |
	    upstream rv-score -v --feedback "$fifo" --budget 0.5 --seed "$seed" |
	    upstream rv-batch -q -b 128 |
	    rv-train-gpu -v -m cnn-small --schedule cosine --epochs "$epochs" \
		--seed "$seed" \
		--eval "$out/fmnist-test.rvs" "${target[@]}" "${evalopt[@]}" \
		--feedback "$fifo" --log "$out/train.log" \
		--save "$out/cnn-small.ck" -o "$out/train-summary.txt"
} 2> >(tee "$out/train.err" >&2)
wait $!	# for tee to finish writing train.err
rm -f "$fifo"
rv-plot -o "$out/curves.png" --x epoch \
    --title "cnn-small, Fashion-MNIST, refurbished and shrunk" \
    "refurbished+shrunk=$out/train.log"

# The run's summary.  The trainer's log ends with a summary line (JSON);
# rv-refurbish and rv-score each wrote a line per epoch.  With TARGET the
# trainer stops at an epoch end and its upstream stages, killed, may have
# reported an epoch it never trained on: only the epochs trained count.
sline=$(grep '"event":"summary"' "$out/train.log" | tail -n 1)
eline=$(grep '"event":"eval"' "$out/train.log" | tail -n 1)
json() {	# json LINE KEY: the value of KEY in the flat JSON object LINE
	printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"
}
trained=$(json "$sline" epochs)
awk -v et="$trained" -v acc="$(json "$sline" eval_acc)" \
    -v aepoch="$(json "$eline" epoch)" -v astep="$(json "$eline" step)" \
    -v wall="$(json "$sline" wall)" -v wait="$(json "$sline" wait_frac)" \
    -v samples="$(json "$sline" samples)" -v steps="$(json "$sline" steps)" \
    -v target="${TARGET:-}" -v reached="$(json "$sline" reached)" '
	function pct(a, b) { return b > 0 ? 100 * a / b : 0 }
	$1 == "rv-refurbish:" && $2 == "epoch" && $3 + 0 < et {
		served += $4 + $6; hits += $6; computed += $8
	}
	$1 == "rv-score:" && $2 == "epoch" && $3 + 0 < et {
		seen += $4; dropped += $9
	}
	END {
		if (acc == "null")
			printf "accuracy   none: no evaluation\n"
		else
			printf "accuracy   %.4f on the test set (epoch %d, step %d)\n",
			    acc, aepoch, astep
		if (target != "")
			printf "target     %s, %s\n", target,
			    reached == "true" ? "reached" : "not reached"
		printf "wall       %.2f s\n", wall
		printf "data wait  %.1f%% of wall time waiting for input\n",
		    100 * wait
		printf "trained    %d samples in %d epoch%s, %d steps\n",
		    samples, et, et == 1 ? "" : "s", steps
		printf "dropped    %d of %d samples by rv-score (%.1f%%)\n",
		    dropped, seen, pct(dropped, seen)
		printf "reused     %d of %d samples served from a cached partial (%.1f%%); %d partials computed\n",
		    hits, served, pct(hits, served), computed
	}' "$out/train.err" > "$out/summary.txt"
cat "$out/summary.txt"
echo "== contact sheets: $out/fmnist-grid.png, $out/fmnist-refurbished.png" >&2
echo "== learning curves: $out/curves.png; summary: $out/summary.txt (the trainer's: $out/train-summary.txt); checkpoint: $out/cnn-small.ck" >&2
