#!/usr/bin/env bats
# The pipelines a user runs, end to end: the main job (pipelines/main.sh)
# and programs composed with pipes.

load helpers

setup() {
	need_fmnist
	T="$BATS_TEST_TMPDIR"
}

@test "main job: decodes, summarises, draws, trains on a refurbished and shrunk stream with feedback and curves" {
	run -0 --separate-stderr env OUT="$T/out" RV_BIN="$BIN" LIMIT=3000 \
	    EPOCHS=2 bash "$REPO/pipelines/main.sh"
	[ -s "$T/out/fmnist-train.rvs" ]
	[ -s "$T/out/fmnist-test.rvs" ]
	[[ "$output" == *"samples      3000 (ids 0 to 2999)"* ]]
	[[ "$stderr" == *"rv-decode: 3000 samples in 1 epoch, 0 skipped"* ]]
	[[ "$stderr" == *"rv-decode: 10000 samples in 1 epoch, 0 skipped"* ]]
	[[ "$stderr" == *"contact sheet of the first 100 samples: $T/out/fmnist-grid.png"* ]]
	[[ "$stderr" == *"rv-refurbish: partials: expected 3000 + (2-1)*3000/3 = 4000, actual 4000"* ]]
	[[ "$stderr" == *"contact sheet of the first 100 refurbished samples: $T/out/fmnist-refurbished.png"* ]]
	# rv-score: the first epoch passes whole (warm-up), its feedback came
	[[ "$stderr" == *"rv-score: epoch 0: 3000 seen, 3000 kept (100.0%), 0 dropped"* ]]
	[[ "$stderr" =~ "rv-score: epoch 1: 3000 seen, "([0-9]+)" kept" ]]
	[[ "$stderr" =~ "rv-score: 6000 seen, "[0-9]+" kept "[^\;]*"; feedback "([0-9]+)" lines" ]]
	[ "${BASH_REMATCH[1]}" -gt 0 ]
	# the trainer's summary: 2 epochs, what rv-score kept, evaluated
	[[ "$output" == *"epochs    2"* ]]
	[[ "$output" =~ "samples   "([0-9]+) ]]
	[ "${BASH_REMATCH[1]}" -gt 3000 ] && [ "${BASH_REMATCH[1]}" -le 6000 ]
	[[ "$output" =~ "eval      loss "[0-9.]+" acc 0."([0-9]+) ]]
	[ "${BASH_REMATCH[1]:0:2}" -ge 50 ]	# well above chance (10%)
	[[ "$output" =~ "feedback  "[0-9]+" lines written" ]]
	[ -s "$T/out/cnn-small.ck" ]
	[ ! -e "$T/out/feedback.fifo" ]
	for png in fmnist-refurbished fmnist-grid curves; do
		run -0 identify -format '%m' "$T/out/$png.png"
		[ "$output" = "PNG" ]
	done
}

@test "pipeline: decode | batch | inspect keeps every sample, in order" {
	run -0 bash -c "set -o pipefail; rv-decode -q --limit 1000 --epochs 2 \
	    '$FMNIST/train-images-idx3-ubyte.gz' '$FMNIST/train-labels-idx1-ubyte.gz' |
	    rv-batch -b 64 | zstd -dcq | python3 '$REPO/tests/rvparse.py' |
	    awk -F'\t' '\$1==\"bsample\" { n[\$2]++; if (\$3 != last[\$2]++ ) bad++ }
	        \$1==\"batch\" { b++ } END { print n[0], n[1], b, bad+0 }'"
	[ "$output" = "1000 1000 32 0" ]
}

@test "pipeline: a consumer that stops early ends the producers quietly" {
	run -0 --separate-stderr bash -c "rv-decode -q --epochs 50 \
	    '$FMNIST/train-images-idx3-ubyte.gz' '$FMNIST/train-labels-idx1-ubyte.gz' |
	    rv-batch -b 32 | head -c 100000 | wc -c"
	[ "$output" = 100000 ]
	[ -z "$stderr" ]
}
