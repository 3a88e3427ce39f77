#!/usr/bin/env bash
# The main job: decode Fashion-MNIST (Debian's dataset-fashion-mnist) into
# rv streams, print the training set's summary and draw contact sheets,
# then train cnn-small on the CPU from a refurbished and shrunk stream:
# rv-refurbish asks the assistant (rv-refurbish --score, rv-score's
# options) which half of each epoch to serve before it makes any partial,
# so a dropped sample costs no augmentation at all; the assistant learns
# online from the trainer's per-sample gradient norms, fed back through a
# FIFO.  RandAugment (the partial) is made once per $reuse uses of a kept
# sample and a fresh crop and flip (the final) at every use; every batch
# of 128 holds the same number of fresh partials, give or take one.  The
# trainer runs the steps of $EPOCHS epochs of every sample (--steps, so
# its cosine schedule is standard training's), evaluates on the test set
# after every epoch, optionally stopping at a target accuracy, and the
# learning curves are drawn.  A short summary closes the run: test
# accuracy, wall time, the share of it the trainer waited for input, the
# samples the assistant dropped, the partials rv-refurbish reused, and
# the share of standard training's partial augmentations saved with the
# data stage's CPU time.
#   mkfifo fb
#   rv-refurbish --partial P --final F --reuse 3 --batch 128 \
#       --score '--feedback fb --budget 0.5' train.rvs |
#       rv-batch -b 128 | rv-train-gpu --steps S --feedback fb
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
# Standard training's steps: $epochs epochs of every sample in batches of
# 128; rv-refurbish serves the first epoch whole and half of each later
# one, so 2 E epochs are more than enough (the trainer stops at its
# steps, and its upstream ends by SIGPIPE).
n=$(rv-inspect "$out/fmnist-train.rvs" | awk '$1 == "samples" { print $2; exit }')
steps=$((epochs * ((n + 127) / 128)))
echo "== training cnn-small for $steps steps ($epochs epochs of every sample) on a refurbished, shrunk stream: partial '$partial' once per $reuse uses, final '$final' every use, the assistant keeping the half of every epoch it predicts most informative (the first epoch whole), scored before any augmentation" >&2
{
	upstream rv-refurbish -v -j 1 --partial "$partial" --final "$final" \
	    --reuse "$reuse" --epochs $((2 * epochs)) --batch 128 \
	    --seed "$seed" --score "--feedback $fifo --budget 0.5" \
	    "$out/fmnist-train.rvs" |
	    upstream rv-batch -q -b 128 |
	    rv-train-gpu -v -m cnn-small --schedule cosine --steps "$steps" \
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
# rv-refurbish wrote a line per epoch and, for the assistant, a "score"
# line per epoch.  The trainer stops at its steps and its upstream,
# killed, may have served epochs it never trained on: only the epochs it
# took samples from count (those that began before its last sample).
sline=$(grep '"event":"summary"' "$out/train.log" | tail -n 1)
eline=$(grep '"event":"eval"' "$out/train.log" | tail -n 1)
json() {	# json LINE KEY: the value of KEY in the flat JSON object LINE
	printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"
}
awk -v et="$(json "$sline" epochs)" -v acc="$(json "$sline" eval_acc)" \
    -v aepoch="$(json "$eline" epoch)" -v astep="$(json "$eline" step)" \
    -v wall="$(json "$sline" wall)" -v wait="$(json "$sline" wait_frac)" \
    -v samples="$(json "$sline" samples)" -v steps="$(json "$sline" steps)" \
    -v target="${TARGET:-}" -v reached="$(json "$sline" reached)" '
	function pct(a, b) { return b > 0 ? 100 * a / b : 0 }
	$1 == "rv-refurbish:" && $2 == "epoch" && served < samples {
		took[$3 + 0] = 1; epochs++
		served += $4 + $6; hits += $6; computed += $8; cpu += $11
	}
	$1 == "rv-refurbish:" && $2 == "score" && $3 == "epoch" &&
	    took[$4 + 0] {
		seen += $5; dropped += $10
		# drops made before the assistant had feedback to choose by
		if ($0 ~ /\(all uninformed\)/)
			blind += $10
		else if (match($0, /\([0-9]+ uninformed\)/))
			blind += substr($0, RSTART + 1, RLENGTH - 1) + 0
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
		printf "trained    %d samples in %d steps, from %d epoch%s of rv-refurbish\n",
		    samples, steps, epochs, epochs == 1 ? "" : "s"
		if (blind == 0)
			printf "dropped    %d of %d samples by the assistant (%.1f%%), before any augmentation\n",
			    dropped, seen, pct(dropped, seen)
		else
			printf "dropped    %d of %d samples (%.1f%%), before any augmentation: %d chosen by the assistant, %d uninformed (dropped before it had feedback to choose by)\n",
			    dropped, seen, pct(dropped, seen), dropped - blind, blind
		printf "reused     %d of %d samples served from a cached partial (%.1f%%); %d partials computed\n",
		    hits, served, pct(hits, served), computed
		printf "saved      %.1f%% of the partial augmentations standard training of the same samples runs (%d made for %d served, %.2f s of data CPU, %.3f ms a sample); the %d dropped cost none\n",
		    100 - pct(computed, served), computed, served, cpu,
		    served ? 1000 * cpu / served : 0, dropped
	}' "$out/train.err" > "$out/summary.txt"
cat "$out/summary.txt"
echo "== contact sheets: $out/fmnist-grid.png, $out/fmnist-refurbished.png" >&2
echo "== learning curves: $out/curves.png; summary: $out/summary.txt (the trainer's: $out/train-summary.txt); checkpoint: $out/cnn-small.ck" >&2
