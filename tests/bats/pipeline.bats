#!/usr/bin/env bats
# The pipelines a user runs, end to end: every script of pipelines/, each
# in a short variant (a few thousand training images, 1000 test images, 2
# or 3 epochs) so that none rots, and programs composed with pipes.

load helpers

setup() {
	need_fmnist
	T="$BATS_TEST_TMPDIR"
}

# is_png FILE...: each FILE is a PNG image.
is_png() {
	local f
	for f in "$@"; do
		run -0 identify -format '%m' "$f"
		[ "$output" = PNG ]
	done
}

# main_summary_ok DIR N: DIR/summary.txt, the main job's summary of a run
# on N training images, has every field, and its counts add up: the
# epochs rv-refurbish served to the trainer offered N samples each to the
# assistant, the ones it dropped and the ones served make them, the
# partials computed and those reused make the ones served, the trainer
# took no more than were served, and its own summary agrees.
main_summary_ok() {
	local s e trained steps dropped seen hits served computed
	s=$(cat "$1/summary.txt")
	[[ "$s" =~ "accuracy   0."([0-9]+)" on the test set (epoch "[0-9]+", step "[0-9]+")" ]]
	[ "${BASH_REMATCH[1]:0:2}" -ge 50 ]	# well above chance (10%)
	[[ "$s" =~ "wall       "[0-9]+\.[0-9]+" s" ]]
	[[ "$s" =~ "data wait  "[0-9]+\.[0-9]"% of wall time waiting for input" ]]
	[[ "$s" =~ "trained    "([0-9]+)" samples in "([0-9]+)" steps, from "([0-9]+)" epochs"?" of rv-refurbish" ]]
	trained=${BASH_REMATCH[1]} steps=${BASH_REMATCH[2]} e=${BASH_REMATCH[3]}
	# by the assistant; or some uninformed, dropped before it had
	# feedback to choose by, and they add up
	if [[ "$s" =~ "dropped    "([0-9]+)" of "([0-9]+)" samples by the assistant (" ]]; then
		dropped=${BASH_REMATCH[1]} seen=${BASH_REMATCH[2]}
	else
		[[ "$s" =~ "dropped    "([0-9]+)" of "([0-9]+)" samples ("[0-9.]+"%), before any augmentation: "([0-9]+)" chosen by the assistant, "([0-9]+)" uninformed (dropped before it had feedback to choose by)" ]]
		dropped=${BASH_REMATCH[1]} seen=${BASH_REMATCH[2]}
		[ $((BASH_REMATCH[3] + BASH_REMATCH[4])) -eq "$dropped" ]
	fi
	[[ "$s" =~ "reused     "([0-9]+)" of "([0-9]+)" samples served from a cached partial ("[0-9.]+"%); "([0-9]+)" partials computed" ]]
	hits=${BASH_REMATCH[1]} served=${BASH_REMATCH[2]}
	computed=${BASH_REMATCH[3]}
	[[ "$s" =~ "saved      "[0-9]+\.[0-9]"% of the partial augmentations standard training of the same samples runs ($computed made for $served served, "[0-9.]+" s of data CPU, "[0-9.]+" ms a sample); the $dropped dropped cost none" ]]
	[ "$e" -ge 1 ]
	[ "$seen" -eq $((e * $2)) ]
	[ $((served + dropped)) -eq "$seen" ]
	[ $((hits + computed)) -eq "$served" ]
	[ "$computed" -ge "$2" ]
	[ "$trained" -le "$served" ]
	grep -qx "samples   $trained" "$1/train-summary.txt"
	grep -qx "steps     $steps" "$1/train-summary.txt"
}

@test "main job (refurbish-shrink.sh): decodes, summarises, draws, trains on a refurbished and shrunk stream with feedback, curves and a summary" {
	slow
	run -0 --separate-stderr env OUT="$T/out" RV_BIN="$BIN" LIMIT=3000 \
	    EVAL_LIMIT=1000 EPOCHS=3 bash "$REPO/pipelines/refurbish-shrink.sh"
	[ -s "$T/out/fmnist-train.rvs" ]
	[ -s "$T/out/fmnist-test.rvs" ]
	[[ "$output" == *"samples      3000 (ids 0 to 2999)"* ]]
	[[ "$stderr" == *"rv-decode: 3000 samples in 1 epoch, 0 skipped"* ]]
	[[ "$stderr" == *"rv-decode: 1000 samples in 1 epoch, 0 skipped"* ]]
	[[ "$stderr" == *"contact sheet of the first 100 samples: $T/out/fmnist-grid.png"* ]]
	[[ "$stderr" == *"contact sheet of the first 100 refurbished samples: $T/out/fmnist-refurbished.png"* ]]
	# the assistant: the first epoch passes whole (warm-up), then exactly
	# half of each, its partials made only for the kept; its feedback
	# came (by epoch 4 the trainer has taken all but what the pipes hold)
	[[ "$stderr" == *"rv-refurbish: epoch 0: 3000 misses, 0 hits, 3000 partials run"* ]]
	[[ "$stderr" == *"rv-refurbish: score epoch 0: 3000 seen, 3000 kept (100.0%), 0 dropped"* ]]
	[[ "$stderr" == *"rv-refurbish: score epoch 1: 3000 seen, 1500 kept (50.0%), 1500 dropped"* ]]
	[[ "$stderr" =~ "rv-refurbish: epoch 1: "([0-9]+)" misses, "([0-9]+)" hits" ]]
	[ $((BASH_REMATCH[1] + BASH_REMATCH[2])) -eq 1500 ]
	[ "${BASH_REMATCH[1]}" -ge 480 ] && [ "${BASH_REMATCH[1]}" -le 520 ]
	[[ "$stderr" =~ "rv-refurbish: score epoch 4: 3000 seen, 1500 kept "[^\;]*"; feedback "([0-9]+)" lines" ]]
	[ "${BASH_REMATCH[1]}" -gt 0 ]
	# the run's summary, printed and in summary.txt: every field, the
	# steps of 3 epochs of 3000, the counts adding up
	[[ "$output" == *"$(cat "$T/out/summary.txt")"* ]]
	main_summary_ok "$T/out" 3000
	grep -q '^trained    9000 samples in 72 steps, from [0-9]* epochs of rv-refurbish$' "$T/out/summary.txt"
	run -1 grep -q '^target' "$T/out/summary.txt"
	grep -Eq '^feedback  [1-9][0-9]* lines written' "$T/out/train-summary.txt"
	[[ "$stderr" == *"learning curves: $T/out/curves.png; summary: $T/out/summary.txt"* ]]
	[ -s "$T/out/cnn-small.ck" ]
	[ ! -e "$T/out/feedback.fifo" ]
	is_png "$T/out/fmnist-refurbished.png" "$T/out/fmnist-grid.png" \
	    "$T/out/curves.png"
}

@test "standard.sh: decode E shuffled epochs | augment afresh | batch | train" {
	slow
	run -0 --separate-stderr env OUT="$T/out" RV_BIN="$BIN" LIMIT=2000 \
	    EVAL_LIMIT=1000 EPOCHS=2 bash "$REPO/pipelines/standard.sh"
	# rv-augment saw both epochs; the trainer trained them and evaluated
	[[ "$stderr" == *"rv-augment: 4000 samples (0 decoded), 3 ops"* ]]
	[[ "$output" == *"epochs    2"* ]]
	[[ "$output" == *"samples   4000"* ]]
	[[ "$output" =~ "eval      loss "[0-9.]+" acc 0."([0-9]+)" (epoch 1, " ]]
	[ "${BASH_REMATCH[1]:0:2}" -ge 50 ]
	[ "$(grep -c '"event":"eval"' "$T/out/train.log")" -eq 2 ]
	cmp -s <(echo "$output") "$T/out/summary.txt"
	is_png "$T/out/curves.png"
	# EVAL_EVERY: evaluated every 10 steps too (16 steps an epoch)
	run -0 --separate-stderr env OUT="$T/out" RV_BIN="$BIN" LIMIT=2000 \
	    EVAL_LIMIT=1000 EPOCHS=2 EVAL_EVERY=10 bash "$REPO/pipelines/standard.sh"
	run -0 grep -o '"event":"eval","step":[0-9]*,' "$T/out/train.log"
	[ "$(echo $output)" = '"event":"eval","step":10, "event":"eval","step":16, "event":"eval","step":20, "event":"eval","step":30, "event":"eval","step":32,' ]
}

@test "refurbish.sh: refurbish with reuse 3 | batch | train" {
	slow
	run -0 --separate-stderr env OUT="$T/out" RV_BIN="$BIN" LIMIT=2000 \
	    EVAL_LIMIT=1000 EPOCHS=2 bash "$REPO/pipelines/refurbish.sh"
	[[ "$stderr" == *"rv-refurbish: epoch 0: 2000 misses, 0 hits, 2000 partials run"* ]]
	[[ "$stderr" == *"rv-refurbish: epoch 1: 666 misses, 1334 hits, 666 partials run"* ]]
	[[ "$stderr" == *"rv-refurbish: partials: expected 2000 + (2-1)*2000/3 = 2666, actual 2666"* ]]
	[[ "$output" == *"epochs    2"* ]]
	[[ "$output" == *"samples   4000"* ]]
	[[ "$output" =~ "eval      loss "[0-9.]+" acc 0."([0-9]+)" (epoch 1, " ]]
	[ "${BASH_REMATCH[1]:0:2}" -ge 50 ]
	is_png "$T/out/curves.png"
}

@test "shrink.sh: rv-score before the augmentation, the trainer's feedback through a FIFO, a schedule of standard training's steps" {
	slow
	run -0 --separate-stderr env OUT="$T/out" RV_BIN="$BIN" LIMIT=3000 \
	    EVAL_LIMIT=1000 EPOCHS=2 bash "$REPO/pipelines/shrink.sh"
	# 2 epochs of 3000 at 128 a batch: 48 steps, as standard.sh's
	[[ "$stderr" == *"== training cnn-small for 48 steps (2 epochs of every sample) on a shrunk stream"* ]]
	[[ "$stderr" == *"rv-score: epoch 0: 3000 seen, 3000 kept (100.0%), 0 dropped"* ]]
	[[ "$stderr" =~ "rv-score: epoch 1: 3000 seen, "[0-9]+" kept "[^\;]*"; feedback "([0-9]+)" lines" ]]
	# the trainer stopped at step 48, evaluated there, and fed back
	[[ "$output" == *"steps     48"* ]]
	[[ "$output" =~ "eval      loss "[0-9.]+" acc 0."([0-9]+)" (epoch "[0-9]+", step 48)" ]]
	[ "${BASH_REMATCH[1]:0:2}" -ge 50 ]
	[[ "$output" =~ "feedback  "([0-9]+)" lines written" ]]
	[ "${BASH_REMATCH[1]}" -gt 0 ]
	# rv-augment, after rv-score, augmented only what rv-score passed:
	# the stages upstream ended by SIGPIPE at step 48, and said nothing
	[[ "$stderr" != *"rv-augment:"* ]]
	[ ! -e "$T/out/feedback.fifo" ]
	is_png "$T/out/curves.png"
}

@test "offline-refurbish.sh: partials stored once in two runs (--epoch-range, --resume), the bytes of one whole run; training from the store" {
	slow
	run -0 --separate-stderr env OUT="$T/out" RV_BIN="$BIN" LIMIT=1500 \
	    EVAL_LIMIT=1000 EPOCHS=3 bash "$REPO/pipelines/offline-refurbish.sh"
	# the first run stored epochs 0 and 1, the resumed one epoch 2 only
	[[ "$stderr" == *"partials: 2000 stored in 2 files"* ]]
	[[ "$stderr" == *"rv-refurbish: epoch 2: 500 misses, 0 hits, 500 partials run"* ]]
	[[ "$stderr" == *"partials: 500 stored in 1 files"* ]]
	[[ "$stderr" == *"000.rvs: 1500 partials, "* ]]
	[[ "$stderr" == *"001.rvs: 500 partials, "* ]]
	[[ "$stderr" == *"002.rvs: 500 partials, "* ]]
	[[ "$output" == *"epochs    3"* ]]
	[[ "$output" == *"samples   4500"* ]]
	[[ "$output" =~ "eval      loss "[0-9.]+" acc 0."([0-9]+)" (epoch 2, " ]]
	[ "${BASH_REMATCH[1]:0:2}" -ge 50 ]
	is_png "$T/out/curves.png"
	# the split run's store is that of one uninterrupted run
	mkdir "$T/whole"
	run -0 rv-refurbish -q --partial 'randaugment n=1 m=5' --reuse 3 \
	    --epochs 3 --partials-out "$T/whole/%03d.rvs" \
	    "$T/out/fmnist-train.rvs"
	for e in 000 001 002; do
		cmp "$T/whole/$e.rvs" "$T/out/parts/$e.rvs"
	done
	[ "$(find "$T/out/parts" -type f | wc -l)" -eq 3 ]
}

@test "experiment.sh: five pipelines over two seeds to two targets; tables over the seeds and per seed, the curves of each seed" {
	slow
	run -0 --separate-stderr env OUT="$T/out" RV_BIN="$BIN" LIMIT=2000 \
	    EVAL_LIMIT=1000 EPOCHS=2 TARGET="0.4 0.5" SEEDS="3 5" \
	    bash "$REPO/pipelines/experiment.sh"
	[ "$output" = "$(cat "$T/out/results.md")" ]
	[[ "${lines[0]}" == "cnn-small on Fashion-MNIST (first 2000 training images), seeds 3 5, each run stopping at 0.5 test accuracy or after 2 epochs; reuse 3; "* ]]
	# to each target, 5 rows; every run reached both targets
	local ms='[0-9]+(\.[0-9]+)? ± [0-9]+(\.[0-9]+)?'
	run -0 grep -c -E "^\| [a-zA-Z(), +]+ \| (40|50) % \| 2/2 \| $ms \| $ms( †)? \| $ms \| $ms( †)? \|\$" "$T/out/results.md"
	[ "$output" -eq 10 ]
	grep -qE "^\| standard \| 50 % \| 2/2 \| $ms \| 1\.00 ± 0\.00 \| $ms \| 1\.00 ± 0\.00 \|\$" "$T/out/results.md"
	for l in 'refurbished, split A' 'refurbished, split B' shrunk \
	    'refurbished (A) + shrunk'; do
		grep -qF "| $l | 40 % | 2/2 | " "$T/out/results.md"
		grep -qF "| $l | 50 % | 2/2 | " "$T/out/results.md"
	done
	# the accuracies: 5 rows
	run -0 grep -c -E '^\| [a-zA-Z(), +]+ \| [0-9.]+ ± [0-9.]+ % \| ' "$T/out/results.md"
	[ "$output" -eq 5 ]
	for s in 3 5; do
		[ "$(grep -c '^| ' "$T/out/seed$s/results.md")" -eq 6 ]	# header, 5 rows
		is_png "$T/out/seed$s/acc-wall.png" "$T/out/seed$s/acc-grads.png"
		for p in standard refurbish refurbish-b shrink refurbish-shrink; do
			grep -q '"event":"summary","reached":true,"target_acc":0.5,' \
			    "$T/out/seed$s/$p/train.log"
		done
		grep -q "^cnn-small on Fashion-MNIST (first 2000 training images), seed $s, to 0.5 test accuracy" "$T/out/seed$s/results.md"
	done
	# the seeds give different runs, and split B moved the crop
	! cmp -s "$T/out/seed3/standard/train.log" "$T/out/seed5/standard/train.log"
	[[ "$(cat "$T/out/seed3/refurbish-b/stderr.txt")" == *"partial 'randaugment n=1 m=5; random_crop size=28 padding=2' once per 3 epochs, final 'flip' every epoch"* ]]
	# the main job stopped at its target: its summary counts only the
	# epochs trained, though the stages upstream ran ahead
	grep -qx 'target     0.5, reached' "$T/out/seed3/refurbish-shrink/summary.txt"
	main_summary_ok "$T/out/seed3/refurbish-shrink" 2000
	[[ "$stderr" == *"== tables: $T/out/results.md (per seed: $T/out/seedS/results.md); curves: $T/out/seedS/acc-wall.png (against wall time), $T/out/seedS/acc-grads.png (against gradient computations)"* ]]
}

@test "pipelines: SEED reaches every stage; the same seed gives the same trained model" {
	slow
	run -0 env OUT="$T/a" RV_BIN="$BIN" LIMIT=1000 EVAL_LIMIT=500 \
	    EPOCHS=1 SEED=7 bash "$REPO/pipelines/refurbish.sh"
	run -0 env OUT="$T/b" RV_BIN="$BIN" LIMIT=1000 EVAL_LIMIT=500 \
	    EPOCHS=1 SEED=7 bash "$REPO/pipelines/refurbish.sh"
	run -0 env OUT="$T/c" RV_BIN="$BIN" LIMIT=1000 EVAL_LIMIT=500 \
	    EPOCHS=1 SEED=8 bash "$REPO/pipelines/refurbish.sh"
	strip() { grep '"event":"eval"' "$1" | sed 's/,"wall":[^,}]*//; s/,"eval_s":[^,}]*//'; }
	[ "$(strip "$T/a/train.log")" = "$(strip "$T/b/train.log")" ]
	[ "$(strip "$T/a/train.log")" != "$(strip "$T/c/train.log")" ]
}

@test "pipeline: decode | batch | inspect keeps every sample, in order" {
	run -0 bash -c "set -o pipefail; rv-decode -q --limit 1000 --epochs 2 \
	    '$FMNIST/train-images-idx3-ubyte.gz' '$FMNIST/train-labels-idx1-ubyte.gz' |
	    rv-batch -b 64 | zstd -dcq | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"bsample\" { n[\$2]++; if (\$3 != last[\$2]++ ) bad++ }
	        \$1==\"batch\" { b++ } END { print n[0], n[1], b, bad+0 }'"
	[ "$output" = "1000 1000 32 0" ]
}

@test "pipeline: a consumer that stops early ends the producers quietly" {
	slow
	run -0 --separate-stderr bash -c "rv-decode -q --epochs 50 \
	    '$FMNIST/train-images-idx3-ubyte.gz' '$FMNIST/train-labels-idx1-ubyte.gz' |
	    rv-batch -b 32 | head -c 100000 | wc -c"
	[ "$output" = 100000 ]
	[ -z "$stderr" ]
}

@test "experiment.sh: bad TARGET, SEEDS or EPOCHS are refused with a one-line error, before anything runs" {
	slow
	local e=(env OUT="$T/out" RV_BIN="$BIN")
	run -1 "${e[@]}" TARGET="0.9 95" bash "$REPO/pipelines/experiment.sh"
	[ "$output" = "experiment.sh: TARGET: '95' is not an accuracy in (0, 1)" ]
	run -1 "${e[@]}" TARGET=" " bash "$REPO/pipelines/experiment.sh"
	[ "$output" = "experiment.sh: TARGET: no target accuracy" ]
	run -1 "${e[@]}" SEEDS="0 -1" bash "$REPO/pipelines/experiment.sh"
	[ "$output" = "experiment.sh: SEEDS: '-1': not a non-negative integer" ]
	run -1 "${e[@]}" SEEDS="2 2" bash "$REPO/pipelines/experiment.sh"
	[ "$output" = "experiment.sh: SEEDS: '2' twice" ]
	run -1 "${e[@]}" EPOCHS=0 bash "$REPO/pipelines/experiment.sh"
	[ "$output" = "experiment.sh: EPOCHS: '0' is not a positive integer" ]
	[ ! -e "$T/out" ]
}
