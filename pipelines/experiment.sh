#!/usr/bin/env bash
# The experiment: how much sooner do refurbishing, shrinking and both reach
# a target test accuracy than standard training?  It runs the four
# training pipelines, pipelines/standard.sh, refurbish.sh, shrink.sh and
# refurbish-shrink.sh, with the same model (cnn-small on Fashion-MNIST),
# optimiser, schedule, batch size and seeds, each stopping at the first
# evaluation (one per epoch) whose test accuracy reaches the target
# (rv-train-gpu --target-acc) or after EPOCHS epochs, and reads their
# trainers' logs (--log, JSON lines).  It prints a markdown table, also
# written to results.md: per pipeline, whether the target was reached, the
# trainer's wall time, the share of it spent waiting for input, the
# gradient computations (per-sample backward passes) and samples trained,
# the epochs, the final test accuracy, and the wall time and gradient
# computations against standard training's (when both reached the
# target).  It draws the curves of all four against wall time
# (acc-wall.png) and against gradient computations (acc-grads.png).
# Run it after `make`:
#   [OUT=dir] [TARGET=0.88] [EPOCHS=10] [EVAL_EVERY=N] [LIMIT=N] \
#       [EVAL_LIMIT=N] pipelines/experiment.sh
# OUT (default out/experiment) receives results.md, the two plots, and one
# directory per pipeline with its outputs, standard output (stdout.txt)
# and standard error (stderr.txt).  LIMIT uses only the first N training
# images, EVAL_LIMIT the first N test images (a quick run); EVAL_EVERY N
# evaluates every N steps as well as at epoch ends, so that a run is not
# credited only at the end of the epoch in which it reached the target;
# RV_BIN names the programs' directory (default build/bin), FMNIST the
# dataset's.
# On Fashion-MNIST's 28x28 images augmentation costs the CPU little, so the
# wall-time gains of refurbishing are small here; gradient computations
# are what shrinking saves.  The four runs take about 4 minutes on an idle
# 2-core machine at the default target, 5 with EVAL_EVERY=100.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${RV_BIN:-$here/build/bin}"
out="${OUT:-$here/out/experiment}"
target="${TARGET:-0.88}"
epochs="${EPOCHS:-10}"
mkdir -p "$out"
PATH="$bin:$here/scripts:$PATH"
pipelines=(standard refurbish shrink refurbish-shrink)
declare -A label=([standard]=standard [refurbish]=refurbished
    [shrink]=shrunk [refurbish-shrink]=refurbished+shrunk)

# Each trainer's log ends with a summary line, a flat JSON object.
json() {	# json LINE KEY: the value of KEY in the JSON object LINE
	printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"
}

for p in "${pipelines[@]}"; do
	echo "== $p: training to $target test accuracy, at most $epochs epochs (output: $out/$p)" >&2
	rm -rf "${out:?}/$p"
	mkdir -p "$out/$p"
	if ! OUT="$out/$p" TARGET="$target" EPOCHS="$epochs" \
	    EVAL_EVERY="${EVAL_EVERY:-}" \
	    LIMIT="${LIMIT:-}" EVAL_LIMIT="${EVAL_LIMIT:-}" RV_BIN="$bin" \
	    bash "$here/pipelines/$p.sh" > "$out/$p/stdout.txt" \
	    2> "$out/$p/stderr.txt"; then
		tail -n 20 "$out/$p/stderr.txt" >&2
		echo "experiment.sh: pipelines/$p.sh failed; its output is in $out/$p" >&2
		exit 1
	fi
	line=$(grep '"event":"summary"' "$out/$p/train.log" | tail -n 1)
	reached="not reached"
	[ "$(json "$line" reached)" != true ] || reached=reached
	printf '   target %s: test accuracy %s, %.1f s, %d gradient computations\n' \
	    "$reached" "$(json "$line" eval_acc)" "$(json "$line" wall)" \
	    "$(json "$line" grads)" >&2
done

# The table, from the summary lines of the trainers' logs.
{
	echo "cnn-small on Fashion-MNIST$([ -z "${LIMIT:-}" ] || echo " (first $LIMIT training images)"), to $target test accuracy, at most $epochs epochs; $(nproc) cores"
	echo
	echo "| pipeline | reached | wall (s) | data wait | grads | samples | epochs | final acc | wall vs standard | grads vs standard |"
	echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"
	for p in "${pipelines[@]}"; do
		line=$(grep '"event":"summary"' "$out/$p/train.log" | tail -n 1)
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${label[$p]}" \
		    "$(json "$line" reached)" "$(json "$line" wall)" \
		    "$(json "$line" wait_frac)" "$(json "$line" grads)" \
		    "$(json "$line" samples)" "$(json "$line" epochs)" \
		    "$(json "$line" eval_acc)"
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
} > "$out/results.md"
cat "$out/results.md"

logs=()
for p in "${pipelines[@]}"; do
	logs+=("${label[$p]}=$out/$p/train.log")
done
rv-plot -o "$out/acc-wall.png" --x wall \
    --title "cnn-small, Fashion-MNIST, to $target test accuracy" "${logs[@]}"
rv-plot -o "$out/acc-grads.png" --x grads \
    --title "cnn-small, Fashion-MNIST, to $target test accuracy" "${logs[@]}"
echo "== table: $out/results.md; curves: $out/acc-wall.png (against wall time), $out/acc-grads.png (against gradient computations)" >&2
