#!/usr/bin/env bash
# One rank of the data-parallel PyTorch example: this rank's own rv
# pipeline, feeding this rank's trainer (pipelines/ddp-train.py), which
# writes its per-sample feedback to this rank's rv-score through this
# rank's FIFO:
#   rv-decode --shard auto | rv-refurbish | rv-score --budget | rv-batch |
#       ddp-train.py
# It is what each process of a launcher runs, not run by hand:
# pipelines/ddp-train.sh starts it under torchrun (--no_python), which
# sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
# MASTER_PORT; pipelines/slurm-ddp.sbatch under srun, one task a rank,
# where RANK, WORLD_SIZE and LOCAL_RANK come from SLURM_PROCID,
# SLURM_NTASKS and SLURM_LOCALID and the job script sets MASTER_ADDR and
# MASTER_PORT.  The test set must be decoded already (the launchers do it,
# once): $OUT/fmnist-test.rvs.
#
# Environment (the launchers pass theirs on; common.bash has the first
# ones): RV_BIN, FMNIST, OUT, EPOCHS (default 5), LIMIT, PYTHON (a python3
# with torch), SHARDS and INDEX (archive shards instead of Fashion-MNIST's
# training set, and their index: common.bash's train_index), and:
#   BATCH       samples per batch on each rank (default 64: a global batch
#               of 128 on 2 ranks)
#   PARTIAL, FINAL, REUSE
#               rv-refurbish's split and --reuse (pipelines/common.bash)
#   SEED        rv-decode's, rv-refurbish's and rv-score's --seed
#               (default 0): the same on every rank, so the shards are
#               disjoint
#   BUDGET      rv-score --budget: the share of each window kept after the
#               first epoch, the same count on every rank (default 0.5)
#   SCORE_OPTS  rv-score's policy options instead, split at blanks
#   IDS_OUT     ddp-train.py --ids-out (rank 0 writes it)
#   DDP_TIMEOUT ddp-train.py --timeout, seconds (default 300)
#   THREADS     torch threads (default: the CPUs over the ranks on the
#               node; one under Slurm unless -c says more)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=pipelines/common.bash
. "$here/pipelines/common.bash"

# Under srun, Slurm's task ids say which rank this is.
if [ -z "${RANK:-}" ] && [ -n "${SLURM_PROCID:-}" ]; then
	RANK=$SLURM_PROCID
	WORLD_SIZE=${SLURM_NTASKS:?}
	LOCAL_RANK=${SLURM_LOCALID:-0}
	THREADS=${THREADS:-${SLURM_CPUS_PER_TASK:-1}}
fi
: "${RANK:?not set: run this under torchrun or srun (pipelines/ddp-train.sh, pipelines/slurm-ddp.sbatch)}"
: "${WORLD_SIZE:?not set}"
export RANK WORLD_SIZE LOCAL_RANK="${LOCAL_RANK:-0}"

pipeline_env ddp-train
me="ddp-rank: rank $RANK"
py="${PYTHON:-/usr/bin/python3}"
batch="${BATCH:-64}"
test_set="$out/fmnist-test.rvs"
[ -s "$test_set" ] || {
	echo "$me: '$test_set': missing: decode the test set first (the launcher does)" >&2
	exit 1
}

# This rank's share of the training set: with the same seed on every
# rank, the shards are disjoint and together hold the whole set.
# --shard auto takes RANK of WORLD_SIZE from the environment and pads
# the shards to equal sizes, repeating samples, when WORLD_SIZE does not
# divide the samples (rv-decode --even).  Fashion-MNIST is one IDX pair,
# fewer files than ranks, so each rank takes every WORLD_SIZE-th sample;
# on many archive shards each rank reads only its own (rv-decode(1)).
shard=(--shard auto)
# With SHARDS, archive shards through their index (the launcher built it):
# each rank reads the index and its own shards, no other; grey, as the
# Fashion-MNIST test set the trainer evaluates on.
train=("$data/train-images-idx3-ubyte.gz" "$data/train-labels-idx1-ubyte.gz")
[ -z "${SHARDS:-}" ] ||
    train=(--channels 1 --index "${INDEX:?not set: the launcher sets it with SHARDS}")

# What rv-score keeps after the first epoch.  DDP needs as many steps on
# every rank: rv-score --budget F keeps exactly round(F w) of each window
# of w samples, the same count on every rank.  A policy that draws each
# sample's fate alone (the assistant's, uniform --keep) keeps a random
# count per rank, and ddp-train.py stops at the first step where one
# rank has run out of batches, naming the ranks' step counts
# (SCORE_OPTS='--policy uniform' shows it).
# rv-refurbish deals its misses evenly over groups of --batch; under a
# budget those groups are rv-score's windows, so they are the batch over
# F: each window then keeps one batch, misses and cache hits in
# proportion, and every batch holds the same misses +-1 (rv-score(1),
# "Strata").
budget="${BUDGET:-0.5}"
score=(--budget "$budget")
group=$(awk -v b="$batch" -v f="$budget" 'BEGIN { printf "%d", b / f + 0.5 }')
if [ -n "${SCORE_OPTS:-}" ]; then
	read -ra score <<< "$SCORE_OPTS"
	group=$batch
fi

extra=()
[ -z "${IDS_OUT:-}" ] || extra+=(--ids-out "$IDS_OUT")
[ -z "${THREADS:-}" ] || extra+=(--threads "$THREADS")

fifo="$out/feedback-$RANK.fifo"
rm -f "$fifo"
mkfifo "$fifo"
pid=
# The launcher stops a rank with SIGTERM (torchrun, when another rank
# failed) or SIGINT, SIGHUP: they go to the whole pipeline, which runs in
# a process group of its own, so that no stage outlives the rank.
# shellcheck disable=SC2317	# called by the trap
stop() {
	[ -z "$pid" ] || kill -TERM -- "-$pid" 2>/dev/null || true
}
trap 'stop; rm -f "$fifo"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

rank_pipeline() {
	rv-decode -q "${shard[@]}" --shuffle --seed "$seed" "${limit[@]}" \
	    "${train[@]}" |
	    rv-refurbish -j 1 --partial "$partial" --final "$final" \
		--reuse "$reuse" --epochs "$epochs" --batch "$group" \
		--seed "$seed" |
	    rv-score -q --feedback "$fifo" --seed "$seed" "${score[@]}" |
	    rv-batch -q -b "$batch" |
	    "$py" "$here/pipelines/ddp-train.py" --feedback "$fifo" \
		--eval "$test_set" --epochs "$epochs" --seed "$seed" \
		--timeout "${DDP_TIMEOUT:-300}" --summary "$out/summary.json" \
		--log "$out/ddp-train.log" "${extra[@]}"
}

set -m	# the pipeline's own process group, led by $pid
rank_pipeline < /dev/null &
pid=$!
set +m
status=0
wait "$pid" || status=$?
pid=
exit "$status"
