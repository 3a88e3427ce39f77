#!/usr/bin/env bash
# Decode benchmark: rv-decode against two baselines measured in the same
# run, on real photographs (bench/photos.sh): tjloop (bench/tjloop.c, the
# raw TurboJPEG loop, files in memory) and Pillow (bench/pil_decode.py,
# Image.open().convert('RGB'), files in memory).  rv-decode's figures
# include everything a real run does: start-up, listing, file reads,
# decoding, framing, zstd compression and writing (to -o /dev/null).
#
# Environment: RV_BUILD (build dir, default build), BENCH_SECONDS (target
# seconds per run, default 1.5), BENCH_REPEAT (best of N, default 2),
# PYTHON (an interpreter with Pillow).  Prints a table, then the ratios.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/out
rv=$root/${RV_BUILD:-build}/bin/rv-decode
secs=${BENCH_SECONDS:-1.5}
repeat=${BENCH_REPEAT:-2}
# "Default level" means what a user gets, not what the shell may have set.
unset RV_LEVEL

die() {
	echo "decode.sh: $*" >&2
	exit 1
}

# --- set-up -----------------------------------------------------------------
bash "$here/photos.sh" "$out/photos"
if [ ! -x /usr/bin/time ]; then
	[ "$(id -u)" -eq 0 ] ||
	    die "/usr/bin/time is missing: install it with 'sudo apt-get install time'"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >&2
fi
cc -std=c17 -O2 -Wall -D_POSIX_C_SOURCE=200809L -o "$out/tjloop" \
    "$here/tjloop.c" -lturbojpeg
py=
for p in ${PYTHON:+"$PYTHON"} /usr/bin/python3 python3; do
	if "$p" -c 'import PIL' 2>/dev/null; then
		py=$p
		break
	fi
done
[ -n "$py" ] || die "no python3 with Pillow: install python3-pil"
have_rv=1
if [ ! -x "$rv" ]; then
	echo "decode.sh: '$rv' is not built: rv-decode rows skipped" >&2
	have_rv=0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# --- measuring ----------------------------------------------------------------
# Results, keyed "set|name": images/s (wall), images per CPU second, minor
# faults per image, peak RSS (MB).
declare -A RATE CORE FLT RSS

# run_base KEY CMD...: a baseline that prints images= rate= loop_minflt=
# loop_cpu= for its timed loop (files already in memory).
run_base() {
	local key=$1 i line images rate cpu flt best=
	shift
	for ((i = 0; i < repeat; i++)); do
		line=$("$@")
		images=$(sed -n 's/.*images=\([0-9]*\).*/\1/p' <<<"$line")
		rate=$(sed -n 's/.*rate=\([0-9.]*\).*/\1/p' <<<"$line")
		cpu=$(sed -n 's/.*loop_cpu=\([0-9.]*\).*/\1/p' <<<"$line")
		flt=$(sed -n 's/.*loop_minflt=\([0-9]*\).*/\1/p' <<<"$line")
		if [ -z "$best" ] || awk -v a="$rate" -v b="$best" \
		    'BEGIN { exit !(a > b) }'; then
			best=$rate
			RATE[$key]=$rate
			CORE[$key]=$(awk -v n="$images" -v c="$cpu" \
			    'BEGIN { printf "%.1f", (c > 0 ? n / c : 0) }')
			FLT[$key]=$(awk -v n="$images" -v f="$flt" \
			    'BEGIN { printf "%.1f", f / n }')
			RSS[$key]=-
		fi
	done
	row "$key" "$images"
}

# run_rv KEY IMAGES DIR ARGS...: rv-decode DIR, timed whole, with
# /usr/bin/time for CPU, faults and RSS; checks the sample count.
run_rv() {
	local key=$1 images=$2 dir=$3 i t0 t1 u s f m n best=
	shift 3
	for ((i = 0; i < repeat; i++)); do
		t0=$EPOCHREALTIME
		if ! /usr/bin/time -f '%U %S %R %M' -o "$tmp/time" \
		    "$rv" -q -v -o /dev/null "$@" "$dir" 2>"$tmp/err"; then
			echo "decode.sh: rv-decode $* '$dir' failed:" >&2
			sed 's/^/    /' "$tmp/err" >&2
			status=1
			return 0
		fi
		t1=$EPOCHREALTIME
		[ -c /dev/null ] || die "rv-decode -o /dev/null replaced /dev/null"
		n=$(sed -n 's/^rv-decode: \([0-9]*\) samples.*/\1/p' "$tmp/err")
		if [ "$n" != "$images" ]; then
			echo "decode.sh: rv-decode $*: wrote '$n' samples," \
			    "expected $images:" >&2
			sed 's/^/    /' "$tmp/err" >&2
			status=1
			return 0
		fi
		read -r u s f m <"$tmp/time"
		local rate
		rate=$(awk -v n="$images" -v a="$t0" -v b="$t1" \
		    'BEGIN { printf "%.1f", n / (b - a) }')
		if [ -z "$best" ] || awk -v a="$rate" -v b="$best" \
		    'BEGIN { exit !(a > b) }'; then
			best=$rate
			RATE[$key]=$rate
			CORE[$key]=$(awk -v n="$images" -v c="$(awk -v u="$u" \
			    -v s="$s" 'BEGIN { print u + s }')" \
			    'BEGIN { printf "%.1f", (c > 0 ? n / c : 0) }')
			FLT[$key]=$(awk -v n="$images" -v f="$f" \
			    'BEGIN { printf "%.1f", f / n }')
			RSS[$key]=$(awk -v m="$m" 'BEGIN { printf "%.0f", m / 1024 }')
		fi
	done
	row "$key" "$images"
}

row() {
	printf '%-6s %-30s %7s %9s %11s %10s %7s\n' "${1%%|*}" "${1#*|}" "$2" \
	    "${RATE[$1]}" "${CORE[$1]}" "${FLT[$1]}" "${RSS[$1]}"
}

# val KEY: images/s of KEY, or images per CPU second for "core:KEY".
val() {
	case $1 in
	core:*) echo "${CORE[${1#core:}]:-}" ;;
	*) echo "${RATE[$1]:-}" ;;
	esac
}

# ratio LABEL A B [TARGET]: val A / val B, with a verdict against TARGET.
ratio() {
	local label=$1 target=${4:-} va vb r verdict=
	va=$(val "$2")
	vb=$(val "$3")
	if [ -z "$va" ] || [ -z "$vb" ]; then
		printf '  %-52s = %s\n' "$label" "n/a (not measured)"
		return 0
	fi
	r=$(awk -v a="$va" -v b="$vb" \
	    'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
	if [ -n "$target" ]; then
		if awk -v r="$r" -v t="$target" 'BEGIN { exit !(r >= t) }'; then
			verdict=" (target >= ${target}x: met)"
		else
			verdict=" (target >= ${target}x: MISSED)"
		fi
	fi
	printf '  %-52s = %sx%s\n' "$label" "$r" "$verdict"
}

files() {
	find "$1" -name '*.jpg' -type f | sort
}

# bench_set SET DIR HALF QUARTER: every row for one image set.  Passes are
# chosen from a quick tjloop probe so a full-size run lasts about $secs.
bench_set() {
	local set=$1 dir=$2 half=$3 quarter=$4 n probe passes images
	local -a fs
	mapfile -t fs < <(files "$dir")
	n=${#fs[@]}
	probe=$("$out/tjloop" -t 0.3 "${fs[@]}" |
	    sed -n 's/.*rate=\([0-9.]*\).*/\1/p')
	passes=$(awk -v r="$probe" -v n="$n" -v s="$secs" \
	    'BEGIN { p = int(r * s / n + 0.5); print (p < 1 ? 1 : p) }')
	images=$((n * passes))
	echo "# $set: $n files from '$dir', $passes passes = $images images per run"

	run_base "$set|tjloop" "$out/tjloop" -n "$passes" "${fs[@]}"
	run_base "$set|tjloop -m $half" "$out/tjloop" -m "$half" \
	    -n "$passes" "${fs[@]}"
	run_base "$set|tjloop -m $quarter" "$out/tjloop" -m "$quarter" \
	    -n "$passes" "${fs[@]}"
	run_base "$set|Pillow" "$py" "$here/pil_decode.py" --passes "$passes" \
	    "${fs[@]}"
	run_base "$set|Pillow draft $half" "$py" "$here/pil_decode.py" \
	    --max-side "$half" --passes "$passes" "${fs[@]}"
	run_base "$set|Pillow draft $quarter" "$py" "$here/pil_decode.py" \
	    --max-side "$quarter" --passes "$passes" "${fs[@]}"
	[ "$have_rv" -eq 1 ] || return 0
	run_rv "$set|rv -j1" "$images" "$dir" -j 1 --epochs "$passes"
	run_rv "$set|rv -j1 --level -7" "$images" "$dir" -j 1 --level -7 \
	    --epochs "$passes"
	run_rv "$set|rv -j2" "$images" "$dir" -j 2 --epochs "$passes"
	run_rv "$set|rv -j1 --max-side $half" "$images" "$dir" -j 1 \
	    --max-side "$half" --epochs "$passes"
	run_rv "$set|rv -j1 --max-side $quarter" "$images" "$dir" -j 1 \
	    --max-side "$quarter" --epochs "$passes"
}

report_set() {
	local s=$1 half=$2 quarter=$3
	echo "# $s: targets (per core: images per CPU second)"
	ratio "rv-decode -j1 / tjloop" "core:$s|rv -j1" "core:$s|tjloop" 0.9
	ratio "rv-decode -j1 / Pillow" "core:$s|rv -j1" "core:$s|Pillow" 2
	echo "# $s: same, wall-clock images/s"
	ratio "rv-decode -j1 / tjloop" "$s|rv -j1" "$s|tjloop"
	ratio "rv-decode -j1 / Pillow" "$s|rv -j1" "$s|Pillow"
	ratio "rv-decode -j2 / rv-decode -j1 (2 cores)" "$s|rv -j2" "$s|rv -j1"
	ratio "same, per core (1.00x: no parallel overhead)" "core:$s|rv -j2" \
	    "core:$s|rv -j1"
	ratio "rv-decode -j2 / Pillow (1 process)" "$s|rv -j2" "$s|Pillow"
	ratio "tjloop / Pillow" "core:$s|tjloop" "core:$s|Pillow"
	echo "# $s: zstd level (default is $default_level)"
	ratio "rv-decode --level -7 / default" "core:$s|rv -j1 --level -7" \
	    "core:$s|rv -j1"
	echo "# $s: DCT scaling (speed-up over full size; rv against tjloop)"
	local m
	for m in "$half" "$quarter"; do
		ratio "tjloop -m $m / tjloop" "$s|tjloop -m $m" "$s|tjloop"
		ratio "Pillow draft $m / Pillow" "$s|Pillow draft $m" "$s|Pillow"
		ratio "rv --max-side $m / rv" "$s|rv -j1 --max-side $m" "$s|rv -j1"
		ratio "rv --max-side $m / tjloop -m $m (per core)" \
		    "core:$s|rv -j1 --max-side $m" "core:$s|tjloop -m $m" 0.9
		ratio "rv --max-side $m / Pillow draft $m (per core)" \
		    "core:$s|rv -j1 --max-side $m" "core:$s|Pillow draft $m" 2
	done
}

default_level=1
if [ "$have_rv" -eq 1 ]; then
	default_level=$("$rv" --help | sed -n '/--level/s/.* or \([-0-9]*\))$/\1/p')
	default_level=${default_level:-?}
fi
echo "# decode benchmark: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' \
    /proc/cpuinfo | head -1), best of $repeat, ~${secs}s per run"
echo "# load before the run: $(cut -d' ' -f1-3 /proc/loadavg) (others'" \
    "work on these cores shows in img/s, much less in img/cpu-s)"
echo "# img/s: timed loop (baselines) or whole process (rv); img/cpu-s: per"
echo "# core; flt/img: minor page faults per image; RSS: peak MB (rv only)"
printf '%-6s %-30s %7s %9s %11s %10s %7s\n' set run images img/s \
    img/cpu-s flt/img RSS
bench_set inet "$out/photos/inet" 250 125
bench_set photo "$out/photos/full" 1280 640
echo
report_set inet 250 125
report_set photo 1280 640
exit "$status"
