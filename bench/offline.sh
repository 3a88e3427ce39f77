#!/usr/bin/env bash
# Offline epochs on disk (rv-encode(1)): what an epoch of refurbished
# 224x224 photographs costs to store, and to read back at training time,
# for each way of storing it, all in one run.
#   1. bytes: rv-refurbish --partial 'rrc size=224; randaugment n=2 m=9'
#      --final flip --reuse 3 writes E epochs of the photo set
#      (bench/photos.sh, 300 ImageNet-like JPEGs), as one file an epoch at
#      the file level (zstd -1 of the pixels: "raw", rv-refurbish's own
#      output), and through rv-encode as PNG (lossless), JPEG q95 and q90.
#      Per seed: KB a sample an epoch, and the ratio to raw.
#   2. CPU: seconds per 1000 samples (user + system, every process, best
#      of 3) to store the epochs (rv-encode -j 1 from rv-refurbish's
#      output) and to read them back as batches at training time
#      (rv-augment -j 1 '' | rv-batch, the decode; rv-batch alone for raw),
#      against the standard pipeline from the source JPEGs, measured in
#      the same run: rv-decode --encoded | rv-augment -j 1 'rrc size=224;
#      randaugment n=2 m=9; flip' | rv-batch.
#   3. partials stored once: rv-refurbish --partials-out (each partial
#      the one time the schedule makes it: N + (E-1) N / 3 of them) as
#      raw, PNG, JPEG q95 and q90 (once-raw ... once-q90); per seed, KB a sample an epoch and the
#      ratio to raw epoch files (1.); then the CPU seconds per 1000
#      samples to serve the epochs at training time, rv-refurbish -j 1
#      --from-partials --final flip | rv-batch, against the standard
#      pipeline of 2.
#
# Environment: RV_BUILD (build dir, default build; relative to the
# checkout or absolute), BENCH_SEEDS (default
# "0 1 2"), BENCH_EPOCHS (E, default 6), OFFLINE_PHOTOS (a folder of
# images to use instead of bench/photos.sh's set).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/out
case ${RV_BUILD:-build} in
/*) bin=$RV_BUILD/bin ;;
*) bin=$root/${RV_BUILD:-build}/bin ;;
esac
seeds=${BENCH_SEEDS:-0 1 2}
epochs=${BENCH_EPOCHS:-6}
partial='rrc size=224; randaugment n=2 m=9'
final='flip'
unset RV_LEVEL

die() {
	echo "offline.sh: $*" >&2
	exit 1
}

case $epochs in
'' | *[!0-9]* | 0) die "BENCH_EPOCHS '$epochs': not a count of epochs" ;;
esac
for p in rv-decode rv-augment rv-refurbish rv-encode rv-batch; do
	[ -x "$bin/$p" ] || die "'$bin/$p' is missing: run 'make' first"
done
command -v /usr/bin/time >/dev/null || die "no /usr/bin/time: apt-get install time"
if [ -n "${OFFLINE_PHOTOS:-}" ]; then
	photos=$OFFLINE_PHOTOS
	[ -d "$photos" ] || die "OFFLINE_PHOTOS '$photos': no such folder"
else
	bash "$here/photos.sh" "$out/photos"
	photos=$out/photos/inet
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin/rv-decode" -q --encoded "$photos" -o "$tmp/src.rvs"
n=$("$bin/rv-inspect" --dump "$tmp/src.rvs" | awk -F'\t' '$3 == "sample"' | wc -l)
[ "$n" -gt 0 ] || die "'$photos': no images"

# cpu CMD: the best user + system seconds of 3 runs of a shell command.
cpu() {
	local best="" u s
	for _ in 1 2 3; do
		/usr/bin/time -f '%U %S' -o "$tmp/time" bash -o pipefail -c "$1" ||
		    die "failed: $1"
		read -r u s <"$tmp/time"
		best=$(awk -v a="$best" -v b="$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')" \
		    'BEGIN { print (a == "" || b < a) ? b : a }')
	done
	echo "$best"
}

# bytes FILE...: their sizes summed
bytes() {
	cat "$@" | wc -c
}

echo "# offline epochs: $n photographs, $epochs epochs of 224x224, $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
echo "# 1. bytes a sample an epoch (KB), and the ratio to raw"
printf '%-5s %-10s %9s %7s\n' seed store KB ratio
for seed in $seeds; do
	mkdir -p "$tmp/raw"
	rm -f "$tmp"/raw/*
	"$bin/rv-refurbish" -q --seed "$seed" --partial "$partial" \
	    --final "$final" --reuse 3 --epochs "$epochs" "$tmp/src.rvs" \
	    -o "$tmp/raw/%03d.rvs"
	raw=$(bytes "$tmp"/raw/*.rvs)
	for store in raw png jpeg-q95 jpeg-q90; do
		case $store in
		raw) b=$raw ;;
		png) opts="--format png" ;;
		jpeg-q95) opts="--quality 95" ;;
		jpeg-q90) opts="--quality 90" ;;
		esac
		if [ "$store" != raw ]; then
			# shellcheck disable=SC2086
			cat "$tmp"/raw/*.rvs | "$bin/rv-encode" -q $opts \
			    -o "$tmp/$store.rvs"
			b=$(bytes "$tmp/$store.rvs")
		fi
		awk -v s="$seed" -v st="$store" -v b="$b" -v r="$raw" \
		    -v k="$((n * epochs))" \
		    'BEGIN { printf "%-5s %-10s %9.1f %7.3f\n", s, st, b / k / 1000, b / r }'
	done
done | tee "$tmp/bytes"

echo "# 2. CPU seconds per 1000 samples (best of 3), seed ${seeds##* }'s epochs: to store, and to read as batches at training time"
printf '%-10s %9s %9s %12s\n' store store_s read_s "read vs std"
k=$((n * epochs))
std=$(cpu "'$bin/rv-decode' -q --encoded --epochs $epochs --shuffle '$photos' | '$bin/rv-augment' -q -j 1 '$partial; $final' | '$bin/rv-batch' -q -b 64 > /dev/null")
for store in raw png jpeg-q95 jpeg-q90; do
	case $store in
	raw)
		w=-
		r=$(cpu "cat '$tmp'/raw/*.rvs | '$bin/rv-batch' -q -b 64 > /dev/null")
		;;
	*)
		opts=$([ "$store" = png ] && echo "--format png" || echo "--quality ${store#jpeg-q}")
		w=$(cpu "cat '$tmp'/raw/*.rvs | '$bin/rv-encode' -q -j 1 $opts > /dev/null")
		r=$(cpu "'$bin/rv-augment' -q -j 1 '' '$tmp/$store.rvs' | '$bin/rv-batch' -q -b 64 > /dev/null")
		;;
	esac
	awk -v st="$store" -v w="$w" -v r="$r" -v s="$std" -v k="$k" 'BEGIN {
	    printf "%-10s %9s %9.3f %12s\n", st,
		(w == "-" ? "-" : sprintf("%.3f", w / k * 1000)), r / k * 1000,
		(s > 0 ? sprintf("%.3f", r / s) : "-") }'
done
awk -v s="$std" -v k="$k" 'BEGIN { printf "%-10s %9s %9.3f %12.3f\n", "standard", "-", s / k * 1000, 1 }'

echo "# 3. partials stored once (--partials-out, r = 3): KB a sample an epoch, ratio to raw epoch files; CPU to serve them (--from-partials --final $final | rv-batch) per 1000 samples, best of 3, seed ${seeds##* }"
printf '%-5s %-10s %9s %7s %9s %12s\n' seed store KB ratio serve_s "serve vs std"
for seed in $seeds; do
	rm -rf "$tmp/raw" "$tmp"/parts-*
	mkdir -p "$tmp/raw"
	"$bin/rv-refurbish" -q --seed "$seed" --partial "$partial" \
	    --final "$final" --reuse 3 --epochs "$epochs" "$tmp/src.rvs" \
	    -o "$tmp/raw/%03d.rvs"
	raw=$(bytes "$tmp"/raw/*.rvs)
	for store in raw png q95 q90; do
		case $store in
		raw) opts="--format raw" ;;
		png) opts="--format png" ;;
		*) opts="--format jpeg --quality ${store#q}" ;;
		esac
		mkdir -p "$tmp/parts-$store"
		# shellcheck disable=SC2086
		"$bin/rv-refurbish" -q --seed "$seed" --partial "$partial" \
		    --reuse 3 --epochs "$epochs" $opts \
		    --partials-out "$tmp/parts-$store/%03d.rvs" "$tmp/src.rvs"
		b=$(bytes "$tmp/parts-$store"/*.rvs)
		r=-
		if [ "$seed" = "${seeds##* }" ]; then
			r=$(cpu "'$bin/rv-refurbish' -q -j 1 --from-partials '$tmp/parts-$store/%03d.rvs' --final '$final' | '$bin/rv-batch' -q -b 64 > /dev/null")
		fi
		awk -v s="$seed" -v st="once-$store" -v b="$b" -v raw="$raw" \
		    -v k="$((n * epochs))" -v r="$r" -v std="$std" 'BEGIN {
		    printf "%-5s %-10s %9.1f %7.3f %9s %12s\n", s, st,
			b / k / 1000, b / raw,
			(r == "-" ? "-" : sprintf("%.3f", r / k * 1000)),
			(r == "-" || !(std > 0) ? "-" : sprintf("%.3f", r / std)) }'
	done
done
