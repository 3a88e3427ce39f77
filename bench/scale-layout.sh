#!/usr/bin/env bash
# The large-layout part of the scale-out benchmark (bench/scale-out.sh runs
# it last; it runs alone too): what rank 0 of a 64-rank job pays before and
# while it reads its own shards, when the dataset is many small WebDataset
# shards, with an index (rv-index(5)) and without.
#   index    rv-decode --encoded -j 1 --shard 0/64 --index train.idx
#   listing  rv-decode --encoded -j 1 --shard 0/64 shards/*.tar   (baseline)
# For each layout (BENCH_LAYOUT shard counts, default "1024 8192"; each
# shard BENCH_LAYOUT_PER samples, default 4, of small JPEGs, 32x32): the
# bytes rank 0 read and the shard files it opened (strace -f: what its
# read calls returned, shared libraries' headers included; the distinct
# tars it opened, and those not its own), and the time from its launch to
# its first sample (a run without strace; a reader of its stream's zstd
# frames), median (min-max) of BENCH_REPEAT runs (default 5),
# the two commands alternating.  Rank 0's own shards are the first 1/64
# of them (equal shards; the index's order).  Targets (issue 34): with the
# index, bytes read <= 1.2x (its own shards + the index), no other shard
# opened, and the time to the first sample at 8192 shards within 1.2x of
# that at 1024.  A target missed prints MISSED; the run still ends 0
# unless a run failed.
# Environment: RV_BUILD (default build), BENCH_LAYOUT, BENCH_LAYOUT_PER,
# BENCH_REPEAT, PYTHON (default python3).  Builds in bench/out/scale-layout/ (kept).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/out/scale-layout
bin=$root/${RV_BUILD:-build}/bin
rv=$bin/rv-decode
py=${PYTHON:-python3}
read -r -a layouts <<<"${BENCH_LAYOUT:-1024 8192}"
per=${BENCH_LAYOUT_PER:-4}
repeat=${BENCH_REPEAT:-5}
ranks=64

die() {
	echo "scale-layout.sh: $*" >&2
	exit 1
}
[ -x "$rv" ] || die "'$rv' is not built: run make"
command -v strace >/dev/null ||
    die "strace is missing: apt-get install strace (it counts the files a rank opens)"
command -v convert >/dev/null || die "ImageMagick's convert is missing"

# --- the layouts: N tars of $per samples (key.jpg + key.cls), 16 images
# reused, each tar its own keys; built once per recipe.
build_layout() {
	local n=$1 d=$out/$1
	local recipe="v1 shards=$n per=$per"
	[ "$(cat "$d/.done" 2>/dev/null)" = "$recipe" ] && return 0
	echo "scale-layout.sh: building $n shards in '$d'" >&2
	rm -rf "$d"
	mkdir -p "$d/shards" "$out/img"
	local k
	for k in $(seq 0 15); do
		[ -s "$out/img/$k.jpg" ] || convert -size 32x32 xc: -seed "$k" \
		    +noise Random -quality 90 "$out/img/$k.jpg"
	done
	"$py" - "$out/img" "$d/shards" "$n" "$per" <<'EOF'
import io, sys, tarfile
img, dst, n, per = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
jpg = [open(f"{img}/{k}.jpg", "rb").read() for k in range(16)]
def add(t, name, data):
    i = tarfile.TarInfo(name)
    i.size, i.mtime, i.mode = len(data), 0, 0o644
    t.addfile(i, io.BytesIO(data))
for s in range(n):
    with tarfile.open(f"{dst}/train-{s:05d}.tar", "w", format=tarfile.USTAR_FORMAT) as t:
        for j in range(per):
            k = s * per + j
            add(t, f"{k:08d}.cls", b"%d\n" % (k % 10))
            add(t, f"{k:08d}.jpg", jpg[k % 16])
EOF
	"$rv" -q --index-out "$d/train.idx" "$d"/shards/train-*.tar
	echo "$recipe" >"$d/.done"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The first-sample clock: seconds from T0 (the launch) to the end of the
# second zstd frame on stdin (rv-decode writes its metadata first, then
# one frame a sample), then the rest drained.  Plain Python, no imports
# to wait for: the frame and block headers only (RFC 8878).
cat >"$tmp/first.py" <<'EOF'
import sys, time
t0 = float(sys.argv[1])
f = sys.stdin.buffer
def need(n):
    b = f.read(n)
    if len(b) != n:
        raise SystemExit("short stream")
    return b
frames, first = 0, -1.0
while True:
    m = f.read(4)
    if not m:
        break
    magic = int.from_bytes(m + need(4 - len(m)), "little")
    if magic & 0xFFFFFFF0 == 0x184D2A50:            # skippable
        need(int.from_bytes(need(4), "little"))
        continue
    fhd = need(1)[0]
    single = fhd >> 5 & 1
    fcs = [0, 2, 4, 8][fhd >> 6] or single
    need((not single) + [0, 1, 2, 4][fhd & 3] + fcs)
    while True:
        bh = int.from_bytes(need(3), "little")
        need(1 if bh >> 1 & 3 == 1 else bh >> 3)
        if bh & 1:
            break
    if fhd & 4:
        need(4)
    frames += 1
    if frames == 2:
        first = time.time() - t0
print("%.6f" % first)
EOF
status=0
# run KIND N REP: one run of rank 0 of 64 under strace (the files it
# opens, the bytes its reads return), then one not traced for the first
# sample; a line "N KIND rep read_bytes opened others first_s" to
# $tmp/rows.
run() {
	local kind=$1 n=$2 rep=$3 d=$out/$2 t0 first rd opened others
	local -a args=(-q -j 1 --encoded --shard "0/$ranks")
	if [ "$kind" = index ]; then
		args+=(--index "$d/train.idx")
	else
		args+=("$d"/shards/train-*.tar)
	fi
	if ! strace -f -qq -e trace=openat,read,pread64,readv,preadv \
	    -o "$tmp/trace" "$rv" "${args[@]}" -o /dev/null 2>"$tmp/err"; then
		echo "scale-layout.sh: $kind n=$n failed:" >&2
		sed 's/^/    /' "$tmp/err" >&2
		status=1
		return 0
	fi
	rd=$(awk '/^[0-9]+ +(read|pread64|readv|preadv)\(/ {
		r = $NF; if (r ~ /^[0-9]+$/) s += r } END { printf "%.6f", s / 1e6 }' "$tmp/trace")
	# Distinct shards opened, and those past rank 0's share.
	grep 'openat(' "$tmp/trace" | grep -o 'train-[0-9]*\.tar' | sort -u \
	    >"$tmp/opened" || true
	opened=$(wc -l <"$tmp/opened")
	others=$(awk -v own=$((n / ranks)) '{ k = substr($0, 7, 5) + 0 }
	    k >= own { c++ } END { print c + 0 }' "$tmp/opened")
	t0=$EPOCHREALTIME
	first=$("$rv" "${args[@]}" --level 0 | "$py" "$tmp/first.py" "$t0")
	echo "$n $kind $rep $rd $opened $others $first" >>"$tmp/rows"
}

for n in "${layouts[@]}"; do
	[ $((n % ranks)) -eq 0 ] || die "BENCH_LAYOUT: $n is not a multiple of $ranks"
	build_layout "$n"
done
: >"$tmp/rows"
for ((rep = 0; rep <= repeat; rep++)); do	# rep 0: warm-up, not counted
	for n in "${layouts[@]}"; do
		run index "$n" "$rep"
		run listing "$n" "$rep"
	done
done
awk '$3 > 0' "$tmp/rows" >"$tmp/timed"

# spread N KIND FIELD FMT, med N KIND FIELD: of the timed runs
# shellcheck source=bench/stats.bash
. "$here/stats.bash"
timed() { spread "$tmp/timed" "$@"; }
tmed() { med "$tmp/timed" "$@"; }

echo "# scale-layout: rank 0 of $ranks, rv-decode --encoded -j 1, $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
echo "# each shard $per samples (32x32 JPEG + .cls); median (min-max) of $repeat runs after a warm-up"
echo "# read = bytes its read calls returned (strace); own = rank 0's shards + the index; opened = distinct tars"
echo "# opened (strace), others = those not rank 0's (MB = 1e6 bytes); first = launch to the first sample"
fmt='%-6s %-8s %-24s %10s %7s %7s %7s %s\n'
# shellcheck disable=SC2059
printf "$fmt" shards mode "read MB" "own MB" read/own opened others "first sample s"
for n in "${layouts[@]}"; do
	d=$out/$n
	mine=("$d"/shards/train-*.tar)
	own=$(stat -c %s "$d/train.idx" "${mine[@]:0:n/ranks}" |
	    awk '{ s += $1 } END { print s }')
	echo "$n $own" >>"$tmp/own"
	for k in index listing; do
		# shellcheck disable=SC2059
		printf "$fmt" "$n" "$k" "$(timed "$n" "$k" 4 '%.3f')" \
		    "$(awk -v o="$own" 'BEGIN { printf "%.3f", o / 1e6 }')" \
		    "$(awk -v r="$(tmed "$n" "$k" 4)" -v o="$own" 'BEGIN { printf "%.2f", r * 1e6 / o }')" \
		    "$(tmed "$n" "$k" 5)" "$(tmed "$n" "$k" 6)" \
		    "$(timed "$n" "$k" 7 '%.3f')"
	done
done
echo
echo "# targets (issue 34), with the index:"
for n in "${layouts[@]}"; do
	own=$(awk -v n="$n" '$1 == n { print $2 }' "$tmp/own")
	r=$(awk -v r="$(tmed "$n" index 4)" -v o="$own" 'BEGIN { printf "%.2f", r * 1e6 / o }')
	o=$(tmed "$n" index 6)
	printf '  n=%-5s read/own %s (<= 1.20) %s; other shards opened %s (0) %s; listing/index first sample %s\n' \
	    "$n" "$r" "$(awk -v r="$r" 'BEGIN { print (r <= 1.2 ? "ok" : "MISSED") }')" \
	    "$o" "$([ "$o" = 0 ] && echo ok || echo MISSED)" \
	    "$(awk -v a="$(tmed "$n" listing 7)" -v b="$(tmed "$n" index 7)" 'BEGIN { printf "%.2fx", a / b }')"
done
if [ "${#layouts[@]}" -ge 2 ]; then
	a=${layouts[0]} b=${layouts[-1]}
	g=$(awk -v x="$(tmed "$b" index 7)" -v y="$(tmed "$a" index 7)" 'BEGIN { printf "%.2f", x / y }')
	printf '  first sample at %s shards / at %s: %sx (<= 1.20) %s; without the index %s\n' \
	    "$b" "$a" "$g" "$(awk -v g="$g" 'BEGIN { print (g <= 1.2 ? "ok" : "MISSED") }')" \
	    "$(awk -v x="$(tmed "$b" listing 7)" -v y="$(tmed "$a" listing 7)" 'BEGIN { printf "%.2fx", x / y }')"
fi
exit "$status"
