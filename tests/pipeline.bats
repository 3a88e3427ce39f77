#!/usr/bin/env bats
# The pipelines a user runs, end to end: the main job (pipelines/main.sh)
# and programs composed with pipes.

load helpers

setup() {
	need_fmnist
	T="$BATS_TEST_TMPDIR"
}

@test "main job: decodes Fashion-MNIST, summarises, refurbishes 3 epochs, draws contact sheets" {
	run -0 --separate-stderr env OUT="$T/out" RV_BIN="$BIN" bash "$REPO/pipelines/main.sh"
	[ -s "$T/out/fmnist-train.rvs" ]
	[ -s "$T/out/fmnist-test.rvs" ]
	[[ "$output" == *60000* ]]
	[[ "$stderr" == *"rv-decode: 60000 samples in 1 epoch, 0 skipped"* ]]
	[[ "$stderr" == *"rv-decode: 10000 samples in 1 epoch, 0 skipped"* ]]
	[[ "$stderr" == *"contact sheet of the first 100 samples: $T/out/fmnist-grid.png"* ]]
	[[ "$stderr" == *"rv-refurbish: partials: expected 60000 + (3-1)*60000/3 = 100000, actual 100000"* ]]
	[[ "$stderr" == *"contact sheet of the first 100 refurbished samples: $T/out/fmnist-refurbished.png"* ]]
	run -0 identify -format '%m %[channels]' "$T/out/fmnist-refurbished.png"
	[ "$output" = "PNG srgb" ]
	run -0 identify -format '%m %[channels]' "$T/out/fmnist-grid.png"
	[ "$output" = "PNG srgb" ]
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
