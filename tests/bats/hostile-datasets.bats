#!/usr/bin/env bats
# Hostile datasets for rv-decode's folder, IDX and CIFAR inputs (issue 21):
# a file of a folder that cannot be read or is over the size limit is one
# sample skipped, not the run; --max-pixels holds for IDX and CIFAR before
# their data is read; cut and corrupt files say what is wrong with them;
# Fashion-MNIST's class names go only to a Fashion-MNIST folder; every
# file of a folder is its own sample, whatever its stem.

load helpers

setup_file() {
	need_fmnist
}

setup() {
	T="$BATS_TEST_TMPDIR"
	U=
}

teardown() {
	# the world-readable folder of the unreadable-file test
	if [ -n "$U" ]; then rm -rf "$U"; fi
}

# The samples of stream $1, one "id label" line each.
samples() {
	rv-inspect --dump "$1" | awk -F'\t' '$3 == "sample" { print $5, $6 }'
}

# A folder $1 of three small good images in two classes.
make_folder() {
	mkdir -p "$1/cat" "$1/dog"
	convert -size 8x6 xc:red "$1/cat/a.jpg"
	convert -size 8x6 xc:blue "$1/cat/c.png"
	convert -size 8x6 xc:green "$1/dog/d.jpg"
}

# Run "$@" as an unprivileged user when we are root (where permission bits
# do not bite), else as ourselves.
as_user() {
	if [ "$(id -u)" -eq 0 ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
	else
		"$@"
	fi
}

@test "folder: a file over the 1 GiB limit is one sample skipped; --strict stops" {
	slow
	make_folder "$T/ds"
	truncate -s 1100M "$T/ds/cat/b.jpg"	# sparse: no disk used
	run -0 --separate-stderr rv-decode -v "$T/ds" -o "$T/s.rvs"
	[ "${#stderr_lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = "rv-decode: '$T/ds': 'cat/b.jpg': file of 1153433600 bytes is over the 1 GiB limit (skipped)" ]
	[[ "${stderr_lines[1]}" == "rv-decode: 3 samples in 1 epoch, 1 skipped, "* ]]
	run -0 samples "$T/s.rvs"
	[ "$output" = "$(printf '0 0\n1 0\n2 1')" ]
	run -1 --separate-stderr rv-decode --strict "$T/ds" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$T/ds': 'cat/b.jpg': file of 1153433600 bytes is over the 1 GiB limit" ]
	[ ! -e "$T/x.rvs" ]
}

@test "folder: an unreadable file is one sample skipped, named once; --strict stops" {
	slow
	if [ "$(id -u)" -eq 0 ] && ! command -v setpriv > /dev/null; then
		skip "root without setpriv: permission bits do not bite"
	fi
	# A directory the unprivileged user can walk and write the output in.
	U=$(mktemp -d /tmp/rv-hostile-ds.XXXXXX)
	chmod 755 "$U"
	make_folder "$U/ds"
	convert -size 8x6 xc:white "$U/ds/cat/b.jpg"
	chmod 000 "$U/ds/cat/b.jpg"
	mkdir -m 777 "$U/out"
	run -0 --separate-stderr as_user rv-decode -v "$U/ds" -o "$U/out/s.rvs"
	[ "${#stderr_lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = "rv-decode: '$U/ds': 'cat/b.jpg': cannot open: Permission denied (skipped)" ]
	[[ "${stderr_lines[1]}" == "rv-decode: 3 samples in 1 epoch, 1 skipped, "* ]]
	run -0 samples "$U/out/s.rvs"
	[ "$output" = "$(printf '0 0\n2 0\n3 1')" ]
	run -1 --separate-stderr as_user rv-decode --strict "$U/ds" -o "$U/out/x.rvs"
	[ "$stderr" = "rv-decode: '$U/ds': 'cat/b.jpg': cannot open: Permission denied" ]
	[ ! -e "$U/out/x.rvs" ]
}

@test "folder: every file is its own sample, whatever its stem" {
	slow
	mkdir -p "$T/ds/cat" "$T/ds/dog"
	convert -size 8x6 xc:red "$T/ds/cat/img.jpg"
	convert -size 9x6 xc:red "$T/ds/cat/img.png"
	convert -size 10x6 xc:red "$T/ds/cat/img.001.jpg"
	convert -size 11x6 xc:red "$T/ds/cat/img.002.jpg"
	convert -size 12x6 xc:red "$T/ds/dog/img.jpg"
	run -0 --separate-stderr rv-decode -v "$T/ds" -o "$T/s.rvs"
	[[ "$stderr" == "rv-decode: 5 samples in 1 epoch, 0 skipped, 0 sidecars, 0 ignored, "* ]]
	run -0 samples "$T/s.rvs"
	[ "$output" = "$(printf '0 0\n1 0\n2 0\n3 0\n4 1')" ]
	# sorted by path: img.001.jpg img.002.jpg img.jpg img.png, dog/img.jpg
	run -0 bash -c "rv-inspect --dump '$T/s.rvs' | awk -F'\t' '\$3 == \"sample\" { print \$8 }' | tr '\n' ' '"
	[ "$output" = "10 11 8 9 12 " ]
}

@test "IDX: the pixel limit refuses a gzip bomb before its data is read" {
	[ -x /usr/bin/time ] || skip "no /usr/bin/time"
	# one 14000x14000 image of zeros: 190 kB of gzip, 196 MB of data,
	# over the default limit of 178956970 pixels
	{ printf '\0\0\x08\x03\0\0\0\x01\0\0\x36\xb0\0\0\x36\xb0'
	  head -c 196000000 /dev/zero; } | gzip -1 > "$T/bomb-idx3-ubyte.gz"
	run -1 --separate-stderr /usr/bin/time -f '%M' -o "$T/rss" \
	    rv-decode "$T/bomb-idx3-ubyte.gz" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$T/bomb-idx3-ubyte.gz': byte 8: IDX header declares 1 image of 14000x14000, over the 178956970-pixel limit (--max-pixels)" ]
	[ ! -e "$T/x.rvs" ]
	# peak RSS in kB: far below the 196 MB the header claims
	[ "$(tail -n 1 "$T/rss")" -lt 60000 ]
}

@test "IDX and CIFAR: --max-pixels is one line naming the file, not a warning a record" {
	run -1 --separate-stderr rv-decode --max-pixels 100 \
	    "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$FMNIST/t10k-images-idx3-ubyte.gz': byte 8: IDX header declares 10000 images of 28x28, over the 100-pixel limit (--max-pixels)" ]
	[ ! -e "$T/x.rvs" ]
	python3 -c "
import sys
open(sys.argv[1], 'wb').write(b''.join(bytes([i % 10]) + bytes(3072) for i in range(4)))
" "$T/data_batch_1.bin"
	run -1 --separate-stderr rv-decode --max-pixels 1000 "$T/data_batch_1.bin" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$T/data_batch_1.bin': CIFAR images are 32x32, over the 1000-pixel limit (--max-pixels)" ]
	[ ! -e "$T/x.rvs" ]
	run -0 rv-decode -q --max-pixels 1024 "$T/data_batch_1.bin" -o "$T/s.rvs"
	run -0 samples "$T/s.rvs"
	[ "${#lines[@]}" -eq 4 ]
}

@test "CIFAR: a batch cut short says so" {
	slow
	python3 -c "
import sys
b = b''.join(bytes([i % 10]) + bytes(3072) for i in range(10))
open(sys.argv[1] + '/data_batch_1.bin', 'wb').write(b[:30000])
b = b''.join(bytes([1, 40 + i]) + bytes(3072) for i in range(3))
open(sys.argv[1] + '/train.bin', 'wb').write(b + b'x')
" "$T"
	run -1 --separate-stderr rv-decode "$T/data_batch_1.bin" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$T/data_batch_1.bin': CIFAR-10 batch cut short or padded: 30000 bytes is not a multiple of the 3073-byte record" ]
	run -1 --separate-stderr rv-decode "$T/train.bin" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$T/train.bin': CIFAR-100 batch cut short or padded: 9223 bytes is not a multiple of the 3074-byte record" ]
	[ ! -e "$T/x.rvs" ]
	# a file of that name that does not start like a batch is no batch
	echo 'not a batch at all' > "$T/test.bin"
	run -1 --separate-stderr rv-decode "$T/test.bin" -o "$T/x.rvs"
	[[ "$stderr" == "rv-decode: '$T/test.bin': not a directory, archive, IDX file or CIFAR batch"* ]]
}

@test "IDX: corrupt gzip says so, naming the file, not zlib's <fd:N>" {
	python3 - "$FMNIST/t10k-images-idx3-ubyte.gz" "$T" <<'EOF'
import sys
gz = open(sys.argv[1], 'rb').read()
b = bytearray(gz)
b[-6] ^= 0xff				# the CRC-32 in the trailer
open(sys.argv[2] + '/crc-idx3-ubyte.gz', 'wb').write(b)
b = bytearray(gz)
off = 10
if b[3] & 8:				# FNAME
    off = b.index(0, 10) + 1
b[off] = 0x07				# first block: type 3, reserved
open(sys.argv[2] + '/start-idx3-ubyte.gz', 'wb').write(b)
EOF
	run -1 --separate-stderr rv-decode "$T/crc-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$T/crc-idx3-ubyte.gz': gzip data corrupt: incorrect data check" ]
	run -1 --separate-stderr rv-decode "$T/start-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" -o "$T/x.rvs"
	[ "$stderr" = "rv-decode: '$T/start-idx3-ubyte.gz': gzip data corrupt: invalid block type" ]
	[ ! -e "$T/x.rvs" ]
}

@test "IDX: Fashion-MNIST class names only in a folder named for it" {
	for d in fashionista/mnist my-fashion-set FashionMNIST/raw data/fashion fashion_mnist; do
		mkdir -p "$T/$d"
		cp "$FMNIST"/t10k-*-ubyte.gz "$T/$d/"
		rv-decode -q --limit 2 "$T/$d/t10k-images-idx3-ubyte.gz" \
		    "$T/$d/t10k-labels-idx1-ubyte.gz" -o "$T/s.rvs"
		echo "$d $(rv-inspect -v "$T/s.rvs" 2> /dev/null | awk '$1 == "class.0" { print $2 }')"
	done > "$T/got"
	printf '%s\n' 'fashionista/mnist ' 'my-fashion-set ' \
	    'FashionMNIST/raw T-shirt/top' 'data/fashion T-shirt/top' \
	    'fashion_mnist T-shirt/top' | diff - "$T/got"
	# Debian's own folder, by a relative path too
	cd "$FMNIST"
	rv-decode -q --limit 2 t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz -o "$T/s.rvs"
	run -0 bash -c "rv-inspect -v '$T/s.rvs' 2> /dev/null | awk '\$1 == \"class.9\" { print \$2, \$3 }'"
	[ "$output" = "Ankle boot" ]
}
