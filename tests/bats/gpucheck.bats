#!/usr/bin/env bats
# The scripts that need a GPU (scripts/gpu-check.sh runs them) must work
# the first time one is there: each has a DEVICE=cpu mode that runs the
# same logic on the CPU backend, checked here.  tests/gpu/run.sh's checks
# pass (learning, feedback through the FIFO, the two backends agreeing);
# bench/gpu.sh measures, tabulates and writes its JSON lines; the PyTorch
# comparison runs (on the CPU) when torch and torchvision are installed.

load helpers

setup() {
	[ "${RV_BUILD:-build}" = build ] ||
	    skip "once, with the plain build"
}

# gpu-check.sh runs from a gpu-bundle.sh bundle (as on a GPU machine
# without rv's -dev packages), every library but glibc's and CUDA's taken
# from the bundle, on the CPU backend: the unit tests and
# tests/gpu/run.sh's checks pass.
@test "gpucheck: scripts/gpu-check.sh passes from a gpu-bundle.sh bundle on the CPU backend (DEVICE=cpu)" {
	slow plain
	local b="$BATS_TEST_TMPDIR/bundle" build="${RV_BUILD:-build}"
	[ -f "$REPO/$build/lib/rv/librv-cuda.so" ] ||
	    skip "no CUDA plugin built (no nvcc)"
	run -0 env XZ_OPT=-0 RV_BUILD="$build" bash "$REPO/scripts/gpu-bundle.sh" "$b"
	[ -x "$b/run" ] && [ -x "$b/build/bin/rv-train-gpu" ] &&
	    [ -x "$b/build/unit/t_nn_cuda" ] &&
	    [ -f "$b/build/lib/rv/librv-cuda.so" ]
	# the training set cut to its first 12000 images (a 16-byte header)
	[ "$(gzip -dc "$b/fashion-mnist/train-images-idx3-ubyte.gz" | wc -c)" = $((16 + 12000 * 784)) ]
	run -0 env RV_ROOT="$REPO" RV_LIBS=all DEVICE=cpu SKIP_BENCH=1 \
	    GPU_CHECK_LOG="$BATS_TEST_TMPDIR/log" bash "$b/run"
	[[ "$output" == *"from the bundle: "*" libzstd.so.1"* ]]
	[[ "$output" == *"build: $b/build as it is (NO_BUILD=1)"* ]]
	[[ "$output" == *"ok 9 - test_no_device"* ]]
	[[ "$output" == *"ok 1 - fp32: cnn-small learns Fashion-MNIST on cpu"* ]]
	[[ "$output" == *"ok 2 - fp32: feedback flows"* ]]
	[[ "$output" == *"ok 3 - fp32: the CPU and cpu backends' training losses agree"* ]]
	[[ "$output" == *"1..3"* ]]
	[[ "$output" == *"== PASS"* ]]
	[[ "$output" != *"not ok"* ]]
}

@test "gpucheck: bench/gpu.sh measures and reports on the CPU backend (DEVICE=cpu)" {
	slow plain
	local o="$BATS_TEST_TMPDIR/gpu"
	run -0 env DEVICE=cpu MODELS=cnn-small SIZE=28 BATCH=64 STEPS=30 \
	    WARM=10 OUT="$o" RV_BUILD="${RV_BUILD:-build}" \
	    bash "$REPO/bench/gpu.sh"
	[ "$(grep -c '^cnn-small fp32  \(file\|pipe\) ' "$o/table.txt")" = 2 ]
	grep -q 'pipe costs [0-9.-]*% of the file rate' "$o/table.txt"
	[ "$(wc -l < "$o/results.jsonl")" = 2 ]
	# a rate was measured, and the MACs found: TFLOP/s is a number
	awk -F'"images_per_s":' 'NF < 2 { exit 1 } { split($2, a, ","); if (a[1] + 0 <= 0) exit 1 }' \
	    "$o/results.jsonl"
	grep -q '"tflops":[0-9.]*,' "$o/results.jsonl"
	# --autotune is the CUDA backend's: no tuned row on the CPU
	[ "$(grep -c '"autotune":false' "$o/results.jsonl")" = 2 ]
}

@test "gpucheck: bench/gpu_torch.py runs (on the CPU)" {
	slow plain
	/usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null ||
	    skip "no torch or torchvision"
	run -0 /usr/bin/python3 "$REPO/bench/gpu_torch.py" --device cpu \
	    --model resnet18 --precision bf16 --batch 2 --steps 2 --warm 1
	[[ "$output" =~ \"images_per_s\":\ [0-9.]+ ]]
}
