#!/usr/bin/env bats
# rv-decode reads the stored images of an archive in a file by offset
# (issue 49): the same bytes out as holding them in memory, memory flat in
# the archive's size, and a file changed between its listing and its
# reading refused in one line.  Real JPEGs and PNGs made with ImageMagick
# by tests/setup/make-fixtures.sh, archives made here with tar and zip.

load helpers

setup_file() {
	need_fixtures
}

setup() {
	T="$BATS_TEST_TMPDIR"
}

samples() {
	rv-inspect "$1" | awk '/^samples/ { print $2 }'
}

# same FILE [OPTIONS...]: rv-decode with OPTIONS gives the same bytes
# reading FILE's images by offset as holding them (--hold).
same() {
	local f=$1
	shift
	rv-decode -q "$@" "$f" -o "$T/off.rvs"
	rv-decode -q --hold "$@" "$f" -o "$T/held.rvs"
	cmp "$T/off.rvs" "$T/held.rvs"
	[ "$(samples "$T/off.rvs")" -gt 0 ]
}

# tree DIR: a small dataset of real images in two classes, one of them a
# name over 100 bytes (a pax or GNU long name in a tar).
tree() {
	local d=$1 long
	long=$(printf 'x%.0s' $(seq 1 110))
	mkdir -p "$d/cat/$long" "$d/dog"
	cp "$FIX/img/big.jpg" "$d/cat/a.jpg"
	cp "$FIX/img/grey.jpg" "$d/cat/$long/b.jpg"
	cp "$FIX/img/palette.png" "$d/dog/c.png"
	cp "$FIX/img/interlaced.png" "$d/dog/d.png"
	cp "$FIX/img/cmyk.jpg" "$d/dog/e.jpg"
}

@test "archive-offset: stored members read by offset give the bytes holding them gave, decoded or encoded, shuffled" {
	tree "$T/t"
	tar -cf "$T/ustar.tar" -C "$T/t" .
	tar --format=pax -cf "$T/pax.tar" -C "$T/t" .
	tar --format=gnu -cf "$T/gnu.tar" -C "$T/t" .
	(cd "$T/t" && zip -q0r "$T/stored.zip" . && zip -q9r "$T/deflated.zip" .)
	bsdtar --format newc -cf "$T/newc.cpio" -C "$T/t" .
	for f in ustar.tar pax.tar gnu.tar stored.zip deflated.zip newc.cpio \
	    ds/wds.tar ds/dirs.tar ds/dirs.zip; do
		case $f in ds/*) p=$FIX/$f ;; *) p=$T/$f ;; esac
		same "$p"
		same "$p" --encoded --shuffle --epochs 3 --seed 7
		same "$p" -j 2 --shuffle --seed 1
		# read by offset, none held; but the zip's deflated members
		if [[ $f == *deflated.zip || $f == ds/dirs.zip ]]; then
			run -1 rv-decode -q --encoded --max-held 1K "$p"
			[[ $output == *"the bound --max-held set"* ]]
		else
			rv-decode -q --encoded --max-held 1K "$p" -o "$T/k.rvs"
		fi
	done
	# as the pipe gives them, but for the source's name in the metadata
	rv-decode -q --encoded "$T/pax.tar" | zstd -dcq |
	    python3 "$REPO/tests/checks/rvparse.py" --sha | grep -v meta > "$T/f.tsv"
	rv-decode -q --encoded - < "$T/pax.tar" | zstd -dcq |
	    python3 "$REPO/tests/checks/rvparse.py" --sha | grep -v meta > "$T/p.tsv"
	cmp "$T/f.tsv" "$T/p.tsv"
}

@test "archive-offset: a sparse tar member, whose stored bytes are not its data, is held and read right" {
	mkdir -p "$T/s/c"
	cp "$FIX/img/big.jpg" "$T/s/c/hole.jpg"
	# a hole after the image's end: the tar stores it as a sparse member
	truncate -s +4M "$T/s/c/hole.jpg"
	cp "$FIX/img/grey.jpg" "$T/s/c/plain.jpg"
	tar --sparse -cf "$T/sparse.tar" -C "$T/s" .
	[ "$(stat -c %s "$T/sparse.tar")" -lt 1048576 ]
	same "$T/sparse.tar" --encoded
	same "$T/sparse.tar"
	# the member is its whole data, the hole's zeros included
	rv-decode -q --encoded "$T/sparse.tar" | zstd -dcq |
	    python3 "$REPO/tests/checks/rvparse.py" |
	    awk -F'\t' '$1 == "sample" { print $8 }' | sort -n | tail -1 > "$T/len"
	[ "$(cat "$T/len")" -gt 4194304 ]
}

@test "archive-offset: memory stays flat in an uncompressed tar's size; --hold and compressed archives hold it, bounded by --max-held" {
	local kb_off kb_held i
	need_time
	mkdir -p "$T/big/c"
	convert -size 640x480 xc: +noise Random -quality 95 "$T/n.jpg"
	for i in $(seq 1 96); do cp "$T/n.jpg" "$T/big/c/n$i.jpg"; done
	tar -cf "$T/big.tar" -C "$T/big" .
	[ "$(stat -c %s "$T/big.tar")" -gt 40000000 ]
	kb_off=$(peak rv-decode -q --encoded "$T/big.tar")
	kb_held=$(peak rv-decode -q --encoded --hold "$T/big.tar")
	[ "$kb_held" -gt 39000 ]
	under "$kb_off" 24576
	# the bound counts what is held, not what is read by offset
	run -0 rv-decode -q --encoded --max-held 1M "$T/big.tar" -o "$T/o.rvs"
	[ "$(samples "$T/o.rvs")" = 96 ]
	run -1 rv-decode -q --encoded --hold --max-held 1M "$T/big.tar"
	[[ $output == *"would pass 1.0 MiB, the bound --max-held set"* ]]
	gzip -1 -k "$T/big.tar"
	run -1 rv-decode -q --encoded --max-held 1M "$T/big.tar.gz"
	[[ $output == *"would pass 1.0 MiB, the bound --max-held set"* ]]
}

# start_stalled FILE: rv-decode --encoded FILE into a FIFO of which 64 KiB
# are read, so that it has listed FILE and is stalled writing when the
# caller changes FILE; finish_stalled reads the rest: the stream in
# $T/got, rv-decode's status in $T/st and its stderr in $T/err.
start_stalled() {
	rm -f "$T/fifo"
	mkfifo "$T/fifo"
	(
		set +e
		rv-decode -q --encoded "$@" -o "$T/fifo" 2> "$T/err"
		echo $? > "$T/st"
	) &
	exec 8< "$T/fifo"
	head -c 65536 <&8 > "$T/got"
}
finish_stalled() {
	cat <&8 >> "$T/got"
	exec 8<&-
	wait
}

# noise DIR N: N JPEGs of noise, 50 KB each, in DIR/c.
noise() {
	mkdir -p "$1/c"
	convert -size 320x240 xc: +noise Random -quality 95 "$1/n.jpg"
	for i in $(seq 1 "$2"); do cp "$1/n.jpg" "$1/c/n$i.jpg"; done
	rm "$1/n.jpg"
}

@test "archive-offset: a tar changed in place after its listing fails the run in one line naming it and what changed" {
	noise "$T/big" 400
	tar -cf "$T/a.tar" -C "$T/big" .
	size=$(stat -c %s "$T/a.tar")
	start_stalled "$T/a.tar"
	printf 'more' >> "$T/a.tar"
	finish_stalled
	[ "$(cat "$T/st")" = 1 ]
	[ "$(wc -l < "$T/err")" = 1 ]
	grep -Eq "^rv-decode: '$T/a.tar': changed since it was listed \($size bytes, now $((size + 4)) bytes\): './c/n[0-9]+.jpg' \(byte [0-9]+\) cannot be read as listed$" "$T/err"
	# the same size, modified
	tar -cf "$T/a.tar" -C "$T/big" .
	start_stalled "$T/a.tar"
	touch -d '2001-02-03 04:05:06' "$T/a.tar"
	finish_stalled
	[ "$(cat "$T/st")" = 1 ]
	grep -Eq "changed since it was listed \(modified [0-9-]+ [0-9:.]+ UTC, now modified 2001-02-03 04:05:06.000000000 UTC\)" "$T/err"
}

@test "archive-offset: a tar renamed over or removed after its listing is read as it was listed" {
	noise "$T/big" 400
	mkdir -p "$T/other/c"
	cp "$FIX/img/grey.jpg" "$T/other/c/g.jpg"
	tar -cf "$T/a.tar" -C "$T/big" .
	tar -cf "$T/b.tar" -C "$T/other" .
	rv-decode -q --encoded "$T/a.tar" | cat > "$T/want.rvs"
	start_stalled "$T/a.tar"
	mv "$T/b.tar" "$T/a.tar"
	finish_stalled
	[ "$(cat "$T/st")" = 0 ]
	[ ! -s "$T/err" ]
	cmp "$T/got" "$T/want.rvs"
	tar -cf "$T/a.tar" -C "$T/big" .
	start_stalled "$T/a.tar"
	rm "$T/a.tar"
	finish_stalled
	[ "$(cat "$T/st")" = 0 ]
	[ ! -s "$T/err" ]
	cmp "$T/got" "$T/want.rvs"
}

@test "archive-offset: past half the limit on open files an archive is opened for each sample, the same bytes out" {
	local i
	tree "$T/t"
	for i in $(seq 1 16); do tar -cf "$T/s$i.tar" -C "$T/t" .; done
	rv-decode -q --encoded --shuffle --hold "$T"/s*.tar -o "$T/held.rvs"
	# 24 descriptors: 12 may stay open, the program needs some of them
	run -0 bash -c "ulimit -n 24 && rv-decode -q --encoded --shuffle $T/s*.tar -o $T/off.rvs"
	cmp "$T/off.rvs" "$T/held.rvs"
	# decoded, with four of the sixteen opened for each sample
	run -0 bash -c "ulimit -n 24 && rv-decode -q --shuffle $T/s*.tar -o $T/a.rvs"
	[ "$(samples "$T/a.rvs")" = 80 ]
	# standard input, a file with no name to open again, past the budget
	run -0 bash -c "ulimit -n 24 && rv-decode -q --encoded $T/s*.tar - < $T/s1.tar -o $T/in.rvs"
	[ "$(samples "$T/in.rvs")" = 85 ]
}

@test "archive-offset: --cache-dir: a compressed archive's and a pipe's images go to a file there, read back: the same bytes, memory flat, nothing left" {
	local kb_held kb_cache
	need_time
	noise "$T/big" 400
	tar -cf "$T/a.tar" -C "$T/big" .
	gzip -1 -k "$T/a.tar"
	zstd -q -1 "$T/a.tar" -o "$T/a.tar.zst"
	mkdir "$T/cache"
	for f in a.tar.gz a.tar.zst; do
		rv-decode -q --encoded --shuffle --epochs 2 "$T/$f" -o "$T/held.rvs"
		rv-decode -q --encoded --shuffle --epochs 2 --cache-dir "$T/cache" \
		    "$T/$f" -o "$T/cache.rvs"
		cmp "$T/held.rvs" "$T/cache.rvs"
		rv-decode -q -j 2 --cache-dir "$T/cache" "$T/$f" -o "$T/d1.rvs"
		rv-decode -q -j 2 "$T/$f" -o "$T/d2.rvs"
		cmp "$T/d1.rvs" "$T/d2.rvs"
	done
	rv-decode -q --encoded - < "$T/a.tar" | cat > "$T/p1.rvs"
	rv-decode -q --encoded --cache-dir "$T/cache" - < "$T/a.tar" | cat > "$T/p2.rvs"
	cmp "$T/p1.rvs" "$T/p2.rvs"
	# the spill file is unlinked as soon as it is made
	[ -z "$(ls -A "$T/cache")" ]
	[ "$(samples "$T/p2.rvs")" = 400 ]
	kb_held=$(peak rv-decode -q --encoded "$T/a.tar.gz")
	kb_cache=$(peak rv-decode -q --encoded --cache-dir "$T/cache" "$T/a.tar.gz")
	[ "$kb_held" -gt 50000 ]
	under "$kb_cache" 24576
	# what is spilled does not count against --max-held
	rv-decode -q --encoded --max-held 1M --cache-dir "$T/cache" "$T/a.tar.gz" \
	    -o "$T/m.rvs"
}

@test "archive-offset: --cache-dir that is missing, no directory, or given with --hold: one line, nothing written" {
	tree "$T/t"
	tar -czf "$T/t.tar.gz" -C "$T/t" .
	run -1 rv-decode -q --cache-dir "$T/none" "$T/t.tar.gz" -o "$T/o.rvs"
	[ "$output" = "rv-decode: --cache-dir '$T/none': cannot make a file there: No such file or directory" ]
	[ ! -e "$T/o.rvs" ]
	run -1 rv-decode -q --cache-dir "$T/t.tar.gz" "$T/t.tar.gz" -o "$T/o.rvs"
	[ "$output" = "rv-decode: --cache-dir '$T/t.tar.gz': cannot make a file there: Not a directory" ]
	[ ! -e "$T/o.rvs" ]
	run -2 rv-decode --hold --cache-dir "$T" "$T/t.tar.gz"
	[ "${lines[0]}" = "rv-decode: --hold keeps the archives' images in memory, --cache-dir '$T' on disk: give one" ]
	run -2 rv-decode --cache-dir '' "$T/t.tar.gz"
	[ "${lines[0]}" = "rv-decode: --cache-dir: an empty directory name" ]
}

@test "archive-offset: a --cache-dir that fills up: one line naming the archive, the directory and the write, nothing left there or at -o" {
	tree "$T/t"
	tar -czf "$T/t.tar.gz" -C "$T/t" .
	mkdir "$T/c"
	# A file size limit stands in for a full disk: the same failed write
	# (EFBIG rather than ENOSPC), with SIGXFSZ ignored as a shell may.
	run -1 bash -c "trap '' XFSZ; ulimit -f 1; rv-decode -q --cache-dir \
	    '$T/c' '$T/t.tar.gz' -o '$T/o.rvs'"
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == "rv-decode: '$T/t.tar.gz': byte "*": --cache-dir '$T/c': writing "*" bytes at byte "*" of its spill file: File too large" ]]
	[ -z "$(ls -A "$T/c")" ]
	[ ! -e "$T/o.rvs" ]
	[ -z "$(ls "$T" | grep -v '^[tc]$\|^t.tar.gz$')" ]
}

@test "archive-offset: --cache-dir with --index and --shard: each rank's shards the same bytes" {
	tree "$T/t"
	tar -czf "$T/a.tar.gz" -C "$T/t" .
	tar -cf "$T/b.tar" -C "$T/t" .
	zstd -q "$T/b.tar" -o "$T/b.tar.zst"
	mkdir "$T/cache"
	rv-decode -q --index-out "$T/idx" "$T/a.tar.gz" "$T/b.tar.zst"
	for s in 0 1; do
		rv-decode -q --encoded --index "$T/idx" --shard "$s/2" --shuffle \
		    --epochs 2 -o "$T/h$s.rvs"
		rv-decode -q --encoded --index "$T/idx" --shard "$s/2" --shuffle \
		    --epochs 2 --cache-dir "$T/cache" -o "$T/c$s.rvs"
		cmp "$T/h$s.rvs" "$T/c$s.rvs"
		[ "$(samples "$T/c$s.rvs")" -gt 0 ]
	done
	[ -z "$(ls -A "$T/cache")" ]
}

@test "archive-offset: past the budget of open files, a tar renamed over or removed after its listing fails the run in one line" {
	local i
	tree "$T/t"
	for i in $(seq 1 16); do tar -cf "$T/s$i.tar" -C "$T/t" .; done
	noise "$T/big" 400
	tar -cf "$T/z.tar" -C "$T/big" .
	tar -cf "$T/other.tar" -C "$T/t" .
	# 24 descriptors: z.tar, listed last, is opened for each sample
	(ulimit -n 24 && start_stalled "$T"/s*.tar "$T/z.tar" &&
	    mv "$T/other.tar" "$T/z.tar" && finish_stalled)
	[ "$(cat "$T/st")" = 1 ]
	grep -Eq "^rv-decode: '$T/z.tar': replaced by another file since it was listed: './c/n[0-9]+.jpg' \(byte [0-9]+\) cannot be read as listed$" "$T/err"
	tar -cf "$T/z.tar" -C "$T/big" .
	(ulimit -n 24 && start_stalled "$T"/s*.tar "$T/z.tar" &&
	    rm "$T/z.tar" && finish_stalled)
	[ "$(cat "$T/st")" = 1 ]
	grep -Eq "^rv-decode: '$T/z.tar': cannot open it again to read './c/n[0-9]+.jpg' \(byte [0-9]+\): No such file or directory$" "$T/err"
}
