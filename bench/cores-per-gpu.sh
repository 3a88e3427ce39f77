#!/usr/bin/env bash
# Cores per GPU: how many CPU cores each data pipeline needs to keep one
# GPU fed, from the CPU cost per image measured here and a GPU's training
# rate (cited below), for the ImageNet recipe (random-resized crop to 224,
# flip, RandAugment n=2 m=9) on JPEGs of ImageNet's size (bench/photos.sh's
# inet set: 300 files, longer side 500).
#
# Measured in one run, each pipeline on one thread per program, its output
# collated into batches of 256 (stored frames, --level 0, as rv-batch
# writes them into a pipe to a trainer) and thrown away, timed whole by
# /usr/bin/time (user + system CPU of every process: start-up, reads,
# decode, augmentation, streams, collation), once per seed:
#   torchvision      the PIL loop of bench/tv_augment.py: Image.open +
#                    convert('RGB') per file, the same transforms as a
#                    torchvision Compose, torch.manual_seed(seed); what a
#                    DataLoader worker does per image (its loop only; no
#                    collation, no worker start-up: a lower bound)
#   rv               rv-decode --encoded | rv-augment | rv-batch -b 256,
#                    the default pipeline, fresh augmentation every epoch
#   rv-refurbish r   rv-decode --encoded -o FILE, then rv-refurbish --reuse
#                    r | rv-batch -b 256 over FILE: partial 'rrc size=224;
#                    randaugment n=2 m=9', final 'flip' (bench/refurbish.sh's
#                    split), for r = 1, 2, 3, 4
# The rv pipelines run EPOCHS epochs (default 12, a multiple of every r, so
# that each run computes N + (E-1) N / r partials: the first epoch's
# misses are in the cost, as in a real run of E epochs); torchvision runs
# TV_PASSES passes over the files.  Images per core-second = images / CPU
# seconds.  Printed per pipeline: the median over the seeds and the
# minimum-maximum, then the table: cores per GPU = the GPU's images per
# second / the pipeline's images per core-second, from the median (the
# range from the extremes).  GPU rates: ResNet-50 v1.5 training
# throughput on one GPU, NVIDIA DeepLearningExamples,
# PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "Training
# performance results" (pytorch-21.03 NGC container, DALI input):
#   V100 16GB FP32 367 img/s, mixed precision 1200; A100 80GB TF32 938,
#   mixed precision 2470.
# It assumes what the cores of this machine do per second is what the
# cores next to the GPU do, and that the pipelines scale with cores (one
# process per core, as rv-augment -j and DataLoader workers do).
#
# Environment: RV_BUILD (build dir, default build: made with `make -s`
# first), BENCH_SEEDS (default "0 1 2 3 4"), BENCH_EPOCHS (default 12),
# BENCH_TV_PASSES (default 3), BENCH_GPUS (the rates, "NAME=IMG_PER_S"
# items separated by commas, default the four above).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/out
build=${RV_BUILD:-build}
case $build in
/*) bin=$build/bin ;;
*) bin=$root/$build/bin ;;
esac
read -r -a seeds <<<"${BENCH_SEEDS:-0 1 2 3 4}"
epochs=${BENCH_EPOCHS:-12}
tv_passes=${BENCH_TV_PASSES:-3}
gpus=${BENCH_GPUS:-V100 FP32=367,V100 mixed=1200,A100 TF32=938,A100 mixed=2470}
py=/usr/bin/python3	# the only interpreter with torch and torchvision
spec='rrc size=224; flip; randaugment n=2 m=9 interp=bilinear'
tvspec='T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9, interpolation=I.BILINEAR)])'
partial='rrc size=224; randaugment n=2 m=9 interp=bilinear'
final='flip'
unset RV_LEVEL

die() {
	echo "cores-per-gpu.sh: $*" >&2
	exit 1
}
# shellcheck source=scripts/seeds.bash
. "$root/scripts/seeds.bash"	# seeds_check

for v in epochs tv_passes; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "'${!v}': not a positive integer"
done
msg=$(seeds_check BENCH_SEEDS "${seeds[@]}") || die "$msg"
for r in 2 3 4; do
	((epochs % r == 0)) || echo "cores-per-gpu.sh: note: $epochs epochs" \
	    "are not a multiple of reuse $r" >&2
done
bash "$here/photos.sh" "$out/photos"
inet=$out/photos/inet
if [ "$build" = build ]; then
	make -s -C "$root" all >&2 ||
	    die "'make' failed: the programs must build first"
fi
for p in rv-decode rv-augment rv-refurbish rv-batch; do
	[ -x "$bin/$p" ] || die "'$bin/$p' is missing: run 'make' first"
done
"$py" -c 'import torchvision' 2>/dev/null ||
    die "no torchvision for '$py': sudo apt-get install python3-torchvision python3-pil"
mapfile -t files < <(find "$inet" -name '*.jpg' | sort)
n=${#files[@]}
[ "$n" -gt 0 ] || die "'$inet': no JPEG files"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# timed EXPECT CMD: run the shell command CMD, timed whole; its standard
# error must hold EXPECT.  Sets CPU (user + system seconds).
timed() {
	local expect=$1 cmd=$2 u s
	/usr/bin/time -f '%U %S' -o "$tmp/time" bash -c "$cmd" 2>"$tmp/err" ||
	    { sed 's/^/    /' "$tmp/err" >&2; die "failed: $cmd"; }
	grep -qF "$expect" "$tmp/err" ||
	    { sed 's/^/    /' "$tmp/err" >&2; die "'$expect' not in the output of: $cmd"; }
	read -r u s <"$tmp/time"
	CPU=$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')
}

echo "# cores per GPU: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' \
    /proc/cpuinfo | head -1)"
echo "# load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# the ImageNet recipe on $n JPEGs ($inet), seeds ${seeds[*]};"
echo "#   rv: $epochs epochs, torchvision: $tv_passes passes; one thread per program"
echo
printf '%-20s %5s %8s %8s %10s\n' pipeline seed images "CPU s" img/core-s
# RATE[key] holds the seeds' images per core-second, space-separated.
declare -A RATE
keys=(torchvision rv "rv-refurbish r=1" "rv-refurbish r=2" "rv-refurbish r=3" "rv-refurbish r=4")
row() {	# row KEY SEED IMAGES CPU
	local x
	x=$(awk -v i="$3" -v c="$4" 'BEGIN { printf "%.1f", i / c }')
	RATE[$1]="${RATE[$1]:-}${RATE[$1]:+ }$x"
	printf '%-20s %5s %8d %8.2f %10.1f\n' "$1" "$2" "$3" "$4" "$x"
}
# A warm-up, not timed: one pass of each kind.  Without it the first
# seed's figures came out 10-25% low on every row (the VM settling after
# earlier work).
"$py" "$here/tv_augment.py" pipeline --passes 1 --transform "$tvspec" \
    "${files[@]}" >/dev/null || die "tv_augment.py pipeline failed"
timed "rv-batch: $((n * 2)) samples in" \
    "'$bin/rv-decode' -q -j1 --encoded --epochs 2 '$inet' |
    '$bin/rv-augment' -q -j1 '$spec' |
    '$bin/rv-batch' -q -v --level 0 -b 256 >/dev/null"
for s in "${seeds[@]}"; do
	line=$("$py" "$here/tv_augment.py" pipeline --seed "$s" \
	    --passes "$tv_passes" --transform "$tvspec" "${files[@]}") ||
	    die "tv_augment.py pipeline failed"
	imgs=$(sed -n 's/.*images=\([0-9]*\).*/\1/p' <<<"$line")
	cpu=$(sed -n 's/.*cpu=\([0-9.]*\).*/\1/p' <<<"$line")
	[ "$imgs" = $((n * tv_passes)) ] || die "tv_augment.py: '$line'"
	row torchvision "$s" "$imgs" "$cpu"

	images=$((n * epochs))
	timed "rv-batch: $images samples in" \
	    "'$bin/rv-decode' -q -j1 --encoded --epochs $epochs --shuffle --seed $s '$inet' |
	    '$bin/rv-augment' -q -j1 --seed $s '$spec' |
	    '$bin/rv-batch' -q -v --level 0 -b 256 >/dev/null"
	row rv "$s" "$images" "$CPU"

	for r in 1 2 3 4; do
		timed "rv-batch: $images samples in" \
		    "'$bin/rv-decode' -q -j1 --encoded '$inet' -o '$tmp/enc.rvs' &&
		    '$bin/rv-refurbish' -q -j1 --seed $s --partial '$partial' \
			--final '$final' --reuse $r --epochs $epochs --batch 256 \
			'$tmp/enc.rvs' |
		    '$bin/rv-batch' -q -v --level 0 -b 256 >/dev/null"
		row "rv-refurbish r=$r" "$s" "$images" "$CPU"
	done
done

# The median and range of each pipeline's rates, then the table.
stats() {	# stats KEY: median min max of its rates
	tr ' ' '\n' <<<"${RATE[$1]}" | sort -g | awk '
	{ v[NR] = $1 }
	END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		print m, v[1], v[NR]
	}'
}
IFS=, read -r -a gpu <<<"$gpus"
echo
echo "# images per core-second over the seeds: median [min-max]; x: against torchvision's median"
printf '%-20s %22s %7s\n' pipeline img/core-s x
read -r tvm _ _ < <(stats torchvision)
for k in "${keys[@]}"; do
	read -r m lo hi < <(stats "$k")
	printf '%-20s %7.1f [%6.1f-%6.1f] %6.2fx\n' "$k" "$m" "$lo" "$hi" \
	    "$(awk -v a="$m" -v b="$tvm" 'BEGIN { print a / b }')"
done
echo
echo "# cores per GPU to keep it fed: the GPU's ResNet-50 training rate / the"
echo "# pipeline's images per core-second (median [from the fastest seed - the slowest])"
printf '| pipeline |'
for g in "${gpu[@]}"; do
	printf ' %s (%s img/s) |' "${g%%=*}" "${g#*=}"
done
printf '\n|---|'
for g in "${gpu[@]}"; do printf -- '--:|'; done
printf '\n'
for k in "${keys[@]}"; do
	read -r m lo hi < <(stats "$k")
	printf '| %s |' "$k"
	for g in "${gpu[@]}"; do
		awk -v g="${g#*=}" -v m="$m" -v lo="$lo" -v hi="$hi" 'BEGIN {
			printf " %.1f [%.1f-%.1f] |", g / m, g / hi, g / lo }'
	done
	printf '\n'
done
echo
echo "# spec: '$spec'; torchvision: $tvspec"
echo "# refurbish: partial '$partial', final '$final'"
