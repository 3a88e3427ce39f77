#!/usr/bin/env bash
# Misses per trained batch when shrinking follows refurbishing (issue 20):
# the main job's pipeline, rv-refurbish | rv-score | rv-batch |
# rv-train-gpu with the trainer's feedback back to rv-score through a
# FIFO, in two compositions over seeds:
#   draws   rv-refurbish --batch 128 | rv-score | rv-batch -b 128: a keep
#           draw per sample (floor 0.3 + 0.7 p), the main job until
#           2 Dec 2026
#   budget  rv-refurbish --batch 256 | rv-score --budget 0.5 |
#           rv-batch -b 128: half of every rv-refurbish group, misses and
#           cache hits in proportion (rv-score(1), strata), the main job
# Both: cnn-small on Fashion-MNIST on the CPU, partial 'randaugment n=1
# m=5' reused 3 times, final 'random_crop size=28 padding=2; flip', E
# epochs, cosine schedule, evaluation on the test set at the end.  Per
# run: the misses (samples without RV_F_CACHED) of every full batch of
# 128 after the first epoch (rv-batch without a shuffle buffer makes
# batches of consecutive samples; tests/bats/balance.bats checks that), as
# mean, standard deviation, min and max; the kept share; the test
# accuracy; gradient computations; wall seconds.  Then, per composition,
# the mean and the spread (min-max) over seeds.
#
# Builds nothing: expects `make`.  Environment: RV_BUILD (build dir,
# default build), BAL_SEEDS (default "0 1 2"), BAL_EPOCHS (E, at least 2,
# default 5), BAL_LIMIT (the first N training images, at least 256;
# default all 60000), BAL_THREADS (the trainer's -j, default nproc),
# BAL_OUT (the output directory, default bench/out/balance/).  Output:
# per composition C and seed S, C-S.misses (EPOCH MISSES a batch),
# C-S.log (the trainer's), C-S.score (rv-score -v).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${BAL_OUT:-$here/out/balance}
build=${RV_BUILD:-build}
case $build in
/*) bin=$build/bin ;;
*) bin=$root/$build/bin ;;
esac
read -r -a seeds <<<"${BAL_SEEDS:-0 1 2}"
epochs=${BAL_EPOCHS:-5}
limit=${BAL_LIMIT:-}
threads=${BAL_THREADS:-$(nproc)}
fmnist=/usr/share/datasets/fashion-mnist
unset RV_LEVEL

die() {
	echo "balance.sh: $*" >&2
	exit 1
}
# shellcheck source=scripts/seeds.bash
. "$root/scripts/seeds.bash"	# seeds_check; jfield (jsonl.bash)

for v in epochs threads; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] ||
	    die "BAL_${v^^}: '${!v}': not a positive integer"
done
[ "$epochs" -ge 2 ] ||
    die "BAL_EPOCHS: at least 2: the misses are counted after the first epoch"
[ -z "$limit" ] || { [[ $limit =~ ^[1-9][0-9]*$ ]] && [ "$limit" -ge 256 ]; } ||
    die "BAL_LIMIT: '$limit': at least 256, two batches of 128 (--budget 0.5 keeps one)"
msg=$(seeds_check BAL_SEEDS "${seeds[@]}") || die "$msg"
for p in rv-decode rv-refurbish rv-score rv-batch rv-train-gpu rv-inspect; do
	[ -x "$bin/$p" ] || die "'$bin/$p' is missing: run 'make' first"
done
[ -f "$fmnist/train-images-idx3-ubyte.gz" ] ||
    die "'$fmnist' is missing: apt-get install dataset-fashion-mnist"
PATH="$bin:$PATH"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

lim=()
[ -z "$limit" ] || lim=(--limit "$limit")
rv-decode -q "${lim[@]}" "$fmnist/train-images-idx3-ubyte.gz" \
    "$fmnist/train-labels-idx1-ubyte.gz" > "$tmp/train.rvs"
rv-decode -q "$fmnist/t10k-images-idx3-ubyte.gz" \
    "$fmnist/t10k-labels-idx1-ubyte.gz" > "$tmp/test.rvs"

echo "# misses per trained batch: cnn-small on Fashion-MNIST" \
    "(${limit:-60000} training images), $epochs epochs, reuse 3," \
    "batch 128, trainer -j $threads; seeds ${seeds[*]}"
echo "# machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' \
    /proc/cpuinfo | head -1); load before the runs:" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"

# misses_per_batch: rv-inspect --dump lines in, "EPOCH MISSES" out for
# every full batch of 128 consecutive samples of an epoch.
misses_per_batch() {
	awk -F'\t' '$3 == "sample" {
		if (!any || $4 != ep) { any = 1; ep = $4; n = 0; m = 0 }
		n++
		if ($12 !~ /cached/) m++
		if (n == 128) { print ep, m; n = 0; m = 0 }
	}'
}

# run C S: one pipeline, composition C, seed S.
run() {
	local c=$1 s=$2 group score t0 t1
	case $c in
	draws) group=128 score=() ;;
	budget) group=256 score=(--budget 0.5) ;;
	esac
	rm -f "$tmp/fb"
	mkfifo "$tmp/fb"
	t0=$(date +%s.%N)
	rv-refurbish -q -j 1 --partial 'randaugment n=1 m=5' \
	    --final 'random_crop size=28 padding=2; flip' --reuse 3 \
	    --epochs "$epochs" --batch "$group" --seed "$s" "$tmp/train.rvs" |
	    rv-score -v --feedback "$tmp/fb" --seed "$s" "${score[@]}" \
		2> "$out/$c-$s.score" |
	    tee "$tmp/kept.rvs" |
	    rv-batch -q -b 128 |
	    rv-train-gpu -q -j "$threads" -m cnn-small --schedule cosine \
		--epochs "$epochs" --seed "$s" --eval "$tmp/test.rvs" \
		--feedback "$tmp/fb" --log "$out/$c-$s.log" > /dev/null
	t1=$(date +%s.%N)
	rv-inspect -q --dump "$tmp/kept.rvs" | misses_per_batch \
	    > "$out/$c-$s.misses"
	rm -f "$tmp/kept.rvs"
	awk -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.1f\n", t1 - t0 }' \
	    > "$out/$c-$s.wall"
}

# row C S: "C S mean sd min max kept_pct acc grads wall" of one run.
row() {
	local c=$1 s=$2 acc grads kept
	read -r acc grads < <(jfield summary eval_acc grads < "$out/$c-$s.log" |
	    tail -n 1)
	kept=$(sed -n 's/^rv-score: \([0-9]*\) seen, \([0-9]*\) kept.*/\2 \1/p' \
	    "$out/$c-$s.score" | awk '{ printf "%.1f", 100 * $1 / $2 }')
	awk -v c="$c" -v s="$s" -v kept="$kept" \
	    -v acc="$acc" -v grads="$grads" \
	    -v wall="$(cat "$out/$c-$s.wall")" '
	    $1 > 0 { n++; x += $2; xx += $2 * $2
		if (n == 1 || $2 < lo) lo = $2
		if (n == 1 || $2 > hi) hi = $2 }
	    END { mu = x / n; sd = sqrt(xx / n - mu * mu)
		printf "%-7s %4d %6.2f %5.2f %4d %4d %7s %7.2f %9d %7.1f\n",
		    c, s, mu, sd, lo, hi, kept, 100 * acc, grads, wall }' \
	    "$out/$c-$s.misses"
}

for s in "${seeds[@]}"; do
	for c in draws budget; do
		echo "# run: $c, seed $s" >&2
		run "$c" "$s"
	done
done

printf '%-7s %4s %6s %5s %4s %4s %7s %7s %9s %7s\n' comp seed mean sd \
    min max kept% acc% grads wall_s
for c in draws budget; do
	for s in "${seeds[@]}"; do
		row "$c" "$s"
	done
done | tee "$tmp/rows"
echo "# over seeds: mean (min-max)"
for c in draws budget; do
	awk -v c="$c" '$1 == c {
	    n++; for (i = 3; i <= 10; i++) { v[i] += $i
		if (n == 1 || $i < lo[i]) lo[i] = $i
		if (n == 1 || $i > hi[i]) hi[i] = $i } }
	    END { printf "%-7s sd of misses %.2f (%.2f-%.2f), range %d-%d; " \
		"kept %.1f%%; accuracy %.2f%% (%.2f-%.2f); grads %d; " \
		"wall %.0f s (%.0f-%.0f)\n", c, v[4] / n, lo[4], hi[4],
		lo[5], hi[6], v[7] / n, v[8] / n, lo[8], hi[8], v[9] / n,
		v[10] / n, lo[10], hi[10] }' "$tmp/rows"
done
