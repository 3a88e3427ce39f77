#!/usr/bin/env bash
# Everything the CUDA backend needs a GPU for, in one run (issue 8):
# build with CUDA (the plugin build/lib/rv/librv-cuda.so: its libraries
# resolve), the unit tests (build/unit/t_nn_cuda: the CPU and CUDA
# backends agree on whole models in fp32, tf32 and bf16; asynchronous
# steps; learning), the end-to-end checks (tests/gpu/run.sh: training
# learns, feedback flows to rv-score, clean errors) and the benchmark
# (bench/gpu.sh: images/s, TFLOP/s, PyTorch), then a compact report.
# Exit 1 if a check failed.  Environment: JOBS (make -j, default nproc),
# SKIP_BENCH=1 for the checks only; bench/gpu.sh's MODELS, PRECS, STEPS.
# DEVICE=cpu runs the whole script on the CPU backend (small benchmark
# sizes), to check the script itself on a machine without a GPU.
# RV_BUILD the build tree (default build); NO_BUILD=1 runs it as it is,
# without make: a tree built elsewhere and copied, as
# scripts/gpu-bundle.sh makes for a GPU machine without rv's -dev
# packages.  FMNIST the Fashion-MNIST folder (default Debian's).
# STAGE_TIMEOUT seconds for each of the unit tests, the end-to-end checks
# and the benchmark (default none): a stage that hangs is stopped and
# fails, and the next one still runs.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
export LC_ALL=C
log=${GPU_CHECK_LOG:-bench/out/gpu-check.log}
mkdir -p "$(dirname "$log")"
: > "$log"
say() { printf '%s\n' "$*" | tee -a "$log"; }

say "== gpu-check $(date -u +%FT%TZ), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 |
    sed 's/^/gpu: /' | tee -a "$log"
say "nvcc: $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -1)"
build=${RV_BUILD:-build}
export RV_BUILD=$build
if [ "${NO_BUILD:-0}" = 1 ]; then
	say "build: $build as it is (NO_BUILD=1)"
elif ! make -j"${JOBS:-$(nproc)}" CUDA=1 BUILD="$build" all units >> "$log" 2>&1; then
	say "build: FAILED (see $log)"
	exit 1
else
	say "build: ok"
fi
status=0
# The backend is a plugin that rv-train-gpu opens (and t_nn_cuda links):
# the CUDA libraries are its, not the programs'.
plugin=$build/lib/rv/librv-cuda.so
missing=$(ldd "$plugin" 2>&1 | grep -E 'not found|No such' | tr -s ' \t\n' ' ')
if [ -n "$missing" ]; then
	say "plugin: $plugin: FAILED: ${missing}"
	status=1
else
	say "plugin: $plugin: $(ldd "$plugin" | awk '/libcu(dnn|blas|dart)\./ { printf "%s ", $1 }')"
fi
export DEVICE=${DEVICE:-cuda}
if [ "$DEVICE" = cpu ]; then
	export MODELS=${MODELS:-cnn-small} SIZE=${SIZE:-28} BATCH=${BATCH:-64}
fi
say "== unit: $build/unit/t_nn_cuda"
timeout "${STAGE_TIMEOUT:-0}" "$build/unit/t_nn_cuda" 2>&1 | tee -a "$log" | grep -E '^(not ok|ok|#)'
[ "${PIPESTATUS[0]}" = 0 ] || status=1
say "== end to end: tests/gpu/run.sh"
timeout "${STAGE_TIMEOUT:-0}" bash tests/gpu/run.sh 2>&1 | tee -a "$log" || status=1
if [ "${SKIP_BENCH:-0}" != 1 ]; then
	say "== benchmark: bench/gpu.sh"
	timeout "${STAGE_TIMEOUT:-0}" bash bench/gpu.sh 2>&1 | tee -a "$log" || status=1
fi
say "== $( [ "$status" = 0 ] && echo PASS || echo FAIL ); full log: $log"
exit "$status"
