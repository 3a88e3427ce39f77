#!/usr/bin/env bats
# make install honours PREFIX, MANPREFIX and DESTDIR, and installs every
# program and page; make uninstall removes them again.

load helpers

@test "make install: programs and man pages land under DESTDIR/PREFIX" {
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
	[ -x "$d/opt/rv/bin/rv-plot" ]
	[ -f "$d/opt/rv/man/man7/rv.7" ]
	[ -f "$d/opt/rv/man/man7/rv-ops.7" ]
	run -0 "$d/opt/rv/bin/rv-decode" --version
	[ "$output" = "rv-decode 0.1.0" ]
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
	local d
	if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; then
		# the default build has it: no device here, or a device found
		run --separate-stderr "$BIN/rv-train-gpu" -q --device cuda \
		    < /dev/null
		[[ "$stderr" != *"built without CUDA"* ]]
		ldd "$BIN/rv-train-gpu" | grep -q 'libcudnn\.so'
		# and only the trainer links the CUDA libraries
		! ldd "$BIN/rv-decode" | grep -q 'libcuda'
	fi
	[ "${RV_BUILD:-build}" = build ] ||
	    skip "once, with the plain build"
	d="$BATS_TEST_TMPDIR/nocuda"
	run -0 make -s -C "$REPO" CUDA=0 BUILD="$d" WERROR=1 \
	    "$d/bin/rv-train-gpu" "$d/unit/t_nn_cuda"
	run -1 --separate-stderr "$d/bin/rv-train-gpu" --device cuda < /dev/null
	[ "$stderr" = "rv-train-gpu: --device cuda: this rv was built without CUDA (CUDA=0 or no nvcc)" ]
	! ldd "$d/bin/rv-train-gpu" | grep -q 'libcud'
	run -0 "$d/unit/t_nn_cuda"
	[ "${lines[0]}" = "ok 1 - cuda # SKIP the CUDA backend is not built" ]
}
