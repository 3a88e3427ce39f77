#!/usr/bin/env bash
# The experiment: how much sooner do refurbishing, shrinking and both reach
# a target test accuracy than standard training, and what do they cost in
# accuracy?  For every seed it runs the training pipelines,
# pipelines/standard.sh, refurbish.sh (twice: two partial/final splits),
# shrink.sh and refurbish-shrink.sh, with the same model (cnn-small on
# Fashion-MNIST), optimiser, schedule, batch size and seed, each stopping
# at the first evaluation whose test accuracy reaches the highest target
# (rv-train-gpu --target-acc) or after EPOCHS epochs, and reads their
# trainers' logs (--log, JSON lines).
#
# The two splits of the same augmentation, RandAugment n=1 m=5, random crop
# (padding 2) and flip, in that order:
#   A  partial RandAugment; final crop and flip (refurbish.sh as shipped)
#   B  partial RandAugment and crop; final flip
# Both reuse each partial REUSE (default 3) times.
#
# It prints a markdown table, also written to results.md: per pipeline and
# target, in how many seeds the target was reached, the gradient
# computations (per-sample backward passes) and the trainer's wall time at
# the first evaluation at or above it, as mean +- standard deviation over
# the seeds that reached it, and the same against standard training of the
# same seed; then per pipeline the share of the time the trainer waited for
# input, the test accuracy at equal gradient computations and at equal wall
# time (each run's last evaluation within the smallest budget any pipeline
# of the same seed ended at) and the final test accuracy.  A dagger marks a
# difference from standard training that exceeds the seed-to-seed spread:
# the pipeline's values over the seeds and standard training's do not
# overlap (their minimum-maximum ranges are disjoint).  Each seed's own
# table is in seedS/results.md, its curves against wall time and against
# gradient computations in seedS/acc-wall.png and seedS/acc-grads.png.
# Run it after `make`:
#   [OUT=dir] [SEEDS="0 1 2"] [TARGET="0.88 0.90"] [EPOCHS=10] \
#       [EVAL_EVERY=N] [LIMIT=N] [EVAL_LIMIT=N] [REUSE=r] \
#       pipelines/experiment.sh
# OUT (default out/experiment) receives results.md and, per seed S,
# seedS/ with one directory per pipeline holding its outputs, standard
# output (stdout.txt) and standard error (stderr.txt).  TARGET is one or
# more test accuracies; the runs stop at the highest.  LIMIT uses only the
# first N training images, EVAL_LIMIT the first N test images (a quick
# run); EVAL_EVERY N evaluates every N steps as well as at epoch ends, so
# that a run is not credited only at the end of the epoch in which it
# reached the target; RV_BIN names the programs' directory (default
# build/bin), FMNIST the dataset's.
# On Fashion-MNIST's 28x28 images augmentation costs the CPU little, so the
# trainer hardly waits for data and refurbishing has no stall to remove:
# this experiment measures what refurbishing costs in accuracy, and what
# shrinking saves in gradient computations.  Each seed's five runs take
# about 9 minutes on an idle 2-core machine at the default targets with
# EVAL_EVERY=100.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${RV_BIN:-$here/build/bin}"
out="${OUT:-$here/out/experiment}"
epochs="${EPOCHS:-10}"
read -r -a targets <<<"${TARGET:-0.88 0.90}"
read -r -a seeds <<<"${SEEDS:-0 1 2}"
reuse="${REUSE:-3}"
export LC_ALL=C

die() {
	echo "experiment.sh: $*" >&2
	exit 1
}
# shellcheck source=scripts/seeds.bash
. "$here/scripts/seeds.bash"
[ "${#targets[@]}" -ge 1 ] || die "TARGET: no target accuracy"
for t in "${targets[@]}"; do
	[[ $t =~ ^0?\.[0-9]+$ ]] || die "TARGET: '$t' is not an accuracy in (0, 1)"
done
msg=$(seeds_check SEEDS "${seeds[@]}") || die "$msg"
[[ $epochs =~ ^[1-9][0-9]*$ ]] || die "EPOCHS: '$epochs' is not a positive integer"
# The runs stop at the highest target; the others are read off their logs.
stop=$(printf '%s\n' "${targets[@]}" | sort -g | tail -n 1)
mkdir -p "$out"
PATH="$bin:$here/scripts:$PATH"

# The runs: key, the pipeline script, its label, and its split.
aug_partial='randaugment n=1 m=5'
aug_crop='random_crop size=28 padding=2'
runs=(standard refurbish refurbish-b shrink refurbish-shrink)
declare -A script=([standard]=standard [refurbish]=refurbish
    [refurbish-b]=refurbish [shrink]=shrink
    [refurbish-shrink]=refurbish-shrink)
declare -A label=([standard]=standard
    [refurbish]="refurbished, split A"
    [refurbish-b]="refurbished, split B"
    [shrink]=shrunk [refurbish-shrink]="refurbished (A) + shrunk")
declare -A partial=([refurbish-b]="$aug_partial; $aug_crop")
declare -A final=([refurbish-b]=flip)
for r in "${runs[@]}"; do
	: "${partial[$r]:=$aug_partial}" "${final[$r]:=$aug_crop; flip}"
done

# seed_table S: seed S's own table, from the summary lines of its logs.
seed_table() {
	local s=$1 r
	echo "cnn-small on Fashion-MNIST$([ -z "${LIMIT:-}" ] || echo " (first $LIMIT training images)"), seed $s, to $stop test accuracy, at most $epochs epochs; $(nproc) cores"
	echo
	echo "| pipeline | reached | wall (s) | data wait | grads | samples | epochs | final acc | wall vs standard | grads vs standard |"
	echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"
	for r in "${runs[@]}"; do
		printf '%s\t%s\n' "${label[$r]}" \
		    "$(seeds_summary "$out/seed$s/$r/train.log" reached wall \
		    wait_frac grads samples epochs eval_acc)"
	done | awk -F '\t' '
	function ratio(a, b) {
		if (reached[1] != "true" || $2 != "true" || b <= 0)
			return "-"
		return sprintf("%.2f", a / b)
	}
	{
		reached[NR] = $2
		if (NR == 1) { wall1 = $3; grads1 = $5 }
		printf "| %s | %s | %.1f | %.1f%% | %d | %d | %d | %s | %s | %s |\n",
		    $1, $2 == "true" ? "yes" : "no", $3, 100 * $4, $5, $6, $7,
		    $8 == "null" ? "-" : sprintf("%.4f", $8),
		    ratio($3, wall1), ratio($5, grads1)
	}'
	echo
	echo "wall: the trainer's seconds, evaluations included, to the target or to the end; data wait: their share spent waiting for input; grads: per-sample gradient computations; final acc: the last evaluation's test accuracy.  The ratios compare runs that both reached the target."
}

# One line per run into runs.tsv: seed, key, data wait, final accuracy,
# the accuracy at the seed's equal-grads and equal-wall budgets, then per
# target the grads and wall at the first evaluation at or above it ("-"
# where none is).
: > "$out/runs.tsv"
for s in "${seeds[@]}"; do
	for r in "${runs[@]}"; do
		d="$out/seed$s/$r"
		echo "== seed $s, $r: training to $stop test accuracy, at most $epochs epochs (output: $d)" >&2
		rm -rf "$d"
		mkdir -p "$d"
		if ! OUT="$d" TARGET="$stop" EPOCHS="$epochs" SEED="$s" \
		    PARTIAL="${partial[$r]}" FINAL="${final[$r]}" REUSE="$reuse" \
		    EVAL_EVERY="${EVAL_EVERY:-}" \
		    LIMIT="${LIMIT:-}" EVAL_LIMIT="${EVAL_LIMIT:-}" RV_BIN="$bin" \
		    bash "$here/pipelines/${script[$r]}.sh" > "$d/stdout.txt" \
		    2> "$d/stderr.txt"; then
			tail -n 20 "$d/stderr.txt" >&2
			die "pipelines/${script[$r]}.sh failed; its output is in $d"
		fi
		IFS=$'\t' read -r reached acc wall grads < <(seeds_summary \
		    "$d/train.log" reached eval_acc wall grads)
		[ "$reached" = true ] && reached=reached || reached="not reached"
		printf '   target %s: test accuracy %s, %.1f s, %d gradient computations\n' \
		    "$reached" "$acc" "$wall" "$grads" >&2
		seeds_evals "$d/train.log" > "$d/evals.txt"
		[ -s "$d/evals.txt" ] || die "$d/train.log: no evaluation"
	done
	seed_table "$s" > "$out/seed$s/results.md"
	logs=()
	for r in "${runs[@]}"; do
		logs+=("${label[$r]}=$out/seed$s/$r/train.log")
	done
	rv-plot -o "$out/seed$s/acc-wall.png" --x wall \
	    --title "cnn-small, Fashion-MNIST, seed $s, to $stop test accuracy" "${logs[@]}"
	rv-plot -o "$out/seed$s/acc-grads.png" --x grads \
	    --title "cnn-small, Fashion-MNIST, seed $s, to $stop test accuracy" "${logs[@]}"

	# The equal budgets: the fewest grads and the least wall time that
	# any run of this seed ended at.
	evs=()
	for r in "${runs[@]}"; do
		evs+=("$out/seed$s/$r/evals.txt")
	done
	read -r gmin wmin < <(seeds_budgets "${evs[@]}")
	for r in "${runs[@]}"; do
		d="$out/seed$s/$r"
		seeds_row "$s" "$r" "$d/evals.txt" "$gmin" "$wmin" \
		    "$(seeds_summary "$d/train.log" wait_frac)" "${targets[*]}" \
		    >> "$out/runs.tsv"
	done
done

# The tables over the seeds, from runs.tsv.
labels=$(for r in "${runs[@]}"; do printf '%s=%s\t' "$r" "${label[$r]}"; done)
{
	echo "cnn-small on Fashion-MNIST$([ -z "${LIMIT:-}" ] || echo " (first $LIMIT training images)"), seeds ${seeds[*]}, each run stopping at $stop test accuracy or after $epochs epochs; reuse $reuse; $(nproc) cores"
	echo
	seeds_tables "$out/runs.tsv" "${runs[*]}" "$labels" "${targets[*]}" \
	    "${#seeds[@]}" "" "Split A: partial RandAugment, final crop and flip; split B: partial RandAugment and crop, final flip.  wall: the trainer's seconds, evaluations included.  One table per seed, with samples and epochs: seedS/results.md."
} > "$out/results.md"
cat "$out/results.md"
echo "== tables: $out/results.md (per seed: $out/seedS/results.md); curves: $out/seedS/acc-wall.png (against wall time), $out/seedS/acc-grads.png (against gradient computations)" >&2
