#!/usr/bin/env bats
# The stream contract of DESIGN.md section 2 (rv-stream(5)), at the level of
# the programs: concatenation, zstd -dc yielding raw records, skippable
# frames, truncation and corruption reported as "record N at byte B" with
# exit 1, the payload cap, and levels that change the size, never the
# records.  Streams come from rv-decode on Fashion-MNIST.

load helpers

setup_file() {
	need_fmnist
	local d="$BATS_FILE_TMPDIR"
	rv-decode -q --limit 50 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" > "$d/a.rvs"
	rv-decode -q --limit 30 "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz" > "$d/b.rvs"
	rv-decode -q --limit 3 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" > "$d/small.rvs"
}

setup() {
	T="$BATS_TEST_TMPDIR"
	A="$BATS_FILE_TMPDIR/a.rvs"
	B="$BATS_FILE_TMPDIR/b.rvs"
	SMALL="$BATS_FILE_TMPDIR/small.rvs"
}

# Records of each kind in a stream, from rv-inspect --dump:
# "meta sample batch epoch-end" counts.
kinds() {
	rv-inspect --dump "$@" | awk -F'\t' 'NR > 1 { n[$3]++ }
	    END { print n["meta"] + 0, n["sample"] + 0, n["batch"] + 0,
	        n["epoch-end"] + 0 }'
}

# Walk the output of zstd -dc as raw records (magic, hdr_len at 6,
# payload_len at 56): prints "records bytes ok", ok 1 when every record
# starts with RVR1 and they tile the input exactly.
walk_raw() {
	python3 -c '
import struct, sys
b = sys.stdin.buffer.read()
off = n = 0
ok = 1
while off < len(b):
    if b[off:off + 4] != b"RVR1" or off + 64 > len(b):
        ok = 0
        break
    hl, = struct.unpack_from("<H", b, off + 6)
    pl, = struct.unpack_from("<Q", b, off + 56)
    off += hl + pl
    n += 1
print(n, len(b), int(ok and off == len(b)))'
}

# Offsets and sizes of the frames of a stream: "offset end" per record.
frames() {
	rv-inspect --dump "$1" | awk -F'\t' -v size="$(wc -c < "$1")" '
	    NR > 1 { if (off != "") print off, $2; off = $2 }
	    END { print off, size }'
}

@test "stream: cat a b is a stream whose records are a's, then b's" {
	slow
	run -0 kinds "$A"
	[ "$output" = "1 50 0 1" ]
	run -0 kinds "$B"
	[ "$output" = "1 30 0 1" ]
	cat "$A" "$B" > "$T/ab.rvs"
	run -0 kinds "$T/ab.rvs"
	[ "$output" = "2 80 0 2" ]
	# and through a pipe, with the summary
	run -0 --separate-stderr bash -c "set -o pipefail; cat '$A' '$B' | rv-inspect"
	[[ "$output" == *"records      84 (sample 80, batch 0, epoch-end 2, meta 2)"* ]]
	[[ "$output" == *"samples      80 "* ]]
	# the records of a then b, in order: the dump of the concatenation is
	# the two dumps joined (record index and offset aside)
	rv-inspect --dump "$A" | tail -n +2 | cut -f 3- > "$T/da"
	rv-inspect --dump "$B" | tail -n +2 | cut -f 3- > "$T/db"
	rv-inspect --dump "$T/ab.rvs" | tail -n +2 | cut -f 3- > "$T/dab"
	cat "$T/da" "$T/db" | cmp - "$T/dab"
	# several files as operands read as one stream too
	run -0 kinds "$A" "$B" "$A"
	[ "$output" = "3 130 0 3" ]
}

@test "stream: zstd -dc yields the raw records, 64-byte header then payload" {
	run -0 bash -c "zstd -dcq '$A' | head -c 4"
	[ "$output" = "RVR1" ]
	# the raw records tile the output exactly: 52 records
	zstd -dcq "$A" > "$T/raw"
	run -0 walk_raw < "$T/raw"
	read -r n bytes ok <<< "$output"
	[ "$n" = 52 ] && [ "$ok" = 1 ]
	# and the total is the sum of 64 + payload over the records
	sum=$(rv-inspect --dump "$A" | awk -F'\t' 'NR > 1 { s += 64 + $16 }
	    END { print s }')
	[ "$bytes" = "$sum" ]
	# one zstd frame per record, each with a checksum
	run -0 zstd -lv "$A"
	[[ "$output" == *"# Zstandard Frames: 52"* ]]
	[[ "$output" == *"Check: XXH64"* ]]
	zstd -tq "$A"
}

@test "stream: batches are records too: zstd -dc of rv-batch output tiles" {
	rv-batch -q -b 8 "$A" > "$T/batches.rvs"
	run -0 kinds "$T/batches.rvs"
	# 50 samples: 6 full batches of 8 and a short one of 2
	[ "$output" = "1 0 7 1" ]
	zstd -dcq "$T/batches.rvs" > "$T/raw"
	run -0 walk_raw < "$T/raw"
	[ "$output" = "9 $(rv-inspect --dump "$T/batches.rvs" |
	    awk -F'\t' 'NR > 1 { s += 64 + $16 } END { print s }') 1" ]
	# and batch streams concatenate: two epoch 0s in a row are one epoch
	# of 100, 12 full batches of 8 and a short one of 4
	cat "$T/batches.rvs" "$T/batches.rvs" | rv-batch -q -b 8 > "$T/b2.rvs"
	run -0 kinds "$T/b2.rvs"
	[ "$output" = "2 0 13 1" ]
}

@test "stream: skippable frames anywhere are ignored" {
	slow
	# magic 0x184D2A50 and 0x184D2A5F, lengths 5 and 0 (printf formats,
	# since a shell variable cannot hold the NUL bytes)
	skip5='\x50\x2a\x4d\x18\x05\x00\x00\x00hello'
	skip0='\x5f\x2a\x4d\x18\x00\x00\x00\x00'
	# shellcheck disable=SC2059
	{ printf "$skip5"; cat "$A"; printf "$skip0"; cat "$B"
	  printf "$skip5"; } > "$T/skip.rvs"
	[ "$(wc -c < "$T/skip.rvs")" = $(($(cat "$A" "$B" | wc -c) + 34)) ]
	run -0 kinds "$T/skip.rvs"
	[ "$output" = "2 80 0 2" ]
	# and zstd agrees they vanish
	cmp <(zstd -dcq "$T/skip.rvs") <(cat "$A" "$B" | zstd -dcq)
	# programs do not copy them through
	rv-batch -q -b 4 "$T/skip.rvs" > "$T/out.rvs"
	rv-batch -q -b 4 "$A" "$B" > "$T/out2.rvs"
	cmp "$T/out2.rvs" "$T/out.rvs"
}

@test "stream: a cut inside any frame is exit 1 'record N at byte B: truncated frame'" {
	local off end k=0 cut fails=""
	frames "$SMALL" > "$T/frames"
	[ "$(wc -l < "$T/frames")" = 5 ]	# meta, 3 samples, epoch-end
	while read -r off end; do
		for cut in $((off + 1)) $((off + 4)) $((off + 12)) \
		    $(((off + end) / 2)) $((end - 1)); do
			[ "$cut" -gt "$off" ] && [ "$cut" -lt "$end" ] ||
				continue
			head -c "$cut" "$SMALL" > "$T/cut.rvs"
			run -1 --separate-stderr rv-inspect "$T/cut.rvs"
			[ "$stderr" = "rv-inspect: '$T/cut.rvs': record $k at byte $off: truncated frame" ] ||
				fails+="cut $cut: '$stderr'"$'\n'
		done
		k=$((k + 1))
	done < "$T/frames"
	[ -z "$fails" ] || { printf '%s' "$fails"; false; }
}

@test "stream: truncation is reported the same by every reader, on stdin too" {
	slow
	frames "$A" > "$T/frames"
	read -r off end < <(sed -n 11p "$T/frames")	# record 10
	head -c $((off + 100)) "$A" > "$T/cut.rvs"
	run -1 --separate-stderr rv-batch -b 4 "$T/cut.rvs"
	[ "$stderr" = "rv-batch: '$T/cut.rvs': record 10 at byte $off: truncated frame" ]
	run -1 --separate-stderr rv-inspect < "$T/cut.rvs"
	[ "$stderr" = "rv-inspect: '<stdin>': record 10 at byte $off: truncated frame" ]
	# after a whole second file, the index and offset run on across files
	run -1 --separate-stderr rv-inspect "$B" "$T/cut.rvs"
	[[ "$stderr" == "rv-inspect: '$T/cut.rvs': record "*" at byte "*": truncated frame" ]]
	# through a pipe the error still ends the pipeline with status 1
	run -1 --separate-stderr bash -c "set -o pipefail; head -c $((off + 100)) '$A' |
	    rv-batch -b 4 | rv-inspect > /dev/null"
	[ "${stderr_lines[0]}" = "rv-batch: '<stdin>': record 10 at byte $off: truncated frame" ]
}

@test "stream: a cut between frames is a shorter stream, exit 0" {
	frames "$SMALL" > "$T/frames"
	read -r off end < <(sed -n 3p "$T/frames")	# record 2 ends here
	head -c "$end" "$SMALL" > "$T/cut.rvs"
	run -0 kinds "$T/cut.rvs"
	[ "$output" = "1 2 0 0" ]
	run -0 rv-inspect < /dev/null
	[[ "$output" == "records      0 "* ]]
}

@test "stream: a flipped byte is exit 1 naming the record, never a crash" {
	slow
	local off end k=0 fails="" at
	frames "$SMALL" > "$T/frames"
	while read -r off end; do
		for at in $((off + 1)) $((off + 7)) $(((off + end) / 2)) \
		    $((end - 2)); do
			cp "$SMALL" "$T/flip.rvs"
			# xor the byte at $at with 0x20
			byte=$(od -A n -t u1 -j "$at" -N 1 "$T/flip.rvs")
			printf "$(printf '\\%03o' $(((byte ^ 32) & 255)))" |
			    dd of="$T/flip.rvs" bs=1 seek="$at" conv=notrunc \
			    status=none
			cmp -s "$SMALL" "$T/flip.rvs" && { fails+="no flip"; continue; }
			run --separate-stderr rv-inspect "$T/flip.rvs"
			[ "$status" = 1 ] ||
				fails+="flip at $at: status $status"$'\n'
			[[ "$stderr" == "rv-inspect: '$T/flip.rvs': record $k at byte $off: "?* ]] ||
				fails+="flip at $at: '$stderr'"$'\n'
		done
		k=$((k + 1))
	done < "$T/frames"
	[ -z "$fails" ] || { printf '%s' "$fails"; false; }
}

@test "stream: garbage and empty input" {
	slow
	run -1 --separate-stderr bash -c "echo hello | rv-inspect"
	[ "$stderr" = "rv-inspect: '<stdin>': record 0 at byte 0: not an rv stream: it looks like text (rv-decode(1) makes a stream of a dataset)" ]
	# a stream followed by junk: the junk is where it is
	{ cat "$A"; echo junk; } > "$T/junk.rvs"
	run -1 --separate-stderr rv-inspect "$T/junk.rvs"
	[ "$stderr" = "rv-inspect: '$T/junk.rvs': record 52 at byte $(wc -c < "$A"): not a zstd frame (bad magic)" ]
	# several records in one frame are not a stream
	zstd -dcq "$A" | zstd -q -c > "$T/one.rvs"
	run -1 --separate-stderr rv-inspect "$T/one.rvs"
	[[ "$stderr" == "rv-inspect: '$T/one.rvs': record 0 at byte 0: frame holds "* ]]
}

@test "stream: RV_MAX_RECORD refuses a bigger record from its header" {
	slow
	# the metadata record of a.rvs has a payload of a few hundred bytes
	meta=$(rv-inspect --dump "$A" | awk -F'\t' 'NR == 2 { print $16 }')
	[ "$meta" -gt 100 ]
	RV_MAX_RECORD=100 run -1 --separate-stderr rv-inspect "$A"
	[ "$stderr" = "rv-inspect: '$A': record 0 at byte 0: record declares a $meta-byte payload, over the 100-byte limit" ]
	RV_MAX_RECORD=1K run -0 rv-inspect "$A"
	# a 28x28 sample is 784 bytes: 700 stops at record 1
	RV_MAX_RECORD=700 run -1 --separate-stderr rv-batch "$A" -o "$T/x.rvs"
	[[ "$stderr" == "rv-batch: '$A': record 1 at byte "*": record declares a 784-byte payload, over the 700-byte limit" ]]
	[ ! -e "$T/x.rvs" ]
}

@test "stream: the level changes the size, never the records; RV_LEVEL and --level" {
	slow
	local img="$FMNIST/train-images-idx3-ubyte.gz"
	local lab="$FMNIST/train-labels-idx1-ubyte.gz"
	rv-decode -q --limit 200 --level -7 "$img" "$lab" > "$T/l-7.rvs"
	rv-decode -q --limit 200 --level 19 "$img" "$lab" > "$T/l19.rvs"
	RV_LEVEL=19 rv-decode -q --limit 200 "$img" "$lab" > "$T/env19.rvs"
	RV_LEVEL=19 rv-decode -q --limit 200 --level -7 "$img" "$lab" > "$T/opt-7.rvs"
	RV_LEVEL=bogus rv-decode -q --limit 200 "$img" "$lab" > "$T/bogus.rvs"
	rv-decode -q --limit 200 --level -1 "$img" "$lab" > "$T/l-1.rvs"
	[ "$(wc -c < "$T/l19.rvs")" -lt "$(wc -c < "$T/l-7.rvs")" ]
	cmp <(zstd -dcq "$T/l-7.rvs") <(zstd -dcq "$T/l19.rvs")
	cmp "$T/env19.rvs" "$T/l19.rvs"
	cmp "$T/opt-7.rvs" "$T/l-7.rvs"
	# an invalid RV_LEVEL is ignored: the default, -1
	cmp "$T/bogus.rvs" "$T/l-1.rvs"
	run -0 kinds "$T/l19.rvs"
	[ "$output" = "1 200 0 1" ]
}

@test "stream: decode | batch | inspect through pipes equals going through files" {
	local img="$FMNIST/train-images-idx3-ubyte.gz"
	local lab="$FMNIST/train-labels-idx1-ubyte.gz"
	# the records are equal; only the framing differs (a pipe is stored,
	# a file compressed), so compare the raw records
	run -0 --separate-stderr bash -c "set -o pipefail
	    rv-decode -q --limit 100 '$img' '$lab' | rv-batch -q -b 16 | zstd -dcq | md5sum"
	pipe_out="$output"
	rv-decode -q --limit 100 "$img" "$lab" -o "$T/s.rvs"
	rv-batch -q -b 16 "$T/s.rvs" -o "$T/b.rvs"
	[ "$pipe_out" = "$(zstd -dcq "$T/b.rvs" | md5sum)" ]
}

@test "stream: without --level, a pipe is stored and a file compressed" {
	slow
	local img="$FMNIST/train-images-idx3-ubyte.gz"
	local lab="$FMNIST/train-labels-idx1-ubyte.gz"
	rv-decode -q --limit 1000 "$img" "$lab" -o "$T/file.rvs"
	rv-decode -q --limit 1000 "$img" "$lab" | cat > "$T/pipe.rvs"
	rv-decode -q --limit 1000 --level 0 "$img" "$lab" -o "$T/stored.rvs"
	rv-decode -q --limit 1000 --level -1 "$img" "$lab" | cat > "$T/m1.rvs"
	cmp "$T/pipe.rvs" "$T/stored.rvs"
	cmp "$T/file.rvs" "$T/m1.rvs"
	# stored: content plus a few bytes of framing per record
	raw=$(zstd -dcq "$T/stored.rvs" | wc -c)
	[ "$(wc -c < "$T/stored.rvs")" -le $((raw + 1002 * 21)) ]
	[ "$(wc -c < "$T/file.rvs")" -lt $((raw * 3 / 4)) ]
	cmp <(zstd -dcq "$T/stored.rvs") <(zstd -dcq "$T/file.rvs")
	# RV_LEVEL wins over the output's kind
	RV_LEVEL=-1 rv-decode -q --limit 1000 "$img" "$lab" | cmp - "$T/file.rvs"
}
