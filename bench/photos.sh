#!/usr/bin/env bash
# Build the decode benchmark's image sets under bench/out/photos/ (or $1):
#   full/nature/*.jpg   the 12 real photographs of Debian's mate-backgrounds
#                       (/usr/share/backgrounds/mate/nature), 1280x1024 to
#                       2560x1920, baseline and progressive, 4:2:0 and 4:2:2
#   inet/<photo>/NN.jpg an ImageNet-like set made from them: 25 crops per
#                       photo (random-resized-crop style, from a fixed-seed
#                       generator), longer side 500, 4:2:0, quality 90;
#                       300 files, one class directory per source photo
# Deterministic: the same package and ImageMagick give the same bytes.  The
# package is installed with apt-get when missing (root needed).
# bench-helper: run by decode.sh, not a benchmark itself
set -euo pipefail

PKG=mate-backgrounds
SRC=/usr/share/backgrounds/mate/nature
OUT=${1:-"$(cd "$(dirname "$0")" && pwd)/out/photos"}
CROPS=25	# per photo
SIDE=500
QUALITY=90
# Bump when the recipe changes, so an old set is rebuilt.
RECIPE="v1 $PKG crops=$CROPS side=$SIDE q=$QUALITY"

die() {
	echo "photos.sh: $*" >&2
	exit 1
}

if ! compgen -G "$SRC/*.jpg" >/dev/null; then
	if [ "$(id -u)" -ne 0 ]; then
		die "'$SRC' is missing: install it with 'sudo apt-get install $PKG'" \
		    "(a 47 MB download), or run this script as root"
	fi
	echo "photos.sh: installing $PKG (47 MB download)" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q --no-install-recommends "$PKG" >&2; then
		apt-get update -q >&2
		apt-get install -y -q --no-install-recommends "$PKG" >&2
	fi
	compgen -G "$SRC/*.jpg" >/dev/null ||
	    die "'$SRC': no photographs after installing $PKG"
fi
if ! command -v convert >/dev/null || ! command -v identify >/dev/null; then
	die "ImageMagick is needed: apt-get install imagemagick"
fi

if [ -f "$OUT/.done" ] && [ "$(cat "$OUT/.done")" = "$RECIPE" ]; then
	exit 0
fi
echo "photos.sh: building the image sets in '$OUT'" >&2
rm -rf "$OUT"
mkdir -p "$OUT/full/nature" "$OUT/inet"
cp "$SRC"/*.jpg "$OUT/full/nature/"

# One ImageMagick process per photo (one decode), each crop written with
# -write.  The geometry comes from awk with the MINSTD generator, whose
# products stay below 2^53 and so are exact in awk's doubles.  One thread
# per process keeps the resize bit-exact from run to run.
export MAGICK_THREAD_LIMIT=1
p=0
for f in "$SRC"/*.jpg; do
	name=$(basename "$f" .jpg)
	class=$(printf '%s' "$name" | tr '[:upper:]' '[:lower:]')
	mkdir -p "$OUT/inet/$class"
	read -r w h < <(identify -format '%w %h\n' "${f}[0]")
	args=()
	while read -r cw ch cx cy k; do
		args+=( '(' +clone -crop "${cw}x${ch}+${cx}+${cy}" +repage
		    -resize "${SIDE}x${SIDE}" -write "$OUT/inet/$class/$k.jpg"
		    +delete ')' )
	done < <(awk -v w="$w" -v h="$h" -v p="$p" -v n="$CROPS" '
	function rnd() { s = (s * 48271) % 2147483647; return s / 2147483647 }
	BEGIN {
		s = 1 + p * 7919
		for (i = 0; i < 8; i++)
			rnd()
		for (k = 0; k < n; k++) {
			area = w * h * (0.30 + 0.70 * rnd())	# of the photo
			ar = exp(log(3 / 4) + (log(4 / 3) - log(3 / 4)) * rnd())
			cw = int(sqrt(area * ar) + 0.5)
			ch = int(sqrt(area / ar) + 0.5)
			if (cw > w) cw = w
			if (ch > h) ch = h
			cx = int((w - cw) * rnd())
			cy = int((h - ch) * rnd())
			printf "%d %d %d %d %02d\n", cw, ch, cx, cy, k
		}
	}')
	convert "$f" -strip -quality "$QUALITY" \
	    -sampling-factor 2x2,1x1,1x1 -interlace none "${args[@]}" null:
	p=$((p + 1))
done
printf '%s\n' "$RECIPE" >"$OUT/.done"
