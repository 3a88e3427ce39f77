#!/usr/bin/env bash
# Convolution backends: which library should the CPU trainer run its
# convolutions on?  Times the convolution layers of cnn-small, resnet20
# and one of resnet18 with oneDNN 2.6 (conv-backends.c, C API), with rv's
# im2col + OpenBLAS kernels (nn_kern.h, from librv.a) and with PyTorch 1.13
# (conv-torch.py: oneDNN through ideep, NCHW), all at BENCH_THREADS (2).
# Environment: BENCH_REPS (25), BENCH_WARMUP (3), BENCH_ROUNDS (2),
# BENCH_THREADS (2), RV_BUILD (build).  About 90 s on the 2-core VM (idle).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${RV_BUILD:-build}
out=$here/out/conv
py=/usr/bin/python3
reps=${BENCH_REPS:-25}
warm=${BENCH_WARMUP:-3}
rounds=${BENCH_ROUNDS:-2}
threads=${BENCH_THREADS:-2}

die() {
	echo "conv-backends.sh: $*" >&2
	exit 1
}

# The layers: NAME N CI H W CO K STRIDE PAD BIAS DX, then (this script
# only) the model and how many such convolutions it has.  DX 0: the
# layer reads the image, so a training step needs no input gradient.
# Shapes from the presets in lib/nn/nn_spec.c (convolutions there have no
# bias: batch norm follows each).  resnet20: every convolution shape of
# the preset (projection shortcuts, option B), so the per-model sum is
# its whole convolution work; resnet18: layer1's 3x3 (4 in the model),
# batch 32 at 224x224 input.
layers() {
	cat <<'EOF'
cnn.c1    128  1 28 28 32 3 1 1 0 0  cnn-small 1
cnn.c2    128 32 14 14 64 3 1 1 0 1  cnn-small 1
r20.c0    128  3 32 32 16 3 1 1 0 0  resnet20 1
r20.s1    128 16 32 32 16 3 1 1 0 1  resnet20 6
r20.d2    128 16 32 32 32 3 2 1 0 1  resnet20 1
r20.p2    128 16 32 32 32 1 2 0 0 1  resnet20 1
r20.s2    128 32 16 16 32 3 1 1 0 1  resnet20 5
r20.d3    128 32 16 16 64 3 2 1 0 1  resnet20 1
r20.p3    128 32 16 16 64 1 2 0 0 1  resnet20 1
r20.s3    128 64  8  8 64 3 1 1 0 1  resnet20 5
r18.l1     32 64 56 56 64 3 1 1 0 1  resnet18-l1 4
EOF
}

# --- set-up -----------------------------------------------------------------
[ -f /usr/include/dnnl.h ] ||
    die "no oneDNN headers: sudo apt-get install libdnnl-dev"
"$py" -c 'import torch' 2>/dev/null ||
    die "no torch for '$py': sudo apt-get install python3-torch"
make -s -C "$root" BUILD="$build" "$build/librv.a" >&2 ||
    die "'make $build/librv.a' failed: the library must build first"
nm "$root/$build/librv.a" 2>/dev/null | grep ' T rv_k_conv_fwd$' >/dev/null ||
    die "'$build/librv.a' has no rv_k_conv_fwd (lib/nn/nn_kern.c)"
mkdir -p "$out"
blas=/usr/lib/$(gcc -print-multiarch)/openblas-openmp
gcc -O2 -std=c17 -fopenmp -Wall -Wextra -D_POSIX_C_SOURCE=200809L \
    -I"$root/lib" -o "$out/conv-backends" "$here/conv-backends.c" \
    "$root/$build/librv.a" -ldnnl -lturbojpeg -ljpeg -lpng -larchive -lzstd \
    -lxxhash -lz -L"$blas" -Wl,-rpath,"$blas" -lopenblas -lpthread -lm ||
    die "cannot compile conv-backends.c against '$build/librv.a'"
# One OpenMP runtime for the three: oneDNN, OpenBLAS and the kernels.
mapfile -t omp < <(ldd "$out/conv-backends" |
    awk '/libgomp|libiomp|libomp|libdnnl|libopenblas/ { print $1, $3 }')
ngomp=$(printf '%s\n' "${omp[@]}" | grep -c '^libgomp' || true)
if [ "$ngomp" -ne 1 ] ||
    printf '%s\n' "${omp[@]}" | grep 'iomp\|libomp' >/dev/null; then
	die "expected one OpenMP runtime (libgomp), ldd says: ${omp[*]}"
fi
ldd "$(printf '%s\n' "${omp[@]}" | awk '/^libdnnl/ { print $2 }')" |
    grep libgomp >/dev/null || die "libdnnl is not the OpenMP build"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
layers | awk '{ NF = 11; print }' >"$tmp/layers"

echo "# conv-backends: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' \
    /proc/cpuinfo | head -1), load before the run" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
echo "# linked: ${omp[*]}"

# --- runs -------------------------------------------------------------------
# Rounds alternate the C side and torch; every time is the smallest of
# the rounds' medians (others' load only ever adds time).
run_c() {
	"$out/conv-backends" -r "$reps" -w "$warm" -t "$threads" \
	    "$tmp/layers" >>"$out/c.tsv" || die "conv-backends failed"
}
run_t() {
	"$py" "$here/conv-torch.py" -r "$reps" -w "$warm" -t "$threads" \
	    "$tmp/layers" >>"$out/torch.tsv" || die "conv-torch.py failed"
}
# CPU ticks: the machine's total and idle; this shell's waited children.
machine_ticks() {
	awk '/^cpu / { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $5 + $6 }' \
	    /proc/stat
}
child_ticks() {
	awk '{ print $16 + $17 }' "/proc/$$/stat"
}
: >"$out/c.tsv"
: >"$out/torch.tsv"
read -r total0 idle0 < <(machine_ticks)
ours0=$(child_ticks)
for ((i = 0; i < rounds; i++)); do
	if ((i % 2 == 0)); then
		run_c
		run_t
	else
		run_t
		run_c
	fi
done
read -r total1 idle1 < <(machine_ticks)
ours1=$(child_ticks)
grep -h '^#' "$out/c.tsv" "$out/torch.tsv" | sort -u
# Others' work during the runs, the figures' noise: busy ticks not ours.
awk -v t="$((total1 - total0))" -v i="$((idle1 - idle0))" \
    -v o="$((ours1 - ours0))" 'BEGIN {
	printf "# other processes used %.0f%% of the machine during the" \
	    " runs\n", (t > 0 ? 100 * (t - i - o) / t : 0) }'

# --- report -----------------------------------------------------------------
# One awk over the layer table, then the C and torch lines: per layer and
# pass ms (ours, oneDNN, oneDNN's reorders, torch), GFLOP/s and ratios.
layers | tr -s ' ' '\t' | awk -F'\t' -v reps="$reps" -v rounds="$rounds" '
function min(a, b) { return a == "" || b + 0 < a + 0 ? b + 0 : a }
function gf(macs, ms) { return ms > 0 ? 2 * macs / ms / 1e6 : 0 }
function ratio(a, b) { return b > 0 ? a / b : 0 }
function row(label, macs, o, d, r, t) {
	printf "%-19s %8.3f %8.3f %7.3f %8.3f %7.1f %7.1f %6.2fx %6.2fx\n",
	    label, o, d, r, t, gf(macs, o), gf(macs, d), ratio(o, d),
	    ratio(o, d + r)
}
FILENAME == "-" {
	name[++nl] = l = $1
	oh = int(($4 + 2 * $9 - $7) / $8) + 1
	ow = int(($5 + 2 * $9 - $7) / $8) + 1
	mac[l] = $2 * $6 * oh * ow * $3 * $7 * $7
	dx[l] = $11; model[l] = $12; count[l] = $13
	if (!(model[l] in seen)) {
		seen[model[l]] = 1
		models[++nm] = model[l]
	}
	next
}
$1 == "time" && FILENAME ~ /\/c\.tsv$/ {
	O[$2, $3] = min(O[$2, $3], $4)
	D[$2, $3] = min(D[$2, $3], $5)
	R[$2, $3] = min(R[$2, $3], $6)
	next
}
$1 == "time" { T[$2, $3] = min(T[$2, $3], $4); next }
$1 == "check" {
	if (!(($2, $3) in CK) || $4 + 0 > CK[$2, $3])
		CK[$2, $3] = $4 + 0
	REF[$2, $3] = $5
	next
}
$1 == "repro" {
	NO[$2] += !$3
	ND[$2] += !$4
	next
}
$1 == "info" && NF == 5 { IMPL[$2, $3] = $4 ": " $5; next }
$1 == "info" {
	if (!($3 in TB))
		tb = tb (tb == "" ? "" : ", ") $3
	TB[$3] = 1
	next
}
END {
	print ""
	print "# ms: medians of " reps " calls, best of " rounds " rounds;" \
	    " GF/s: 2 MACs / ms"
	print "# ours: im2col + OpenBLAS sgemm on CNHW (bwd_data: the" \
	    " backward call with"
	print "#   dx minus the one without); oneDNN: its own layouts, no" \
	    " reorders; reord:"
	print "#   the reorders from/to NCHW and OIHW that pass would add;" \
	    " torch: NCHW"
	print "#   tensors (ideep reorders included); x: oneDNN speed / ours" \
	    " (ours ms /"
	print "#   oneDNN ms); x+r: the same with the reorders.  step: fwd +" \
	    " bwd_weights"
	print "#   + bwd_data (when the layer needs dx); torch step: fwd +" \
	    " one backward call"
	print "#   for both gradients, as autograd makes it"
	printf "%-19s %8s %8s %7s %8s %7s %7s %7s %7s\n", "layer pass",
	    "ours", "oneDNN", "reord", "torch", "ours", "oneDNN", "x", "x+r"
	printf "%-19s %8s %8s %7s %8s %7s %7s\n", "", "ms", "ms", "ms", "ms",
	    "GF/s", "GF/s"
	np = split("fwd bwd_data bwd_weights", pass, " ")
	for (i = 1; i <= nl; i++) {
		l = name[i]
		if (!((l, "bwd") in O) || !((l, "step") in T)) {
			print "conv-backends.sh: no times for " l >"/dev/stderr"
			bad = 1
			continue
		}
		for (j = 1; j <= np; j++)
			row(sprintf("%-7s %s", l, pass[j]), mac[l],
			    O[l, pass[j]], D[l, pass[j]], R[l, pass[j]],
			    T[l, pass[j]])
		so = O[l, "fwd"] + (dx[l] ? O[l, "bwd"] : O[l, "bwd_weights"])
		sd = D[l, "fwd"] + D[l, "bwd_weights"]
		sr = R[l, "fwd"] + R[l, "bwd_weights"]
		if (dx[l]) {
			sd += D[l, "bwd_data"]
			sr += R[l, "bwd_data"]
		}
		st = T[l, "fwd"] + T[l, "bwd"]
		smac = mac[l] * (dx[l] ? 3 : 2)
		row(sprintf("%-7s %s", l, "step"), smac, so, sd, sr, st)
		m = model[l]
		SO[m] += count[l] * so; SD[m] += count[l] * sd
		SR[m] += count[l] * sr; ST[m] += count[l] * st
		SA[m] += count[l] * T[l, "step"]
		SM[m] += count[l] * smac
	}
	print ""
	print "# per model: the step rows times the number of such" \
	    " convolutions in the model"
	print "#   (resnet18-l1: its layer1 only); columns as above"
	for (i = 1; i <= nm; i++) {
		m = models[i]
		row(m " step", SM[m], SO[m], SD[m], SR[m], ST[m])
	}
	printf "#   torch through nn.Conv2d and autograd, fresh output and" \
	    " gradient\n#   tensors each step:"
	for (i = 1; i <= nm; i++)
		printf "%s %s %.3f ms", (i > 1 ? "," : ""), models[i],
		    SA[models[i]]
	printf "\n"
	print ""
	print "# agreement, ours against oneDNN: largest |difference| over" \
	    " the rounds"
	print "#   (in brackets the largest |value|); again: the same bits" \
	    " from one more"
	print "#   call of each pass, ours and oneDNN (yes/NO)"
	nt = split("y dx dw", t, " ")
	for (i = 1; i <= nl; i++) {
		l = name[i]
		printf "%-7s", l
		for (j = 1; j <= nt; j++)
			if ((l, t[j]) in CK)
				printf "  %-2s %-8.2g %-7s", t[j],
				    CK[l, t[j]], "(" sprintf("%.3g",
				    REF[l, t[j]]) ")"
		printf "  again %s %s\n", (NO[l] ? "NO" : "yes"),
		    (ND[l] ? "NO" : "yes")
	}
	print ""
	print "# oneDNN: implementation: layouts (torch convolution" \
	    " backend: " tb ")"
	for (i = 1; i <= nl; i++) {
		l = name[i]
		for (j = 1; j <= np; j++)
			printf "%-7s %-11s %s\n", (j == 1 ? l : ""), pass[j],
			    IMPL[l, pass[j]]
	}
	exit bad
}' - "$out/c.tsv" "$out/torch.tsv"
