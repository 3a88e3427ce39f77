#!/usr/bin/env bash
# scripts/gpu-bundle.sh [DIR]: what scripts/gpu-check.sh needs to run on a
# GPU machine that has the NVIDIA driver, CUDA 13 and cuDNN 9 (the CUDA
# tree, or PyTorch's nvidia-* wheels) but none of rv's -dev packages and
# no network.  Builds here (make, CUDA=1) and writes into DIR (default
# gpu-bundle/ in the checkout, which git ignores):
#   build/         the programs, the plugin lib/rv/librv-cuda.so and
#                  unit/t_nn_cuda
#   libs.tar.xz    the shared libraries they link, but glibc, libstdc++,
#                  libgcc and the CUDA libraries (the GPU machine's own)
#   fashion-mnist/ Fashion-MNIST's test set and the first LIMIT training
#                  images (default 12000: what tests/gpu/run.sh and
#                  bench/gpu.sh read)
#   run            on the GPU machine, from a copy of the checkout with DIR
#                  in it: bash DIR/run  (gpu-check.sh's environment, e.g.
#                  SKIP_BENCH=1, passes through)
# run unpacks only the libraries the machine lacks (ldconfig -p; RV_LIBS=all
# takes every one from the bundle), finds libcudnn.so.9 and libcublas.so.13
# (CUDA_HOME, /usr/local/cuda, else python3's site-packages), says which it
# took, and runs scripts/gpu-check.sh with NO_BUILD=1 on DIR/build.  The
# programs need a glibc at least as new as this machine's.
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/gpu-bundle}
limit=${LIMIT:-12000}
fm=${FMNIST:-/usr/share/datasets/fashion-mnist}
build=${RV_BUILD:-build}
die() { echo "gpu-bundle: $*" >&2; exit 1; }

make -C "$root" -j"${JOBS:-$(nproc)}" CUDA=1 BUILD="$build" all units >&2
b=$root/$build
[ -f "$b/lib/rv/librv-cuda.so" ] || die "$b/lib/rv/librv-cuda.so: not built (is nvcc there?)"
rm -rf "$dir"
mkdir -p "$dir/build/unit" "$dir/build/lib/rv" "$dir/fashion-mnist"
cp -a "$b/bin" "$dir/build/"
cp -a "$b/lib/rv/librv-cuda.so" "$dir/build/lib/rv/"
cp -a "$b/unit/t_nn_cuda" "$dir/build/unit/"
git -C "$root" describe --always --dirty > "$dir/COMMIT" 2>/dev/null || echo '?' > "$dir/COMMIT"

# The libraries: every one ldd resolves, but the C runtime's and CUDA's.
libs=$(for f in "$dir"/build/bin/* "$dir/build/lib/rv/librv-cuda.so" "$dir/build/unit/t_nn_cuda"; do
	ldd "$f"
done | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so|/libcu(dnn|blas|blasLt|dart)\.so|/librv-cuda\.so' |
    sort -u)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for l in $libs; do cp -L "$l" "$stage/$(basename "$l")"; done
tar -C "$stage" -cJf "$dir/libs.tar.xz" .

# Fashion-MNIST: the test set whole, the training set cut (an IDX header
# with the new count, then the first LIMIT images; labels likewise).
cp "$fm/t10k-images-idx3-ubyte.gz" "$fm/t10k-labels-idx1-ubyte.gz" "$dir/fashion-mnist/"
/usr/bin/python3 - "$fm" "$dir/fashion-mnist" "$limit" <<'EOF'
import gzip, struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, item in (("train-images-idx3-ubyte.gz", 784), ("train-labels-idx1-ubyte.gz", 1)):
    with gzip.open(f"{src}/{name}") as f:
        data = f.read()
    hl = 16 if item > 1 else 8
    head = bytearray(data[:hl])
    have = struct.unpack(">I", head[4:8])[0]
    k = min(n, have)
    head[4:8] = struct.pack(">I", k)
    with gzip.open(f"{dst}/{name}", "wb", compresslevel=6) as f:
        f.write(bytes(head) + data[hl:hl + k * item])
EOF

cat > "$dir/run" <<'EOF'
#!/usr/bin/env bash
# Made by scripts/gpu-bundle.sh: runs scripts/gpu-check.sh on this bundle.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${RV_ROOT:-$(cd "$here/.." && pwd)}
echo "bundle: $here, built from $(cat "$here/COMMIT")"
libdir=$(mktemp -d)
mkdir "$libdir/all" "$libdir/use"
tar -C "$libdir/all" -xJf "$here/libs.tar.xz" || exit 2
have=$(ldconfig -p 2>/dev/null | awk 'NR > 1 { print $1 }')
took=
for f in "$libdir"/all/*; do
	so=${f##*/}
	if [ "${RV_LIBS:-}" = all ] || ! grep -qxF "$so" <<<"$have"; then
		ln -s "$f" "$libdir/use/$so"
		took="$took $so"
	fi
done
echo "from the bundle:${took:- nothing}"
# CUDA's libraries: the CUDA tree first, then Python's nvidia-* wheels.
dirs=("${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64)
py=${PYTHON:-python3}
while IFS= read -r sp; do
	[ -d "$sp/nvidia" ] && dirs+=($(find "$sp/nvidia" -name 'lib*.so*' -printf '%h\n' | sort -u))
done < <("$py" -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
path=$libdir/use
for so in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13 libcudart.so.13; do
	found=
	for d in "${dirs[@]}"; do
		if [ -e "$d/$so" ]; then found=$d; break; fi
	done
	echo "$so: ${found:-NOT FOUND}"
	[ -n "$found" ] && case ":$path:" in *":$found:"*) ;; *) path=$path:$found ;; esac
done
export LD_LIBRARY_PATH=$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NO_BUILD=1 RV_BUILD=$here/build FMNIST=$here/fashion-mnist PYTHON=$py
bash "$root/scripts/gpu-check.sh"
rc=$?
rm -rf "$libdir"
exit "$rc"
EOF
chmod +x "$dir/run"
echo "gpu-bundle: $dir: $(du -sh "$dir" | cut -f1); on the GPU machine: bash ${dir#"$root"/}/run" >&2
