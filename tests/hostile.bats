#!/usr/bin/env bats
# Hostile input: every stream reader (rv-batch, rv-inspect, rv-augment,
# rv-refurbish, rv-score, rv-train-gpu) fed truncated and corrupted streams, and rv-decode fed bad
# images, odd names and links.  The promise: the right output, or one line
# `prog: 'file': record N at byte B: reason` and exit 1; never a crash.
# The stream is 20 Fashion-MNIST samples (11 kB), so the file runs fast.

load helpers

setup_file() {
	need_fixtures
	need_fmnist
	local d="$BATS_FILE_TMPDIR"
	rv-decode -q --limit 20 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$d/s.rvs"
	# the frame boundaries (first byte of each record) and kinds
	rv-inspect --dump "$d/s.rvs" | awk -F'\t' 'NR > 1 { print $2, $3 }' \
	    > "$d/frames"
	# Corrupt copies: 24 with 1-8 bits flipped anywhere (the checksum's
	# job), 24 with a byte of one record's header or payload changed
	# and the frame recompressed with a valid checksum (the parser's job).
	python3 - "$d" <<'EOF'
import random
import subprocess
import sys

d = sys.argv[1]
raw = open(d + "/s.rvs", "rb").read()
offs = [int(l.split()[0]) for l in open(d + "/frames")] + [len(raw)]
r = random.Random(20261129)
for i in range(24):
    b = bytearray(raw)
    for _ in range(r.choice([1, 1, 2, 8])):
        b[r.randrange(len(b))] ^= 1 << r.randrange(8)
    open("%s/flip%02d.rvs" % (d, i), "wb").write(b)
for i in range(24):
    k = r.randrange(len(offs) - 1)
    frame = raw[offs[k]:offs[k + 1]]
    rec = bytearray(subprocess.run(["zstd", "-dcq"], input=frame,
                                   capture_output=True, check=True).stdout)
    # mostly the header fields that give sizes and meaning: magic,
    # version, header length, kind, dtype; shape and count; payload length
    hot = list(range(0, 10)) + list(range(28, 44)) + list(range(56, 64))
    p = r.choice(hot) if r.random() < 0.75 else r.randrange(len(rec))
    rec[p] = r.choice([0, 0xff, 0x7f, 0x80, rec[p] ^ (1 << r.randrange(8))])
    z = subprocess.run(["zstd", "-q", "-c", "--check"], input=bytes(rec),
                       capture_output=True, check=True).stdout
    out = raw[:offs[k]] + z + raw[offs[k + 1]:]
    open("%s/hdr%02d.rvs" % (d, i), "wb").write(out)
EOF
}

setup() {
	D="$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	S="$D/s.rvs"
}

# Prefix lengths to try: every frame boundary and the bytes either side of
# it, and every 53rd byte: about 280 of the 11 kB.
prefixes() {
	{
		awk '{ print $1 - 1; print $1; print $1 + 1 }' "$D/frames"
		seq 0 53 "$(stat -c %s "$S")"
		stat -c %s "$S"
	} | awk '$1 >= 0' | sort -nu
}

# Samples in the first $1 bytes of the stream, when $1 is a boundary.
samples_before() {
	awk -v L="$1" '$1 < L && $2 == "sample" { n++ } END { print n + 0 }' \
	    "$D/frames"
}

is_boundary() {
	[ "$1" -eq "$(stat -c %s "$S")" ] ||
	    awk -v L="$1" '$1 == L { f = 1 } END { exit !f }' "$D/frames"
}

# The one allowed failure: exit 1 and one line naming file, record, byte.
# (A bad metadata record is reported by rv-augment and rv-refurbish as
# "record N: metadata line ...", without the byte: accepted here.)
# check_fail PROG FILE STATUS ERRFILE
check_fail() {
	local n
	n=$(wc -l < "$4")
	if [ "$3" -ne 1 ] || [ "$n" -ne 1 ] ||
	    ! grep -qE "^$1: '$2': record [0-9]+( at byte [0-9]+)?: [^ ].*\$" "$4"; then
		echo "$1 '$2': status $3, $n lines on stderr:" >&2
		cat "$4" >&2
		return 1
	fi
}

# Run "$@ FILE" for every prefix: a cut inside a frame must fail with
# the record message.  A cut on a frame boundary: the filters (OUT =
# stream) must report samples after the last epoch-end as a truncated
# stream, and pass a stream cut before any sample; rv-inspect (OUT =
# report) reads it as a shorter stream and must count its records.
# trunc_check MULT OUT cmd...
trunc_check() {
	local mult=$1 kind=$2 L st n got prog
	shift 2
	prog=$1
	for L in $(prefixes); do
		head -c "$L" "$S" > "$T/p.rvs"
		st=0
		"$@" "$T/p.rvs" > "$T/out" 2> "$T/err" || st=$?
		if [ "$st" -ge 128 ]; then
			echo "$prog: prefix $L: killed, status $st" >&2
			cat "$T/err" >&2
			return 1
		fi
		if ! is_boundary "$L"; then
			check_fail "$prog" "$T/p.rvs" "$st" "$T/err" ||
			    { echo "(prefix $L)" >&2; return 1; }
			continue
		fi
		n=$(samples_before "$L")
		if [ "$kind" = train ] && [ "$n" -eq 0 ]; then
			# nothing to train on: refused in one line
			[ "$st" -eq 1 ] && [ "$(cat "$T/err")" = "rv-train-gpu: the input holds no batch to train on" ] ||
			    { echo "prefix $L: status $st" >&2; cat "$T/err" >&2; return 1; }
			continue
		fi
		if [ "$kind" != report ] && [ "$n" -gt 0 ] &&
		    [ "$L" -lt "$(stat -c %s "$S")" ]; then
			# samples after the last epoch-end: a stream cut
			# between records, reported as truncated
			{ check_fail "$prog" "$T/p.rvs" "$st" "$T/err" &&
			    grep -q ': truncated stream: ' "$T/err"; } ||
			    { echo "(prefix $L, a boundary)" >&2; return 1; }
			continue
		fi
		if [ "$prog" = rv-refurbish ] && [ "$n" -lt 2 ]; then
			# fewer samples than --reuse 2: refused in one line
			[ "$st" -eq 1 ] && [ "$(wc -l < "$T/err")" -eq 1 ] &&
			    grep -qE "^rv-refurbish: '$T/p.rvs': (no samples|reuse 2: more than the 1 samples)\$" "$T/err" ||
			    { echo "prefix $L: status $st" >&2; cat "$T/err" >&2; return 1; }
			continue
		fi
		if [ "$st" -ne 0 ] || [ -s "$T/err" ]; then
			echo "$prog: prefix $L (a boundary): status $st" >&2
			cat "$T/err" >&2
			return 1
		fi
		if [ "$kind" = train ]; then
			got=$(awk '$1 == "samples" { print $2 }' "$T/out")
			[ "$got" -eq "$n" ] ||
			    { echo "prefix $L: trained on $got samples" >&2; return 1; }
		elif [ "$kind" = report ]; then
			got=$(awk '$1 == "records" { print $2 }' "$T/out")
			[ "$got" -eq "$(awk -v L="$L" '$1 < L' "$D/frames" | wc -l)" ] ||
			    { echo "prefix $L: records $got" >&2; return 1; }
		else
			got=$(rv-inspect "$T/out" | awk '$1 == "samples" { print $2; exit }')
			[ "$got" -eq $((mult * n)) ] ||
			    { echo "$prog: prefix $L: $got samples, not $((mult * n))" >&2; return 1; }
		fi
	done
}

# Corrupt copies: the right output (status 0) or the record message.
corrupt_check() {
	local f st prog=$1
	for f in "$D"/flip*.rvs "$D"/hdr*.rvs; do
		st=0
		"$@" "$f" > "$T/out" 2> "$T/err" || st=$?
		if [ "$st" -ge 128 ]; then
			echo "$prog: $f: killed, status $st" >&2
			cat "$T/err" >&2
			return 1
		fi
		[ "$st" -eq 0 ] && [ ! -s "$T/err" ] && continue
		check_fail "$prog" "$f" "$st" "$T/err"
	done
}

@test "hostile: the prefix set covers every frame boundary and ~280 cuts" {
	[ "$(wc -l < "$D/frames")" -eq 22 ]
	n=$(prefixes | wc -l)
	[ "$n" -gt 250 ] && [ "$n" -lt 320 ]
}

@test "hostile: rv-inspect: every truncation is the record message or a shorter stream" {
	trunc_check 1 report rv-inspect
}

@test "hostile: rv-batch: every truncation is reported with its record, cuts between records too" {
	trunc_check 1 stream rv-batch -b 4
}

@test "hostile: rv-augment: every truncation is reported with its record, cuts between records too" {
	trunc_check 1 stream rv-augment 'flip; random_crop size=28 padding=2'
}

@test "hostile: rv-refurbish: every truncation is reported with its record, cuts between records too" {
	trunc_check 2 stream rv-refurbish -q -j 2 --partial flip --final flip \
	    --reuse 2 --epochs 2
}

@test "hostile: rv-score: every truncation is reported with its record, cuts between records too" {
	trunc_check 1 stream rv-score -q
	trunc_check 1 stream rv-score -q --policy history
}

@test "hostile: rv-train-gpu: every truncation is reported with its record, cuts between records too" {
	trunc_check 1 train rv-train-gpu -q -j 1 -b 4 \
	    -m 'conv 2 k=3 pad=1; relu; maxpool 4; linear'
}

@test "hostile: a truncation read from a pipe names <stdin>" {
	head -c 3000 "$S" > "$T/cut.rvs"
	for p in "rv-inspect" "rv-batch -b 4" "rv-augment flip" \
	    "rv-refurbish -q --partial flip --final flip" "rv-score -q" \
	    "rv-train-gpu -q -j 1 -b 4 -m linear"; do
		run -1 --separate-stderr bash -c "$p < '$T/cut.rvs' > /dev/null"
		[ "$stderr" = "${p%% *}: '<stdin>': record 5 at byte 2569: truncated frame" ]
	done
}

@test "hostile: corrupt streams (flipped bits, hostile headers): no crash, one line" {
	corrupt_check rv-inspect
	corrupt_check rv-inspect --dump
	corrupt_check rv-batch -b 4
	corrupt_check rv-augment flip
	corrupt_check rv-refurbish -q -j 2 --partial flip --final flip --reuse 2
	corrupt_check rv-score -q
	corrupt_check rv-score -q --policy uniform --keep 0.5 --reweight
	corrupt_check rv-train-gpu -q -j 1 -b 4 -m linear
}

@test "hostile: most corrupt copies are caught, by the checksum and by the parser" {
	run -0 bash -c "for f in '$D'/flip*.rvs; do rv-inspect \"\$f\" 2>&1 >/dev/null; done |
	    grep -c 'corrupt frame: Restored data doesn'\\''t match checksum'"
	[ "$output" -ge 15 ]
	# recompressed with a good checksum: the header checks must refuse
	run -0 bash -c "for f in '$D'/hdr*.rvs; do rv-inspect \"\$f\" 2>&1 >/dev/null; done | wc -l"
	[ "$output" -ge 8 ]
}

# rv-decode: a folder with every kind of good and bad image, links, a
# FIFO and names that are not UTF-8.
make_zoo() {
	local I="$FIX/img" z="$T/zoo"
	mkdir -p "$z/a" "$z/b"
	cp "$I/rgb.jpg" "$I/cmyk.jpg" "$I/progressive.jpg" "$I/rgb16.png" \
	    "$I/interlaced.png" "$I/palette-trns.png" "$I/greya.png" \
	    "$I/grey1.png" "$z/a/"
	cp "$I/empty.jpg" "$I/text.jpg" "$I/huge.jpg" "$I/huge.png" \
	    "$I/corrupt.jpg" "$I/truncated.jpg" "$I/truncated.png" \
	    "$I/crc.png" "$I/zlib.png" "$z/b/"
	cp "$I/rgb.png" "$z/b/"$'\xff\x01'.png
	cp "$I/grey.jpg" "$z/b/new"$'\n'line.jpg
	ln -s ../a/rgb.jpg "$z/b/link.jpg"
	ln -s nowhere.jpg "$z/b/dangling.jpg"
	ln "$z/a/cmyk.jpg" "$z/b/hard.jpg"
	mkfifo "$z/b/fifo.jpg"
}

@test "rv-decode: a folder of bad images, links, a FIFO, odd names: the good ones come through" {
	make_zoo
	run -0 --separate-stderr timeout 30 rv-decode -v "$T/zoo" -o "$T/z.rvs"
	# 10 warnings (9 bad images, the dangling link), the FIFO ignored
	# (listed by -v), then the summary
	[ "${#stderr_lines[@]}" -eq 12 ]
	[[ "${stderr_lines[11]}" == "rv-decode: 12 samples in 1 epoch, 10 skipped, 0 sidecars, 1 ignored, "* ]]
	[[ "$stderr" == *"'b/dangling.jpg': symlink to no regular file"* ]]
	[[ "$stderr" == *"'b/fifo.jpg': not a regular file (ignored)"* ]]
	[[ "$stderr" == *"'b/empty.jpg': empty image data (skipped)"* ]]
	[[ "$stderr" == *"'b/text.jpg': not a JPEG, PNG, WebP, GIF, BMP or TIFF image (skipped)"* ]]
	[[ "$stderr" == *"'b/huge.jpg': image is 65000x65000, over the 178956970-pixel limit (skipped)"* ]]
	[[ "$stderr" == *"'b/zlib.png': corrupt PNG: "*" (skipped)"* ]]
	# 8 good in a/ (CMYK, progressive, 16-bit, interlaced, palette, grey
	# alpha, 1-bit), and in b/ the odd names and both links
	run -0 bash -c "rv-inspect --dump '$T/z.rvs' | awk -F'\t' '\$3 == \"sample\"' | wc -l"
	[ "$output" -eq 12 ]
	run -0 bash -c "rv-inspect '$T/z.rvs' | awk '\$1 == \"shapes\"'"
	[ "$output" = "shapes       64x96x3 12" ]
}

@test "rv-decode: --strict: the first bad member is one line, exit 1, no output file" {
	make_zoo
	run -1 --separate-stderr timeout 30 rv-decode --strict "$T/zoo" -o "$T/z.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ "$stderr" = "rv-decode: '$T/zoo': 'b/dangling.jpg': symlink to no regular file" ]
	[ ! -e "$T/z.rvs" ]
	[ -z "$(find "$T" -maxdepth 1 -name '*.rvs*')" ]
	# without the link, the first bad image
	rm "$T/zoo/b/dangling.jpg"
	run -1 --separate-stderr timeout 30 rv-decode --strict "$T/zoo" -o "$T/z.rvs"
	[ "$stderr" = "rv-decode: '$T/zoo': 'b/corrupt.jpg': corrupt JPEG data: premature end of data segment" ]
	[ ! -e "$T/z.rvs" ]
}

@test "rv-decode: links and odd names in a tar: skip mode keeps 3 samples, --strict stops" {
	run -0 --separate-stderr rv-decode "$FIX/ds/broken.tar" -o "$T/b.rvs"
	run -0 bash -c "rv-inspect '$T/b.rvs' | awk '\$1 == \"samples\" { print \$2; exit }'"
	[ "$output" -eq 3 ]
	run -1 --separate-stderr rv-decode --strict "$FIX/ds/broken.tar" -o "$T/s.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ ! -e "$T/s.rvs" ]
	# a corrupt zip member: skipped, the rest comes through
	run -0 --separate-stderr rv-decode "$FIX/ds/broken.zip" -o "$T/z.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "rv-decode: '$FIX/ds/broken.zip': 'bad.jpg': ZIP bad CRC: "* ]]
	run -0 bash -c "rv-inspect '$T/z.rvs' | awk '\$1 == \"samples\" { print \$2; exit }'"
	[ "$output" -eq 1 ]
}

@test "rv-decode: inputs that are not datasets: one line, exit 1, no output file" {
	: > "$T/zero.tar"
	for f in "$T/zero.tar" /dev/null; do
		run -1 --separate-stderr rv-decode -q "$f" -o "$T/x.rvs"
		[ "$stderr" = "rv-decode: no usable samples in the input" ]
	done
	for f in "$FIX/img/text.jpg" "$FIX/img/rgb.jpg" "$FIX/img/huge.png"; do
		run -1 --separate-stderr rv-decode -q "$f" -o "$T/x.rvs"
		[ "$stderr" = "rv-decode: '$f': not a directory, archive, IDX file or CIFAR batch (libarchive: unrecognized archive format)" ]
	done
	run -1 --separate-stderr rv-decode -q "$T/nonexistent" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$T/nonexistent': cannot open: No such file or directory" ]
	[ ! -e "$T/x.rvs" ]
	[ -z "$(find "$T" -maxdepth 1 -name '*.rvs*')" ]
}

@test "rv-decode: IDX files cut short or with huge dimensions: one line, exit 1" {
	zcat "$FMNIST/train-images-idx3-ubyte.gz" | head -c 5000 > "$T/cut-idx3-ubyte"
	zcat "$FMNIST/train-labels-idx1-ubyte.gz" | head -c 28 > "$T/lab-idx1-ubyte"
	st=0
	rv-decode -q "$T/cut-idx3-ubyte" "$T/lab-idx1-ubyte" -o "$T/x.rvs" \
	    2> "$T/err" || st=$?
	[ "$st" -eq 1 ]
	[ "$(wc -l < "$T/err")" -eq 1 ]
	[ ! -e "$T/x.rvs" ]
	# an IDX header claiming 2^32-1 images of 65535x65535
	printf '\0\0\x08\x03\xff\xff\xff\xff\0\0\xff\xff\0\0\xff\xff' > "$T/big-idx3-ubyte"
	st=0
	rv-decode -q "$T/big-idx3-ubyte" -o "$T/x.rvs" 2> "$T/err" || st=$?
	[ "$st" -eq 1 ]
	[ "$(wc -l < "$T/err")" -eq 1 ]
	[ ! -e "$T/x.rvs" ]
}
