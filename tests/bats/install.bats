#!/usr/bin/env bats
# make install honours PREFIX, MANPREFIX and DESTDIR, and installs every
# program and page, and the CUDA plugin when it is built, which the
# installed trainer finds; make uninstall removes them again.

load helpers

@test "make install: programs and man pages land under DESTDIR/PREFIX" {
	slow
	d="$BATS_TEST_TMPDIR/root"
	run -0 make -s -C "$REPO" BUILD="${RV_BUILD:-build}" install \
	    DESTDIR="$d" PREFIX=/opt/rv MANPREFIX=/opt/rv/man
	for p in rv-decode rv-augment rv-batch rv-inspect rv-refurbish \
	    rv-train-gpu rv-score; do
		[ -x "$d/opt/rv/bin/$p" ]
		[ -f "$d/opt/rv/man/man1/$p.1" ]
	done
	[ -f "$d/opt/rv/man/man5/rv-stream.5" ]
	[ -f "$d/opt/rv/man/man5/rv-feedback.5" ]
	[ -f "$d/opt/rv/man/man5/rv-index.5" ]
	[ -x "$d/opt/rv/bin/rv-plot" ]
	[ -f "$d/opt/rv/man/man7/rv.7" ]
	[ -f "$d/opt/rv/man/man7/rv-ops.7" ]
	run -0 "$d/opt/rv/bin/rv-decode" --version
	[ "$output" = "rv-decode 0.1.0" ]
	# the installed trainer trains, without opening the CUDA plugin
	need_fmnist
	"$d/opt/rv/bin/rv-decode" -q --limit 64 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$BATS_TEST_TMPDIR/s.rvs"
	run -0 --separate-stderr "$d/opt/rv/bin/rv-train-gpu" -j 1 -b 32 \
	    -m linear --device cpu "$BATS_TEST_TMPDIR/s.rvs"
	[ -z "$stderr" ]
	[[ "$output" == *"device    cpu (1 thread)"* ]]
	[ "$(printf '%s\n' "$output" | awk '$1 == "steps" { print $2 }')" = 2 ]
	# the plugin, in PREFIX/lib/rv when CUDA is built; with a stand-in
	# driver (libcuda.so.1) the installed trainer opens it, finds the
	# rv_* functions it calls and no device
	if [ -f "$REPO/${RV_BUILD:-build}/lib/rv/librv-cuda.so" ]; then
		[ -f "$d/opt/rv/lib/rv/librv-cuda.so" ]
		mkdir -p "$BATS_TEST_TMPDIR/driver"
		cc -shared -o "$BATS_TEST_TMPDIR/driver/libcuda.so.1" -x c /dev/null
		run -1 --separate-stderr env \
		    LD_LIBRARY_PATH="$BATS_TEST_TMPDIR/driver" \
		    "$d/opt/rv/bin/rv-train-gpu" --device cuda "$BATS_TEST_TMPDIR/s.rvs"
		[ "$stderr" = "rv-train-gpu: --device cuda: no CUDA device found" ]
	else
		[ ! -e "$d/opt/rv/lib/rv/librv-cuda.so" ]
	fi
	# the PyTorch bridge, importable from where it went
	py=("$d"/opt/rv/lib/python3*/dist-packages)
	[ -f "${py[0]}/rvstream/__init__.py" ] && [ -f "${py[0]}/rvstream/_stream.py" ]
	if /usr/bin/python3 -c 'import numpy, zstandard' 2>/dev/null; then
		run -0 env PYTHONPATH="${py[0]}" /usr/bin/python3 -c \
		    'import rvstream; print(rvstream.__version__)'
		[ "$output" = "0.1.0" ]
	fi
	run -0 make -s -C "$REPO" BUILD="${RV_BUILD:-build}" uninstall \
	    DESTDIR="$d" PREFIX=/opt/rv MANPREFIX=/opt/rv/man
	[ -z "$(find "$d" -type f)" ]
}

@test "make: the CUDA backend is built when nvcc is there; make CUDA=0 leaves it and its libraries out" {
	slow plain
	local d p
	if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; then
		# the default build has it: no device here, or a device found
		run --separate-stderr "$BIN/rv-train-gpu" -q --device cuda \
		    < /dev/null
		[[ "$stderr" != *"built without CUDA"* ]]
		# as the plugin, which alone links the CUDA libraries
		p="$BIN/../lib/rv/librv-cuda.so"
		ldd "$p" | grep -q 'libcudnn\.so'
		ldd "$p" | grep -q 'libcublas\.so'
		! ldd "$BIN/rv-train-gpu" | grep -q 'libcu'
		! ldd "$BIN/rv-decode" | grep -q 'libcu'
		# the rv_* functions it calls are the trainer's, exported
		nm -D --defined-only "$BIN/rv-train-gpu" | awk '{ print $NF }' |
		    sort > "$BATS_TEST_TMPDIR/exported"
		nm -D --undefined-only "$p" | awk '$NF ~ /^rv_/ { print $NF }' |
		    sort > "$BATS_TEST_TMPDIR/imported"
		[ -s "$BATS_TEST_TMPDIR/imported" ]
		[ -z "$(comm -23 "$BATS_TEST_TMPDIR/imported" "$BATS_TEST_TMPDIR/exported")" ]
	fi
	[ "${RV_BUILD:-build}" = build ] ||
	    skip "once, with the plain build"
	d="$BATS_TEST_TMPDIR/nocuda"
	run -0 make -s -C "$REPO" CUDA=0 BUILD="$d" WERROR=1 \
	    "$d/bin/rv-train-gpu" "$d/unit/t_nn_cuda"
	run -1 --separate-stderr "$d/bin/rv-train-gpu" --device cuda < /dev/null
	[ "$stderr" = "rv-train-gpu: --device cuda: this rv was built without CUDA (CUDA=0 or no nvcc)" ]
	! ldd "$d/bin/rv-train-gpu" | grep -q 'libcud'
	[ ! -e "$d/lib/rv/librv-cuda.so" ]
	run -0 "$d/unit/t_nn_cuda"
	[ "${lines[0]}" = "ok 1 - cuda # SKIP the CUDA backend is not built" ]
}
