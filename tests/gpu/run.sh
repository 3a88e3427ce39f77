#!/usr/bin/env bash
# The CUDA backend on a GPU (issue 8), end to end; run by
# scripts/gpu-check.sh after the unit tests (build/unit/t_nn_cuda: both
# backends agree on whole models).  First (cuda) that the trainer loads
# its CUDA plugin and finds a device.  Then for each of fp32, tf32, bf16:
#   learns    Fashion-MNIST (10,000 samples, 4 epochs, cnn-small,
#             shrunk by rv-score with the trainer's feedback through a
#             FIFO) reaches >= 0.75 test accuracy (which samples
#             rv-score drops hangs on when the feedback arrives: on
#             the CPU backend, 0.80 to 0.83 over nine runs, some on a
#             loaded machine; chance is 0.10);
#   feedback  the trainer wrote lines for at least half the samples and
#             rv-score read at least half of those (its summary counts);
#   device    the summary names the CUDA device and the precision
#             (bf16 trains with --autotune, and the summary says so).
# Last: the CPU and CUDA fp32 backends trained on the same 20 batches
# end within 2 % of each other's training loss; on CUDA, in fp32 and
# bf16, two runs with the same seed (-j 1 and -j 4) write the same
# checkpoint (but for its wall and wait seconds) and the same feedback
# lines; --device cuda:N past the last device exits 1 with one line.  TAP on stdout.  DEVICE=cpu runs
# the same checks on the CPU backend (fp32 only; to check this script
# without a GPU), LIMIT the training samples (default 10000), RV_BUILD
# the build tree (default build), FMNIST the Fashion-MNIST folder.
set -uo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${RV_BUILD:-build}
case $build in
/*) bin=$build/bin ;;
*) bin=$root/$build/bin ;;
esac
PATH="$bin:$PATH"
data=${FMNIST:-/usr/share/datasets/fashion-mnist}
device=${DEVICE:-cuda}
limit=${LIMIT:-10000}
precs="fp32 tf32 bf16"
[ "$device" = cuda ] || precs=fp32
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
n=0 failed=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

# The backend is the plugin lib/rv/librv-cuda.so beside bin/: first that
# it loads and finds a device (else every check below fails, and why is
# said here).
if [ "$device" = cuda ]; then
	err=$(rv-train-gpu -q --device cuda < /dev/null 2>&1)
	echo "# $err"
	ok "$([ "$err" = "rv-train-gpu: the input holds no batch to train on" ]; echo $?)" \
	    "the CUDA plugin loads and finds a device"
fi

rv-decode -q --limit 2000 "$data/t10k-images-idx3-ubyte.gz" \
    "$data/t10k-labels-idx1-ubyte.gz" -o "$w/test.rvs"
for p in $precs; do
	popt=(--precision "$p")
	[ "$p" = bf16 ] && popt+=(--autotune)
	[ "$device" = cuda ] || popt=()
	rm -f "$w/fb"
	mkfifo "$w/fb"
	rv-decode -q --limit "$limit" --epochs 4 --shuffle \
	    "$data/train-images-idx3-ubyte.gz" \
	    "$data/train-labels-idx1-ubyte.gz" |
	    rv-augment -q 'random_crop size=28 padding=2; flip' |
	    rv-score -v --feedback "$w/fb" 2> "$w/score-$p.err" |
	    rv-batch -q -b 128 |
	    rv-train-gpu -q --device "$device" "${popt[@]}" -m cnn-small \
		--schedule cosine --epochs 4 --eval "$w/test.rvs" \
		--feedback "$w/fb" --log "$w/log-$p" -o "$w/sum-$p" \
		2> "$w/train-$p.err"
	rc=$?
	acc=$(sed -n 's/^eval .* acc \([0-9.]*\).*/\1/p' "$w/sum-$p")
	echo "# $p: rc $rc, test accuracy ${acc:-none}"
	sed 's/^/#   /' "$w/sum-$p" "$w/train-$p.err"
	ok "$(awk -v a="${acc:-0}" -v r="$rc" 'BEGIN { print (r == 0 && a >= 0.75) ? 0 : 1 }')" \
	    "$p: cnn-small learns Fashion-MNIST on $device (acc ${acc:-none})"
	# The last batches' lines find rv-score gone (its input read): most,
	# not all, arrive.
	written=$(sed -n 's/^feedback *\([0-9]*\) lines written.*/\1/p' "$w/sum-$p")
	samples=$(sed -n 's/^samples *\([0-9]*\)$/\1/p' "$w/sum-$p")
	read_=$(sed -n 's/.* in [0-9]* epochs; feedback \([0-9]*\) lines.*/\1/p' \
	    "$w/score-$p.err" | tail -1)
	tail -2 "$w/score-$p.err" | sed 's/^/#   /'
	ok "$(awk -v w="${written:-0}" -v s="${samples:-0}" -v r="${read_:-0}" \
	    'BEGIN { print (s > 0 && w >= s / 2 && r >= w / 2) ? 0 : 1 }')" \
	    "$p: feedback flows: $written lines written for $samples samples, rv-score read ${read_:-none}"
	if [ "$device" = cuda ]; then
		tuned=
		[ "$p" = bf16 ] && tuned=", autotuned"
		ok "$(grep -q "^device *cuda (.*, $p$tuned)" "$w/sum-$p"; echo $?)" \
		    "$p: the summary names the device and precision"
	fi
done

rv-decode -q --limit 2560 "$data/train-images-idx3-ubyte.gz" \
    "$data/train-labels-idx1-ubyte.gz" | rv-batch -q -b 128 -o "$w/20.rvs"
for d in cpu "$device"; do
	rv-train-gpu -q --device "$d" -m cnn-small --seed 5 --max-steps 20 \
	    -o "$w/agree-$d" "$w/20.rvs"
done
lc=$(sed -n 's/^train *loss \([0-9.]*\).*/\1/p' "$w/agree-cpu")
lg=$(sed -n 's/^train *loss \([0-9.]*\).*/\1/p' "$w/agree-$device")
echo "# train loss after 20 steps: cpu $lc, $device $lg"
ok "$(awk -v a="${lc:-0}" -v b="${lg:-9}" 'BEGIN { d = a - b; if (d < 0) d = -d; print (a > 0 && d <= 0.02 * a) ? 0 : 1 }')" \
    "fp32: the CPU and $device backends' training losses agree after 20 steps"
# ck_same A B: checkpoints equal but for their wall and wait seconds.
# shellcheck source=tests/bats/ckpt.bash
. "$root/tests/bats/ckpt.bash"
if [ "$device" = cuda ]; then
	for p in fp32 bf16; do
		for j in 1 4; do
			rv-train-gpu -q -j "$j" --device cuda --precision "$p" \
			    -m cnn-small --seed 5 --max-steps 20 \
			    --save "$w/rep-$p-$j.ck" --feedback "$w/rep-$p-$j.fb" \
			    -o /dev/null "$w/20.rvs"
		done
		lines=$(wc -l < "$w/rep-$p-1.fb")
		ok "$([ "$lines" -gt 0 ] &&
		    ck_same "$w/rep-$p-1.ck" "$w/rep-$p-4.ck" >&2 &&
		    cmp "$w/rep-$p-1.fb" "$w/rep-$p-4.fb" >&2; echo $?)" \
		    "$p: two runs, -j 1 and -j 4, train the same model bit for bit ($lines feedback lines)"
	done
	err=$(rv-train-gpu -q --device cuda:1023 "$w/20.rvs" 2>&1 >/dev/null)
	rc=$?
	echo "# $err"
	ok "$([ "$rc" = 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] &&
	    [[ "$err" == *"device 1023"* ]]; echo $?)" \
	    "--device cuda:N past the last device: exit 1, one line"
fi
echo "1..$n"
[ "$failed" = 0 ]
