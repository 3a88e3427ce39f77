#!/usr/bin/env bats
# Hostile shapes (issue 47, items 13 and 14): thin images whose cost grew
# with a side rather than with their pixels.  A 1x16384x3 sample, a few
# hundred bytes of stream, made `resize size=256` build torchvision's
# 256x4194304 answer (3.3 GB, 10 s and more) only for center_crop to keep
# 224x224 of it; now the op refuses an image over RV_AUG_MAX_PIXELS
# (178956970, rv-decode's default --max-pixels) before it allocates.  A
# 346 KB PNG of 1x178000000 grey pixels, under the pixel limit, took
# rv-decode 1.9 GB and 15 s (a pointer and libpng's ~60 ns a row); now
# a PNG side over 1000000 pixels (libpng's default limit) is refused from
# its header, and rows are read into the image without a pointer array.
# Each case must end within 2 s under 64 MB (the peak not asserted under
# sanitizers, which still run the programs).

load helpers

# mkpng OUT W H: a grey 8-bit PNG of zeros.  Its zlib stream is built
# from one compressed MiB repeated: after a full flush deflate starts
# afresh, so every later MiB of zeros compresses to the same bytes, and
# 178 million rows take no time to make.
mkpng() {
	/usr/bin/python3 - "$@" <<'EOF'
import struct
import sys
import zlib

out, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
n = (w + 1) * h                 # filter byte 0 and w zeros a row
blk = 1 << 20
if n < 2 * blk:
    body = zlib.compress(bytes(n), 9)
else:
    z = zlib.compressobj(9)
    first = z.compress(bytes(blk)) + z.flush(zlib.Z_FULL_FLUSH)
    again = z.compress(bytes(blk)) + z.flush(zlib.Z_FULL_FLUSH)
    assert first[2:] == again   # the zlib header aside
    body = (first + again * (n // blk - 1) + z.compress(bytes(n % blk)) +
            z.flush())
    # z saw 2 MiB: the Adler-32 of n zeros (a stays 1, b counts them)
    body = body[:-4] + struct.pack(">I", (n % 65521) << 16 | 1)


def chunk(t, d):
    return (struct.pack(">I", len(d)) + t + d +
            struct.pack(">I", zlib.crc32(t + d)))


with open(out, "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n")
    f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)))
    for i in range(0, len(body), 1 << 20):
        f.write(chunk(b"IDAT", body[i:i + (1 << 20)]))
    f.write(chunk(b"IEND", b""))
EOF
}

setup_file() {
	local d="$BATS_FILE_TMPDIR"
	mkdir -p "$d/tall" "$d/edge" "$d/banner"
	mksample "$d/thin.rvs" 1 16384 3
	mkpng "$d/tall/tall.png" 1 178000000
	mkpng "$d/tall/ok.png" 32 24
	mkpng "$d/edge/edge.png" 1 1000000
	# A banner in a dataset, carried encoded to rv-augment.
	mkpng "$d/banner/banner.png" 16384 1
	mkpng "$d/banner/ok.png" 300 200
	rv-decode -q -j 1 --encoded --channels 3 "$d/banner" -o "$d/banner.rvs"
}

setup() {
	D="$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
}

need_time() {
	[ -x /usr/bin/time ] || skip "no /usr/bin/time"
}

# timed STATUS CMD...: run CMD (killed after 10 s) with stdout to
# $T/out and stderr to $T/err, expect exit STATUS, and check it took at
# most 2 s and 64 MB (the memory not under sanitizers).
timed() {
	local want=$1 st=0 s kb
	shift
	/usr/bin/time -f '%e %M' -o "$T/rss" timeout 10 "$@" > "$T/out" \
	    2> "$T/err" || st=$?
	read -r s kb < <(tail -1 "$T/rss")
	echo "$*: status $st, $s s, $kb KB" >&2
	cat "$T/err" >&2
	[ "$st" -eq "$want" ]
	[ "$(awk -v s="$s" 'BEGIN { print (s <= 2.0) }')" = 1 ]
	case ${RV_BUILD:-build} in
	*asan* | *san*) ;;
	*) [ "$kb" -le 65536 ] ;;
	esac
}

@test "hostile-shapes: the reproducers are what the issue describes" {
	[ "$(stat -c %s "$D/thin.rvs")" -lt 1000 ]
	run -0 zstd -t -q "$D/thin.rvs"
	run -0 rv-inspect "$D/thin.rvs"
	[[ "$output" == *"shapes       1x16384x3 1"* ]]
	# 178000000 pixels, under the 178956970-pixel limit: only its
	# shape is hostile (edge.png, made the same way, decodes below)
	[ "$(stat -c %s "$D/tall/tall.png")" -lt 400000 ]
}

@test "hostile-shapes: resize of a 1x16384 u8 sample is refused at once, in one line" {
	need_time
	# a u8 sample that cannot be augmented stops the run (rv-augment(1))
	timed 1 rv-augment -j 1 'resize size=256; center_crop size=224' \
	    "$D/thin.rvs"
	[ "$(cat "$T/err")" = "rv-augment: '$D/thin.rvs': record 0 (id 0): op 1 'resize': makes a 4194304x256 image, over the 178956970-pixel limit" ]
	timed 1 rv-augment -j 1 --strict 'resize size=256' "$D/thin.rvs"
	[ "$(wc -l < "$T/err")" -eq 1 ]
}

@test "hostile-shapes: ops whose output is set by their arguments are bounded too" {
	local spec
	for spec in 'center_crop size=65536' \
	    'crop top=0 left=0 height=20000 width=9000' \
	    'random_crop size=40000 padding=20000' \
	    'resized_crop top=0 left=0 height=8 width=8 size=20000' \
	    'rrc size=65536'; do
		run -1 --separate-stderr timeout 10 rv-augment -j 1 "$spec" \
		    "$D/thin.rvs"
		[[ "$stderr" == "rv-augment: '$D/thin.rvs': record 0 (id 0): op 1 '"*"': makes a "*" image, over the 178956970-pixel limit" ]] ||
		    { echo "$spec: $stderr" >&2; return 1; }
	done
}

@test "hostile-shapes: an encoded 1x16384 banner is skipped with a warning, fatal under --strict" {
	need_time
	timed 0 rv-augment -j 1 'resize size=256; center_crop size=224' \
	    "$D/banner.rvs"
	[ "$(cat "$T/err")" = "rv-augment: '$D/banner.rvs': record 1 (id 0): op 1 'resize': makes a 4194304x256 image, over the 178956970-pixel limit (skipped)" ]
	run -0 rv-inspect "$T/out"
	[[ "$output" == *"shapes       224x224x3 1"* ]]
	timed 1 rv-augment -j 1 --strict \
	    'resize size=256; center_crop size=224' "$D/banner.rvs"
	[ "$(cat "$T/err")" = "rv-augment: '$D/banner.rvs': record 1 (id 0): op 1 'resize': makes a 4194304x256 image, over the 178956970-pixel limit" ]
}

@test "hostile-shapes: a 1x178000000 PNG is refused from its header, in one line" {
	need_time
	timed 0 rv-decode -q -j 1 "$D/tall"
	[ "$(cat "$T/err")" = "rv-decode: '$D/tall': 'tall.png': image is 1x178000000, over the PNG side limit of 1000000 pixels (skipped)" ]
	run -0 rv-inspect "$T/out"
	[[ "$output" == *"shapes       24x32x3 1"* ]]
	# --encoded reads only the header: the same refusal
	timed 0 rv-decode -q -j 1 --encoded "$D/tall"
	[ "$(cat "$T/err")" = "rv-decode: '$D/tall': 'tall.png': image is 1x178000000, over the PNG side limit of 1000000 pixels (skipped)" ]
}

@test "hostile-shapes: a PNG of 1x1000000, at the side limit, is read" {
	need_time
	timed 0 rv-decode -q -j 1 --channels 1 "$D/edge"
	[ ! -s "$T/err" ]
	run -0 rv-inspect "$T/out"
	[[ "$output" == *"shapes       1000000x1x1 1"* ]]
}
