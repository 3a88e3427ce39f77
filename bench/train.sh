#!/usr/bin/env bash
# Training benchmark: rv-train-gpu on the CPU against PyTorch, the same
# model (cnn-small), data (Fashion-MNIST), optimiser (SGD, momentum 0.9,
# weight decay 5e-4, cosine lr from 0.05), batch (128), normalisation ((x/255 -
# 0.5)/0.5, no augmentation), epochs and threads.  rv runs as a whole
# pipeline, rv-decode --shuffle | rv-batch | rv-train-gpu, and its epoch
# time (the log's epoch_s) includes decoding, batching and the pipes;
# PyTorch (bench/train_torch.py) holds the data in memory as tensors and
# times its training loop alone.  So the comparison is conservative for rv.
# Per epoch 1 and E: epoch seconds, test accuracy (all 10000 test images),
# the time ratio and the accuracy difference, rv's wait fraction; the rv
# trainer's page faults and peak RSS from /usr/bin/time -v (when present).
# Targets, printed PASS or MISS (a miss does not fail the run): rv epoch
# time <= PyTorch's (epoch E), test accuracy within 0.5 points of
# PyTorch's (epoch E), rv >= 90% after 3 epochs.
#
# Builds nothing: expects `make` to have built the programs.  Environment:
# RV_BUILD (build dir, default build), BENCH_EPOCHS (E, default 3),
# BENCH_THREADS (T, default nproc), BENCH_LR (default 0.05),
# BENCH_SCHEDULE (cosine or const, default cosine), BENCH_SEED
# (default 0), BENCH_REPORT (1: run nothing, print the table of the last
# run's logs again).  Logs and a plot (scripts/rv-plot) go to
# bench/out/train/: rv.log, rv.summary, rv.time, torch.jsonl, torch.log
# (torch's lines in the trainer's log format), curves.png.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/out/train
build=${RV_BUILD:-build}
case $build in
/*) bin=$build/bin ;;
*) bin=$root/$build/bin ;;
esac
epochs=${BENCH_EPOCHS:-3}
threads=${BENCH_THREADS:-$(nproc)}
lr=${BENCH_LR:-0.05}
schedule=${BENCH_SCHEDULE:-cosine}
case $schedule in
const | cosine) ;;
*) echo "train.sh: BENCH_SCHEDULE: '$schedule': const or cosine" >&2
   exit 2 ;;
esac
seed=${BENCH_SEED:-0}
report=${BENCH_REPORT:-0}
batch=128
fmnist=/usr/share/datasets/fashion-mnist
python=/usr/bin/python3
unset RV_LEVEL

die() {
	echo "train.sh: $*" >&2
	exit 1
}

# --- set-up -----------------------------------------------------------------
for v in epochs threads seed; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "BENCH_${v^^}: '${!v}': not an integer"
done
if [ "$epochs" -lt 1 ] || [ "$threads" -lt 1 ]; then
	die "BENCH_EPOCHS and BENCH_THREADS must be at least 1"
fi
[[ $lr =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] ||
    die "BENCH_LR: '$lr': not a number"
for p in rv-decode rv-batch rv-train-gpu; do
	[ -x "$bin/$p" ] || die "'$bin/$p' is missing: run 'make' first"
done
[ -f "$fmnist/train-images-idx3-ubyte.gz" ] ||
    die "'$fmnist' is missing: apt-get install dataset-fashion-mnist"
"$python" -c 'import torch' 2>/dev/null ||
    die "$python has no torch: the PyTorch baseline cannot run"
timev=
if [ -x /usr/bin/time ] && /usr/bin/time -v true 2>/dev/null; then
	timev=/usr/bin/time
fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=scripts/jsonl.bash
. "$root/scripts/jsonl.bash"

echo "# training benchmark: cnn-small on Fashion-MNIST, epochs $epochs," \
    "threads $threads, lr $lr, batch $batch, seed $seed"
if [ "$report" = 1 ]; then
	echo "# BENCH_REPORT=1: no run; the table of the logs in '$out'"
else
	echo "# machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' \
	    /proc/cpuinfo | head -1); load before the run:" \
	    "$(cut -d' ' -f1-3 /proc/loadavg)"
fi

# --- rv -----------------------------------------------------------------------
# rv-decode reads the IDX files (it takes no rv stream as input) and is
# the epoch driver; decoding 60000 IDX images costs ~0.1 s an epoch.
rvlog=$out/rv.log
decode=(rv-decode -q -j 1 --epochs "$epochs" --shuffle --seed "$seed"
    "$fmnist/train-images-idx3-ubyte.gz" "$fmnist/train-labels-idx1-ubyte.gz")
batcher=(rv-batch -q -b "$batch")
train=(rv-train-gpu -q -m cnn-small -j "$threads" --device cpu
    --lr "$lr" --momentum 0.9 --wd 5e-4 --schedule "$schedule"
    --epochs "$epochs"
    --mean 0.5 --std 0.5 --seed "$seed" --eval "$tmp/test.rvs"
    --log "$rvlog")
echo "# rv:    ${decode[*]/#$fmnist\//} | ${batcher[*]} |"
shown=("${train[@]/#$tmp\//}")
echo "#        ${shown[*]/#$root\//}"
echo "# torch: $python bench/train_torch.py --epochs $epochs --threads" \
    "$threads --lr $lr --seed $seed --batch $batch --schedule $schedule"
if [ "$report" != 1 ]; then
	# The test set, decoded once, for --eval.
	"$bin/rv-decode" -q -j 1 "$fmnist/t10k-images-idx3-ubyte.gz" \
	    "$fmnist/t10k-labels-idx1-ubyte.gz" -o "$tmp/test.rvs" ||
	    die "rv-decode of the Fashion-MNIST test set failed"
	rm -f "$rvlog" "$out/rv.time" "$out/rv.wall" "$out/torch.jsonl"
	timer=()
	[ -z "$timev" ] || timer=("$timev" -v -o "$out/rv.time")
	t0=$(date +%s.%N)
	if ! "$bin/${decode[0]}" "${decode[@]:1}" |
	    "$bin/${batcher[0]}" "${batcher[@]:1}" |
	    "${timer[@]}" "$bin/${train[0]}" "${train[@]:1}" \
	    >"$out/rv.summary" 2>"$tmp/rv.err"; then
		sed 's/^/    /' "$tmp/rv.err" >&2
		die "the rv pipeline failed"
	fi
	calc "b - a" -v a="$t0" -v b="$(date +%s.%N)" >"$out/rv.wall"
	if [ -s "$tmp/rv.err" ]; then
		sed 's/^/# rv-train-gpu stderr: /' "$tmp/rv.err"
	fi

	# --- PyTorch --------------------------------------------------------
	if ! "$python" "$here/train_torch.py" --epochs "$epochs" \
	    --threads "$threads" --lr "$lr" --seed "$seed" --batch "$batch" \
	    --schedule "$schedule" \
	    >"$out/torch.jsonl" 2>"$tmp/torch.err"; then
		sed 's/^/    /' "$tmp/torch.err" >&2
		die "the PyTorch baseline failed"
	fi
fi

# --- the table ----------------------------------------------------------------
# rv: epoch_s and wait_frac from the epoch lines, accuracy from the last
# eval line of each epoch (the one at its end).
declare -A RV_S RV_W RV_ACC T_S T_ACC
while IFS=$'\t' read -r e s w; do
	RV_S[$e]=$s
	RV_W[$e]=$w
done < <(jfield epoch epoch epoch_s wait_frac <"$rvlog")
while IFS=$'\t' read -r e a; do
	RV_ACC[$e]=$a
done < <(jfield eval epoch eval_acc <"$rvlog")
while IFS=$'\t' read -r e s a; do
	T_S[$e]=$s
	T_ACC[$e]=$a
done < <(jfield - epoch train_s test_acc <"$out/torch.jsonl")
for ((e = 0; e < epochs; e++)); do
	if [ -z "${RV_S[$e]:-}" ] || [ -z "${RV_ACC[$e]:-}" ]; then
		die "'$rvlog': no epoch or eval line for epoch $e"
	fi
	[ -n "${T_S[$e]:-}" ] ||
	    die "'$out/torch.jsonl': no line for epoch $e"
done

echo "# epoch_s: rv = its whole pipeline (decode, batch, pipes, training;"
echo "#   the trainer's epoch_s); torch = its training loop only, the data"
echo "#   already in memory as tensors (no loading): conservative for rv"
echo "# acc: test accuracy (%) on the 10000 test images after the epoch"
printf '%-6s %9s %9s %9s %8s %9s %9s %8s\n' epoch rv_s torch_s rv/torch \
    rv_acc torch_acc diff_pts rv_wait
rows=(0)
[ "$epochs" -gt 1 ] && rows+=($((epochs - 1)))
for e in "${rows[@]}"; do
	printf '%-6s %9.2f %9.2f %8.2fx %8.2f %9.2f %+9.2f %8.3f\n' \
	    $((e + 1)) "${RV_S[$e]}" "${T_S[$e]}" \
	    "$(calc "a / b" -v a="${RV_S[$e]}" -v b="${T_S[$e]}")" \
	    "$(calc "a * 100" -v a="${RV_ACC[$e]}")" \
	    "$(calc "a * 100" -v a="${T_ACC[$e]}")" \
	    "$(calc "(a - b) * 100" -v a="${RV_ACC[$e]}" -v b="${T_ACC[$e]}")" \
	    "${RV_W[$e]}"
done
IFS=$'\t' read -r s_wall s_wait < <(jfield summary wall wait_frac <"$rvlog")
echo "# rv: whole run ${s_wall}s by its log ($(cat "$out/rv.wall" \
    2>/dev/null || echo -)s pipeline" \
    "wall, evaluations included), wait_frac $s_wait"
echo "# torch: $(calc "$(jfield - train_s <"$out/torch.jsonl" |
    paste -sd+)")s of training loops; $(jfield - cpu_s \
    <"$out/torch.jsonl" | tail -1) CPU s, whole process"
if [ -s "$out/rv.time" ]; then
	awk -F': ' '
	/User time/ { cpu += $2 }
	/System time/ { cpu += $2 }
	/Maximum resident set size/ { rss = $2 }
	/Major \(requiring I\/O\) page faults/ { maj = $2 }
	/Minor \(reclaiming a frame\) page faults/ { min = $2 }
	END {
		printf "# rv-train-gpu (/usr/bin/time -v): %.1f CPU s, " \
		    "max RSS %.0f MB, %d minor and %d major page faults\n",
		    cpu, rss / 1024, min, maj
	}' "$out/rv.time"
elif [ -z "$timev" ]; then
	echo "# rv-train-gpu faults and RSS: not measured (/usr/bin/time is" \
	    "missing: apt-get install time)"
else
	echo "# rv-train-gpu faults and RSS: not measured (no '$out/rv.time')"
fi

# --- targets ----------------------------------------------------------------
last=$((epochs - 1))
verdict() { if "$@"; then echo PASS; else echo MISS; fi; }
echo "target: rv epoch $epochs time <= torch's:" \
    "${RV_S[$last]}s vs ${T_S[$last]}s:" \
    "$(verdict ge "${T_S[$last]}" "${RV_S[$last]}")"
d=$(calc "(a - b) * 100" -v a="${RV_ACC[$last]}" -v b="${T_ACC[$last]}")
echo "target: rv test accuracy within 0.5 points of torch's (epoch" \
    "$epochs): $d points: $(verdict ge 0.5 "$(calc "d < 0 ? -d : d" \
    -v d="$d")")"
if [ "$epochs" -ge 3 ]; then
	a=$(calc "a * 100" -v a="${RV_ACC[2]}")
	echo "target: rv test accuracy >= 90% after 3 epochs: $a%" \
	    "(torch $(calc "a * 100" -v a="${T_ACC[2]}")%):" \
	    "$(verdict ge "$a" 90)"
else
	echo "target: rv test accuracy >= 90% after 3 epochs: n/a" \
	    "(only $epochs epoch(s))"
fi

# --- the curves ---------------------------------------------------------------
# torch's lines as rv-train-gpu log lines (epoch and eval events), so that
# rv-plot draws both runs on one epoch axis.
awk -v n=60000 -v b="$batch" '
function val(k,    s) {
	match($0, "\"" k "\"[ \t]*:[ \t]*")
	s = substr($0, RSTART + RLENGTH)
	match(s, /^[^,} \t]*/)
	return substr(s, 1, RLENGTH)
}
{
	e = val("epoch")
	wall += val("train_s")
	step = (e + 1) * int((n + b - 1) / b)
	printf "{\"event\":\"epoch\",\"step\":%d,\"epoch\":%d,\"loss\":%s," \
	    "\"acc\":%s,\"samples\":%d,\"grads\":%d,\"wall\":%.3f}\n",
	    step, e, val("train_loss"), val("train_acc"), (e + 1) * n,
	    (e + 1) * n, wall
	printf "{\"event\":\"eval\",\"step\":%d,\"epoch\":%d," \
	    "\"eval_loss\":%s,\"eval_acc\":%s,\"samples\":%d,\"grads\":%d," \
	    "\"wall\":%.3f}\n", step, e, val("test_loss"), val("test_acc"),
	    (e + 1) * n, (e + 1) * n, wall
}' "$out/torch.jsonl" >"$out/torch.log"
[ "$report" = 1 ] ||
    echo "# load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
if "$root/scripts/rv-plot" --x epoch --title "cnn-small, Fashion-MNIST" \
    -o "$out/curves.png" rv="$rvlog" torch="$out/torch.log" 2>"$tmp/plot"
then
	echo "# curves: $out/curves.png (scripts/rv-plot --x epoch)"
else
	echo "# curves: not drawn: $(cat "$tmp/plot")"
fi
