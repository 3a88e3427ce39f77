#!/usr/bin/env bash
# Where refurbishing pays (issue 19): a training job whose data preparation
# costs as much CPU as its training, or more, so that the trainer waits for
# input.  The data: "Fashion-MNIST on photographs" (fmnist_photos.py), each
# garment tinted and laid on a 480x360 crop of Debian's mate-backgrounds
# photographs, stored as JPEG (quality 90, about ImageNet's average size);
# ten classes.  The recipe: ImageNet's, to 64 px, `rrc size=64
# scale=0.25,1; flip; randaugment n=2 m=9`, decoded from the JPEG files
# every epoch; the model a small CNN (three conv stages) that trains
# about 1.3 times as fast as one core prepares its data.  One core prepares
# the data (-j 1), the trainer has the other (-j 1): the CPU stands in for
# a machine's cores beside its GPU.
#
# Runs, each to the highest target or the last epoch, with the same model,
# optimiser, cosine schedule, batch size and seed:
#   standard     rv-decode --encoded | rv-augment SPEC      (every epoch)
#   refurbish-R  rv-refurbish --partial 'rrc; randaugment' --final flip
#                --reuse R, R from REGIME_REUSE (default 2 and 3)
#   shrink       standard's data | rv-score (assistant, floor 0.3, the
#                trainer's feedback through a FIFO), as pipelines/shrink.sh
#   both         refurbish at the largest R | rv-score --budget 0.5 (half
#                of every 256 kept after the first epoch), as
#                pipelines/refurbish-shrink.sh
# then | rv-batch -b 128 | rv-train-gpu.  Every stage runs under
# /usr/bin/time, so the tables give the CPU seconds of the data stage
# (decode and augmentation, or rv-refurbish), of rv-score and rv-batch,
# and of the trainer, to the target (or to the end where it was missed).
#
# It prints and writes to out/regime/results.md the tables of
# pipelines/experiment.sh (scripts/seeds.bash): per target, grads and
# wall time to it over the seeds, mean +- sd, and per seed against
# standard; data wait; accuracy at equal grads and at equal wall time;
# then the CPU seconds per stage and the data stage's share of them.  A
# dagger marks a difference beyond the seed-to-seed spread.
#
# Builds nothing: expects `make` to have built the programs; builds the
# image set (bench/photos.sh, then fmnist_photos.py with /usr/bin/python3,
# Debian's python3-pil and python3-numpy) once, into out/regime/data.
# Environment: RV_BUILD (build dir, default build), REGIME_SEEDS (default
# "0 1 2"), REGIME_TARGET (test accuracies; the runs stop at the highest;
# default "0.55 0.60"), REGIME_EPOCHS (the most epochs and the cosine
# schedule's length, default 12), REGIME_TRAIN and REGIME_TEST (images,
# default 20000 and 2000), REGIME_EVAL_EVERY (also evaluate every N
# steps; default 0, epoch ends only: an evaluation stops the trainer, not
# the data stage, so frequent ones would hide the very waits measured
# here), REGIME_REUSE (default "2 3"),
# REGIME_RUNS (default "standard refurbish-R... shrink both"),
# REGIME_PHOTOS (the background photographs' directory, default
# photos.sh's full/nature), REGIME_OUT (default bench/out/regime).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${REGIME_OUT:-$here/out/regime}
build=${RV_BUILD:-build}
case $build in
/*) bin=$build/bin ;;
*) bin=$root/$build/bin ;;
esac
read -r -a seeds <<<"${REGIME_SEEDS:-0 1 2}"
read -r -a targets <<<"${REGIME_TARGET:-0.55 0.60}"
epochs=${REGIME_EPOCHS:-12}
ntrain=${REGIME_TRAIN:-20000}
ntest=${REGIME_TEST:-2000}
eval_every=${REGIME_EVAL_EVERY:-0}
read -r -a reuses <<<"${REGIME_REUSE:-2 3}"
photos=${REGIME_PHOTOS:-}
spec='rrc size=64 scale=0.25,1; flip; randaugment n=2 m=9'
partial='rrc size=64 scale=0.25,1; randaugment n=2 m=9'
final=flip
evalspec='resize size=73; center_crop size=64'
model='conv 16 k=3 stride=2 pad=1; bn; relu; maxpool 2; conv 32 k=3 pad=1; bn; relu; maxpool 2; conv 48 k=3 pad=1; bn; relu; maxpool 2; linear 64; relu; linear'
py=/usr/bin/python3
fmnist=/usr/share/datasets/fashion-mnist
unset RV_LEVEL

die() {
	echo "regime.sh: $*" >&2
	exit 1
}
# shellcheck source=scripts/seeds.bash
. "$root/scripts/seeds.bash"

# --- set-up -----------------------------------------------------------------
for v in EPOCHS:epochs TRAIN:ntrain TEST:ntest EVAL_EVERY:eval_every; do
	n=${v#*:}
	[[ ${!n} =~ ^[0-9]+$ ]] || die "REGIME_${v%%:*}: '${!n}': not an integer"
done
[ "$epochs" -ge 1 ] || die "REGIME_EPOCHS: at least 1"
((10#$ntrain >= 1 && 10#$ntrain <= 60000)) ||
    die "REGIME_TRAIN: '$ntrain': from 1 to 60000"
((10#$ntest >= 1 && 10#$ntest <= 10000)) ||
    die "REGIME_TEST: '$ntest': from 1 to 10000"
msg=$(seeds_check REGIME_SEEDS "${seeds[@]}") || die "$msg"
[ "${#targets[@]}" -ge 1 ] || die "REGIME_TARGET: no target accuracy"
for t in "${targets[@]}"; do
	[[ $t =~ ^0?\.[0-9]+$ ]] || die "REGIME_TARGET: '$t': not an accuracy in (0, 1)"
done
stop=$(printf '%s\n' "${targets[@]}" | sort -g | tail -n 1)
[ "${#reuses[@]}" -ge 1 ] || die "REGIME_REUSE: no reuse factor"
for r in "${reuses[@]}"; do
	[[ $r =~ ^[1-9][0-9]*$ ]] || die "REGIME_REUSE: '$r': not a positive integer"
done
rmax=$(printf '%s\n' "${reuses[@]}" | sort -n | tail -n 1)
default_runs="standard$(printf ' refurbish-%s' "${reuses[@]}") shrink both"
read -r -a runs <<<"${REGIME_RUNS:-$default_runs}"
[ "${runs[0]:-}" = standard ] || die "REGIME_RUNS: the first run must be standard, the baseline"
declare -A label=([standard]=standard [shrink]=shrunk
    [both]="refurbished (r=$rmax) + shrunk")
for k in "${runs[@]}"; do
	case $k in
	standard | shrink | both) ;;
	refurbish-[1-9]*)
		[[ $k =~ ^refurbish-[1-9][0-9]*$ ]] || die "REGIME_RUNS: '$k': refurbish-R wants a reuse factor R"
		label[$k]="refurbished, r=${k#refurbish-}" ;;
	*) die "REGIME_RUNS: '$k': standard, refurbish-R, shrink or both" ;;
	esac
done
for p in rv-decode rv-augment rv-refurbish rv-score rv-batch rv-train-gpu; do
	[ -x "$bin/$p" ] || die "'$bin/$p' is missing: run 'make' first"
done
[ -x /usr/bin/time ] || die "/usr/bin/time is missing: apt-get install time"
[ -f "$fmnist/train-images-idx3-ubyte.gz" ] ||
    die "'$fmnist' is missing: apt-get install dataset-fashion-mnist"

if [ -z "$photos" ]; then
	bash "$here/photos.sh" "$here/out/photos"
	photos=$here/out/photos/full/nature
fi
mkdir -p "$out"
data=$out/data
# Rebuilt when the recipe changes.
recipe="v1 train=$ntrain test=$ntest photos=$photos"
if [ ! -f "$data/.done" ] || [ "$(cat "$data/.done")" != "$recipe" ]; then
	echo "== building $ntrain + $ntest images of Fashion-MNIST on photographs into $data" >&2
	rm -rf "$data"
	"$py" "$here/fmnist_photos.py" "$fmnist" "$photos" "$data" \
	    "$ntrain" "$ntest" || die "fmnist_photos.py failed"
	echo "$recipe" >"$data/.done"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/rv-decode" -q --encoded "$data/train" -o "$tmp/train.rvs"
"$bin/rv-decode" -q --encoded "$data/test" |
    "$bin/rv-augment" -q "$evalspec" -o "$tmp/test.rvs"

# cpu FILE: the user + system seconds /usr/bin/time wrote to FILE (its
# last line; a line before it says when the stage ended by a signal).
cpu() {
	tail -n 1 "$1" | awk 'NF == 2 { printf "%.2f", $1 + $2; ok = 1 }
	    END { exit !ok }' || die "$1: no CPU times"
}

# run KEY SEED: one pipeline, its stages under /usr/bin/time, into
# $out/seedSEED/KEY/.  The stages before the trainer may end by SIGPIPE
# (141) when the trainer stops at the target.
run() {
	local k=$1 s=$2 d=$out/seed$2/$1 r i st
	local T=(/usr/bin/time -f '%U %S')
	local dstage=("${T[@]}" -o "$d/data.time")
	local score=("${T[@]}" -o "$d/score.time" "$bin/rv-score" -v
	    --feedback "$tmp/fb" --seed "$s")
	local train=("${T[@]}" -o "$d/train.time" "$bin/rv-train-gpu" -q
	    -j 1 -m "$model" --schedule cosine --epochs "$epochs" --seed "$s"
	    --mean 0.5 --std 0.25 --eval "$tmp/test.rvs"
	    --target-acc "$stop" --log "$d/train.log" -o "$d/summary")
	[ "$eval_every" = 0 ] || train+=(--eval-every "$eval_every")
	# pipefail: a failing rv-decode fails the stage (141, SIGPIPE at the
	# target, passes the check below)
	# shellcheck disable=SC2016 # the positional parameters of bash -c
	local decode=(bash -c 'set -o pipefail
	    "$1/rv-decode" -q -j 1 --encoded --epochs "$2" \
	    --shuffle --seed "$3" "$4" | "$1/rv-augment" -q -j 1 --seed "$3" "$5"'
	    - "$bin" "$epochs" "$s" "$data/train" "$spec")
	case $k in
	both) r=$rmax ;;
	refurbish-*) r=${k#refurbish-} ;;
	esac
	if [ -n "${r:-}" ]; then
		local batch=128
		[ "$k" = both ] && batch=256
		decode=("$bin/rv-refurbish" -q -j 1 --seed "$s"
		    --partial "$partial" --final "$final" --reuse "$r"
		    --epochs "$epochs" --batch "$batch" "$tmp/train.rvs")
	fi
	rm -rf "$d"
	mkdir -p "$d"
	echo "== seed $s, $k: to $stop test accuracy, at most $epochs epochs" >&2
	set +e
	case $k in
	standard | refurbish-*)
		"${dstage[@]}" "${decode[@]}" |
		    "${T[@]}" -o "$d/batch.time" "$bin/rv-batch" -q -b 128 |
		    "${train[@]}"
		st=("${PIPESTATUS[@]}") ;;
	shrink | both)
		rm -f "$tmp/fb"
		mkfifo "$tmp/fb"
		[ "$k" = both ] && score+=(--budget 0.5)
		"${dstage[@]}" "${decode[@]}" |
		    "${score[@]}" 2>"$d/score" |
		    "${T[@]}" -o "$d/batch.time" "$bin/rv-batch" -q -b 128 |
		    "${train[@]}" --feedback "$tmp/fb"
		st=("${PIPESTATUS[@]}")
		rm -f "$tmp/fb" ;;
	esac
	set -e
	for i in "${!st[@]}"; do
		[ "${st[$i]}" = 0 ] && continue
		[ "$i" -lt $((${#st[@]} - 1)) ] && [ "${st[$i]}" = 141 ] && continue
		die "seed $s, $k: stage $((i + 1)) of the pipeline exited ${st[$i]}; its files are in $d"
	done
	seeds_evals "$d/train.log" >"$d/evals.txt"
	[ -s "$d/evals.txt" ] || die "$d/train.log: no evaluation"
	IFS=$'\t' read -r reached acc wall grads wait < <(seeds_summary \
	    "$d/train.log" reached eval_acc wall grads wait_frac)
	[ "$reached" = true ] && reached=reached || reached="not reached"
	printf '   %s: test accuracy %s, %.1f s, %d gradient computations, data wait %.1f%%\n' \
	    "$reached" "$acc" "$wall" "$grads" \
	    "$(calc "100 * w" -v w="$wait")" >&2
}

: >"$out/runs.tsv"
for s in "${seeds[@]}"; do
	evs=()
	for k in "${runs[@]}"; do
		run "$k" "$s"
		evs+=("$out/seed$s/$k/evals.txt")
	done
	read -r gmin wmin < <(seeds_budgets "${evs[@]}")
	for k in "${runs[@]}"; do
		d=$out/seed$s/$k
		dc=$(cpu "$d/data.time")
		tc=$(cpu "$d/train.time")
		oc=$(cpu "$d/batch.time")
		[ ! -f "$d/score.time" ] || oc=$(awk -v a="$oc" -v b="$(cpu "$d/score.time")" 'BEGIN { printf "%.2f", a + b }')
		share=$(awk -v a="$dc" -v b="$tc" -v c="$oc" 'BEGIN { printf "%.2f", 100 * a / (a + b + c) }')
		seeds_row "$s" "$k" "$d/evals.txt" "$gmin" "$wmin" \
		    "$(seeds_summary "$d/train.log" wait_frac)" "${targets[*]}" \
		    "$dc" "$oc" "$tc" "$share" >>"$out/runs.tsv"
	done
done

labels=$(for k in "${runs[@]}"; do printf '%s=%s\t' "$k" "${label[$k]}"; done)
extras=$(printf '%s\t' "data CPU (s)|%.1f" "rv-score + rv-batch CPU (s)|%.1f" \
    "trainer CPU (s)|%.1f" "data share of CPU (%)|%.1f")
{
	echo "Fashion-MNIST on photographs ($ntrain training, $ntest test JPEGs of 480x360), '$spec' to 64 px, a three-stage CNN; one core for the data stage, one for the trainer; seeds ${seeds[*]}; each run stopping at $stop test accuracy or after $epochs epochs; evaluations $([ "$eval_every" = 0 ] || echo "every $eval_every steps and ")at epoch ends; $(nproc) cores"
	echo
	seeds_tables "$out/runs.tsv" "${runs[*]}" "$labels" "${targets[*]}" \
	    "${#seeds[@]}" "${extras%$'\t'}" "Refurbished: partial '$partial', final '$final'.  wall: the trainer's seconds, evaluations included.  CPU: user + system seconds of each stage to the end of the run (the highest target, or the last epoch): data is rv-decode and rv-augment, or rv-refurbish."
} >"$out/results.md"
cat "$out/results.md"
echo "== tables: $out/results.md; per run: $out/seedS/KEY/ (train.log, summary, *.time)" >&2
