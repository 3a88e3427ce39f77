#!/usr/bin/env bats
# rv-refurbish --partials-out and --from-partials: each partial stored
# once, epochs served from the store with a fresh final.  From a lossless
# store (raw, PNG) the samples are the bytes of the online run, for any
# -j, to files or a pipe, split by --epoch-range or --resume; from JPEG
# the plan (ids, uses, flags) is the online run's; the store holds N + (E-1)
# N / r partials; every bad store is named.  Records are read by the
# python below, written from rv-stream(5), so the tests share no code
# with lib/.
# shellcheck shell=bash disable=SC2016,SC2030,SC2031,SC2154

load helpers

# rec.py MODE FILE [ARG]:
#   samples: one line a sample, "epoch id uses flags dtype sha1(payload)"
#   heads:   as samples without the sha1 (what a lossy store keeps)
#   meta:    the first metadata record's lines
#   count:   the samples
#   drop N:  FILE rewritten without its last N samples (and its end)
#   short N: FILE rewritten without its last N samples, its end counting
#            the rest (a whole stream of fewer partials)
#   unset K: FILE rewritten without metadata key K
#   cut I:   FILE rewritten with sample I's payload cut to half (a JPEG
#            that does not decode), each record its own zstd frame
REC_PY='
import hashlib, struct, subprocess, sys, zstandard
HDR = struct.Struct("<IHHBBHIQiIIIIIffQ")
SAMPLE, META, END = 1, 4, 3

def records(path):
    d = subprocess.run(["zstd", "-dcq", path], check=True,
                       stdout=subprocess.PIPE).stdout
    off = 0
    while off < len(d):
        f = list(HDR.unpack_from(d, off))
        hl, pl = f[2], f[16]
        yield f, d[off:off + hl], d[off + hl:off + hl + pl]
        off += hl + pl

def write(path, recs):
    c = zstandard.ZstdCompressor(write_checksum=True)
    with open(path, "wb") as o:
        for f, h, p in recs:
            o.write(c.compress(HDR.pack(*f) + h[HDR.size:] + p))

mode, path = sys.argv[1], sys.argv[2]
recs = list(records(path))
if mode in ("samples", "heads"):
    for f, h, p in recs:
        if f[3] == SAMPLE:
            extra = "" if mode == "heads" else " " + hashlib.sha1(p).hexdigest()
            print(f[6], f[7], f[13], f[5], f[4], extra.strip())
elif mode == "meta":
    print(next(p for f, h, p in recs if f[3] == META).decode(), end="")
elif mode == "count":
    print(sum(f[3] == SAMPLE for f, h, p in recs))
elif mode == "drop":
    n = int(sys.argv[3])
    idx = [i for i, r in enumerate(recs) if r[0][3] == SAMPLE][-n:]
    write(path, [r for i, r in enumerate(recs)
                 if i not in idx and r[0][3] != END])
elif mode == "short":
    n = int(sys.argv[3])
    idx = [i for i, r in enumerate(recs) if r[0][3] == SAMPLE][-n:]
    out = []
    for i, (f, h, p) in enumerate(recs):
        if i in idx:
            continue
        if f[3] == END:
            f[12] -= n
        out.append((f, h, p))
    write(path, out)
elif mode == "unset":
    k = sys.argv[3]
    out = []
    for f, h, p in recs:
        if f[3] == META:
            p = "".join(l for l in p.decode().splitlines(True)
                        if not l.startswith(k + "=")).encode()
            f[16] = len(p)
        out.append((f, h, p))
    write(path, out)
elif mode == "cut":
    k = int(sys.argv[3])
    i = [i for i, r in enumerate(recs) if r[0][3] == SAMPLE][k]
    f, h, p = recs[i]
    p = p[:len(p) // 2]
    f[16] = len(p)
    recs[i] = (f, h, p)
    write(path, recs)
'

setup_file() {
	need_fixtures
	printf '%s' "$REC_PY" > "$BATS_FILE_TMPDIR/rec.py"
}

setup() {
	need_fmnist
	need_torch zstandard
	IMG="$FMNIST/train-images-idx3-ubyte.gz"
	LAB="$FMNIST/train-labels-idx1-ubyte.gz"
	T="$BATS_TEST_TMPDIR"
	REC="$BATS_FILE_TMPDIR/rec.py"
	FP='randaugment n=2 m=9'
	FF='random_crop size=28 padding=4; flip'
	rv-decode -q --limit 300 "$IMG" "$LAB" -o "$T/in.rvs"
	mkdir "$T/on" "$T/parts" "$T/off"
}

rec() {
	"$PY" "$REC" "$@"
}

# Epoch files e of two patterns: the same sample lines (mode), epochs 0..E-1
same_epochs() {	# same_epochs MODE PAT1 PAT2 E
	local e
	for ((e = 0; e < $4; e++)); do
		rec "$1" "$(printf "$2" "$e")" > "$T/a.txt"
		rec "$1" "$(printf "$3" "$e")" > "$T/b.txt"
		[ -s "$T/a.txt" ]
		cmp "$T/a.txt" "$T/b.txt"
	done
}

online() {	# online [options]: the online run's epoch files in on/
	rv-refurbish -q --partial "$FP" --final "$FF" --reuse 3 --epochs 5 \
	    "$@" -o "$T/on/%03d.rvs" "$T/in.rvs"
}

store() {	# store FORMAT [options]: partials of 5 epochs in parts/
	rv-refurbish -q --partial "$FP" --reuse 3 --epochs 5 \
	    --partials-out "$T/parts/%03d.rvs" --format "$@" "$T/in.rvs"
}

@test "partials: a PNG or raw store serves the online run's samples, any -j, files or a pipe" {
	online
	for fmt in png raw; do
		rm -f "$T"/parts/* "$T"/off/*
		store "$fmt" -j 2
		# N in epoch 0's file, a chunk of N/3 in each after
		run -0 bash -c "for f in '$T'/parts/*; do '$PY' '$REC' count \$f; done | xargs"
		[ "$output" = "300 100 100 100 100" ]
		for j in 1 2; do
			rv-refurbish -q -j $j --from-partials "$T/parts/%03d.rvs" \
			    --final "$FF" -o "$T/off/%03d.rvs"
			same_epochs samples "$T/on/%03d.rvs" "$T/off/%03d.rvs" 5
		done
		# one stream on a pipe: the five epochs in order
		rv-refurbish -q --from-partials "$T/parts/%03d.rvs" \
		    --final "$FF" | cat > "$T/all.rvs"
		rec samples "$T/all.rvs" > "$T/a.txt"
		for e in 0 1 2 3 4; do rec samples "$T/on/00$e.rvs"; done > "$T/b.txt"
		cmp "$T/a.txt" "$T/b.txt"
	done
	# the store's own metadata, and what a served epoch says of itself
	rec meta "$T/parts/002.rvs" > "$T/m.txt"
	grep -qx 'store.kind=partials' "$T/m.txt"
	grep -qx 'store.epoch=2' "$T/m.txt"
	grep -qx 'store.format=raw' "$T/m.txt"
	grep -qx 'samples=100' "$T/m.txt"
	rec meta "$T/off/002.rvs" > "$T/m.txt"
	grep -qx 'store.kind=served' "$T/m.txt"
	grep -qx 'samples=300' "$T/m.txt"
	grep -qx 'refurbish.epoch=2' "$T/m.txt"
	grep -x "$(rec meta "$T/on/002.rvs" | grep '^refurbish.partial=')" "$T/m.txt"
}

@test "partials: --epoch-range and --resume split both sides into the same files" {
	online
	store png --epoch-range 0-1
	store png --resume
	store png --epoch-range 3-4	# files there already are made again
	rv-refurbish -q --from-partials "$T/parts/%03d.rvs" --final "$FF" \
	    --epoch-range 3-4 -o "$T/off/%03d.rvs"
	[ ! -e "$T/off/000.rvs" ]
	# an epoch past the first cycle reads only its last r files
	mkdir "$T/late"
	cp "$T/parts/002.rvs" "$T/parts/003.rvs" "$T/parts/004.rvs" "$T/late/"
	rv-refurbish -q --from-partials "$T/late/%03d.rvs" --final "$FF" \
	    --epoch-range 4-4 -o "$T/off/%03d.rvs"
	rv-refurbish -q --from-partials "$T/parts/%03d.rvs" --final "$FF" \
	    --resume -o "$T/off/%03d.rvs"
	same_epochs samples "$T/on/%03d.rvs" "$T/off/%03d.rvs" 5
}

@test "partials: a JPEG store keeps the online plan, r uses a cycle, in a fraction of the bytes" {
	need_fixtures
	local d="$FIX/ds/folder" jp='rrc size=32 scale=0.3,1; randaugment n=2 m=9'
	rv-decode -q --encoded "$d" "$d" "$d" "$d" -o "$T/jin.rvs"
	rv-refurbish -q --partial "$jp" --final flip --reuse 2 --epochs 4 \
	    -o "$T/on/%03d.rvs" "$T/jin.rvs"
	rv-refurbish -q -j 1 --partial "$jp" --reuse 2 --epochs 4 --format jpeg \
	    --quality 90 --partials-out "$T/parts/%03d.rvs" "$T/jin.rvs"
	# the same bytes on 2 threads, and from a pipe
	mkdir "$T/p2"
	cat "$T/jin.rvs" | rv-refurbish -q -j 2 --partial "$jp" --reuse 2 \
	    --epochs 4 --format jpeg --quality 90 \
	    --partials-out "$T/p2/%03d.rvs"
	for e in 000 001 002 003; do cmp "$T/parts/$e.rvs" "$T/p2/$e.rvs"; done
	rv-refurbish -q --from-partials "$T/parts/%03d.rvs" --final flip \
	    -o "$T/off/%03d.rvs"
	same_epochs heads "$T/on/%03d.rvs" "$T/off/%03d.rvs" 4
	# stored as JPEG (dtype 2), each sample a partial
	rec heads "$T/parts/001.rvs" | awk '$4 != 1 || $5 != 2 { exit 1 }'
	# the store: N + 3 N/2 partials as JPEG, under a third of 4 N raw
	# samples (32 pixels a side: JPEG gains more on larger images)
	on=$(cat "$T"/on/*.rvs | wc -c)
	st=$(cat "$T"/parts/*.rvs | wc -c)
	echo "store $st bytes, online epochs $on" >&2
	[ $((st * 3)) -lt "$on" ]
}

@test "partials: a store file missing, cut short, of another run, seed or epoch is named; nothing is written" {
	store png
	cp -r "$T/parts" "$T/good"
	# missing: found before any epoch is written
	rm "$T/parts/003.rvs"
	run -1 --separate-stderr rv-refurbish --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" -o "$T/off/%03d.rvs"
	[ "$stderr" = "rv-refurbish: '$T/parts/003.rvs': missing: epoch 3 serves the partials epoch 3 made (rv-refurbish --partials-out ... --epoch-range 3-3)" ]
	run -0 ls "$T/off"
	[ "$output" = "" ]
	# cut at a frame boundary: its epoch-end missing
	cp "$T/good/003.rvs" "$T/parts/"
	rec drop "$T/parts/003.rvs" 5
	run -1 --separate-stderr rv-refurbish -q --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" -o "$T/off/%03d.rvs"
	[[ "$stderr" == "rv-refurbish: '$T/parts/003.rvs': record 96 at byte "*": truncated stream: 95 sample records after the last epoch-end" ]]
	# the epochs before it were written whole, none after
	run -0 ls "$T/off"
	[ "$(echo $output)" = "000.rvs 001.rvs 002.rvs" ]
	# a whole stream of fewer partials than the epoch made
	cp "$T/good/003.rvs" "$T/parts/"
	rec short "$T/parts/003.rvs" 5
	run -1 --separate-stderr rv-refurbish -q --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" --epoch-range 3-3 -o "$T/x.rvs"
	[ "$stderr" = "rv-refurbish: '$T/parts/003.rvs': holds 95 partials; epoch 3 made 100: the file is cut short" ]
	[ ! -e "$T/x.rvs" ]
	# a store file whose metadata lacks the run's name
	cp "$T/good/003.rvs" "$T/parts/"
	rec unset "$T/parts/003.rvs" store.run
	run -1 --separate-stderr rv-refurbish -q --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" --epoch-range 3-3 -o "$T/x.rvs"
	[ "$stderr" = "rv-refurbish: '$T/parts/003.rvs': a store's metadata lacks store.format or store.run" ]
	rec unset "$T/parts/003.rvs" store.reuse
	run -1 --separate-stderr rv-refurbish -q --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" --epoch-range 3-3 -o "$T/x.rvs"
	[ "$stderr" = "rv-refurbish: '$T/parts/003.rvs': a store's metadata lacks a key (store.epoch, .samples, .seed, .reuse, .epochs)" ]
	[ ! -e "$T/x.rvs" ]
	# cut inside a frame: the reader's message, with the byte
	head -c 5000 "$T/good/003.rvs" > "$T/parts/003.rvs"
	run -1 --separate-stderr rv-refurbish -q --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" --epoch-range 3-3 -o "$T/x.rvs"
	[[ "$stderr" == "rv-refurbish: '$T/parts/003.rvs': record "*" at byte "* ]]
	[ ! -e "$T/x.rvs" ]
	# another run (seed 1) in the middle of this one's
	mkdir "$T/s1"
	rv-refurbish -q --partial "$FP" --reuse 3 --epochs 5 --seed 1 \
	    --partials-out "$T/s1/%03d.rvs" "$T/in.rvs"
	cp "$T/s1/003.rvs" "$T/parts/003.rvs"
	run -1 --separate-stderr rv-refurbish -q --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" --epoch-range 3-4 -o "$T/x.rvs"
	# (the seed not given is the first file's: epoch 3 reads 1 to 3)
	[ "$stderr" = "rv-refurbish: '$T/parts/001.rvs': partials of another run than '$T/parts/003.rvs' (another input, --partial, --seed or --reuse)" ]
	cp "$T/good/003.rvs" "$T/parts/"
	# the seed or reuse asked for is not the store's
	run -1 --separate-stderr rv-refurbish -q --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" --seed 1 -o "$T/x.rvs"
	[ "$stderr" = "rv-refurbish: '$T/parts/000.rvs': partials of --seed 0; asked for --seed 1" ]
	run -1 --separate-stderr rv-refurbish -q --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" --reuse 2 -o "$T/x.rvs"
	[ "$stderr" = "rv-refurbish: '$T/parts/000.rvs': partials of --reuse 3; asked for --reuse 2" ]
	# a file renamed into another epoch's place
	cp "$T/good/002.rvs" "$T/parts/003.rvs"
	run -1 --separate-stderr rv-refurbish -q --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" --epoch-range 3-3 -o "$T/x.rvs"
	[ "$stderr" = "rv-refurbish: '$T/parts/003.rvs': partials of epoch 2, not 3: the store's files were renamed or mixed" ]
	# epoch files, not a store
	online
	run -1 --separate-stderr rv-refurbish -q --from-partials \
	    "$T/on/%03d.rvs" --final "$FF" -o "$T/x.rvs"
	[ "$stderr" = "rv-refurbish: '$T/on/000.rvs': not partials of rv-refurbish --partials-out (no store.kind=partials)" ]
	[ ! -e "$T/x.rvs" ]
}

@test "partials: a stored JPEG that does not decode is skipped, named and counted; --strict stops" {
	rv-refurbish -q --partial "$FP" --reuse 3 --epochs 2 --format jpeg \
	    --partials-out "$T/parts/%03d.rvs" "$T/in.rvs"
	rec cut "$T/parts/000.rvs" 7
	run -0 --separate-stderr rv-refurbish --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" --epoch-range 0-0 -o "$T/x.rvs"
	[[ "${stderr_lines[0]}" == "rv-refurbish: '$T/parts/000.rvs': record 8 (id 7): "*" (skipped)" ]]
	[ "${stderr_lines[1]}" = "rv-refurbish: 1 stored partials did not decode and were skipped: the store is damaged; make their files again" ]
	run -0 rec count "$T/x.rvs"
	[ "$output" = 299 ]
	run -1 --separate-stderr rv-refurbish -q --strict --from-partials \
	    "$T/parts/%03d.rvs" --final "$FF" --epoch-range 0-0 -o "$T/x2.rvs"
	[[ "$stderr" == "rv-refurbish: '$T/parts/000.rvs': record 8 (id 7): "* ]]
	[ ! -e "$T/x2.rvs" ]
}

@test "partials: usage errors exit 2 naming the option" {
	p="$T/parts/%03d.rvs"
	for args in "--format webp" "--format jpeg --quality 0" \
	    "--format png --quality 90" "--subsample 411" \
	    "--format raw --subsample 444" "--final flip" "-o $T/x.rvs" \
	    "--score '--budget 0.5'" "--mem 1G"; do
		run -2 --separate-stderr bash -c "rv-refurbish --partial '$FP' --partials-out '$p' $args '$T/in.rvs'"
		[ "${#stderr_lines[@]}" = 2 ]
	done
	run -2 --separate-stderr rv-refurbish --partial "$FP" \
	    --partials-out "$T/parts/x.rvs" "$T/in.rvs"
	[ "${stderr_lines[0]}" = "rv-refurbish: --partials-out: '$T/parts/x.rvs': a pattern holds one %d conversion" ]
	for args in "'$T/in.rvs'" "--partial '$FP'" "--cache-dir $T" \
	    "--partials-out '$p'" "--quality 90" "--subsample 444"; do
		run -2 --separate-stderr bash -c "rv-refurbish --from-partials '$p' --final flip $args"
		[ "${#stderr_lines[@]}" = 2 ]
	done
	run -2 --separate-stderr rv-refurbish --strict --partial "$FP" \
	    --final flip "$T/in.rvs"
	[ "${stderr_lines[0]}" = "rv-refurbish: --strict: only with --from-partials (a sample rv-refurbish cannot decode stops it anyway)" ]
}
