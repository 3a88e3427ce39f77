# rv-inspect on Fashion-MNIST streams made by rv-decode (and rv-batch): the
# summary against the IDX labels, --dump, the headline round trip IDX ->
# stream -> PNG (pixels compared with ImageMagick against the raw IDX
# bytes), contact-sheet geometry, and the error contract.
# shellcheck shell=bash disable=SC2154

load helpers

NAMES=("T-shirt/top" "Trouser" "Pullover" "Dress" "Coat" "Sandal" "Shirt"
    "Sneaker" "Bag" "Ankle boot")

setup_file() {
	need_fmnist
	local t="$BATS_FILE_TMPDIR" img lab
	img="$FMNIST/train-images-idx3-ubyte.gz"
	lab="$FMNIST/train-labels-idx1-ubyte.gz"
	rv-decode -q --limit 100 "$img" "$lab" > "$t/x.rvs"
	rv-decode -q --limit 100 --channels 3 "$img" "$lab" > "$t/rgb.rvs"
	rv-decode -q --limit 10 --epochs 2 --shuffle "$img" "$lab" > "$t/e2.rvs"
	rv-batch -q -b 32 "$t/x.rvs" > "$t/b.rvs"
	# the first 100 images and labels, raw
	gzip -dc "$img" | head -c $((16 + 784 * 100)) | tail -c +17 > "$t/img.raw"
	gzip -dc "$lab" | head -c $((8 + 100)) | tail -c +9 |
	    od -An -tu1 -v -w1 | tr -d ' ' > "$t/labels"
}

setup() {
	T="$BATS_FILE_TMPDIR"
	W="$BATS_TEST_TMPDIR"
}

@test "rv-inspect: usage errors exit 2, the reason first, then where the usage is" {
	local args want
	# shellcheck disable=SC2086
	while IFS='|' read -r args want; do
		run -2 --separate-stderr rv-inspect $args "$T/x.rvs"
		[ -z "$output" ]
		[ "${stderr_lines[0]}" = "rv-inspect: $want" ] ||
		    { echo "$args: got '${stderr_lines[0]}'"; return 1; }
		[ "${stderr_lines[1]}" = "Try 'rv-inspect --help' for more information." ]
	done <<-'EOF'
	--bogus|unknown option '--bogus'
	-x|unknown option '-x'
	-k 5|-k needs --png or --grid
	--cols 4|--cols needs --grid
	--scale 2|--scale needs --grid
	--grid g.png -k 0|-k: '0': out of range [1, 16777216]
	--grid g.png --cols 0|--cols: '0': out of range [1, 4096]
	--grid g.png --scale 65|--scale: '65': out of range [1, 64]
	--grid g.png --scale x|--scale: 'x': not a non-negative integer
	--tile 64|--tile needs --grid
	--grid g.png --tile 15|--tile: '15': out of range [16, 512]
	--grid g.png --tile 513|--tile: '513': out of range [16, 512]
	--grid g.png --tile 64 --scale 2|--scale and --tile: give one
	--level 20|--level: '20': out of range [-7, 19]
	EOF
	run -2 --separate-stderr rv-inspect --png
	[ "${stderr_lines[0]}" = "rv-inspect: option '--png' needs an argument" ]
	run -2 --separate-stderr rv-inspect -k
	[ "${stderr_lines[0]}" = "rv-inspect: option '-k' needs an argument" ]
	[ ! -e g.png ]
}

@test "rv-inspect: --help and --version print to stdout and exit 0" {
	run -0 --separate-stderr rv-inspect --help
	[ -z "$stderr" ]
	[[ "${lines[0]}" == "usage: rv-inspect "* ]]
	run -0 --separate-stderr rv-inspect -V
	[ "$output" = "rv-inspect 0.1.0" ]
}

@test "rv-inspect: the man page lints clean and documents every long option" {
	slow
	run -0 mandoc -T lint -W warning "$REPO/man/rv-inspect.1"
	[ -z "$output" ]
	local opt name
	rv-inspect --help > "$W/usage"
	for opt in $(grep -o -- '--[a-z-]*' "$W/usage"); do
		name=${opt#--}
		grep -qF -- "Fl \\-${name//-/\\-}" "$REPO/man/rv-inspect.1" ||
		    { echo "$opt not in the page"; return 1; }
	done
}

# The class lines the summary must print for the first 100 labels.
class_lines() {
	local counts=(0 0 0 0 0 0 0 0 0 0) l cw=1 c
	while read -r l; do counts[l]=$((counts[l] + 1)); done < "$T/labels"
	for c in "${counts[@]}"; do
		[ ${#c} -gt $cw ] && cw=${#c}
	done
	for l in 0 1 2 3 4 5 6 7 8 9; do
		printf '  %d  %-11s  %*d  %5.1f%%\n' "$l" "${NAMES[l]}" "$cw" \
		    "${counts[l]}" "${counts[l]}"
	done
}

@test "rv-inspect: the summary of 100 Fashion-MNIST samples" {
	slow
	local payload size
	payload=$(rv-inspect --dump "$T/x.rvs" | awk -F '\t' 'NR > 1 {
	    s += $16 } END { print s }')
	size=$(stat -c %s "$T/x.rvs")
	run -0 --separate-stderr rv-inspect "$T/x.rvs"
	[ -z "$stderr" ]
	[ "$(printf '%s\n' "${lines[@]:0:12}")" = "records      102 (sample 100, batch 0, epoch-end 1, meta 1)
samples      100 (ids 0 to 99)
bytes        $size input, $payload payload
epochs       1
  0          100 samples, epoch-end 100
shapes       28x28x1 100
dtypes       u8 100
flags        partial 0, final 0, cached 0, scored 0, reweighted 0
uses         none
weights      all 1
scores       none
classes      10 (100 labelled, 0 unlabelled)" ]
	[ "$(printf '%s\n' "${lines[@]:12:10}")" = "$(class_lines)" ]
	[[ "${lines[22]}" == "meta         "*" keys" ]]
	[[ "$output" == *"
  class.0  T-shirt/top
"* ]]
	# the same text from stdin, from -o FILE, and every time
	run -0 --separate-stderr rv-inspect < "$T/x.rvs"
	[ "$output" = "$(rv-inspect "$T/x.rvs")" ]
	run -0 --separate-stderr rv-inspect -o "$W/s.txt" "$T/x.rvs"
	[ -z "$output" ]
	[ "$(cat "$W/s.txt")" = "$(rv-inspect - < "$T/x.rvs")" ]
}

@test "rv-inspect: batches count as their samples" {
	run -0 --separate-stderr rv-inspect "$T/b.rvs"
	[ "${lines[0]}" = "records      6 (sample 0, batch 4, epoch-end 1, meta 1)" ]
	[ "${lines[1]}" = "samples      100 (ids 0 to 99)" ]
	[ "${lines[4]}" = "  0          100 samples, epoch-end 100" ]
	[ "${lines[5]}" = "shapes       28x28x1 100" ]
	[ "$(printf '%s\n' "${lines[@]:12:10}")" = "$(class_lines)" ]
}

@test "rv-inspect: two epochs, -v and files read as one stream" {
	run -0 --separate-stderr rv-inspect -v "$T/e2.rvs"
	[ "${lines[0]}" = "records      23 (sample 20, batch 0, epoch-end 2, meta 1)" ]
	[ "${lines[3]}" = "epochs       2" ]
	[ "${lines[4]}" = "  0          10 samples, epoch-end 10" ]
	[ "${lines[5]}" = "  1          10 samples, epoch-end 10" ]
	[ "$stderr" = "rv-inspect: 23 records, 20 samples, $(stat -c %s \
	    "$T/e2.rvs") bytes read" ]
	cat "$T/x.rvs" "$T/b.rvs" > "$W/cat.rvs"
	run -0 rv-inspect "$T/x.rvs" "$T/b.rvs"
	[ "$output" = "$(rv-inspect "$W/cat.rvs")" ]
	[ "${lines[0]}" = "records      108 (sample 100, batch 4, epoch-end 2, meta 2)" ]
	[ "${lines[4]}" = "  0          200 samples, epoch-end 200 in 2 records" ]
}

@test "rv-inspect: --dump prints a header and one line per record" {
	slow
	run -0 --separate-stderr rv-inspect --dump "$T/x.rvs"
	[ "${#lines[@]}" -eq 103 ]
	[ "${lines[0]}" = "$(printf 'index\toffset\tkind\tepoch\tid\tlabel\theight\twidth\tchannels\tdtype\tcount\tflags\tuses\tweight\tscore\tbytes')" ]
	[[ "${lines[1]}" == "$(printf '0\t0\tmeta\t0\t-\t-\t0\t0\t0\tnone\t0\t-\t0\t-\t-\t')"* ]]
	[[ "${lines[102]}" == "$(printf '101\t')"*"$(printf '\tepoch-end\t0\t-\t-\t0\t0\t0\tnone\t100\t-\t0\t-\t-\t0')" ]]
	# every line has 16 columns
	[ "$(printf '%s\n' "${lines[@]}" | awk -F '\t' 'NF != 16' | wc -l)" -eq 0 ]
	# samples: ids 0..99 in order, labels from the IDX file, 784 bytes
	[ "$(printf '%s\n' "${lines[@]}" | awk -F '\t' '$3 == "sample" {
	    print $5 }')" = "$(seq 0 99)" ]
	[ "$(printf '%s\n' "${lines[@]}" | awk -F '\t' '$3 == "sample" {
	    print $6 }')" = "$(cat "$T/labels")" ]
	[ "$(printf '%s\n' "${lines[@]}" | awk -F '\t' '$3 == "sample" &&
	    $7 $8 $9 $10 $11 $14 $15 $16 == "28281u811-784"' | wc -l)" -eq 100 ]
	# a batch is one line, its members' ids and labels not shown
	run -0 rv-inspect --dump "$T/b.rvs"
	[ "${#lines[@]}" -eq 7 ]
	[[ "${lines[5]}" == "$(printf '4\t')"*"$(printf '\tbatch\t0\t-\t-\t28\t28\t1\tu8\t4\t-\t0\t-\t-\t3200')" ]]
}

@test "rv-inspect: --png writes the IDX pixels exactly (IDX -> stream -> PNG)" {
	slow
	local want
	run -0 --separate-stderr rv-inspect -q --png "$W/png" "$T/x.rvs"
	want=$(paste -d ' ' <(seq 0 99) "$T/labels" |
	    while read -r i l; do printf 'e000-id%06d-l%d.png\n' "$i" "$l"; done)
	[ "$(ls "$W/png")" = "$want" ]
	convert "$W"/png/*.png -depth 8 gray:- | cmp - "$T/img.raw"
	run identify -format '%w %h %[channels]\n' "$W/png/e000-id000042-l$(sed -n 43p "$T/labels").png"
	[ "$output" = "28 28 gray" ]
	# batched, the same files; RGB streams give RGB files of grey pixels
	rv-inspect --png "$W/pngb" "$T/b.rvs" > /dev/null
	diff -r "$W/png" "$W/pngb"
	rv-inspect -k 3 --png "$W/rgb" "$T/rgb.rvs" > /dev/null
	[ "$(ls "$W/rgb" | wc -l)" -eq 3 ]
	convert "$W"/rgb/*.png -depth 8 gray:- | cmp - <(head -c $((784 * 3)) "$T/img.raw")
	run identify -format '%[channels]' "$W/rgb/e000-id000000-l9.png"
	[ "$output" = "srgb" ]
}

@test "rv-inspect: --png decodes encoded samples; -k takes the first K" {
	slow
	local b
	rv-inspect -k 12 --png "$W/src" "$T/x.rvs" > /dev/null
	rv-decode -q --encoded --channels 1 "$W/src" > "$W/enc.rvs"
	run -0 rv-inspect --dump "$W/enc.rvs"
	[[ "${lines[2]}" == *"$(printf '\t28\t28\t1\tpng\t1\t')"* ]]
	rv-inspect -k 10 --png "$W/out" "$W/enc.rvs" > /dev/null
	[ "$(ls "$W/out")" = "$(seq -f 'e000-id%06g.png' 0 9)" ]
	convert "$W"/out/*.png -depth 8 gray:- |
	    cmp - <(head -c $((784 * 10)) "$T/img.raw")
	# a sample that does not decode names its record, byte and id; the
	# files before it stay
	head -c 200 "$W/src/e000-id000001-l0.png" > "$W/cut.png"
	mv "$W/cut.png" "$W/src/e000-id000001-l0.png"
	rv-decode -q --encoded --channels 1 "$W/src" > "$W/bad.rvs"
	b=$(rv-inspect --dump "$W/bad.rvs" | awk -F '\t' '$1 == 2 {
	    print $2 }')
	run -1 --separate-stderr rv-inspect --png "$W/bad" "$W/bad.rvs"
	# the reason is the codec's ("truncated PNG data")
	[[ "$stderr" == "rv-inspect: '$W/bad.rvs': record 2 at byte $b: id 1: "?* ]]
	[ -z "$output" ]
	[ "$(ls "$W/bad")" = "e000-id000000.png" ]
	# the same epoch and id twice in one run: -n2
	rv-inspect -k 101 --png "$W/dup" "$T/x.rvs" "$T/x.rvs" > /dev/null
	[ "$(ls "$W/dup" | wc -l)" -eq 101 ]
	[ -f "$W/dup/e000-id000000-l$(head -1 "$T/labels")-n2.png" ]
}

@test "rv-inspect: --grid draws a contact sheet of the expected size" {
	slow
	# 64 tiles of 28x28 at the automatic scale 3, 8 columns
	run -0 rv-inspect -q --grid "$W/g.png" "$T/x.rvs"
	[ "$(identify -format '%w %h %[channels]' "$W/g.png")" = "690 770 srgb" ]
	# 10 tiles, 5 columns, scale 1: 5*28 + 6*2, 2*(28 + 10) + 3*2
	rv-inspect -k 10 --cols 5 --scale 1 --grid "$W/g2.png" "$T/b.rvs" > /dev/null
	[ "$(identify -format '%w %h' "$W/g2.png")" = "152 82" ]
	# the tile pixels are the samples' pixels: tile 0 at (2, 2)
	convert "$W/g2.png" -crop 28x28+2+2 -depth 8 gray:- |
	    cmp - <(head -c 784 "$T/img.raw")
	# unlabelled samples get no label band
	rv-inspect -k 10 --png "$W/src" "$T/x.rvs" > /dev/null
	rv-decode -q --encoded --channels 1 "$W/src" |
	    rv-inspect -k 10 --cols 5 --scale 1 --grid "$W/g3.png" > /dev/null
	[ "$(identify -format '%w %h' "$W/g3.png")" = "152 62" ]
	# nothing to draw is an error, and leaves no file
	run -1 --separate-stderr rv-inspect --grid "$W/g4.png" /dev/null
	[ "$stderr" = "rv-inspect: '$W/g4.png': no samples to draw" ]
	[ -z "$output" ]
	[ ! -e "$W/g4.png" ]
}

@test "rv-inspect: --tile N draws a sheet of photos in N-pixel tiles, labels at the font's size" {
	slow
	local i
	need_fixtures
	mkdir -p "$W/ph/big" "$W/ph/small"
	for i in 0 1 2 3; do
		cp "$FIX/img/big.jpg" "$W/ph/big/b$i.jpg"
	done
	cp "$FIX/img/cmyk.jpg" "$FIX/img/progressive.jpg" "$FIX/img/rgb.jpg" \
	    "$FIX/img/rgb444.jpg" "$W/ph/small/"
	# 64 photos, classes big and small: each epoch 4 of 640x480, 4 of 96x64
	rv-decode -q --epochs 8 "$W/ph" > "$W/ph.rvs"
	# by default big tiles are 512x384 (reduced to 512): 8 columns of
	# 512 + 9 gaps, 8 rows of 384 + 10 + 9 gaps
	rv-inspect -q --grid "$W/d.png" "$W/ph.rvs" > /dev/null
	[ "$(identify -format '%w %h' "$W/d.png")" = "4114 3170" ]
	# --tile 128: 128x96 cells, 8*128 + 18 by 8*(96 + 10) + 18
	run -0 --separate-stderr rv-inspect -q -v --tile 128 --grid "$W/t.png" \
	    "$W/ph.rvs"
	[ "$(identify -format '%w %h %[channels]' "$W/t.png")" = "1042 866 srgb" ]
	[[ "$stderr" == *", a 1042x866 sheet of 64" ]]
	[ "$(stat -c %s "$W/t.png")" -lt $(($(stat -c %s "$W/d.png") / 4)) ]
	# tile 0, at (2, 2), is big.jpg averaged over blocks of 5x5 (ImageMagick's
	# decoding in big.jpg.rgb; 1 of difference allowed for another decoder)
	convert "$W/t.png" -crop 128x96+2+2 -depth 8 rgb:"$W/t0.rgb"
	run -0 python3 - "$FIX/img/big.jpg.rgb" "$W/t0.rgb" <<-'EOF'
	import sys
	a, t = (open(f, "rb").read() for f in sys.argv[1:3])
	m = 0
	for y in range(96):
	    for x in range(128):
	        for c in range(3):
	            s = sum(a[((5 * y + j) * 640 + 5 * x + i) * 3 + c]
	                    for j in range(5) for i in range(5))
	            m = max(m, abs((s + 12) // 25 - t[(y * 128 + x) * 3 + c]))
	print("max difference", m)
	EOF
	[[ "$output" == "max difference "[01] ]]
	# tile 4, cmyk.jpg, is smaller than the tile: drawn as it is, centred
	# in its cell at (2 + 4*130 + 16, 2 + 16)
	rv-inspect -q -k 5 --png "$W/png" "$W/ph.rvs" > /dev/null
	cmp <(convert "$W/t.png" -crop 96x64+538+18 -depth 8 rgb:-) \
	    <(convert "$W/png/e000-id000004-l1.png" -depth 8 rgb:-)
	# the labels: "big" under tile 0, the same 17x7 pixels as on the
	# default sheet (the font is never scaled down)
	run -0 convert "$W/t.png" -crop 128x10+2+98 +repage -trim \
	    -format '%w %h' info:
	[ "$output" = "17 7" ]
	cmp <(convert "$W/d.png" -crop 512x10+2+386 +repage -trim +repage \
	    -depth 8 rgb:-) <(convert "$W/t.png" -crop 128x10+2+98 +repage \
	    -trim +repage -depth 8 rgb:-)
	# and "small" under tile 4 (its last column blank)
	run -0 convert "$W/t.png" -crop 128x10+522+98 +repage -trim \
	    -format '%w %h' info:
	[ "$output" = "28 7" ]
	# Fashion-MNIST at --tile 100: 28x28 magnified 3 times (84 <= 100)
	rv-inspect -q -k 10 --cols 5 --tile 100 --grid "$W/f.png" "$T/x.rvs" \
	    > /dev/null
	[ "$(identify -format '%w %h' "$W/f.png")" = "432 194" ]
}

@test "rv-inspect: a truncated stream names the record and byte, exit 1" {
	slow
	local n b
	head -c 1000 "$T/x.rvs" > "$W/cut.rvs"
	# the record that straddles byte 1000, from the dump of the whole
	read -r n b < <(rv-inspect --dump "$T/x.rvs" |
	    awk -F '\t' 'NR > 1 && $2 < 1000 { n = $1; b = $2 } END {
	    print n, b }')
	run -1 --separate-stderr rv-inspect "$W/cut.rvs"
	[ "$stderr" = "rv-inspect: '$W/cut.rvs': record $n at byte $b: truncated frame" ]
	[ -z "$output" ]
	run -1 --separate-stderr rv-inspect < "$W/cut.rvs"
	[ "$stderr" = "rv-inspect: '<stdin>': record $n at byte $b: truncated frame" ]
	mkdir "$W/o"
	run -1 --separate-stderr rv-inspect -o "$W/o/s.txt" "$W/cut.rvs"
	[ "$stderr" = "rv-inspect: '$W/cut.rvs': record $n at byte $b: truncated frame" ]
	[ -z "$(ls -A "$W/o")" ]
	run -1 --separate-stderr rv-inspect --grid "$W/g.png" "$W/cut.rvs"
	[ ! -e "$W/g.png" ]
	# the dump keeps the records before the bad one
	run -1 --separate-stderr rv-inspect --dump "$W/cut.rvs"
	[ "${#lines[@]}" -eq $((n + 1)) ]
	# not a stream; no such file
	echo "hello world" > "$W/text"
	run -1 --separate-stderr rv-inspect "$T/x.rvs" "$W/text"
	[ "$stderr" = "rv-inspect: '$W/text': record 0 at byte 0: not an rv stream: it looks like text (rv-decode(1) makes a stream of a dataset)" ]
	# what it looks like: a dataset given where a stream is wanted
	gzip -c "$W/text" > "$W/text.gz"
	run -1 --separate-stderr rv-inspect "$W/text.gz"
	[ "$stderr" = "rv-inspect: '$W/text.gz': record 0 at byte 0: not an rv stream: it looks like gzip data (rv-decode(1) makes a stream of a dataset)" ]
	tar -cf "$W/t.tar" -C "$W" text
	run -1 --separate-stderr rv-inspect "$W/t.tar"
	[[ "$stderr" == *": not an rv stream: it looks like a tar archive (rv-decode(1) makes a stream of a dataset)" ]]
	[ -z "$output" ]
	run -1 --separate-stderr rv-inspect "$W/nope.rvs"
	[ "$stderr" = "rv-inspect: '$W/nope.rvs': No such file or directory" ]
	# a full disk under the report is a failure too
	run -1 --separate-stderr bash -c 'rv-inspect "$1" > /dev/full' _ \
	    "$T/x.rvs"
	[ "$stderr" = "rv-inspect: '<stdout>': write: No space left on device" ]
}
