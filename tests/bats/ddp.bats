#!/usr/bin/env bats
# Data-parallel PyTorch training fed by rv (pipelines/ddp-train.sh): two
# ranks under torchrun, each its own rv-decode --shard auto | rv-refurbish
# | rv-score --budget | rv-batch | ddp-train.py.  They take equal steps in
# every epoch, the ranks' first epochs together are the dataset (padded
# when 2 does not divide it), the model learns; a failing or silent rank
# ends the whole run with exit 1 instead of a hang, and unequal kept
# counts stop it naming both step counts.  And what refurbishing a shard
# changes: a sample's epoch 0 is the same under any rank count, its later
# epochs are not.  Needs Debian's python3-torch and python3-zstandard.
# (pipelines/slurm-ddp.sbatch, the same under srun: tests/bats/slurm.bats.)

load helpers

setup() {
	need_fmnist
	need_torch torch.distributed
	T="$BATS_TEST_TMPDIR"
	IMG="$FMNIST/train-images-idx3-ubyte.gz"
	LAB="$FMNIST/train-labels-idx1-ubyte.gz"
}

# ddp [VAR=VALUE...]: run pipelines/ddp-train.sh on 2 ranks under
# `run`, OUT=$T/out, on a port of its own (not --standalone's 29400,
# which another run may hold), at most 150 s.
ddp() {
	local port
	port="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
	run --separate-stderr timeout 150 env OUT="$T/out" RV_BIN="${SHIM:-$BIN}" \
	    PYTHON="$PY" RDZV_PORT="$port" EVAL_LIMIT=1000 "$@" \
	    bash "$REPO/pipelines/ddp-train.sh"
	echo "$stderr" >&2
}

# json EXPR: a python expression of s, the run's summary.
json() {
	"$PY" -c 'import json, sys; s = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
	    "$T/out/summary.json" "$1"
}

# shim [rv-score|rv-batch] SCRIPT: RV_BIN becomes a directory of the
# programs where that one runs SCRIPT on rank 1 (sh -c, with $REAL the
# program itself and the arguments as "$@").
shim() {
	local f
	SHIM="$T/shim"
	mkdir -p "$SHIM"
	for f in "$BIN"/*; do
		ln -sf "$f" "$SHIM/"
	done
	rm "$SHIM/$1"
	printf '#!/bin/sh\nREAL=%q\n[ "$RANK" = 1 ] || exec "$REAL" "$@"\n%s\n' \
	    "$BIN/$1" "$2" > "$SHIM/$1"
	chmod +x "$SHIM/$1"
}

# no_leftovers: no process of the run is left (every rank's pipeline
# went with it).
no_leftovers() {
	run pgrep -f -- "$T/"
	[ "$status" -eq 1 ] || { ps -o pid,args -p "${output//$'\n'/,}" >&2; false; }
}

@test "ddp: shellcheck finds nothing in ddp-train.sh, ddp-rank.sh and slurm-ddp.sbatch" {
	slow
	command -v shellcheck >/dev/null || skip "shellcheck is not installed"
	cd "$REPO"
	run -0 shellcheck -x -s bash pipelines/ddp-train.sh pipelines/ddp-rank.sh \
	    pipelines/slurm-ddp.sbatch
}

@test "ddp-train.sh: 2 ranks, each its own pipeline: equal steps every epoch, epoch 0 is the dataset, accuracy above chance" {
	slow
	local budget=0 r e
	[[ "$(rv-score --help 2>&1)" != *--budget* ]] || budget=1
	ddp LIMIT=2000 EPOCHS=3 IDS_OUT="$T/ids"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"ddp-train: epoch 2: "*" steps on each of 2 ranks"* ]]
	# the summary: printed, and in OUT
	[ "$output" = "$(cat "$T/out/summary.json")" ]
	[ "$(json '" ".join(map(str, (s["ranks"], s["epochs"], s["backend"])))')" = "2 3 gloo" ]
	# every epoch, the ranks took as many steps
	run -0 json 'all(len(set(e)) == 1 for e in s["steps_per_epoch"])'
	[ "$output" = True ]
	[ "$(json 's["steps_per_epoch"][0]')" = "[16, 16]" ]	# 1000 each, by 64
	[ "$(json 's["samples_per_epoch"][0]')" = "[1000, 1000]" ]
	if [ "$budget" = 1 ]; then
		# rv-score --budget 0.5: exactly half of each window, on each
		# rank (windows of rv-refurbish's groups, 64 / 0.5 = 128:
		# 7 x 64 + 52)
		[ "$(json 's["samples_per_epoch"][1:]')" = "[[500, 500], [500, 500]]" ]
		[ "$(json 's["steps_per_epoch"][1:]')" = "[[8, 8], [8, 8]]" ]
	fi
	# well above chance (10 classes): 0.74 here, deterministic
	run -0 json 's["test_acc"] > 0.6'
	[ "$output" = True ]
	[ "$(wc -l < "$T/out/ddp-train.log")" -eq 3 ]

	# The ids each rank trained on: epoch 0's, of both ranks, are the
	# 2000 samples once each; a rank never trains on another's.
	diff <(awk -F'\t' '$1 == 0 { print $3 }' "$T/ids" | sort -n) <(seq 0 1999)
	for r in 0 1; do
		for e in 1 2; do
			[ -z "$(comm -13 <(awk -F'\t' -v r=$r '$1 == 0 && $2 == r { print $3 }' "$T/ids" | sort) \
			    <(awk -F'\t' -v r=$r -v e=$e '$1 == e && $2 == r { print $3 }' "$T/ids" | sort))" ]
		done
	done
	# what each rank trained is what the summary says
	run -0 awk -F'\t' '{ n[$1 " " $2]++ } END { for (k in n) print k, n[k] }' "$T/ids"
	[ "$(sort <<< "$output" | awk '{ printf "%s ", $3 }')" = \
	    "$(json '" ".join(str(n) for e in s["samples_per_epoch"] for n in e)') " ]
	# the FIFOs are gone
	[ -z "$(find "$T/out" -name '*.fifo')" ]
}

@test "ddp-train.sh: a dataset 2 does not divide: the shards are padded to equal sizes, every sample in one" {
	slow
	[[ "$(rv-decode --help 2>&1)" == *"--shard auto"* ]] ||
	    skip "rv-decode has no --shard auto (no padding)"
	ddp LIMIT=1001 EPOCHS=1 IDS_OUT="$T/ids"
	[ "$status" -eq 0 ]
	# rv-decode --shard auto pads (--even pad, rv-decode(1)): the shares
	# are 501 and 500, and rank 1 writes the first sample of its shard
	# again; so 501 each, 8 steps of 64 on each rank
	[ "$(json 's["samples_per_epoch"]')" = "[[501, 501]]" ]
	[ "$(json 's["steps_per_epoch"]')" = "[[8, 8]]" ]
	[ "$(wc -l < "$T/ids")" -eq 1002 ]
	# every sample once, but one of rank 1's twice
	diff <(cut -f3 "$T/ids" | sort -n | uniq) <(seq 0 1000)
	[ "$(cut -f3 "$T/ids" | sort -n | uniq -d | wc -l)" -eq 1 ]
	[ "$(awk -F'\t' '$2 == 1 { print $3 }' "$T/ids" | sort | uniq -d | wc -l)" -eq 1 ]
}

@test "ddp-train.sh: unequal kept counts (a draw per sample, no --budget) stop every rank, naming both step counts" {
	slow
	ddp LIMIT=1000 EPOCHS=2 SCORE_OPTS='--policy uniform'
	[ "$status" -eq 1 ]
	# epoch 0 is whole on both ranks; in epoch 1 each keeps its own
	# draw of about half (261 and 250 samples here)
	[[ "$stderr" == *"ddp-train: epoch 0: 8 steps on each of 2 ranks"* ]]
	[[ "$stderr" =~ "ddp-train: rank 0: epoch 1: unequal steps across ranks: rank 0: "([0-9]+)" steps ("[0-9]+" samples), rank 1: "([0-9]+)" steps ("[0-9]+" samples): DDP needs the same number of batches on every rank" ]]
	[ "${BASH_REMATCH[1]}" -ne "${BASH_REMATCH[2]}" ]
	[[ "$stderr" == *"ddp-train: rank 1: epoch 1: unequal steps across ranks: "* ]]
	[ ! -e "$T/out/summary.json" ]
	no_leftovers
}

@test "ddp-train.sh: a rank whose pipeline fails (a bad rv-score option) fails the whole run at once" {
	slow
	shim rv-score 'exec "$REAL" --no-such-option "$@"'
	SECONDS=0
	ddp LIMIT=500 EPOCHS=1
	[ "$status" -eq 1 ]
	[ "$SECONDS" -lt 60 ]
	[[ "$stderr" == *"rv-score: unknown option '--no-such-option'"* ]]
	[[ "$stderr" == *"ddp-train: rank 0: epoch 0: unequal epochs across ranks: rank 0: epoch 0, rank 1: stream ended"* ]]
	[ ! -e "$T/out/summary.json" ]
	no_leftovers
}

@test "ddp-train.sh: a rank whose stream breaks mid-epoch stops every rank" {
	slow
	# rank 1's batches cut after 200000 bytes (of 392000): a truncated
	# stream
	shim rv-batch '"$REAL" "$@" | head -c 200000'
	ddp LIMIT=1000 EPOCHS=1
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"ddp-train: rank 1: <stdin>: record "*" at byte "*": truncated"* ]]
	[[ "$stderr" == *"ddp-train: rank 0: rank 1's input failed (see its error)"* ]]
	no_leftovers
}

@test "ddp-train.sh: a rank that stops answering fails the run after DDP_TIMEOUT, not never" {
	slow
	# rank 1's batches never come, and its stream never ends
	shim rv-batch 'exec sleep 1000'
	SECONDS=0
	ddp LIMIT=500 EPOCHS=1 DDP_TIMEOUT=5
	[ "$status" -eq 1 ]
	[ "$SECONDS" -lt 90 ]
	[[ "$stderr" == *"ddp-train: rank 0: the ranks lost each other (a rank died, or none answered in 5 s): "* ]]
	no_leftovers
}

@test "rv-refurbish: a sample's epoch 0 is the same bytes under any rank count; later epochs depend on the shard" {
	slow
	local s
	# The whole set (one rank) and rank 0's half of it, as ddp-rank.sh
	# decodes it, refurbished alike.
	rv-decode -q --limit 400 "$IMG" "$LAB" -o "$T/whole.rvs"
	RANK=0 WORLD_SIZE=2 rv-decode -q --shard auto --shuffle --seed 0 \
	    --limit 400 "$IMG" "$LAB" -o "$T/half.rvs" 2>/dev/null ||
	    rv-decode -q --shard 0/2 --shuffle --seed 0 --limit 400 "$IMG" \
		"$LAB" -o "$T/half.rvs"
	for s in whole half; do
		rv-refurbish -q -j 1 --partial 'randaugment n=1 m=5' \
		    --final 'random_crop size=28 padding=2; flip' --reuse 3 \
		    --epochs 3 --batch 64 --seed 0 "$T/$s.rvs" -o "$T/$s.out"
		# "epoch-id uses sha1-of-the-pixels" for each sample
		PYTHONPATH="$REPO/python" "$PY" -c '
import hashlib, sys, rvstream
for r in rvstream.Reader(sys.argv[1]).records():
    if isinstance(r, rvstream.Sample):
        print(f"{r.epoch}-{r.id}", r.uses,
              hashlib.sha1(r.pixels.tobytes()).hexdigest())
' "$T/$s.out" | sort > "$T/$s.tsv"
	done
	[ "$(wc -l < "$T/half.tsv")" -eq 600 ]
	# For each of the half's 200 samples in each epoch: its bytes and
	# its partial's uses in both runs.
	run -0 awk '
	    { e = $1; sub(/-.*/, "", e) }
	    e == 0 { e0++; if ($3 == $5 && $2 == 1 && $4 == 1) e0same++; next }
	    $2 == $4 && $3 != $5 { bad++ }	# same refresh epoch, other bytes
	    $2 != $4 { other++ }
	    $3 != $5 { differ++ }
	    END { print e0 + 0, e0same + 0, NR - e0, other + 0, differ + 0, bad + 0 }' \
	    <(join "$T/half.tsv" "$T/whole.tsv")
	echo "epoch 0: samples, the same; epochs 1-2: samples, another refresh epoch, other bytes, same refresh but other bytes: $output" >&2
	read -r e0 e0same later other differ bad <<< "$output"
	# epoch 0: every partial fresh, keyed by (seed, 0, id): the same
	[ "$e0" -eq 200 ] && [ "$e0same" -eq 200 ]
	# later: a partial is the same image when it was refreshed in the
	# same epoch, which the chunks of the run's own N positions say: in
	# another epoch for 4/9 of the samples in epoch 1, 2/3 in epoch 2
	# (where RandAugment drew an op that changes nothing, the bytes may
	# still agree)
	[ "$later" -eq 400 ] && [ "$bad" -eq 0 ]
	[ "$other" -ge 100 ] && [ "$differ" -ge 100 ] && [ "$differ" -le "$other" ]
}

@test "ddp-train.sh: SHARDS: the launcher indexes the archive shards once; each rank reads the index and its own shards, equal steps" {
	slow
	local d="$T/data" i
	fmnist_tars "$d" train 50 50 50 50 50 50 50 50
	ddp SHARDS="$d/train-*.tar" EPOCHS=2 IDS_OUT="$T/ids"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"ddp-train.sh: indexing 8 shards into $T/out/train.idx"* ]]
	[ "$(grep -c '^shard	' "$T/out/train.idx")" -eq 8 ]
	[ "$(json 's["samples_per_epoch"][0]')" = "[200, 200]" ]
	run -0 json 'all(len(set(e)) == 1 for e in s["steps_per_epoch"])'
	[ "$output" = True ]
	# epoch 0: the 400 samples once, each rank 4 whole shards of 50
	# (rv-refurbish serves the later ones from the rank's own)
	diff <(awk -F'\t' '$1 == 0 { print $3 }' "$T/ids" | sort -n) <(seq 0 399)
	for i in 0 1; do
		[ "$(awk -F'\t' -v r=$i '$1 == 0 && $2 == r { print int($3 / 50) }' "$T/ids" | sort -u | wc -l)" -eq 4 ]
	done
	# a second run reuses the index; a shard rewritten since stops it
	ddp SHARDS="$d/train-*.tar" EPOCHS=1
	[ "$status" -eq 0 ]
	[[ "$stderr" != *"indexing"* ]]
	cat "$d/train-1.tar" >> "$d/train-0.tar"
	ddp SHARDS="$d/train-*.tar" EPOCHS=1
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"rv-decode: '$d/train-0.tar': 245760 bytes, 122880 when it was indexed: rewritten since; rebuild the index '$T/out/train.idx' (rv-decode --index-out)"* ]]
}
