#!/usr/bin/env bats
# Streams concatenate (rv-stream(5), "Epochs"): one definition of an epoch
# for every reader, C and Python.  Shards 1-4 of 5 of a dataset joined with
# `cat` (or given as operands) are one epoch of all their samples in every
# program; two runs' epochs joined stay apart; samples of another epoch
# with no epoch-end between are an error, never a silent drop.

load helpers

setup_file() {
	need_fmnist
	local d="$BATS_FILE_TMPDIR" i
	# 1000 images, 200 a shard; shards 1-4 hold 800
	for i in 0 1 2 3 4; do
		rv-decode -q --limit 1000 --shard "$i/5" \
		    "$FMNIST/train-images-idx3-ubyte.gz" \
		    "$FMNIST/train-labels-idx1-ubyte.gz" > "$d/s$i.rvs"
	done
	cat "$d/s1.rvs" "$d/s2.rvs" "$d/s3.rvs" "$d/s4.rvs" > "$d/cat.rvs"
	# two epochs of 20, twice: epochs 0 1 0 1
	rv-decode -q --limit 20 --epochs 2 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" > "$d/e2.rvs"
	cat "$d/e2.rvs" "$d/e2.rvs" > "$d/e2e2.rvs"
}

setup() {
	T="$BATS_TEST_TMPDIR"
	D="$BATS_FILE_TMPDIR"
	SHARDS=("$D/s1.rvs" "$D/s2.rvs" "$D/s3.rvs" "$D/s4.rvs")
	PY=/usr/bin/python3
}

# epochs FILE: "number:samples" for each epoch rv-inspect lists.
epochs() {
	rv-inspect -v "$1" 2> /dev/null | awk '/^epochs/ { on = 1; next }
	    on && /^  / { printf "%s%s:%s", sep, $1, $2; sep = " "; next }
	    on { exit } END { print "" }'
}

# ends FILE: the epoch-end records in FILE as it lies.
ends() {
	rv-inspect --dump "$1" | awk -F'\t' '$3 == "epoch-end"' | wc -l
}

# A copy of FILE without its record number N (from 0): a frame cut out.
drop_record() {
	local a b
	a=$(rv-inspect --dump "$1" | awk -F'\t' -v n="$2" '$1 == n { print $2 }')
	b=$(rv-inspect --dump "$1" | awk -F'\t' -v n="$2" '$1 == n + 1 { print $2 }')
	{ head -c "$a" "$1"; tail -c +"$((b + 1))" "$1"; }
}

@test "concat: rv-inspect counts cat of 4 shards as one epoch of 800" {
	slow
	run -0 epochs "$D/cat.rvs"
	[ "$output" = "0:800" ]
	run -0 rv-inspect "$D/cat.rvs"
	[ "${lines[0]}" = "records      808 (sample 800, batch 0, epoch-end 4, meta 4)" ]
	[ "${lines[4]}" = "  0          800 samples, epoch-end 800 in 4 records" ]
	# operands are read as their concatenation
	run -0 rv-inspect "${SHARDS[@]}"
	[ "${lines[4]}" = "  0          800 samples, epoch-end 800 in 4 records" ]
	# two runs' epochs do not join: 0 1 0 1
	run -0 epochs "$D/e2e2.rvs"
	[ "$output" = "0:20 1:20 0:20 1:20" ]
}

@test "concat: rv-batch batches cat of 4 shards as one epoch, operands alike" {
	slow
	run -0 --separate-stderr rv-batch -v -b 64 "$D/cat.rvs" -o "$T/b.rvs"
	[ "$stderr" = "rv-batch: 800 samples in, 13 batches out (12 full of 64, 1 short), 0 short dropped (0 samples), 1 epoch" ]
	run -0 epochs "$T/b.rvs"
	[ "$output" = "0:800" ]
	rv-batch -q -b 64 "${SHARDS[@]}" -o "$T/b2.rvs"
	cmp <(zstd -dcq "$T/b.rvs") <(zstd -dcq "$T/b2.rvs")
	run -0 --separate-stderr rv-batch -v -b 64 "$D/e2e2.rvs" -o "$T/e.rvs"
	[[ "$stderr" == *", 4 epochs" ]]
}

@test "concat: rv-train-gpu trains cat of 4 shards as one epoch of 800" {
	slow
	run -0 --separate-stderr rv-train-gpu -q -j 1 -b 64 \
	    -m 'conv 4 k=3 pad=1; relu; maxpool 2; linear' "$D/cat.rvs"
	[ "$(printf '%s\n' "$output" | awk '$1 == "epochs" { print $2 }')" = 1 ]
	[ "$(printf '%s\n' "$output" | awk '$1 == "samples" { print $2 }')" = 800 ]
	[ "$(printf '%s\n' "$output" | awk '$1 == "steps" { print $2 }')" = 13 ]
	run -0 --separate-stderr rv-train-gpu -q -j 1 -b 64 \
	    -m 'conv 4 k=3 pad=1; relu; maxpool 2; linear' "${SHARDS[@]}"
	[ "$(printf '%s\n' "$output" | awk '$1 == "epochs" { print $2 }')" = 1 ]
	[ "$(printf '%s\n' "$output" | awk '$1 == "steps" { print $2 }')" = 13 ]
	run -0 --separate-stderr rv-train-gpu -q -j 1 -b 64 \
	    -m 'conv 4 k=3 pad=1; relu; maxpool 2; linear' "$D/e2e2.rvs"
	[ "$(printf '%s\n' "$output" | awk '$1 == "epochs" { print $2 }')" = 4 ]
}

@test "concat: rv-refurbish takes cat of 4 shards whole; a second epoch is an error" {
	slow
	run -0 --separate-stderr rv-refurbish -v -j 1 --partial 'flip' \
	    --final '' --reuse 2 --epochs 2 "$D/cat.rvs" -o "$T/r.rvs"
	[[ "${stderr_lines[0]}" == "rv-refurbish: epoch 0: 800 misses, 0 hits, 800 partials run, "* ]]
	run -0 epochs "$T/r.rvs"
	[ "$output" = "0:800 1:800" ]
	# from a pipe too
	cat "$D/cat.rvs" | rv-refurbish -q -j 1 --partial 'flip' --final '' \
	    --reuse 2 --epochs 2 -o "$T/p.rvs"
	cmp "$T/r.rvs" "$T/p.rvs"
	run -1 --separate-stderr rv-refurbish -q --partial 'flip' --final '' \
	    "$D/e2.rvs" -o "$T/x.rvs"
	[[ "$stderr" == "rv-refurbish: '$D/e2.rvs': record 22 at byte "*": a second epoch (epoch 1) after the dataset's: "* ]]
	[ ! -e "$T/x.rvs" ]
}

@test "concat: rv-score and rv-augment pass cat of 4 shards on as one epoch" {
	slow
	rv-score -q "$D/cat.rvs" -o "$T/s.rvs"
	run -0 epochs "$T/s.rvs"
	[ "$output" = "0:800" ]
	[ "$(ends "$T/s.rvs")" = 1 ]
	rv-score -q "${SHARDS[@]}" -o "$T/s2.rvs"
	run -0 epochs "$T/s2.rvs"
	[ "$output" = "0:800" ]
	[ "$(ends "$T/s2.rvs")" = 1 ]
	rv-augment -q -j 2 'flip' "$D/cat.rvs" -o "$T/a.rvs"
	run -0 epochs "$T/a.rvs"
	[ "$output" = "0:800" ]
	[ "$(ends "$T/a.rvs")" = 1 ]
	rv-augment -q -j 2 'flip' "${SHARDS[@]}" -o "$T/a2.rvs"
	cmp <(zstd -dcq "$T/a.rvs") <(zstd -dcq "$T/a2.rvs")
}

@test "concat: python rvstream reads the same epochs as the C readers" {
	slow
	"$PY" -c 'import zstandard' 2>/dev/null || skip "no python3-zstandard"
	run -0 env PYTHONPATH="$REPO/python" "$PY" -c '
import sys, rvstream
for path in sys.argv[1:]:
    r = rvstream.Reader(path, batch_size=64, as_torch=False)
    sizes = [sum(len(b.ids) for b in ep) for ep in r.epochs()]
    ends = [f"{e.epoch}:{e.count}" for e in r.epoch_ends]
    print(" ".join(map(str, sizes)), "|", " ".join(ends))
' "$D/cat.rvs" "$D/e2e2.rvs"
	[ "${lines[0]}" = "800 | 0:800" ]
	[ "${lines[1]}" = "20 20 20 20 | 0:20 1:20 0:20 1:20" ]
}

@test "concat: samples of another epoch with no epoch-end between: an error everywhere" {
	slow
	# e2.rvs: meta, 20 samples of epoch 0, epoch-end, 20 of epoch 1, ...
	drop_record "$D/e2.rvs" 21 > "$T/bad.rvs"
	local off
	off=$(rv-inspect --dump "$T/bad.rvs" | awk -F'\t' '$1 == 21 { print $2 }')
	local why="record 21 at byte $off: sample of epoch 1 after samples of epoch 0 with no epoch-end between them"
	run -1 --separate-stderr rv-batch -q "$T/bad.rvs" -o "$T/o.rvs"
	[ "$stderr" = "rv-batch: '$T/bad.rvs': $why" ]
	run -1 --separate-stderr rv-score -q "$T/bad.rvs" -o "$T/o.rvs"
	[ "$stderr" = "rv-score: '$T/bad.rvs': $why" ]
	run -1 --separate-stderr rv-train-gpu -q -j 1 -b 8 -m 'linear' "$T/bad.rvs"
	[[ "$stderr" == *"'$T/bad.rvs': $why"* ]]
	run -1 --separate-stderr rv-refurbish -q --partial flip --final '' "$T/bad.rvs" -o "$T/o.rvs"
	[ "$stderr" = "rv-refurbish: '$T/bad.rvs': $why" ]
	"$PY" -c 'import zstandard' 2>/dev/null || return 0
	run -1 --separate-stderr env PYTHONPATH="$REPO/python" "$PY" -c '
import sys, rvstream
try:
    for _ in rvstream.Reader(sys.argv[1], batch_size=8, as_torch=False):
        pass
except rvstream.RvStreamError as e:
    print(e, file=sys.stderr); sys.exit(1)' "$T/bad.rvs"
	[ "$stderr" = "$T/bad.rvs: $why" ]
}
