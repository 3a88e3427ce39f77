#!/usr/bin/env bash
# Augmentation benchmark: rv's ops against torchvision 0.14 on PIL images
# (Pillow 9.4), on the ImageNet-like photo set of bench/photos.sh, all
# measured in the same run:
#   1. every registered op at 224x224x3: CPU us per call, rv_spec_apply
#      (bench/augment_ops.c) against torchvision (bench/tv_augment.py);
#   2. recipes, images per CPU second from decoded images in memory;
#   3. whole programs, the ImageNet recipe from the files: rv's default
#      pipeline (rv-decode --encoded | rv-augment) at -j1 against a PIL +
#      torchvision loop that decodes each file and applies the same
#      transforms (per core), and at -j2 into rv-batch against a
#      DataLoader with 2 workers (wall).
# The case table below is what both sides run: same ops, same arguments,
# same images.  Targets: every op >= 2x torchvision, the ImageNet recipe
# >= 3x (per core); from files, the default pipeline >= 5x the PIL loop
# per core and >= 3x the DataLoader's wall images/s at -j2; a miss prints
# MISSED but does not fail the run.
#
# Environment: RV_BUILD (build dir, default build: made with `make -s`
# first), BENCH_ROUNDS (rounds of both sides, alternating, default 3),
# BENCH_REPEAT (repeats per case per round, default 2: the figures are
# medians of ROUNDS x REPEAT), BENCH_OP_MS (CPU ms per repeat of an op,
# default 25), BENCH_EPOCHS (epochs of the 300-file set per program run,
# default 4), BENCH_PARTS (the parts to run, default 123).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/out
build=${RV_BUILD:-build}
bin=$root/$build/bin
rounds=${BENCH_ROUNDS:-3}
repeat=${BENCH_REPEAT:-2}
op_ms=${BENCH_OP_MS:-25}
epochs=${BENCH_EPOCHS:-4}
parts=${BENCH_PARTS:-123}
py=/usr/bin/python3	# the only interpreter with torch and torchvision
# What a user gets: the stream level picked for a pipe, not the shell's.
unset RV_LEVEL

die() {
	echo "augment.sh: $*" >&2
	exit 1
}

# The cases: GROUP|NAME|INPUT|RV SPEC|TORCHVISION CALLABLE (a Python
# expression; T, F, I = InterpolationMode, math in scope).  INPUT: full
# (the ~500x375 decoded images) or N (resized, centre-cropped to N x N);
# a trailing t hands torchvision a u8 CHW tensor (RandomErasing has no PIL
# path).  identity: RandAugment's own identity (its op dispatch).  Arguments are RandAugment's at m=9 where it has the op (shear
# 0.09, translate 30 px, rotate 9 deg, enhance 1.27, posterize 7 bits,
# solarize 178.5); random ops run with their randomness on.  Every op of
# rv_ops() must have an op row: augment_ops reports any that has none.
cases() {
	cat <<'EOF'
op|shear_x|224|shear_x v=0.09 interp=bilinear|lambda im: F.affine(im, 0.0, [0, 0], 1.0, [math.degrees(math.atan(0.09)), 0.0], I.BILINEAR, center=[0, 0])
op|shear_x/nearest|224|shear_x v=0.09|lambda im: F.affine(im, 0.0, [0, 0], 1.0, [math.degrees(math.atan(0.09)), 0.0], I.NEAREST, center=[0, 0])
op|shear_y|224|shear_y v=0.09 interp=bilinear|lambda im: F.affine(im, 0.0, [0, 0], 1.0, [0.0, math.degrees(math.atan(0.09))], I.BILINEAR, center=[0, 0])
op|shear_y/nearest|224|shear_y v=0.09|lambda im: F.affine(im, 0.0, [0, 0], 1.0, [0.0, math.degrees(math.atan(0.09))], I.NEAREST, center=[0, 0])
op|translate_x|224|translate_x px=30|lambda im: F.affine(im, 0.0, [30, 0], 1.0, [0.0, 0.0], I.NEAREST, center=[0, 0])
op|translate_y|224|translate_y px=30|lambda im: F.affine(im, 0.0, [0, 30], 1.0, [0.0, 0.0], I.NEAREST, center=[0, 0])
op|rotate|224|rotate deg=9 interp=bilinear|lambda im: F.rotate(im, 9.0, I.BILINEAR)
op|rotate/nearest|224|rotate deg=9|lambda im: F.rotate(im, 9.0, I.NEAREST)
op|resize|full|resize size=224|lambda im: F.resize(im, 224, I.BILINEAR)
op|resize/bicubic|full|resize size=224 interp=bicubic|lambda im: F.resize(im, 224, I.BICUBIC)
op|center_crop|full|center_crop size=224|lambda im: F.center_crop(im, 224)
op|crop|224|crop top=16 left=16 height=192 width=192|lambda im: F.crop(im, 16, 16, 192, 192)
op|resized_crop|full|resized_crop top=40 left=60 height=280 width=300 size=224|lambda im: F.resized_crop(im, 40, 60, 280, 300, [224, 224], I.BILINEAR)
op|rrc|full|rrc size=224|T.RandomResizedCrop(224)
op|random_crop|224|random_crop size=224 padding=16|T.RandomCrop(224, padding=16)
op|flip|224|flip|T.RandomHorizontalFlip()
op|vflip|224|vflip|T.RandomVerticalFlip()
op|brightness|224|brightness f=1.27|lambda im: F.adjust_brightness(im, 1.27)
op|color|224|color f=1.27|lambda im: F.adjust_saturation(im, 1.27)
op|contrast|224|contrast f=1.27|lambda im: F.adjust_contrast(im, 1.27)
op|sharpness|224|sharpness f=1.27|lambda im: F.adjust_sharpness(im, 1.27)
op|posterize|224|posterize bits=7|lambda im: F.posterize(im, 7)
op|solarize|224|solarize threshold=178.5|lambda im: F.solarize(im, 178.5)
op|autocontrast|224|autocontrast|F.autocontrast
op|equalize|224|equalize|F.equalize
op|invert|224|invert|F.invert
op|hue|224|hue f=0.1|lambda im: F.adjust_hue(im, 0.1)
op|grayscale|224|grayscale|lambda im: F.rgb_to_grayscale(im, 3)
op|jitter|224|jitter brightness=0.4 contrast=0.4 saturation=0.4 hue=0.1|T.ColorJitter(0.4, 0.4, 0.4, 0.1)
op|erase|224t|erase|T.RandomErasing()
op|identity|224|identity|lambda im: T.autoaugment._apply_op(im, "Identity", 0.0, I.NEAREST, None)
op|randaugment|224|randaugment n=2 m=9 interp=bilinear|T.RandAugment(2, 9, interpolation=I.BILINEAR)
op|trivialaugment|224|trivialaugment|T.TrivialAugmentWide()
recipe|imagenet|full|rrc size=224; flip; randaugment n=2 m=9 interp=bilinear|T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9, interpolation=I.BILINEAR)])
recipe|imagenet eval|full|resize size=256; center_crop size=224|T.Compose([T.Resize(256), T.CenterCrop(224)])
recipe|cifar|32|random_crop size=32 padding=4; flip|T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip()])
EOF
}

# --- set-up -----------------------------------------------------------------
bash "$here/photos.sh" "$out/photos"
inet=$out/photos/inet
if [ "$build" = build ]; then
	make -s -C "$root" all >&2 ||
	    die "'make' failed: the library and programs must build first"
fi
[ -f "$root/$build/librv.a" ] ||
    die "'$root/$build/librv.a' is missing: run 'make' first"
for p in rv-decode rv-augment; do
	[ -x "$bin/$p" ] || die "'$bin/$p' is missing: run 'make' first"
done
if [ ! -x /usr/bin/time ]; then
	[ "$(id -u)" -eq 0 ] ||
	    die "/usr/bin/time is missing: install it with 'sudo apt-get install time'"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >&2
fi
if ! "$py" -c 'import torchvision, PIL' 2>/dev/null; then
	[ "$(id -u)" -eq 0 ] ||
	    die "no torchvision for '$py': sudo apt-get install python3-torchvision python3-pil"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	    python3-torchvision python3-pil >&2
fi
mkdir -p "$out"
cc -std=c17 -O2 -Wall -D_POSIX_C_SOURCE=200809L -I"$root/lib" \
    -o "$out/augment_ops" "$here/augment_ops.c" "$root/$build/librv.a" \
    -lturbojpeg -ljpeg -lpng -lwebpdemux -lwebp -lgif -ltiff -larchive -lzstd \
    -lxxhash -lz -lpthread -lm ||
    die "cannot compile augment_ops.c against '$build/librv.a'"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cases | tr '|' '\t' >"$tmp/cases"
# The op and recipe pool: 4 photos of each of the 12 classes.
mapfile -t pool < <(find "$inet" -name '0[0-3].jpg' -type f | sort)
mapfile -t all < <(find "$inet" -name '*.jpg' -type f | sort)
status=0

# ratio A B: A / B to 2 decimals.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'
}

# verdict R TARGET: met or MISSED.
verdict() {
	if awk -v r="$1" -v t="$2" 'BEGIN { exit !(r >= t) }'; then
		echo met
	else
		echo MISSED
	fi
}

echo "# augment benchmark: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' \
    /proc/cpuinfo | head -1)"
echo "# load before the run: $(cut -d' ' -f1-3 /proc/loadavg) (others'" \
    "work shows in wall figures, much less in CPU ones)"
echo "# rv: $build/librv.a; torchvision $("$py" -c \
    'import torchvision, PIL; print(torchvision.__version__, "on Pillow", PIL.__version__)'),"
echo "#   torch.set_num_threads(1); both sides one thread, same images"

# --- 1 and 2: ops and recipes, images in memory -----------------------------
if [[ $parts == *[12]* ]]; then
# Rounds alternate the sides (rv first, then torchvision first, ...), so
# both see the same mix of the machine's other load.
run_ops_rv() {
	"$out/augment_ops" -r "$repeat" -t "$op_ms" "$tmp/cases" "${pool[@]}" \
	    >>"$tmp/rv" || die "augment_ops failed"
}
run_ops_tv() {
	"$py" "$here/tv_augment.py" ops -r "$repeat" -t "$op_ms" "$tmp/cases" \
	    "${pool[@]}" >>"$tmp/tv" || die "tv_augment.py failed"
}
: >"$tmp/rv"
: >"$tmp/tv"
for ((i = 0; i < rounds; i++)); do
	if ((i % 2 == 0)); then
		run_ops_rv
		run_ops_tv
	else
		run_ops_tv
		run_ops_rv
	fi
done

# medians FILE: NAME, then the medians of columns 4, 5 and 6 (CPU us, wall
# us, copy us) over every line of that name (all rounds and repeats).
medians() {
	local col
	for col in 4 5 6; do
		grep -E '^(op|recipe)'$'\t' "$1" | sort -t $'\t' -k2,2 -k"$col","$col"g |
		    awk -F'\t' -v c="$col" '
		function out(  m) {
			m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
			printf "%s\t%.3f\n", name, m
		}
		$2 != name { if (n) out(); name = $2; n = 0 }
		{ v[++n] = $c }
		END { if (n) out() }' >"$1.$col"
	done
	join -t $'\t' "$1.4" "$1.5" | join -t $'\t' - "$1.6"
}

declare -A RV RVW TV TVW
while IFS=$'\t' read -r name us wus _; do
	RV[$name]=$us RVW[$name]=$wus
done < <(medians "$tmp/rv")
while IFS=$'\t' read -r name us wus _; do
	TV[$name]=$us TVW[$name]=$wus
done < <(medians "$tmp/tv")
mapfile -t nocase < <(awk -F'\t' '$1 == "nocase" { print $2 }' "$tmp/rv" |
    sort -u)
for name in "${nocase[@]}"; do
	echo "augment.sh: op '$name' has no case in augment.sh" >&2
	status=1
done
# The copy subtracted, for the header: the median over one input's rows.
copy_us() {
	awk -F'\t' -v i="$1" '$1 == "op" && $3 == i { print $6 }' "$tmp/rv" |
	    sort -g | awk '{ v[++n] = $1 } END {
		if (n) printf "%.1f", n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}

echo
echo "# 1. per op: CPU us per call, median of $rounds rounds x $repeat repeats" \
    "of ~$op_ms ms; input"
echo "#    224x224x3 unless 'full' (the decoded ~500x375 photos); rv:"
echo "#    rv_spec_apply minus the copy of the input into the working image"
echo "#    (224: $(copy_us 224) us, full: $(copy_us full) us); torchvision on" \
    "PIL (erase: RandomErasing"
echo "#    on a u8 CHW tensor)"
printf '%-16s %-6s %9s %9s %8s  %s\n' op input rv_us tv_us tv/rv \
    "target >= 2x"
met=0 missed=0
while IFS=$'\t' read -r g name input _; do
	[ "$g" = op ] || continue
	# Below the timer's resolution, rv counts as 0.01 us.
	r=$(ratio "${TV[$name]}" "$(awk -v v="${RV[$name]}" \
	    'BEGIN { print (v < 0.01 ? 0.01 : v) }')")
	v=$(verdict "$r" 2)
	if [ "$v" = met ]; then met=$((met + 1)); else missed=$((missed + 1)); fi
	printf '%-16s %-6s %9.2f %9.2f %7sx  %s\n' "$name" "$input" \
	    "${RV[$name]}" "${TV[$name]}" "$r" "$v"
done <"$tmp/cases"
for name in "${nocase[@]}"; do
	printf '%-16s %-6s %9s %9s %8s  %s\n' "$name" - - - - "NO CASE (add one)"
done
echo "# ops: $met met, $missed MISSED the 2x target"

echo
echo "# 2. recipes: images/s from decoded images in memory (decode excluded"
echo "#    on both sides); rv includes copying the input into its working"
echo "#    image; img/cpu-s is per core (the target basis).  imagenet and eval:"
echo "#    the 48 decoded photos (~500x375); cifar: the same photos resized"
echo "#    (shorter side) and centre-cropped to 32x32 by rv / by torchvision"
printf '%-14s %10s %11s %10s %11s %9s  %s\n' recipe rv_img/s rv_img/cpu-s \
    tv_img/s tv_img/cpu-s rv/tv target
while IFS=$'\t' read -r g name _; do
	[ "$g" = recipe ] || continue
	r=$(ratio "${TV[$name]}" "${RV[$name]}")
	v=-
	if [ "$name" = imagenet ]; then
		v="$(verdict "$r" 3) (>= 3x)"
	fi
	printf '%-14s %10.0f %11.0f %10.0f %11.0f %8sx  %s\n' "$name" \
	    "$(ratio 1000000 "${RVW[$name]}")" \
	    "$(ratio 1000000 "${RV[$name]}")" \
	    "$(ratio 1000000 "${TVW[$name]}")" \
	    "$(ratio 1000000 "${TV[$name]}")" "$r" "$v"
done <"$tmp/cases"
printf '%s\n' "#    specs (torchvision: the matching Compose):"
while IFS=$'\t' read -r g name _ spec _; do
	if [ "$g" = recipe ]; then
		printf '#    %-13s %s\n' "$name" "$spec"
	fi
done <"$tmp/cases"

fi	# parts 1 and 2

# --- 3: whole programs ------------------------------------------------------
[[ $parts == *3* ]] || exit "$status"
# Results keyed by run: images/s (wall) and images per CPU second.
declare -A PRATE PCORE
n_all=${#all[@]}
images=$((n_all * epochs))
imagenet_spec=$(awk -F'\t' '$2 == "imagenet" { print $4 }' "$tmp/cases")
imagenet_tv=$(awk -F'\t' '$2 == "imagenet" { print $5 }' "$tmp/cases")

keep_best() {
	local key=$1 rate=$2 core=$3
	if [ -z "${PRATE[$key]:-}" ] || awk -v a="$rate" \
	    -v b="${PRATE[$key]}" 'BEGIN { exit !(a > b) }'; then
		PRATE[$key]=$rate
		PCORE[$key]=$core
	fi
}

# run_rv KEY EXPECT CMD: a shell pipeline, timed whole by /usr/bin/time
# (the CPU of every process in it); EXPECT is the summary line that
# rv-augment -v (or rv-decode -v) must print.
run_rv() {
	local key=$1 expect=$2 cmd=$3 i e u s
	for ((i = 0; i < 2; i++)); do
		if ! /usr/bin/time -f '%e %U %S' -o "$tmp/time" \
		    bash -c "$cmd" 2>"$tmp/err"; then
			echo "augment.sh: '$key' failed:" >&2
			sed 's/^/    /' "$tmp/err" >&2
			status=1
			return 0
		fi
		if ! grep -q "$expect" "$tmp/err"; then
			echo "augment.sh: '$key': expected '$expect' in:" >&2
			sed 's/^/    /' "$tmp/err" >&2
			status=1
			return 0
		fi
		read -r e u s <"$tmp/time"
		keep_best "$key" "$(ratio "$images" "$e")" \
		    "$(ratio "$images" "$(awk -v u="$u" -v s="$s" \
		    'BEGIN { print u + s }')")"
	done
}

# run_py KEY [TRANSFORM [MODE]]: the PIL loop (MODE pipeline, the
# default) or a DataLoader with 2 workers (MODE loader); their own figures.
run_py() {
	local key=$1 tf=${2:-} mode=${3:-pipeline} i line n sec cpu
	for ((i = 0; i < 2; i++)); do
		line=$("$py" "$here/tv_augment.py" "$mode" --passes "$epochs" \
		    ${tf:+--transform "$tf"} "${all[@]}") ||
		    die "tv_augment.py $mode failed"
		n=$(sed -n 's/.*images=\([0-9]*\).*/\1/p' <<<"$line")
		sec=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$line")
		cpu=$(sed -n 's/.*cpu=\([0-9.]*\).*/\1/p' <<<"$line")
		keep_best "$key" "$(ratio "$n" "$sec")" "$(ratio "$n" "$cpu")"
	done
}

prow() {
	printf '%-44s %7s %9.1f %11.1f\n' "$1" "$images" "${PRATE[$1]}" \
	    "${PCORE[$1]}"
}

rvd="'$bin/rv-decode' -q -v -j1 --epochs $epochs '$inet'"
rva="'$bin/rv-augment' -q -v -j1 '$imagenet_spec' >/dev/null"
rva2="'$bin/rv-augment' -q -v -j2 '$imagenet_spec' | '$bin/rv-batch' -q -b 256 >/dev/null"
echo
echo "# 3. whole programs, the ImageNet recipe from $n_all files x $epochs epochs,"
echo "#    best of 2.  rv timed whole (start-up, reads, decode, stream in and"
echo "#    out; CPU of every process); the PIL loop for its loop only"
echo "#    (Image.open(path).convert('RGB') per file, as ImageFolder, then the"
echo "#    transforms; one process, imports not timed); the DataLoader from"
echo "#    its first iterator, worker start-up included, CPU of the workers"
echo "#    and the main process.  img/cpu-s is per core."
echo "#    default: rv-decode --encoded | rv-augment, the pipeline the"
echo "#    README, the man pages and rv-decode --help give for JPEGs"
printf '%-44s %7s %9s %11s\n' run images img/s img/cpu-s
run_rv "default, -j1" "rv-augment: $images samples ($images decoded" \
    "$rvd --encoded | $rva"
prow "default, -j1"
run_rv "pixels: rv-decode | rv-augment, -j1" \
    "rv-augment: $images samples (0 decoded)" "$rvd | $rva"
prow "pixels: rv-decode | rv-augment, -j1"
run_py "PIL decode + torchvision" "$imagenet_tv"
prow "PIL decode + torchvision"
run_rv "default, rv-augment -j2 | rv-batch -b 256" \
    "rv-augment: $images samples ($images decoded" "$rvd --encoded | $rva2"
prow "default, rv-augment -j2 | rv-batch -b 256"
run_py "DataLoader, 2 workers, batch 256" "$imagenet_tv" loader
prow "DataLoader, 2 workers, batch 256"
run_rv "rv-decode alone (context)" "rv-decode: $images samples" \
    "$rvd >/dev/null"
prow "rv-decode alone (context)"
run_py "PIL decode alone (context)"
prow "PIL decode alone (context)"
echo "#    spec: $imagenet_spec"
tv="PIL decode + torchvision"
dl="DataLoader, 2 workers, batch 256"
# cmp A B TARGET FIELD: A / B of PCORE (core) or PRATE (wall), with verdict.
cmp() {
	local a=$1 b=$2 target=$3 field=$4 r
	if [ "$field" = core ]; then
		[ -n "${PCORE[$a]:-}" ] && [ -n "${PCORE[$b]:-}" ] || return 0
		r=$(ratio "${PCORE[$a]}" "${PCORE[$b]}")
	else
		[ -n "${PRATE[$a]:-}" ] && [ -n "${PRATE[$b]:-}" ] || return 0
		r=$(ratio "${PRATE[$a]}" "${PRATE[$b]}")
	fi
	printf '  %-62s = %5sx %s' "$a / $b" "$r" "$field"
	if [ -n "$target" ]; then
		printf '   (target %sx: %s)' "$target" "$(verdict "$r" "$target")"
	fi
	printf '\n'
}
cmp "default, -j1" "$tv" 5 core
cmp "pixels: rv-decode | rv-augment, -j1" "$tv" "" core
cmp "default, rv-augment -j2 | rv-batch -b 256" "$dl" 3 wall
cmp "default, rv-augment -j2 | rv-batch -b 256" "$dl" "" core
exit "$status"
