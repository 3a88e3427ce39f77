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

@test "gpucheck: tests/gpu/run.sh passes on the CPU backend (DEVICE=cpu)" {
	slow plain
	run -0 env DEVICE=cpu RV_BUILD="${RV_BUILD:-build}" \
	    bash "$REPO/tests/gpu/run.sh"
	[[ "$output" == *"ok 1 - fp32: cnn-small learns Fashion-MNIST on cpu"* ]]
	[[ "$output" == *"ok 2 - fp32: feedback flows"* ]]
	[[ "$output" == *"ok 3 - fp32: the CPU and cpu backends' training losses agree"* ]]
	[[ "$output" == *"1..3"* ]]
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
}

@test "gpucheck: bench/gpu_torch.py runs (on the CPU)" {
	slow plain
	/usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null ||
	    skip "no torch or torchvision"
	run -0 /usr/bin/python3 "$REPO/bench/gpu_torch.py" --device cpu \
	    --model resnet18 --precision bf16 --batch 2 --steps 2 --warm 1
	[[ "$output" =~ \"images_per_s\":\ [0-9.]+ ]]
}
