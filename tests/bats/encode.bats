#!/usr/bin/env bats
# rv-encode: samples stored as JPEG or PNG.  PNG gives the pixels back byte
# for byte; JPEG near them, smaller at a lower quality; the bytes are the
# same for any -j; encoded samples of the format asked pass untouched, of
# the other one are converted; stages that need pixels decode them, and
# rv-batch refuses them naming the stage to put before it.  Bad input: one
# line, the right exit status, nothing half-written.  Real data:
# Fashion-MNIST, the colour fixtures, a corrupt JPEG.

load helpers

setup() {
	need_fmnist
	T="$BATS_TEST_TMPDIR"
	IMG="$FMNIST/train-images-idx3-ubyte.gz"
	LAB="$FMNIST/train-labels-idx1-ubyte.gz"
}

# pngs STREAM DIR: the stream's samples as PNG files in DIR, decoded by
# rv-augment '' where they are encoded
pngs() {
	rv-augment -q '' "$1" | rv-inspect -q --png "$2" - > /dev/null
}

# column N of the dump's sample lines, sorted and counted
dumpcol() {
	rv-inspect --dump "$1" | awk -F'\t' -v c="$2" '$3 == "sample" { print $c }' |
	    sort | uniq -c | awk '{ print $2, $1 }'
}

@test "rv-encode --format png: the pixels back byte for byte, every header field kept, smaller than raw" {
	rv-decode -q --limit 300 --shuffle "$IMG" "$LAB" -o "$T/raw.rvs"
	rv-encode -q --format png "$T/raw.rvs" -o "$T/png.rvs"
	run -0 dumpcol "$T/png.rvs" 10
	[ "$output" = "png 300" ]
	pngs "$T/raw.rvs" "$T/a"
	pngs "$T/png.rvs" "$T/b"
	diff -r "$T/a" "$T/b"
	[ "$(ls "$T/b" | wc -l)" = 300 ]
	# ids, labels, epochs, flags, weights in their order: all but the
	# dtype and the payload's bytes
	diff <(rv-inspect --dump "$T/raw.rvs" | awk -F'\t' '$3 == "sample" { print $4, $5, $6, $12, $14 }') \
	    <(rv-inspect --dump "$T/png.rvs" | awk -F'\t' '$3 == "sample" { print $4, $5, $6, $12, $14 }')
	run -0 bash -c "rv-inspect '$T/png.rvs' | awk '\$1 == \"encode.format\" { print \$2 }'"
	[ "$output" = png ]
	# the images take fewer bytes than their 784 pixels
	[ "$(rv-inspect --dump "$T/png.rvs" | awk -F'\t' '$3 == "sample" { s += $16 } END { print s < 300 * 784 }')" = 1 ]
}

@test "rv-encode --format jpeg: near the pixels, fewer bytes at a lower quality; the same bytes for any -j" {
	need_torch PIL
	command -v convert >/dev/null || skip "needs ImageMagick (make deps)"
	local q prev=0 n i
	# ImageMagick's built-in pictures: a photograph (rose), drawings
	mkdir "$T/img"
	for i in rose wizard logo granite; do
		convert "$i:" -resize 128x128 "$T/img/$i.png"
	done
	convert rose: -resize 224x150 "$T/img/rose2.png"
	rv-decode -q "$T/img" -o "$T/raw.rvs"
	pngs "$T/raw.rvs" "$T/raw"
	for q in 50 90 100; do
		rv-encode -q -j 1 --quality "$q" "$T/raw.rvs" -o "$T/q$q.rvs"
		rv-encode -q -j 2 --quality "$q" "$T/raw.rvs" -o "$T/q$q-j2.rvs"
		cmp "$T/q$q.rvs" "$T/q$q-j2.rvs"
		run -0 dumpcol "$T/q$q.rvs" 10
		[ "$output" = "jpeg 5" ]
		n=$(rv-inspect --dump "$T/q$q.rvs" | awk -F'\t' '$3 == "sample" { s += $16 } END { print s }')
		[ "$n" -gt "$prev" ] || { echo "q$q: $n bytes, not more than $prev"; false; }
		prev=$n
		pngs "$T/q$q.rvs" "$T/q$q"
	done
	# 4:4:4: the chroma at full resolution, more bytes than 4:2:0
	rv-encode -q --quality 90 --subsample 444 "$T/raw.rvs" -o "$T/q90-444.rvs"
	[ "$(rv-inspect --dump "$T/q90-444.rvs" | awk -F'\t' '$3 == "sample" { s += $16 } END { print s }')" -gt \
	    "$(rv-inspect --dump "$T/q90.rvs" | awk -F'\t' '$3 == "sample" { s += $16 } END { print s }')" ]
	run -0 bash -c "rv-inspect '$T/q90-444.rvs' | awk '\$1 == \"encode.subsample\" { print \$2 }'"
	[ "$output" = 444 ]
	pngs "$T/q90-444.rvs" "$T/q90-444"
	# the decoded pixels against the originals: mean PSNR in dB
	run -0 "$PY" - "$T/raw" "$T/q50" "$T/q90" "$T/q100" "$T/q90-444" <<'PY'
import math, os, sys
import numpy as np
from PIL import Image
raw = sys.argv[1]
for d in sys.argv[2:]:
    p = []
    for f in sorted(os.listdir(raw)):
        a = np.asarray(Image.open(os.path.join(raw, f)), dtype=np.float64)
        b = np.asarray(Image.open(os.path.join(d, f)), dtype=np.float64)
        assert a.shape == b.shape, (f, a.shape, b.shape)
        mse = ((a - b) ** 2).mean()
        p.append(99.0 if mse == 0 else 10 * math.log10(255 ** 2 / mse))
    print(os.path.basename(d), round(sum(p) / len(p), 1))
PY
	local p50 p90 p100 p444
	p50=$(awk '$1 == "q50" { print $2 }' <<< "$output")
	p90=$(awk '$1 == "q90" { print $2 }' <<< "$output")
	p100=$(awk '$1 == "q100" { print $2 }' <<< "$output")
	p444=$(awk '$1 == "q90-444" { print $2 }' <<< "$output")
	awk -v a="$p50" -v b="$p90" -v c="$p100" -v d="$p444" 'BEGIN { exit !(a >= 28 && b >= 33 && c > b && b > a && d > b) }' ||
	    { echo "$output"; false; }
}

@test "rv-encode: samples in the format asked pass untouched; the other format is decoded and encoded; grey stays grey" {
	need_fixtures
	local d="$FIX/ds/flat"
	rv-decode -q --encoded "$d" -o "$T/enc.rvs"
	run -0 dumpcol "$T/enc.rvs" 10
	[ "$output" = $'jpeg 1\npng 2' ]
	rv-encode -q "$T/enc.rvs" -o "$T/j.rvs"
	run -0 dumpcol "$T/j.rvs" 10
	[ "$output" = "jpeg 3" ]
	# the JPEG went on as it came: the same id, size and bytes
	local id want
	id=$(rv-inspect --dump "$T/enc.rvs" | awk -F'\t' '$10 == "jpeg" { print $5 }')
	want=$(rv-inspect --dump "$T/enc.rvs" | awk -F'\t' '$10 == "jpeg" { print $7, $8, $9, $16 }')
	[ "$(rv-inspect --dump "$T/j.rvs" | awk -F'\t' -v id="$id" '$3 == "sample" && $5 == id { print $7, $8, $9, $16 }')" = "$want" ]
	# stored frames (rv-encode's default level 0): the file's bytes lie
	# in the stream as they are
	python3 -c 'import sys; sys.exit(open(sys.argv[1], "rb").read() not in open(sys.argv[2], "rb").read())' \
	    "$d/1.jpg" "$T/j.rvs"
	rv-encode -q --format png "$T/enc.rvs" -o "$T/p.rvs"
	run -0 dumpcol "$T/p.rvs" 10
	[ "$output" = "png 3" ]
	# lossless both ways: the PNGs' pixels are those decoded from them
	pngs "$T/enc.rvs" "$T/a"
	pngs "$T/p.rvs" "$T/b"
	diff -r "$T/a" "$T/b"
	# grey Fashion-MNIST stays one channel
	rv-decode -q --limit 5 "$IMG" "$LAB" | rv-encode -q -o "$T/g.rvs"
	run -0 dumpcol "$T/g.rvs" 9
	[ "$output" = "1 5" ]
}

@test "rv-encode: stages that need pixels decode its output (rv-augment, rv-refurbish, rv-score's thumbnails); rv-batch refuses it naming the stage to put first; the pipeline trains" {
	rv-decode -q --limit 256 --epochs 2 --shuffle "$IMG" "$LAB" |
	    rv-encode -q -o "$T/e.rvs"
	run -1 --separate-stderr rv-batch -q -b 64 "$T/e.rvs" -o "$T/x.rvs"
	[[ "$stderr" == *"is an encoded jpeg; decode it first (rv-augment or rv-decode without --encoded)"* ]]
	[ ! -e "$T/x.rvs" ]
	rv-augment -q 'random_crop size=28 padding=2; flip' "$T/e.rvs" |
	    rv-batch -q -b 64 -o "$T/b.rvs"
	run -0 bash -c "rv-inspect --dump '$T/b.rvs' | awk -F'\t' '\$3 == \"batch\"' | wc -l"
	[ "$output" = 8 ]
	# rv-score's assistant looks at thumbnails decoded from them
	run -0 --separate-stderr rv-score -v --budget 0.5 "$T/e.rvs" -o "$T/s.rvs"
	[[ "${stderr_lines[-1]}" == *"; 256 encoded samples decoded reduced for the assistant, 256 from its cache" ]]
	run -0 dumpcol "$T/s.rvs" 10
	[ "$output" = "jpeg 384" ]
	rv-refurbish -q --partial 'randaugment n=1 m=5' --final flip --reuse 2 \
	    --epochs 2 --batch 32 <(rv-decode -q --limit 256 "$IMG" "$LAB" | rv-encode -q) |
	    rv-batch -q -b 64 -o "$T/r.rvs"
	run -0 dumpcol "$T/r.rvs" 3
	[ "$output" = "" ]
	run -0 bash -c "rv-inspect --dump '$T/r.rvs' | awk -F'\t' '\$3 == \"batch\" { n += \$11 } END { print n }'"
	[ "$output" = 512 ]
	rv-train-gpu -q --max-steps 4 "$T/b.rvs" -o "$T/summary.txt"
	[ -s "$T/summary.txt" ]
}

@test "rv-encode: bad options exit 2 in one line; a batch, or a sample that will not encode, one line naming the record; --strict; nothing half-written" {
	need_fixtures
	local q
	rv-decode -q --limit 10 "$IMG" "$LAB" -o "$T/raw.rvs"
	for q in 0 101 x 9.5; do
		run -2 --separate-stderr rv-encode --quality "$q" "$T/raw.rvs" -o "$T/x.rvs"
		[ "${stderr_lines[0]}" = "rv-encode: --quality: '$q': not a quality from 1 to 100" ]
	done
	run -2 --separate-stderr rv-encode --format gif "$T/raw.rvs" -o "$T/x.rvs"
	[ "${stderr_lines[0]}" = "rv-encode: --format: 'gif': not a format rv-encode writes (jpeg, png)" ]
	run -2 --separate-stderr rv-encode --subsample 411 "$T/raw.rvs" -o "$T/x.rvs"
	[ "${stderr_lines[0]}" = "rv-encode: --subsample: '411': not a chroma subsampling (420 or 444)" ]
	run -2 --separate-stderr rv-encode --format png --subsample 444 "$T/raw.rvs" -o "$T/x.rvs"
	[ "${stderr_lines[0]}" = "rv-encode: --subsample: only with --format jpeg (PNG is lossless)" ]
	run -2 --separate-stderr rv-encode --format png --quality 90 "$T/raw.rvs" -o "$T/x.rvs"
	[ "${stderr_lines[0]}" = "rv-encode: --quality: only with --format jpeg (PNG is lossless)" ]
	[ "${stderr_lines[1]}" = "Try 'rv-encode --help' for more information." ]
	[ ! -e "$T/x.rvs" ]
	command -v script >/dev/null &&
	    run -0 script -qec "rv-encode -q '$T/raw.rvs'; echo rc=\$?" /dev/null &&
	    [[ "$output" == *"rv-encode: refusing to write a binary stream to a terminal; redirect it or use -o FILE"*"rc=1"* ]]
	rv-batch -q -b 5 "$T/raw.rvs" -o "$T/b.rvs"
	run -1 --separate-stderr rv-encode "$T/b.rvs" -o "$T/x.rvs"
	[ "$stderr" = "rv-encode: '$T/b.rvs': record 1 is a batch; encode before rv-batch" ]
	[ ! -e "$T/x.rvs" ]
	# a corrupt JPEG among good ones, converted to PNG: skipped, counted
	mkdir "$T/ds"
	cp "$FIX/img/grey.jpg" "$T/ds/a.jpg"
	cp "$FIX/img/corrupt.jpg" "$T/ds/b.jpg"
	cp "$FIX/img/grey.png" "$T/ds/c.png"
	rv-decode -q --encoded "$T/ds" -o "$T/enc.rvs" 2> /dev/null
	local n
	n=$(rv-inspect --dump "$T/enc.rvs" | awk -F'\t' '$3 == "sample"' | wc -l)
	[ "$n" = 3 ]	# rv-decode --encoded passes the bytes on unread
	run -0 --separate-stderr rv-encode -v --format png "$T/enc.rvs" -o "$T/p.rvs"
	[[ "${stderr_lines[0]}" =~ ^"rv-encode: '$T/enc.rvs': record "[0-9]+" (id "[0-9]+"): ".*"(skipped)"$ ]]
	[[ "${stderr_lines[1]}" =~ ^"rv-encode: 1 samples encoded as png, 1 already so, 1 skipped; " ]]
	run -0 dumpcol "$T/p.rvs" 10
	[ "$output" = "png 2" ]
	run -1 --separate-stderr rv-encode --strict --format png "$T/enc.rvs" -o "$T/s.rvs"
	[[ "$stderr" =~ ^"rv-encode: '$T/enc.rvs': record "[0-9]+" (id "[0-9]+"): " ]]
	[ "${#stderr_lines[@]}" = 1 ]
	[ ! -e "$T/s.rvs" ]
}

@test "bench/offline.sh: the bytes and the CPU of each way of storing offline epochs, against the standard pipeline; bad settings refused" {
	command -v convert >/dev/null || skip "needs ImageMagick (make deps)"
	command -v /usr/bin/time >/dev/null || skip "needs time(1) (make deps)"
	local i
	mkdir "$T/img"
	for i in rose wizard logo granite; do
		convert "$i:" -resize 256x256 -quality 90 "$T/img/$i.jpg"
	done
	run -0 env OFFLINE_PHOTOS="$T/img" BENCH_SEEDS=0 BENCH_EPOCHS=2 \
	    RV_BUILD="${BIN%/bin}" bash "$REPO/bench/offline.sh"
	[[ "${lines[0]}" == "# offline epochs: 4 photographs, 2 epochs of 224x224, "* ]]
	# bytes: raw is the unit; PNG under it, JPEG q90 under q95
	[[ "$output" =~ $'\n'"0     raw "[\ 0-9.]+" 1.000"$'\n' ]]
	awk '$1 == 0 { r[$2] = $4 } END {
	    exit !(r["png"] < 1 && r["jpeg-q90"] < r["jpeg-q95"] && r["jpeg-q95"] < r["png"]) }' <<< "$output"
	# CPU: a row a store and the standard pipeline, each with its ratio
	[ "$(grep -cE '^(raw|png|jpeg-q95|jpeg-q90|standard) +(-|[0-9.]+) +[0-9.]+ +([0-9.]+|-)$' <<< "$output")" = 5 ] ||
	    { echo "$output"; false; }
	# stored once (4 + 1 partials for 2 epochs of 4): under the epochs
	# stored whole, raw and as JPEG q90, each served with its ratio
	[ "$(grep -cE '^0 +once-(raw|png|q95|q90) +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9.]+|-)$' <<< "$output")" = 4 ] ||
	    { echo "$output"; false; }
	awk '$1 == 0 { r[$2] = $4 } END {
	    exit !(r["once-raw"] < 0.7 && r["once-q90"] < r["jpeg-q90"]) }' <<< "$output"
	run -1 --separate-stderr env BENCH_EPOCHS=x bash "$REPO/bench/offline.sh"
	[ "$stderr" = "offline.sh: BENCH_EPOCHS 'x': not a count of epochs" ]
	run -1 --separate-stderr env OFFLINE_PHOTOS="$T/none" RV_BUILD="${BIN%/bin}" bash "$REPO/bench/offline.sh"
	[ "$stderr" = "offline.sh: OFFLINE_PHOTOS '$T/none': no such folder" ]
}
