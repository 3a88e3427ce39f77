# Shared set-up for the bats suite: `load helpers` at the top of a file.
# Puts the freshly built programs first on PATH, and points at the data.
# shellcheck shell=bash

bats_require_minimum_version 1.5.0

REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
BIN="$REPO/${RV_BUILD:-build}/bin"
PATH="$BIN:$PATH"
export PATH
# Fixtures are made once by tests/setup/make-fixtures.sh (make fixtures).
FIX="$REPO/tests/fixtures"
# Fashion-MNIST from Debian's dataset-fashion-mnist.
FMNIST=/usr/share/datasets/fashion-mnist
# Tests run at the default level; an inherited RV_LEVEL must not change it.
unset RV_LEVEL
# No progress lines in what the tests read of standard error (a slow run
# would write one every 30 s): the tests of progress set it themselves.
export RV_PROGRESS=0

need_fixtures() {
	[ -f "$FIX/.done" ] || bash "$REPO/tests/setup/make-fixtures.sh" "$FIX" >&2
}

# need_torch [MODULE]: PY, the python3 with torch (MODULE, default torch)
# and zstandard that the tests use.
need_torch() {
	PY=/usr/bin/python3
	"$PY" -c "import ${1:-torch}, zstandard" 2>/dev/null || {
		echo "no torch or zstandard for $PY: run make deps" >&2
		return 1
	}
}

need_fmnist() {
	[ -f "$FMNIST/train-images-idx3-ubyte.gz" ] || {
		echo "dataset-fashion-mnist is not installed: run make deps" >&2
		return 1
	}
}

# slow [plain]: first line of a test (or of setup, for a whole file) that
# takes more than a few seconds.  `make check` (tests/run quick,
# RV_QUICK=1) skips it; `make test` runs it under the sanitizers, and on
# the plain build (RV_QUICK=2) only the tests marked `slow plain`, those
# that run on the plain build alone (valgrind, the CPU run of the GPU
# checks, the CUDA=0 build).
slow() {
	case ${RV_QUICK:-0}/${1:-} in
	1/* | 2/) skip "slow: make test runs it" ;;
	esac
}

# fmnist_tars DIR PREFIX SIZE...: WebDataset shards of Fashion-MNIST's
# first training images, DIR/PREFIX-0.tar ... one a SIZE, of members
# k<id>.png (grey, 28x28) and k<id>.cls (the label), ids in order.
fmnist_tars() {
	local d=$1 prefix=$2 i k at=0 f n=0
	shift 2
	for i in "$@"; do n=$((n + i)); done
	mkdir -p "$d/.png"
	rv-decode -q --limit "$n" "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$d/.png/src.rvs"
	rv-inspect -q --png "$d/.png" "$d/.png/src.rvs" > /dev/null
	i=0
	for n in "$@"; do
		mkdir -p "$d/.w$i"
		for ((k = 0; k < n; k++, at++)); do
			f=$(echo "$d"/.png/e000-id"$(printf %06d "$at")"-l*.png)
			cp "$f" "$d/.w$i/k$at.png"
			f=${f##*-l}
			echo "${f%.png}" > "$d/.w$i/k$at.cls"
		done
		tar -C "$d/.w$i" -cf "$d/$prefix-$i.tar" .
		rm -r "$d/.w$i"
		i=$((i + 1))
	done
	rm -r "$d/.png"
}

# peak PROG ARGS...: run, stdout to a pipe, print the peak RSS in KB
# (its status is the pipeline's; $T/rss keeps time's report).
peak() {
	local kb
	set -o pipefail
	/usr/bin/time -f '%M' -o "$T/rss" "$@" | cat > /dev/null
	kb=$(tail -1 "$T/rss")
	echo "$kb"
}

need_time() {
	[ -x /usr/bin/time ] || skip "no /usr/bin/time"
}

# under KB LIMIT: KB <= LIMIT, except under sanitizers, whose shadow
# memory makes peak RSS meaningless (the programs still run and check).
under() {
	case ${RV_BUILD:-build} in
	*asan* | *san*) return 0 ;;
	esac
	[ "$1" -le "$2" ]
}

# sanitized: the build under test has AddressSanitizer (times and memory
# mean nothing there).
sanitized() {
	case ${RV_BUILD:-build} in
	*asan* | *san*) return 0 ;;
	esac
	return 1
}

# mksample OUT H W C [KIND]: one u8 sample of zeros (KIND batch: a batch
# of one) and an epoch-end, each one zstd frame with its content size and
# checksum, made from a sparse file so that no pipe carries the zeros.
mksample() {
	local out=$1 h=$2 w=$3 c=$4 kind=${5:-sample}
	/usr/bin/python3 - "$out" "$h" "$w" "$c" "$kind" <<'EOF'
import struct
import sys

out, h, w, c, kind = sys.argv[1], *map(int, sys.argv[2:5]), sys.argv[5]
batch = kind == "batch"
px = h * w * c
plen = px + 16 if batch else px


def hdr(k, dtype, h, w, c, count, label, n):
    return struct.pack("<IHHBBHIQiIIIIIffQ", 0x31525652, 1, 64, k, dtype, 0,
                       0, 0, label, h, w, c, count, 0, 1.0, float("nan"), n)


with open(out + ".raw", "wb") as f:
    f.write(hdr(2 if batch else 1, 1, h, w, c, 1, 0, plen))
    if batch:   # id 0, label 0, weight 1.0; the pixels are the file's hole
        f.write(struct.pack("<Qif", 0, 0, 1.0))
    f.truncate(64 + plen)
with open(out + ".end", "wb") as f:
    f.write(hdr(3, 0, 0, 0, 0, 1, -1, 0))
EOF
	zstd -q -1 -c "$out.raw" > "$out"
	zstd -q -c "$out.end" >> "$out"
	rm -f "$out.raw" "$out.end"
}

# Every stream reader, as the hostile-*.bats campaigns run them.
# shellcheck disable=SC2034
READERS=(
	"rv-augment flip"
	"rv-refurbish -q --partial flip --final flip"
	"rv-inspect"
	"rv-score -q"
	"rv-batch -b 4"
	"rv-train-gpu -q -j 1 -b 4 -m linear --device cpu"
)
