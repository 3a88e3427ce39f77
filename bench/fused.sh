#!/usr/bin/env bash
# Fused crop decoding (rv-augment(1), "Fused crop decoding"): what the
# fast default costs in pixels and what it buys in time, on the photo sets
# of bench/photos.sh, all in one run.
#   1. difference: each set through `rv-augment 'rrc size=S'` twice, from
#      the same encoded stream and seed: the default (a crop that allows
#      it is decoded at 1/2, 1/4 or 1/8 DCT scale) and --exact (full scale,
#      the bytes of torchvision's RandomResizedCrop on the PIL image,
#      tests/bats/augment.bats).  Per sample, the mean and the max of
#      |fast - exact| over its pixels; reported over the samples that were
#      scaled (the others are equal, and checked to be), per seed.
#   2. speed: CPU seconds of rv-decode --encoded | rv-augment -j1 from
#      the files (both processes), the default and --exact, against the
#      same crops' distribution unfused (decoded whole in rv-augment) and
#      against decoded pixels (rv-decode | rv-augment).
#
# Environment: RV_BUILD (build dir, default build), BENCH_SEEDS (default
# "0 1 2"), BENCH_SIZE (the crop's output side, default 224),
# BENCH_EPOCHS (epochs of the inet set per timed run, default 6).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/out
bin=$root/${RV_BUILD:-build}/bin
seeds=${BENCH_SEEDS:-0 1 2}
size=${BENCH_SIZE:-224}
epochs=${BENCH_EPOCHS:-6}
py=/usr/bin/python3	# the interpreter with numpy (make deps)
unset RV_LEVEL

die() {
	echo "fused.sh: $*" >&2
	exit 1
}

bash "$here/photos.sh" "$out/photos"
for p in rv-decode rv-augment; do
	[ -x "$bin/$p" ] || die "'$bin/$p' is missing: run 'make' first"
done
"$py" -c 'import numpy, zstandard' 2>/dev/null ||
    die "no numpy or zstandard for $py: run make deps"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "# fused crop decoding: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' \
    /proc/cpuinfo | head -1)"
echo "# 1. difference of the default from --exact (= torchvision), rrc size=$size"
printf '%-6s %4s %8s %7s %7s %9s %8s\n' set seed samples scaled differ \
    mean_abs max_abs
for set in full inet; do
	"$bin/rv-decode" -q --encoded "$out/photos/$set" -o "$tmp/$set.rvs"
	for seed in $seeds; do
		"$bin/rv-augment" -q -v -j 2 --seed "$seed" "rrc size=$size" \
		    "$tmp/$set.rvs" -o "$tmp/fast.rvs" 2>"$tmp/v"
		scaled=$(sed -n 's/.*, \([0-9]*\) of them below full scale.*/\1/p' \
		    "$tmp/v")
		"$bin/rv-augment" -q -j 2 --seed "$seed" --exact \
		    "rrc size=$size" "$tmp/$set.rvs" -o "$tmp/exact.rvs"
		PYTHONPATH=$root/python "$py" - "$tmp/fast.rvs" \
		    "$tmp/exact.rvs" "$set" "$seed" "${scaled:-0}" <<'PY'
import sys
import numpy as np
import rvstream

fast, exact, name, seed, scaled = sys.argv[1:]
a = [np.asarray(b.images)[0] for b in rvstream.Reader(fast, batch_size=1)]
b = [np.asarray(b.images)[0] for b in rvstream.Reader(exact, batch_size=1)]
assert len(a) == len(b) and a, (len(a), len(b))
means, maxes = [], []
for x, y in zip(a, b):
    d = np.abs(x.astype(np.int16) - y.astype(np.int16))
    if d.any():
        means.append(d.mean())
        maxes.append(int(d.max()))
# a crop decoded at full scale equals --exact byte for byte: only the
# scaled ones may differ
assert len(means) <= int(scaled), (len(means), scaled)
print("%-6s %4s %8d %7s %7d %9s %8s" % (
    name, seed, len(a), scaled, len(means),
    "%.2f" % np.mean(means) if means else "-",
    max(maxes) if maxes else "-"))
PY
	done
done
echo "#    scaled: crops decoded below full scale (rv-augment -v); differ:"
echo "#    samples not equal to --exact (only scaled ones may be); mean_abs:"
echo "#    the mean over those samples of the per-sample mean |fast - exact|"
echo "#    in grey levels (0-255, every channel); max_abs: the largest one"

echo
echo "# 2. CPU seconds of both processes, from the files x $epochs epochs,"
echo "#    rrc size=$size, -j1 each, best of 3"

# cpu CMD: the best user + system seconds of 3 runs of a shell command.
cpu() {
	local best='' u s
	for _ in 1 2 3; do
		/usr/bin/time -f '%U %S' -o "$tmp/time" bash -c "$1" ||
		    die "'$1' failed"
		read -r u s <"$tmp/time"
		best=$(awk -v a="$best" -v u="$u" -v s="$s" \
		    'BEGIN { t = u + s; print (a == "" || t < a) ? t : a }')
	done
	echo "$best"
}
printf '%-6s %-52s %7s %10s %9s\n' set run cpu_s img/cpu-s "vs pixels"
for set in inet full; do
	n=$(( $(find "$out/photos/$set" -name '*.jpg' | wc -l) * epochs ))
	dec="'$bin/rv-decode' -q -j1 --epochs $epochs '$out/photos/$set'"
	aug="'$bin/rv-augment' -q -j1"
	declare -A T=()
	T[fast]=$(cpu "$dec --encoded | $aug 'rrc size=$size' >/dev/null")
	T[exact]=$(cpu "$dec --encoded | $aug --exact 'rrc size=$size' >/dev/null")
	T[whole]=$(cpu "$dec --encoded | $aug 'flip p=0; rrc size=$size' >/dev/null")
	T[pixels]=$(cpu "$dec | $aug 'rrc size=$size' >/dev/null")
	for k in fast exact whole pixels; do
		case $k in
		fast) name="--encoded | rv-augment (default: fused, scaled)" ;;
		exact) name="--encoded | rv-augment --exact (fused, full scale)" ;;
		whole) name="--encoded | rv-augment, crop not first (unfused)" ;;
		pixels) name="rv-decode | rv-augment (decoded pixels)" ;;
		esac
		printf '%-6s %-52s %7.2f %10.1f %8.2fx\n' "$set" "$name" \
		    "${T[$k]}" \
		    "$(awk -v n="$n" -v t="${T[$k]}" 'BEGIN { print n / t }')" \
		    "$(awk -v a="${T[pixels]}" -v t="${T[$k]}" \
		    'BEGIN { print a / t }')"
	done
done
echo "#    unfused: 'flip p=0; rrc size=$size', crops of the same law decoded whole"
echo "#    in rv-augment (a first op that never applies keeps rrc second)"
