#!/usr/bin/env bash
# Build the libFuzzer harnesses (fuzz/*.c) against lib/ compiled with the
# same sanitizers into build/fuzz/, seed their corpora from the test
# fixtures, replay fuzz/regress/<target>/, then fuzz each target for
# $FUZZ_SECONDS seconds.  Exit 1 on any crash, leak, UB or timeout, with
# the reproducer's path.  See fuzz/README.md.
#
# usage: fuzz/run.sh [--regress] [target ...]
#   --regress   build and replay fuzz/regress only; no fuzzing
#   target      stream codec archive idx_cifar batch spec model feedback
#               ckpt index (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-10}
B=${FUZZ_BUILD:-build/fuzz}
corpora=${FUZZ_CORPUS:-$B/corpus}
cc=${FUZZ_CC:-clang}
all_targets="stream codec archive idx_cifar batch spec model feedback ckpt index"
regress_only=0
if [ "${1:-}" = --regress ]; then
	regress_only=1
	shift
fi
targets=${*:-$all_targets}
for t in $targets; do
	case " $all_targets " in
	*" $t "*) ;;
	*) echo "fuzz: unknown target '$t' (targets: $all_targets)" >&2
	   exit 2 ;;
	esac
done

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
cflags="-O1 -g -fno-omit-frame-pointer $san -fsanitize=fuzzer-no-link"
# OpenMP is left out (clang would want libomp): its pragmas are ignored
# and the kernels run on one thread, which is all a harness needs.
blasdir="/usr/lib/$(gcc -print-multiarch)/openblas-openmp"
libs="-ldnnl -lturbojpeg -ljpeg -lpng -lwebpdemux -lwebp -lgif -ltiff -larchive"
libs="$libs -lzstd -llzma -lbz2 -lxxhash -lz -L$blasdir"
libs="$libs -Wl,-rpath,$blasdir -lopenblas -lpthread -lm"

if ! command -v "$cc" >/dev/null; then
	echo "fuzz: '$cc' not found: install clang (make deps)" >&2
	exit 1
fi
mkdir -p "$B/log"

# The library and the programs that make stream seeds, through the
# project's own Makefile (its dependency tracking, its source list).
if ! make -s -j2 BUILD="$B" CC="$cc" CFLAGS="$cflags" OPENMP= \
    LDFLAGS="$san -fsanitize=fuzzer-no-link" \
    "$B/librv.a" "$B/bin/rv-decode" "$B/bin/rv-batch" \
    >"$B/log/build.log" 2>&1; then
	cat "$B/log/build.log" >&2
	echo "fuzz: building lib/ with $cc failed" >&2
	exit 1
fi

for t in $targets; do
	bin="$B/fuzz-$t"
	if [ ! -x "$bin" ] || [ "fuzz/$t.c" -nt "$bin" ] ||
	    [ "$B/librv.a" -nt "$bin" ]; then
		# shellcheck disable=SC2086
		if ! "$cc" -std=c17 -Wall -Wextra $cflags -fsanitize=fuzzer \
		    -D_POSIX_C_SOURCE=200809L -Ilib -o "$bin" "fuzz/$t.c" \
		    "$B/librv.a" $libs -pthread 2>"$B/log/cc-$t.log"; then
			cat "$B/log/cc-$t.log" >&2
			echo "fuzz: building '$bin' failed" >&2
			exit 1
		fi
	fi
done

status=0
# A hostile input must not buy memory or time: 256 MiB and 2 s an input
# are far above what any harness needs for inputs of at most 64 KiB, and
# low enough to catch what costs a program a GiB or a minute (issue 47).
# ASan's quarantine is kept small so that freed memory does not count.
timeout=${FUZZ_TIMEOUT:-2}
mem=${FUZZ_MEM_MB:-256}
limits="-timeout=$timeout -rss_limit_mb=$((mem + 256)) -malloc_limit_mb=$mem"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=16}"

# Known crashers, one file per bug fixed: each must now run clean.
for t in $targets; do
	dir="fuzz/regress/$t"
	[ -d "$dir" ] || continue
	files=()
	for f in "$dir"/*; do
		[ -f "$f" ] && files+=("$f")
	done
	[ ${#files[@]} -gt 0 ] || continue
	# shellcheck disable=SC2086
	if "$B/fuzz-$t" $limits "${files[@]}" >"$B/log/regress-$t.log" \
	    2>&1; then
		echo "fuzz: $t: ${#files[@]} regression inputs ok"
	else
		tail -n 40 "$B/log/regress-$t.log" >&2
		echo "fuzz: $t: a regression input fails; replay with:" \
		    "$B/fuzz-$t FILE ($dir)" >&2
		status=1
	fi
done
[ "$regress_only" -eq 1 ] && exit "$status"

# ---- seeds, from the fixtures (remade each run: they are cheap) ----
[ -f tests/fixtures/.done ] ||
	bash tests/setup/make-fixtures.sh tests/fixtures >"$B/log/fixtures.log" 2>&1
F=tests/fixtures
S="$B/seeds"
rm -rf "$S"
for t in $all_targets; do
	mkdir -p "$S/$t"
done
dec="$B/bin/rv-decode"
# streams of every record kind, stored and compressed
"$dec" -q --encoded --level 0 "$F/ds/flat" >"$S/stream/encoded.rvs"
"$dec" -q --max-side 6 --level 3 "$F/ds/folder" >"$S/stream/u8-zstd.rvs"
"$dec" -q --limit 3 --epochs 2 --level 0 "$F/ds/cifar/data_batch_1.bin" \
    >"$S/stream/cifar-epochs.rvs"
"$B/bin/rv-batch" -q -b 2 --level 0 <"$S/stream/cifar-epochs.rvs" \
    >"$S/stream/batches.rvs"
{ printf '\x50\x2a\x4d\x18\x04\x00\x00\x00skip'
  cat "$S/stream/cifar-epochs.rvs"; } >"$S/stream/skippable.rvs"
# The same without frame checksums (a reader accepts them): a mutated
# record then reaches the header checks instead of failing the checksum.
python3 - "$S/stream" <<'EOF'
import glob, sys
def strip(d):
    out, off = b"", 0
    while off < len(d):
        magic = int.from_bytes(d[off:off + 4], "little")
        if 0x184D2A50 <= magic <= 0x184D2A5F:
            n = 8 + int.from_bytes(d[off + 4:off + 8], "little")
            out, off = out + d[off:off + n], off + n
            continue
        fhd = d[off + 4]
        single = fhd >> 5 & 1
        fcs = [0, 2, 4, 8][fhd >> 6] or (1 if single else 0)
        hl = 5 + (not single) + [0, 1, 2, 4][fhd & 3] + fcs
        p = off + hl
        while True:
            bh = int.from_bytes(d[p:p + 3], "little")
            p += 3 + (1 if bh >> 1 & 3 == 1 else bh >> 3)
            if bh & 1:
                break
        out += d[off:off + 4] + bytes([fhd & ~4]) + d[off + 5:p]
        off = p + (4 if fhd & 4 else 0)
    return out
for f in glob.glob(sys.argv[1] + "/*.rvs"):
    open(f[:-4] + "-nocheck.rvs", "wb").write(strip(open(f, "rb").read()))
EOF
# the batch harness: two bytes of options, then a stream
i=0
for f in "$S"/stream/*.rvs; do
	case $((i % 4)) in
	0) opt='\x03\x00' ;; 1) opt='\x21\x07' ;; 2) opt='\x4a\x01' ;;
	3) opt='\x10\x00' ;;
	esac
	{ printf '%b' "$opt"; cat "$f"; } >"$S/batch/${f##*/}"
	i=$((i + 1))
done
# the codec harness: one byte of options, then the image
i=0
for f in "$F"/img/*.jpg "$F"/img/*.png "$F"/img/*.webp "$F"/img/*.gif \
    "$F"/img/*.bmp "$F"/img/*.tif; do
	case $((i % 4)) in
	0) opt='\x00' ;; 1) opt='\x13' ;; 2) opt='\x0d' ;; 3) opt='\x3e' ;;
	esac
	{ printf '%b' "$opt"; cat "$f"; } >"$S/codec/${f##*/}"
	i=$((i + 1))
done
for f in "$F"/img/*.png; do	# with the CRCs fixed after mutation
	{ printf '\x52'; cat "$f"; } >"$S/codec/crcfix-${f##*/}"
done
cp "$F"/ds/*.tar "$F"/ds/*.zip "$F"/ds/*.tar.gz "$F"/ds/*.tar.zst \
    "$S/archive/"
# archives one after the other, compressed in every way unz.c decodes
{ xz -c "$F/ds/wds.tar"; cat "$F/ds/dirs.tar.gz"; bzip2 -c "$F/ds/wds.tar"
  cat "$F/ds/dirs.tar" "$F/ds/dirs.tar.zst" "$F/ds/dirs.zip"; } \
    >"$S/archive/mixed.bin"
# where archives end (issue 47): cpio and 7-zip, each then a tar; a zip
# with zip64 end records, one with a comment; a tar cut before its end
# blocks then a cpio; a sparse tar whose hole follows a PNG header
rm -rf "$B/arch"
mkdir -p "$B/arch/d"
cp "$F/img/grey1.png" "$F/img/palette.png" "$F/img/huge.png" "$B/arch/d/"
(cd "$B/arch" && bsdtar --format cpio -cf cpio d && bsdtar --format 7zip -cf 7z d)
cp "$B/arch/cpio" "$B/arch/7z" "$S/archive/"
cat "$B/arch/cpio" "$F/ds/dirs.tar" >"$S/archive/cpio-tar"
cat "$B/arch/7z" "$F/ds/dirs.tar" >"$S/archive/7z-tar"
python3 - "$F" "$S/archive" "$B/arch" <<'EOF'
import os, struct, subprocess, sys, tarfile
fix, out, work = sys.argv[1:4]
z = open(fix + "/ds/dirs.zip", "rb").read()
e = z.rfind(b"PK\x05\x06")
n, cdlen, cdoff = struct.unpack("<HII", z[e + 10:e + 20])
z64 = b"PK\x06\x06" + struct.pack("<QHHIIQQQQ", 44, 45, 45, 0, 0, n, n,
                                  cdlen, cdoff)
loc = b"PK\x06\x07" + struct.pack("<IQI", 0, e, 1)
end = z[e:e + 8] + struct.pack("<HHII", 0xffff, 0xffff, 0xffffffff,
                                0xffffffff) + b"\0\0"
open(out + "/zip64", "wb").write(z[:e] + z64 + loc + end)
open(out + "/zip-comment", "wb").write(z[:e + 20] + struct.pack("<H", 9) +
                                       b"a comment")
t = tarfile.open(fix + "/ds/dirs.tar")
last = t.getmembers()[-1]
cut = last.offset_data + (last.size + 511) // 512 * 512
open(out + "/tarcut-cpio", "wb").write(
    open(fix + "/ds/dirs.tar", "rb").read()[:cut] +
    open(work + "/cpio", "rb").read())
png = open(work + "/d/" + sorted(os.listdir(work + "/d"))[0], "rb").read()
os.makedirs(work + "/sp")
with open(work + "/sp/s.png", "wb") as f:
    f.write(png[:64])
    f.truncate(1 << 20)
subprocess.run(["tar", "--sparse", "-C", work, "-cf", out + "/sparse.tar",
                "sp"], check=True)
EOF
python3 - "$F" "$S/idx_cifar" <<'EOF'
# mode byte, 16-bit length of part A, part A, part B (fuzz/idx_cifar.c)
import gzip, struct, sys
fix, out = sys.argv[1], sys.argv[2]
def idx(dims, fill=None):
    n = 1
    for d in dims:
        n *= d
    body = bytes((i * 7 + 3) % 256 for i in range(n)) if fill is None \
        else bytes(fill)
    return bytes([0, 0, 8, len(dims)]) + b"".join(
        struct.pack(">I", d) for d in dims) + body
def seed(name, mode, a, b=b""):
    with open(f"{out}/{name}", "wb") as f:
        f.write(bytes([mode]) + struct.pack("<H", len(a)) + a + b)
cifar = open(f"{fix}/ds/cifar/data_batch_1.bin", "rb").read()[:2 * 3073]
names10 = open(f"{fix}/ds/cifar/batches.meta.txt", "rb").read()
cifar100 = b"".join(bytes([i, 90 + i]) + bytes(3072) for i in range(2))
names100 = b"".join(b"class%d\n" % i for i in range(100))
images = idx([3, 4, 5])
labels = idx([3], [1, 2, 9])
seed("images", 0x00, images)
seed("images-gz", 0x38, gzip.compress(images, mtime=0))
seed("pair", 0x01, images, labels)
seed("pair-rev", 0x2a, images, labels)
seed("cifar10", 0x03, cifar, names10)
seed("cifar10-grey", 0x1b, cifar)
seed("cifar100", 0x64, cifar100, names100)
seed("cifar-idx", 0x05, cifar, images)
seed("fashion", 0x46, idx([2, 28, 28]), idx([2], [0, 9]))
seed("cifar100-idx4", 0x07, cifar100, idx([2, 3, 2, 3]))
EOF
# specs: every one in the golden table, and a few of the man page's
if [ -f tests/golden/cases.tsv ]; then
	grep -v '^#' tests/golden/cases.tsv | cut -f2 | sort -u |
	while IFS= read -r spec; do
		printf '\x00%s' "$spec" >"$S/spec/$(printf '%s' "$spec" |
		    cksum | cut -d' ' -f1)"
	done
fi
printf '\x00rrc size=224; flip; randaugment n=2 m=9' >"$S/spec/chain"
printf '\xfaresize size=32 ; ; center_crop size=24' >"$S/spec/top-index"
# model specs (fuzz/model.c): byte 0 picks the input shape (bits 0-2)
# and class count (bits 3-4); every preset by name, and specs that use
# every layer, key, comment and nesting form
printf '\x00mlp' >"$S/model/mlp"
printf '\x00cnn-small' >"$S/model/cnn-small"
printf '\x01resnet20' >"$S/model/resnet20"
printf '\x1aresnet18' >"$S/model/resnet18"
printf '\x1aresnet50' >"$S/model/resnet50"
{ printf '\x01# a basic block\nconv 16 k=3 pad=1; bn; relu;\n'
  printf 'res; conv 32 k=3 stride=2 pad=1; bn; relu;\n'
  printf 'conv out=32 pad=1 bias=1; bn; add; relu;\n'
  printf 'gap; dropout 0.25; linear'; } >"$S/model/block"
{ printf '\x1a# a bottleneck\n'
  printf 'conv 64 k=7 stride=2 pad=3; bn; relu; maxpool 3 stride=2 pad=1;\n'
  printf 'res; conv 64 k=1; bn; relu; conv 64 k=3 stride=2 pad=1; bn;\n'
  printf 'relu; conv 256 k=1; bn; add; relu; gap; linear'
} >"$S/model/bottleneck"
{ printf '\x01res; res; conv 6 k=1; add; maxpool; add;\n'
  printf 'res; avgpool 3 stride=3 pad=1; add;\n'
  printf 'linear 5; bn; linear out=10 bias=0'; } >"$S/model/nested"
{ printf '\x07conv 8 k=2 pad=1 stride=1; maxpool k=2 stride=1 pad=1;\n'
  printf 'gap; linear 7; dropout p=0.5; linear'; } >"$S/model/even"
# feedback lines (fuzz/feedback.c): good lines, a bad one, a long one
printf '\x03%b' '1\t0\t0\t0.5\t1.25\n2\t0\t0\tnan\t1\n' >"$S/feedback/mixed"
{ printf '\x00'
  for i in $(seq 1 200); do printf '%d\t1\t%d\t0.25\t3.5\n' "$i" "$i"; done
  printf '%0300d\n' 7; } >"$S/feedback/long"

# checkpoints (fuzz/ckpt.c): byte 0 bit 0 asks the harness to fix the
# checksum, so mutations reach the header checks
python3 - "$S/ckpt" <<'EOF'
import struct, sys
out = sys.argv[1]
def ck(name, spec, c, h, w, classes, nparams, nbufs, pos=(0,) * 9):
    spec = spec.encode()
    n = 2 * nparams + nbufs
    body = struct.pack("<4sIIIIIIQQQQQQIIQQQddd4f4fI", b"RVCK", 1, 168,
                       c, h, w, classes, nparams, nbufs, *pos,
                       1.5, -1.0, 0.25, *[0.5] * 4, *[0.25] * 4, len(spec))
    body += spec + struct.pack("<%df" % n,
                               *[(i % 7 - 3) / 8 for i in range(n)])
    for opt in (0, 1):
        with open("%s/%s-%d" % (out, name, opt), "wb") as f:
            f.write(bytes([opt]) + body + bytes(8))
ck("linear", "linear", 1, 2, 2, 2, 10, 0)
ck("bn", "conv 2 k=1; bn; relu; linear", 3, 2, 1, 3, 23, 4,
   (7, 7, 28, 28, 1, 1, 0x1234, 4, 24))
ck("empty", "linear", 4, 1, 1, 10, 0, 0)
EOF

# indexes (fuzz/index.c): one that rv-decode writes, with class names
# and escapes, and a merge of two
mkdir -p "$S/index/parts"
"$dec" -q --index-out "$S/index/parts/a.idx" "$F"/ds/*.tar 2>"$B/log/index.log"
"$dec" -q --index-out "$S/index/parts/b.idx" "$F"/ds/*.zip 2>>"$B/log/index.log"
"$dec" -q --index-out "$S/index/merged" "$S"/index/parts/*.idx
mv "$S/index/parts/a.idx" "$S/index/a"
rm -r "$S/index/parts"
printf 'rv-index\t1\nsamples\t3\nshards\t2\nclasses\t4\nclass\t0\ta\\tb\nclass\t1\tc\\x01\nshard\t1\t10\t-1.000000005\t00000000000000ff\tarchive\t4\t0-1\tx\\\\y.tar\nshard\t2\t20\t5.000000000\tffffffffffffffff\tcifar\t0\tf\t../c.bin\n' >"$S/index/escapes"

# ---- fuzzing ----
max_len() {
	case $1 in
	spec) echo 1024 ;;
	model) echo 4096 ;;
	feedback) echo 8192 ;;
	index) echo 8192 ;;
	ckpt) echo 4096 ;;
	idx_cifar) echo 16384 ;;
	*) echo 65536 ;;
	esac
}
[ "$seconds" -gt 0 ] || exit "$status"
for t in $targets; do
	corpus="$corpora/$t"
	crashes="$B/crashes/$t"
	log="$B/log/fuzz-$t.log"
	mkdir -p "$corpus" "$crashes"
	dict=
	[ -f "fuzz/$t.dict" ] && dict="-dict=fuzz/$t.dict"
	# shellcheck disable=SC2086
	if "$B/fuzz-$t" -max_total_time="$seconds" $limits $dict \
	    -max_len="$(max_len "$t")" \
	    -artifact_prefix="$crashes/" -print_final_stats=1 \
	    "$corpus" "$S/$t" >"$log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		echo "fuzz: $t: ${runs:-?} runs in ${seconds}s, ok"
	else
		tail -n 60 "$log" >&2
		art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" |
		    tail -n 1)
		echo "fuzz: $t: FAILED; reproducer: ${art:-none written}" >&2
		[ -n "$art" ] && echo "fuzz: replay with: $B/fuzz-$t $art" >&2
		status=1
	fi
done
exit "$status"
