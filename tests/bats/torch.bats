#!/usr/bin/env bats
# The PyTorch bridge (python/rvstream): what rv writes, rvstream reads into
# the same tensors; bad streams raise RvStreamError; feedback reaches
# rv-score; pipelines/torch-train.sh trains end to end.  Needs Debian's
# python3-torch and python3-zstandard (make deps).

load helpers

setup() {
	need_fmnist
	need_torch
	T="$BATS_TEST_TMPDIR"
	CHK=("$PY" "$REPO/tests/checks/torch_checks.py")
	IMG="$FMNIST/train-images-idx3-ubyte.gz"
	LAB="$FMNIST/train-labels-idx1-ubyte.gz"
}

@test "rvstream: batches from a file and from a pipe equal the IDX files, at any level" {
	slow
	rv-decode -q --limit 1000 --epochs 2 --shuffle "$IMG" "$LAB" -o "$T/s.rvs"
	rv-batch -b 64 --level 3 "$T/s.rvs" -o "$T/b.rvs"
	run -0 "${CHK[@]}" idx "$T/b.rvs" "$IMG" "$LAB" 2 1000
	[ "$output" = "idx ok: 32 batches, 2 epochs of 1000" ]
	run -0 bash -c "set -o pipefail; rv-batch -b 100 '$T/s.rvs' |
	    ${CHK[*]} idx - '$IMG' '$LAB' 2 1000"
	[ "$output" = "idx ok: 20 batches, 2 epochs of 1000" ]
}

@test "rvstream: rv-score's weights and every field equal a struct parse of zstd -dc" {
	slow
	rv-decode -q --limit 1000 --epochs 2 "$IMG" "$LAB" |
	    rv-score -q --policy uniform --keep 0.5 --reweight |
	    rv-batch -b 50 -o "$T/w.rvs"
	zstd -dcq "$T/w.rvs" > "$T/w.raw"
	run -0 "${CHK[@]}" raw "$T/w.rvs" "$T/w.raw"
	[[ "$output" =~ ^"raw ok: "[0-9]+" batches, "([0-9]+)" weights not 1"$ ]]
	[ "${BASH_REMATCH[1]}" -gt 400 ]	# epoch 1 keeps about half, weight 2
}

@test "rvstream: sample records collated with batch_size equal rv-batch's batches" {
	slow
	rv-decode -q --limit 700 --epochs 2 "$IMG" "$LAB" -o "$T/s.rvs"
	rv-batch -b 128 "$T/s.rvs" -o "$T/b.rvs"
	run -0 "${CHK[@]}" collate "$T/s.rvs" "$T/b.rvs" 128
	[ "$output" = "collate ok: 12 batches" ]
}

@test "rvstream: epochs() yields each epoch, with or without prefetching; float() normalises" {
	slow
	rv-decode -q --limit 500 --epochs 3 "$IMG" "$LAB" | rv-batch -b 64 -o "$T/b.rvs"
	run -0 "${CHK[@]}" epochs "$T/b.rvs" 0
	[ "$output" = "epochs ok: 0:500 1:192 2:500" ]
	run -0 "${CHK[@]}" epochs "$T/b.rvs" 3
	[ "$output" = "epochs ok: 0:500 1:192 2:500" ]
	run -0 "${CHK[@]}" float "$T/b.rvs"
	[ "$output" = "float ok: (64, 1, 28, 28)" ]
}

@test "rvstream: batches kept by the caller stay intact while the reader reuses buffers" {
	slow
	for level in -1 0; do
		rv-decode -q --limit 2000 "$IMG" "$LAB" |
		    rv-batch -b 128 --level $level -o "$T/b.rvs"
		run -0 "${CHK[@]}" keep "$T/b.rvs"
		[ "$output" = "keep ok: 16 batches" ]
	done
}

@test "rvstream: RvDataset works in a DataLoader, split over workers for a file, refused for stdin" {
	slow
	rv-decode -q --limit 300 "$IMG" "$LAB" | rv-batch -b 32 -o "$T/b.rvs"
	run -0 "${CHK[@]}" dataset "$T/b.rvs" < /dev/null
	[ "$output" = "dataset ok: 10 batches, 2 workers split them" ]
}

@test "rvstream: stored frames are read straight into the payload; frames mixing stored and compressed blocks fall back" {
	slow
	"$PY" -c 'import xxhash' || skip "no python3-xxhash: the stored-block path is off"
	run -0 bash -c "set -o pipefail; rv-decode -q --limit 600 --epochs 2 '$IMG' '$LAB' |
	    rv-batch -b 100 --level 0 | ${CHK[*]} blocks"
	[ "$output" = "blocks ok: mixed frames both ways, 12 stored batches, direct 15 of 15 records" ]
}

@test "rvstream: every truncation raises RvStreamError with the byte offset, or is a whole shorter stream" {
	slow
	# compressed frames (a file) and stored ones (the stored-block path)
	for level in -1 0; do
		rv-decode -q --limit 10 --epochs 2 "$IMG" "$LAB" |
		    rv-batch -b 4 --level $level -o "$T/b.rvs"
		run -0 "${CHK[@]}" truncations "$T/b.rvs"
		[[ "$output" =~ ^"truncations ok: "([0-9]+)" prefixes, "([0-9]+)" errors, 3 whole shorter streams"$ ]]
	done
}

@test "rvstream: random corruption raises RvStreamError, never another exception" {
	slow
	for level in 5 0; do
		rv-decode -q --limit 10 --epochs 2 "$IMG" "$LAB" |
		    rv-batch -b 4 --level $level -o "$T/b.rvs"
		run -0 "${CHK[@]}" corruptions "$T/b.rvs" 400
		[[ "$output" == "corruptions ok: "*" of 400 raised RvStreamError" ]]
	done
}

@test "rvstream: bad streams raise a clear one-line RvStreamError" {
	slow
	printf 'hello, world\n' > "$T/text"
	run -0 "${CHK[@]}" error "$T/text"
	[ "$output" = "error: $T/text: record 0 at byte 0: not an rv stream: no Zstandard frame here (magic 6c6c6568)" ]
	# a zstd frame that is not an rv record
	printf 'not a record, though long enough to be one: %s\n' {1..10} |
	    zstd -q > "$T/plain.zst"
	run -0 "${CHK[@]}" error "$T/plain.zst"
	[[ "$output" == "error: $T/plain.zst: record 0 at byte 0: bad record magic "*", not an rv record" ]]
	# samples where batches are wanted, and how to fix it
	rv-decode -q --limit 5 "$IMG" "$LAB" -o "$T/s.rvs"
	run -0 "${CHK[@]}" error "$T/s.rvs"
	[[ "$output" == *"the stream holds samples, not batches: pipe it through rv-batch(1) or pass batch_size" ]]
	# encoded samples need decoding first
	need_fixtures
	rv-decode -q --encoded "$FIX/img" -o "$T/enc.rvs"
	run -0 "${CHK[@]}" error "$T/enc.rvs" 4
	[[ "$output" == *"sample "*": decode it first (rv-decode(1))" ]]
	# cut after a batch: the epoch never ends
	rv-batch -b 2 "$T/s.rvs" -o "$T/b.rvs"
	size=$(stat -c %s "$T/b.rvs")
	run -0 "${CHK[@]}" error <(head -c $((size - 20)) "$T/b.rvs")
	[[ "$output" == *": truncated "* || "$output" == *"ends inside epoch 0"* ]]
	# and the example trainer says it in one line, exit 1
	run -1 --separate-stderr "$PY" "$REPO/pipelines/torch-train.py" -q "$T/text"
	[ "$stderr" = "torch-train: $T/text: record 0 at byte 0: not an rv stream: no Zstandard frame here (magic 6c6c6568)" ]
}

@test "torch-train.py --steps N: stops at step N, mid-epoch, whatever the epochs, the schedule fitted to N; not with --epochs" {
	slow
	rv-decode -q --limit 640 --epochs 3 "$IMG" "$LAB" | rv-batch -q -b 64 \
	    > "$T/b.rvs"
	run -0 --separate-stderr "$PY" "$REPO/pipelines/torch-train.py" -q \
	    --steps 15 --threads 1 --log "$T/log" "$T/b.rvs"
	[[ "$output" == *"steps     15"* ]]
	[[ "$output" == *"samples   960"* ]]
	# the epoch lines: the second epoch ends at step 15, mid-stream
	run -0 python3 -c 'import json, sys
print(" ".join("%d:%d" % (o["epoch"], o["steps"]) for o in map(json.loads, open(sys.argv[1]))))' "$T/log"
	[ "$output" = "0:10 1:15" ]
	# --schedule linear: the rate of the last step of each epoch, steps
	# 9 and 14 counted from 0, on the line to 0 at step 15
	run -0 --separate-stderr "$PY" "$REPO/pipelines/torch-train.py" -q \
	    --steps 15 --schedule linear --lr 0.3 --threads 1 --log "$T/lin" \
	    "$T/b.rvs"
	run -0 python3 -c 'import json, sys
print(" ".join("%.6f" % o["lr"] for o in map(json.loads, open(sys.argv[1]))))' "$T/lin"
	[ "$output" = "0.120000 0.020000" ]
	run -2 --separate-stderr "$PY" "$REPO/pipelines/torch-train.py" \
	    --steps 15 --epochs 2 "$T/b.rvs"
	[[ "$stderr" == *"argument --epochs: not allowed with argument --steps" ]]
}

@test "feedback: last_layer_gradnorm equals autograd's per-sample gradient norm" {
	slow
	run -0 "${CHK[@]}" gradnorm
	[ "$output" = "gradnorm ok: 12 samples, label smoothing 0 and 0.1" ]
}

@test "feedback: lines written by FeedbackWriter are rv-feedback(5) lines rv-score reads" {
	slow
	rv-decode -q --limit 600 --epochs 2 "$IMG" "$LAB" -o "$T/s.rvs"
	rv-batch -b 60 "$T/s.rvs" -o "$T/b.rvs"
	run -0 "${CHK[@]}" feedback_file "$T/b.rvs" "$T/fb.txt"
	[ "$output" = "feedback file ok: 1200 lines" ]
	run -0 "${CHK[@]}" feedback_bad "$T/bad.txt"
	[ "$output" = "bad feedback ok: 7 refused, nothing of them written" ]
	run -0 --separate-stderr rv-score -v --feedback "$T/fb.txt" \
	    --min-feedback 100 -o "$T/scored.rvs" "$T/s.rvs"
	# every line parsed: learned from, or unmatched (read before its
	# sample was sent); a malformed line would be a warning
	[[ "$stderr" =~ "rv-score: 1200 seen, "[^\;]*"; feedback "([0-9]+)" lines ("([0-9]+)" unmatched)"(", lag "[0-9]+" samples mean, "[0-9]+" max")?$ ]]
	[ $((BASH_REMATCH[1] + BASH_REMATCH[2])) -eq 1200 ]
	[ "$(grep -c -v '^rv-score: epoch' <<< "$stderr")" -eq 1 ]
}

@test "feedback: FeedbackWriter never blocks on a FIFO nobody reads, and a reader gets every line" {
	slow
	mkfifo "$T/fifo"
	run -0 timeout 60 "${CHK[@]}" feedback_noreader "$T/fifo"
	[[ "$output" == "no reader ok: 100000 lines in "*" s, none blocked" ]]
	cat "$T/fifo" > "$T/got" &
	run -0 timeout 60 "${CHK[@]}" feedback_fifo "$T/fifo" 20000
	[ "$output" = "fifo writer ok: 20000 lines" ]
	wait
	[ "$(wc -l < "$T/got")" -eq 20000 ]
	run -0 awk -F'\t' 'NF != 5 || $1 != NR - 1 || $2 != 3 || $4 != 0.5 || $5 != 2 { bad++ } END { print bad + 0 }' "$T/got"
	[ "$output" = 0 ]
}

@test "torch-train.sh: PyTorch trains from a refurbished, shrunk stream and feeds rv-score through a FIFO" {
	slow
	run -0 --separate-stderr env OUT="$T/out" RV_BIN="$BIN" LIMIT=4000 EVAL_LIMIT=1000 \
	    EPOCHS=2 PYTHON="$PY" bash "$REPO/pipelines/torch-train.sh"
	[[ "$stderr" == *"rv-score: epoch 0: 4000 seen, 4000 kept (100.0%), 0 dropped"* ]]
	[[ "$stderr" =~ "rv-score: 8000 seen, "[0-9]+" kept "[^\;]*"; feedback "([0-9]+)" lines" ]]
	[ "${BASH_REMATCH[1]}" -gt 0 ]	# the assistant learned from torch
	[[ "$stderr" == *"torch-train: epoch 1: "* ]]
	[[ "$output" == *"epochs    2"* ]]
	[[ "$output" =~ "eval      acc 0."([0-9]+) ]]
	[ "${BASH_REMATCH[1]:0:2}" -ge 50 ]	# well above chance (10%)
	[[ "$output" =~ "feedback  "([0-9]+)" lines written" ]]
	[ "${BASH_REMATCH[1]}" -gt 0 ]
	[ "$(wc -l < "$T/out/torch-train.log")" -eq 2 ]
	[ ! -e "$T/out/feedback.fifo" ]
}

@test "rvstream: RvDataset over an index gives each rank rv-decode --shard's samples, each worker its slot's, as the Python rule says" {
	local d="$T/ix"
	fmnist_tars "$d" shard 10 20 30 25 35 15 40 25
	rv-decode -q --index-out "$d/train.idx" "$d"/shard-?.tar
	export RV_BIN="$BIN"
	# shuffled epochs, exact shares: the same samples, rank by rank
	run -0 "${CHK[@]}" index "$d/train.idx" 2 2 "--shuffle --seed 5 --epochs 2 --even none"
	[ "$output" = "index ok: 2 ranks x 2 workers, 56 batches, 400 samples, 200 distinct" ]
	# the default pads every slot to ceil(200 / 6) = 34: equal steps
	run -0 "${CHK[@]}" index "$d/train.idx" 3 2 "--epochs 1"
	[ "$output" = "index ok: 3 ranks x 2 workers, 30 batches, 204 samples, 200 distinct" ]
	# elastic resume: 3 ranks had served 20 samples each of epoch 0;
	# 2 ranks x 2 workers share the rest, as rv-decode --resume does
	run -0 "${CHK[@]}" index "$d/train.idx" 2 2 "--shuffle --seed 4 --epochs 2 --even none --resume 0:3:20"
	[ "$output" = "index ok: 2 ranks x 2 workers, 48 batches, 340 samples, 200 distinct" ]
	# ... or from the list of the ids they trained
	"$BIN/rv-decode" -q --index "$d/train.idx" --shard 1/3 --shuffle --seed 4 --epochs 1 --even none |
	    rv-inspect --dump - | awk -F'\t' '$3 == "sample" { print $5 }' | head -30 > "$T/trained"
	run -0 "${CHK[@]}" index "$d/train.idx" 2 2 "--shuffle --seed 4 --epochs 1 --resume 0:@$T/trained"
	[ "$output" = "index ok: 2 ranks x 2 workers, 24 batches, 172 samples, 170 distinct" ]
	# more slots than shards, and a pipeline that fails: one clear error
	run -1 "$PY" -c "
import sys, torch; sys.path.insert(0, '$REPO/python'); import rvstream
ds = rvstream.RvDataset('$d/train.idx', batch_size=4, rank=0, world=3)
try:
    list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=3))
except ValueError as e:
    print(e)
for kw in ({'decode': '--shard 0/2'}, {'skip_batches': 3}):
    try:
        rvstream.RvDataset('$d/train.idx', batch_size=4, **kw)
    except ValueError as e:
        print(e)
ds = rvstream.RvDataset('$d/train.idx', rank=0, world=1, pipeline='rv-batch -b 0')
try:
    list(ds)
except RuntimeError as e:
    print(e); sys.exit(1)"
	# (a DataLoader worker's ValueError comes with its traceback)
	[[ "$output" == *"ValueError: RvDataset: '$d/train.idx': 8 shards, fewer than the 9 slots (3 ranks x 3 workers): fewer workers, or an index over smaller shards"* ]]
	[[ "$output" == *"RvDataset: decode: '--shard': not an rv-decode option RvDataset passes on (it sets --index and --shard itself)"* ]]
	[[ "$output" == *"RvDataset: skip_batches with an index: give decode='--resume E:N:K'"* ]]
	[[ "${lines[-1]}" == "RvDataset: rank 0 worker 0: its pipeline exited 2: bash -o pipefail -c "* ]]
}
