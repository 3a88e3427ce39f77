#!/usr/bin/env bats
# rv-decode --shard over many archive files, as a data-parallel job reads
# them: each rank reads only its share of the files (a contiguous share of
# the samples laid end to end), ids and pixels are those of an unsharded
# run, the union of the ranks' epochs is the dataset, --even makes the
# shards equal, and --shard auto takes the rank from the launcher.  Real
# data: 200 Fashion-MNIST images as PNG in 8 WebDataset-style tars of
# unequal sizes.

load helpers

SIZES=(10 20 30 25 35 15 40 25)

setup_file() {
	need_fmnist
	local d="$BATS_FILE_TMPDIR" i k at=0 f id lab
	rv-decode -q --limit 200 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$d/src.rvs"
	rv-inspect -q --png "$d/png" "$d/src.rvs" > /dev/null
	# WebDataset layout: key.png + key.cls, 8 shards of SIZES
	for i in "${!SIZES[@]}"; do
		mkdir -p "$d/w$i" "$d/f$i"
		for ((k = 0; k < SIZES[i]; k++, at++)); do
			f=$(printf '%s/png/e000-id%06d-l*.png' "$d" "$at")
			f=$(echo $f)
			lab=${f##*-l}
			lab=${lab%.png}
			id=$(printf 'k%06d' "$at")
			cp "$f" "$d/w$i/$id.png"
			echo "$lab" > "$d/w$i/$id.cls"
			# ImageFolder layout inside the tar: class directories;
			# shard i holds only a few of the classes
			mkdir -p "$d/f$i/c$lab"
			cp "$f" "$d/f$i/c$lab/$id.png"
		done
		tar -C "$d/w$i" -cf "$d/shard-$i.tar" .
		tar -C "$d/f$i" -cf "$d/folder-$i.tar" .
	done
}

setup() {
	T="$BATS_TEST_TMPDIR"
	D="$BATS_FILE_TMPDIR"
	SH=("$D"/shard-?.tar)
}

# "epoch id label sha" of each sample, sorted
samples() {
	zstd -dcq "$@" | python3 "$REPO/tests/checks/rvparse.py" --sha |
	    awk -F'\t' '$1=="sample" { print $2, $3, $4, $9 }' | sort -n -k1,1 -k2,2
}

meta() {	# meta KEY FILE: the value of KEY in FILE's metadata
	rv-inspect --dump "$2" > /dev/null
	zstd -dcq "$2" | python3 -c '
import struct, sys
d = sys.stdin.buffer.read()
H = struct.Struct("<IHHBBHIQiIIIIIffQ")
h = H.unpack_from(d, 0)
p = d[h[2]:h[2] + h[16]].decode()
for line in p.split("\n"):
    k, _, v = line.partition("=")
    if k == sys.argv[1]:
        print(v)
' "$1"
}

@test "shard: 3 ranks of 8 files: each sample once, with the unsharded run's id, label and pixels" {
	slow
	rv-decode -q "${SH[@]}" -o "$T/all.rvs"
	for r in 0 1 2; do
		rv-decode -q --shard "$r/3" "${SH[@]}" -o "$T/r$r.rvs"
	done
	samples "$T/all.rvs" > "$T/whole"
	samples "$T"/r?.rvs > "$T/union"
	[ "$(wc -l < "$T/whole")" -eq 200 ]
	cmp "$T/union" "$T/whole"
	# contiguous shares of 200: 66, 67, 67 (floor(r*200/3))
	[ "$(samples "$T/r0.rvs" | wc -l),$(samples "$T/r1.rvs" | wc -l),$(samples "$T/r2.rvs" | wc -l)" = "66,67,67" ]
	# rank 0 holds ids 0..65, in order, read from shard-0..3 only
	[ "$(samples "$T/r0.rvs" | awk '{print $2}' | paste -sd,)" = "$(seq -s, 0 65)" ]
	[ "$(meta shard-by "$T/r0.rvs")" = files ]
	[ "$(meta shard "$T/r1.rvs")" = 1/3 ]
	[ "$(meta samples "$T/r0.rvs")" = 66 ]
	[ "$(meta dataset-samples "$T/r0.rvs")" = 200 ]
	# cat of the ranks is one epoch of every sample (rv-stream(5) Epochs)
	run -0 bash -c "cat '$T'/r?.rvs | rv-inspect | grep -E '^(samples|epochs)'"
	[ "${lines[0]}" = "samples      200 (ids 0 to 199)" ]
	[ "${lines[1]}" = "epochs       1" ]
}

@test "shard: a rank reads only its files: rank 0 of 8 reads about an eighth of the bytes" {
	slow
	local total i k d="$T/big"
	# photo-sized members (35 KB JPEGs of noise), 8 tars of 12
	mkdir -p "$d"
	for i in 0 1 2 3 4 5 6 7; do
		mkdir -p "$d/w$i"
		for k in 0 1 2 3 4 5 6 7 8 9 10 11; do
			convert -size 128x128 xc: -seed $((i * 12 + k)) +noise Random \
			    -quality 95 "$d/w$i/k$i-$k.jpg"
			echo $((k % 10)) > "$d/w$i/k$i-$k.cls"
		done
		tar -C "$d/w$i" -cf "$d/s$i.tar" .
	done
	SH=("$d"/s?.tar)
	total=$(cat "${SH[@]}" | wc -c)
	run -0 --separate-stderr rv-decode -v --shard 0/1 "${SH[@]}" -o "$T/a.rvs"
	whole=$(echo "${stderr_lines[-1]}" | sed -E 's/.* ([0-9.]+) MB read.*/\1/')
	run -0 --separate-stderr rv-decode -v --shard 0/8 "${SH[@]}" -o "$T/b.rvs"
	part=$(echo "${stderr_lines[-1]}" | sed -E 's/.* ([0-9.]+) MB read.*/\1/')
	echo "total $total whole $whole MB, rank 0 of 8: $part MB" >&3
	# the whole run reads every byte; rank 0 reads its 25 samples' files
	# (shard-0 and part of shard-1) and a header or two a member of the rest
	awk -v w="$whole" -v t="$total" 'BEGIN { exit !(w * 1e6 >= t) }'
	awk -v p="$part" -v t="$total" 'BEGIN { exit !(p * 1e6 < t / 3) }'
}

@test "shard: --even pad repeats samples, drop leaves them out, none keeps the shares; equal steps on every rank" {
	slow
	for r in 0 1 2; do
		rv-decode -q --shard "$r/3" --even pad "${SH[@]}" -o "$T/p$r.rvs"
		rv-decode -q --shard "$r/3" --even drop "${SH[@]}" -o "$T/d$r.rvs"
	done
	local r counts=""
	for r in 0 1 2; do
		counts+="$(samples "$T/p$r.rvs" | wc -l),$(samples "$T/d$r.rvs" | wc -l),"
	done
	[ "$counts" = "67,66,67,66,67,66," ]
	# pad: every sample, one of them twice (rank 0's first); drop: one lost
	[ "$(samples "$T"/p?.rvs | awk '{print $2}' | sort -n | uniq -d)" = "0" ]
	[ "$(samples "$T"/p?.rvs | awk '{print $2}' | sort -nu | wc -l)" -eq 200 ]
	[ "$(samples "$T"/d?.rvs | awk '{print $2}' | sort -nu | wc -l)" -eq 198 ]
	[ "$(meta shard-even "$T/p1.rvs")" = pad ]
	[ "$(meta samples "$T/p0.rvs")" = 67 ]
	run -2 --separate-stderr rv-decode --even some --shard 0/2 "${SH[@]}"
	[ "${stderr_lines[0]}" = "rv-decode: --even: 'some': use pad, drop or none" ]
}

@test "shard: --shuffle gives each epoch its own files per rank, every epoch whole, the same bytes at any -j" {
	slow
	for r in 0 1; do
		rv-decode -q -j 1 --shard "$r/2" --shuffle --seed 7 --epochs 3 "${SH[@]}" -o "$T/s$r.rvs"
	done
	rv-decode -q -j 2 --shard 0/2 --shuffle --seed 7 --epochs 3 "${SH[@]}" -o "$T/s0j2.rvs"
	cmp "$T/s0.rvs" "$T/s0j2.rvs"
	for e in 0 1 2; do
		[ "$(samples "$T"/s?.rvs | awk -v e=$e '$1==e {print $2}' | sort -nu | wc -l)" -eq 200 ]
		[ "$(samples "$T"/s?.rvs | awk -v e=$e '$1==e' | wc -l)" -eq 200 ]
		samples "$T/s0.rvs" | awk -v e=$e '$1==e {print $2}' | sort -n > "$T/ids$e"
	done
	# the files move between ranks from epoch to epoch
	run -1 cmp -s "$T/ids0" "$T/ids1"
	run -1 cmp -s "$T/ids1" "$T/ids2"
	# and the order within a rank's epoch is shuffled
	[ "$(rv-inspect --dump "$T/s0.rvs" | awk -F'\t' '$3=="sample" && $4==0 {print $5}' | head -5 | paste -sd,)" != "$(head -5 "$T/ids0" | paste -sd,)" ]
}

@test "shard: directory classes from every file agree on every rank, though a rank's files lack classes" {
	slow
	local F=("$D"/folder-?.tar)
	rv-decode -q "${F[@]}" -o "$T/all.rvs"
	for r in 0 1 2 3; do
		rv-decode -q --shard "$r/4" "${F[@]}" -o "$T/r$r.rvs"
		[ "$(meta classes "$T/r$r.rvs")" = "$(meta classes "$T/all.rvs")" ]
		[ "$(meta class.9 "$T/r$r.rvs")" = "$(meta class.9 "$T/all.rvs")" ]
	done
	samples "$T/all.rvs" > "$T/whole"
	samples "$T"/r?.rvs > "$T/union"
	cmp "$T/union" "$T/whole"
}

@test "shard: --shard auto takes the rank from torchrun, Slurm, Open MPI or MPICH; explicit wins; errors are exit 2" {
	run -0 --separate-stderr env RANK=1 WORLD_SIZE=3 rv-decode -v --shard auto "${SH[@]}" -o "$T/a.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: shard 1/3 from RANK/WORLD_SIZE" ]
	[ "${stderr_lines[1]}" = "rv-decode: shard 1/3: its share of the files, 67 of 200 samples an epoch, even by pad" ]
	rv-decode -q --shard 1/3 --even pad "${SH[@]}" -o "$T/b.rvs"
	cmp "$T/a.rvs" "$T/b.rvs"
	run -0 --separate-stderr env -u RANK -u WORLD_SIZE SLURM_PROCID=2 SLURM_NTASKS=4 rv-decode -v --shard auto "${SH[@]}" -o /dev/null
	[ "${stderr_lines[0]}" = "rv-decode: shard 2/4 from SLURM_PROCID/SLURM_NTASKS" ]
	run -0 --separate-stderr env -u RANK -u WORLD_SIZE -u SLURM_PROCID -u SLURM_NTASKS OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 rv-decode -v --shard auto "${SH[@]}" -o /dev/null
	[ "${stderr_lines[0]}" = "rv-decode: shard 0/2 from OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE" ]
	run -0 --separate-stderr env -u RANK -u WORLD_SIZE -u SLURM_PROCID -u SLURM_NTASKS PMI_RANK=1 PMI_SIZE=2 rv-decode -v --shard auto "${SH[@]}" -o /dev/null
	[ "${stderr_lines[0]}" = "rv-decode: shard 1/2 from PMI_RANK/PMI_SIZE" ]
	# torchrun's variables come first (srun inside a torchrun job's node)
	run -0 --separate-stderr env RANK=0 WORLD_SIZE=2 SLURM_PROCID=3 SLURM_NTASKS=4 rv-decode -v --shard auto "${SH[@]}" -o /dev/null
	[ "${stderr_lines[0]}" = "rv-decode: shard 0/2 from RANK/WORLD_SIZE" ]
	run -0 --separate-stderr env -u RANK -u WORLD_SIZE -u SLURM_PROCID -u SLURM_NTASKS -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u PMI_RANK -u PMI_SIZE rv-decode -v --shard auto "${SH[@]}" -o "$T/c.rvs"
	[ "${stderr_lines[0]}" = "rv-decode: shard 0/1 (no launcher's rank in the environment)" ]
	[ "$(samples "$T/c.rvs" | wc -l)" -eq 200 ]
	run -2 --separate-stderr env -u WORLD_SIZE RANK=1 rv-decode --shard auto "${SH[@]}"
	[ "$stderr" = "rv-decode: --shard auto: RANK is set but not WORLD_SIZE" ]
	run -2 --separate-stderr env RANK=2 WORLD_SIZE=2 rv-decode --shard auto "${SH[@]}"
	[ "$stderr" = "rv-decode: --shard auto: RANK=2 is not below WORLD_SIZE=2" ]
	run -2 --separate-stderr env RANK=x WORLD_SIZE=2 rv-decode --shard auto "${SH[@]}"
	[ "$stderr" = "rv-decode: --shard auto: RANK='x': not a rank" ]
}

@test "shard: fewer files than ranks, or standard input: every N-th sample, the union still whole" {
	slow
	for r in 0 1 2 3 4 5 6 7 8; do
		rv-decode -q --shard "$r/9" "${SH[@]}" -o "$T/r$r.rvs"
	done
	[ "$(meta shard-by "$T/r0.rvs")" = samples ]
	rv-decode -q "${SH[@]}" -o "$T/all.rvs"
	samples "$T/all.rvs" > "$T/whole"
	samples "$T"/r?.rvs > "$T/union"
	cmp "$T/union" "$T/whole"
	# a pipe cannot be listed twice: the samples are sharded
	cat "${SH[@]}" | rv-decode -q --shard 1/2 - -o "$T/p1.rvs"
	cat "${SH[@]}" | rv-decode -q --shard 0/2 - -o "$T/p0.rvs"
	[ "$(meta shard-by "$T/p0.rvs")" = samples ]
	samples "$T"/p?.rvs > "$T/punion"
	cmp "$T/punion" "$T/whole"
}

@test "shard: a corrupt image in a rank's files is skipped and, with --even pad, the shard padded to the others' count" {
	local d="$T/bad" i
	mkdir -p "$d"
	for i in "${!SH[@]}"; do cp "${SH[$i]}" "$d/"; done
	# damage one image's PNG data in shard-1 (same size: the tar stays whole)
	python3 - "$d/shard-1.tar" <<'EOF'
import sys, tarfile, io
p = sys.argv[1]
with tarfile.open(p) as t:
    m = [x for x in t.getmembers() if x.name.endswith("k000013.png")][0]
    off = m.offset_data
with open(p, "r+b") as f:
    f.seek(off + 40)
    f.write(b"\xde\xad\xbe\xef" * 8)
EOF
	run -0 --separate-stderr rv-decode --shard 0/3 --even pad "$d"/shard-?.tar -o "$T/r0.rvs"
	[[ "${stderr_lines[0]}" == *"shard-1.tar': './k000013.png': "*"(skipped)" ]]
	[ "$(samples "$T/r0.rvs" | wc -l)" -eq 67 ]
	run -1 --separate-stderr rv-decode --strict --shard 0/3 "$d"/shard-?.tar -o "$T/s.rvs"
	[ ! -e "$T/s.rvs" ]
	# the rank that does not read shard-1 says nothing
	run -0 --separate-stderr rv-decode --shard 2/3 --even pad "$d"/shard-?.tar -o "$T/r2.rvs"
	[ -z "$stderr" ]
}

@test "shard: more ranks than samples with --even pad is an error naming the shard" {
	run -1 --separate-stderr rv-decode --limit 3 --shard 3/4 --even pad "${SH[@]}" -o "$T/x.rvs"
	[[ "$stderr" == *"shard 3/4: no sample to pad the shard with (fewer samples than shards)"* ]]
	[ ! -e "$T/x.rvs" ]
}

@test "index: each rank reads the index and its own shards only, and gets the samples a listing of every shard gives it" {
	local d="$T/ix" r
	mkdir -p "$d/shards"
	cp "${SH[@]}" "$d/shards/"
	run -0 --separate-stderr rv-decode -v --index-out "$d/train.idx" "$d"/shards/shard-?.tar
	[ "$stderr" = "rv-decode: $d/train.idx: 8 shards, 200 samples, 10 classes, 0 lost, ${stderr#*0 lost, }" ]
	[ "$(sed -n 1p "$d/train.idx")" = "$(printf 'rv-index\t1')" ]
	[ "$(grep -c '^shard	' "$d/train.idx")" -eq 8 ]
	# one line a shard: its samples, and its path relative to the index
	[ "$(awk -F'\t' '$1=="shard" {print $2 ":" $9}' "$d/train.idx" | paste -sd' ')" = "10:shards/shard-0.tar 20:shards/shard-1.tar 30:shards/shard-2.tar 25:shards/shard-3.tar 35:shards/shard-4.tar 15:shards/shard-5.tar 40:shards/shard-6.tar 25:shards/shard-7.tar" ]
	for r in 0 2; do
		rv-decode -q --shard "$r/3" --shuffle --seed 3 --epochs 2 "${SH[@]}" -o "$T/l$r.rvs"
		(cd "$d" && rv-decode -q --shard "$r/3" --shuffle --seed 3 --epochs 2 --index train.idx -o "$T/i$r.rvs")
		cmp <(samples "$T/l$r.rvs") <(samples "$T/i$r.rvs")
	done
	[ "$(meta index "$T/i0.rvs")" = train.idx ]
	[ "$(meta shard-by "$T/i0.rvs")" = files ]
	[ "$(meta dataset-samples "$T/i0.rvs")" = 200 ]
	# rank 0 of 8 takes samples 0-24: shard-0 and part of shard-1; it
	# never opens the others, which may be anywhere (here: gone)
	mkdir "$d/alone"
	cp "$d/train.idx" "$d/alone/"
	mkdir "$d/alone/shards"
	cp -p "$d"/shards/shard-[01].tar "$d/alone/shards/"
	rv-decode -q --shard 0/8 --index "$d/alone/train.idx" -o "$T/a0.rvs"
	rv-decode -q --shard 0/8 --index "$d/train.idx" -o "$T/b0.rvs"
	cmp <(samples "$T/a0.rvs") <(samples "$T/b0.rvs")
	[ "$(samples "$T/a0.rvs" | awk '{print $2}' | paste -sd,)" = "$(seq -s, 0 24)" ]
	run -1 --separate-stderr rv-decode -q --shard 1/8 --index "$d/alone/train.idx" -o "$T/a1.rvs"
	[ "$stderr" = "rv-decode: '$d/alone/shards/shard-2.tar': cannot open: No such file or directory: restore it, or rebuild the index '$d/alone/train.idx' (rv-decode --index-out)" ]
	[ ! -e "$T/a1.rvs" ]
	# --shard auto pads as without the index
	RANK=1 WORLD_SIZE=3 rv-decode -q --shard auto --index "$d/train.idx" -o "$T/auto.rvs"
	[ "$(samples "$T/auto.rvs" | wc -l)" -eq 67 ]
}

@test "index: parts built apart (a Slurm array) merge into the index of the whole; folder classes agree on every rank" {
	slow
	local d="$T/m" F=("$D"/folder-?.tar) r
	mkdir -p "$d/data" "$d/parts"
	cp -p "${F[@]}" "$d/data/"
	rv-decode -q --index-out "$d/parts/0.idx" "$d"/data/folder-[0-3].tar
	rv-decode -q --index-out "$d/parts/1.idx" "$d"/data/folder-[4-7].tar
	[ "$(awk -F'\t' '$1=="shard" {print $9}' "$d/parts/0.idx" | head -1)" = ../data/folder-0.tar ]
	rv-decode -q --index-out "$d/data/all.idx" "$d"/parts/?.idx
	rv-decode -q --index-out "$d/data/whole.idx" "$d"/data/folder-?.tar
	cmp "$d/data/all.idx" "$d/data/whole.idx"
	# each shard's classes, by number: shard 0 lacks classes 1, 4, 6, 8
	[ "$(awk -F'\t' '$1=="shard" {print $8}' "$d/data/all.idx" | head -1)" = "0,2-3,5,7,9" ]
	rv-decode -q "${F[@]}" -o "$T/all.rvs"
	for r in 0 3; do
		rv-decode -q --shard "$r/4" --index "$d/data/all.idx" -o "$T/r$r.rvs"
		[ "$(meta classes "$T/r$r.rvs")" = 10 ]
		[ "$(meta class.9 "$T/r$r.rvs")" = "$(meta class.9 "$T/all.rvs")" ]
		rv-decode -q --shard "$r/4" "${F[@]}" -o "$T/l$r.rvs"
		cmp <(samples "$T/l$r.rvs") <(samples "$T/r$r.rvs")
	done
}

@test "index: a shard changed, gone or copied, an index cut short or of another dataset, too many ranks: one line each, nothing written" {
	local d="$T/bad"
	mkdir -p "$d/shards" "$d/other/shards"
	cp "${SH[@]}" "$d/shards/"
	rv-decode -q --index-out "$d/train.idx" "$d"/shards/shard-?.tar
	# copied (a new time, the same bytes): read
	touch -d '2001-01-01' "$d/shards/shard-0.tar"
	rv-decode -q --shard 0/8 --index "$d/train.idx" -o "$T/ok.rvs"
	# rewritten in place, the same size: refused
	printf 'XXXX' | dd of="$d/shards/shard-0.tar" bs=1 seek=0 conv=notrunc status=none
	run -1 --separate-stderr rv-decode -q --shard 0/8 --index "$d/train.idx" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$d/shards/shard-0.tar': changed since it was indexed (another modification time and other bytes): rebuild the index '$d/train.idx' (rv-decode --index-out)" ]
	[ ! -e "$T/x.rvs" ]
	# grown (shard-0 restored: a copy again)
	cp "${SH[0]}" "$d/shards/"
	cat "${SH[2]}" >> "$d/shards/shard-1.tar"
	run -1 --separate-stderr rv-decode -q --shard 0/8 --index "$d/train.idx" -o "$T/x.rvs"
	[[ "$stderr" == "rv-decode: '$d/shards/shard-1.tar': 122880 bytes, 51200 when it was indexed: rewritten since; rebuild the index '$d/train.idx' (rv-decode --index-out)" ]]
	# the index of another dataset whose shards have the same names
	cp "$d/train.idx" "$d/other/"
	for f in "$D"/folder-?.tar; do cp "$f" "$d/other/shards/shard-${f##*-}"; done
	run -1 --separate-stderr rv-decode -q --shard 7/8 --index "$d/other/train.idx" -o "$T/x.rvs"
	[[ "$stderr" == "rv-decode: '$d/other/shards/shard-7.tar': "*" bytes, 61440 when it was indexed: rewritten since; rebuild the index"* ]]
	# more ranks than shards
	run -1 --separate-stderr rv-decode -q --shard 0/9 --index "$d/train.idx" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$d/train.idx': 8 shards, fewer than the 9 ranks: rebuild the index over smaller shards, or decode the shards without --index (each rank then reads every shard)" ]
	# an index cut short, and a file that is no index
	head -n 7 "$d/train.idx" > "$d/cut.idx"
	run -1 --separate-stderr rv-decode -q --index "$d/cut.idx" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$d/cut.idx': 2 shard lines, but it says 8 (cut short?)" ]
	run -1 --separate-stderr rv-decode -q --index "${SH[0]}" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '${SH[0]}': not an rv index (its first line is not 'rv-index<TAB>1')" ]
	[ ! -e "$T/x.rvs" ]
	# an index is written whole or not at all
	run -1 --separate-stderr rv-decode -q --index-out "$d/new.idx" "${SH[0]}" "$d/nosuch.tar"
	[ ! -e "$d/new.idx" ]
	[ -z "$(find "$d" -name '.new.idx*')" ]
	# usage
	run -2 --separate-stderr rv-decode --index "$d/train.idx" "${SH[0]}"
	[ "${stderr_lines[0]}" = "rv-decode: --index '$d/train.idx' names the shards: give no input operands" ]
	run -2 --separate-stderr rv-decode --index-out "$d/y.idx" --shard 0/2 "${SH[@]}"
	[[ "${stderr_lines[0]}" == "rv-decode: --index-out writes an index and no stream: "* ]]
	run -2 --separate-stderr rv-decode --index-out "$d/y.idx" "$d/train.idx" "${SH[0]}"
	[ "$stderr" = "rv-decode: --index-out: 1 of the 2 operands are indexes: merge indexes, or index shards, not both" ]
	run -1 --separate-stderr rv-decode --index-out "$d/y.idx" "$D"
	[[ "$stderr" == "rv-decode: '$D': a folder: an index lists files"* ]]
	# a shard that is now a folder
	rm "$d/shards/shard-7.tar"
	mkdir "$d/shards/shard-7.tar"
	run -1 --separate-stderr rv-decode -q --shard 7/8 --index "$d/train.idx" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$d/shards/shard-7.tar': no longer a regular file: rebuild the index '$d/train.idx'" ]
	# --strict: a member lost while indexing, and no index written
	need_fixtures
	run -1 --separate-stderr rv-decode -q --strict --index-out "$d/s.idx" "$FIX/ds/broken.tar"
	[ "${stderr_lines[-1]}" = "rv-decode: 1 members lost (--strict): no index written" ]
	[ ! -e "$d/s.idx" ]
	run -0 rv-decode -q --index-out "$d/s.idx" "$FIX/ds/broken.tar"
	[ -s "$d/s.idx" ]
}

@test "index: a 3-rank job stopped mid-epoch resumes on 2 ranks: every sample of that epoch once, the next epochs a 2-rank job's" {
	local d="$T/el" r opts=(--shuffle --seed 4 --epochs 2 --even none)
	mkdir -p "$d"
	cp "${SH[@]}" "$d/"
	rv-decode -q --index-out "$d/train.idx" "$d"/shard-?.tar
	# the job before: 3 ranks, stopped after 20 samples each of epoch 0
	for r in 0 1 2; do
		rv-decode -q --index "$d/train.idx" --shard "$r/3" "${opts[@]}" -o "$T/a$r.rvs"
		rv-inspect --dump "$T/a$r.rvs" |
		    awk -F'\t' '$3 == "sample" && $4 == 0 { print $5 }' | head -20
	done > "$T/served"
	for r in 0 1; do
		run -0 --separate-stderr rv-decode -v --index "$d/train.idx" --shard "$r/2" "${opts[@]}" --resume 0:3:20 -o "$T/b$r.rvs"
		[ "${stderr_lines[1]}" = "rv-decode: resume at epoch 0: 60 of its 200 samples served by 3 ranks; this shard 70 of the 140 left" ]
	done
	[ "$(meta resume "$T/b0.rvs")" = 0:3:20 ]
	[ "$(meta resume-samples "$T/b0.rvs")" = 70 ]
	[ "$(meta epochs "$T/b0.rvs")" = 2 ]
	# epoch 0: what was served and what the 2 ranks serve are the epoch,
	# each sample once; the 2 ranks' with their labels and pixels
	{ cat "$T/served"; samples "$T"/b?.rvs | awk '$1 == 0 { print $2 }'; } |
	    sort -n > "$T/e0"
	[ "$(paste -sd, "$T/e0")" = "$(seq -s, 0 199)" ]
	rv-decode -q "${SH[@]}" -o "$T/all.rvs"
	samples "$T/all.rvs" | cut -d' ' -f2- > "$T/whole"
	samples "$T"/b?.rvs | awk '$1 == 0' | cut -d' ' -f2- | sort -n |
	    while read -r id rest; do
		grep -qx "$id $rest" "$T/whole" || { echo "$id differs"; exit 1; }
	    done
	# epoch 1 is the 2-rank job's own
	for r in 0 1; do
		rv-decode -q --index "$d/train.idx" --shard "$r/2" "${opts[@]}" -o "$T/c$r.rvs"
		cmp <(samples "$T/b$r.rvs" | awk '$1 == 1') <(samples "$T/c$r.rvs" | awk '$1 == 1')
	done
	# the same from the ids the trainers trained (any pipeline before):
	# the same samples, in the same order
	for r in 0 1; do
		rv-decode -q --index "$d/train.idx" --shard "$r/2" "${opts[@]}" --resume "0:@$T/served" -o "$T/f$r.rvs"
		cmp <(rv-inspect --dump "$T/b$r.rvs" | awk -F'\t' '$3 == "sample" { print $4, $5 }') \
		    <(rv-inspect --dump "$T/f$r.rvs" | awk -F'\t' '$3 == "sample" { print $4, $5 }')
	done
	echo 200 >> "$T/served"
	run -1 --separate-stderr rv-decode -q --index "$d/train.idx" --shard 0/2 --resume "0:@$T/served" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: --resume: '$T/served': line 61: '200' is not a sample id of the dataset (below 200)" ]
	run -1 --separate-stderr rv-decode -q --index "$d/train.idx" --shard 0/2 --resume "0:@$T/nosuch" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: --resume: '$T/nosuch': No such file or directory" ]
	[ ! -e "$T/x.rvs" ]
	# uneven counts, one a rank: 155 left, padded to 78 a rank
	rv-decode -q --index "$d/train.idx" --shard 0/2 --even pad --shuffle --seed 4 --epochs 1 --resume 0:3:20,25,0 -o "$T/u.rvs"
	[ "$(samples "$T/u.rvs" | wc -l)" -eq 78 ]
	# errors
	run -1 --separate-stderr rv-decode -q --index "$d/train.idx" --shard 0/2 --epochs 2 --resume 0:1:200 -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: --resume 0:1:200: the job before served every sample of epoch 0: resume at epoch 1" ]
	run -1 --separate-stderr rv-decode -q --index "$d/train.idx" --shard 0/2 --resume 0:1:200 -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: --resume 0:1:200: the job before served every sample of epoch 0, the last: nothing is left to serve" ]
	run -1 --separate-stderr rv-decode -q --index "$d/train.idx" --shard 0/8 --even pad --resume 0:3:66,67,60 -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: --resume 0:3:66,67,60: 7 samples of epoch 0 left, fewer than the 8 ranks: resume at epoch 1, or with --even none" ]
	[ ! -e "$T/x.rvs" ]
	run -2 --separate-stderr rv-decode --shard 0/2 --resume 0:3:20 "${SH[@]}"
	[ "${stderr_lines[0]}" = "rv-decode: --resume needs --index (a job's shares are laid out by the index)" ]
	run -2 --separate-stderr rv-decode --index "$d/train.idx" --resume 0:3:1,2
	[ "${stderr_lines[0]}" = "rv-decode: --resume: '0:3:1,2': 2 counts for 3 ranks: give one, or one a rank" ]
	run -2 --separate-stderr rv-decode --index "$d/train.idx" --resume 2:3:1 --epochs 2
	[ "${stderr_lines[0]}" = "rv-decode: --resume: epoch 2: the run has 2 (--epochs)" ]
}

@test "index: a refurbishing job stopped mid-epoch resumes on 2 ranks: the rest of the epoch from the ids trained, then rv-refurbish --epoch-range" {
	slow
	local d="$T/rf" r P='randaugment n=1 m=5' F='random_crop size=28 padding=2; flip'
	local -a rf=(rv-refurbish -q --partial "$P" --final "$F" --reuse 2 --epochs 3 --seed 4)
	mkdir -p "$d"
	cp "${SH[@]}" "$d/"
	rv-decode -q --index-out "$d/train.idx" "$d"/shard-?.tar
	# the job before: 3 ranks, refurbishing; each trained 20 samples of
	# epoch 1 (the ids its trainer logged)
	for r in 0 1 2; do
		rv-decode -q --index "$d/train.idx" --shard "$r/3" --shuffle --seed 4 |
		    "${rf[@]}" | rv-inspect --dump - |
		    awk -F'\t' '$3 == "sample" && $4 == 1 { print $5 }' | head -20
	done > "$T/trained"
	# 2 ranks: the rest of epoch 1 without the cache, then epoch 2 by
	# rv-refurbish from the rank's new shard
	for r in 0 1; do
		{ rv-decode -q --index "$d/train.idx" --shard "$r/2" --shuffle --seed 4 \
		    --epochs 2 --resume "1:@$T/trained" | rv-augment -q --seed 4 "$P; $F"
		  rv-decode -q --index "$d/train.idx" --shard "$r/2" --shuffle --seed 4 |
		    "${rf[@]}" --epoch-range 2-2; } > "$T/n$r.rvs"
		rv-decode -q --index "$d/train.idx" --shard "$r/2" --shuffle --seed 4 |
		    "${rf[@]}" > "$T/w$r.rvs"
		# epoch 2 is the 2-rank job's own, pixels and all
		cmp <(samples "$T/n$r.rvs" | awk '$1 == 2') <(samples "$T/w$r.rvs" | awk '$1 == 2')
	done
	# epoch 1: every sample once
	{ cat "$T/trained"; samples "$T"/n?.rvs | awk '$1 == 1 { print $2 }'; } |
	    sort -n > "$T/e1"
	[ "$(paste -sd, "$T/e1")" = "$(seq -s, 0 199)" ]
}
