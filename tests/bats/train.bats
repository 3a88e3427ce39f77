#!/usr/bin/env bats
# rv-train-gpu on small Fashion-MNIST streams, on the CPU: usage, the
# device choice, learning (the summary and every --log event), feedback
# lines to a file and to FIFOs that never block training, resuming that
# equals the uninterrupted run (after --max-steps, kill -9 and SIGINT),
# determinism, samples vs batches, and every input error with its
# message.  Checkpoints are compared byte for byte except the wall-clock
# and wait fields and the checksum (layout: lib/train/ckpt.h), streams and
# feedback are
# checked by the python below, which shares no code with lib/.
# tests/unit/t_train.c checks the checkpoint layout these offsets assume.
# shellcheck shell=bash disable=SC2154,SC2030,SC2031

load helpers

# A small net (7894 parameters) that still learns: batch norm makes the
# checkpoints carry buffers, dropout makes resuming replay its RNG.
M='conv 4 k=3 pad=1; bn; relu; maxpool 2; dropout 0.25; linear'

TRAIN=(rv-train-gpu -q -j 1 -b 32 -m "$M")

# In the foreground; in the background use "${TRAIN[@]}" (so that $! is
# the trainer's pid, not a subshell's).
train() {
	"${TRAIN[@]}" "$@"
}

# ck_same, ck_stable: checkpoints equal but for their timing fields.
load ckpt

# ck_u64 FILE OFF / ck_u32 FILE OFF: a header field (step at 44,
# batches 52, samples 60, epochs_done u32 at 80).
ck_u64() {
	od -An -t u8 -j "$2" -N 8 "$1" | tr -d ' '
}
ck_u32() {
	od -An -t u4 -j "$2" -N 4 "$1" | tr -d ' '
}

# summary_value KEY: the first word after KEY in the summary ($output);
# sline KEY: its whole line.
summary_value() {
	printf '%s\n' "$output" | awk -v k="$1" '$1 == k { print $2; exit }'
}
sline() {
	printf '%s\n' "$output" | awk -v k="$1" '$1 == k { print; exit }'
}

# alive PID: the process runs (a zombie does not count).
alive() {
	local st
	[ -r "/proc/$1/stat" ] || return 1
	st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# wait_file FILE SECONDS: wait until FILE exists.
wait_file() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	echo "no $1 after $2 s"
	return 1
}

# wait_exit PID SECONDS: PID's exit status; killed (status 124) if it
# runs longer.
wait_exit() {
	local i st=0
	for ((i = 0; i < $2 * 20; i++)); do
		alive "$1" || break
		sleep 0.05
	done
	if alive "$1"; then
		kill -9 "$1"
		wait "$1" || :
		echo "pid $1 still running after $2 s"
		return 124
	fi
	wait "$1" || st=$?
	return "$st"
}

# stream.py MODE FILE: "id epoch" for every sample, in order, and "end E"
# for every epoch-end marker (records as zstd -dc yields them, header
# layout at the top of lib/stream/record.c).
STREAM_PY='
import struct, subprocess, sys
mode, path = sys.argv[1:3]
d = subprocess.run(["zstd", "-qdc", path], check=True,
                   stdout=subprocess.PIPE).stdout
off = 0
while off < len(d):
    (magic, ver, hl, kind, dt, flags, ep, rid, label, h, w, c, n, uses,
     wt, sc, pl) = struct.unpack_from("<IHHBBHIQiIIIIIffQ", d, off)
    assert magic == 0x31525652
    p = d[off + hl:off + hl + pl]
    off += hl + pl
    if kind == 1:
        print(rid, ep)
    elif kind == 2:
        for i in range(n):
            print(struct.unpack_from("<Q", p, 8 * i)[0], ep)
    elif kind == 3:
        print("end", ep)
'

# fbcheck.py STREAM FEEDBACK B: the feedback of a run over STREAM's
# samples batched by B (each epoch ending in a short batch): one line per
# sample in the input order, "id epoch step loss gradnorm", steps from 1,
# loss and gradnorm finite and >= 0.  Prints "N lines ok" or FAIL lines.
FBCHECK_PY='
import math, re, subprocess, sys
stream, fb, b = sys.argv[1], sys.argv[2], int(sys.argv[3])
want, step, inb = [], 0, 0
for line in subprocess.run(sys.argv[4:] + ["ids", stream], check=True,
                           stdout=subprocess.PIPE, text=True).stdout.split("\n"):
    if not line:
        continue
    a, e = line.split()
    if a == "end":
        inb = 0
        continue
    if inb == 0:
        step += 1
    inb = (inb + 1) % b
    want.append((int(a), int(e), step))
got = open(fb, "rb").read().decode()
fails = []
if not got.endswith("\n"):
    fails.append("the file does not end in a newline")
lines = got.split("\n")[:-1]
if len(lines) != len(want):
    fails.append("%d lines, %d samples" % (len(lines), len(want)))
num = re.compile(r"^[0-9]+$")
for i, (l, w) in enumerate(zip(lines, want)):
    f = l.split("\t")
    if len(f) != 5 or not all(num.match(x) for x in f[:3]):
        fails.append("line %d: %r" % (i + 1, l))
        continue
    loss, gn = float(f[3]), float(f[4])
    if (int(f[0]), int(f[1]), int(f[2])) != w:
        fails.append("line %d: %r, want id %d epoch %d step %d" %
                     ((i + 1, l) + w))
    if not (math.isfinite(loss) and loss >= 0 and math.isfinite(gn)
            and gn >= 0):
        fails.append("line %d: loss or gradnorm: %r" % (i + 1, l))
for m in fails[:20]:
    print("FAIL: " + m)
if not fails:
    print("%d lines ok" % len(lines))
sys.exit(1 if fails else 0)
'

# logcheck.py LOG: every event has exactly the documented keys, in order.
LOGCHECK_PY='
import json, math, sys
keys = {
    "step": "event step epoch loss acc lr samples_per_s wait_frac samples "
            "grads wall",
    "eval": "event step epoch eval_loss eval_acc samples grads wall eval_s",
    "epoch": "event step epoch loss acc lr samples_per_s wait_frac samples "
             "grads wall epoch_s",
    "summary": "event reached target_acc wall eval_s epochs steps samples "
               "grads "
               "eval_acc eval_loss wait_frac feedback_written "
               "feedback_dropped",
}
for i, line in enumerate(open(sys.argv[1])):
    o = json.loads(line)
    if list(o) != keys[o["event"]].split():
        print("FAIL: line %d: keys %s" % (i + 1, " ".join(o)))
        sys.exit(1)
    for k, v in o.items():
        if isinstance(v, float) and not math.isfinite(v):
            print("FAIL: line %d: %s %r" % (i + 1, k, v))
            sys.exit(1)
    # the seconds evaluating are a part of the wall time
    if "eval_s" in o and not 0 <= o["eval_s"] <= o["wall"]:
        print("FAIL: line %d: eval_s %r, wall %r" % (i + 1, o["eval_s"],
              o["wall"]))
        sys.exit(1)
    # one line a record: event step epoch, then what the test asks for
    print(o["event"], o.get("step", "-"), o.get("epoch", "-"),
          *[o[k] for k in sys.argv[2:] if k in o])
'

setup_file() {
	need_fmnist
	local t="$BATS_FILE_TMPDIR" img lab
	img="$FMNIST/train-images-idx3-ubyte.gz"
	lab="$FMNIST/train-labels-idx1-ubyte.gz"
	# 2 epochs of 600: 19 batches of 32 an epoch, the last one of 24
	rv-decode -q --limit 600 --epochs 2 --shuffle "$img" "$lab" \
	    > "$t/r.rvs"
	rv-decode -q --limit 600 --epochs 2 --shuffle --seed 5 "$img" \
	    "$lab" > "$t/r5.rvs"
	rv-batch -q -b 32 "$t/r.rvs" > "$t/rb.rvs"
	rv-decode -q --limit 100 "$img" "$lab" > "$t/short.rvs"
	# learning: 2 epochs of 2000, evaluated on 1000 test samples
	rv-decode -q --limit 2000 --epochs 2 --shuffle "$img" "$lab" \
	    > "$t/tr.rvs"
	rv-decode -q --limit 1000 "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz" > "$t/ev.rvs"
	# 50 epochs of 200 (350 steps): long enough to interrupt
	rv-decode -q --limit 200 --epochs 50 --shuffle "$img" "$lab" \
	    > "$t/long.rvs"
	# the reference run every resume is compared with
	rv-train-gpu -q -j 1 -b 32 -m "$M" --save "$t/a.ck" "$t/r.rvs" \
	    > /dev/null
}

setup() {
	T="$BATS_FILE_TMPDIR"
	W="$BATS_TEST_TMPDIR"
	PIDS=
}

# A test that failed half-way leaves no trainer or reader behind.
teardown() {
	local p
	exec 4>&-
	for p in $PIDS; do
		kill -9 "$p" 2>/dev/null || :
	done
}

# Why --device auto trains on the CPU (an extended regular expression).
NO_CUDA='(this rv was built without CUDA \(CUDA=0 or no nvcc\)|no CUDA device found|cannot load the CUDA backend: .+)'

# The CUDA backend present and a device found: the CPU-only tests skip.
skip_if_cuda() {
	local err
	err=$(rv-train-gpu -j 1 --device cuda < /dev/null 2>&1) || :
	[ "$err" != "rv-train-gpu: the input holds no batch to train on" ] ||
	    skip "a CUDA device is present"
}

@test "rv-train-gpu: --help, --version, --list-models" {
	slow
	local m
	run -0 --separate-stderr rv-train-gpu --help
	[ -z "$stderr" ]
	[[ "${lines[0]}" == "usage: rv-train-gpu "* ]]
	[[ "$output" == *"--feedback PATH"* ]]
	run -0 --separate-stderr rv-train-gpu -V
	[ "$output" = "rv-train-gpu 0.1.0" ]
	run -0 --separate-stderr rv-train-gpu --list-models
	[ -z "$stderr" ]
	for m in mlp cnn-small resnet20 resnet18 resnet50; do
		printf '%s\n' "$output" | grep -q "^$m " ||
		    { echo "no preset $m"; return 1; }
	done
	[ "$(printf '%s\n' "$output" | grep -Ec '^[a-z][a-z0-9-]* +# ')" = 5 ]
	# each preset's spec is a model the trainer takes
	[[ "$output" == *"conv 32 k=3 pad=1; bn; relu; maxpool 2;"* ]]
}

@test "rv-train-gpu: usage errors exit 2, the reason first, then where the usage is" {
	slow
	local args want
	# shellcheck disable=SC2086
	while IFS='|' read -r args want; do
		run -2 --separate-stderr rv-train-gpu $args "$T/r.rvs"
		[ -z "$output" ]
		[ "${stderr_lines[0]}" = "rv-train-gpu: $want" ] ||
		    { echo "$args: got '${stderr_lines[0]}'"; return 1; }
		[ "${stderr_lines[1]}" = "Try 'rv-train-gpu --help' for more information." ]
	done <<'EOF'
--lr x|--lr: 'x': not a number
--lr -1|--lr: '-1': out of range [0, 100]
--lr 101|--lr: '101': out of range [0, 100]
--schedule foo|--schedule: 'foo': want const, step, cosine or linear
--schedule cosine|--schedule cosine needs --epochs E or --steps N (the length it decays to 0 over)
--schedule linear|--schedule linear needs --epochs E or --steps N (the length it decays to 0 over)
--schedule linear --steps 10 --epochs 2|--steps and --epochs: give the schedule's length once, in steps or in epochs
--steps 0|--steps: '0': out of range [1, 18446744073709551615]
--steps 100 --epochs 2|--steps and --epochs: give the schedule's length once, in steps or in epochs
--device tpu|--device: 'tpu': want auto, cpu or cuda
--device cuda:x|--device cuda:N: 'x': not a non-negative integer
--device cuda:1024|--device cuda:N: '1024': out of range [0, 1023]
--precision fp16|--precision: 'fp16': want fp32, tf32 or bf16
--device cpu --precision bf16|--precision bf16: the CPU backend trains in fp32 only
--device cpu --precision tf32|--precision tf32: the CPU backend trains in fp32 only
--device cpu --autotune|--autotune: the CPU backend has no algorithms to time
--target-acc 0.5|--target-acc needs --eval FILE
--target-acc 2 --eval x|--target-acc: '2': out of range [0, 1]
--save-every 5|--save-every needs --save FILE
-b 0|-b: '0': out of range [1, 65536]
--max-steps 0|--max-steps: '0': out of range [1, 18446744073709551615]
--mean 1,2,3,4,5|--mean: '1,2,3,4,5': want 1 to 4 numbers in [0, 1], separated by commas
--mean x|--mean: 'x': want 1 to 4 numbers in [0, 1], separated by commas
--mean 0.5,|--mean: '0.5,': want 1 to 4 numbers in [0, 1], separated by commas
--mean 0.5,,0.5|--mean: '0.5,,0.5': want 1 to 4 numbers in [0, 1], separated by commas
--mean 1.5|--mean: '1.5': want 1 to 4 numbers in [0, 1], separated by commas
--std 0|--std: '0': want 1 to 4 numbers in (0, 1000], separated by commas
--std 0.2,-0.2,0.2|--std: '0.2,-0.2,0.2': want 1 to 4 numbers in (0, 1000], separated by commas
--std 0.1;0.2|--std: '0.1;0.2': want 1 to 4 numbers in (0, 1000], separated by commas
-m bogus|--model: model spec: near 'bogus': not a preset (mlp, cnn-small, resnet20, resnet18, resnet50; rv-train-gpu --list-models) nor a layer spec
-m resnet-20|--model: model spec: near 'resnet-20': not a preset (did you mean 'resnet20'? the presets are mlp, cnn-small, resnet20, resnet18, resnet50; rv-train-gpu --list-models) nor a layer spec
-m bogus;linear|--model: model spec: near 'bogus': unknown layer (conv, bn, relu, maxpool, avgpool, gap, linear, dropout, res, add; or a preset's name alone)
-m linear;relu|--model: model spec: near 'relu': layer 1: the last layer must be linear
--eval-every 5|--eval-every needs --eval FILE
--no-epoch-eval --eval x|--no-epoch-eval needs --eval-every N
--bogus|unknown option '--bogus'
-x|unknown option '-x'
EOF
	# an empty value
	run -2 --separate-stderr rv-train-gpu --mean '' "$T/r.rvs"
	[ "${stderr_lines[0]}" = "rv-train-gpu: --mean: '': want 1 to 4 numbers in [0, 1], separated by commas" ]
	run -2 --separate-stderr rv-train-gpu --std= "$T/r.rvs"
	[ "${stderr_lines[0]}" = "rv-train-gpu: --std: '': want 1 to 4 numbers in (0, 1000], separated by commas" ]
	# and nothing was trained: no checkpoint written
	run -2 --separate-stderr rv-train-gpu --save "$W/u.ck" --bogus "$T/r.rvs"
	[ ! -e "$W/u.ck" ]
}

@test "rv-train-gpu: --device cuda without CUDA exits 1, one line" {
	slow
	skip_if_cuda
	run -1 --separate-stderr rv-train-gpu --device cuda --save "$W/c.ck" \
	    "$T/r.rvs"
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" =~ ^"rv-train-gpu: --device cuda: "(.*CUDA.*)$ ]]
	[ "$stderr" = "rv-train-gpu: --device cuda: this rv was built without CUDA (CUDA=0 or no nvcc)" ] ||
	    [ "$stderr" = "rv-train-gpu: --device cuda: no CUDA device found" ] ||
	    [[ "$stderr" == "rv-train-gpu: --device cuda: cannot load the CUDA backend: "?* ]]
	[ ! -e "$W/c.ck" ]
	# -q does not hide an error
	run -1 --separate-stderr rv-train-gpu -q --device cuda "$T/r.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	# nor does a device number or a precision change it
	run -1 --separate-stderr rv-train-gpu --device cuda:3 \
	    --precision bf16 "$T/r.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "rv-train-gpu: --device cuda: "* ]]
}

@test "rv-train-gpu: --precision bf16 falling back to the CPU trains in fp32 and says so" {
	slow
	skip_if_cuda
	run -0 --separate-stderr rv-train-gpu -j 1 -b 32 -m "$M" \
	    --precision bf16 --max-steps 2 "$T/r.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" =~ ^"rv-train-gpu: "$NO_CUDA": training on the CPU in fp32"$ ]]
	[ "$(sline device)" = "device    cpu (1 thread)" ]
	[ "$(summary_value steps)" = 2 ]
	# fp32 is the CPU's own: no notice on --device cpu
	run -0 --separate-stderr rv-train-gpu -j 1 -b 32 -m "$M" \
	    --device cpu --precision fp32 --max-steps 1 "$T/r.rvs"
	[ -z "$stderr" ]
	[ "$(summary_value steps)" = 1 ]
	# --autotune is the CUDA backend's: the CPU fallback ignores it
	run -0 --separate-stderr rv-train-gpu -j 1 -b 32 -m "$M" \
	    --autotune --max-steps 1 "$T/r.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ "$(sline device)" = "device    cpu (1 thread)" ]
}

@test "rv-train-gpu: --device auto says once that it trains on the CPU; -q silences it" {
	slow
	skip_if_cuda
	run -0 --separate-stderr rv-train-gpu -j 1 -b 32 -m "$M" \
	    --max-steps 2 "$T/r.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" =~ ^"rv-train-gpu: "$NO_CUDA": training on the CPU"$ ]]
	[ "$(sline device)" = "device    cpu (1 thread)" ]
	[ "$(summary_value steps)" = 2 ]
	# the default is auto
	run -0 --separate-stderr rv-train-gpu --device auto -j 2 -b 32 \
	    -m "$M" --max-steps 1 "$T/r.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ "$(sline device)" = "device    cpu (2 threads)" ]
	run -0 --separate-stderr rv-train-gpu -q -j 1 -b 32 -m "$M" \
	    --max-steps 2 "$T/r.rvs"
	[ -z "$stderr" ]
	[ "$(sline device)" = "device    cpu (1 thread)" ]
	# --device cpu asks for nothing else: no notice
	run -0 --separate-stderr rv-train-gpu --device cpu -j 1 -b 32 \
	    -m "$M" --max-steps 2 "$T/r.rvs"
	[ -z "$stderr" ]
}

@test "rv-train-gpu: the CUDA plugin is opened only where a driver is; one that cannot load fails --device cuda in one line, auto says why" {
	local d drv="$BATS_TEST_TMPDIR/driver" plugin="$BIN/../lib/rv/librv-cuda.so"
	[ -f "$plugin" ] || skip "the CUDA backend is not built"
	# a copy of the trainer whose plugin is no library: a tripwire
	mkdir -p "$BATS_TEST_TMPDIR/tree/bin" "$BATS_TEST_TMPDIR/tree/lib/rv" "$drv"
	d=$(cd "$BATS_TEST_TMPDIR/tree" && pwd -P)
	cp "$BIN/rv-train-gpu" "$d/bin/"
	echo 'not a library' > "$d/lib/rv/librv-cuda.so"
	run -0 --separate-stderr "$d/bin/rv-train-gpu" -j 1 -b 32 -m "$M" \
	    --device cpu --max-steps 1 "$T/r.rvs"
	[ -z "$stderr" ]
	[ "$(summary_value steps)" = 1 ]
	# without a driver auto does not touch it (with one it says why)
	run -0 --separate-stderr "$d/bin/rv-train-gpu" -j 1 -b 32 -m "$M" \
	    --max-steps 1 "$T/r.rvs"
	if [ -z "${LD_LIBRARY_PATH:-}" ] &&
	    ! /sbin/ldconfig -p | grep -q 'libcuda\.so\.1 '; then
		[ "$stderr" = "rv-train-gpu: no CUDA device found: training on the CPU" ]
	else
		[[ "$stderr" =~ ^"rv-train-gpu: "$NO_CUDA": training on the CPU"$ ]]
	fi
	[ "$(summary_value steps)" = 1 ]
	# a stand-in driver (libcuda.so.1): the plugin is opened, and
	# dlopen's reason is given
	cc -shared -o "$drv/libcuda.so.1" -x c /dev/null
	run -1 --separate-stderr env LD_LIBRARY_PATH="$drv" \
	    "$d/bin/rv-train-gpu" -q --device cuda "$T/r.rvs"
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "rv-train-gpu: --device cuda: cannot load the CUDA backend: $d/lib/rv/librv-cuda.so: "*"too short"* ]]
	run -0 --separate-stderr env LD_LIBRARY_PATH="$drv" \
	    "$d/bin/rv-train-gpu" -j 1 -b 32 -m "$M" --max-steps 1 "$T/r.rvs"
	[[ "$stderr" == "rv-train-gpu: cannot load the CUDA backend: $d/lib/rv/librv-cuda.so: "*": training on the CPU" ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ "$(sline device)" = "device    cpu (1 thread)" ]
	# a plugin that needs a library not installed, as without cuDNN
	cc -shared -o "$drv/libgone.so" -x c /dev/null
	cc -shared -o "$d/lib/rv/librv-cuda.so" -x c /dev/null \
	    -Wl,--no-as-needed -L"$drv" -lgone
	rm "$drv/libgone.so"
	run -1 --separate-stderr env LD_LIBRARY_PATH="$drv" \
	    "$d/bin/rv-train-gpu" --device cuda:1 --precision bf16 "$T/r.rvs"
	[ "$stderr" = "rv-train-gpu: --device cuda: cannot load the CUDA backend: libgone.so: cannot open shared object file: No such file or directory" ]
	# the real plugin loads (every rv_* function it calls is the
	# trainer's) and finds no device behind the stand-in
	run -1 --separate-stderr env LD_LIBRARY_PATH="$drv" \
	    rv-train-gpu --device cuda "$T/r.rvs"
	[ "$stderr" = "rv-train-gpu: --device cuda: no CUDA device found" ]
}

@test "rv-train-gpu: learns Fashion-MNIST, with every documented --log event" {
	local acc
	run -0 --separate-stderr train --lr 0.05 --eval "$T/ev.rvs" \
	    --log "$W/log" --log-every 20 -o "$W/sum" "$T/tr.rvs"
	[ -z "$stderr" ]
	[ -z "$output" ]	# -o: the summary went to the file
	output=$(cat "$W/sum")
	[[ "$output" == "model     custom, 7894 parameters"$'\n'* ]]
	[ "$(summary_value steps)" = 126 ]	# 63 batches an epoch
	[ "$(summary_value epochs)" = 2 ]
	[ "$(summary_value samples)" = 4000 ]
	[ "$(summary_value grads)" = 4000 ]
	[[ "$(sline eval)" =~ ^"eval      loss "[0-9.]+" acc "(0\.[0-9]+)" (epoch 1, step 126)"$ ]]
	acc=${BASH_REMATCH[1]}
	awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }' ||
	    { echo "eval acc $acc"; return 1; }
	# the events in order, with samples and the evaluation's accuracy
	run -0 python3 -c "$LOGCHECK_PY" "$W/log" samples eval_acc
	[ "${lines[0]}" = "step 20 0 640" ]
	[ "${lines[1]}" = "step 40 0 1280" ]
	[ "${lines[2]}" = "step 60 0 1920" ]
	[ "${lines[3]}" = "epoch 63 0 2000" ]
	[[ "${lines[4]}" == "eval 63 0 2000 0."* ]]
	[ "${lines[5]}" = "step 80 1 2544" ]
	[ "${lines[6]}" = "step 100 1 3184" ]
	[ "${lines[7]}" = "step 120 1 3824" ]
	[ "${lines[8]}" = "epoch 126 1 4000" ]
	[[ "${lines[9]}" == "eval 126 1 4000 0."* ]]
	[[ "${lines[10]}" == "summary - - 4000 0."* ]]
	[ "${#lines[@]}" -eq 11 ]
	# the summary's accuracy is the last evaluation's
	[ "${lines[10]##* }" = "${lines[9]##* }" ]
	awk -v a="$acc" -v b="${lines[9]##* }" \
	    'BEGIN { exit !(a - b < 6e-5 && b - a < 6e-5) }'
	# values: accuracies in [0,1], the lr, wall clock never going back
	python3 - "$W/log" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
wall = 0
for o in ev:
    assert o["wall"] >= wall, o
    wall = o["wall"]
    for k in ("acc", "eval_acc"):
        assert k not in o or 0 <= o[k] <= 1, o
    if o["event"] in ("step", "epoch"):
        assert o["lr"] == 0.05 and o["loss"] > 0, o
        assert o["samples_per_s"] > 0 and 0 <= o["wait_frac"] <= 1, o
        assert o["grads"] == o["samples"], o
    if o["event"] == "epoch":
        assert 0 < o["epoch_s"] <= o["wall"], o
s = ev[-1]
assert s["reached"] is False and s["target_acc"] is None, s
assert (s["epochs"], s["steps"], s["samples"], s["grads"]) == \
    (2, 126, 4000, 4000), s
assert s["eval_loss"] == ev[-2]["eval_loss"] > 0, s
assert s["feedback_written"] == 0 and s["feedback_dropped"] == 0, s
assert 0 <= s["wait_frac"] <= 1, s
# it learned: the second epoch trains better than the first
assert ev[8]["acc"] > ev[3]["acc"] and ev[8]["loss"] < ev[3]["loss"], ev
EOF
}

@test "rv-train-gpu: --feedback to a file: one whole line per trained sample" {
	run -0 --separate-stderr train --feedback "$W/fb" "$T/r.rvs"
	[ -z "$stderr" ]
	[ "$(summary_value samples)" = 1200 ]
	[ "$(sline feedback)" = "feedback  1200 lines written, 0 dropped" ]
	run -0 python3 -c "$FBCHECK_PY" "$T/r.rvs" "$W/fb" 32 \
	    python3 -c "$STREAM_PY"
	[ "$output" = "1200 lines ok" ]
	# the same from batch records
	run -0 --separate-stderr train --feedback "$W/fb2" "$T/rb.rvs"
	cmp <(cut -f1-3 "$W/fb") <(cut -f1-3 "$W/fb2")
}

@test "rv-train-gpu: --feedback to a FIFO nobody reads never blocks" {
	slow
	mkfifo "$W/fifo"
	run -0 --separate-stderr timeout 60 rv-train-gpu -q -j 1 -b 32 \
	    -m "$M" --feedback "$W/fifo" --log "$W/log" "$T/r.rvs"
	[ -z "$stderr" ]
	[ "$(summary_value steps)" = 38 ]
	[ "$(sline feedback)" = "feedback  0 lines written, 1200 dropped" ]
	[[ "$(tail -n 1 "$W/log")" == *'"feedback_written":0,"feedback_dropped":1200}' ]]
}

@test "rv-train-gpu: a slow feedback reader does not slow training, and gets whole lines" {
	slow
	local t0 t1 t2 t3 n written dropped
	mkfifo "$W/fifo"
	t0=$(date +%s.%N)
	train "$T/tr.rvs" > /dev/null
	t1=$(date +%s.%N)
	# The reader takes 10 ms a line until told to stop, then reads the
	# rest at once.  4000 lines are more than the pipe holds: a trainer
	# that waited for the reader would need it to read about 1500 lines
	# (15 s) before it could finish.
	(
		while :; do
			if ! IFS= read -r l; then
				[ -z "$l" ] || echo "partial line: '$l'" >&2
				break
			fi
			printf '%s\n' "$l"
			[ -e "$W/stop" ] || sleep 0.01
		done < "$W/fifo" > "$W/got" 2> "$W/reader.err"
	) 3>&- &
	PIDS="$PIDS $!"
	t2=$(date +%s.%N)
	run -0 --separate-stderr timeout 60 rv-train-gpu -q -j 1 -b 32 \
	    -m "$M" --feedback "$W/fifo" "$T/tr.rvs"
	t3=$(date +%s.%N)
	n=$(wc -l < "$W/got")
	touch "$W/stop"
	wait_exit "${PIDS##* }" 30
	[ -z "$stderr" ]
	# finished while the reader was still far behind, in about the time
	# it takes without feedback
	[ "$n" -lt 1000 ] || { echo "the reader had $n lines"; return 1; }
	awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" 'BEGIN {
		printf "%.2f s with the reader, %.2f s without\n", d - c, b - a
		exit !(d - c < 3 * (b - a) + 2) }'
	[[ "$(sline feedback)" =~ ^"feedback  "([0-9]+)" lines written, "([0-9]+)" dropped"$ ]]
	written=${BASH_REMATCH[1]}
	dropped=${BASH_REMATCH[2]}
	[ "$((written + dropped))" -eq 4000 ]
	[ "$dropped" -gt 0 ]
	# the reader got every line written, each whole
	[ ! -s "$W/reader.err" ] || { cat "$W/reader.err"; return 1; }
	[ "$(wc -l < "$W/got")" -eq "$written" ]
	awk -F'\t' 'NF != 5 || $1 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ ||
	    $4 !~ /^[0-9.e+-]+$/ || $5 !~ /^[0-9.e+-]+$/ { print "bad: " $0;
	    bad = 1 } END { exit bad }' "$W/got"
}

@test "rv-train-gpu: a feedback reader that leaves after 10 lines does not stop training" {
	slow
	local written dropped
	mkfifo "$W/fifo"
	head -n 10 < "$W/fifo" > "$W/got" 3>&- &
	PIDS="$PIDS $!"
	run -0 --separate-stderr timeout 60 rv-train-gpu -q -j 1 -b 32 \
	    -m "$M" --feedback "$W/fifo" "$T/tr.rvs"
	wait_exit "${PIDS##* }" 30
	[ -z "$stderr" ]
	[ "$(summary_value steps)" = 126 ]
	[[ "$(sline feedback)" =~ ^"feedback  "([0-9]+)" lines written, "([0-9]+)" dropped"$ ]]
	written=${BASH_REMATCH[1]}
	dropped=${BASH_REMATCH[2]}
	[ "$((written + dropped))" -eq 4000 ]
	[ "$written" -ge 10 ]
	[ "$(wc -l < "$W/got")" -eq 10 ]
	[ "$(awk -F'\t' 'NF == 5 && $3 == 1' "$W/got" | wc -l)" -eq 10 ]
}

@test "rv-train-gpu: --resume after --max-steps equals the uninterrupted run" {
	local k
	[ "$(ck_u64 "$T/a.ck" 44)" = 38 ]
	# mid-epoch, and at the end of the first epoch's last batch
	for k in 13 19; do
		run -0 --separate-stderr train --max-steps "$k" --save "$W/b.ck" \
		    "$T/r.rvs"
		[ "$(summary_value steps)" = "$k" ]
		[ "$(ck_u64 "$W/b.ck" 44)" = "$k" ]
		run -0 --separate-stderr train --resume "$W/b.ck" \
		    --save "$W/c.ck" "$T/r.rvs"
		[ -z "$stderr" ]
		[ "$(sline steps)" = "steps     38 (resumed at step $k)" ]
		[ "$(summary_value epochs)" = 2 ]
		[ "$(summary_value samples)" = 1200 ]
		ck_same "$T/a.ck" "$W/c.ck"
	done
	# from batch records: the same checkpoint again
	run -0 --separate-stderr train --resume "$W/b.ck" --save "$W/d.ck" \
	    "$T/rb.rvs"
	ck_same "$T/a.ck" "$W/d.ck"
}

@test "rv-train-gpu: --resume refuses another input, and one that ends early" {
	slow
	train --max-steps 13 --save "$W/b.ck" "$T/r.rvs" > /dev/null
	run -1 --separate-stderr train --resume "$W/b.ck" --save "$W/c.ck" \
	    "$T/r5.rvs"
	[ -z "$output" ]
	[ "$stderr" = "rv-train-gpu: resume: the input is not the one the checkpoint was trained on (its first 13 batches differ)" ]
	[ ! -e "$W/c.ck" ]
	run -1 --separate-stderr train --resume "$W/b.ck" "$T/short.rvs"
	[ "$stderr" = "rv-train-gpu: resume: the input ended after 4 of the 13 batches the checkpoint had trained on" ]
	# nothing at all
	run -1 --separate-stderr train --resume "$W/b.ck" --save "$W/c.ck" \
	    < /dev/null
	[ "$stderr" = "rv-train-gpu: resume: the input ended after 0 of the 13 batches the checkpoint had trained on" ]
	[ ! -e "$W/c.ck" ]
}

@test "rv-train-gpu: kill -9, then --resume, equals the uninterrupted run" {
	local sz st every step
	sz=$(stat -c %s "$T/r.rvs")
	# a checkpoint every 5 steps (mid-epoch), and at epoch ends only
	for every in 5 0; do
		rm -f "$W/fifo" "$W/k.ck" "$W/c.ck"
		mkfifo "$W/fifo"
		if [ "$every" -gt 0 ]; then
			"${TRAIN[@]}" --save "$W/k.ck" --save-every "$every" \
			    "$W/fifo" > "$W/out" 2>&1 3>&- &
		else
			"${TRAIN[@]}" --save "$W/k.ck" "$W/fifo" > "$W/out" \
			    2>&1 3>&- &
		fi
		pid=$!
		PIDS="$PIDS $pid"
		# a writer that stays, then two thirds of the input: the
		# trainer waits in the middle of the second epoch
		exec 4<> "$W/fifo"
		timeout 60 head -c $((sz * 2 / 3)) "$T/r.rvs" > "$W/fifo"
		wait_file "$W/k.ck" 30
		kill -9 "$pid"
		st=0
		wait "$pid" || st=$?
		exec 4>&-
		[ "$st" -eq 137 ] || { cat "$W/out"; return 1; }
		step=$(ck_u64 "$W/k.ck" 44)
		echo "every $every: killed at step $step"
		if [ "$every" -gt 0 ]; then
			[ "$step" -gt 0 ]
			[ "$step" -lt 38 ]
			[ $((step % 5)) -eq 0 ] || [ "$step" -eq 19 ]
		else
			# saved at the first epoch end, and told so
			[ "$step" -eq 19 ]
			[ "$(ck_u32 "$W/k.ck" 80)" -eq 1 ]
		fi
		run -0 --separate-stderr train --resume "$W/k.ck" \
		    --save "$W/c.ck" "$T/r.rvs"
		[ "$(sline steps)" = "steps     38 (resumed at step $step)" ]
		[ "$(summary_value epochs)" = 2 ]
		ck_same "$T/a.ck" "$W/c.ck"
	done
}

@test "rv-train-gpu: the same run twice gives the same checkpoint, -j 1 and -j 2" {
	slow
	local j
	for j in 1 2; do
		rv-train-gpu -q -j "$j" -b 32 -m "$M" --max-steps 24 \
		    --save "$W/x$j.ck" "$T/r.rvs" > /dev/null
		rv-train-gpu -q -j "$j" -b 32 -m "$M" --max-steps 24 \
		    --save "$W/y$j.ck" "$T/r.rvs" > /dev/null
		ck_same "$W/x$j.ck" "$W/y$j.ck"
	done
	# and the uninterrupted reference too
	train --save "$W/a.ck" "$T/r.rvs" > /dev/null
	ck_same "$T/a.ck" "$W/a.ck"
	# the seed matters
	train --seed 7 --save "$W/s.ck" "$T/r.rvs" > /dev/null
	if cmp -s <(tail -c +169 "$T/a.ck") <(tail -c +169 "$W/s.ck"); then
		echo "--seed 7 trained the same parameters"
		return 1
	fi
}

# ck_norm FILE: the mean[4] and std[4] a checkpoint holds (byte 132).
ck_norm() {
	od -An -t f4 -j 132 -N 32 "$1" | xargs
}

# fb_diff A B: the largest difference of the losses of two feedback
# files, line by line (the ids, epochs and steps must agree).
fb_diff() {
	paste "$1" "$2" | awk -F '\t' '$1 != $6 || $2 != $7 || $3 != $8 {
	    print "differ"; exit } { d = $4 - $9; if (d < 0) d = -d
	    if (d > m) m = d } END { if (NR == 0) print "empty"; else print m + 0 }'
}

@test "rv-train-gpu: --mean and --std take one value or one per channel, in channel order" {
	slow
	local l m1 m2 d
	# A: Fashion-MNIST at half intensity (0..127), grey in 3 channels;
	# B: A plus (0, 64, 128) per channel, exactly (8-bit PNGs in and out)
	rv-decode -q --limit 300 --channels 3 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" > "$W/rgb.rvs"
	rv-inspect -q --png "$W/png" "$W/rgb.rvs" > /dev/null
	for l in 0 1 2 3 4 5 6 7 8 9; do
		mkdir -p "$W/a/$l"
		mv "$W"/png/*-l"$l".png "$W/a/$l/"
	done
	(cd "$W/a" && mogrify -evaluate divide 2 \
	    -define png:color-type=2 ./*/*.png)
	cp -r "$W/a" "$W/b"
	(cd "$W/b" && mogrify -channel G -evaluate add $((64 * 257)) \
	    -channel B -evaluate add $((128 * 257)) +channel \
	    -define png:color-type=2 ./*/*.png)
	rv-decode -q "$W/a" > "$W/a.rvs"
	rv-decode -q "$W/b" > "$W/b.rvs"
	# ImageNet's statistics, one per channel, in channel order
	train --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 \
	    --feedback "$W/fa" --save "$W/a.ck" "$W/a.rvs" > /dev/null
	[ "$(ck_norm "$W/a.ck")" = "0.485 0.456 0.406 0.406 0.229 0.224 0.225 0.225" ]
	# on B, means raised by the shift give A's inputs: the same losses
	m1=$(awk 'BEGIN { printf "%.9f", 0.456 + 64 / 255 }')
	m2=$(awk 'BEGIN { printf "%.9f", 0.406 + 128 / 255 }')
	train --mean "0.485,$m1,$m2" --std 0.229,0.224,0.225 \
	    --feedback "$W/fb" "$W/b.rvs" > /dev/null
	d=$(fb_diff "$W/fa" "$W/fb")
	awk -v d="$d" 'BEGIN { exit !(d + 0 == d && d < 1e-3) }' ||
	    { echo "B with shifted means: losses differ by $d"; return 1; }
	# the first and last means exchanged: far from A's
	train --mean "$m2,$m1,0.485" --std 0.229,0.224,0.225 \
	    --feedback "$W/fc" "$W/b.rvs" > /dev/null
	d=$(fb_diff "$W/fa" "$W/fc")
	awk -v d="$d" 'BEGIN { exit !(d + 0 == d && d > 0.1) }' ||
	    { echo "B with channels 0 and 2 swapped: losses differ by $d"; return 1; }
	# one value is that value for every channel, byte for byte
	train --mean 0.3 --std 0.25 --save "$W/1.ck" "$W/a.rvs" > /dev/null
	train --mean 0.3,0.3,0.3 --std 0.25,0.25,0.25 --save "$W/3.ck" \
	    "$W/a.rvs" > /dev/null
	[ "$(ck_norm "$W/1.ck")" = "0.3 0.3 0.3 0.3 0.25 0.25 0.25 0.25" ]
	ck_same "$W/1.ck" "$W/3.ck"
	# and it takes effect: the default 0.5 trains other parameters
	train --save "$W/0.ck" "$W/a.rvs" > /dev/null
	if cmp -s <(tail -c +169 "$W/0.ck") <(tail -c +169 "$W/1.ck"); then
		echo "--mean 0.3 --std 0.25 trained the default's parameters"
		return 1
	fi
	# one value on one channel
	train --mean 0.3 --std 0.25 --max-steps 2 --save "$W/g.ck" \
	    "$T/r.rvs" > /dev/null
	[ "$(ck_norm "$W/g.ck")" = "0.3 0.3 0.3 0.3 0.25 0.25 0.25 0.25" ]
	# neither one nor one per channel: exit 1 at the first batch, before
	# a step
	run -1 --separate-stderr train --mean 0.4,0.5 --save "$W/x.ck" \
	    "$W/a.rvs"
	[ -z "$output" ]
	[ "$stderr" = "rv-train-gpu: --mean: 2 values for 3 channels: give one value, or one per channel" ]
	[ ! -e "$W/x.ck" ]
	run -1 --separate-stderr train --std 0.2,0.3,0.25 "$T/r.rvs"
	[ "$stderr" = "rv-train-gpu: --std: 3 values for 1 channel: give one value, or one per channel" ]
}

@test "rv-train-gpu: samples batched by -b and rv-batch batches train the same" {
	slow
	run -0 --separate-stderr train --save "$W/b.ck" "$T/rb.rvs"
	[ "$(summary_value steps)" = 38 ]
	ck_same "$T/a.ck" "$W/b.ck"
	# -b only batches samples: batch records keep their size
	run -0 --separate-stderr rv-train-gpu -q -j 1 -b 7 -m "$M" \
	    --save "$W/b7.ck" "$T/rb.rvs"
	ck_same "$T/a.ck" "$W/b7.ck"
}

@test "rv-train-gpu: SIGINT saves a checkpoint, exits 130, and the run resumes" {
	slow
	local st step
	"${TRAIN[@]}" --save "$W/s.ck" --save-every 2 "$T/long.rvs" \
	    > "$W/out" 2> "$W/err" 3>&- &
	pid=$!
	PIDS="$PIDS $pid"
	wait_file "$W/s.ck" 30
	kill -INT "$pid"
	st=0
	wait_exit "$pid" 30 || st=$?
	[ "$st" -eq 130 ] || { cat "$W/out" "$W/err"; return 1; }
	[ ! -s "$W/err" ] || { cat "$W/err"; return 1; }
	output=$(cat "$W/out")
	[ "$(sline stopped)" = "stopped   by a signal, checkpoint saved" ]
	# a clean exit: no temporary checkpoint left behind
	[ -z "$(find "$W" -name '.s.ck.tmp.*')" ]
	step=$(ck_u64 "$W/s.ck" 44)
	[ "$(summary_value steps)" = "$step" ]
	[ "$step" -lt 350 ]
	# resumed: four more steps equal four more uninterrupted
	run -0 --separate-stderr train --resume "$W/s.ck" \
	    --max-steps $((step + 4)) --save "$W/r.ck" "$T/long.rvs"
	[ "$(sline steps)" = "steps     $((step + 4)) (resumed at step $step)" ]
	run -0 --separate-stderr train --max-steps $((step + 4)) \
	    --save "$W/u.ck" "$T/long.rvs"
	ck_same "$W/u.ck" "$W/r.ck"
}

@test "rv-train-gpu: SIGINT while it waits for input" {
	local st sz
	sz=$(stat -c %s "$T/r.rvs")
	mkfifo "$W/fifo"
	"${TRAIN[@]}" --save "$W/s.ck" --save-every 1 "$W/fifo" \
	    > "$W/out" 2> "$W/err" 3>&- &
	pid=$!
	PIDS="$PIDS $pid"
	exec 4<> "$W/fifo"
	# a third of the input, the rest never comes: it trains on what
	# came, then waits in a read
	timeout 60 head -c $((sz / 3)) "$T/r.rvs" > "$W/fifo"
	wait_file "$W/s.ck" 30
	sleep 0.5
	kill -INT "$pid"
	st=0
	wait_exit "$pid" 30 || st=$?
	exec 4>&-
	[ "$st" -eq 130 ] || { cat "$W/out" "$W/err"; return 1; }
	[ ! -s "$W/err" ] || { cat "$W/err"; return 1; }
	output=$(cat "$W/out")
	[ "$(sline stopped)" = "stopped   by a signal, checkpoint saved" ]
	[ "$(ck_u64 "$W/s.ck" 44)" = "$(summary_value steps)" ]
	[ "$(summary_value steps)" -gt 0 ]
	[ -z "$(find "$W" -name '.s.ck.tmp.*')" ]
}

@test "rv-train-gpu: bad input exits 1 with the reason" {
	local sz where
	sz=$(stat -c %s "$T/r.rvs")
	# a truncated stream: the record and its byte offset
	head -c $((sz / 2)) "$T/r.rvs" > "$W/cut.rvs"
	run -1 --separate-stderr train --save "$W/c.ck" "$W/cut.rvs"
	[ -z "$output" ]
	[[ "$stderr" =~ ^"rv-train-gpu: '$W/cut.rvs': "("record "([0-9]+)" at byte "([0-9]+)": truncated frame")$ ]]
	where=${BASH_REMATCH[1]}
	[ "${BASH_REMATCH[2]}" -gt 0 ]
	[ "${BASH_REMATCH[3]}" -le $((sz / 2)) ]
	# the same through a pipe
	run -1 --separate-stderr train < "$W/cut.rvs"
	[ "$stderr" = "rv-train-gpu: '<stdin>': $where" ]
	# images without labels
	rv-decode -q --limit 64 "$FMNIST/train-images-idx3-ubyte.gz" \
	    > "$W/nolabel.rvs"
	run -1 --separate-stderr train "$W/nolabel.rvs"
	[[ "$stderr" =~ ^"rv-train-gpu: '$W/nolabel.rvs': record 1 at byte "[0-9]+": sample 0 has no label: the trainer needs labelled samples"$ ]]
	# empty input
	run -1 --separate-stderr train < /dev/null
	[ "$stderr" = "rv-train-gpu: the input holds no batch to train on" ]
	: > "$W/empty.rvs"
	run -1 --separate-stderr train --save "$W/e.ck" "$W/empty.rvs"
	[ "$stderr" = "rv-train-gpu: the input holds no batch to train on" ]
	[ ! -e "$W/e.ck" ]
	# a missing input file
	run -1 --separate-stderr train "$W/none.rvs"
	[[ "$stderr" == "rv-train-gpu: '$W/none.rvs': "* ]]
	# an --eval set of another shape
	rv-decode -q --limit 64 --channels 3 "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz" > "$W/ev3.rvs"
	run -1 --separate-stderr train --eval "$W/ev3.rvs" "$T/r.rvs"
	[ "$stderr" = "rv-train-gpu: --eval '$W/ev3.rvs' holds 28x28x3 samples, the training stream 28x28x1" ]
}

@test "rv-train-gpu: a --save directory it cannot write fails before training; divergence stops it" {
	# checked at the start, not at the first epoch's end
	run -1 --separate-stderr train --save "$W/none/x.ck" "$T/r.rvs"
	[ -z "$output" ]
	[ "$stderr" = "rv-train-gpu: --save '$W/none/x.ck': directory '$W/none': No such file or directory" ]
	# a rate far too high: the loss becomes NaN, the run stops there,
	# no checkpoint claims a model
	run -1 --separate-stderr rv-train-gpu -q -j 1 -b 32 \
	    -m 'linear 256; relu; linear 256; relu; linear' --lr 100 \
	    --momentum 0.99 --wd 0 --save "$W/d.ck" "$T/r.rvs"
	[ -z "$output" ]
	[[ "$stderr" =~ ^"rv-train-gpu: training diverged at step "[0-9]+" (loss "(nan|inf)"): try a lower --lr"$ ]]
	[ ! -e "$W/d.ck" ]
}

@test "rv-train-gpu: a corrupt --resume checkpoint exits 1 naming it" {
	slow
	local len
	cp "$T/a.ck" "$W/flip.ck"
	len=$(stat -c %s "$W/flip.ck")
	printf '\x55' | dd of="$W/flip.ck" bs=1 seek=$((len / 2)) \
	    conv=notrunc status=none
	cmp -s "$T/a.ck" "$W/flip.ck" && { echo "no byte flipped"; return 1; }
	run -1 --separate-stderr train --resume "$W/flip.ck" "$T/r.rvs"
	[ -z "$output" ]
	[ "$stderr" = "rv-train-gpu: '$W/flip.ck': checkpoint checksum mismatch (file damaged or truncated)" ]
	head -c $((len - 1)) "$T/a.ck" > "$W/cut.ck"
	run -1 --separate-stderr train --resume "$W/cut.ck" "$T/r.rvs"
	[ "$stderr" = "rv-train-gpu: '$W/cut.ck': checkpoint checksum mismatch (file damaged or truncated)" ]
	head -c 100 "$T/a.ck" > "$W/short.ck"
	run -1 --separate-stderr train --resume "$W/short.ck" "$T/r.rvs"
	[ "$stderr" = "rv-train-gpu: '$W/short.ck': not a checkpoint: 100 bytes is too short" ]
	run -1 --separate-stderr train --resume "$T/r.rvs" "$T/r.rvs"
	[ "$stderr" = "rv-train-gpu: '$T/r.rvs': not a checkpoint: bad magic" ]
	run -1 --separate-stderr train --resume "$W/none.ck" "$T/r.rvs"
	[[ "$stderr" == "rv-train-gpu: '$W/none.ck': "* ]]
}

@test "rv-train-gpu: --target-acc stops once evaluation reaches it" {
	slow
	local step
	run -0 --separate-stderr train --eval "$T/ev.rvs" --eval-every 5 \
	    --target-acc 0.3 --log "$W/log" "$T/tr.rvs"
	[ -z "$stderr" ]
	[[ "$(sline target)" =~ ^"target    0.3000 reached at "[0-9.]+" s, epoch 0, step "([0-9]+)", "([0-9]+)" samples, "([0-9]+)" grads"$ ]]
	step=${BASH_REMATCH[1]}
	[ "$((step % 5))" -eq 0 ]
	[ "$step" -lt 126 ]
	[ "${BASH_REMATCH[2]}" -eq $((step * 32)) ]
	[ "$(summary_value steps)" = "$step" ]
	[[ "$(tail -n 1 "$W/log")" == '{"event":"summary","reached":true,"target_acc":0.3,'* ]]
	# out of reach: the input runs out, exit 0 all the same
	run -0 --separate-stderr train --eval "$T/ev.rvs" --target-acc 0.99 \
	    --max-steps 3 "$T/r.rvs"
	[ "$(sline target)" = "target    0.9900 not reached" ]
	[ "$(summary_value steps)" = 3 ]
}

@test "rv-train-gpu: --schedule cosine with --warmup: the logged rates, and resuming keeps them" {
	local k
	# 600 samples an epoch (the stream's metadata says so), 19 steps
	run -0 --separate-stderr train --lr 0.1 --schedule cosine --epochs 2 \
	    --warmup 5 --log-every 1 --log "$W/log" --save "$W/a.ck" \
	    "$T/r.rvs"
	python3 - "$W/log" <<'PY'
import json, math, sys
n = 0
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["event"] != "step":
        continue
    s = o["step"]	# the rate of step s, set before it was taken
    done = 32 * (s - 1) if s <= 19 else 32 * (s - 20)
    pos = (0 if s <= 19 else 1) + done / 600
    lr = 0.1 * 0.5 * (1 + math.cos(math.pi * min(pos / 2, 1)))
    if s <= 5:
        lr *= s / 5
    assert abs(o["lr"] - lr) <= 1e-5 * lr, (s, o["lr"], lr)
    n += 1
assert n == 38, n
PY
	# in the warm-up, in the first epoch, in the second
	for k in 3 13 25; do
		train --lr 0.1 --schedule cosine --epochs 2 --warmup 5 \
		    --max-steps "$k" --save "$W/b.ck" "$T/r.rvs" > /dev/null
		run -0 --separate-stderr train --lr 0.1 --schedule cosine \
		    --epochs 2 --warmup 5 --resume "$W/b.ck" --save "$W/c.ck" \
		    "$T/r.rvs"
		ck_same "$W/a.ck" "$W/c.ck"
	done
}

@test "rv-train-gpu: --steps N fits linear and step to the budget: linear reaches 0 at N, step decays at N/3 and 2N/3" {
	run -0 --separate-stderr train --lr 0.1 --schedule linear --steps 30 \
	    --warmup 3 --log-every 1 --log "$W/lin.log" "$T/r.rvs"
	[ "$(summary_value steps)" = 30 ]
	run -0 --separate-stderr train --lr 0.1 --schedule step --steps 30 \
	    --gamma 0.5 --log-every 1 --log "$W/step.log" "$T/r.rvs"
	[ "$(summary_value steps)" = 30 ]
	python3 - "$W/lin.log" "$W/step.log" <<'PY'
import json, sys
def rates(path):
    return [(o["step"], o["lr"]) for o in map(json.loads, open(path))
            if o["event"] == "step"]
lin, step = rates(sys.argv[1]), rates(sys.argv[2])
assert [s for s, _ in lin] == list(range(1, 31)), lin
for s, got in lin:
    lr = 0.1 * (1 - (s - 1) / 30)
    if s <= 3:
        lr *= s / 3
    assert abs(got - lr) <= 1e-5 * lr, (s, got, lr)
# the last step's rate is the smallest of the line, 1/30 of the start
assert abs(lin[-1][1] - 0.1 / 30) <= 1e-7, lin[-1]
for s, got in step:
    lr = 0.1 * 0.5 ** ((s - 1) // 10)
    assert abs(got - lr) <= 1e-5 * lr, (s, got, lr)
PY
}

@test "rv-train-gpu: --steps N counts the schedule in steps: a shrunk stream gets the same rates, and training ends at step N, evaluated" {
	# 600 samples an epoch (19 steps), and 300 an epoch (10 steps): the
	# same cosine over 30 steps, whatever the epochs
	rv-decode -q --limit 300 --epochs 4 --shuffle \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" > "$W/half.rvs"
	run -0 --separate-stderr train --lr 0.1 --schedule cosine --steps 30 \
	    --warmup 5 --log-every 1 --log "$W/a.log" --eval "$T/ev.rvs" \
	    "$T/r.rvs"
	[ "$(summary_value steps)" = 30 ]
	run -0 --separate-stderr train --lr 0.1 --schedule cosine --steps 30 \
	    --warmup 5 --log-every 1 --log "$W/b.log" "$W/half.rvs"
	[ "$(summary_value steps)" = 30 ]
	[ "$(summary_value epochs)" = 2 ]
	python3 - "$W/a.log" "$W/b.log" <<'PY'
import json, math, sys
def rates(path):
    return [(o["step"], o["lr"]) for o in map(json.loads, open(path))
            if o["event"] == "step"]
a, b = rates(sys.argv[1]), rates(sys.argv[2])
assert [s for s, _ in a] == list(range(1, 31)), a
assert a == b, (a, b)
for s, got in a:
    lr = 0.1 * 0.5 * (1 + math.cos(math.pi * (s - 1) / 30))
    if s <= 5:
        lr *= s / 5
    assert abs(got - lr) <= 1e-5 * max(lr, 1e-9), (s, got, lr)
evals = [o["step"] for o in map(json.loads, open(sys.argv[1]))
         if o["event"] == "eval"]
assert evals == [19, 30], evals
PY
	# --no-epoch-eval: at the steps of --eval-every and the end alone
	run -0 --separate-stderr train --steps 30 --eval "$T/ev.rvs" \
	    --eval-every 10 --no-epoch-eval --log "$W/d.log" "$T/r.rvs"
	run -0 python3 -c 'import json, sys
print(" ".join(str(o["step"]) for o in map(json.loads, open(sys.argv[1]))
               if o["event"] == "eval"))' "$W/d.log"
	[ "$output" = "10 20 30" ]
	# and at the end, where the input ends (two epochs: 38 steps)
	run -0 --separate-stderr train --eval "$T/ev.rvs" --eval-every 10 \
	    --no-epoch-eval --log "$W/e.log" "$T/r.rvs"
	run -0 python3 -c 'import json, sys
print(" ".join(str(o["step"]) for o in map(json.loads, open(sys.argv[1]))
               if o["event"] == "eval"))' "$W/e.log"
	[ "$output" = "10 20 30 38" ]
	# --step-size counts steps too
	run -0 --separate-stderr train --lr 0.1 --schedule step --step-size 10 \
	    --gamma 0.5 --steps 25 --log-every 1 --log "$W/c.log" "$W/half.rvs"
	run -0 python3 -c 'import json, sys
print(" ".join("%g" % o["lr"] for o in map(json.loads, open(sys.argv[1]))
               if o["event"] == "step" and o["step"] in (10, 11, 21, 25)))' \
	    "$W/c.log"
	[ "$output" = "0.1 0.05 0.025 0.025" ]
}
