# rv-batch end to end on Fashion-MNIST streams made by rv-decode.  Batch
# contents are checked from the raw records `zstd -dc` yields, parsed by
# the small python below (header layout: top of lib/stream/record.c), so these
# tests depend on no other rv program than rv-decode.
# shellcheck shell=bash disable=SC2154,SC2013

load helpers

# records FILE MODE: list (one line per record), ids ("id label" per
# sample, "end" after each epoch), pixels (all sample pixels, raw), meta
# (metadata payloads).
PY_RECORDS='
import struct, sys
b = sys.stdin.buffer.read()
mode = sys.argv[1]
out = sys.stdout.buffer
names = {1: "sample", 2: "batch", 3: "end", 4: "meta"}
off = 0
while off < len(b):
    (magic, ver, hl, kind, dt, flags, ep, rid, label, h, w, c, n, uses,
     wt, sc, pl) = struct.unpack_from("<IHHBBHIQiIIIIIffQ", b, off)
    assert magic == 0x31525652
    p = b[off + hl:off + hl + pl]
    off += hl + pl
    if mode == "list":
        s = names[kind]
        if kind in (1, 2, 3):
            s += " e%d n%d" % (ep, n)
        if kind in (1, 2):
            s += " %dx%dx%d" % (h, w, c)
        out.write((s + "\n").encode())
    elif mode == "ids":
        if kind == 1:
            out.write(b"%d %d\n" % (rid, label))
        elif kind == 2:
            for i in range(n):
                out.write(b"%d %d\n" % (
                    struct.unpack_from("<Q", p, 8 * i)[0],
                    struct.unpack_from("<i", p, 8 * n + 4 * i)[0]))
        elif kind == 3:
            out.write(b"end\n")
    elif mode == "pixels":
        if kind == 1:
            out.write(p)
        elif kind == 2:
            out.write(p[16 * n:])
    elif mode == "meta":
        if kind == 4:
            out.write(p)
'

records() {
	zstd -qdc "$1" | python3 -c "$PY_RECORDS" "$2"
}

setup_file() {
	need_fmnist
	local t="$BATS_FILE_TMPDIR" img lab
	img="$FMNIST/train-images-idx3-ubyte.gz"
	lab="$FMNIST/train-labels-idx1-ubyte.gz"
	rv-decode -q --limit 100 "$img" "$lab" > "$t/x.rvs"
	rv-decode -q --limit 50 --epochs 2 "$img" "$lab" > "$t/e2.rvs"
	rv-decode -q --limit 3 --channels 1 "$img" "$lab" > "$t/c1.rvs"
	rv-decode -q --limit 3 --channels 3 "$img" "$lab" > "$t/c3.rvs"
}

setup() {
	T="$BATS_FILE_TMPDIR"
	W="$BATS_TEST_TMPDIR"
}

@test "rv-batch: usage errors exit 2, the reason first, then where the usage is" {
	slow
	local args want
	# shellcheck disable=SC2086
	while IFS='|' read -r args want; do
		run -2 --separate-stderr rv-batch $args "$T/x.rvs"
		[ -z "$output" ]
		[ "${stderr_lines[0]}" = "rv-batch: $want" ] ||
		    { echo "$args: got '${stderr_lines[0]}'"; return 1; }
		[ "${stderr_lines[1]}" = "Try 'rv-batch --help' for more information." ]
	done <<-'EOF'
	-b 0|-b: '0': out of range [1, 1048576]
	-b x|-b: 'x': not a non-negative integer
	--batch 1048577|-b: '1048577': out of range [1, 1048576]
	--shuffle-buffer -1|--shuffle-buffer: '-1': not a non-negative integer
	--shuffle-buffer 16777217|--shuffle-buffer: '16777217': out of range [0, 16777216]
	--seed x|--seed: 'x': not a non-negative integer
	--level 20|--level: '20': out of range [-7, 19]
	--bogus|unknown option '--bogus'
	-x|unknown option '-x'
	EOF
	run -2 --separate-stderr rv-batch -b
	[ "${stderr_lines[0]}" = "rv-batch: option '-b' needs an argument" ]
	run -2 --separate-stderr rv-batch -o
	[ "${stderr_lines[0]}" = "rv-batch: option '-o' needs an argument" ]
}

@test "rv-batch: --help and --version print to stdout and exit 0" {
	slow
	run -0 --separate-stderr rv-batch --help
	[ -z "$stderr" ]
	[[ "${lines[0]}" == "usage: rv-batch "* ]]
	run -0 --separate-stderr rv-batch -V
	[ "$output" = "rv-batch 0.1.0" ]
}

@test "rv-batch: the man page lints clean and documents every long option" {
	slow
	run -0 mandoc -T lint -W warning "$REPO/man/rv-batch.1"
	[ -z "$output" ]
	local opt name
	rv-batch --help > "$BATS_TEST_TMPDIR/usage"
	for opt in $(grep -o -- '--[a-z-]*' "$BATS_TEST_TMPDIR/usage"); do
		name=${opt#--}
		grep -qF -- "Fl \\-${name//-/\\-}" "$REPO/man/rv-batch.1" ||
		    { echo "$opt not in the page"; return 1; }
	done
}

@test "rv-batch: 100 samples make 3 full batches and one of 4" {
	slow
	run -0 --separate-stderr rv-batch -v -b 32 -o "$W/b.rvs" "$T/x.rvs"
	[ "$stderr" = "rv-batch: 100 samples in, 4 batches out (3 full of 32, 1 short), 0 short dropped (0 samples), 1 epoch" ]
	run -0 records "$W/b.rvs" list
	[ "$output" = "meta
batch e0 n32 28x28x1
batch e0 n32 28x28x1
batch e0 n32 28x28x1
batch e0 n4 28x28x1
end e0 n100" ]
}

@test "rv-batch: --drop-last drops the short batch and counts it" {
	run -0 --separate-stderr rv-batch -v --drop-last -b 32 -o "$W/b.rvs" \
	    "$T/x.rvs"
	[ "$stderr" = "rv-batch: 100 samples in, 3 batches out (3 full of 32, 0 short), 1 short dropped (4 samples), 1 epoch" ]
	run -0 records "$W/b.rvs" list
	[ "$output" = "meta
batch e0 n32 28x28x1
batch e0 n32 28x28x1
batch e0 n32 28x28x1
end e0 n100" ]
	# an exact multiple drops nothing
	run -0 --separate-stderr rv-batch -v --drop-last -b 25 "$T/x.rvs"
	[ "$stderr" = "rv-batch: 100 samples in, 4 batches out (4 full of 25, 0 short), 0 short dropped (0 samples), 1 epoch" ]
}

@test "rv-batch: no batch spans an epoch; epoch ends pass through after the flush" {
	rv-batch -b 16 "$T/e2.rvs" > "$W/b.rvs"
	run -0 records "$W/b.rvs" list
	[ "$output" = "meta
batch e0 n16 28x28x1
batch e0 n16 28x28x1
batch e0 n16 28x28x1
batch e0 n2 28x28x1
end e0 n50
batch e1 n16 28x28x1
batch e1 n16 28x28x1
batch e1 n16 28x28x1
batch e1 n2 28x28x1
end e1 n50" ]
	rv-batch -b 16 --drop-last "$T/e2.rvs" > "$W/d.rvs"
	run -0 records "$W/d.rvs" list
	[ "$output" = "meta
batch e0 n16 28x28x1
batch e0 n16 28x28x1
batch e0 n16 28x28x1
end e0 n50
batch e1 n16 28x28x1
batch e1 n16 28x28x1
batch e1 n16 28x28x1
end e1 n50" ]
}

@test "rv-batch: batch pixels, ids and labels are the samples', in order" {
	slow
	rv-batch -b 32 "$T/x.rvs" > "$W/b.rvs"
	records "$T/x.rvs" pixels > "$W/in.px"
	records "$W/b.rvs" pixels > "$W/out.px"
	[ "$(stat -c %s "$W/in.px")" -eq $((100 * 28 * 28)) ]
	cmp "$W/in.px" "$W/out.px"
	records "$T/x.rvs" ids > "$W/in.ids"
	records "$W/b.rvs" ids > "$W/out.ids"
	cmp "$W/in.ids" "$W/out.ids"
	# the metadata passes through, ahead of the batches, with the batch
	# size and --drop-last added
	records "$T/x.rvs" meta > "$W/in.meta"
	records "$W/b.rvs" meta > "$W/out.meta"
	[ -s "$W/in.meta" ]
	grep -v '^batch\.' "$W/out.meta" | cmp "$W/in.meta" -
	[ "$(grep '^batch\.' "$W/out.meta" | paste -sd,)" = "batch.size=32,batch.drop-last=0" ]
	rv-batch -b 7 --drop-last "$T/x.rvs" | records /dev/stdin meta | grep -qx 'batch.drop-last=1'

}

@test "rv-batch: file operands are one stream, as from cat" {
	slow
	rv-batch -b 7 "$T/x.rvs" "$T/e2.rvs" > "$W/a.rvs"
	cat "$T/x.rvs" "$T/e2.rvs" > "$W/cat.rvs"
	rv-batch -b 7 < "$W/cat.rvs" > "$W/b.rvs"
	rv-batch -b 7 - < "$W/cat.rvs" > "$W/c.rvs"
	cmp "$W/a.rvs" "$W/b.rvs"
	cmp "$W/a.rvs" "$W/c.rvs"
}

@test "rv-batch: re-batching a batch stream equals batching the samples" {
	rv-batch -b 32 "$T/e2.rvs" > "$W/b32.rvs"
	rv-batch -b 10 "$W/b32.rvs" > "$W/re.rvs"
	rv-batch -b 10 "$T/e2.rvs" > "$W/direct.rvs"
	cmp "$W/re.rvs" "$W/direct.rvs"
}

@test "rv-batch: samples of another shape are an error naming id and shapes" {
	cat "$T/c1.rvs" "$T/c3.rvs" > "$W/mixed.rvs"
	run -1 --separate-stderr rv-batch -b 4 -o "$W/out.rvs" < "$W/mixed.rvs"
	[ "$stderr" = "rv-batch: '<stdin>': sample 0 is 28x28x3, batch is 28x28x1" ]
	[ ! -e "$W/out.rvs" ]
	run -1 --separate-stderr rv-batch -b 4 "$T/c1.rvs" "$T/c3.rvs"
	[ "$stderr" = "rv-batch: '$T/c3.rvs': sample 0 is 28x28x3, batch is 28x28x1" ]
}

@test "rv-batch: encoded samples are refused with a hint" {
	mkdir -p "$W/d/cls"
	convert -size 8x8 xc:red "$W/d/cls/a.png"
	rv-decode -q --encoded "$W/d" > "$W/enc.rvs"
	run -1 --separate-stderr rv-batch "$W/enc.rvs"
	[ "$stderr" = "rv-batch: '$W/enc.rvs': sample 0 is an encoded png; decode it first (rv-augment or rv-decode without --encoded)" ]
}

@test "rv-batch: truncated input reports the record and byte, exit 1" {
	slow
	local size
	size=$(stat -c %s "$T/x.rvs")
	head -c $((size - 10)) "$T/x.rvs" > "$W/cut.rvs"
	run -1 --separate-stderr rv-batch -b 8 "$W/cut.rvs"
	# records: metadata 0, samples 1..100, the epoch end 101
	[[ "$stderr" =~ ^rv-batch:\ \'$W/cut.rvs\':\ record\ 101\ at\ byte\ [0-9]+:\ truncated\ frame$ ]]
	head -c 5000 "$T/x.rvs" > "$W/cut2.rvs"
	run -1 --separate-stderr rv-batch -b 8 < "$W/cut2.rvs"
	[[ "$stderr" =~ ^rv-batch:\ \'\<stdin\>\':\ record\ [0-9]+\ at\ byte\ [0-9]+:\ truncated\ frame$ ]]
}

@test "rv-batch: -o writes the file only on success" {
	slow
	mkdir "$W/o"
	head -c 5000 "$T/x.rvs" > "$W/cut.rvs"
	run -1 --separate-stderr rv-batch -o "$W/o/b.rvs" "$W/cut.rvs"
	[ -n "$stderr" ]
	[ -z "$(ls -A "$W/o")" ]
	run -1 --separate-stderr rv-batch -o "$W/o/b.rvs" "$W/nope.rvs"
	[ "$stderr" = "rv-batch: '$W/nope.rvs': No such file or directory" ]
	[ -z "$(ls -A "$W/o")" ]
	run -0 --separate-stderr rv-batch -o "$W/o/b.rvs" "$T/x.rvs"
	[ -z "$stderr" ]
	[ "$(ls -A "$W/o")" = "b.rvs" ]
	rv-batch "$T/x.rvs" > "$W/stdout.rvs"
	cmp "$W/stdout.rvs" "$W/o/b.rvs"
}

@test "rv-batch: --shuffle-buffer is reproducible per seed, a permutation per epoch" {
	slow
	rv-batch -b 8 --shuffle-buffer 16 --seed 7 "$T/e2.rvs" > "$W/a.rvs"
	rv-batch -b 8 --shuffle-buffer 16 --seed 7 "$T/e2.rvs" > "$W/b.rvs"
	rv-batch -b 8 --shuffle-buffer 16 --seed 8 "$T/e2.rvs" > "$W/c.rvs"
	cmp "$W/a.rvs" "$W/b.rvs"
	run -1 cmp -s "$W/a.rvs" "$W/c.rvs"
	# the order does not depend on the batch size
	rv-batch -b 5 --shuffle-buffer 16 --seed 7 "$T/e2.rvs" > "$W/d.rvs"
	records "$W/a.rvs" ids > "$W/a.ids"
	records "$W/d.rvs" ids > "$W/d.ids"
	cmp "$W/a.ids" "$W/d.ids"
	# each epoch holds every sample once, shuffled
	records "$T/e2.rvs" ids > "$W/in.ids"
	run -1 cmp -s "$W/in.ids" "$W/a.ids"
	local e
	for e in 1 2; do
		awk -v e=$e '/end/ { n++; next } n == e - 1' "$W/in.ids" |
		    sort > "$W/in.$e"
		awk -v e=$e '/end/ { n++; next } n == e - 1' "$W/a.ids" |
		    sort > "$W/a.$e"
		[ "$(wc -l < "$W/a.$e")" -eq 50 ]
		cmp "$W/in.$e" "$W/a.$e"
	done
	run -0 records "$W/a.rvs" list
	[ "${lines[7]}" = "batch e0 n2 28x28x1" ]
	[ "${lines[8]}" = "end e0 n50" ]
	# pixels still travel with their ids
	rv-batch -b 50 "$T/e2.rvs" > "$W/plain.rvs"
	rv-batch -b 1 --shuffle-buffer 100 --seed 3 "$W/plain.rvs" > "$W/s1.rvs"
	rv-batch -b 50 "$W/s1.rvs" > "$W/shuf.rvs"
	rv-batch -b 1 "$W/shuf.rvs" > "$W/one.rvs"
	python3 - "$W/plain.rvs" "$W/one.rvs" <<-'EOF'
	import subprocess, struct, sys
	def samples(path):
	    b = subprocess.run(["zstd", "-qdc", path], check=True,
	                       capture_output=True).stdout
	    off, got = 0, {}
	    while off < len(b):
	        f = struct.unpack_from("<IHHBBHIQiIIIIIffQ", b, off)
	        hl, kind, ep, n, pl = f[2], f[3], f[6], f[12], f[16]
	        p = b[off + hl:off + hl + pl]
	        off += hl + pl
	        if kind != 2:
	            continue
	        s = len(p) // n - 16
	        for i in range(n):
	            rid = struct.unpack_from("<Q", p, 8 * i)[0]
	            px = p[16 * n + s * i:16 * n + s * (i + 1)]
	            assert got.setdefault((ep, rid), px) == px
	    return got
	a, b = samples(sys.argv[1]), samples(sys.argv[2])
	assert len(a) == 100 and a == b, "pixels moved away from their ids"
	EOF
}

@test "rv-batch: a write error exits 1 with the output named" {
	[ -w /dev/full ] || skip "no /dev/full"
	# shellcheck disable=SC2016
	run -1 --separate-stderr bash -c 'rv-batch "$1" > /dev/full' _ "$T/x.rvs"
	[ "$stderr" = "rv-batch: '<stdout>': write: No space left on device" ]
}

@test "rv-batch, rv-train-gpu and rv-refurbish default to one batch size, 128" {
	local p
	rv-decode -q --limit 300 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" > "$W/s.rvs"
	# rv-batch without -b: 300 samples are 2 batches of 128 and one of 44
	run -0 --separate-stderr rv-batch -v -o "$W/b.rvs" "$W/s.rvs"
	[ "$stderr" = "rv-batch: 300 samples in, 3 batches out (2 full of 128, 1 short), 0 short dropped (0 samples), 1 epoch" ]
	# rv-train-gpu without -b collates the samples the same way: 3 steps
	run -0 --separate-stderr rv-train-gpu -q -j 1 -m linear "$W/s.rvs"
	[ "$(printf '%s\n' "$output" | awk '$1 == "steps" { print $2 }')" = 3 ]
	# rv-refurbish without --batch deals its misses over groups of 128, as
	# its metadata records
	rv-refurbish -q --partial flip --final '' "$W/s.rvs" -o "$W/r.rvs"
	run -0 rv-inspect "$W/r.rvs"
	[[ "$output" == *$'\n  refurbish.batch   128\n'* ]]
	# the whole pipeline with no batch size anywhere
	run -0 --separate-stderr bash -c "rv-refurbish -q --partial flip \
	    --final '' '$W/s.rvs' | rv-batch -q | rv-train-gpu -q -j 1 -m linear"
	[ "$(printf '%s\n' "$output" | awk '$1 == "steps" { print $2 }')" = 3 ]
	# and each --help says so
	for p in "rv-batch" "rv-train-gpu" "rv-refurbish"; do
		$p --help | tr -s ' \n' '  ' | grep -q '(default 128[;,)]' ||
		    { echo "$p --help: no default 128"; return 1; }
	done
}
