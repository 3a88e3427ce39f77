#!/usr/bin/env bash
# PyTorch bridge (issue 9): does a PyTorch loop reading rv batches from a
# pipe with python/rvstream keep up with rv-batch writing them?  Batches of
# 256, two shapes: Fashion-MNIST as it is (60000 samples, 28x28x1, 200 KB
# per batch) and resized to 224x224x3 (1536 samples, 38.5 MB per batch).
# For each, the same rv-batch run into a FIFO read by
#   baseline  cat > /dev/null (a reader that does nothing)
#   rvstream  bench/torch_reader.py: each batch into torch tensors
#   +float    the same, and Batch.float() (normalised float32 NCHW)
# The reader starts first (importing torch takes a second), then rv-batch;
# the wall time is rv-batch's start to the reader's last batch (not to
# the interpreter's exit, slow with torch loaded), best of RUNS.
# Reported: wall seconds, the ratio to the baseline (target: rvstream
# <= 1.05x, it keeps up), and the reader's own milliseconds per batch
# (time inside next(), and in float()).
#
# Builds nothing: expects `make`.  Environment: RV_BUILD (default build),
# RUNS (default 3).  Output in bench/out/torch-reader/.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/out/torch-reader
build=${RV_BUILD:-build}
case $build in
/*) bin=$build/bin ;;
*) bin=$root/$build/bin ;;
esac
runs=${RUNS:-3}
py=/usr/bin/python3	# Debian's, with python3-torch
data=/usr/share/datasets/fashion-mnist
# shellcheck source=scripts/jsonl.bash
. "$root/scripts/jsonl.bash"

die() { echo "bench/torch-reader: $*" >&2; exit 1; }
[ -x "$bin/rv-batch" ] || die "no $bin/rv-batch: run make first"
"$py" -c 'import torch, zstandard' 2>/dev/null ||
    die "$py lacks torch or zstandard: apt-get install python3-torch python3-zstandard"
mkdir -p "$out"
PATH="$bin:$PATH"

echo "preparing inputs in $out" >&2
[ -s "$out/fmnist.rvs" ] || rv-decode -q "$data/train-images-idx3-ubyte.gz" \
    "$data/train-labels-idx1-ubyte.gz" -o "$out/fmnist.rvs"
[ -s "$out/rgb224.rvs" ] || rv-decode -q --limit 1536 --channels 3 \
    "$data/train-images-idx3-ubyte.gz" "$data/train-labels-idx1-ubyte.gz" |
    rv-augment -q 'resize size=224' -o "$out/rgb224.rvs"

fifo=$out/pipe
ready=$out/ready
trap 'rm -f "$fifo" "$ready"' EXIT

# one INPUT READER: seconds from rv-batch's start to the reader's end;
# the reader's JSON line (if any) goes to $out/last.json
one() {
	local input=$1 reader=$2 pid t0 t1
	rm -f "$fifo" "$ready" "$out/last.json"
	mkfifo "$fifo"
	case $reader in
	cat) cat "$fifo" > /dev/null & : > "$ready" ;;
	rvstream) "$py" "$here/torch_reader.py" --ready "$ready" "$fifo" \
	    > "$out/last.json" & ;;
	float) "$py" "$here/torch_reader.py" --float --ready "$ready" "$fifo" \
	    > "$out/last.json" & ;;
	esac
	pid=$!
	while [ ! -e "$ready" ]; do sleep 0.05; done
	t0=$(date +%s.%N)
	rv-batch -q -b 256 "$input" > "$fifo"
	wait "$pid"
	t1=$(date +%s.%N)
	[ "$reader" = cat ] || t1=$(jfield - end < "$out/last.json")
	calc "$t1 - $t0"
}

printf '%-10s %-9s %8s %7s %11s %11s\n' shape reader "wall s" ratio \
    "read ms/b" "float ms/b"
for shape in fmnist rgb224; do
	base=
	for reader in cat rvstream float; do
		best=
		for _ in $(seq "$runs"); do
			s=$(one "$out/$shape.rvs" "$reader")
			if [ -z "$best" ] || ge "$best" "$s"; then
				best=$s
				[ -s "$out/last.json" ] && cp "$out/last.json" \
				    "$out/$shape-$reader.json"
			fi
		done
		[ "$reader" = cat ] && base=$best
		rms=- fms=-
		if [ "$reader" != cat ]; then
			IFS=$'\t' read -r nb rs fs < <(jfield - batches read_s \
			    float_s < "$out/$shape-$reader.json")
			rms=$(calc "1000 * $rs / $nb")
			[ "$reader" = float ] && fms=$(calc "1000 * $fs / $nb")
		fi
		printf '%-10s %-9s %8.3f %7.3f %11s %11s\n' "$shape" "$reader" \
		    "$best" "$(calc "$best / $base")" "$rms" "$fms"
	done
done | tee "$out/report.txt"
