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

@test "bridge: len() is exact where the metadata says the size, a file's frames counted where it cannot; on a pipe TypeError and an estimate (rv-score without a budget)" {
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
	# rv-score without --budget drops a number of samples no one knows
	# ahead: on a pipe no len(), an estimate; a file's frames are counted
	rv-score -q --policy uniform --keep 0.5 "$T/s.rvs" |
	    rv-batch -q -b 64 -o "$T/sc.rvs"
	run -0 bash -c "set -o pipefail; cat '$T/sc.rvs' | ${CHK[*]} len -"
	[[ "$output" =~ ^"len TypeError hint "[0-9]+" yielded "[0-9]+$ ]]
	run -0 "${CHK[@]}" len "$T/sc.rvs" epochs
	[[ "$output" =~ ^"len "([0-9]+)" hint "([0-9]+)" yielded "([0-9]+)" epochs 0:"[0-9]+",1:"[0-9]+",2:"[0-9]+$ ]]
	[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[3]}" ]
	# RvDataset over files: from the metadata, or from the index
	run -0 "${CHK[@]}" dataset_len "$T/b64.rvs" "$T/sc.rvs"
	[[ "$output" =~ ^"dataset len ok: 48/metadata "[0-9]+"/index "[0-9]+"/metadata"$ ]]
}

@test "bridge: len() is exact over refurbished, scored and resumed streams, on a pipe too; OneCycleLR(total_steps=len()) ends with the stream" {
	slow
	local rf=(-q --partial 'randaugment n=1 m=5' --final 'random_crop size=28 padding=2; flip'
	    --reuse 3 --epochs 3 --batch 64)
	rv-decode -q --limit 1000 "$IMG" "$LAB" -o "$T/in.rvs"
	rv-decode -q --limit 1000 --epochs 3 "$IMG" "$LAB" -o "$T/s3.rvs"
	lenp() {	# lenp 'PIPELINE' [ARGS]: len over what the pipeline writes
		bash -c "set -o pipefail; $1 | ${CHK[*]} len - ${*:2}"
	}
	# rv-refurbish to one stream: its epochs, 1000 samples each
	run -0 lenp "rv-refurbish ${rf[*]@Q} '$T/in.rvs' | rv-batch -q -b 64"
	[ "$output" = "len 48 hint 48 yielded 48" ]
	run -0 lenp "rv-refurbish ${rf[*]@Q} --epoch-range 1-2 '$T/in.rvs'" batch_size=100
	[ "$output" = "len 20 hint 20 yielded 20" ]
	# one file an epoch: each file by its frames; joined on a pipe, the
	# count is unknown, the estimate the run's epochs
	mkdir "$T/ep"
	rv-refurbish "${rf[@]}" "$T/in.rvs" -o "$T/ep/%d.rvs"
	run -0 "${CHK[@]}" len "$T/ep/1.rvs" batch_size=64 epochs
	[ "$output" = "len 16 hint 16 yielded 16 epochs 1:16" ]
	run -0 lenp "cat '$T'/ep/*.rvs" batch_size=64
	[ "$output" = "len TypeError hint 48 yielded 48" ]
	# scored in rv-refurbish, a budget of a half: the first epoch whole
	run -0 lenp "rv-refurbish ${rf[*]@Q} --score '--policy uniform --budget 0.5' '$T/in.rvs' | rv-batch -q -b 64"
	[ "$output" = "len 32 hint 32 yielded 32" ]
	rv-refurbish "${rf[@]}" --score '--policy uniform --budget 0.5' \
	    "$T/in.rvs" -o "$T/rs.rvs"
	run -0 "${CHK[@]}" len "$T/rs.rvs" batch_size=64 epochs
	[ "$output" = "len 32 hint 32 yielded 32 epochs 0:16,1:8,2:8" ]
	# rv-score --budget 0.3, windows of 256: 3 x 77 + 70 = 301 an epoch
	# after the first; autoassist has no warm-up
	run -0 lenp "rv-score -q --policy uniform --budget 0.3 '$T/s3.rvs' | rv-batch -q -b 64"
	[ "$output" = "len 26 hint 26 yielded 26" ]
	run -0 lenp "rv-score -q --policy assistant --assistant autoassist --budget 0.3 '$T/s3.rvs'" batch_size=64
	[ "$output" = "len 15 hint 15 yielded 15" ]
	# rv-decode --resume: its first epoch is what was left of it
	rv-inspect -q --png "$T/png" "$T/in.rvs" > /dev/null
	tar -C "$T/png" -cf "$T/a.tar" .
	rv-decode -q --index-out "$T/a.idx" "$T/a.tar"
	run -0 lenp "rv-decode -q --index '$T/a.idx' --epochs 3 --resume 0:1:100 | rv-batch -q -b 32"
	[ "$output" = "len 93 hint 93 yielded 93" ]
	# the schedule a PyTorch user sizes with len(): on a pipe, refurbished
	# and scored, and in a file scored by rv-score
	run -0 bash -c "set -o pipefail; rv-refurbish ${rf[*]@Q} --score '--policy uniform --budget 0.5' '$T/in.rvs' | rv-batch -q -b 64 | ${CHK[*]} onecycle -"
	[ "$output" = "onecycle ok: 32 steps, epochs 16,8,8" ]
	rv-score -q --policy uniform --budget 0.3 "$T/s3.rvs" -o "$T/sc.rvs"
	run -0 "${CHK[@]}" onecycle "$T/sc.rvs" batch_size=64
	[ "$output" = "onecycle ok: 26 steps, epochs 16,5,5" ]
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
