#!/usr/bin/env bats
# Metadata bombs in the stream (issue 47, items 9 and 10).  A 16 KB
# stream of one metadata record whose value is 512 MiB took rv-inspect to
# 1 GB and the filters to 1.6 GB, exit 0; six such records, merged, took
# rv-inspect to 6.3 GB.  Every reader now refuses a metadata record over
# RV_META_MAX (16 MiB) from its header, in one line with the record and
# its byte offset, exit 1; rv-inspect and rv-refurbish, which merge every
# record, refuse one that would take the merge past 16 MiB or 1048576
# keys (lib/stream/meta.c bounds every merge).  And merging is
# linear: a record of a million keys then 1000 tiny ones took rv-inspect
# 58 s (the key index was rebuilt for every record); it now takes well
# under 2 s.  Peak RSS is not asserted under sanitizers (shadow memory),
# times are allowed ten times as long there.

load helpers

# mkmeta OUT KIND: a stream of metadata records, each one zstd frame with
# its content size (no checksum), made by hand so that no pipe carries a
# big payload: a long run of one byte is a run-length block of 4 bytes.
# Prints each record's byte offset, one a line.  KIND:
#   bigval    one record "k=" and 512 MiB of 'x' (no newline): 16 KB
#   atcapN    N records "vI=" x... "\n", each exactly 16 MiB
#   keys      1000000 keys k0000000..., then 1000 records of one key each
#   overkeys  two records of 600000 distinct keys each
mkmeta() {
	/usr/bin/python3 - "$1" "$2" <<'EOF'
import struct
import sys

out, kind = sys.argv[1], sys.argv[2]
CAP = 16 << 20


def hdr(n):
    return struct.pack("<IHHBBHIQiIIIIIffQ", 0x31525652, 1, 64, 4, 0, 0,
                       0, 0, -1, 0, 0, 0, 1, 0, 1.0, float("nan"), n)


def fhdr(n):
    # 8-byte content size, a 128 KiB window, no checksum
    return struct.pack("<IBBQ", 0xFD2FB528, 0xC0, 0x38, n)


def blk(last, btype, size):
    return (last | btype << 1 | size << 3).to_bytes(3, "little")


def stored(payload):
    d = hdr(len(payload)) + payload
    out = [fhdr(len(d))]
    for i in range(0, len(d), 128 << 10):
        c = d[i:i + (128 << 10)]
        out.append(blk(int(i + len(c) >= len(d)), 0, len(c)) + c)
    return b"".join(out)


def run(head, n, tail):
    # head, n bytes of 'x' in run-length blocks, tail
    d = hdr(len(head) + n + len(tail)) + head
    out = [fhdr(len(d) + n + len(tail)), blk(0, 0, len(d)), d]
    while n > 0:
        k = min(n, 128 << 10)
        n -= k
        out.append(blk(int(n == 0 and not tail), 1, k) + b"x")
    if tail:
        out.append(blk(1, 0, len(tail)) + tail)
    return b"".join(out)


recs = []
if kind == "bigval":
    recs.append(run(b"k=", 512 << 20, b""))
elif kind.startswith("atcap"):
    for i in range(int(kind[5:])):
        head = b"v%d=" % i
        recs.append(run(head, CAP - len(head) - 1, b"\n"))
elif kind == "keys":
    recs.append(stored(b"".join(b"k%07d=\n" % i for i in range(1000000))))
    recs += [stored(b"t.%d=1\n" % i) for i in range(1000)]
elif kind == "overkeys":
    for r in range(2):
        recs.append(stored(b"".join(b"k%d.%06d=\n" % (r, i)
                                    for i in range(600000))))
off = 0
with open(out, "wb") as f:
    for r in recs:
        print(off)
        f.write(r)
        off += len(r)
EOF
}

setup_file() {
	local d="$BATS_FILE_TMPDIR" k
	need_fmnist
	for k in bigval atcap1 atcap6 keys overkeys; do
		mkmeta "$d/$k.rvs" "$k" > "$d/$k.off"
	done
	rv-decode -q --limit 8 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$d/s.rvs"
	rv-batch -b 4 "$d/s.rvs" -o "$d/b.rvs"
	# the keys, then samples: for the readers that merge as they train
	# or refurbish
	cat "$d/keys.rvs" "$d/s.rvs" > "$d/keys-s.rvs"
	cat "$d/keys.rvs" "$d/b.rvs" > "$d/keys-b.rvs"
}

setup() {
	D="$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
}

sanitized() {
	case ${RV_BUILD:-build} in
	*asan* | *san*) return 0 ;;
	esac
	return 1
}

need_time() {
	[ -x /usr/bin/time ] || skip "no /usr/bin/time"
}

# measure CMD...: run CMD, stdout through a pipe to $T/out, stderr to
# $T/err; set ST (its status), SECS (elapsed), CPU (user and system
# seconds: what a test of the work asserts, as other jobs on the machine
# stretch SECS) and KB (peak RSS).
measure() {
	local u s
	set -o pipefail
	ST=0
	/usr/bin/time -f '%e %U %S %M' -o "$T/time" "$@" 2> "$T/err" |
	    cat > "$T/out" || ST=$?
	read -r SECS u s KB < <(tail -1 "$T/time")
	CPU=$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')
}

# within SECONDS LIMIT: SECONDS <= LIMIT, ten times that under
# sanitizers.
within() {
	local limit=$2
	sanitized && limit=$((limit * 10))
	awk -v s="$1" -v l="$limit" 'BEGIN { exit !(s <= l) }'
}

# under KB LIMIT: KB <= LIMIT, except under sanitizers.
under() {
	sanitized || [ "$1" -le "$2" ]
}

@test "hostile-meta: the reproducers are valid streams, the 512 MiB one 16 KB" {
	[ "$(stat -c %s "$D/bigval.rvs")" -lt 20000 ]
	run -0 zstd -t -q "$D/bigval.rvs"
	run -0 zstd -t -q "$D/atcap6.rvs"
	run -0 zstd -t -q "$D/keys.rvs"
	[ "$(wc -l < "$D/keys.off")" -eq 1001 ]
}

@test "hostile-meta: every reader refuses a 512 MiB metadata record from its header" {
	local c p st want
	want="record 0 at byte 0: metadata record of 536870914 bytes is over the limit of 16777216"
	for c in "${READERS[@]}"; do
		p=${c%% *}
		st=0
		# shellcheck disable=SC2086
		$c "$D/bigval.rvs" > "$T/out" 2> "$T/err" || st=$?
		[ "$st" -eq 1 ] && [ "$(cat "$T/err")" = \
		    "$p: '$D/bigval.rvs': $want" ] ||
		    { echo "$c: status $st: $(cat "$T/err")" >&2; return 1; }
		st=0
		# shellcheck disable=SC2086
		$c < "$D/bigval.rvs" > "$T/out" 2> "$T/err" || st=$?
		[ "$st" -eq 1 ] && [ "$(cat "$T/err")" = \
		    "$p: '<stdin>': $want" ] ||
		    { echo "$c <: status $st: $(cat "$T/err")" >&2; return 1; }
	done
}

@test "hostile-meta: the 512 MiB record is refused within 2 s at under 64 MB" {
	local c
	need_time
	for c in "${READERS[@]}"; do
		# shellcheck disable=SC2086
		measure $c "$D/bigval.rvs"
		echo "$c: status $ST, $SECS s, $KB KB" >&2
		[ "$ST" -eq 1 ]
		within "$SECS" 2
		under "$KB" 65536
	done
}

@test "hostile-meta: a record of 16 MiB is read; merged past 16 MiB, refused" {
	local off
	need_time
	measure rv-inspect "$D/atcap1.rvs"
	[ "$ST" -eq 0 ]
	grep -q "^meta         1 keys$" "$T/out"
	# six of them: the second would take the merge past the cap
	off=$(sed -n 2p "$D/atcap6.off")
	measure rv-inspect "$D/atcap6.rvs"
	echo "six records at the cap: status $ST, $SECS s, $KB KB" >&2
	[ "$ST" -eq 1 ]
	[ "$(cat "$T/err")" = "rv-inspect: '$D/atcap6.rvs': record 1 at byte $off: metadata over the limit of 16777216 bytes" ]
	within "$SECS" 2
	under "$KB" 65536
	# rv-refurbish and rv-train-gpu merge too
	run -1 --separate-stderr rv-refurbish -q --partial flip --final flip \
	    "$D/atcap6.rvs"
	[ "$stderr" = "rv-refurbish: '$D/atcap6.rvs': record 1 at byte $off: metadata over the limit of 16777216 bytes" ]
	rv-batch -q -b 4 "$D/s.rvs" > "$T/b.rvs"
	cat "$D/atcap6.rvs" "$T/b.rvs" > "$T/atcap6-b.rvs"
	run -1 --separate-stderr rv-train-gpu -q -j 1 -b 4 -m linear \
	    --device cpu "$T/atcap6-b.rvs"
	[ "$stderr" = "rv-train-gpu: '$T/atcap6-b.rvs': record 1 at byte $off: metadata over the limit of 16777216 bytes" ]
}

@test "hostile-meta: merged past 1048576 keys, refused in one line" {
	local off
	off=$(sed -n 2p "$D/overkeys.off")
	run -1 --separate-stderr rv-inspect "$D/overkeys.rvs"
	[ "$stderr" = "rv-inspect: '$D/overkeys.rvs': record 1 at byte $off: metadata over the limit of 1048576 keys" ]
}

@test "hostile-meta: a million keys then 1000 tiny records merge in linear time" {
	need_time
	measure rv-inspect "$D/keys.rvs"
	echo "rv-inspect: status $ST, $SECS s ($CPU s of CPU), $KB KB" >&2
	[ "$ST" -eq 0 ]
	within "$CPU" 2
	grep -q "^meta         1001000 keys$" "$T/out"
}

@test "hostile-meta: rv-refurbish and rv-train-gpu merge them in linear time" {
	slow
	need_time
	# with samples after the keys: more work than rv-inspect's (they
	# write the keys out again or keep a copy), and minutes when each
	# record cost a pass over every key
	measure rv-refurbish -q --partial flip --final flip "$D/keys-s.rvs"
	echo "rv-refurbish: status $ST, $SECS s ($CPU s of CPU), $KB KB" >&2
	[ "$ST" -eq 0 ]
	within "$CPU" 5
	measure rv-train-gpu -q -j 1 -b 4 -m linear --device cpu \
	    "$D/keys-b.rvs"
	echo "rv-train-gpu: status $ST, $SECS s ($CPU s of CPU), $KB KB" >&2
	[ "$ST" -eq 0 ]
	within "$CPU" 5
}
