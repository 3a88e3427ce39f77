#!/usr/bin/env bash
# Data-parallel PyTorch training (DistributedDataParallel) fed by rv, on
# this machine: torchrun starts NPROC ranks (default 2), and each rank is
# pipelines/ddp-rank.sh, its own whole pipeline
#   rv-decode --shard auto | rv-refurbish | rv-score --budget | rv-batch |
#       pipelines/ddp-train.py
# reading only its share of the training set, refurbishing and shrinking
# it with its own cache and assistant, and writing feedback to its own
# rv-score through its own FIFO.  A rank keeps its shard for the whole
# run, which its rv-refurbish serves in a new order every epoch: unlike
# PyTorch's DistributedSampler, samples never move between ranks, so that
# each rank's cache holds the partials it serves again.  DDP averages the
# gradients (gloo on the CPU, nccl when every rank has a GPU); the
# trainers check that every rank takes the same number of steps in every
# epoch, and stop all together, naming the counts, when one does not.  cnn-small on Fashion-MNIST,
# Debian's dataset-fashion-mnist.  pipelines/slurm-ddp.sbatch runs the
# same ranks under srun.
# Run it after `make`, with a python3 that has torch (Debian:
# python3-torch) and python3-zstandard:
#   [OUT=dir] [EPOCHS=5] [LIMIT=N] [EVAL_LIMIT=N] [NPROC=2] [BATCH=64] \
#       [PYTHON=python3] pipelines/ddp-train.sh
# OUT (default out/ddp-train) receives the test set, summary.json (also
# printed: epochs, steps and samples per epoch of each rank, test
# accuracy, wall time) and ddp-train.log (one JSON line per epoch);
# LIMIT uses only the first N training images, EVAL_LIMIT the first N
# test images (a quick run).  BATCH is each rank's batch (the global one
# is NPROC times it), IDS_OUT a file for the ids each rank trained on,
# RDZV_PORT a port for torchrun's rendezvous instead of --standalone's
# fixed 29400 (to run two jobs at once); SHARDS archive shards to train on
# instead of Fashion-MNIST's training set, read through their index INDEX
# (default OUT/train.idx, built first when missing: each rank reads the
# index and its own shards); ddp-rank.sh lists the rest.
# A rank that fails (a stage, the trainer) fails the whole run: torchrun
# stops the other ranks (their pipelines with them) and exits 1.
#
# Does refurbishing depend on the number of ranks?  rv-refurbish's output
# for a given sample id depends on which other samples are in its input,
# so on the rank count, from epoch 1 on: epoch 0 computes every partial
# with the random numbers of (seed, epoch 0, id), the same bytes whatever
# the shard, but the chunks of the balanced eviction are a permutation of
# the input's N positions drawn from the seed, so which epochs refresh a
# sample's partial (its refresh epoch, whose random numbers the partial
# uses, and its `uses' count) depends on N and on the sample's position
# in the rank's shard.  The same sample under 1 rank and under 2 gets
# other partials after epoch 0 (the finals are keyed by epoch and id, but
# run on another partial), and each epoch's order is the rank's own.
# Each run is still reproducible for the same rank count and seed.
# tests/bats/ddp.bats shows it.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=pipelines/common.bash
. "$here/pipelines/common.bash"
pipeline_env ddp-train
torch_python ddp-train.sh torch.distributed
nproc="${NPROC:-2}"

decode_fmnist test -q
train_index ddp-train.sh

# torchrun is torch's torch.distributed.run: run from the same python, it
# is the launcher of the torch the ranks import.  With --no_python each
# rank runs ddp-rank.sh (a shell pipeline), not python.  Debian 12's torch
# 1.13 on Python 3.11 cannot start a worker (/usr/bin/torchrun included):
# Python 3.11 no longer lists Std.NONE when it iterates the Std flags, so
# Std.from_str("0"), the default of --redirects and --tee, is None, and
# starting the workers fails on "'NoneType' object has no attribute
# 'get'".  The launcher below is torchrun with from_str mended where it
# is broken.
torchrun='import sys
from torch.distributed.elastic.multiprocessing import api
if api.Std.from_str("0") is None:
    def from_str(vm):
        if ":" in vm:
            return {int(i): api.Std(int(v))
                    for i, v in (m.split(":") for m in vm.split(","))}
        return api.Std(int(vm))
    api.Std.from_str = staticmethod(from_str)
from torch.distributed.run import main
sys.argv[0] = "torchrun"
main()'
rdzv=(--standalone)
[ -z "${RDZV_PORT:-}" ] || rdzv=(--nnodes 1 --rdzv_backend c10d
    --rdzv_endpoint "127.0.0.1:$RDZV_PORT" --rdzv_id "rv-ddp-$$")
export OUT="$out" RV_BIN="$bin" PYTHON="$py" EPOCHS="$epochs"
echo "== training cnn-small with DDP on $nproc ranks, each fed by its own rv pipeline, for $epochs epochs" >&2
# In the background, so that a signal to this script reaches torchrun
# as SIGTERM, on which it stops the ranks (and they their pipelines).
"$py" -c "$torchrun" "${rdzv[@]}" --nproc_per_node "$nproc" \
    --monitor_interval 1 --no_python \
    bash "$here/pipelines/ddp-rank.sh" &
pid=$!
for sig in TERM INT HUP; do
	# shellcheck disable=SC2064	# $sig now
	trap "kill -TERM $pid 2>/dev/null; wait $pid || :; trap - $sig; kill -$sig \$\$" "$sig"
done
wait "$pid"
echo "== summary: $out/summary.json; per-epoch log: $out/ddp-train.log" >&2
