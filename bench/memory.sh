#!/usr/bin/env bash
# Memory against dataset size for archives (issue 49): rv-decode reads the
# stored images of an uncompressed tar in a file by offset, and holds the
# images of a compressed one (or all, under --hold) in memory, encoded.
# Datasets: 1x, 4x and 16x (BENCH_SIZES) a set of 2,100 ImageNet-like
# photographs (BENCH_COPIES, default 7, copies of bench/photos.sh's 300
# JPEGs of longer side 500 under distinct keys: about the 2,000 photos and
# 88 MB of issue 49's set), as that many WebDataset-style tar shards of one
# set each, and the same shards gzipped.  For each size and form, median of BENCH_REPEAT runs
# (default 3) on a warm page cache, the pipelines alternating:
#   decode    rv-decode -q --encoded --shuffle -j1 SHARDS | cat
#   augment   rv-decode -q --encoded --shuffle -j1 SHARDS |
#             rv-augment -q -j2 'rrc size=224; flip; randaugment n=2 m=9
#             interp=bilinear' | cat
# peak RSS of rv-decode (/usr/bin/time) and images/s of the pipeline:
# the uncompressed shards read by offset (the default) and held (--hold,
# the path before issue 49: the baseline, measured in the same run); the
# gzipped ones with --cache-dir (bench/out/memory/cache) and held (the
# default).  Targets (issue 49), each printed with MET or MISSED: by offset
# and with --cache-dir, peak RSS at the largest size within 1.2x of the
# smallest's; by offset, at most 64 MB + 100 bytes a sample, and images/s
# of each pipeline at least 0.95x of held's at every size; the same bytes
# out as held (compared at the smallest size).  Ends 0 unless a run fails.
# Environment: RV_BUILD (default build), BENCH_SIZES (default "1 4 16"),
# BENCH_COPIES, BENCH_REPEAT.  Data in bench/out/memory/ (kept); the table in
# bench/out/memory/table.md.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/out/memory
bin=$root/${RV_BUILD:-build}/bin
read -r -a sizes <<<"${BENCH_SIZES:-1 4 16}"
repeat=${BENCH_REPEAT:-3}
copies=${BENCH_COPIES:-7}
spec='rrc size=224; flip; randaugment n=2 m=9 interp=bilinear'
unset RV_LEVEL

die() {
	echo "memory.sh: $*" >&2
	exit 1
}
for p in rv-decode rv-augment; do
	[ -x "$bin/$p" ] || die "'$bin/$p' is not built: run make"
done
[ -x /usr/bin/time ] || die "/usr/bin/time is missing: apt-get install time"
[ "${#sizes[@]}" -ge 2 ] || die "BENCH_SIZES: want two sizes at least"
for k in "${sizes[@]}"; do
	[[ $k =~ ^[1-9][0-9]*$ ]] || die "BENCH_SIZES: '$k': not a positive integer"
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT: '$repeat': not a positive integer"
[[ $copies =~ ^[1-9][0-9]*$ ]] || die "BENCH_COPIES: '$copies': not a positive integer"

bash "$here/photos.sh" "$out/photos" || die "bench/photos.sh failed"
mkdir -p "$out/cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- the shards: size k is k tars of one set each, keys prefixed by the
# shard and the copy (s003/c2/<class>/NN.jpg), and each tar gzipped.
photos_n=$(find "$out/photos/inet" -name '*.jpg' | wc -l)
[ "$photos_n" -gt 0 ] || die "no photographs in '$out/photos/inet'"
set_n=$((photos_n * copies))
shards_dir=$out/shards-x$copies
build_shard() {
	local i=$1 f j
	f=$shards_dir/s$(printf '%03d' "$1").tar
	[ -s "$f.gz" ] && return 0
	mkdir -p "$shards_dir"
	for ((j = 0; j < copies; j++)); do
		mkdir -p "$tmp/c/s$i/c$j"
		cp -r "$out/photos/inet/." "$tmp/c/s$i/c$j/"
	done
	tar --sort=name --mtime=@0 --owner=0 --group=0 -cf "$f.tmp" \
	    -C "$tmp/c" "s$i"
	rm -rf "$tmp/c/s$i"
	gzip -6 -n -c "$f.tmp" > "$f.gz.tmp"
	mv "$f.tmp" "$f"
	mv "$f.gz.tmp" "$f.gz"
}
max=0
for k in "${sizes[@]}"; do [ "$k" -gt "$max" ] && max=$k; done
for ((i = 0; i < max; i++)); do build_shard "$i"; done

shards() {	# shards K EXT: the first K shards' paths
	local i
	for ((i = 0; i < $1; i++)); do
		printf '%s\n' "$shards_dir/s$(printf '%03d' "$i").tar$2"
	done
}

# one KIND MODE K EXT: one run; prints "rss_kb images_per_s"
one() {
	local kind=$1 mode=$2 k=$3 ext=$4 t0 t1 n
	local -a files hold=()
	mapfile -t files < <(shards "$k" "$ext")
	case $mode in
	held) hold=(--hold) ;;
	cache) hold=(--cache-dir "$out/cache") ;;
	esac
	n=$((k * set_n))
	t0=$(date +%s.%N)
	if [ "$kind" = decode ]; then
		/usr/bin/time -f '%M' -o "$tmp/rss" "$bin/rv-decode" -q \
		    --encoded --shuffle -j1 "${hold[@]}" "${files[@]}" | cat >/dev/null
	else
		/usr/bin/time -f '%M' -o "$tmp/rss" "$bin/rv-decode" -q \
		    --encoded --shuffle -j1 "${hold[@]}" "${files[@]}" |
		    "$bin/rv-augment" -q -j2 "$spec" | cat >/dev/null
	fi
	t1=$(date +%s.%N)
	awk -v r="$(tail -1 "$tmp/rss")" -v n="$n" -v a="$t0" -v b="$t1" \
	    'BEGIN { printf "%d %.1f\n", r, n / (b - a) }'
}

median() {	# median of the numbers on stdin
	sort -g | awk '{ v[NR] = $1 } END {
	    printf "%s\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "# memory: rv-decode over 1 to ${max}x a set of $set_n photographs" \
    "(a tar shard each); median of $repeat; $(nproc) cores," \
    "$(date -u '+%Y-%m-%d %H:%M UTC')"
# warm the page cache
cat "$shards_dir"/* >/dev/null

declare -A rss ips
for k in "${sizes[@]}"; do
	for kind in decode augment; do
		for ext in "" .gz; do
			modes=(offset held)
			[ "$ext" = .gz ] && modes=(cache held)
			for ((r = 0; r < repeat; r++)); do
				for mode in "${modes[@]}"; do
					read -r kb is < <(one "$kind" "$mode" "$k" "$ext") ||
					    die "$kind $mode ${k}x$ext failed"
					echo "$kb" >>"$tmp/rss.$kind.$mode.$k$ext"
					echo "$is" >>"$tmp/ips.$kind.$mode.$k$ext"
				done
			done
			for mode in "${modes[@]}"; do
				key=$kind.$mode.$k$ext
				rss[$key]=$(median <"$tmp/rss.$key")
				ips[$key]=$(median <"$tmp/ips.$key")
			done
		done
	done
done

# the same bytes by offset as held
k=${sizes[0]}
mapfile -t files < <(shards "$k" "")
"$bin/rv-decode" -q --encoded --shuffle --epochs 2 "${files[@]}" -o "$tmp/a.rvs"
"$bin/rv-decode" -q --encoded --shuffle --epochs 2 --hold "${files[@]}" \
    -o "$tmp/b.rvs"
same=MISSED
cmp -s "$tmp/a.rvs" "$tmp/b.rvs" && same=MET

{
	echo "| size | samples | form | decode: peak RSS MB, by offset (tar) or --cache-dir (tar.gz) / held | images/s, the same (ratio) | augment: peak RSS MB, the same | images/s, the same (ratio) |"
	echo "| --: | --: | --- | --- | --- | --- | --- |"
	for k in "${sizes[@]}"; do
		for ext in "" .gz; do
			form=tar
			[ "$ext" = .gz ] && form=tar.gz
			row="| ${k}x | $((k * set_n)) | $form"
			for kind in decode augment; do
				o=$kind.offset.$k$ext h=$kind.held.$k$ext
				[ "$ext" = .gz ] && o=$kind.cache.$k$ext
				row+=$(awk -v a="${rss[$o]}" -v b="${rss[$h]}" \
				    -v i="${ips[$o]}" -v j="${ips[$h]}" 'BEGIN {
				    printf " | %.1f / %.1f | %.0f / %.0f (%.2fx)",
					a / 1024, b / 1024, i, j, i / j }')
			done
			echo "$row |"
		done
	done
} | tee "$out/table.md"

lo=${sizes[0]} hi=$max
for m in offset cache; do
	x=
	[ "$m" = cache ] && x=.gz
	awk -v a="${rss[decode.$m.$lo$x]}" -v b="${rss[decode.$m.$hi$x]}" \
	    -v c="${rss[augment.$m.$lo$x]}" -v d="${rss[augment.$m.$hi$x]}" \
	    -v m="$m" -v lo="$lo" -v hi="$hi" 'BEGIN {
		r1 = b / a; r2 = d / c
		printf "target: peak RSS, %s, at %sx within 1.2x of %sx: decode %.2fx, augment %.2fx: %s\n",
		    m == "cache" ? "tar.gz with --cache-dir" : "tar by offset", hi, lo,
		    r1, r2, r1 <= 1.2 && r2 <= 1.2 ? "MET" : "MISSED" }'
done
awk -v b="${rss[decode.offset.$hi]}" -v d="${rss[augment.offset.$hi]}" \
    -v n="$((hi * set_n))" 'BEGIN {
	bound = (64 * 1048576 + 100 * n) / 1024
	printf "target: peak RSS by offset <= 64 MB + 100 bytes a sample (%.1f MB): %.1f, %.1f MB: %s\n",
	    bound / 1024, b / 1024, d / 1024, b <= bound && d <= bound ? "MET" : "MISSED" }'
worst=$(for k in "${sizes[@]}"; do for kind in decode augment; do
	awk -v i="${ips[$kind.offset.$k]}" -v j="${ips[$kind.held.$k]}" \
	    'BEGIN { printf "%.3f\n", i / j }'
done; done | sort -g | head -1)
awk -v w="$worst" 'BEGIN { printf "target: images/s by offset >= 0.95x held at every size: worst %.2fx: %s\n",
    w, (w >= 0.95 ? "MET" : "MISSED") }'
echo "target: the same bytes by offset as held (${sizes[0]}x, two shuffled epochs): $same"
