#!/usr/bin/env bats
# rv-augment: op specs applied to sample streams.  The standard pipeline
# end to end on Fashion-MNIST and on JPEG fixtures; the determinism
# promises (-j, process split, seed, epoch); the metadata that carries the
# op count; encoded input and the decode hint; the registry against
# rv-ops(7); and every error with its exact message.

load helpers

setup_file() {
	need_fixtures
}

setup() {
	need_fmnist
	IMG="$FMNIST/train-images-idx3-ubyte.gz"
	LAB="$FMNIST/train-labels-idx1-ubyte.gz"
	T="$BATS_TEST_TMPDIR"
}

parse() {	# parse a stream file into TSV with the independent reader
	zstd -dcq "$1" | python3 "$REPO/tests/checks/rvparse.py" "${@:2}"
}

# id, epoch and pixel hash of every sample, one per line
samples() {
	parse "$1" --sha | awk -F'\t' '$1=="sample" { print $2, $3, $5, $9 }'
}

fmnist() {	# fmnist N EPOCHS OUT [rv-decode options]
	rv-decode -q --limit "$1" --epochs "$2" "${@:4}" "$IMG" "$LAB" -o "$3"
}

SPEC='rrc size=24 scale=0.3,1; flip; randaugment n=2 m=9; jitter brightness=0.4 contrast=0.4; erase'

@test "rv-augment: decode | augment | batch on Fashion-MNIST keeps every sample of every epoch" {
	run -0 bash -c "set -o pipefail; rv-decode -q --limit 300 --epochs 2 \
	    --shuffle '$IMG' '$LAB' |
	    rv-augment -q 'random_crop size=28 padding=4; flip; randaugment n=2 m=9' |
	    rv-batch -b 64 > '$T/b.rvs'"
	run -0 bash -c "zstd -dcq '$T/b.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"bsample\" { n[\$2]++; seen[\$2\" \"\$3]++; shape[\$5]++ }
	        \$1==\"batch\" { b++ } \$1==\"epoch-end\" { e++ }
	        END { for (k in seen) if (seen[k] != 1) dup++
	            print n[0], n[1], length(seen), b, e, shape[\"28x28x1\"], dup+0 }'"
	[ "$output" = "300 300 600 10 2 600 0" ]
	run -0 parse "$T/b.rvs"
	[[ "$output" == *$'#meta\taugment.ops=3\n'* ]]
	[[ "$output" == *$'#meta\taugment.spec=random_crop size=28 padding=4 fill=0 pad_mode=constant p=1; flip p=0.5; randaugment n=2 m=9 bins=31 interp=nearest fill=0 p=1\n'* ]]
}

@test "rv-augment: decode | augment | batch on JPEG and PNG fixtures" {
	slow
	run -0 bash -c "set -o pipefail; rv-decode -q --epochs 2 --shuffle \
	    '$FIX/ds/folder' |
	    rv-augment -q 'rrc size=32; flip; randaugment n=2 m=9 interp=bilinear' |
	    rv-batch -b 4 | zstd -dcq | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"bsample\" { n++; shape[\$5]++ } \$1==\"batch\" { b++ }
	        END { print n, b, shape[\"32x32x3\"] }'"
	[ "$output" = "16 4 16" ]
}

@test "rv-augment: the same bytes for -j 1 and -j 8" {
	slow
	fmnist 700 2 "$T/in.rvs" --shuffle --seed 3
	rv-augment -q -j 1 --seed 5 "$SPEC" "$T/in.rvs" -o "$T/j1.rvs"
	rv-augment -q -j 8 --seed 5 "$SPEC" "$T/in.rvs" -o "$T/j8.rvs"
	rv-augment -q -j 3 --seed 5 "$SPEC" < "$T/in.rvs" > "$T/j3.rvs"
	cmp "$T/j1.rvs" "$T/j8.rvs"
	cmp "$T/j1.rvs" "$T/j3.rvs"
}

@test "rv-augment: one process equals the spec split over two and three" {
	fmnist 300 2 "$T/in.rvs" --shuffle
	rv-augment -q --seed 9 "$SPEC" "$T/in.rvs" -o "$T/one.rvs"
	# (the last stage writes a file: pipes get stored frames)
	run -0 bash -c "set -o pipefail; rv-augment -q --seed 9 \
	    'rrc size=24 scale=0.3,1; flip' '$T/in.rvs' |
	    rv-augment -q --seed 9 -j 2 'randaugment n=2 m=9; jitter brightness=0.4 contrast=0.4; erase' \
	    -o '$T/two.rvs'"
	cmp "$T/two.rvs" "$T/one.rvs"
	run -0 bash -c "set -o pipefail; rv-augment -q --seed 9 \
	    'rrc size=24 scale=0.3,1' '$T/in.rvs' |
	    rv-augment -q --seed 9 ';flip; randaugment n=2 m=9;' |
	    rv-augment -q --seed 9 'jitter brightness=0.4 contrast=0.4; erase' \
	    > '$T/three.rvs'"
	cmp "$T/three.rvs" "$T/one.rvs"
	# an empty spec anywhere in the chain changes nothing
	run -0 bash -c "set -o pipefail; rv-augment -q --seed 9 '' '$T/in.rvs' |
	    rv-augment -q --seed 9 '$SPEC' | rv-augment -q '' > '$T/four.rvs'"
	cmp "$T/four.rvs" "$T/one.rvs"
}

@test "rv-augment: the split holds without upstream metadata too" {
	fmnist 100 1 "$T/in.rvs"
	# drop the metadata record at the head
	off=$(rv-inspect --dump "$T/in.rvs" | awk -F'\t' '$1 == 1 { print $2 }')
	tail -c +"$((off + 1))" "$T/in.rvs" > "$T/bare.rvs"
	run -0 parse "$T/bare.rvs"
	[ "${lines[0]%%$'\t'*}" = sample ]
	rv-augment -q "rrc size=20; randaugment" "$T/bare.rvs" -o "$T/one.rvs"
	run -0 bash -c "set -o pipefail; rv-augment -q 'rrc size=20' '$T/bare.rvs' |
	    rv-augment -q randaugment > '$T/two.rvs'"
	cmp "$T/two.rvs" "$T/one.rvs"
	# the metadata it writes says what ran, before the first sample
	run -0 parse "$T/one.rvs"
	[ "${lines[0]%%$'\t'*}" = meta ]
	[ "${lines[1]}" = $'#meta\tproducer=rv-augment 0.1.0' ]
	[ "${lines[2]}" = $'#meta\taugment.ops=2' ]
	[ "${lines[3]}" = $'#meta\taugment.spec=rrc size=20 scale=0.08,1 ratio=0.75,1.3333333333333333 interp=bilinear p=1; randaugment n=2 m=9 bins=31 interp=nearest fill=0 p=1' ]
}

@test "rv-augment: the seed fixes the bytes, another seed changes them" {
	slow
	fmnist 200 1 "$T/in.rvs"
	rv-augment -q --seed 1 "$SPEC" "$T/in.rvs" -o "$T/a.rvs"
	rv-augment -q --seed 1 "$SPEC" "$T/in.rvs" -o "$T/b.rvs"
	rv-augment -q --seed 2 "$SPEC" "$T/in.rvs" -o "$T/c.rvs"
	cmp "$T/a.rvs" "$T/b.rvs"
	run -1 cmp -s "$T/a.rvs" "$T/c.rvs"
	# nearly every sample differs, not just a few
	samples "$T/a.rvs" > "$T/a.txt"
	samples "$T/c.rvs" > "$T/c.txt"
	run -0 bash -c "paste -d' ' '$T/a.txt' '$T/c.txt' |
	    awk '\$4 != \$8 { d++ } END { print (d > 190) }'"
	[ "$output" = 1 ]
}

@test "rv-augment: every epoch draws afresh" {
	# no shuffle: both epochs hold the same samples in the same order
	fmnist 200 2 "$T/in.rvs"
	rv-augment -q 'rrc size=20; flip' "$T/in.rvs" -o "$T/out.rvs"
	samples "$T/out.rvs" > "$T/s.txt"
	run -0 awk '$1 == 0 { e0[$2] = $4 } $1 == 1 { n++; if (e0[$2] != $4) d++ }
	    END { print n, (d > 190) }' "$T/s.txt"
	[ "$output" = "200 1" ]
	# and the input itself was the same in both epochs
	samples "$T/in.rvs" > "$T/i.txt"
	run -0 awk '$1 == 0 { e0[$2] = $4 } $1 == 1 { if (e0[$2] != $4) d++ }
	    END { print d + 0 }' "$T/i.txt"
	[ "$output" = 0 ]
}

@test "rv-augment: p=0 passes samples through, epoch ends and flags kept" {
	slow
	fmnist 50 2 "$T/in.rvs" --shuffle
	rv-augment -q 'rrc size=20 p=0; randaugment p=0' "$T/in.rvs" -o "$T/out.rvs"
	diff <(samples "$T/in.rvs") <(samples "$T/out.rvs")
	run -0 bash -c "zstd -dcq '$T/out.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1 != \"sample\" && \$1 != \"#meta\" { print \$1, \$2, \$7 }'"
	[ "$output" = $'meta 0 0\nepoch-end 0 50\nepoch-end 1 50' ]
}

@test "rv-augment: encoded input is decoded; shapes and labels as for decoded input" {
	slow
	rv-decode -q --encoded "$FIX/ds/folder" -o "$T/enc.rvs"
	rv-decode -q "$FIX/ds/folder" -o "$T/dec.rvs"
	for spec in 'rrc size=16 scale=0.5,1; flip' 'resize size=20' \
	    'flip; rotate deg=10'; do
		rv-augment -q "$spec" "$T/enc.rvs" -o "$T/a.rvs"
		rv-augment -q "$spec" "$T/dec.rvs" -o "$T/b.rvs"
		diff <(parse "$T/a.rvs" | awk -F'\t' '$1=="sample" { print $2, $3, $4, $5, $6 }') \
		    <(parse "$T/b.rvs" | awk -F'\t' '$1=="sample" { print $2, $3, $4, $5, $6 }')
	done
	# without a hint, decoding here gives the pixels rv-decode gives
	diff <(samples "$T/a.rvs") <(samples "$T/b.rvs")
	# grey: the record's channel count is kept
	rv-decode -q --encoded --channels 1 "$FIX/ds/folder" -o "$T/enc1.rvs"
	run -0 bash -c "rv-augment -q 'resize size=20' '$T/enc1.rvs' |
	    zstd -dcq | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"sample\" { print \$5, \$6 }' | sort | uniq -c | awk '{ print \$1, \$2, \$3 }'"
	[ "$output" = "8 20x30x1 u8" ]
}

@test "rv-augment: the decode hint shrinks a large JPEG, keeping the output shape" {
	slow
	mkdir "$T/big"
	cp "$FIX/img/big.jpg" "$T/big/"
	rv-decode -q --encoded "$T/big" -o "$T/enc.rvs"
	rv-decode -q "$T/big" -o "$T/dec.rvs"
	# 640x480: resize 100 may decode at 134x100 (1/4 DCT, then area)
	rv-augment -q 'resize size=100' "$T/enc.rvs" -o "$T/a.rvs"
	rv-augment -q 'resize size=100' "$T/dec.rvs" -o "$T/b.rvs"
	samples "$T/a.rvs" > "$T/a.txt"
	samples "$T/b.rvs" > "$T/b.txt"
	run -0 cut -d' ' -f3 "$T/a.txt" "$T/b.txt"
	[ "$output" = $'100x133x3\n100x133x3' ]
	# the hint was used: the pixels differ from the full decode's
	run -1 cmp -s "$T/a.txt" "$T/b.txt"
	# with the resize second there is no hint, and no difference
	rv-augment -q 'flip p=1; resize size=100' "$T/enc.rvs" -o "$T/a.rvs"
	rv-augment -q 'flip p=1; resize size=100' "$T/dec.rvs" -o "$T/b.rvs"
	diff <(samples "$T/a.rvs") <(samples "$T/b.rvs")
	# rrc keeps its size whatever the crop
	run -0 bash -c "rv-decode -q --encoded --epochs 20 '$T/big' |
	    rv-augment -q 'rrc size=32 scale=0.5,1' | zstd -dcq |
	    python3 '$REPO/tests/checks/rvparse.py' | awk -F'\t' '\$1==\"sample\" { print \$5 }' | sort | uniq -c |
	    awk '{ print \$1, \$2 }'"
	[ "$output" = "20 32x32x3" ]
}

# JPEGs of every chroma subsampling, progressive, restart markers, grey,
# odd sizes, large enough for DCT scaling: made with ImageMagick
fused_set() {
	mkdir -p "$1/a"
	convert -size 641x487 plasma:fractal -seed 1 "$1/p.png"
	convert "$1/p.png" -quality 90 -sampling-factor 4:2:0 "$1/a/420.jpg"
	convert "$1/p.png" -quality 85 -sampling-factor 4:2:2 "$1/a/422.jpg"
	convert "$1/p.png" -quality 92 -sampling-factor 4:4:4 "$1/a/444.jpg"
	convert "$1/p.png" -interlace JPEG -quality 80 "$1/a/prog.jpg"
	convert "$1/p.png" -define jpeg:restart-interval=2 "$1/a/rst.jpg"
	convert "$1/p.png" -colorspace Gray "$1/a/grey.jpg"
	convert "$1/p.png" -resize 1333x1001! -quality 90 "$1/a/big.jpg"
	convert "$1/p.png" -crop 97x61+5+3 +repage "$1/a/small.jpg"
	rm "$1/p.png"
}

@test "rv-augment: a fused crop decode gives the bytes of decoding first; --exact everywhere" {
	slow
	fused_set "$T/f"
	rv-decode -q --epochs 4 --encoded "$T/f" -o "$T/enc.rvs"
	rv-decode -q --epochs 4 "$T/f" -o "$T/dec.rvs"
	for spec in 'rrc size=64 scale=0.08,1; flip' \
	    'rrc size=32 scale=0.5,1 p=0.5; randaugment n=2 m=9' \
	    'rrc size=100 interp=bicubic' 'rrc size=48 interp=nearest' \
	    'resized_crop top=13 left=7 height=40 width=91 size=30' \
	    'resized_crop top=-3 left=7 height=40 width=91 size=30; flip'; do
		rv-augment -q --exact "$spec" "$T/enc.rvs" -o "$T/a.rvs"
		rv-augment -q "$spec" "$T/dec.rvs" -o "$T/b.rvs"
		diff <(samples "$T/a.rvs") <(samples "$T/b.rvs")
	done
	# and for every -j
	rv-augment -q -j 1 --exact 'rrc size=64' "$T/enc.rvs" -o "$T/a.rvs"
	rv-augment -q -j 3 --exact 'rrc size=64' "$T/enc.rvs" -o "$T/b.rvs"
	cmp "$T/a.rvs" "$T/b.rvs"
	# grey output from colour files: the luma of the same pixels
	rv-decode -q --encoded --channels 1 "$T/f" -o "$T/enc1.rvs"
	rv-decode -q --channels 1 "$T/f" -o "$T/dec1.rvs"
	rv-augment -q --exact 'rrc size=40' "$T/enc1.rvs" -o "$T/a.rvs"
	rv-augment -q 'rrc size=40' "$T/dec1.rvs" -o "$T/b.rvs"
	diff <(samples "$T/a.rvs") <(samples "$T/b.rvs")
}

@test "rv-augment: without --exact, big crops decode at a DCT scale, close to the exact output" {
	slow
	fused_set "$T/f"
	rv-decode -q --epochs 6 --encoded "$T/f" -o "$T/enc.rvs"
	run -0 --separate-stderr rv-augment -v 'rrc size=64' "$T/enc.rvs" -o "$T/a.rvs"
	[[ "$stderr" =~ \(48\ decoded,\ 48\ with\ the\ crop\ fused,\ ([0-9]+)\ of\ them\ below\ full\ scale\) ]]
	[ "${BASH_REMATCH[1]}" -ge 10 ]
	rv-augment -q --exact 'rrc size=64' "$T/enc.rvs" -o "$T/b.rvs"
	run -1 cmp -s "$T/a.rvs" "$T/b.rvs"
	# same ids, epochs and shapes; pixels within a few levels on average
	diff <(samples "$T/a.rvs" | cut -d' ' -f1-3) <(samples "$T/b.rvs" | cut -d' ' -f1-3)
	mkdir "$T/pa" "$T/pb"
	rv-inspect -q --png "$T/pa" "$T/a.rvs" > /dev/null
	rv-inspect -q --png "$T/pb" "$T/b.rvs" > /dev/null
	run -0 /usr/bin/python3 - "$T/pa" "$T/pb" <<'PYEOF'
import sys, os, numpy as np
from PIL import Image
d = []
for n in sorted(os.listdir(sys.argv[1])):
    x = np.asarray(Image.open(os.path.join(sys.argv[1], n)), dtype=np.int16)
    y = np.asarray(Image.open(os.path.join(sys.argv[2], n)), dtype=np.int16)
    d.append(np.abs(x - y).mean())
print("%.2f %d" % (max(d), len(d)))
assert max(d) < 6, d
PYEOF
}

@test "rv-augment: a cut JPEG in encoded input is skipped, named and counted; --strict stops" {
	mkdir "$T/tr"
	cp "$FIX/img/rgb.jpg" "$FIX/img/truncated.jpg" "$FIX/img/grey.jpg" "$T/tr/"
	rv-decode -q --encoded "$T/tr" -o "$T/tr.rvs"
	# fused (rrc first) and not (flip): the same warning, the rest go on
	for spec in 'rrc size=16' flip; do
		run -0 --separate-stderr rv-augment -v "$spec" "$T/tr.rvs" \
		    -o "$T/out.rvs"
		[ "${stderr_lines[0]}" = "rv-augment: '$T/tr.rvs': record 3 (id 2): truncated JPEG data (skipped)" ]
		[[ "${stderr_lines[1]}" == "rv-augment: 2 samples (2 decoded, 1 skipped"* ]]
		samples "$T/out.rvs" > "$T/s.txt"
		run -0 wc -l < "$T/s.txt"
		[ "$output" = 2 ]
		run -1 --separate-stderr rv-augment --strict "$spec" \
		    "$T/tr.rvs" -o "$T/out2.rvs"
		[ "$stderr" = "rv-augment: '$T/tr.rvs': record 3 (id 2): truncated JPEG data" ]
		[ ! -e "$T/out2.rvs" ]
	done
}

@test "rv-augment: --strict refuses JPEG header junk that the default reads through" {
	slow
	mkdir "$T/j"
	# bytes that are no marker after the first segment, as Pillow's
	# junk_jpeg_header.jpg has them
	/usr/bin/python3 -c 'import sys
b = open(sys.argv[1], "rb").read()
n = 4 + (b[4] << 8 | b[5])
open(sys.argv[2], "wb").write(b[:n] + b"junk\x00\x13\x37" + b[n:])' \
	    "$FIX/img/rgb.jpg" "$T/j/junk.jpg"
	rv-decode -q --encoded "$T/j" -o "$T/j.rvs"
	for spec in 'rrc size=16' flip; do
		run -0 --separate-stderr rv-augment -v "$spec" "$T/j.rvs" \
		    -o "$T/a.rvs"
		[[ "$stderr" == "rv-augment: 1 samples (1 decoded"[,\)]* ]]
		run -1 --separate-stderr rv-augment --strict "$spec" "$T/j.rvs" \
		    -o "$T/b.rvs"
		[ "$stderr" = "rv-augment: '$T/j.rvs': record 1 (id 0): corrupt JPEG data: 7 extraneous bytes before marker 0xdb" ]
		[ ! -e "$T/b.rvs" ]
	done
}

@test "rv-augment: a batch record is an error" {
	slow
	fmnist 10 1 "$T/in.rvs"
	rv-batch -q -b 4 "$T/in.rvs" -o "$T/b.rvs"
	run -1 --separate-stderr rv-augment flip "$T/b.rvs"
	[ "$stderr" = "rv-augment: '$T/b.rvs': record 1 is a batch; augment before rv-batch" ]
	run -1 --separate-stderr bash -c "rv-augment flip < '$T/b.rvs' > /dev/null"
	[ "$stderr" = "rv-augment: '<stdin>': record 1 is a batch; augment before rv-batch" ]
}

@test "rv-augment: a spec that does not parse exits 2 with its message" {
	fmnist 10 1 "$T/in.rvs"
	while IFS='|' read -r spec msg; do
		run -2 --separate-stderr rv-augment "$spec" "$T/in.rvs"
		[ "$stderr" = "rv-augment: $msg" ] ||
		    { echo "spec '$spec': got '$stderr', want 'rv-augment: $msg'"; false; }
		[ -z "$output" ]
	done <<'EOF'
rotat|op 1: unknown op 'rotat' (did you mean 'rotate'? rv-augment --list-ops lists them)
flip; fllip|op 2: unknown op 'fllip' (did you mean 'flip'? rv-augment --list-ops lists them)
flip; bogus|op 2: unknown op 'bogus' (rv-augment --list-ops lists them)
flip; rotate angel=3|op 2 'rotate': unknown argument 'angel' (rotate takes deg, interp, fill, p)
rotate degs=3|op 1 'rotate': unknown argument 'degs' (did you mean 'deg'? rotate takes deg, interp, fill, p)
rrc|op 1 'rrc': missing argument 'size'
rrc size=0|op 1 'rrc': size: '0': out of range [1, 65536]
rrc size=24 scale=0.9,0.1|op 1 'rrc': scale: '0.9,0.1': the first value is above the second
rotate deg=x|op 1 'rotate': deg: 'x': not a number
rotate interp=cubic|op 1 'rotate': interp: 'cubic': not one of nearest, bilinear
rotate fill=1,2|op 1 'rotate': fill: '1,2': not v or r,g,b
resize size=9 antialias=maybe|op 1 'resize': antialias: 'maybe': not a boolean (yes, no, true, false, 1 or 0)
flip p=1.5|op 1 'flip': p: '1.5': out of range [0, 1]
flip 0.5|op 1 'flip': '0.5': expected key=value
randaugment m=31|op 1 'randaugment': m: '31': out of range [0, 30] for bins=31
EOF
	run -2 --separate-stderr rv-augment
	[ "${stderr_lines[0]}" = "rv-augment: no spec given" ]
	[ "${stderr_lines[1]}" = "Try 'rv-augment --help' for more information." ]
}

@test "rv-augment: runtime errors name the input and the sample" {
	slow
	fmnist 10 1 "$T/in.rvs"
	run -1 --separate-stderr rv-augment 'random_crop size=40' "$T/in.rvs"
	[[ "$stderr" == "rv-augment: '$T/in.rvs': record 1 (id 0): op 1 'random_crop': "* ]]
	run -1 --separate-stderr rv-augment flip "$T/nope.rvs"
	[ "$stderr" = "rv-augment: '$T/nope.rvs': No such file or directory" ]
	head -c 3000 "$T/in.rvs" > "$T/cut.rvs"
	run -1 --separate-stderr rv-augment flip "$T/cut.rvs" -o "$T/out.rvs"
	[[ "$stderr" == "rv-augment: '$T/cut.rvs': record "*" at byte "*": "* ]]
	[ ! -e "$T/out.rvs" ]
}

@test "rv-augment: --list-ops lists every op, each one documented with its arguments in rv-ops(7)" {
	slow
	run -0 --separate-stderr rv-augment --list-ops
	[ -z "$stderr" ]
	printf '%s\n' "$output" > "$T/list"
	# the agreed ops (issue 3), all present
	for op in shear_x shear_y translate_x translate_y rotate resize \
	    center_crop crop resized_crop rrc random_crop flip vflip \
	    brightness color contrast sharpness posterize solarize \
	    autocontrast equalize invert hue grayscale jitter erase \
	    identity randaugment trivialaugment; do
		grep -q "^$op (" "$T/list" || { echo "no $op"; false; }
	done
	# every op line is followed by its arguments, p= last
	run -0 awk '/^[a-z]/ { if (op != "" && last != "p") print op; op = $1 }
	    /^    / { split($1, a, "="); last = a[1] }
	    END { if (last != "p") print op }' "$T/list"
	[ -z "$output" ]
	# each op is an item of rv-ops.7 and each argument one of its own
	awk '/^[a-z]/ { op = $1 } /^    / { split($1, a, "="); if (a[1] != "p") print op, a[1] }
	    /^[a-z]/ { print $1, "-" }' "$T/list" > "$T/args"
	local fails="" op arg
	while read -r op arg; do
		if [ "$arg" = - ]; then
			grep -qx "\.It Cm $op" "$REPO/man/rv-ops.7" ||
			    fails+="$op is not in rv-ops.7"$'\n'
			continue
		fi
		awk -v op="$op" -v arg="$arg" '
		    $0 == ".It Cm " op { inop = 1; next }
		    inop && /^\.It Cm [a-z_]+$/ { inop = 0 }
		    inop && index($0, ".It Cm " arg " Ns =") == 1 { found = 1 }
		    END { exit !found }' "$REPO/man/rv-ops.7" ||
			fails+="$op $arg= is not in rv-ops.7"$'\n'
	done < "$T/args"
	[ -z "$fails" ] || { printf '%s' "$fails"; false; }
	# and the page documents no op that does not exist
	run -0 bash -c "sed -n 's/^\.It Cm \([a-z_]*\)$/\1/p' '$REPO/man/rv-ops.7' |
	    while read -r op; do grep -q \"^\$op (\" '$T/list' || echo \$op; done"
	[ -z "$output" ]
}

@test "rv-augment: rv-inspect draws a contact sheet of an augmented stream" {
	slow
	run -0 bash -c "set -o pipefail; rv-decode -q --limit 64 '$IMG' '$LAB' |
	    rv-augment -q 'rrc size=28 scale=0.5,1; flip; trivialaugment' |
	    rv-inspect --grid '$T/sheet.png' > /dev/null"
	run -0 identify -format '%m' "$T/sheet.png"
	[ "$output" = PNG ]
}

@test "rv-augment: -v prints a summary; -o writes the file" {
	fmnist 100 1 "$T/in.rvs"
	run -0 --separate-stderr rv-augment -v -j 2 'flip; invert' "$T/in.rvs" -o "$T/out.rvs"
	[[ "$stderr" == "rv-augment: 100 samples (0 decoded), 2 ops, "*" s, "*" samples/s" ]]
	[ -z "$output" ]
	samples "$T/out.rvs" > "$T/s.txt"
	run -0 wc -l < "$T/s.txt"
	[ "$output" = 100 ]
}

@test "rv-augment: resize equals Pillow's on random sizes, every SIMD width and tail" {
	slow
	need_torch PIL
	mkdir -p "$T/d"
	# 48 images of random sizes, grey and RGB, noise and smooth; each
	# resized by rv (through a stream) and by Image.resize with
	# torchvision's size rule (shorter side to size, int() of the other)
	run -0 "$PY" - "$T" "$REPO/python" <<'PY'
import subprocess, sys
import numpy as np
from PIL import Image
t, sys.path[:0] = sys.argv[1], [sys.argv[2]]
import rvstream
rng = np.random.default_rng(3)
bad = []
for k in range(48):
    h, w = (int(v) for v in rng.integers(5, 400, 2))
    c = 1 if k % 4 == 0 else 3
    a = rng.integers(0, 256, (h, w, c), dtype=np.uint8)
    if k % 2:
        a = (np.cumsum(a, axis=0, dtype=np.int64) % 256).astype(np.uint8)
    im = Image.fromarray(a[:, :, 0] if c == 1 else a)
    im.save(t + "/d/i.png")
    interp = ("bilinear", "bicubic")[k // 2 % 2]
    size = int(rng.integers(3, 300))
    subprocess.run("rv-decode -q --channels %d %s/d | rv-augment -q "
                   "'resize size=%d interp=%s' -o %s/o.rvs"
                   % (c, t, size, interp, t), shell=True, check=True)
    got = [np.asarray(b.images)[0] for b in
           rvstream.Reader(t + "/o.rvs", batch_size=1)][0]
    s, l = (w, h) if w <= h else (h, w)
    ls = int(size * l / s)
    wh = (size, ls) if w <= h else (ls, size)
    ref = np.asarray(im.resize(wh, Image.BILINEAR if interp == "bilinear"
                               else Image.BICUBIC)).reshape(got.shape)
    if not np.array_equal(got, ref):
        bad.append("%dx%dx%d -> %s %s" % (w, h, c, wh, interp))
print("\n".join(bad) or "all equal")
PY
	[ "$output" = "all equal" ]
}
