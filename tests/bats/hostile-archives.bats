#!/usr/bin/env bats
# Hostile archives, round two (issue 47, findings 1-7): each reproducer
# of the security review, made in set-up from real PNGs (ImageMagick),
# bsdtar, python3's zipfile and tarfile, zstd and xz.  Each ends at once,
# in little memory, with its samples read or the input refused in one
# line naming the byte; archives after the first in a file are read as on
# a pipe; no input makes rv-decode run a program.

load helpers

setup_file() {
	local d="$BATS_FILE_TMPDIR" i
	cd "$d" || return 1
	mkdir A B sp
	for i in 0 1 2; do
		convert -size 8x8 "xc:rgb($((i * 40)),10,10)" "A/a$i.png"
		convert -size 8x8 "xc:rgb(10,$((i * 40)),10)" "B/b$i.png"
	done
	bsdtar --format zip -cf a.zip A
	bsdtar --format zip -cf b.zip B
	bsdtar --format cpio -cf a.cpio A
	bsdtar --format cpio -cf b.cpio B
	bsdtar --format 7zip -cf a.7z A
	bsdtar --format ustar -cf a.tar A
	bsdtar --format ustar -cf b.tar B
	yes junk | head -c 100000 > junk
	cat a.zip b.zip > ab.zip
	cat a.cpio b.tar > cpio-tar
	cat a.7z b.tar > 7z-tar
	cat a.cpio junk > cpio-junk
	/usr/bin/python3 - <<'EOF'
import io
import struct
import tarfile
import zipfile

png = open("A/a0.png", "rb").read()

# 1: a zip's local entries, then a zip64 end record claiming a size of
# 2^64 - 12 where the central directory would be.
b = io.BytesIO()
with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED) as z:
    for i in range(3):
        z.writestr("s%d.png" % i, png)
data = b.getvalue()
cd = data.find(b"PK\x01\x02")
rec = b"PK\x06\x06" + struct.pack("<Q", 0xFFFFFFFFFFFFFFF4) + bytes(44)
open("hang.zip", "wb").write(data[:cd] + rec)

# 2: a tar cut after its last member (no end-of-archive blocks), then a
# cpio.
t = tarfile.open("a.tar")
m = t.getmembers()[-1]
end = m.offset_data + (m.size + 511) // 512 * 512
open("tarcut-cpio", "wb").write(open("a.tar", "rb").read()[:end] +
                                open("b.cpio", "rb").read())

# 3: 40,000 members of one name and 40,000 hard links to it.
b = io.BytesIO()
with tarfile.open(fileobj=b, mode="w", format=tarfile.GNU_FORMAT) as t:
    for i in range(40000):
        ti = tarfile.TarInfo("d/a.png")
        ti.size = len(png)
        t.addfile(ti, io.BytesIO(png))
        ln = tarfile.TarInfo("d/l%d.png" % i)
        ln.type = tarfile.LNKTYPE
        ln.linkname = "d/a.png"
        t.addfile(ln)
open("links.tar", "wb").write(b.getvalue())

# 4: three PNG headers, each followed by a 300 MB hole.
for i in range(3):
    with open("sp/s%d.png" % i, "wb") as f:
        f.write(png[:64])
        f.truncate(300 << 20)
EOF
	gzip -n -1 links.tar
	tar --sparse -cf sparse.tar sp
	tar -cf - sp | zstd -q -1 -o sparse.tar.zst
	rm -r sp
	# 5: an xz stream whose dictionary says 1 GiB
	xz -c --lzma2=dict=1GiB a.tar > dict.tar.xz
}

setup() {
	D="$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
}

# samples FILE: the sample count of the stream FILE
samples() {
	rv-inspect "$1" | awk '/^samples/ { print $2 }'
}

# digest: the samples of the stream on stdin, a line each (kind, id,
# label, shape, SHA-256 of the pixels), by the independent reader
digest() {
	zstd -dcq | python3 "$REPO/tests/checks/rvparse.py" --sha |
	    awk '$1 == "sample"'
}

@test "hostile-archives: a zip64 end record whose size wraps is refused at once, as a file, on a pipe, after a tar, indexed" {
	run -1 timeout 10 rv-decode -q "$D/hang.zip"
	[ "$output" = "rv-decode: '$D/hang.zip': byte 936: where the archive that starts there ends cannot be found; the input cannot be read on from there, so it is refused (3 samples read before it are lost)" ]
	run -1 timeout 10 rv-decode -q - < <(cat "$D/hang.zip")
	[[ $output == *"'<stdin>': byte 936: "* ]]
	cat "$D/a.tar" "$D/hang.zip" > "$T/tar-hang"
	run -1 timeout 10 rv-decode -q "$T/tar-hang"
	[[ $output == *"byte $(($(stat -c %s "$D/a.tar") + 936)): "* ]]
	run -1 timeout 10 rv-decode -q --index-out "$T/i.idx" "$D/hang.zip"
	[[ $output == *"byte 936: "* ]]
	[ ! -e "$T/i.idx" ]
}

@test "hostile-archives: archives after the first in a file are read as on a pipe" {
	local f n
	for f in ab.zip:6 cpio-tar:6 tarcut-cpio:6 7z-tar:6; do
		n=${f#*:}
		f=$D/${f%:*}
		run -0 rv-decode -q --encoded "$f" -o "$T/f.rvs"
		[ "$output" = "" ]
		[ "$(samples "$T/f.rvs")" = "$n" ]
		case $f in
		*7z*) continue ;;	# read by seeking: below
		esac
		run -0 rv-decode -q --encoded - -o "$T/p.rvs" < <(cat "$f")
		[ "$output" = "" ]
		[ "$(digest < "$T/f.rvs")" = "$(digest < "$T/p.rvs")" ]
	done
	# the same samples, pixel for pixel, as the archives given apart
	run -0 rv-decode -q "$D/cpio-tar" -o "$T/one.rvs"
	run -0 rv-decode -q "$D/a.cpio" "$D/b.tar" -o "$T/two.rvs"
	[ "$(digest < "$T/one.rvs")" = "$(digest < "$T/two.rvs")" ]
}

@test "hostile-archives: data after a cpio is refused in a file as on a pipe" {
	run -1 rv-decode -q --encoded "$D/cpio-junk" -o "$T/o.rvs"
	[ "$output" = "rv-decode: '$D/cpio-junk': byte 1248: no archive starts there (libarchive: unrecognized archive format); the input cannot be read on from there, so it is refused (3 samples read before it are lost)" ]
	[ ! -e "$T/o.rvs" ]
	run -1 rv-decode -q --encoded - -o "$T/o.rvs" < <(cat "$D/cpio-junk")
	[ "$output" = "rv-decode: '<stdin>': byte 1248: no archive starts there (libarchive: unrecognized archive format); the input cannot be read on from there, so it is refused (3 samples read before it are lost)" ]
}

@test "hostile-archives: a 7-zip archive is read only as a file of its own, first in it; else refused in one line" {
	run -1 rv-decode -q --encoded - < <(cat "$D/7z-tar")
	[ "$output" = "rv-decode: '<stdin>': a 7-zip archive, which is read by seeking: give it as a file, not on a pipe" ]
	# after a tar: its 461 bytes are too short a block for the tar
	# reader, which stopped there without a word
	cat "$D/b.tar" "$D/a.7z" > "$T/tar-7z"
	run -1 rv-decode -q --encoded - < <(cat "$T/tar-7z")
	[ "$output" = "rv-decode: '<stdin>': byte 4608: a 7-zip archive starts there, which is read by seeking: give it as a file, not on a pipe; the input cannot be read on from there, so it is refused (3 samples read before it are lost)" ]
	run -1 rv-decode -q --encoded "$T/tar-7z"
	[ "$output" = "rv-decode: '$T/tar-7z': byte 4608: a 7-zip archive starts there, which is read by seeking: give it as a file of its own; the input cannot be read on from there, so it is refused (3 samples read before it are lost)" ]
}

@test "hostile-archives: 40,000 links to one of 40,000 members of a name resolve in linear time" {
	local t0 t1
	t0=$(date +%s%N)
	run -0 rv-decode -q --encoded "$D/links.tar.gz" -o "$T/o.rvs"
	t1=$(date +%s%N)
	# each link names the member of its name just before it: 40,000
	# samples of d/l*, and d/a itself (the others replaced by it)
	[ "$(samples "$T/o.rvs")" = 40001 ]
	echo "$(((t1 - t0) / 1000000)) ms" >&2
	# the walk over every member of the name took 5.4 s here
	sanitized || [ $(((t1 - t0) / 1000000)) -lt 2500 ]
}

@test "hostile-archives: image members far larger than their headers' images are skipped after 16 MiB" {
	local f kb
	need_time
	for f in sparse.tar sparse.tar.zst; do
		kb=$(peak rv-decode -q --encoded "$D/$f")
		echo "$f: $kb KB" >&2
		under "$kb" 65536
		run -1 rv-decode --encoded "$D/$f"
		[ "${lines[0]}" = "rv-decode: '$D/$f': 'sp/s0.png': member holds over 16777728 bytes, too many for the 8x8 image its header says (8 bytes a pixel and 16 MiB) (skipped)" ]
	done
}

@test "hostile-archives: --max-held bounds the image bytes held, in one line naming the input" {
	# --hold: an uncompressed tar's images are otherwise read by offset
	run -1 rv-decode -q --encoded --hold --max-held 10K "$FIX/ds/wds.tar"
	[ "$output" = "rv-decode: '$FIX/ds/wds.tar': byte 20992: the archives' images held in memory would pass 10.0 KiB, the bound --max-held set (rv-decode holds the images of a compressed archive, of a pipe, or all under --hold, encoded), after 2 samples" ]
	run -0 rv-decode -q --encoded --hold --max-held 1M "$FIX/ds/wds.tar" \
	    -o "$T/o.rvs"
	[ "$(samples "$T/o.rvs")" = 5 ]
	# all the inputs together
	run -1 rv-decode -q --encoded --hold --max-held 40K "$FIX/ds/wds.tar" \
	    "$FIX/ds/wds.tar"
	[[ $output == *"would pass 40.0 KiB, the bound --max-held set"* ]]
	run -2 rv-decode --max-held 0 "$FIX/ds/wds.tar"
	[ "${lines[0]}" = "rv-decode: --max-held: '0': must be over 0" ]
}

@test "hostile-archives: an xz stream whose dictionary needs over 136 MiB is refused before it is allocated" {
	local kb
	need_time
	kb=$(peak rv-decode -q "$D/dict.tar.xz")
	under "$kb" 65536
	run -1 rv-decode -q "$D/dict.tar.xz"
	[ "$output" = "rv-decode: '$D/dict.tar.xz': xz stream refused: decoding it needs over 136 MiB (a dictionary over 128 MiB), rv's limit, before any member could be read" ]
	# xz -9's 64 MiB dictionary is read
	xz -9 -c "$D/a.tar" > "$T/ok.tar.xz"
	run -0 rv-decode -q --encoded "$T/ok.tar.xz" -o "$T/o.rvs"
	[ "$(samples "$T/o.rvs")" = 3 ]
}

@test "hostile-archives: no input makes rv-decode run a program" {
	command -v strace > /dev/null || skip "no strace"
	printf 'LRZI\0\6%020d' 0 > "$T/lrz"
	for f in "$T/lrz" "$D/ab.zip" "$D/7z-tar" "$D/cpio-junk"; do
		strace -f -qq -e trace=execve -o "$T/trace" \
		    rv-decode -q "$f" > /dev/null 2>&1 || true
		# the one execve: rv-decode's own
		[ "$(grep -c execve "$T/trace")" = 1 ]
		cat "$f" | strace -f -qq -e trace=execve -o "$T/trace" \
		    rv-decode -q - > /dev/null 2>&1 || true
		[ "$(grep -c execve "$T/trace")" = 1 ]
	done
}

@test "hostile-archives: an index is read once, from a pipe or a FIFO too, and zeros are refused at once" {
	local want
	cp "$FIX/ds/wds.tar" "$T/"
	cd "$T"
	run -0 rv-decode -q --index-out w.idx wds.tar
	want=$(rv-decode -q --index w.idx | digest)
	# relative paths of an index on a pipe are the working directory's
	[ "$(rv-decode -q --index <(cat w.idx) | digest)" = "$want" ]
	[ "$(rv-decode -q --index /dev/stdin < w.idx | digest)" = "$want" ]
	[ "$(cat w.idx | rv-decode -q --index /dev/stdin | digest)" = "$want" ]
	mkfifo ff
	{ printf 'rv-index\t1\n'; head -c 200000000 /dev/zero; } > ff 2> /dev/null &
	run -1 timeout 10 rv-decode -q --index ff
	[ "$output" = "rv-decode: 'ff': holds a NUL byte: not an index" ]
	wait
}
