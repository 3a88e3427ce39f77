#!/usr/bin/env bash
# Scale-out benchmark: what one rank of a data-parallel job costs when each
# rank decodes its own part of a sharded dataset of JPEG tars (WebDataset
# style: key.jpg + key.cls), for 1, 2 and 4 ranks.  Per rank: peak memory
# (ru_maxrss) and bytes read (/proc/self/io rchar), both from rv-decode's
# -v summary; images/s (wall, per rank and for the whole job) and images
# per CPU second (rv-decode's user + system time, by /usr/bin/time).
#   A   rv-decode --shard r/n shards/*.tar          file shards: each rank
#       lists every tar's headers, then reads only its own tars
#   B   cat shards/*.tar | rv-decode --shard r/n -  the baseline, measured
#       in the same run: one stream on stdin falls back to sample shards
#       (every n-th sample, every byte read and held by every rank), which
#       is what --shard did over many tars before file sharding
#   C   A and B with --max-side 256 (a 224-pixel training pipeline), at
#       BENCH_C_RANKS rank counts
#   D   A and B with --encoded (no decoding: reading and framing alone)
# Every rank runs rv-decode -j 1 -o /dev/null, the n ranks of a job
# concurrently (one core each, as on a node; n=4 oversubscribes a 2-core
# machine).  Each configuration runs once untimed (warm-up and check: the
# ids and labels of all the ranks' outputs, read by rv-inspect --dump, must
# be the dataset's, each once, or the benchmark fails), then BENCH_REPEAT
# times timed, the configurations interleaved.
#
# The dataset (bench/out/scale-out/shards/, built once, deterministic):
# bench/photos.sh's 300 inet JPEGs, each BENCH_COPIES times under distinct
# keys, in an order drawn from a fixed-seed generator (so every tar mixes
# the classes), in BENCH_SHARDS tars of equal sample count.
#
# Environment: RV_BUILD (build dir, default build), BENCH_REPEAT (timed runs
# per configuration, default 3), BENCH_RANKS ("1 2 4"), BENCH_C_RANKS
# ("2"), BENCH_COPIES (4), BENCH_SHARDS (16), BENCH_COLD (0; 1 adds the E
# rows: D cold, each rank alone after the tars are dropped from the page
# cache, with the bytes the disk gave), BENCH_LAYOUT (the shard counts of
# the large layouts that bench/scale-layout.sh runs last, "1024 8192";
# empty: none).  Prints one table, then the ratios; a target missed
# prints MISSED but does not fail the run.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/out/scale-out
photos=$here/out/photos
bin=$root/${RV_BUILD:-build}/bin
rv=$bin/rv-decode
inspect=$bin/rv-inspect
repeat=${BENCH_REPEAT:-3}
read -r -a nranks <<<"${BENCH_RANKS:-1 2 4}"
read -r -a cranks <<<"${BENCH_C_RANKS:-2}"	# rank counts of the C rows
copies=${BENCH_COPIES:-4}
nshards=${BENCH_SHARDS:-16}
side=256	# --max-side of the C rows
seed=20261129	# of the dataset's order
overhead_target=2048	# bytes of listing a member, at most (A's read target)
cold=${BENCH_COLD:-0}	# 1: the E rows too
# The stream level is the default one (0 to pipes and /dev/null).
unset RV_LEVEL

die() {
	echo "scale-out.sh: $*" >&2
	exit 1
}

if [ ! -x /usr/bin/time ]; then
	[ "$(id -u)" -eq 0 ] ||
	    die "/usr/bin/time is missing: install it with 'sudo apt-get install time'"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >&2
fi
for b in "$rv" "$inspect"; do
	[ -x "$b" ] || die "'$b' is not built: run make (RV_BUILD picks the build directory)"
done

# --- the dataset ----------------------------------------------------------------
bash "$here/photos.sh" "$photos"
recipe="v2 copies=$copies shards=$nshards seed=$seed photos=$(cat "$photos/.done")"

# build_shards: write $out/shards/train-NNNN.tar and $out/manifest.tsv (id,
# label, source file, tar).  A sample's id is its position in the listing
# (tars in order, keys sorted in each), which is k: keys are %06d of k.
build_shards() {
	local stage=$out/stage j c k id label src t
	local -a classes
	echo "scale-out.sh: building the shards in '$out/shards'" >&2
	rm -rf "$out/shards" "$stage" "$out/manifest.tsv"
	mkdir -p "$out/shards" "$stage"
	mapfile -t classes < <(find "$photos/inet" -mindepth 1 -maxdepth 1 \
	    -type d -printf '%f\n' | sort)
	for ((c = 0; c < ${#classes[@]}; c++)); do
		find "$photos/inet/${classes[c]}" -name '*.jpg' -type f | sort |
		    awk -v c="$c" '{ print $0 "\t" c }'
	done >"$stage/images"
	# MINSTD (exact in awk's doubles), Fisher-Yates over COPIES x images.
	awk -F'\t' -v copies="$copies" -v shards="$nshards" -v seed="$seed" '
	function rnd() { s = (s * 48271) % 2147483647; return s / 2147483647 }
	{ path[NR - 1] = $1; cls[NR - 1] = $2 }
	END {
		m = NR; total = m * copies; s = seed % 2147483647
		for (k = 0; k < total; k++)
			p[k] = k
		for (k = total - 1; k > 0; k--) {
			j = int(rnd() * (k + 1)); t = p[k]; p[k] = p[j]; p[j] = t
		}
		for (k = 0; k < total; k++) {
			src = p[k] % m
			printf "%d\t%d\t%s\t%d\n", k, cls[src], path[src],
			    int(k * shards / total)
		}
	}' "$stage/images" >"$stage/manifest.tsv"
	for ((j = 0; j < nshards; j++)); do
		mkdir "$stage/$j"
	done
	while IFS=$'\t' read -r id label src j; do
		printf -v k '%06d' "$id"
		ln -s "$src" "$stage/$j/$k.jpg"
		printf '%s\n' "$label" >"$stage/$j/$k.cls"
		printf '%s\n%s\n' "$k.cls" "$k.jpg" >>"$stage/$j.list"
	done <"$stage/manifest.tsv"
	# --hard-dereference: an image that comes again (a second link to the
	# same file) must be a file again, not a hard link, which rv-decode
	# skips (links in an archive are not followed).
	for ((j = 0; j < nshards; j++)); do
		t=$out/shards/$(printf 'train-%04d.tar' "$j")
		tar --format=ustar --owner=0 --group=0 --numeric-owner \
		    --mode=0644 --mtime=@0 --dereference --hard-dereference \
		    -C "$stage/$j" -cf "$t" -T "$stage/$j.list"
	done
	mv "$stage/manifest.tsv" "$out/manifest.tsv"
	rm -rf "$stage"
	printf '%s\n' "$recipe" >"$out/shards/.done"
}

if [ ! -f "$out/shards/.done" ] || [ ! -f "$out/manifest.tsv" ] ||
    [ "$(cat "$out/shards/.done")" != "$recipe" ]; then
	build_shards
fi
tars=("$out"/shards/train-*.tar)
[ "${#tars[@]}" -eq "$nshards" ] || die "expected $nshards tars in '$out/shards'"
total=$(wc -l <"$out/manifest.tsv")
members=$((2 * total))
data_bytes=$(stat -c %s "${tars[@]}" | awk '{ s += $1 } END { print s }')
data_sha=$(cat "${tars[@]}" | sha256sum | cut -c1-16)

# --- running the ranks ------------------------------------------------------------
# The E rows: the block device under the shards, whose sectors read
# (/proc/diskstats) count what a cold rank fetched from the disk.
blk=
if [ "$cold" -eq 1 ]; then
	blk=$(findmnt -no SOURCE -T "$out/shards" 2>/dev/null || true)
	blk=${blk##*/}
	if [ -z "$blk" ] || ! awk -v d="$blk" '$3 == d { f = 1 } END { exit !f }' \
	    /proc/diskstats; then
		die "BENCH_COLD=1: no block device in /proc/diskstats under '$out/shards'"
	fi
fi
dev_sectors() {
	awk -v d="$blk" '$3 == d { print $6 }' /proc/diskstats
}
# drop_cache: the tars out of the page cache (posix_fadvise DONTNEED, by
# GNU dd; no root needed, nothing else dropped).
drop_cache() {
	local f
	for f in "${tars[@]}"; do
		dd if="$f" iflag=nocache count=0 status=none
	done
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
# One line per rank of a timed run: mode n rep rank wall samples readMB
# rssMB img/s img/cpu-s deviceMB (fields 5-11; deviceMB for E only)
: >"$tmp/ranks"
# One line per timed run, the whole job: mode n rep wall samples img/s
: >"$tmp/jobs"

# run_rank MODE N R CHECK: rank R of N; writes "status t0 t1" to $tmp/t.R,
# the -v summary to $tmp/e.R, rv-decode's user and system CPU seconds to
# $tmp/c.R and, with CHECK 1, the dump to $tmp/d.R.
run_rank() {
	local mode=$1 n=$2 r=$3 check=$4 st=0 t0 t1
	local -a dec=(/usr/bin/time -f '%U %S' -o "$tmp/c.$r" "$rv")
	local -a args=(-q -v -j 1 --shard "$r/$n")
	case $mode in
	C*) args+=(--max-side "$side") ;;
	D* | E*) args+=(--encoded) ;;
	esac
	t0=$EPOCHREALTIME
	if [ "$check" -eq 1 ]; then
		case $mode in
		*A) "${dec[@]}" "${args[@]}" "${tars[@]}" 2>"$tmp/e.$r" |
		    "$inspect" --dump >"$tmp/d.$r" || st=$? ;;
		*B) cat "${tars[@]}" | "${dec[@]}" "${args[@]}" - 2>"$tmp/e.$r" |
		    "$inspect" --dump >"$tmp/d.$r" || st=$? ;;
		esac
	else
		case $mode in
		*A) "${dec[@]}" "${args[@]}" -o /dev/null "${tars[@]}" \
		    2>"$tmp/e.$r" || st=$? ;;
		*B) cat "${tars[@]}" | "${dec[@]}" "${args[@]}" -o /dev/null - \
		    2>"$tmp/e.$r" || st=$? ;;
		esac
	fi
	t1=$EPOCHREALTIME
	echo "$st $t0 $t1" >"$tmp/t.$r"
}

# run_job MODE N REP: the N ranks at once; REP 0 is the untimed check.
run_job() {
	local mode=$1 n=$2 rep=$3 check=0 r st a b n_s rd rss u sy dev sum=0
	local first='' last='' want
	[ "$rep" -eq 0 ] && check=1
	rm -f "$tmp"/[tedcv].*
	if [[ $mode == E* ]]; then
		# Cold, one rank at a time, as if each had a node of its own.
		for ((r = 0; r < n; r++)); do
			drop_cache
			a=$(dev_sectors)
			run_rank "$mode" "$n" "$r" "$check"
			b=$(dev_sectors)
			echo "$(((b - a) * 512))" >"$tmp/v.$r"
		done
	else
		for ((r = 0; r < n; r++)); do
			run_rank "$mode" "$n" "$r" "$check" &
		done
		wait
	fi
	for ((r = 0; r < n; r++)); do
		read -r st a b <"$tmp/t.$r"
		if [ "$st" -ne 0 ]; then
			echo "scale-out.sh: $mode rank $r/$n failed (exit $st):" >&2
			sed 's/^/    /' "$tmp/e.$r" >&2
			status=1
			return 0
		fi
		if [ "$n" -gt 1 ]; then
			case $mode in
			*A) want="shard $r/$n: its share of the files" ;;
			*B) want="shard $r/$n: every N-th sample" ;;
			esac
			if ! grep -q "^rv-decode: $want" "$tmp/e.$r"; then
				echo "scale-out.sh: $mode rank $r/$n: expected '$want':" >&2
				sed 's/^/    /' "$tmp/e.$r" >&2
				status=1
			fi
		fi
		n_s='' rd='' rss=''
		read -r n_s rd rss < <(sed -n 's/^rv-decode: \([0-9]*\) samples in .*, \([0-9.]*\) MB read, \([0-9.]*\) MB peak memory$/\1 \2 \3/p' "$tmp/e.$r") || true
		[ -n "${rss:-}" ] || die "no -v summary from rv-decode: $(cat "$tmp/e.$r")"
		read -r u sy < <(tail -1 "$tmp/c.$r")
		dev=-1
		[ ! -f "$tmp/v.$r" ] || dev=$(cat "$tmp/v.$r")
		sum=$((sum + n_s))
		if [ -z "$first" ] || awk -v x="$a" -v y="$first" 'BEGIN { exit !(x < y) }'; then
			first=$a
		fi
		if [ -z "$last" ] || awk -v x="$b" -v y="$last" 'BEGIN { exit !(x > y) }'; then
			last=$b
		fi
		[ "$check" -eq 1 ] ||
		    awk -v a="$a" -v b="$b" -v l="$mode $n $rep $r" -v s="$n_s" \
		    -v rd="$rd" -v rss="$rss" -v u="$u" -v sy="$sy" -v v="$dev" 'BEGIN {
			c = u + sy
			print l, b - a, s, rd, rss, s / (b - a), (c > 0 ? s / c : 0),
			    v / 1e6
		}' >>"$tmp/ranks"
	done
	if [ "$sum" -ne "$total" ]; then
		echo "scale-out.sh: $mode n=$n: $sum samples over the ranks, expected $total" >&2
		status=1
	fi
	if [ "$check" -eq 1 ]; then
		# The union of the ranks' (id, label) pairs must be the dataset's,
		# each once.
		for ((r = 0; r < n; r++)); do
			awk -F'\t' 'NR > 1 && $3 == "sample" { print $5 "\t" $6 }' "$tmp/d.$r"
		done | sort -n >"$tmp/ids"
		if ! cut -f1,2 "$out/manifest.tsv" | cmp -s - "$tmp/ids"; then
			echo "scale-out.sh: $mode n=$n: the ranks' ids and labels are not the dataset's (< dataset, > ranks):" >&2
			cut -f1,2 "$out/manifest.tsv" | diff - "$tmp/ids" | head -5 >&2 || true
			status=1
		else
			checked="$checked $mode/$n"
		fi
	elif [[ $mode != E* ]]; then
		awk -v a="$first" -v b="$last" -v l="$mode $n $rep" -v s="$sum" \
		    'BEGIN { print l, b - a, s, s / (b - a) }' >>"$tmp/jobs"
	fi
}

modes=(A B CA CB DA DB)
[ "$cold" -eq 0 ] || modes+=(EA EB)
declare -A label=([A]="A files" [B]="B stdin" [CA]="C files -m$side"
    [CB]="C stdin -m$side" [DA]="D files enc" [DB]="D stdin enc"
    [EA]="E files cold" [EB]="E stdin cold")
checked=
t_start=$EPOCHREALTIME
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# Rep 0 of every configuration first (the check, and the page cache warm),
# then the timed repeats, modes interleaved so that load from others falls
# on A and B alike.
for ((rep = 0; rep <= repeat; rep++)); do
	for n in "${nranks[@]}"; do
		for m in "${modes[@]}"; do
			case $m in
			C*) [[ " ${cranks[*]} " == *" $n "* ]] || continue ;;
			esac
			run_job "$m" "$n" "$rep"
		done
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
t_all=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')

# --- the table ----------------------------------------------------------------------
# spread FILE MODE N FIELD FMT and med FILE MODE N FIELD: the median
# (min-max), or the median alone, of FIELD over FILE's lines of MODE and N.
# shellcheck source=bench/stats.bash
. "$here/stats.bash"
# Fields: of $tmp/ranks, and of $tmp/jobs (J_).
F_SAMPLES=6 F_READ=7 F_RSS=8 F_RATE=9 F_CORE=10 F_DEV=11 J_RATE=6

data_mb=$(awk -v b="$data_bytes" 'BEGIN { printf "%.1f", b / 1e6 }')
echo "# scale-out benchmark: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
echo "# dataset: $total samples ($((total / copies)) inet JPEGs x $copies) in $nshards tars, $data_mb MB, $members members; sha256 of the tars ${data_sha}..."
echo "# A: rv-decode -q -v -j 1 --shard r/n -o /dev/null shards/train-*.tar"
echo "# B: cat shards/train-*.tar | rv-decode -q -v -j 1 --shard r/n -o /dev/null -   (baseline)"
echo "# C: the same with --max-side $side; D: with --encoded (no decoding: the reading alone)"
echo "# the ranks of a job run concurrently, one core each ($(nproc) cores here)"
echo "# per rank, median (min-max) over ranks and $repeat timed runs: read = rchar, RSS ="
echo "# ru_maxrss (MB = 1e6 bytes), both from rv-decode -v; img/s = the rank's samples /"
echo "# its wall time; img/cpu-s = samples / rv-decode's user+sys CPU s (per core; moves"
echo "# far less than wall time when others load the cores); of data = read / dataset"
echo "# bytes; B/member = (read - data/n) / members (A: the listing of every tar);"
echo "# job img/s = all samples / the slowest rank's wall time"
echo "# load before: $load0"
fmt='%-15s %2s %6s %-19s %7s %8s %-19s %-16s %-16s %s\n'
# shellcheck disable=SC2059
printf "$fmt" mode n img/rk "read MB/rank" "of data" B/member "RSS MB/rank" \
    "img/s/rank" "img/cpu-s/rank" "job img/s"
for m in "${modes[@]}"; do
	[[ $m != E* ]] || continue
	for n in "${nranks[@]}"; do
		rd=$(med "$tmp/ranks" "$m" "$n" "$F_READ")
		[ "$rd" != "-" ] || continue
		# shellcheck disable=SC2059
		printf "$fmt" "${label[$m]}" "$n" \
		    "$(med "$tmp/ranks" "$m" "$n" "$F_SAMPLES")" \
		    "$(spread "$tmp/ranks" "$m" "$n" "$F_READ" '%.1f')" \
		    "$(awk -v r="$rd" -v d="$data_bytes" 'BEGIN { printf "%.3f", r * 1e6 / d }')" \
		    "$(awk -v r="$rd" -v d="$data_bytes" -v n="$n" -v k="$members" -v m="$m" \
		    'BEGIN { if (m ~ /A$/) printf "%.0f", (r * 1e6 - d / n) / k; else print "-" }')" \
		    "$(spread "$tmp/ranks" "$m" "$n" "$F_RSS" '%.1f')" \
		    "$(spread "$tmp/ranks" "$m" "$n" "$F_RATE" '%.0f')" \
		    "$(spread "$tmp/ranks" "$m" "$n" "$F_CORE" '%.0f')" \
		    "$(spread "$tmp/jobs" "$m" "$n" "$J_RATE" '%.0f')"
	done
done
echo "# load after: $load1; the whole benchmark $t_all s"
if [ "$cold" -eq 1 ]; then
	echo "# E (BENCH_COLD=1): D's commands with the tars dropped from the page cache"
	echo "# (dd iflag=nocache) before each rank, the ranks one at a time as if each had"
	echo "# a node of its own; dev MB = read from /dev/$blk during the rank (diskstats:"
	echo "# what the kernel fetched, readahead included; others' reads would count too)"
	efmt='%-15s %2s %6s %-19s %-19s %8s %-16s %s\n'
	# shellcheck disable=SC2059
	printf "$efmt" mode n img/rk "read MB/rank" "dev MB/rank" "dev/data" \
	    "img/s/rank" "img/cpu-s/rank"
	for m in EA EB; do
		for n in "${nranks[@]}"; do
			# shellcheck disable=SC2059
			printf "$efmt" "${label[$m]}" "$n" \
			    "$(med "$tmp/ranks" "$m" "$n" "$F_SAMPLES")" \
			    "$(spread "$tmp/ranks" "$m" "$n" "$F_READ" '%.1f')" \
			    "$(spread "$tmp/ranks" "$m" "$n" "$F_DEV" '%.1f')" \
			    "$(awk -v r="$(med "$tmp/ranks" "$m" "$n" "$F_DEV")" \
			    -v d="$data_bytes" 'BEGIN { printf "%.3f", r * 1e6 / d }')" \
			    "$(spread "$tmp/ranks" "$m" "$n" "$F_RATE" '%.0f')" \
			    "$(spread "$tmp/ranks" "$m" "$n" "$F_CORE" '%.0f')"
		done
	done
fi
echo

# --- ratios -------------------------------------------------------------------------
# ratio X Y: X / Y, two decimals.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf (b > 0 ? "%.2fx" : "-"), a / b }'
}
echo "# file shards / sample shards (medians, same n): A / B, C files / C stdin ..."
echo "# (E: the disk bytes instead of job img/s, the ranks running one at a time)"
for pair in "A B A/B" "CA CB C-files/C-stdin" "DA DB D-files/D-stdin" \
    "EA EB E-files/E-stdin"; do
	read -r x y name <<<"$pair"
	for n in "${nranks[@]}"; do
		[ "$(med "$tmp/ranks" "$x" "$n" "$F_READ")" != "-" ] || continue
		last="job img/s"
		[[ $x != E* ]] || last="disk bytes"
		printf '  %-18s n=%s  read %s  RSS %s  img/s/rank %s  img/cpu-s/rank %s  %s %s\n' \
		    "$name" "$n" \
		    "$(ratio "$(med "$tmp/ranks" "$x" "$n" "$F_READ")" "$(med "$tmp/ranks" "$y" "$n" "$F_READ")")" \
		    "$(ratio "$(med "$tmp/ranks" "$x" "$n" "$F_RSS")" "$(med "$tmp/ranks" "$y" "$n" "$F_RSS")")" \
		    "$(ratio "$(med "$tmp/ranks" "$x" "$n" "$F_RATE")" "$(med "$tmp/ranks" "$y" "$n" "$F_RATE")")" \
		    "$(ratio "$(med "$tmp/ranks" "$x" "$n" "$F_CORE")" "$(med "$tmp/ranks" "$y" "$n" "$F_CORE")")" \
		    "$last" "$(if [[ $x == E* ]]; then
			ratio "$(med "$tmp/ranks" "$x" "$n" "$F_DEV")" "$(med "$tmp/ranks" "$y" "$n" "$F_DEV")"
		else
			ratio "$(med "$tmp/jobs" "$x" "$n" "$J_RATE")" "$(med "$tmp/jobs" "$y" "$n" "$J_RATE")"
		fi)"
	done
done
echo "# scaling: job img/s at n ranks / at 1 rank (2 cores: 2 at most)"
for m in "${modes[@]}"; do
	[[ $m != E* ]] || continue
	one=$(med "$tmp/jobs" "$m" 1 "$J_RATE")
	[ "$one" != "-" ] || continue
	line=
	for n in "${nranks[@]}"; do
		[ "$n" -gt 1 ] || continue
		[ "$(med "$tmp/jobs" "$m" "$n" "$J_RATE")" != "-" ] || continue
		line="$line  n=$n $(ratio "$(med "$tmp/jobs" "$m" "$n" "$J_RATE")" "$one")"
	done
	printf '  %-16s%s\n' "${label[$m]}" "$line"
done
echo "# target: a file-shard rank reads at most data/n + $overhead_target B a member of the listing"
for m in A CA DA EA; do
	for n in "${nranks[@]}"; do
		rd=$(med "$tmp/ranks" "$m" "$n" "$F_READ")
		[ "$rd" != "-" ] || continue
		awk -v r="$rd" -v d="$data_bytes" -v n="$n" -v k="$members" \
		    -v t="$overhead_target" -v l="${label[$m]}" 'BEGIN {
			lim = d / n + t * k
			printf "  %-16s n=%s  %.1f MB read, limit %.1f MB: %s\n", l, n,
			    r, lim / 1e6, (r * 1e6 <= lim ? "met" : "MISSED")
		}'
	done
done
if [ "$status" -eq 0 ]; then
	echo "# check: the ranks' ids and labels are the dataset's, each once:${checked}"
else
	echo "# check: FAILED (see above)"
fi
# The large layouts (rank 0 of 64 over thousands of small shards, with an
# index and without): bench/scale-layout.sh, unless BENCH_LAYOUT is empty.
if [ -n "${BENCH_LAYOUT-1024 8192}" ]; then
	echo
	BENCH_LAYOUT="${BENCH_LAYOUT-1024 8192}" bash "$here/scale-layout.sh" ||
	    status=1
fi
exit "$status"
