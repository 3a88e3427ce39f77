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
	D="$d" S="$d/s.rvs" make_cuts
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

# Prefix lengths to try ($D/cuts, made once by setup_file): every frame
# boundary and the bytes either side of it, the byte after each frame's
# magic (inside its header) and the first byte of each frame's checksum,
# and 24 cuts drawn at random from the rest with the seed in $D/seed
# (RV_TEST_SEED, or a new one per run; a failure names it, and
# RV_TEST_SEED=S replays it).  Each line: "L boundary samples records",
# the samples and records in the first L bytes.
make_cuts() {
	local seed=${RV_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000 ))}
	echo "$seed" > "$D/seed"
	awk -v size="$(stat -c %s "$S")" -v seed="$seed" '
	    { off[NR] = $1; kind[NR] = $2; n = NR }
	    END {
		for (i = 1; i <= n; i++) {
			end = i < n ? off[i + 1] : size
			cut[off[i] - 1]; cut[off[i]]; cut[off[i] + 1]
			cut[off[i] + 5]; cut[end - 4]
		}
		cut[size]
		srand(seed)
		for (k = 0; k < 24; k++)
			cut[int(rand() * size)]
		for (c in cut) {
			L = c + 0
			if (L < 0 || L > size)
				continue
			b = L == size; s = r = 0
			for (i = 1; i <= n; i++) {
				if (off[i] == L) b = 1
				if (off[i] < L) { r++; if (kind[i] == "sample") s++ }
			}
			print L, b, s, r
		}
	    }' "$D/frames" | sort -n > "$D/cuts"
	mkdir -p "$D/cut"
	while read -r L _; do
		head -c "$L" "$S" > "$D/cut/$L.rvs"
	done < "$D/cuts"
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
	local mult=$1 kind=$2 L b n r st got prog f size
	shift 2
	prog=$1
	size=$(stat -c %s "$S")
	while read -r L b n r; do
		trunc_one "$@" ||
		    { echo "(prefix $L; cuts drawn with RV_TEST_SEED=$(cat "$D/seed"))" >&2
		      return 1; }
	done < "$D/cuts"
}

# run_on WHAT FILE CMD...: CMD FILE, stdin empty, output in $T/out and
# $T/err, its status in st; 1 (saying so, WHAT naming the case) when a
# signal killed it.
run_on() {
	local what=$1 file=$2
	shift 2
	st=0
	"$@" "$file" < /dev/null > "$T/out" 2> "$T/err" || st=$?
	if [ "$st" -ge 128 ]; then
		echo "$prog: $what: killed, status $st" >&2
		cat "$T/err" >&2
		return 1
	fi
}

# One prefix of trunc_check (its locals: L b n r, and f, st, got).
trunc_one() {
	f="$D/cut/$L.rvs"
	run_on "prefix $L" "$f" "$@" || return 1
	if [ "$b" -eq 0 ]; then
		check_fail "$prog" "$f" "$st" "$T/err"
		return
	fi
	if [ "$kind" = train ] && [ "$n" -eq 0 ]; then
		# nothing to train on: refused in one line
		[ "$st" -eq 1 ] && [ "$(cat "$T/err")" = "rv-train-gpu: the input holds no batch to train on" ] ||
		    { echo "prefix $L: status $st" >&2; cat "$T/err" >&2; return 1; }
		return 0
	fi
	if [ "$kind" != report ] && [ "$n" -gt 0 ] && [ "$L" -lt "$size" ]; then
		# samples after the last epoch-end: a stream cut
		# between records, reported as truncated
		check_fail "$prog" "$f" "$st" "$T/err" &&
		    grep -q ': truncated stream: ' "$T/err" ||
		    { echo "(a boundary)" >&2; return 1; }
		return 0
	fi
	if [ "$prog" = rv-refurbish ] && [ "$n" -lt 2 ]; then
		# fewer samples than --reuse 2: refused in one line
		[ "$st" -eq 1 ] && [ "$(wc -l < "$T/err")" -eq 1 ] &&
		    grep -qE "^rv-refurbish: '$f': (no samples|reuse 2: more than the 1 samples)\$" "$T/err" ||
		    { echo "prefix $L: status $st" >&2; cat "$T/err" >&2; return 1; }
		return 0
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
		[ "$got" -eq "$r" ] ||
		    { echo "prefix $L: records $got" >&2; return 1; }
	else
		got=$(rv-inspect "$T/out" | awk '$1 == "samples" { print $2; exit }')
		[ "$got" -eq $((mult * n)) ] ||
		    { echo "$prog: prefix $L: $got samples, not $((mult * n))" >&2; return 1; }
	fi
}

# Corrupt copies: the right output (status 0) or the record message.
corrupt_check() {
	local f st prog=$1
	for f in "$D"/flip*.rvs "$D"/hdr*.rvs; do
		run_on "$f" "$f" "$@" || return 1
		[ "$st" -eq 0 ] && [ ! -s "$T/err" ] && continue
		check_fail "$prog" "$f" "$st" "$T/err"
	done
}

@test "hostile: the cut set covers every frame boundary, each side of it, each frame's header and checksum, and 24 drawn cuts" {
	slow
	local off size
	[ "$(wc -l < "$D/frames")" -eq 22 ]
	size=$(stat -c %s "$S")
	while read -r off _; do
		for L in $((off - 1)) "$off" $((off + 1)) $((off + 5)); do
			[ "$L" -lt 0 ] || grep -q "^$L " "$D/cuts"
		done
	done < "$D/frames"
	grep -q "^$size 1 20 22\$" "$D/cuts"
	n=$(wc -l < "$D/cuts")
	[ "$n" -gt 100 ] && [ "$n" -lt 140 ]
	# the boundaries are marked, and only they
	[ "$(awk '$2 == 1' "$D/cuts" | wc -l)" -eq 23 ]
	# another seed draws other cuts
	cp "$D/cuts" "$T/a"
	D2="$T/d"; mkdir -p "$D2"; cp "$D/frames" "$S" "$D2/"
	RV_TEST_SEED=$(( $(cat "$D/seed") + 1 )) D="$D2" S="$D2/s.rvs" make_cuts
	! cmp -s "$T/a" "$D2/cuts"
}

@test "hostile: rv-inspect: every truncation is the record message or a shorter stream" {
	slow
	trunc_check 1 report rv-inspect
}

@test "hostile: rv-batch: every truncation is reported with its record, cuts between records too" {
	slow
	trunc_check 1 stream rv-batch -b 4
}

@test "hostile: rv-augment: every truncation is reported with its record, cuts between records too" {
	slow
	trunc_check 1 stream rv-augment 'flip; random_crop size=28 padding=2'
}

@test "hostile: rv-refurbish: every truncation is reported with its record, cuts between records too" {
	slow
	trunc_check 2 stream rv-refurbish -q -j 2 --partial flip --final flip \
	    --reuse 2 --epochs 2
}

@test "hostile: rv-score: every truncation is reported with its record, cuts between records too" {
	slow
	trunc_check 1 stream rv-score -q
	trunc_check 1 stream rv-score -q --policy history
}

@test "hostile: rv-train-gpu: every truncation is reported with its record, cuts between records too" {
	slow
	trunc_check 1 train rv-train-gpu -q -j 1 -b 4 \
	    -m 'conv 2 k=3 pad=1; relu; maxpool 4; linear'
}

@test "hostile: a truncation read from a pipe names <stdin>" {
	slow
	local at
	head -c 3000 "$S" > "$T/cut.rvs"
	# record 5 starts before the cut, and is cut
	at=$(rv-inspect --dump "$S" | awk -F'\t' '$1 == 5 { print $2 }')
	[ "$at" -lt 3000 ]
	for p in "rv-inspect" "rv-batch -b 4" "rv-augment flip" \
	    "rv-refurbish -q --partial flip --final flip" "rv-score -q" \
	    "rv-train-gpu -q -j 1 -b 4 -m linear"; do
		run -1 --separate-stderr bash -c "$p < '$T/cut.rvs' > /dev/null"
		[ "$stderr" = "${p%% *}: '<stdin>': record 5 at byte $at: truncated frame" ]
	done
}

@test "hostile: corrupt streams (flipped bits, hostile headers): no crash, one line" {
	slow
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
	slow
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
	slow
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
	slow
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

@test "rv-decode: links and odd names in a tar: links followed, 5 samples, --strict stops" {
	slow
	# good, its symbolic and hard links, the odd names; corrupt and
	# truncated skipped when decoded
	run -0 --separate-stderr rv-decode "$FIX/ds/broken.tar" -o "$T/b.rvs"
	run -0 bash -c "rv-inspect '$T/b.rvs' | awk '\$1 == \"samples\" { print \$2; exit }'"
	[ "$output" -eq 5 ]
	run -1 --separate-stderr rv-decode --strict "$FIX/ds/broken.tar" -o "$T/s.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ "$stderr" = "rv-decode: '$FIX/ds/broken.tar': 'orphan': no image member" ]
	[ ! -e "$T/s.rvs" ]
	# a corrupt zip member: skipped, the rest comes through
	run -0 --separate-stderr rv-decode "$FIX/ds/broken.zip" -o "$T/z.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "rv-decode: '$FIX/ds/broken.zip': 'bad.jpg': ZIP bad CRC: "* ]]
	run -0 bash -c "rv-inspect '$T/z.rvs' | awk '\$1 == \"samples\" { print \$2; exit }'"
	[ "$output" -eq 1 ]
}

# The samples of stream $1, one line each: id, label, height, width; then
# the class names.
samples_of() {
	rv-inspect --dump "$1" | awk -F'\t' '$3 == "sample" { print $5, $6, $7, $8 }'
	rv-inspect "$1" | grep '^  class\.'
}

# The labels of the samples of stream $1, comma-separated.
labels_of() {
	rv-inspect --dump "$1" | awk -F'\t' '$3 == "sample" { print $6 }' |
	    paste -sd,
}

# An ImageFolder with a class made only of hard links to another class's
# files, a symbolic link into a third class and a dangling one; each
# image a size of its own, so that the shapes tell the samples apart.
make_linked_folder() {
	local f="$T/lf" i
	mkdir -p "$f/cat" "$f/dog" "$f/emu"
	for i in 1 2 3; do
		convert -size "16x1$i" plasma:fractal "$f/cat/c$i.jpg"
		convert -size "20x1$i" plasma:fractal "$f/emu/e$i.png"
		ln "$f/cat/c$i.jpg" "$f/dog/d$i.jpg"
	done
	ln -s ../emu/e2.png "$f/cat/s.png"
	ln -s nowhere.png "$f/emu/gone.png"
}

@test "rv-decode: GNU tar and bsdtar of a folder with hard and symbolic links give the folder's samples and classes" {
	command -v bsdtar > /dev/null || skip "no bsdtar: run make deps (libarchive-tools)"
	make_linked_folder
	rv-decode -q "$T/lf" -o "$T/dir.rvs" 2> /dev/null
	samples_of "$T/dir.rvs" > "$T/dir.txt"
	# 3 cat + the symlink, 3 dog (links), 3 emu; the dangling link lost
	[ "$(grep -c '^[0-9]' "$T/dir.txt")" -eq 10 ]
	grep -q '^  class\.1  *dog$' "$T/dir.txt"
	# --sort=name: cat/ holds the data, every dog/ member is a link;
	# bsdtar stores them in directory order, links after their target
	tar --sort=name -cf "$T/gnu.tar" -C "$T/lf" .
	bsdtar -cf "$T/bsd.tar" -C "$T/lf" .
	[ "$(tar tvf "$T/gnu.tar" | grep -c '^h')" -eq 3 ]
	[ "$(bsdtar tvf "$T/bsd.tar" | grep -c '^h')" -eq 3 ]
	for a in gnu bsd; do
		run -0 --separate-stderr rv-decode -v "$T/$a.tar" -o "$T/$a.rvs"
		[ "${stderr_lines[0]}" = "rv-decode: '$T/$a.tar': './emu/gone.png': symbolic link to 'nowhere.png', no member of the archive (skipped)" ]
		[[ "${stderr_lines[1]}" == "rv-decode: 10 samples in 1 epoch, 1 skipped, "* ]]
		samples_of "$T/$a.rvs" > "$T/$a.txt"
		diff "$T/dir.txt" "$T/$a.txt"
		# listed, then read (a shard by files): the same ids
		rv-decode -q --shard 1/2 "$T/$a.tar" -o "$T/$a-1.rvs" 2> /dev/null
		rv-decode -q --shard 1/2 "$T/lf" -o "$T/dir-1.rvs" 2> /dev/null
		diff <(samples_of "$T/dir-1.rvs") <(samples_of "$T/$a-1.rvs")
		# --strict: the dangling link is one line
		run -1 --separate-stderr rv-decode --strict "$T/$a.tar" -o "$T/x.rvs"
		[ "$stderr" = "rv-decode: '$T/$a.tar': './emu/gone.png': symbolic link to 'nowhere.png', no member of the archive" ]
	done
}

@test "rv-decode: several images under one key and repeated names: one sample each key, never silently" {
	slow
	mkdir -p "$T/k"
	convert -size 8x8 xc:red "$T/k/img.001.jpg"
	convert -size 9x9 xc:red "$T/k/img.002.jpg"
	convert -size 10x10 xc:red "$T/k/img.003.png"
	convert -size 11x11 xc:red "$T/k/a.jpg"
	convert -size 12x12 xc:red "$T/k/b.jpg"
	tar -cf "$T/k.tar" -C "$T/k" img.001.jpg img.002.jpg img.003.png a.jpg
	tar -rf "$T/k.tar" -C "$T/k" a.jpg b.jpg
	run -0 --separate-stderr rv-decode -v "$T/k.tar" -o "$T/k.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$T/k.tar': 'a.jpg': replaced by a later member of the same name (skipped)" ]
	[ "${stderr_lines[1]}" = "rv-decode: '$T/k.tar': 'img.001.jpg': replaced by 'img.003.png', a later image of the same key (skipped)" ]
	[ "${stderr_lines[2]}" = "rv-decode: '$T/k.tar': 'img.002.jpg': replaced by 'img.003.png', a later image of the same key (skipped)" ]
	[[ "${stderr_lines[3]}" == "rv-decode: 3 samples in 1 epoch, 3 skipped, 0 sidecars, 0 ignored, "* ]]
	# the images taken: a.jpg (the later copy), b.jpg, img.003.png
	run -0 bash -c "rv-inspect --dump '$T/k.rvs' | awk -F'\t' '\$3 == \"sample\" { print \$7 }' | paste -sd,"
	[ "$output" = "11,12,10" ]
	# listed, then read: the same three, the same warnings
	run -0 --separate-stderr rv-decode -v --shard 0/1 "$T/k.tar" -o "$T/l.rvs"
	[[ "${stderr_lines[-1]}" == "rv-decode: 3 samples in 1 epoch, 3 skipped, "* ]]
	run -1 --separate-stderr rv-decode --strict "$T/k.tar" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$T/k.tar': 'a.jpg': replaced by a later member of the same name" ]
}

# A Tiny-ImageNet-shaped tree: train/<wnid>/images/<wnid>_N.JPEG and a
# boxes file per class.
make_tiny() {
	local w i
	for w in n01443537 n01629819 n01641577; do
		mkdir -p "$T/tiny/train/$w/images"
		for i in 0 1; do
			convert -size 8x8 xc:blue "$T/tiny/train/$w/images/${w}_$i.JPEG"
		done
		printf '%s_0.JPEG\t0\t0\t7\t7\n' "$w" > "$T/tiny/train/$w/${w}_boxes.txt"
	done
}

@test "rv-decode: a Tiny-ImageNet tar: one class 'images' is warned about, --class-level 2 labels by wnid, alike across shards" {
	make_tiny
	tar --sort=name -cf "$T/tiny.tar" -C "$T/tiny" train
	run -0 --separate-stderr rv-decode -v "$T/tiny.tar" -o "$T/t.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$T/tiny.tar': every sample is in class 'images', the directory 1 level above it, though the directories above differ ('n01443537', 'n01629819'): is --class-level 2 meant?" ]
	# the boxes files belong to no sample: ignored, not skipped
	[[ "${stderr_lines[-1]}" == "rv-decode: 6 samples in 1 epoch, 0 skipped, 0 sidecars, 3 ignored, "* ]]
	run -0 --separate-stderr rv-decode --strict --class-level 2 "$T/tiny.tar" -o "$T/t2.rvs"
	[ -z "$stderr" ]
	[ "$(labels_of "$T/t2.rvs")" = "0,0,1,1,2,2" ]
	run -0 bash -c "rv-inspect '$T/t2.rvs' | grep '^  class\.'"
	[ "${lines[0]}" = "  class.0  n01443537" ]
	[ "${lines[2]}" = "  class.2  n01641577" ]
	# two shards, the first without the first class: the same labels
	tar --sort=name -cf "$T/s0.tar" -C "$T/tiny" train/n01629819
	tar --sort=name -cf "$T/s1.tar" -C "$T/tiny" train/n01443537 train/n01641577
	rv-decode -q --class-level 2 "$T/s0.tar" "$T/s1.tar" -o "$T/s.rvs"
	[ "$(labels_of "$T/s.rvs")" = "1,1,0,0,2,2" ]
	# higher than the path goes: no label, not a wrong one
	rv-decode -q --class-level 9 "$T/tiny.tar" -o "$T/t9.rvs"
	[ "$(labels_of "$T/t9.rvs")" = "-,-,-,-,-,-" ]
	run -2 --separate-stderr rv-decode --class-level 0 "$T/tiny.tar"
}

# rss_below KB BOUND: peak RSS KB is below BOUND, unless the programs
# are built with AddressSanitizer (its shadow and quarantine hold more).
rss_below() {
	ldd "$(command -v rv-decode)" | grep -q libasan || [ "$1" -lt "$2" ]
}

@test "rv-decode: zip bombs: a huge member is checked by its first bytes and capped, memory stays bounded" {
	slow
	[ -x /usr/bin/time ] || skip "no /usr/bin/time: run make deps"
	# 200 MB of zeros named x.jpg; 100 MB that starts as a JPEG; each
	# with a good image
	convert -size 8x8 xc:red "$T/ok.png"
	python3 - "$T" <<'PY'
import sys
import zipfile

d = sys.argv[1]
blk = bytes(1 << 20)
for name, head, mb in (("zeros", b"", 200), ("jpeg", b"\xff\xd8\xff\xe0", 100)):
    with zipfile.ZipFile("%s/%s.zip" % (d, name), "w", zipfile.ZIP_DEFLATED) as z:
        z.write(d + "/ok.png", "ok.png")
        with z.open("x.jpg", "w", force_zip64=True) as f:
            f.write(head)
            for i in range(mb):
                f.write(blk[len(head):] if i == 0 else blk)
PY
	[ "$(stat -c %s "$T/zeros.zip")" -lt 1000000 ]
	# no image magic: not read past its first bytes (before: held
	# twice, 400 MB)
	run -0 --separate-stderr /usr/bin/time -f '%M' rv-decode -j1 "$T/zeros.zip" -o "$T/z.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$T/zeros.zip': 'x.jpg': not a JPEG, PNG, WebP, GIF, BMP or TIFF image (skipped)" ]
	rss_below "${stderr_lines[1]}" 100000
	# JPEG magic, over 8 bytes a pixel of --max-pixels and 16 MiB:
	# refused unread
	run -0 --separate-stderr /usr/bin/time -f '%M' rv-decode -j1 --max-pixels 1000000 "$T/jpeg.zip" -o "$T/j.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$T/jpeg.zip': 'x.jpg': member is over the 24777216-byte limit for an image (8 bytes a pixel of the pixel limit) (skipped)" ]
	rss_below "${stderr_lines[1]}" 100000
	# under the default limit it is read, once (100 MB, not 200)
	run -0 --separate-stderr /usr/bin/time -f '%M' rv-decode -j1 "$T/jpeg.zip" -o "$T/j.rvs"
	[[ "${stderr_lines[0]}" == "rv-decode: '$T/jpeg.zip': 'x.jpg': "*" (skipped)" ]]
	rss_below "${stderr_lines[1]}" 160000
	run -0 bash -c "rv-inspect '$T/j.rvs' | awk '\$1 == \"samples\" { print \$2; exit }'"
	[ "$output" -eq 1 ]
}

@test "rv-decode: a damaged tar header is one warning and one sample skipped" {
	mkdir -p "$T/d"
	for i in 1 2 3 4; do
		convert -size 64x64 plasma:fractal "$T/d/p$i.png"
	done
	tar --sort=name -cf "$T/d.tar" -C "$T/d" .
	# break the checksum of p3.png's header
	python3 - "$T/d.tar" <<'PY'
import sys

p = sys.argv[1]
b = bytearray(open(p, "rb").read())
off = 0
while True:
    name = b[off:off + 100].rstrip(b"\0")
    size = int(b[off + 124:off + 136].rstrip(b"\0 ") or b"0", 8)
    if name.endswith(b"p3.png"):
        b[off + 148:off + 156] = b"0000000\0"
        break
    off += 512 + (size + 511) // 512 * 512
open(p, "wb").write(b)
print(off)
PY
	run -0 --separate-stderr rv-decode -v "$T/d.tar" -o "$T/d.rvs"
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ "${stderr_lines[0]}" == "rv-decode: '$T/d.tar': damaged tar archive at byte "*"; read on at the next good header (skipped)" ]]
	[[ "${stderr_lines[1]}" == "rv-decode: 3 samples in 1 epoch, 1 skipped, "* ]]
	run -1 --separate-stderr rv-decode --strict "$T/d.tar" -o "$T/x.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
}

@test "rv-decode: non-image members of an archive are ignored, not skipped, and --strict passes" {
	slow
	mkdir -p "$T/m/cat"
	convert -size 8x8 xc:red "$T/m/cat/a.jpg"
	echo "a dataset" > "$T/m/README.txt"
	echo '{"version": 2, "license": "cc-by"}' > "$T/m/dataset.json"
	tar --sort=name -cf "$T/m.tar" -C "$T/m" .
	run -0 --separate-stderr rv-decode -v --strict "$T/m.tar" -o "$T/m.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$T/m.tar': './README.txt': not an image (ignored)" ]
	[ "${stderr_lines[1]}" = "rv-decode: '$T/m.tar': './dataset.json': not an image (ignored)" ]
	[[ "${stderr_lines[2]}" == "rv-decode: 1 samples in 1 epoch, 0 skipped, 0 sidecars, 2 ignored, "* ]]
	# a label without its image is still a sample lost
	printf '3\n' > "$T/m/cat/b.cls"
	tar --sort=name -cf "$T/m.tar" -C "$T/m" .
	run -1 --separate-stderr rv-decode --strict "$T/m.tar" -o "$T/m.rvs"
	[ "$stderr" = "rv-decode: '$T/m.tar': 'cat/b': no image member" ]
}

@test "rv-decode: a cut .tar.gz or .tar.bz2 keeps the samples before the cut, says where, and fails under --strict" {
	slow
	mkdir -p "$T/c"
	# the same bytes every run, so that the cut lands in a member's data
	# (a cut in a header is told without the member's name)
	for i in $(seq 10 39); do
		convert -seed "$i" -size 64x64 plasma:fractal -strip "$T/c/p$i.png"
	done
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
	    -cf "$T/c.tar" -C "$T/c" .
	gzip -n -c "$T/c.tar" > "$T/c.tar.gz"
	bzip2 -1 -c "$T/c.tar" > "$T/c.tar.bz2"
	for z in gz bz2; do
		head -c "$(( $(stat -c %s "$T/c.tar.$z") * 2 / 3 ))" "$T/c.tar.$z" > "$T/cut.tar.$z"
		run -0 --separate-stderr rv-decode -v "$T/cut.tar.$z" -o "$T/c.rvs"
		[ "${#stderr_lines[@]}" -eq 2 ]
		[[ "${stderr_lines[0]}" == "rv-decode: '$T/cut.tar.$z': './p"*".png': truncated "*" input at byte "*" of the input; kept the members before it (skipped)" ]]
		n=$(rv-inspect "$T/c.rvs" | awk '$1 == "samples" { print $2; exit }')
		[ "$n" -ge 10 ] && [ "$n" -lt 30 ]
		run -1 --separate-stderr rv-decode --strict "$T/cut.tar.$z" -o "$T/x.rvs"
		[ "${#stderr_lines[@]}" -eq 1 ]
		[ ! -e "$T/x.rvs" ]
	done
	# cut inside bzip2's first block: nothing before it can be read
	head -c 1000 "$T/c.tar.bz2" > "$T/early.tar.bz2"
	run -1 --separate-stderr rv-decode "$T/early.tar.bz2" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$T/early.tar.bz2': truncated bzip2 input, before any member could be read" ]
}

@test "rv-decode: inputs that are not datasets: one line, exit 1, no output file" {
	slow
	: > "$T/zero.tar"
	head -c 10240 /dev/zero > "$T/zeros.tar"
	for f in "$T/zero.tar" /dev/null; do
		run -1 --separate-stderr rv-decode -q "$f" -o "$T/x.rvs"
		[ "$stderr" = "rv-decode: no usable samples in the input: '$f': empty" ]
	done
	run -1 --separate-stderr rv-decode -q "$T/zeros.tar" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: no usable samples in the input: '$T/zeros.tar': no members" ]
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
	slow
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

@test "rv-decode: a symbolic link to the archive's root or in a loop is no sample, and says which" {
	convert -size 8x8 xc:red "$T/a.png"
	convert -size 9x9 xc:blue "$T/up.png"
	python3 - "$T" <<'PY'
import sys
import tarfile
d = sys.argv[1]
t = tarfile.open(d + "/l.tar", "w", format=tarfile.GNU_FORMAT)
t.add(d + "/a.png", arcname="d/cat/a.png")
t.add(d + "/up.png", arcname="../up.png")   # outside the archive: no target
for name, to in [("d/dog/dot.png", "../.."), ("d/dog/l1.png", "l2.png"),
                 ("d/dog/l2.png", "l1.png"), ("d/dog/ok.png", "../cat/a.png")]:
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.SYMTYPE
    ti.linkname = to
    t.addfile(ti)
t.close()
PY
	run -0 --separate-stderr rv-decode "$T/l.tar" -o "$T/l.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$T/l.tar': 'd/dog/dot.png': symbolic link to '../..', no member of the archive (skipped)" ]
	[ "${stderr_lines[1]}" = "rv-decode: '$T/l.tar': 'd/dog/l1.png': symbolic link to 'l2.png', a loop or a chain of more than 16 links (skipped)" ]
	[ "${stderr_lines[2]}" = "rv-decode: '$T/l.tar': 'd/dog/l2.png': symbolic link to 'l1.png', a loop or a chain of more than 16 links (skipped)" ]
	[ "${#stderr_lines[@]}" = 3 ]
	# ok.png is a.png's pixels (8x8), not up.png's (9x9)
	run -0 rv-inspect "$T/l.rvs"
	[[ "$output" == *"shapes       8x8x3 2, 9x9x3 1"* || "$output" == *"shapes       9x9x3 1, 8x8x3 2"* ]]
}
