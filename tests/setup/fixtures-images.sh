#!/usr/bin/env bash
# Make the image fixtures under OUTDIR: one small file per JPEG, PNG,
# WebP, GIF, BMP and TIFF flavour the codecs must read, raw pixel dumps from ImageMagick to compare
# against (NAME.rgb: RGB, NAME.gray: grey, 8 bits), and broken files that
# must fail cleanly.  Seeded and date-free, so the bytes are reproducible.
# Usage: tests/setup/fixtures-images.sh OUTDIR
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
out=$1
mkdir -p "$out"
cd "$out"

# No timestamps or profiles in the files, so reruns give the same bytes.
nodate=(-strip -define 'png:exclude-chunks=date,time')

# Sources: a seeded plasma (smooth colour, some texture) at two sizes.
convert -seed 1 -size 96x64 plasma:fractal -depth 16 "${nodate[@]}" \
    src16.png
convert -seed 2 -size 640x480 plasma:fractal -depth 8 "${nodate[@]}" \
    src-big.png

# JPEG flavours.
convert src16.png -depth 8 -quality 90 -sampling-factor 2x2 -strip rgb.jpg
convert src16.png -depth 8 -quality 90 -sampling-factor 1x1 -strip rgb444.jpg
convert src16.png -depth 8 -colorspace Gray -type Grayscale -quality 90 -strip \
    grey.jpg
convert src16.png -depth 8 -colorspace CMYK -quality 90 -strip cmyk.jpg
convert src16.png -depth 8 -quality 90 -sampling-factor 2x2 -interlace Plane \
    -strip progressive.jpg
convert src-big.png -quality 85 -sampling-factor 2x2 -strip big.jpg

# PNG flavours, the colour type forced so each one is what its name says.
convert src16.png -depth 8 -define png:color-type=2 "${nodate[@]}" rgb.png
convert src16.png -depth 8 \( +clone -colorspace Gray -negate \) \
    -compose CopyOpacity -composite \
    -define png:color-type=6 "${nodate[@]}" rgba.png
convert src16.png -depth 8 -colorspace Gray -define png:color-type=0 \
    -define png:bit-depth=8 "${nodate[@]}" grey.png
convert src16.png -depth 8 -colorspace Gray \( +clone -negate \) \
    -compose CopyOpacity -composite \
    -define png:color-type=4 -define png:bit-depth=8 "${nodate[@]}" greya.png
# 16 colours: ImageMagick writes 4-bit indices, and grey1.png has 1 bit.
convert src16.png -depth 8 +dither -colors 16 -define png:color-type=3 \
    "${nodate[@]}" palette.png
convert src16.png -colorspace Gray -threshold 50% -define png:color-type=0 \
    -define png:bit-depth=1 "${nodate[@]}" grey1.png
# The colour at (0,0) made transparent (tRNS); PNG8: keeps the tRNS chunk
# that png:color-type=3 would drop.  Its palette entry, black, is made
# orange below, so that compositing on black would show.
convert src16.png -depth 8 +dither -colors 16 -alpha set -fill none \
    -draw 'color 0,0 replace' "${nodate[@]}" PNG8:palette-trns.png
convert src16.png -depth 16 -define png:color-type=2 -define png:bit-depth=16 \
    "${nodate[@]}" rgb16.png
convert src16.png -depth 8 -interlace PNG -define png:color-type=2 \
    "${nodate[@]}" interlaced.png

# WebP, GIF, BMP and TIFF flavours (the formats Pillow and torchvision's
# ImageFolder read beside JPEG and PNG).  The alpha of rgba.* is a grey
# ramp, so that alpha that was not dropped would show.
alpha=(\( +clone -colorspace Gray -negate \) -compose CopyOpacity -composite)
convert src16.png -depth 8 -quality 90 -strip rgb.webp
convert src16.png -depth 8 -define webp:lossless=true -strip lossless.webp
convert src16.png -depth 8 "${alpha[@]}" -define webp:lossless=true -strip \
    rgba.webp
convert src16.png \( src16.png -negate \) -depth 8 -loop 0 \
    -define webp:lossless=true -strip anim.webp
convert src16.png -depth 8 +dither -colors 200 -strip rgb.gif
convert src16.png -depth 8 +dither -colors 64 -interlace GIF -strip \
    interlaced.gif
convert src16.png \( src16.png -negate \) -depth 8 +dither -colors 64 \
    -loop 0 -strip anim.gif
convert src16.png -depth 8 -strip BMP3:rgb.bmp
convert src16.png -depth 8 -strip BMP2:os2.bmp
convert src16.png -depth 8 +dither -colors 200 -type Palette -compress None \
    -strip BMP3:palette8.bmp
convert src16.png -depth 8 +dither -colors 16 -type Palette -strip \
    BMP3:palette4.bmp
convert src16.png -colorspace Gray -depth 8 +dither -colors 256 \
    -type Palette -compress None -strip BMP3:grey8.bmp
convert src16.png -monochrome -strip BMP3:mono.bmp
convert src16.png -depth 8 +dither -colors 200 -type Palette -compress RLE \
    -strip BMP3:rle8.bmp
convert src16.png -depth 8 -define bmp:subtype=RGB565 -strip BMP:rgb565.bmp
convert src16.png -depth 8 "${alpha[@]}" -strip BMP:rgba.bmp
convert src16.png -depth 8 -compress LZW -strip rgb.tif
convert src16.png -depth 8 -colorspace Gray -compress Zip -strip grey.tif
convert src16.png -depth 16 -compress None -strip rgb16.tif
convert src16.png -depth 8 -compress JPEG -quality 90 -strip jpeg.tif
convert src16.png -depth 8 +dither -colors 16 -type Palette -strip \
    palette.tif
convert src16.png -depth 8 -define tiff:tile-geometry=32x32 -strip tiled.tif
convert src16.png -depth 8 "${alpha[@]}" -strip rgba.tif

python3 - <<'EOF'
import struct
import zlib

png = bytearray(open("palette-trns.png", "rb").read())
plte = png.index(b"PLTE")
trns = png.index(b"tRNS")
n = struct.unpack(">I", png[plte - 4:plte])[0]
assert png[trns + 4] == 0 and png[plte + 4:plte + 7] == b"\0\0\0"
png[plte + 4:plte + 7] = bytes([200, 100, 50])
crc = zlib.crc32(bytes(png[plte:plte + 4 + n])) & 0xffffffff
png[plte + 4 + n:plte + 8 + n] = struct.pack(">I", crc)
open("palette-trns.png", "wb").write(png)
EOF

# rle4.bmp: palette4.bmp's pixels as RLE4 (ImageMagick writes no RLE4):
# each row an absolute run of 5 pixels, encoded runs of 2, and a delta
# over the last 4 pixels of the top row, which keep palette entry 0.
python3 - <<'EOF'
import struct

b = open("palette4.bmp", "rb").read()
off, = struct.unpack_from("<I", b, 10)
w, h = struct.unpack_from("<ii", b, 18)
stride = (w * 4 + 31) // 32 * 4
px = [[(b[off + y * stride + x // 2] >> (0 if x & 1 else 4)) & 15
       for x in range(w)] for y in range(h)]   # bottom row first
out = bytearray()
for y in range(h):
    row = px[y]
    n = w - 4 if y == h - 1 else w
    out += bytes([0, 5, row[0] << 4 | row[1], row[2] << 4 | row[3],
                  row[4] << 4, 0])
    for x in range(5, n - 1, 2):
        out += bytes([2, row[x] << 4 | row[x + 1]])
    if (n - 5) % 2:
        out += bytes([1, row[n - 1] << 4])
    if y == h - 1:
        out += bytes([0, 2, 4, 0])
        out += bytes([0, 1])
    else:
        out += bytes([0, 0])
hdr = bytearray(b[:off])
struct.pack_into("<I", hdr, 2, off + len(out))
struct.pack_into("<I", hdr, 30, 2)
struct.pack_into("<I", hdr, 34, len(out))
open("rle4.bmp", "wb").write(bytes(hdr) + bytes(out))
EOF

# Reference pixels, alpha ignored.  ImageMagick 6 reduces 16 bits to 8 by
# truncation, v / 257; rv rounds (libpng's png_set_scale_16), so for
# rgb16.png half a step is added first: floor((v + 128) / 257).
for f in rgb.jpg rgb444.jpg cmyk.jpg progressive.jpg big.jpg rgb.png \
    rgba.png palette.png palette-trns.png interlaced.png; do
	convert "$f" -alpha off -depth 8 "rgb:$f.rgb"
done
for f in rgb.webp lossless.webp rgba.webp rgb.gif interlaced.gif rgb.bmp \
    os2.bmp palette8.bmp palette4.bmp grey8.bmp mono.bmp rle8.bmp \
    rgb565.bmp rgba.bmp rgb.tif grey.tif jpeg.tif palette.tif tiled.tif \
    rgba.tif; do
	convert "$f" -alpha off -depth 8 "rgb:$f.rgb"
done
# The first frame of each animation; rle4.bmp is palette4.bmp's pixels
# but for the 4 pixels of the top row that its delta skips.
convert 'anim.webp[0]' -alpha off -depth 8 rgb:anim.webp.rgb
convert 'anim.gif[0]' -alpha off -depth 8 rgb:anim.gif.rgb
convert rle4.bmp -alpha off -depth 8 rgb:rle4.bmp.rgb
# 16-bit TIFF: libtiff's RGBA interface keeps the high byte, as Pillow
# does.
convert rgb16.tif -depth 16 -endian MSB rgb:- |
    python3 -c 'import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d[0::2])' \
    > rgb16.tif.rgb
convert rgb16.png -evaluate add 128 -depth 8 rgb:rgb16.png.rgb
for f in grey.jpg grey.png greya.png grey1.png; do
	convert "$f" -alpha off -depth 8 "gray:$f.gray"
done
rm -f src16.png src-big.png

# Broken files.
size=$(wc -c < rgb.jpg)
head -c $((size / 2)) rgb.jpg > truncated.jpg
size=$(wc -c < rgb.png)
head -c $((size / 2)) rgb.png > truncated.png
for f in rgb.webp rgb.gif rgb.bmp rgb.tif; do
	size=$(wc -c < "$f")
	head -c $((size / 2)) "$f" > "truncated.${f#rgb.}"
done
: > empty.jpg
printf 'this is not an image\n' > text.jpg

python3 - <<'EOF'
import struct
import zlib


def chunk(kind, data):
    crc = zlib.crc32(kind + data) & 0xffffffff
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


# corrupt.jpg: a run of bytes in the middle of the entropy-coded data
# replaced by an out-of-place marker and garbage.
jpg = bytearray(open("rgb.jpg", "rb").read())
sos = jpg.index(b"\xff\xda")
mid = (sos + len(jpg)) // 2
jpg[mid:mid + 16] = b"\xff\xd9" + bytes(range(0x21, 0x2f))
open("corrupt.jpg", "wb").write(jpg)

# crc.png: one byte of the first IDAT's data flipped, CRC left alone.
png = bytearray(open("rgb.png", "rb").read())
idat = png.index(b"IDAT")
png[idat + 4 + 10] ^= 0xff
open("crc.png", "wb").write(png)

# zlib.png: the same flip with the CRC made right, so the damage reaches
# the decompressor.
n = struct.unpack(">I", png[idat - 4:idat])[0]
crc = zlib.crc32(bytes(png[idat:idat + 4 + n])) & 0xffffffff
png[idat + 4 + n:idat + 8 + n] = struct.pack(">I", crc)
open("zlib.png", "wb").write(png)

# huge.png: a valid IHDR (CRC and all) declaring 100000x100000 RGB.
ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
idat = zlib.compress(b"\0" * 64)
open("huge.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
                             chunk(b"IDAT", idat) + chunk(b"IEND", b""))

# huge.jpg: rgb.jpg with its SOF0 saying 65000x65000.
jpg = bytearray(open("rgb.jpg", "rb").read())
sof = jpg.index(b"\xff\xc0")
jpg[sof + 5:sof + 9] = struct.pack(">HH", 65000, 65000)
open("huge.jpg", "wb").write(jpg)
EOF
