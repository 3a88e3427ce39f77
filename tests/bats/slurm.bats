#!/usr/bin/env bats
# pipelines/slurm-offline-refurbish.sbatch on a real single-node Slurm
# cluster of 2 CPUs (fewer on a 1-CPU machine) and at most 2 GB, started
# once for the file by scripts/slurm-local.sh (tests/bats/slurm-setup.bash) and
# stopped whatever happens: the job as given, with no -c or --mem, runs
# there and writes its logs under OUT, none in the submit directory; the
# array's store of partials, written in uneven slices by three tasks, is
# the bytes of one rv-refurbish run with the same seed; the training job
# runs after the array and trains from it (--from-partials); a failed task takes the training
# job with it.  Without Slurm: the script is
# lint-clean, runs as one task and trains, resumes, and refuses to mix
# its epochs with another run's.  The Slurm tests skip when not root
# or when the packages are missing.
# shellcheck shell=bash disable=SC2154

load helpers
load slurm-setup

JOB="$REPO/pipelines/slurm-offline-refurbish.sbatch"
EPOCHS=5
# The settings of the test runs: 600 samples, a small model, 200 samples
# to evaluate on.
knobs() {
	export RV_BIN="$BIN" LIMIT=600 EPOCHS=$EPOCHS REUSE=2 SEED=7 BATCH=64 \
	    MODEL=mlp TEST="$BATS_FILE_TMPDIR/ref/test.rvs" \
	    TRAIN_OPTS="--lr 0.05"
}

setup_file() {
	local ref="$BATS_FILE_TMPDIR/ref"
	need_fmnist
	# The reference: one rv-refurbish run storing every epoch's partials.
	mkdir -p "$ref/parts"
	rv-decode -q --limit 600 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$ref/train.rvs"
	rv-decode -q --limit 200 "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz" -o "$ref/test.rvs"
	rv-refurbish -q -j 1 --partial 'randaugment n=1 m=5' --reuse 2 \
	    --epochs $EPOCHS --seed 7 \
	    --partials-out "$ref/parts/%04d.rvs" "$ref/train.rvs"

	if SLURM_SKIP="$(slurm_why_not)"; then
		export SLURM_SKIP
		return 0
	fi
	export SLURM_SKIP=
	# Sockets live there: a short path, not under BATS_FILE_TMPDIR.
	SLURM_DIR="$(mktemp -d /tmp/rv-slurm.XXXXXX)"
	export SLURM_DIR
	# A small node: 2 CPUs, 2 GB, or less where the machine has less.
	local cpus mb
	cpus="$(nproc)"
	[ "$cpus" -le 2 ] || cpus=2
	mb="$(awk '$1 == "MemTotal:" { print int($2 / 1024) }' /proc/meminfo)"
	[ "$mb" -le 2048 ] || mb=2048
	export SLURM_CPUS="$cpus"
	slurm_start "$SLURM_DIR" -c "$cpus" -m "$mb"
}

teardown_file() {
	slurm_stop "${SLURM_DIR:-}"
	[ -z "${SLURM_DIR:-}" ] || rm -rf "$SLURM_DIR"
}

need_slurm() {
	[ -z "$SLURM_SKIP" ] || skip "$SLURM_SKIP"
	export SLURM_CONF="$SLURM_DIR/slurm.conf"
}

# same_epochs DIR: DIR/parts holds the reference's files, no more.
same_epochs() {
	local e f
	for ((e = 0; e < EPOCHS; e++)); do
		printf -v f '%04d.rvs' "$e"
		cmp "$BATS_FILE_TMPDIR/ref/parts/$f" "$1/parts/$f" || return 1
	done
	[ "$(find "$1/parts" -type f | wc -l)" -eq "$EPOCHS" ]
}

@test "slurm-offline-refurbish: shellcheck finds nothing" {
	slow
	command -v shellcheck >/dev/null || skip "shellcheck is not installed"
	run -0 shellcheck -x -s bash "$JOB"
}

@test "slurm-offline-refurbish: without Slurm, one task stores every epoch's partials and trains from them" {
	local out="$BATS_TEST_TMPDIR/out"
	knobs
	OUT="$out" SLURM_CPUS_PER_TASK=1 run -0 --separate-stderr bash "$JOB"
	same_epochs "$out"
	cmp "$BATS_FILE_TMPDIR/ref/train.rvs" "$out/train.rvs"
	[ "${lines[0]}" = "model     mlp, 535818 parameters" ]
	grep -qx "epochs    $EPOCHS" "$out/summary.txt"
	grep -qx "samples   $((EPOCHS * 600))" "$out/summary.txt"
	grep -q "^eval      loss .* (epoch $((EPOCHS - 1)), " "$out/summary.txt"
	[ -s "$out/model.ck" ]
	[ "$(grep -c '^{"event":"epoch",' "$out/train.log")" -eq "$EPOCHS" ]
	[[ "$stderr" == *"slurm-offline-refurbish: task 0 of 1: epochs 0 to 4 of 5 (-j 1)"* ]]

	# Again: every epoch is there, nothing is rewritten.
	touch -d '2001-01-01' "$out"/parts/*
	OUT="$out" SLURM_CPUS_PER_TASK=1 TRAIN=0 run -0 bash "$JOB"
	[ -z "$(find "$out/parts" -type f -newermt 2002-01-01)" ]
	# Another seed would mix two runs' epochs.
	OUT="$out" SEED=8 run -1 --separate-stderr bash "$JOB" prepare
	[ "$stderr" = "slurm-offline-refurbish: '$out/plan': the files there are another run's: use another OUT" ]
	run -2 --separate-stderr bash "$JOB" bogus
	[ "$stderr" = "usage: [sbatch] slurm-offline-refurbish [prepare | train]" ]
	OUT="$out" FORMAT=webp run -1 --separate-stderr bash "$JOB" prepare
	[ "$stderr" = "slurm-offline-refurbish: FORMAT: 'webp': not jpeg, png or raw" ]
	# a store file lost: the training names it
	rm "$out/parts/0003.rvs"
	OUT="$out" SLURM_CPUS_PER_TASK=1 run -1 --separate-stderr bash "$JOB" train
	[[ "$stderr" == *"rv-refurbish: '$out/parts/0003.rvs': missing: epoch 3 serves the partials epoch 3 made"* ]]
}

@test "slurm-offline-refurbish: an array of 3 tasks stores the partials of one run; the training job follows" {
	slow
	need_slurm
	local out="$BATS_TEST_TMPDIR/out" job train t
	knobs
	# the trainer's step lines every 10 steps, progress lines every 1 s
	TRAIN_OPTS="--lr 0.05 --log-every 10"
	cd "$BATS_TEST_TMPDIR"
	# -c and --mem fit any test machine; the slices are 0, 1-2 and 3-4.
	RV_PROGRESS=1 OUT="$out" run -0 sbatch --parsable --array=0-2 -c 1 \
	    --mem=256M "$JOB"
	job="${output%%;*}"
	slurm_wait 120
	run -0 slurm_state "$job"
	[ "${#lines[@]}" -eq 3 ]
	for t in "${lines[@]}"; do
		[[ "$t" == *" COMPLETED 0:0" ]] || { slurm_logs "$SLURM_DIR"; false; }
	done
	for t in 0 1 2; do
		cat "$out/logs/rv-refurbish-${job}_$t.out"
	done
	grep -q "task 0 of 3: epochs 0 to 0 of 5 (-j 1)" "$out/logs/rv-refurbish-${job}_0.out"
	grep -q "task 1 of 3: epochs 1 to 2 of 5 (-j 1)" "$out/logs/rv-refurbish-${job}_1.out"
	grep -q "task 2 of 3: epochs 3 to 4 of 5 (-j 1)" "$out/logs/rv-refurbish-${job}_2.out"
	grep -q "training job [0-9]* runs after array $job" "$out/logs/rv-refurbish-${job}_0.out"
	same_epochs "$out"
	cmp "$BATS_FILE_TMPDIR/ref/train.rvs" "$out/train.rvs"

	train="$(cat "$out/train.jobid")"
	run -0 slurm_state "$train"
	[ "$output" = "$train COMPLETED 0:0" ]
	cat "$out/logs/rv-train-$train.out"
	grep -qx "epochs    $EPOCHS" "$out/summary.txt"
	grep -qx "samples   $((EPOCHS * 600))" "$out/summary.txt"
	grep -q "^eval      loss " "$out/summary.txt"
	grep -qx "epochs    $EPOCHS" "$out/logs/rv-train-$train.out"
	# the log a person follows the job by: a step line every 10 of the
	# 50 steps, with the time left to the schedule's end; any progress
	# line of the tasks has its total and ETA
	grep '^rv-train-gpu: step [0-9]*, ' "$out/logs/rv-train-$train.out" > "$out/steps"
	[ "$(wc -l < "$out/steps")" -eq 5 ]
	! grep -Ev '^rv-train-gpu: step [1-5]0, epoch [0-4], loss .*, elapsed [0-9]+ s, ETA [0-9]+ s$' "$out/steps"
	! cat "$out"/logs/rv-refurbish-* | grep '^rv-refurbish: [0-9]' |
	    grep -Ev '^rv-refurbish: [0-9]+/[0-9]+ samples \([0-9.]+%\), [0-9]+/s, elapsed [0-9]+ s, ETA [0-9]+ s$'
}

@test "slurm-offline-refurbish: as given (no -c, no --mem) it runs on a small node; logs go to OUT/logs, none to the submit directory" {
	slow
	need_slurm
	local out="$BATS_TEST_TMPDIR/out" sub="$BATS_TEST_TMPDIR/submit"
	local job train t
	knobs
	run -0 scontrol -o show node
	[[ "$output" == *" CPUTot=$SLURM_CPUS "* ]]
	# Submitted from an empty directory, which stays empty; the
	# script's own 4 tasks, each with the CPUs Slurm gives it.
	mkdir "$sub"
	cd "$sub"
	OUT="$out" run -0 sbatch --parsable "$JOB"
	job="${output%%;*}"
	slurm_wait 180 || { squeue -o '%i %T %r' >&2; false; }
	run -0 slurm_state "$job"
	[ "${#lines[@]}" -eq 4 ]
	for t in "${lines[@]}"; do
		[[ "$t" == *" COMPLETED 0:0" ]] || { slurm_logs "$SLURM_DIR"; false; }
	done
	train="$(cat "$out/train.jobid")"
	run -0 slurm_state "$train"
	[ "$output" = "$train COMPLETED 0:0" ]
	run -0 find "$sub" -mindepth 1
	[ "$output" = "" ]
	for t in 0 1 2 3; do
		grep -q "task $t of 4: epochs $((t * 5 / 4)) to $(((t + 1) * 5 / 4 - 1)) of 5 (-j 1)" \
		    "$out/logs/rv-refurbish-${job}_$t.out"
	done
	grep -qx "epochs    $EPOCHS" "$out/logs/rv-train-$train.out"
	[ "$(find "$out/logs" -type f | wc -l)" -eq 5 ]
	same_epochs "$out"
}

@test "slurm-local.sh: status tells the node's size; usage errors are exit 2" {
	slow
	need_slurm
	run -0 "$REPO/scripts/slurm-local.sh" status "$SLURM_DIR"
	[[ "$output" == *"node       "*" $SLURM_CPUS CPUs, "*" MB: idle"* ]]
	run -1 "$REPO/scripts/slurm-local.sh" start "$SLURM_DIR"
	[[ "$output" == *"a cluster runs there"* ]]
	run -1 "$REPO/scripts/slurm-local.sh" status "$BATS_TEST_TMPDIR/none"
	run -2 --separate-stderr "$REPO/scripts/slurm-local.sh" bogus
	[ "${stderr_lines[0]}" = "slurm-local.sh: unknown command 'bogus'" ]
	run -2 --separate-stderr "$REPO/scripts/slurm-local.sh" start -c x
	[ "${stderr_lines[0]}" = "slurm-local.sh: -c: 'x': not a positive integer" ]
}

@test "slurm-offline-refurbish: a failed task cancels the training job" {
	slow
	need_slurm
	local out="$BATS_TEST_TMPDIR/out" job train
	knobs
	cd "$BATS_TEST_TMPDIR"
	# rv-refurbish refuses a JPEG quality of 0 (exit 2), after the
	# training job is submitted.
	OUT="$out" FORMAT=jpeg QUALITY=0 run -0 sbatch --parsable \
	    --array=0-1 -c 1 --mem=256M "$JOB"
	job="${output%%;*}"
	slurm_wait 120
	run -0 slurm_state "$job"
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == *" FAILED 2:0" ]]
	[[ "${lines[1]}" == *" FAILED 2:0" ]]
	train="$(cat "$out/train.jobid")"
	run -0 slurm_state "$train"
	[ "$output" = "$train CANCELLED 0:0" ]
	[ ! -e "$out/summary.txt" ]
	[ ! -e "$out/logs/rv-train-$train.out" ]
}

# pipelines/slurm-ddp.sbatch: data-parallel PyTorch training, one rank
# per task of `srun --ntasks 2`, each fed by its own rv pipeline.
DDP="$REPO/pipelines/slurm-ddp.sbatch"

# ddp_knobs: the settings of the DDP runs: 2000 samples, 1000 to
# evaluate on, 2 epochs.
ddp_knobs() {
	export RV_BIN="$BIN" LIMIT=2000 EVAL_LIMIT=1000 EPOCHS=2 \
	    PYTHON=/usr/bin/python3 DDP_TIMEOUT=120
}

# ddp_json OUT EXPR: a python expression of s, the summary in OUT.
ddp_json() {
	/usr/bin/python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
	    "$1/summary.json" "$2"
}

@test "slurm-ddp: 2 tasks, each a rank with its own pipeline, train in equal steps; logs go to OUT/logs, none to the submit directory" {
	slow
	need_slurm
	/usr/bin/python3 -c 'import torch.distributed, zstandard' 2>/dev/null ||
	    skip "no torch or zstandard for /usr/bin/python3"
	local out="$BATS_TEST_TMPDIR/ddp" sub="$BATS_TEST_TMPDIR/submit" job r
	ddp_knobs
	mkdir "$sub"
	cd "$sub"
	# as given: --ntasks 2, a CPU each
	OUT="$out" run -0 sbatch --parsable "$DDP"
	job="${output%%;*}"
	slurm_wait 240 || { squeue -o '%i %T %r' >&2; false; }
	run -0 slurm_state "$job"
	[ "$output" = "$job COMPLETED 0:0" ] || {
		tail -n 50 "$out"/logs/* >&2
		slurm_logs "$SLURM_DIR"
		false
	}
	run -0 find "$sub" -mindepth 1
	[ "$output" = "" ]
	run -0 find "$out/logs" -type f
	[ "${#lines[@]}" -eq 3 ]
	cat "$out/logs/rv-ddp-$job.out"
	grep -q "slurm-ddp: job $job: 2 ranks on " "$out/logs/rv-ddp-$job.out"
	# the summary: rank 0's last line, the job's last line, and in OUT
	[ "$(tail -n 1 "$out/logs/rv-ddp-$job-rank0.out")" = "$(cat "$out/summary.json")" ]
	[ "$(tail -n 1 "$out/logs/rv-ddp-$job.out")" = "$(cat "$out/summary.json")" ]
	[ ! -s "$out/logs/rv-ddp-$job-rank1.out" ] ||
	    ! grep -q '^{' "$out/logs/rv-ddp-$job-rank1.out"
	[ "$(ddp_json "$out" 's["ranks"]')" = 2 ]
	[ "$(ddp_json "$out" 's["epochs"]')" = 2 ]
	# both tasks took as many steps in every epoch: 1000 samples each
	# in epoch 0, in batches of 64
	[ "$(ddp_json "$out" 's["steps_per_epoch"][0]')" = "[16, 16]" ]
	[ "$(ddp_json "$out" 'all(len(set(e)) == 1 for e in s["steps_per_epoch"])')" = True ]
	[ "$(ddp_json "$out" 's["samples_per_epoch"][0]')" = "[1000, 1000]" ]
	# well above chance (10 classes)
	[ "$(ddp_json "$out" 's["test_acc"] > 0.5')" = True ]
	for r in 0 1; do
		[ ! -e "$out/feedback-$r.fifo" ]
	done
}

@test "slurm-ddp: a task whose pipeline fails fails the job, and the other task with it" {
	slow
	need_slurm
	/usr/bin/python3 -c 'import torch.distributed, zstandard' 2>/dev/null ||
	    skip "no torch or zstandard for /usr/bin/python3"
	local out="$BATS_TEST_TMPDIR/ddp" shim="$BATS_TEST_TMPDIR/shim" job f
	ddp_knobs
	# rank 1's rv-score refuses its options
	mkdir "$shim"
	for f in "$BIN"/*; do
		ln -s "$f" "$shim/"
	done
	rm "$shim/rv-score"
	printf '#!/bin/sh\n[ "$RANK" = 1 ] && set -- --no-such-option "$@"\nexec %q "$@"\n' \
	    "$BIN/rv-score" > "$shim/rv-score"
	chmod +x "$shim/rv-score"
	cd "$BATS_TEST_TMPDIR"
	SECONDS=0
	OUT="$out" RV_BIN="$shim" LIMIT=500 EPOCHS=1 run -0 sbatch --parsable "$DDP"
	job="${output%%;*}"
	slurm_wait 120 || { squeue -o '%i %T %r' >&2; false; }
	[ "$SECONDS" -lt 100 ]
	run -0 slurm_state "$job"
	[[ "$output" == "$job FAILED "* ]]
	cat "$out"/logs/*
	grep -q "rv-score: unknown option '--no-such-option'" "$out/logs/rv-ddp-$job-rank1.out"
	grep -q "ddp-train: rank 0: epoch 0: unequal epochs across ranks: rank 0: epoch 0, rank 1: stream ended" \
	    "$out/logs/rv-ddp-$job-rank0.out"
	grep -q "slurm-ddp: a rank failed" "$out/logs/rv-ddp-$job.out"
	[ ! -e "$out/summary.json" ]
}
