#!/usr/bin/env bash
# CUDA backend throughput (issue 8): images/s of rv-train-gpu training
# resnet18 and resnet50 on 224x224x3 images in batches of 256, in fp32,
# tf32 and bf16, with the input
#   file  the batches read from a file in the page cache (no decoding, no
#         augmentation, no pipe: the "synthetic" baseline)
#   pipe  the same bytes through a pipe (cat file | rv-train-gpu)
#   tuned the file again, with --autotune (cuDNN's algorithms timed, the
#         fastest kept) where file and pipe take cuDNN's heuristic choice
# and the achieved TFLOP/s (3 x 2 x MACs a sample x images/s: forward and
# the two backward GEMMs) beside the device's dense peak for that
# precision; PyTorch's images/s for the same model and precision
# (torchvision model, cudnn.benchmark, channels-last + autocast for bf16,
# synthetic batch on the device) when torch with CUDA is there.
# Targets: rv >= 0.90x PyTorch; pipe <= 1.05x file's time a step.
# (PyTorch runs with cudnn.benchmark: compare it with tuned.)
# The rate is taken between log lines, after WARM steps (default 20) of
# STEPS (default 60), so autotuning and warm-up are left out.
#
# Builds nothing: expects `make` with CUDA.  Environment: RV_BUILD
# (default build), FMNIST (the Fashion-MNIST folder), MODELS, PRECS,
# STEPS, WARM, BATCH, SIZE (default 224).
# DEVICE=cpu runs the same script on the CPU backend (fp32, no PyTorch),
# to check the script itself without a GPU, e.g. DEVICE=cpu
# MODELS=cnn-small SIZE=28 BATCH=64.  Output (JSON lines and the table)
# in bench/out/gpu/ (bench/out/gpu-cpu/ for DEVICE=cpu), or OUT.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
device=${DEVICE:-cuda}
out=$here/out/gpu
[ "$device" = cuda ] || out=$here/out/gpu-$device
out=${OUT:-$out}
build=${RV_BUILD:-build}
case $build in
/*) bin=$build/bin ;;
*) bin=$root/$build/bin ;;
esac
models=${MODELS:-resnet18 resnet50}
precs=${PRECS:-fp32 tf32 bf16}
steps=${STEPS:-60}
warm=${WARM:-20}
batch=${BATCH:-256}
size=${SIZE:-224}
[ "$device" = cuda ] || precs=fp32
data=${FMNIST:-/usr/share/datasets/fashion-mnist}
py=${PYTHON:-/usr/bin/python3}

die() { echo "bench/gpu: $*" >&2; exit 1; }
[ -x "$bin/rv-train-gpu" ] || die "no $bin/rv-train-gpu: run make first"
mkdir -p "$out"
PATH="$bin:$PATH"
err=$(rv-train-gpu -q --device "$device" < /dev/null 2>&1) || :
case $err in
*"no CUDA device"*|*"without CUDA"*)
	# make bench runs every benchmark: without a GPU this one has nothing
	# to measure.
	echo "bench/gpu: skipped: ${err#rv-train-gpu: --device cuda: }" >&2
	exit 0 ;;
esac

# Ten batches of 224x224x3 (Fashion-MNIST resized, 385 MB, stored frames:
# level 0, nothing to decompress); the runs read
# the file as many times as their steps need.
nb=10
input=$out/rgb$size-b$batch.rvs
if [ ! -s "$input" ]; then
	echo "preparing $nb batches of $batch ${size}x${size}x3 samples" >&2
	rv-decode -q --limit $((nb * batch)) --channels 3 \
	    "$data/train-images-idx3-ubyte.gz" \
	    "$data/train-labels-idx1-ubyte.gz" |
	    rv-augment -q "resize size=$size" |
	    rv-batch -q --level 0 -b "$batch" -o "$input"
fi
reps=$(((steps + nb - 1) / nb))
files=()
for ((i = 0; i < reps; i++)); do files+=("$input"); done

# Dense peaks in TFLOP/s (fp32, tf32, bf16) of the GPUs we know.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null |
    head -1 || echo unknown)
peak() {
	case "$gpu:$1" in
	*H200*:fp32|*H100*SXM*:fp32|*"H100 80GB HBM3"*:fp32) echo 67 ;;
	*H200*:tf32|*H100*SXM*:tf32|*"H100 80GB HBM3"*:tf32) echo 495 ;;
	*H200*:bf16|*H100*SXM*:bf16|*"H100 80GB HBM3"*:bf16) echo 989 ;;
	*A100*:fp32) echo 19.5 ;;
	*A100*:tf32) echo 156 ;;
	*A100*:bf16) echo 312 ;;
	*) echo 0 ;;
	esac
}

# rate LOG: images/s between the step-$warm line and the last step line
rate() {
	awk -v warm="$warm" '
	/"event":"step"/ {
		match($0, /"step":[0-9]+/); s = substr($0, RSTART + 7, RLENGTH - 7) + 0
		match($0, /"samples":[0-9]+/); n = substr($0, RSTART + 10, RLENGTH - 10) + 0
		match($0, /"wall":[0-9.e+-]+/); w = substr($0, RSTART + 7, RLENGTH - 7) + 0
		if (s == warm) { n0 = n; w0 = w }
		if (s > warm) { n1 = n; w1 = w }
	}
	END { if (w1 > w0 && n0 > 0) printf "%.1f\n", (n1 - n0) / (w1 - w0); else print 0 }' "$1"
}

# macs MODEL: multiply-accumulates a sample, from rv-train-gpu -v
macs() {
	rv-train-gpu -v -q --device cpu -m "$1" --classes 1000 --max-steps 1 \
	    -b 2 < <(rv-decode -q --limit 2 --channels 3 \
	    "$data/train-images-idx3-ubyte.gz" \
	    "$data/train-labels-idx1-ubyte.gz" | rv-augment -q "resize size=$size") \
	    2>&1 >/dev/null | sed -n 's/.* \([0-9.e+]*\) MMAC a sample.*/\1/p'
}

torch_ok=0
if [ "$device" = cuda ] && "$py" -c 'import torch, torchvision, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	torch_ok=1
fi

json=$out/results.jsonl
: > "$json"
printf '%-9s %-5s %-5s %10s %8s %8s %9s %10s\n' model prec input "images/s" \
    "TFLOP/s" "of peak" "vs torch" "wait" | tee "$out/table.txt"
for m in $models; do
	mm=$(macs "$m")
	for p in $precs; do
		popt=(--precision "$p")
		[ "$device" = cuda ] || popt=()
		tr=0
		if [ "$torch_ok" = 1 ]; then
			tr=$("$py" "$here/gpu_torch.py" --model "$m" --precision "$p" \
			    --batch "$batch" --steps "$steps" --warm "$warm" 2>/dev/null |
			    sed -n 's/.*"images_per_s": *\([0-9.]*\).*/\1/p')
			tr=${tr:-0}
		fi
		ins="file pipe tuned"
		[ "$device" = cuda ] || ins="file pipe"
		for input in $ins; do
			log=$out/$m-$p-$input.log
			topt=()
			[ "$input" = tuned ] && topt=(--autotune)
			if [ "$input" != pipe ]; then
				rv-train-gpu -q --device "$device" "${popt[@]}" \
				    "${topt[@]}" -m "$m" \
				    --classes 1000 --lr 0.01 --max-steps "$steps" \
				    --log "$log" --log-every 10 "${files[@]}" \
				    > "$out/$m-$p-$input.sum"
			else
				cat "${files[@]}" | rv-train-gpu -q --device "$device" \
				    "${popt[@]}" -m "$m" --classes 1000 --lr 0.01 \
				    --max-steps "$steps" --log "$log" --log-every 10 \
				    > "$out/$m-$p-$input.sum"
			fi
			r=$(rate "$log")
			wt=$(sed -n 's/^wait .*(\([0-9.]*\)%.*/\1/p' "$out/$m-$p-$input.sum")
			pk=$(peak "$p")
			read -r tf ofpk vs < <(awk -v r="$r" -v mm="$mm" -v pk="$pk" \
			    -v tr="$tr" 'BEGIN {
				tf = 6 * mm * 1e6 * r / 1e12
				printf "%.1f %s %s\n", tf,
				    (pk > 0 ? sprintf("%.0f%%", 100 * tf / pk) : "?"),
				    (tr > 0 ? sprintf("%.2fx", r / tr) : "-") }')
			printf '%-9s %-5s %-5s %10s %8s %8s %9s %9s%%\n' "$m" "$p" \
			    "$input" "$r" "$tf" "$ofpk" "$vs" "${wt:-?}" |
			    tee -a "$out/table.txt"
			printf '{"model":"%s","precision":"%s","input":"%s","autotune":%s,"images_per_s":%s,"tflops":%s,"peak_tflops":%s,"torch_images_per_s":%s,"gpu":"%s"}\n' \
			    "$m" "$p" "${input/tuned/file}" \
			    "$([ "$input" = tuned ] && echo true || echo false)" \
			    "$r" "$tf" "$pk" "$tr" "$gpu" >> "$json"
			case $input in
			file) rfile=$r ;;
			pipe) rpipe=$r ;;
			tuned) rtuned=$r ;;
			esac
		done
		awk -v f="$rfile" -v p="$rpipe" 'BEGIN { if (f > 0 && p > 0)
		    printf "%-9s %-5s pipe costs %.1f%% of the file rate (target <= 5%%)\n",
		    "", "", 100 * (f - p) / f }' | tee -a "$out/table.txt"
		[ "$device" = cuda ] && awk -v f="$rfile" -v t="$rtuned" 'BEGIN {
		    if (f > 0 && t > 0) printf "%-9s %-5s --autotune: %.2fx the heuristics'"'"' rate\n",
		    "", "", t / f }' | tee -a "$out/table.txt"
		[ "$torch_ok" = 1 ] && printf '%-9s %-5s %-5s %10s\n' "$m" "$p" torch "$tr" |
		    tee -a "$out/table.txt"
	done
done
echo "gpu: $gpu; MACs from rv-train-gpu -v; results in $out" >&2
