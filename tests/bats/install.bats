#!/usr/bin/env bats
# make install honours PREFIX, MANPREFIX and DESTDIR, and installs every
# program and page, the CUDA plugin when it is built, which the installed
# trainer finds, and the PyTorch bridge by pip; make uninstall removes
# them again.  pip install ./python installs the bridge in a venv.

load helpers

@test "make install: programs and man pages land under DESTDIR/PREFIX" {
	slow
	d="$BATS_TEST_TMPDIR/root"
	run -0 make -s -C "$REPO" BUILD="${RV_BUILD:-build}" install \
	    DESTDIR="$d" PREFIX=/opt/rv MANPREFIX=/opt/rv/man
	for p in rv-decode rv-augment rv-batch rv-inspect rv-refurbish \
	    rv-train-gpu rv-score rv-encode; do
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
	[ -f "${py[0]}/rvstream-0.1.0.dist-info/METADATA" ]	# by pip
	if /usr/bin/python3 -c 'import numpy, zstandard' 2>/dev/null; then
		run -0 env PYTHONPATH="${py[0]}" /usr/bin/python3 -c \
		    'import rvstream; print(rvstream.__version__)'
		[ "$output" = "0.1.0" ]
	fi
	run -0 make -s -C "$REPO" BUILD="${RV_BUILD:-build}" uninstall \
	    DESTDIR="$d" PREFIX=/opt/rv MANPREFIX=/opt/rv/man
	[ -z "$(find "$d" -type f)" ]
}

@test "pip install ./python: rvstream in a virtual environment, offline, its version the programs'; it finds them on PATH or in RV_BIN" {
	slow
	local v="$BATS_TEST_TMPDIR/venv" ver
	/usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null ||
	    skip "python3-venv is not installed: run make deps"
	/usr/bin/python3 -c 'import numpy, zstandard' 2>/dev/null ||
	    skip "python3-numpy or python3-zstandard is missing: run make deps"
	/usr/bin/python3 -m venv --system-site-packages "$v"
	# --no-index: nothing is downloaded (the build backend is in the tree)
	run -0 "$v/bin/pip" install -q --no-index --disable-pip-version-check "$REPO/python"
	[ ! -e "$REPO/python/build" ] && [ -z "$(find "$REPO/python" -name '*.egg-info')" ]
	ver=$("$BIN/rv-decode" --version)
	ver=${ver#rv-decode }
	[ "$(sed -n 's/^#define RV_VERSION_STRING "\(.*\)"$/\1/p' "$REPO/lib/base/opt.h")" = "$ver" ]
	cd "$BATS_TEST_TMPDIR"
	run -0 "$v/bin/python" -c 'import rvstream; print(rvstream.__version__, rvstream.__file__)'
	[[ "$output" == "$ver $v/lib/python3."*"/site-packages/rvstream/__init__.py" ]]
	run -0 "$v/bin/pip" show rvstream
	[ "${lines[1]}" = "Version: $ver" ]
	# the programs: RV_BIN, else PATH; a missing one is named
	run -0 env RV_BIN="$BIN" "$v/bin/python" -c 'from rvstream import _programs as p; print(p.check())'
	[ "$output" = "$BIN/rv-decode" ]
	run -0 env -u RV_BIN PATH="$BIN:/usr/bin:/bin" "$v/bin/python" -c 'from rvstream import _programs as p; print(p.check())'
	[ "$output" = "$BIN/rv-decode" ]
	run -1 env -u RV_BIN PATH=/usr/bin:/bin "$v/bin/python" -c 'from rvstream import _programs as p; p.check()'
	[[ "${lines[-1]}" == "FileNotFoundError: rvstream: rv-decode is not on PATH: install rv (make install) or set RV_BIN to the directory of its programs" ]]
	run -0 "$v/bin/pip" uninstall -y -q rvstream
	run -1 "$v/bin/python" -c 'import rvstream'
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
