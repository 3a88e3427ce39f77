#!/usr/bin/env bats
# rv-decode: datasets in, sample streams out.  Real data: Fashion-MNIST
# from Debian's dataset-fashion-mnist, and image fixtures made with
# ImageMagick by tests/setup/make-fixtures.sh.

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

@test "rv-decode: Fashion-MNIST round trip, pixels and labels equal the IDX bytes" {
	slow
	rv-decode -q "$IMG" "$LAB" -o "$T/train.rvs"
	run -0 parse "$T/train.rvs" --idx "$IMG" "$LAB"
	[ "${lines[-1]}" = "idx ok 60000" ]
	# ids 0..59999 in order, 28x28x1 u8, one epoch-end counting them all
	run -0 bash -c "zstd -dcq '$T/train.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"sample\" { if (\$3 != n++) bad=1; shape[\$5]++ }
	        \$1==\"epoch-end\" { ends++; cnt=\$7 }
	        END { print n, bad+0, shape[\"28x28x1\"], ends, cnt }'"
	[ "$output" = "60000 0 60000 1 60000" ]
}

@test "rv-decode: Fashion-MNIST has 6000 samples in each of its 10 classes" {
	slow
	run -0 bash -c "rv-decode -q '$IMG' '$LAB' | zstd -dcq |
	    python3 '$REPO/tests/checks/rvparse.py' | awk -F'\t' '\$1==\"sample\" { print \$4 }' |
	    sort -n | uniq -c | awk '{ print \$2 \":\" \$1 }' | paste -sd' '"
	[ "$output" = "0:6000 1:6000 2:6000 3:6000 4:6000 5:6000 6:6000 7:6000 8:6000 9:6000" ]
}

@test "rv-decode: labels file first pairs the same way; metadata names the classes" {
	rv-decode -q --limit 100 "$IMG" "$LAB" -o "$T/a.rvs"
	rv-decode -q --limit 100 "$LAB" "$IMG" -o "$T/b.rvs"
	cmp "$T/a.rvs" "$T/b.rvs"
	run -0 parse "$T/a.rvs"
	[ "${lines[0]%%$'\t'*}" = meta ]
	[[ "$output" == *$'#meta\tclass.0=T-shirt/top'* ]]
	[[ "$output" == *$'#meta\tclass.9=Ankle boot'* ]]
	[[ "$output" == *$'#meta\tsamples=100'* ]]
}

@test "rv-decode: the same bytes for -j 1 and -j 4" {
	rv-decode -q -j 1 --limit 3000 --epochs 2 --shuffle --seed 5 "$IMG" "$LAB" -o "$T/j1.rvs"
	rv-decode -q -j 4 --limit 3000 --epochs 2 --shuffle --seed 5 "$IMG" "$LAB" -o "$T/j4.rvs"
	cmp "$T/j1.rvs" "$T/j4.rvs"
}

@test "rv-decode: --shuffle gives each epoch its own permutation, fixed by the seed" {
	slow
	rv-decode -q --limit 500 --epochs 2 --shuffle --seed 1 "$IMG" "$LAB" -o "$T/s1.rvs"
	rv-decode -q --limit 500 --epochs 2 --shuffle --seed 1 "$IMG" "$LAB" -o "$T/s1b.rvs"
	rv-decode -q --limit 500 --epochs 2 --shuffle --seed 2 "$IMG" "$LAB" -o "$T/s2.rvs"
	cmp "$T/s1.rvs" "$T/s1b.rvs"
	run -1 cmp -s "$T/s1.rvs" "$T/s2.rvs"
	parse "$T/s1.rvs" | awk -F'\t' '$1=="sample" { print $3 > ("'"$T"'/e" $2) }'
	seq 0 499 > "$T/ident"
	for e in 0 1; do
		run -0 bash -c "sort -n '$T/e$e' | uniq | wc -l"
		[ "$output" -eq 500 ]
		run -1 cmp -s "$T/e$e" "$T/ident"
	done
	run -1 cmp -s "$T/e0" "$T/e1"
}

@test "rv-decode: --shard i/n splits every epoch into disjoint shards that cover it" {
	slow
	for i in 0 1 2; do
		rv-decode -q --limit 1000 --epochs 2 --shuffle --seed 3 --shard "$i/3" \
		    "$IMG" "$LAB" -o "$T/sh$i.rvs"
	done
	rv-decode -q --limit 1000 --epochs 2 --shuffle --seed 3 "$IMG" "$LAB" -o "$T/all.rvs"
	for e in 0 1; do
		cat "$T"/sh?.rvs | zstd -dcq | python3 "$REPO/tests/checks/rvparse.py" --sha |
		    awk -F'\t' -v e=$e '$1=="sample" && $2==e { print $3, $9 }' | sort > "$T/union"
		parse "$T/all.rvs" --sha |
		    awk -F'\t' -v e=$e '$1=="sample" && $2==e { print $3, $9 }' | sort > "$T/whole"
		[ "$(wc -l < "$T/union")" -eq 1000 ]
		cmp "$T/union" "$T/whole"
	done
	# shard 1 of 3 takes positions 1, 4, 7, ... of the unshuffled listing
	rv-decode -q --limit 10 --shard 1/3 "$IMG" "$LAB" -o "$T/s.rvs"
	run -0 bash -c "zstd -dcq '$T/s.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"sample\" { print \$3 }' | paste -sd,"
	[ "$output" = "1,4,7" ]
}

@test "rv-decode: --channels 3 replicates grey IDX pixels" {
	rv-decode -q --limit 3 --channels 3 "$IMG" "$LAB" -o "$T/c3.rvs"
	run -0 bash -c "zstd -dcq '$T/c3.rvs' | python3 -c '
import struct, sys, gzip
d = sys.stdin.buffer.read(); off = 0; n = 0
idx = gzip.open(\"$IMG\").read()
while off < len(d):
    hl = struct.unpack_from(\"<H\", d, off + 6)[0]
    kind = d[off + 8]
    plen = struct.unpack_from(\"<Q\", d, off + 56)[0]
    if kind == 1:
        rid = struct.unpack_from(\"<Q\", d, off + 16)[0]
        h, w, c = struct.unpack_from(\"<III\", d, off + 28)
        p = d[off + hl: off + hl + plen]
        g = idx[16 + 784 * rid: 16 + 784 * (rid + 1)]
        assert (h, w, c) == (28, 28, 3), (h, w, c)
        assert p == bytes(b for x in g for b in (x, x, x))
        n += 1
    off += hl + plen
print(n)'"
	[ "$output" = 3 ]
}

@test "rv-decode: -v prints a summary line; -q stays silent" {
	run -0 --separate-stderr rv-decode -q -v --limit 20 --epochs 3 "$IMG" "$LAB" -o "$T/v.rvs"
	[[ "$stderr" == "rv-decode: 60 samples in 3 epochs, 0 skipped, 0 sidecars, 0 ignored, "*" s, "*" samples/s, "*" MB read, "*" MB peak memory" ]]
	run -0 --separate-stderr rv-decode -q --limit 20 "$IMG" "$LAB" -o "$T/q.rvs"
	[ -z "$stderr" ]
}

@test "rv-decode: IDX images without their labels: unlabelled samples and a warning naming the labels file expected" {
	run -0 --separate-stderr rv-decode --limit 100 "$IMG" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$IMG': IDX images without a labels file: its 60000 samples are unlabelled; '$LAB' is there: give it after the images" ]
	run -0 rv-inspect "$T/x.rvs"
	[[ "$output" == *"(0 labelled, 100 unlabelled)"* ]]
	# the labels file is not beside it; -q does not hide a warning
	cp "$FMNIST/t10k-images-idx3-ubyte.gz" "$T/"
	run -0 --separate-stderr rv-decode -q --limit 10 "$T/t10k-images-idx3-ubyte.gz" -o "$T/y.rvs"
	[ "$stderr" = "rv-decode: '$T/t10k-images-idx3-ubyte.gz': IDX images without a labels file: its 10000 samples are unlabelled (expected '$T/t10k-labels-idx1-ubyte.gz', not found)" ]
	# a name that says nothing of its labels
	cp "$FMNIST/t10k-images-idx3-ubyte.gz" "$T/pixels.gz"
	run -0 --separate-stderr rv-decode --limit 10 "$T/pixels.gz" -o "$T/z.rvs"
	[ "$stderr" = "rv-decode: '$T/pixels.gz': IDX images without a labels file: its 10000 samples are unlabelled (give the labels file after it)" ]
	# with the labels: not a word
	run -0 --separate-stderr rv-decode --limit 10 "$IMG" "$LAB" -o "$T/w.rvs"
	[ -z "$stderr" ]
}

@test "rv-decode: usage errors exit 2 with one clear line" {
	slow
	run -2 --separate-stderr rv-decode
	[ "${stderr_lines[0]}" = "rv-decode: no input given" ]
	run -2 --separate-stderr rv-decode --channels 2 "$IMG"
	[ "${stderr_lines[0]}" = "rv-decode: --channels: '2': use 1 or 3" ]
	run -2 --separate-stderr rv-decode --shard 3/3 "$IMG"
	[ "${stderr_lines[0]}" = "rv-decode: --shard: '3/3': shard index must be below 3" ]
	run -2 --separate-stderr rv-decode --epochs 0 "$IMG"
	[ "${stderr_lines[0]}" = "rv-decode: --epochs: '0': out of range [1, 1000000]" ]
	run -2 --separate-stderr rv-decode --encoded --max-side 64 "$IMG"
	[ "${stderr_lines[0]}" = "rv-decode: --max-side needs decoding; it cannot be combined with --encoded" ]
	run -2 --separate-stderr rv-decode --bogus "$IMG"
	[ "${stderr_lines[0]}" = "rv-decode: unknown option '--bogus'" ]
	run -2 --separate-stderr rv-decode -j
	[ "${stderr_lines[0]}" = "rv-decode: option '-j' needs an argument" ]
}

@test "rv-decode: -o into a folder not made yet names the folder, exit 1" {
	run -1 --separate-stderr rv-decode --limit 10 "$IMG" "$LAB" -o "$T/no/such/x.rvs"
	[ "$stderr" = "rv-decode: '$T/no/such/x.rvs': no folder '$T/no/such' to write it in (make it first: mkdir -p '$T/no/such')" ]
	[ ! -e "$T/no" ]
	# a folder that is there but not writable is the system's reason
	[ "$(id -u)" = 0 ] || {
		mkdir "$T/ro" && chmod 555 "$T/ro"
		run -1 --separate-stderr rv-decode --limit 10 "$IMG" "$LAB" -o "$T/ro/x.rvs"
		[ "$stderr" = "rv-decode: '$T/ro/x.rvs': Permission denied" ]
	}
}

@test "rv-decode: a missing input fails with exit 1 and leaves no output file" {
	run -1 --separate-stderr rv-decode "$T/nope.tar" -o "$T/out.rvs"
	[ "$stderr" = "rv-decode: '$T/nope.tar': cannot open: No such file or directory" ]
	[ ! -e "$T/out.rvs" ]
	run -0 bash -c "ls -A '$T' | grep -c tmp || true"
	[ "$output" = 0 ]
}

@test "rv-decode: an image folder numbers classes in sorted order and names them" {
	slow
	run -0 bash -c "rv-decode -q '$FIX/ds/folder' | zstd -dcq | python3 '$REPO/tests/checks/rvparse.py'"
	[[ "$output" == *$'#meta\tclasses=3\n#meta\tclass.0=cat\n#meta\tclass.1=dog\n#meta\tclass.2=zebra'* ]]
	labels=$(printf '%s\n' "$output" | awk -F'\t' '$1=="sample" { print $4 }' | paste -sd,)
	[ "$labels" = "0,0,0,1,1,1,2,2" ]
}

@test "rv-decode: tar, tar.gz, tar.zst and zip of one tree give the same samples" {
	slow
	for f in dirs.tar dirs.tar.gz dirs.tar.zst dirs.zip; do
		rv-decode -q "$FIX/ds/$f" | zstd -dcq | python3 "$REPO/tests/checks/rvparse.py" --sha |
		    grep -v meta > "$T/$f.tsv"
		cmp "$T/dirs.tar.tsv" "$T/$f.tsv"
	done
	[ "$(grep -c '^sample' "$T/dirs.tar.tsv")" -gt 3 ]
}

@test "rv-decode: WebDataset sidecars (.cls, .txt, .json) give the labels" {
	slow
	run -0 bash -c "rv-decode -q '$FIX/ds/wds.tar' | zstd -dcq | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"sample\" { print \$3 \":\" \$4 }' | paste -sd' '"
	[ "$output" = "0:3 1:7 2:5 3:9 4:1" ]
}

@test "rv-decode: bad members of an archive are skipped with a warning each, and counted" {
	run -0 --separate-stderr rv-decode -v "$FIX/ds/broken.tar" -o "$T/b.rvs"
	# links are followed in an archive (hard.jpg and link.jpg hold
	# good.jpg's bytes); the hidden ._good.jpg is ignored, listed under -v
	[ "${stderr_lines[0]}" = "rv-decode: '$FIX/ds/broken.tar': 'orphan': no image member (skipped)" ]
	[ "${stderr_lines[1]}" = "rv-decode: '$FIX/ds/broken.tar': './._good.jpg': hidden (ignored)" ]
	[ "${stderr_lines[2]}" = "rv-decode: '$FIX/ds/broken.tar': './corrupt.jpg': corrupt JPEG data: premature end of data segment (skipped)" ]
	[ "${stderr_lines[3]}" = "rv-decode: '$FIX/ds/broken.tar': './truncated.jpg': truncated JPEG data (skipped)" ]
	[[ "${stderr_lines[4]}" == "rv-decode: 5 samples in 1 epoch, 3 skipped, 0 sidecars, 1 ignored, "* ]]
	[ "$(parse "$T/b.rvs" | grep -c '^sample')" -eq 5 ]
	# the usable images keep their ids: good 1, hard 2, link 3, the odd
	# names 4 and 6 of the listing
	run -0 bash -c "zstd -dcq '$T/b.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"sample\" { print \$3 }' | paste -sd,"
	[ "$output" = "1,2,3,4,6" ]
}

@test "rv-decode: --strict makes the first bad member fatal, and leaves no output file" {
	run -1 --separate-stderr rv-decode --strict "$FIX/ds/broken.tar" -o "$T/s.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$FIX/ds/broken.tar': 'orphan': no image member" ]
	[ ! -e "$T/s.rvs" ]
}

@test "rv-decode: a truncated archive keeps what came before the cut" {
	slow
	run -0 --separate-stderr rv-decode "$FIX/ds/cut.tar" -o "$T/c.rvs"
	[ "$stderr" = "rv-decode: '$FIX/ds/cut.tar': './c.jpg': truncated tar archive at byte 6756 of the input; kept the members before it (skipped)" ]
	[ "$(parse "$T/c.rvs" | grep -c "^sample")" -eq 2 ]
}

@test "rv-decode: an image declaring too many pixels is refused before decoding" {
	mkdir -p "$T/bomb/a"
	cp "$FIX/img/huge.png" "$FIX/img/huge.jpg" "$FIX/img/rgb.jpg" "$T/bomb/a/"
	run -0 --separate-stderr rv-decode "$T/bomb" -o "$T/bomb.rvs"
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ "${stderr_lines[0]}" == "rv-decode: '$T/bomb': 'a/huge.jpg': image is "*"over the 178956970-pixel limit (skipped)" ]]
	[[ "${stderr_lines[1]}" == "rv-decode: '$T/bomb': 'a/huge.png': image is 100000x100000, over the 178956970-pixel limit (skipped)" ]]
	[ "$(parse "$T/bomb.rvs" | grep -c '^sample')" -eq 1 ]
	# nothing usable left: exit 1, no output file
	run -1 --separate-stderr rv-decode --max-pixels 1000 "$T/bomb" -o "$T/bomb2.rvs"
	[ "${stderr_lines[2]}" = "rv-decode: '$T/bomb': 'a/rgb.jpg': image is 96x64, over the 1000-pixel limit (skipped)" ]
	[ "${stderr_lines[3]}" = "rv-decode: no usable samples in the input: '$T/bomb': 3 samples, all skipped" ]
	[ ! -e "$T/bomb2.rvs" ]
}

@test "rv-decode: --max-side reduces the longer side, by DCT scaling where it can" {
	slow
	mkdir -p "$T/big/a"
	cp "$FIX/img/big.jpg" "$FIX/img/rgb.png" "$T/big/a/"
	for spec in "320 240x320x3 64x96x3" "200 150x200x3 64x96x3" "48 36x48x3 32x48x3"; do
		set -- $spec
		run -0 bash -c "rv-decode -q --max-side $1 '$T/big' | zstd -dcq |
		    python3 '$REPO/tests/checks/rvparse.py' | awk -F'\t' '\$1==\"sample\" { print \$5 }' | paste -sd' '"
		[ "$output" = "$2 $3" ]
	done
}

@test "rv-decode: --encoded passes the image bytes through with their size" {
	slow
	mkdir -p "$T/enc/a"
	cp "$FIX/img/rgb.jpg" "$FIX/img/rgb.png" "$T/enc/a/"
	rv-decode -q --encoded "$T/enc" -o "$T/enc.rvs"
	run -0 bash -c "zstd -dcq '$T/enc.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"sample\" { print \$5, \$6, \$8 }'"
	[ "${lines[0]}" = "64x96x3 jpeg $(stat -c %s "$FIX/img/rgb.jpg")" ]
	[ "${lines[1]}" = "64x96x3 png $(stat -c %s "$FIX/img/rgb.png")" ]
}

@test "rv-decode: JPEG and PNG decoding gives the same bytes for -j 1 and -j 4" {
	rv-decode -q -j 1 --epochs 2 --shuffle "$FIX/ds/folder" "$FIX/ds/wds.tar" -o "$T/a.rvs"
	rv-decode -q -j 4 --epochs 2 --shuffle "$FIX/ds/folder" "$FIX/ds/wds.tar" -o "$T/b.rvs"
	cmp "$T/a.rvs" "$T/b.rvs"
}

@test "rv-decode: CIFAR-10 batches become 32x32x3 samples with interleaved pixels" {
	rv-decode -q "$FIX/ds/cifar/data_batch_1.bin" -o "$T/c.rvs"
	run -0 bash -c "zstd -dcq '$T/c.rvs' | python3 -c '
import struct, sys
d = sys.stdin.buffer.read(); raw = open(\"$FIX/ds/cifar/data_batch_1.bin\", \"rb\").read()
off = 0; n = 0
while off < len(d):
    hl = struct.unpack_from(\"<H\", d, off + 6)[0]; plen = struct.unpack_from(\"<Q\", d, off + 56)[0]
    if d[off + 8] == 1:
        rid = struct.unpack_from(\"<Q\", d, off + 16)[0]
        lab = struct.unpack_from(\"<i\", d, off + 24)[0]
        rec = raw[3073 * rid: 3073 * (rid + 1)]
        want = bytes(rec[1 + c * 1024 + i] for i in range(1024) for c in range(3))
        assert lab == rec[0] and d[off + hl: off + hl + plen] == want, rid
        n += 1
    off += hl + plen
print(n)'"
	[ "$output" = 20 ]
	run -0 bash -c "zstd -dcq '$T/c.rvs' | python3 '$REPO/tests/checks/rvparse.py' | grep -c 'class.9=truck'"
}

@test "rv-decode: a full disk is exit 1 with the reason; /dev/null stays a device" {
	run -1 --separate-stderr rv-decode -q --limit 10 "$IMG" "$LAB" -o /dev/full
	[ "$stderr" = "rv-decode: '/dev/full': write: No space left on device" ]
	run -1 --separate-stderr bash -c "rv-decode -q --limit 10 '$IMG' '$LAB' > /dev/full"
	[ "$stderr" = "rv-decode: '<stdout>': write: No space left on device" ]
	run -0 rv-decode -q --limit 10 "$IMG" "$LAB" -o /dev/null
	[ -c /dev/null ] && [ -c /dev/full ]
}

@test "rv-decode: refuses to write a binary stream to a terminal" {
	command -v script >/dev/null || skip "script(1) is not installed"
	run -0 script -qec "rv-decode -q --limit 10 '$IMG' '$LAB'; echo rc=\$?" /dev/null
	[[ "$output" == *"rv-decode: refusing to write a binary stream to a terminal; redirect it or use -o FILE"* ]]
	[[ "$output" == *"rc=1"* ]]
}

@test "rv-decode: progress on a terminal's stderr, silenced by -q" {
	slow
	run -0 script -qec "rv-decode --epochs 3 '$IMG' '$LAB' -o '$T/p.rvs'" /dev/null
	[[ "$output" == *"rv-decode: "*"/180000 samples ("*"%), "*"/s, elapsed "*", ETA "* ]]
	run -0 script -qec "rv-decode -q --epochs 3 '$IMG' '$LAB' -o '$T/p.rvs'" /dev/null
	[ -z "$output" ]
}

# ---- every member accounted for (issue 16, item 4) ----

# A folder of the other formats Pillow reads: class a (an animated GIF,
# a lossy WebP), class b (a TIFF with alpha, an RLE8 BMP).
mk_formats() {
	mkdir -p "$T/fmt/a" "$T/fmt/b"
	cp "$FIX/img/anim.gif" "$FIX/img/rgb.webp" "$T/fmt/a/"
	cp "$FIX/img/rgba.tif" "$FIX/img/rle8.bmp" "$T/fmt/b/"
}

@test "rv-decode: WebP, GIF, BMP and TIFF in a folder or a tar are decoded, pixels as ImageMagick's" {
	slow
	mk_formats
	tar --sort=name -C "$T/fmt" -cf "$T/fmt.tar" .
	want=$(for f in anim.gif rgb.webp rgba.tif rle8.bmp; do
		printf '%s %s\n' "$(sha1sum < "$FIX/img/$f.rgb" | cut -c1-40)"; done)
	for in in "$T/fmt" "$T/fmt.tar"; do
		run -0 --separate-stderr rv-decode -v "$in" -o "$T/f.rvs"
		[[ "$stderr" == "rv-decode: 4 samples in 1 epoch, 0 skipped, 0 sidecars, 0 ignored, "* ]]
		run -0 bash -c "zstd -dcq '$T/f.rvs' | python3 '$REPO/tests/checks/rvparse.py' --sha |
		    awk -F'\t' '\$1==\"sample\" { print \$4, \$5, \$6 }' | paste -sd' '"
		[ "$output" = "0 64x96x3 u8 0 64x96x3 u8 1 64x96x3 u8 1 64x96x3 u8" ]
		run -0 bash -c "zstd -dcq '$T/f.rvs' | python3 '$REPO/tests/checks/rvparse.py' --sha |
		    awk -F'\t' '\$1==\"sample\" { print \$9 }'"
		[ "$output" = "$(printf '%s\n' "$want" | sed 's/ *$//')" ]
	done
	# --channels, --max-side and --max-pixels as for JPEG and PNG
	run -0 bash -c "rv-decode -q --channels 1 --max-side 48 '$T/fmt' | zstd -dcq |
	    python3 '$REPO/tests/checks/rvparse.py' | awk -F'\t' '\$1==\"sample\" { print \$5 }' | paste -sd' '"
	[ "$output" = "32x48x1 32x48x1 32x48x1 32x48x1" ]
	run -1 --separate-stderr rv-decode --max-pixels 6143 "$T/fmt" -o "$T/p.rvs"
	[ "${#stderr_lines[@]}" -eq 5 ]
	[ "${stderr_lines[0]}" = "rv-decode: '$T/fmt': 'a/anim.gif': image is 96x64, over the 6143-pixel limit (skipped)" ]
	[ "${stderr_lines[3]}" = "rv-decode: '$T/fmt': 'b/rle8.bmp': image is 96x64, over the 6143-pixel limit (skipped)" ]
	[ "${stderr_lines[4]}" = "rv-decode: no usable samples in the input: '$T/fmt': 4 samples, all skipped" ]
}

@test "rv-decode: a truncated WebP, GIF, BMP or TIFF is skipped with a warning and counted; --strict fails" {
	slow
	mkdir -p "$T/cut/a"
	cp "$FIX/img/rgb.png" "$FIX/img/truncated.webp" "$FIX/img/truncated.gif" \
	    "$FIX/img/truncated.bmp" "$FIX/img/truncated.tif" "$T/cut/a/"
	run -0 --separate-stderr rv-decode -v "$T/cut" -o "$T/c.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$T/cut': 'a/truncated.bmp': truncated BMP data (skipped)" ]
	[ "${stderr_lines[1]}" = "rv-decode: '$T/cut': 'a/truncated.gif': truncated GIF data (skipped)" ]
	[ "${stderr_lines[2]}" = "rv-decode: '$T/cut': 'a/truncated.tif': truncated TIFF data (skipped)" ]
	[ "${stderr_lines[3]}" = "rv-decode: '$T/cut': 'a/truncated.webp': truncated WebP data (skipped)" ]
	[[ "${stderr_lines[4]}" == "rv-decode: 1 samples in 1 epoch, 4 skipped, 0 sidecars, 0 ignored, "* ]]
	run -1 --separate-stderr rv-decode --strict "$T/cut" -o "$T/s.rvs"
	[ "$stderr" = "rv-decode: '$T/cut': 'a/truncated.bmp': truncated BMP data" ]
	[ ! -e "$T/s.rvs" ]
}

@test "rv-decode -v: every member is a sample, a sidecar, skipped or ignored, and the summary says which" {
	s="$T/acct"
	mkdir -p "$s/x"
	cp "$FIX/img/rgb.jpg" "$s/x/1.jpg"
	printf '3\n' > "$s/x/1.cls"
	printf 'a caption\n' > "$s/x/1.txt"
	cp "$FIX/img/rgb.bmp" "$s/x/2.bmp"
	printf '{"label": 4, "w": 96}' > "$s/x/2.json"
	printf 'x' > "$s/x/2.npy"
	printf 'x' > "$s/x/3.heic"
	printf '1\n' > "$s/x/3.cls"
	printf 'about\n' > "$s/README"
	cp "$FIX/img/rgb.jpg" "$s/x/.hidden.jpg"
	tar --sort=name -C "$s" -cf "$T/acct.tar" .
	run -0 --separate-stderr rv-decode -v "$T/acct.tar" -o "$T/a.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$T/acct.tar': './x/3.heic': unsupported image format; rv reads JPEG, PNG, WebP, GIF, BMP and TIFF (skipped)" ]
	[ "${stderr_lines[1]}" = "rv-decode: '$T/acct.tar': './README': no extension (ignored)" ]
	[ "${stderr_lines[2]}" = "rv-decode: '$T/acct.tar': './x/.hidden.jpg': hidden (ignored)" ]
	[[ "${stderr_lines[3]}" == "rv-decode: 2 samples in 1 epoch, 1 skipped, 4 sidecars, 2 ignored, "* ]]
	[ "${#stderr_lines[@]}" -eq 4 ]
	# without -v the ignored members are not listed, only the warning
	run -0 --separate-stderr rv-decode "$T/acct.tar" -o "$T/a.rvs"
	[ "${#stderr_lines[@]}" -eq 1 ]
	run -0 bash -c "zstd -dcq '$T/a.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"sample\" { print \$3 \":\" \$4 }' | paste -sd' '"
	[ "$output" = "0:3 1:4" ]
	# in a folder: the image rv cannot read is skipped, text ignored
	run -0 --separate-stderr rv-decode -v "$s" -o "$T/d.rvs"
	[[ "$stderr" == *"'x/3.heic': unsupported image format"* ]]
	[[ "$stderr" == *"'x/2.npy': not an image (ignored)"* ]]
	[[ "$stderr" == *"'README': not an image (ignored)"* ]]
	[[ "${stderr_lines[-1]}" == "rv-decode: 2 samples in 1 epoch, 1 skipped, 0 sidecars, 7 ignored, "* ]]
}

@test "rv-decode: a multi-label .cls or .json loses its sample with a warning, never silently unlabelled" {
	s="$T/ml"
	mkdir -p "$s"
	for k in 1 2 3 4 5; do cp "$FIX/img/rgb.jpg" "$s/$k.jpg"; done
	printf '[2]\n' > "$s/1.cls"
	printf '3 7\n' > "$s/2.cls"
	printf '{"label": [1, 5]}\n' > "$s/3.json"
	printf '{"label": "dog"}\n' > "$s/4.json"
	printf '{"label": null}\n' > "$s/5.json"
	tar --sort=name -C "$s" -cf "$T/ml.tar" .
	run -0 --separate-stderr rv-decode "$T/ml.tar" -o "$T/m.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$T/ml.tar': './2.cls': multi-label '3 7': an rv sample carries one class label (skipped)" ]
	[ "${stderr_lines[1]}" = "rv-decode: '$T/ml.tar': './3.json': multi-label '[1, 5]': an rv sample carries one class label (skipped)" ]
	[ "${stderr_lines[2]}" = "rv-decode: '$T/ml.tar': './4.json': label '\"dog\"' is not a class number (skipped)" ]
	[ "${#stderr_lines[@]}" -eq 3 ]
	# a list of one is that label; null says "no label"
	run -0 bash -c "zstd -dcq '$T/m.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"sample\" { print \$3 \":\" \$4 }' | paste -sd' '"
	[ "$output" = "0:2 1:-1" ]
	run -1 --separate-stderr rv-decode --strict "$T/ml.tar" -o "$T/s.rvs"
	[ "$stderr" = "rv-decode: '$T/ml.tar': './2.cls': multi-label '3 7': an rv sample carries one class label" ]
}

@test "rv-decode: tar archives concatenated on stdin are read through, compressed or not" {
	slow
	cat "$FIX/ds/dirs.tar" "$FIX/ds/wds.tar" > "$T/cat.tar"
	rv-decode -q "$FIX/ds/dirs.tar" "$FIX/ds/wds.tar" | zstd -dcq |
	    python3 "$REPO/tests/checks/rvparse.py" --sha | awk -F'\t' '$1=="sample" { print $4, $9 }' > "$T/two"
	[ "$(wc -l < "$T/two")" -eq 10 ]
	for c in cat gzip zstd; do
		z=$c
		[ "$c" = cat ] || z="$c -qc"
		run -0 --separate-stderr bash -c "{ $z < '$FIX/ds/dirs.tar'; $z < '$FIX/ds/wds.tar'; } |
		    rv-decode -v - | zstd -dcq | python3 '$REPO/tests/checks/rvparse.py' --sha |
		    awk -F'\t' '\$1==\"sample\" { print \$4, \$9 }' | sort > '$T/$c'"
		[[ "$stderr" == "rv-decode: 10 samples in 1 epoch, 0 skipped, "* ]]
		sort "$T/two" | cmp - "$T/$c"
	done
	# the same as a file operand
	run -0 bash -c "rv-decode -q '$T/cat.tar' | zstd -dcq | python3 '$REPO/tests/checks/rvparse.py' | grep -c '^sample'"
	[ "$output" -eq 10 ]
}

@test "rv-decode: archives of mixed compression one after another are read through, on a pipe or in a file" {
	need_fmnist
	fmnist_tars "$T" s 4 3 3 2 2 2
	gzip -c "$T/s-1.tar" > "$T/s-1.tar.gz"
	zstd -qc "$T/s-3.tar" > "$T/s-3.tar.zst"
	xz -c "$T/s-4.tar" > "$T/s-4.tar.xz"
	bzip2 -c "$T/s-5.tar" > "$T/s-5.tar.bz2"
	# a shard of no images (WebDataset's msgpack members), then a zip
	mkdir -p "$T/mp" "$T/z"
	for i in 1 2 3; do echo "x$i" > "$T/mp/m$i.mp"; done
	echo '{}' > "$T/mp/m1.json"
	tar -C "$T/mp" -cf "$T/mp.tar" .
	cp "$FIX/img/rgb.png" "$T/z/zip1.png"
	(cd "$T/z" && zip -q ../z.zip zip1.png)
	rv-decode -q "$T"/s-?.tar "$T/z.zip" | zstd -dcq | python3 "$REPO/tests/checks/rvparse.py" --sha |
	    awk -F'\t' '$1=="sample" { print $4, $9 }' | sort > "$T/want"
	[ "$(wc -l < "$T/want")" -eq 17 ]
	# plain to gzip (once lost as "damaged"), gzip to plain (once refused),
	# a tar of no images first, zstd, xz, bzip2, and zeros between
	parts="'$T/mp.tar' '$T/s-0.tar' '$T/s-1.tar.gz' '$T/s-2.tar' '$T/s-3.tar.zst' '$T/s-4.tar.xz' '$T/z.zip' '$T/s-5.tar.bz2'"
	for how in pipe file; do
		if [ $how = pipe ]; then
			cmd="{ cat $parts; head -c 3000 /dev/zero; } | rv-decode -v -"
		else
			eval cat "$parts" > "$T/all.bin"
			cmd="rv-decode -v '$T/all.bin'"
		fi
		run -0 --separate-stderr bash -c "$cmd | zstd -dcq | python3 '$REPO/tests/checks/rvparse.py' --sha |
		    awk -F'\t' '\$1==\"sample\" { print \$4, \$9 }' | sort > '$T/got'"
		[[ "${stderr_lines[-1]}" == "rv-decode: 17 samples in 1 epoch, 0 skipped, 16 sidecars, 4 ignored, "* ]]
		cmp "$T/want" "$T/got"
	done
}

@test "rv-decode: where no next archive can be found the input is refused, naming the byte and the samples lost" {
	need_fmnist
	fmnist_tars "$T" s 4 3
	gzip -c "$T/s-1.tar" > "$T/s-1.tar.gz"
	at=$(stat -c %s "$T/s-0.tar")
	run -1 --separate-stderr bash -c "{ cat '$T/s-0.tar'; echo 'not an archive'; cat '$T/s-1.tar.gz'; } |
	    rv-decode -q - -o '$T/x.rvs'"
	[ "$stderr" = "rv-decode: '<stdin>': byte $at: no archive starts there (libarchive: unrecognized archive format); the input cannot be read on from there, so it is refused (4 samples read before it are lost)" ]
	[ ! -e "$T/x.rvs" ]
	# a gzip stream corrupt in its middle: where it ends cannot be known
	python3 - "$T/s-1.tar.gz" "$T/bad.gz" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
for i in range(len(b) // 2, len(b) // 2 + 64):
    b[i] ^= 0x5a
open(sys.argv[2], "wb").write(b)
PY
	run -1 --separate-stderr bash -c "cat '$T/s-0.tar' '$T/bad.gz' '$T/s-0.tar' | rv-decode -q - -o '$T/x.rvs'"
	[[ "$stderr" == "rv-decode: '<stdin>': byte "*": gzip data corrupt: "*"; the input cannot be read on from there, so it is refused (4 samples read before it are lost)" ]]
	[ ! -e "$T/x.rvs" ]
	# a tar cut between members (no end-of-archive blocks), then a gzip
	# tar: the gzip stream starts the next archive
	python3 - "$FIX/img/rgb.png" "$T/noend.tar" <<'PY'
import io, sys, tarfile
buf = io.BytesIO()
t = tarfile.open(fileobj=buf, mode="w")
t.add(sys.argv[1], arcname="cut/a.png")
open(sys.argv[2], "wb").write(buf.getvalue())	# not closed: no end blocks
PY
	run -0 bash -c "cat '$T/noend.tar' '$T/s-1.tar.gz' | rv-decode -q - |
	    rv-inspect - | awk '\$1 == \"samples\" { print \$2; exit }'"
	[ "$output" -eq 4 ]
	# a zip whose end record claims a comment longer than what is left:
	# the tar after it is not skipped in silence
	mkdir -p "$T/z"
	cp "$FIX/img/rgb.jpg" "$T/z/a.jpg"
	(cd "$T/z" && zip -q c.zip a.jpg)
	python3 - "$T/z/c.zip" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[-2:] = b"\xff\xff"	# the end record's comment length, no comment
open(sys.argv[1], "wb").write(b)
PY
	run -1 --separate-stderr bash -c "cat '$T/z/c.zip' '$T/s-0.tar' | rv-decode -q - -o '$T/x.rvs'"
	[[ "$stderr" == "rv-decode: '<stdin>': byte "*": the input ends at byte "*", before byte "*" where the archive before says it ends; "*"(1 sample read before it is lost)" ]]
	# two zips on a pipe are read through; zeros after are padding
	mkdir -p "$T/z"
	cp "$FIX/img/rgb.jpg" "$T/z/a.jpg"
	cp "$FIX/img/rgb.png" "$T/z/b.png"
	(cd "$T/z" && zip -q a.zip a.jpg && zip -q b.zip b.png)
	run -0 bash -c "{ cat '$T/z/a.zip' '$T/z/b.zip'; head -c 10240 /dev/zero; } |
	    rv-decode -q - | rv-inspect - | awk '\$1 == \"samples\" { print \$2; exit }'"
	[ "$output" -eq 2 ]
}

@test "rv-decode: an input that yields no sample says what it held; with none usable the error names every input" {
	need_fmnist
	fmnist_tars "$T" s 3
	mkdir -p "$T/mp"
	for i in 1 2 3; do echo "x$i" > "$T/mp/k$i.mp"; done
	echo '{}' > "$T/mp/k1.json"
	tar -C "$T/mp" -cf "$T/mp.tar" .
	: > "$T/empty.tar"
	run -0 --separate-stderr rv-decode "$T/mp.tar" "$T/s-0.tar" "$T/empty.tar" -o "$T/o.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: '$T/mp.tar': no samples: 4 members, none an image (.mp 3, .json 1)" ]
	[ "${stderr_lines[1]}" = "rv-decode: '$T/empty.tar': no samples: empty" ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	run -0 --separate-stderr rv-decode -q "$T/mp.tar" "$T/s-0.tar" -o "$T/o.rvs"
	[ -z "$stderr" ]
	# nothing usable: one error naming each input, and -v's summary
	run -1 --separate-stderr rv-decode -v "$T/mp.tar" "$T/empty.tar" -o "$T/x.rvs"
	[ "${stderr_lines[4]}" = "rv-decode: no usable samples in the input: '$T/mp.tar': 4 members, none an image (.mp 3, .json 1); '$T/empty.tar': empty" ]
	[[ "${stderr_lines[5]}" == "rv-decode: 0 samples in 1 epoch, 0 skipped, 0 sidecars, 4 ignored, "* ]]
	[ "${#stderr_lines[@]}" -eq 6 ]
	[ ! -e "$T/x.rvs" ]
	run -1 --separate-stderr bash -c "cat '$T/mp.tar' | rv-decode -q -"
	[ "$stderr" = "rv-decode: no usable samples in the input: '<stdin>': 4 members, none an image (.mp 3, .json 1)" ]
}

@test "rv-decode --encoded: WebP, GIF, BMP and TIFF become lossless PNG of their pixels" {
	slow
	mk_formats
	rv-decode -q --encoded "$T/fmt" -o "$T/e.rvs"
	run -0 bash -c "zstd -dcq '$T/e.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    awk -F'\t' '\$1==\"sample\" { print \$5, \$6 }' | sort -u"
	[ "$output" = "64x96x3 png" ]
	# decoded downstream, the pixels are rv-decode's own
	rv-decode -q "$T/fmt" | zstd -dcq | python3 "$REPO/tests/checks/rvparse.py" --sha |
	    awk -F'\t' '$1=="sample" { print $9 }' > "$T/direct"
	rv-augment -q -j 1 'flip p=0' < "$T/e.rvs" | zstd -dcq |
	    python3 "$REPO/tests/checks/rvparse.py" --sha | awk -F'\t' '$1=="sample" { print $9 }' > "$T/later"
	[ "$(wc -l < "$T/direct")" -eq 4 ]
	cmp "$T/direct" "$T/later"
	run -0 bash -c "rv-decode -q --encoded --channels 1 '$T/fmt' | zstd -dcq |
	    python3 '$REPO/tests/checks/rvparse.py' | awk -F'\t' '\$1==\"sample\" { print \$5, \$6 }' | sort -u"
	[ "$output" = "64x96x1 png" ]
}

# ---- the class count in the metadata (issue 16, item 5) ----

@test "rv-decode: .cls labels give the stream its class count; rv-train-gpu trains without --classes" {
	s="$T/wc"
	mkdir -p "$s"
	for k in 0 1 2 3 4 5 6 7; do
		cp "$FIX/img/rgb.jpg" "$s/$k.jpg"
		printf '%d\n' $((k % 4)) > "$s/$k.cls"
	done
	tar --sort=name -C "$s" -cf "$T/wc.tar" .
	rv-decode -q --epochs 2 "$T/wc.tar" -o "$T/wc.rvs"
	run -0 bash -c "zstd -dcq '$T/wc.rvs' | python3 '$REPO/tests/checks/rvparse.py' | grep '^#meta' | grep classes="
	[ "$output" = $'#meta\tclasses=4' ]
	run -0 --separate-stderr rv-train-gpu -q -j 1 -b 4 -m 'conv 2 k=3; relu; maxpool 4; linear' \
	    --device cpu "$T/wc.rvs"
	# 2 epochs of 8 samples in batches of 4, over 4 classes
	[[ "$output" == *$'\nsteps     4\n'* ]]
	[[ "$output" == *$'\nsamples   16\n'* ]]
	# and through rv-batch, which carries the metadata along
	run -0 --separate-stderr bash -c "rv-batch -q -b 4 '$T/wc.rvs' |
	    rv-train-gpu -q -j 1 -m linear --device cpu"
}

@test "rv-decode --classes N states the class count, and refuses one the input exceeds" {
	slow
	rv-decode -q --classes 12 "$FIX/ds/wds.tar" -o "$T/c.rvs"
	run -0 bash -c "zstd -dcq '$T/c.rvs' | python3 '$REPO/tests/checks/rvparse.py' | grep classes="
	[ "$output" = $'#meta\tclasses=12' ]
	# wds.tar's labels go up to 9
	run -1 --separate-stderr rv-decode --classes 9 "$FIX/ds/wds.tar" -o "$T/d.rvs"
	[ "$stderr" = "rv-decode: --classes 9: the input has 10 classes (class names, or labels up to 9)" ]
	[ ! -e "$T/d.rvs" ]
	run -2 --separate-stderr rv-decode --classes 0 "$FIX/ds/wds.tar"
	[ "${stderr_lines[0]}" = "rv-decode: --classes: '0': out of range [1, 2147483647]" ]
}

# Stored frames of decoded pixels are written around the pixels (frame
# shells, writev): large images span several 128 KiB raw blocks; a slow
# reader makes the writes short.
@test "rv-decode: stored frames written around the pixels are the frames rv_enc_frame makes" {
	slow
	mkdir -p "$T/big/a" "$T/big/b"
	convert -size 500x375 gradient:red-blue "$T/big/a/1.jpg"
	convert -size 300x301 gradient:green-yellow "$T/big/a/2.png"
	convert -size 150x150 gradient:white-black "$T/big/b/3.jpg"
	convert -size 96x64 gradient:blue-red "$T/big/b/4.jpg"
	convert -size 700x700 xc:gray50 "$T/big/b/5.png"
	set -o pipefail
	rv-decode -q -j 1 --epochs 3 --shuffle "$T/big" | cat > "$T/p1.rvs"
	rv-decode -q -j 2 --epochs 3 --shuffle "$T/big" | (sleep 1; dd bs=4k status=none) > "$T/p2.rvs"
	rv-decode -q -j 2 --epochs 3 --shuffle --level 0 -o "$T/s.rvs" "$T/big"
	rv-decode -q -j 1 --epochs 3 --shuffle --level 1 -o "$T/c.rvs" "$T/big"
	cmp "$T/p1.rvs" "$T/p2.rvs"
	cmp "$T/p1.rvs" "$T/s.rvs"
	zstd -tq "$T/p1.rvs"
	# the same records as the compressed stream, read by zstd itself
	cmp <(zstd -dcq "$T/p1.rvs") <(zstd -dcq "$T/c.rvs")
	# 15 samples, the largest 700x700x3 in 12 raw blocks
	run -0 bash -c "zstd -dcq '$T/p1.rvs' | python3 '$REPO/tests/checks/rvparse.py' | grep -c '^sample'"
	[ "$output" = 15 ]
	[ "$(stat -c %s "$T/p1.rvs")" -gt $((3 * (562500 + 270900 + 67500 + 18432 + 1470000))) ]
}
