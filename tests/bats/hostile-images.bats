#!/usr/bin/env bats
# Hostile images through rv-decode's codecs (issue 21): JPEG header damage
# that Pillow reads through (its test images junk_jpeg_header.jpg,
# jpeg_ff00_header.jpg, truncated_app14.jpg, photoshop-200dpi-broken.jpg,
# hopper_bad_exif.jpg, rebuilt here by byte surgery), --channels 1 against
# Pillow's convert("L"), and decompression bombs: files of kilobytes or
# bytes that declare a large image.  Pillow (python3's PIL) is the
# reference for pixels; ImageMagick's built-in images are the photos.

load helpers

# Debian's python3, the one with PIL and numpy (make deps), whatever
# python3 comes first on PATH.
PY=/usr/bin/python3

setup_file() {
	local d="$BATS_FILE_TMPDIR"
	"$PY" -c 'import PIL, numpy' || {
		echo "no PIL or numpy for $PY: run make deps" >&2
		return 1
	}
	mkdir -p "$d/jpeg/a" "$d/cut/a" "$d/grey/a" "$d/bomb"
	convert wizard: -resize 50% -quality 90 "$d/base.jpg"
	# The five Pillow cases, each made from base.jpg by byte surgery.
	"$PY" - "$d/base.jpg" "$d" <<'EOF'
import os
import struct
import sys

base = open(sys.argv[1], "rb").read()
d = sys.argv[2]
# the first segment after SOI is ImageMagick's APP0 (JFIF)
assert base[:4] == b"\xff\xd8\xff\xe0"
app0 = 4 + struct.unpack(">H", base[4:6])[0]


def seg(marker, body, declared=None):
    n = len(body) + 2 if declared is None else declared
    return bytes([0xFF, marker]) + struct.pack(">H", n) + body


def put(sub, name, b):
    open(os.path.join(d, sub, "a", name), "wb").write(b)


head, tail = base[:app0], base[app0:]
# junk_jpeg_header.jpg: bytes that are no marker between two segments
put("jpeg", "junk_header.jpg", head + b"junk\x00\x13\x37" + tail)
# jpeg_ff00_header.jpg: a stuffed FF 00 straight after SOI
put("jpeg", "ff00_header.jpg", base[:2] + b"\xff\x00" + base[2:])
# truncated_app14.jpg: an Adobe APP14 whose length says 11, not 14
adobe = b"Adobe" + struct.pack(">HHHB", 100, 0, 0, 1)
put("jpeg", "truncated_app14.jpg", head + seg(0xEE, adobe, 11) + tail)
# photoshop-200dpi-broken.jpg: a Photoshop APP13 (200 dpi resolution
# block) whose length was edited 10 smaller
res = struct.pack(">IHHIHH", 200 << 16, 1, 1, 200 << 16, 1, 1)
ps = (b"Photoshop 3.0\x00" + b"8BIM" + struct.pack(">HHI", 0x03ED, 0,
      len(res)) + res)
put("jpeg", "photoshop_broken.jpg", head + seg(0xED, ps, len(ps) - 8) + tail)
# hopper_bad_exif.jpg: an Exif APP1 whose IFD points past its end, its
# length 6 short
tiff = (b"MM\x00\x2a" + struct.pack(">IH", 0x7FFFFF00, 0xFFFF) +
        b"\x01\x0f\x00\x02" + b"\xde\xad\xbe\xef" * 4)
ex = b"Exif\x00\x00" + tiff
put("jpeg", "bad_exif.jpg", head + seg(0xE1, ex, len(ex) - 4) + tail)
put("jpeg", "plain.jpg", base)
# Truly damaged: cut in the middle of the scan, with and without junk in
# the header (libjpeg's first warning is then the junk, not the cut).
i = 2
while base[i + 1] != 0xDA:
    i += 2 + struct.unpack(">H", base[i + 2:i + 4])[0]
cut = i + (len(base) - i) // 2
put("cut", "cut_scan.jpg", base[:cut])
put("cut", "junk_cut.jpg", head + b"junk" + base[app0:cut])
EOF
}

setup() {
	D="$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
}

# cmp_pil STREAM MODE FILE...: the stream's samples, in order, against
# Pillow's decoding of FILE... converted to MODE; prints "NAME DIFF" with
# the largest absolute difference, then "max DIFF".
cmp_pil() {
	"$PY" -W ignore - "$REPO/tests/checks" "$@" <<'EOF'
import subprocess
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, sys.argv[1])
from rvparse import records  # noqa: E402

stream, mode, files = sys.argv[2], sys.argv[3], sys.argv[4:]
raw = subprocess.run(["zstd", "-dcq", stream], check=True,
                     capture_output=True).stdout
got = [r for r in records(raw) if r["kind"] == 1]
if len(got) != len(files):
    raise SystemExit("%d samples for %d files" % (len(got), len(files)))
worst = 0
for r, f in zip(got, files):
    a = np.frombuffer(r["payload"], np.uint8).reshape(r["h"], r["w"], r["c"])
    im = Image.open(f).convert(mode)
    b = np.asarray(im).reshape(im.height, im.width, -1)
    if a.shape != b.shape:
        raise SystemExit("%s: %s, Pillow %s" % (f, a.shape, b.shape))
    k = int(np.abs(a.astype(int) - b).max())
    print(f.rsplit("/", 1)[-1], k)
    worst = max(worst, k)
print("max", worst)
EOF
}

@test "hostile-images: JPEG header damage that Pillow reads through is decoded, pixels equal to Pillow's" {
	# Pillow decodes each (a check that the surgery made what it meant)
	for f in "$D"/jpeg/a/*.jpg; do
		"$PY" -W ignore -c 'import sys; from PIL import Image
Image.open(sys.argv[1]).load()' "$f"
	done
	run -0 --separate-stderr rv-decode -v "$D/jpeg" -o "$T/j.rvs"
	[[ "$stderr" == "rv-decode: 6 samples in 1 epoch, 0 skipped, "* ]]
	run -0 cmp_pil "$T/j.rvs" RGB $(ls "$D"/jpeg/a/*.jpg | sort)
	[ "${lines[-1]}" = "max 0" ]
	# the header read of --encoded takes them too
	run -0 --separate-stderr rv-decode -v --encoded "$D/jpeg" -o "$T/e.rvs"
	[[ "$stderr" == "rv-decode: 6 samples in 1 epoch, 0 skipped, "* ]]
}

@test "hostile-images: --strict refuses JPEG header junk, in libjpeg's words" {
	mkdir -p "$T/s/a"
	cp "$D/jpeg/a/junk_header.jpg" "$T/s/a/"
	run -1 --separate-stderr rv-decode --strict "$T/s" -o "$T/s.rvs"
	[ "$stderr" = "rv-decode: '$T/s': 'a/junk_header.jpg': corrupt JPEG data: 7 extraneous bytes before marker 0xe2" ]
	[ ! -e "$T/s.rvs" ]
	run -1 --separate-stderr rv-decode --strict --encoded "$T/s" -o "$T/s.rvs"
	[ "$stderr" = "rv-decode: '$T/s': 'a/junk_header.jpg': corrupt JPEG data: 7 extraneous bytes before marker 0xe2" ]
}

@test "hostile-images: a JPEG cut in its scan is still skipped, junk in its header or not, as Pillow refuses it" {
	slow
	for f in "$D"/cut/a/*.jpg; do
		run -1 "$PY" -W ignore -c 'import sys; from PIL import Image
Image.open(sys.argv[1]).load()' "$f"
		[[ "$output" == *"image file is truncated"* ]]
	done
	cp "$D/base.jpg" "$D/cut/a/plain.jpg"
	run -0 --separate-stderr rv-decode -v "$D/cut" -o "$T/c.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$D/cut': 'a/cut_scan.jpg': truncated JPEG data (skipped)" ]
	[ "${stderr_lines[1]}" = "rv-decode: '$D/cut': 'a/junk_cut.jpg': truncated JPEG data (skipped)" ]
	[[ "${stderr_lines[2]}" == "rv-decode: 1 samples in 1 epoch, 2 skipped, "* ]]
}

@test "hostile-images: --channels 1 is Pillow's convert(\"L\") exactly, for every format" {
	slow
	local g="$D/grey/a"
	convert rose: "$g/rose.jpg"
	convert logo: -resize 50% "$g/logo.jpg"
	convert wizard: -resize 40% -sampling-factor 1x1 "$g/wizard444.jpg"
	convert -seed 7 -size 128x96 plasma: -quality 95 "$g/plasma.jpg"
	convert -seed 7 -size 128x96 plasma: -interlace JPEG "$g/progressive.jpg"
	convert rose: -colorspace CMYK "$g/cmyk.jpg"
	convert rose: "$g/rose.png"
	convert logo: -resize 50% "$g/logo.png"
	convert -seed 7 -size 128x96 plasma: -depth 8 -interlace PNG "$g/interlaced.png"
	convert rose: -colors 64 "$g/palette.png"
	convert rose: "$g/rose.gif"
	convert rose: "$g/rose.bmp"
	convert rose: -colors 16 -type Palette "$g/palette8.bmp"
	convert rose: "$g/rose.tif"
	convert rose: -quality 90 "$g/rose.webp"
	run -0 --separate-stderr rv-decode -v --channels 1 "$D/grey" -o "$T/g.rvs"
	[[ "$stderr" == "rv-decode: 15 samples in 1 epoch, 0 skipped, "* ]]
	run -0 cmp_pil "$T/g.rvs" L $(ls "$g"/* | sort)
	echo "$output"
	[ "${lines[-1]}" = "max 0" ]
	# and RGB is Pillow's too, so the luma is of the same pixels
	run -0 --separate-stderr rv-decode -v "$D/grey" -o "$T/c.rvs"
	run -0 cmp_pil "$T/c.rvs" RGB $(ls "$g"/* | sort)
	echo "$output"
	[ "${lines[-1]}" = "max 0" ]
}

# bomb_rss FILE CHANNELS: rv-decode's peak memory in MB for FILE alone.
bomb_rss() {
	local d="$T/in.$RANDOM"
	mkdir -p "$d/a"
	cp "$1" "$d/a/"
	rv-decode -v --channels "$2" "$d" -o "$T/o.rvs" 2>&1 |
	    sed -n 's/^rv-decode: 1 samples in 1 epoch, 0 skipped, .* \([0-9.]*\) MB peak memory$/\1/p'
}

@test "hostile-images: bombs of a few kB hold at most one output-sized image (TIFF 4/3 of it)" {
	slow
	local s=6000 f ch mb out base asan=0
	# a sanitizer's shadow memory and quarantine are no measure of ours:
	# its build decodes the bombs, unmeasured
	if ldd "$(command -v rv-decode)" | grep -q 'libasan'; then
		asan=1
	fi
	"$PY" - "$D/bomb" "$s" <<'EOF'
import io
import os
import struct
import sys
import zlib

from PIL import Image

d, side = sys.argv[1], int(sys.argv[2])


def chunk(t, b):
    return struct.pack(">I", len(b)) + t + b + struct.pack(">I",
                                                           zlib.crc32(t + b))


def png(name, ctype, plte=b""):
    # 1 bit a pixel, all zero: a few kB
    z = zlib.compressobj(9)
    row = bytes(1 + (side + 7) // 8)
    idat = b"".join(z.compress(row) for _ in range(side)) + z.flush()
    b = (b"\x89PNG\r\n\x1a\n" +
         chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 1, ctype, 0, 0,
                                    0)))
    if plte:
        b += chunk(b"PLTE", plte)
    b += chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    open(os.path.join(d, name), "wb").write(b)


png("grey1.png", 0)
png("pal1.png", 3, bytes([255, 0, 0, 0, 0, 255]))
# BMP RLE8 whose data is end-of-bitmap at once: 64 bytes
pal = bytes([0, 0, 255, 0, 255, 0, 0, 0])
hdr = struct.pack("<IiiHHIIiiII", 40, side, side, 1, 8, 1, 2, 2835, 2835, 2,
                  0)
off = 14 + 40 + len(pal)
open(os.path.join(d, "rle8.bmp"), "wb").write(
    b"BM" + struct.pack("<IHHI", off + 2, 0, 0, off) + hdr + pal + b"\0\1")
im = Image.new("P", (side, side))
im.putpalette([255, 0, 0, 0, 0, 255] + [0] * 762)
im.save(os.path.join(d, "flat.gif"))
Image.new("1", (side, side)).save(os.path.join(d, "bw.tif"),
                                   compression="tiff_deflate")


# an animated WebP: a side x side canvas, one 1x1 frame; 94 bytes
def riff(t, b):
    return t + struct.pack("<I", len(b)) + b + b"\0" * (len(b) & 1)


bio = io.BytesIO()
Image.new("RGB", (1, 1), (200, 30, 60)).save(bio, "WEBP", lossless=True)
vp8l = bio.getvalue()[20:]
u24 = lambda v: struct.pack("<I", v)[:3]  # noqa: E731
body = (b"WEBP" +
        riff(b"VP8X", b"\x02\0\0\0" + u24(side - 1) + u24(side - 1)) +
        riff(b"ANIM", bytes(6)) +
        riff(b"ANMF", u24(0) * 4 + u24(100) + b"\0" + riff(b"VP8L", vp8l)))
open(os.path.join(d, "anim.webp"), "wb").write(
    b"RIFF" + struct.pack("<I", len(body)) + body)
EOF
	[ "$(stat -c %s "$D/bomb/anim.webp")" -lt 200 ]
	# the program's own fixed cost: its peak on a small image
	base=$(bomb_rss "$D/base.jpg" 3)
	for f in grey1.png pal1.png rle8.bmp flat.gif bw.tif anim.webp; do
		[ "$(stat -c %s "$D/bomb/$f")" -lt 200000 ]
		for ch in 3 1; do
			mb=$(bomb_rss "$D/bomb/$f" "$ch")
			# the output, and what the format needs on top: TIFF's
			# RGBA raster is 4 bytes a pixel; WebP, and JPEG,
			# decode RGB for a grey output too
			out=$((s * s * ch))
			case $f:$ch in
			bw.tif:*) out=$((s * s * 4)) ;;
			anim.webp:1) out=$((s * s * 3)) ;;
			esac
			echo "$f --channels $ch: $mb MB, output $((s * s * ch / 1000000)) MB, bound $((out / 1000000)) MB + $base MB"
			[ -n "$mb" ]
			[ "$asan" = 1 ] && continue
			# 1/8 more and 8 MB of slack
			awk -v mb="$mb" -v out="$out" -v base="$base" \
			    'BEGIN { exit !(mb > 0 && base > 0 &&
			    mb * 1048576 <= base * 1048576 + out * 9 / 8 + 8 * 1048576) }'
		done
	done
}

@test "hostile-images: an animated WebP's first frame is Pillow's, offset and all" {
	slow
	mkdir -p "$T/w/a"
	"$PY" - "$T/w/a" <<'EOF'
import io
import struct
import sys

from PIL import Image

d = sys.argv[1]


def riff(t, b):
    return t + struct.pack("<I", len(b)) + b + b"\0" * (len(b) & 1)


def u24(v):
    return struct.pack("<I", v)[:3]


def frame(im, **kw):
    bio = io.BytesIO()
    im.save(bio, "WEBP", **kw)
    return bio.getvalue()[12:]  # the frame's chunks: VP8L, or VP8


# a 40x30 first frame at (10, 20) of a 96x64 canvas, then a full one
grad = Image.radial_gradient("L").resize((40, 30))
rgb = Image.merge("RGB", (grad, grad.transpose(Image.FLIP_LEFT_RIGHT),
                          grad.transpose(Image.FLIP_TOP_BOTTOM)))
full = Image.new("RGB", (96, 64), (0, 128, 255))
for name, kw in (("lossless.webp", {"lossless": True}),
                 ("lossy.webp", {"quality": 80})):
    body = (b"WEBP" +
            riff(b"VP8X", b"\x02\0\0\0" + u24(95) + u24(63)) +
            riff(b"ANIM", bytes(6)) +
            riff(b"ANMF", u24(5) + u24(10) + u24(39) + u24(29) + u24(100) +
                 b"\0" + frame(rgb, **kw)) +
            riff(b"ANMF", u24(0) + u24(0) + u24(95) + u24(63) + u24(100) +
                 b"\0" + frame(full, **kw)))
    open(d + "/" + name, "wb").write(b"RIFF" + struct.pack("<I", len(body)) +
                                     body)
EOF
	run -0 --separate-stderr rv-decode -v "$T/w" -o "$T/w.rvs"
	[[ "$stderr" == "rv-decode: 2 samples in 1 epoch, 0 skipped, "* ]]
	run -0 cmp_pil "$T/w.rvs" RGB "$T/w/a/lossless.webp" "$T/w/a/lossy.webp"
	echo "$output"
	[ "${lines[-1]}" = "max 0" ]
}

@test "hostile-images: a JPEG header that ends in an empty APP0 is the same error every time, and the next JPEG decodes" {
	slow
	# TurboJPEG reports success on this header without filling in the
	# size; rv read whatever was on the stack (a different "image is
	# 22024x721303184" each run).
	mkdir -p "$T/e/a"
	printf '\xff\xd8\xff\xe0\x00\x00' > "$T/e/a/1.jpg"
	head -c 65536 /dev/zero >> "$T/e/a/1.jpg"
	cp "$D/base.jpg" "$T/e/a/2.jpg"
	local i
	for i in 1 2 3 4 5; do
		run -0 --separate-stderr rv-decode -j1 "$T/e" -o "$T/e.rvs"
		[ "${stderr_lines[0]}" = "rv-decode: '$T/e': 'a/1.jpg': corrupt JPEG data: empty image (skipped)" ]
		run -0 rv-inspect "$T/e.rvs"
		[[ "${lines[1]}" == "samples      1 "* ]]
	done
}
