#!/usr/bin/env bats
# The PyTorch bridge at the level of the usual loaders, for data-parallel
# training: float() into float16 and bfloat16, pinned staging, len(),
# RvDataset over shards split between ranks and DataLoader workers (each
# reading only its part), and resuming at a step.  Real data: Fashion-
# MNIST decoded by the rv programs.  Needs Debian's python3-torch and
# python3-zstandard (make deps).

load helpers

setup() {
	need_fmnist
	need_torch
	T="$BATS_TEST_TMPDIR"
	CHK=("$PY" "$REPO/tests/checks/bridge_checks.py")
	IMG="$FMNIST/train-images-idx3-ubyte.gz"
	LAB="$FMNIST/train-labels-idx1-ubyte.gz"
}

@test "bridge: float(dtype) in float16 and bfloat16 equals float32's result cast; numpy without torch" {
	slow
	rv-decode -q --limit 300 "$IMG" "$LAB" | rv-batch -q -b 64 -o "$T/b.rvs"
	run -0 "${CHK[@]}" dtype "$T/b.rvs"
	[ "$output" = "dtype ok: 6 dtype and format pairs, numpy with and without torch" ]
}

@test "bridge: pin_memory warns once without CUDA and reads the same; pinned batches are views of the staging tensors" {
	slow
	rv-decode -q --limit 700 --epochs 2 "$IMG" "$LAB" -o "$T/s.rvs"
	rv-batch -q -b 64 "$T/s.rvs" -o "$T/b.rvs"
	run -0 "${CHK[@]}" pin "$T/b.rvs" "$T/s.rvs" 64
	[[ "$output" =~ ^"pin ok: 1 warning, 22 batches pinned from "[0-9]+" staging tensors, kept intact"$ ]]
}

@test "bridge: len() is exact where the metadata says the size, TypeError with an estimate where it cannot (rv-score)" {
	slow
	rv-decode -q --limit 1000 --epochs 3 "$IMG" "$LAB" -o "$T/s.rvs"
	rv-batch -q -b 64 "$T/s.rvs" -o "$T/b64.rvs"
	rv-batch -q -b 64 --drop-last "$T/s.rvs" -o "$T/d64.rvs"
	run -0 "${CHK[@]}" len "$T/b64.rvs" epochs
	[ "$output" = "len 48 hint 48 yielded 48 epochs 0:16,1:16,2:16" ]
	run -0 "${CHK[@]}" len "$T/d64.rvs" epochs
	[ "$output" = "len 45 hint 45 yielded 45 epochs 0:15,1:15,2:15" ]
	# after skip_batches: what is left, the epoch skipped whole left out
	run -0 "${CHK[@]}" len "$T/b64.rvs" skip_batches=20 epochs
	[ "$output" = "len 28 hint 28 yielded 28 epochs 1:12,2:16" ]
	# samples collated by the reader
	run -0 "${CHK[@]}" len "$T/s.rvs" batch_size=64 epochs
	[ "$output" = "len 48 hint 48 yielded 48 epochs 0:16,1:16,2:16" ]
	# a pipe: rv-batch's batch.size and batch.drop-last keys tell, whether
	# or not the size divides the epoch
	run -0 bash -c "set -o pipefail; rv-batch -q -b 100 '$T/s.rvs' | ${CHK[*]} len -"
	[ "$output" = "len 30 hint 30 yielded 30" ]
	run -0 bash -c "set -o pipefail; rv-batch -q -b 64 '$T/s.rvs' | ${CHK[*]} len -"
	[ "$output" = "len 48 hint 48 yielded 48" ]
	run -0 bash -c "set -o pipefail; rv-batch -q -b 64 --drop-last '$T/s.rvs' | ${CHK[*]} len -"
	[ "$output" = "len 45 hint 45 yielded 45" ]
	# rv-score drops samples: no len(), an estimate
	rv-score -q --policy uniform --keep 0.5 "$T/s.rvs" |
	    rv-batch -q -b 64 -o "$T/sc.rvs"
	run -0 "${CHK[@]}" len "$T/sc.rvs"
	[[ "$output" =~ ^"len TypeError hint "[0-9]+" yielded "[0-9]+$ ]]
	# RvDataset over files: from the metadata, or from the index
	run -0 "${CHK[@]}" dataset_len "$T/b64.rvs" "$T/sc.rvs"
	[[ "$output" =~ ^"dataset len ok: 48/metadata "[0-9]+"/index "[0-9]+"/metadata"$ ]]
}

@test "bridge: RvDataset, 2 shards x 2 ranks x 2 workers: every sample once, equal steps, each worker reads its quarter" {
	slow
	for i in 0 1; do
		rv-decode -q --limit 2000 --epochs 2 --shuffle --shard $i/2 \
		    "$IMG" "$LAB" | rv-batch -q -b 50 -o "$T/part-$i.rvs"
	done
	run -0 "${CHK[@]}" ranks 2 2 "$T/part-0.rvs" "$T/part-1.rvs"
	[[ "$output" =~ ^"ranks ok: 2 ranks x 2 workers, 40 batches each, every sample once, each worker read at most "(0|1)\.[0-9]+" of its share"$ ]]
}

@test "bridge: one file split over 2 slots, neither reading it whole; unequal shares padded or dropped to equal steps; stdin refuses workers" {
	slow
	rv-decode -q --limit 3000 --epochs 2 --shuffle "$IMG" "$LAB" |
	    rv-batch -q -b 50 -o "$T/one.rvs"
	rv-decode -q --limit 1000 "$IMG" "$LAB" | rv-batch -q -b 50 -o "$T/u0.rvs"
	rv-decode -q --limit 600 "$IMG" "$LAB" | rv-batch -q -b 50 -o "$T/u1.rvs"
	rv-decode -q --limit 500 "$IMG" "$LAB" | rv-batch -q -b 50 -o "$T/u2.rvs"
	run -0 "${CHK[@]}" split "$T/one.rvs" "$T/u0.rvs" "$T/u1.rvs" "$T/u2.rvs" < /dev/null
	# each slot reads about half the file (its frames, the headers)
	[[ "$output" =~ ^"split ok: one file, each slot read 0."(4[5-9]|5[0-5])" to 0."(4[5-9]|5[0-5])" of it; unequal shares 17 and 25 batches: equal steps padded and dropped; stdin refuses workers"$ ]]
}

@test "bridge: skip_batches resumes at batch K of a file, a pipe, collated samples, and RvDataset's ranks and workers" {
	slow
	rv-decode -q --limit 1000 --epochs 3 --shuffle "$IMG" "$LAB" -o "$T/s.rvs"
	rv-batch -q -b 64 "$T/s.rvs" -o "$T/b.rvs"
	run -0 "${CHK[@]}" resume "$T/b.rvs" "$T/s.rvs" 64 0 1 15 16 17 30 47 48 60
	[ "$output" = "resume ok: 27 restarts, 48 batches" ]
	# stored frames from a pipe: headers read as they lie
	run -0 bash -c "set -o pipefail; rv-batch -q -b 64 '$T/s.rvs' | ${CHK[*]} resume_pipe 21 '$T/b.rvs'"
	[ "$output" = "resume pipe ok: 27 batches after 21" ]
	for i in 0 1 2; do
		rv-decode -q --limit 1500 --epochs 2 --shuffle --shard $i/3 \
		    "$IMG" "$LAB" | rv-batch -q -b 40 -o "$T/p$i.rvs"
	done
	run -0 "${CHK[@]}" resume_ranks 2 2 "$T/p0.rvs" "$T/p1.rvs" "$T/p2.rvs"
	[ "$output" = "resume ranks ok: 6 restarts over 2 ranks x 2 workers" ]
}
