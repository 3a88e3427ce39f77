#!/usr/bin/env bash
# Shrinking experiment (issue 6): does rv-score's assistant reach a target
# test accuracy with fewer gradient computations than training on every
# sample?  cnn-small on Fashion-MNIST, on the CPU, closed-loop runs
# (rv-decode | rv-score | rv-batch | rv-train-gpu, the trainer's feedback
# back to rv-score through a FIFO) that differ only in rv-score's policy:
# uniform --keep 1 (every sample: the baseline), assistant (floor 0.3,
# features image,history), assistant-image (the same on the pooled image
# alone), autoassist (--assistant autoassist, floor 0.3: the authors'
# assistant as published, rv-score(1)), history (floor 0.3, beta 1:
# Selective-Backprop) and uniform-0.45 (a random 45%, the assistant's
# kept share after warm-up: the control that tells choosing the right
# samples from merely fewer) and assistant-encoded (the assistant where
# issue 33 puts it, before the decode: the training images as PNG files,
# rv-decode --encoded | rv-score | rv-augment '' | rv-batch, so a dropped
# sample is never decoded and more samples sit between a decision and its
# feedback; the same pixels, decoded by rv-augment).  Each run stops at the first evaluation at
# or above the target (--target-acc), or after E epochs.  Per policy:
# reached, grads and wall seconds at the target, epochs, final test
# accuracy, the ratios against uniform, and rv-score's own numbers (kept
# share, last assistant accuracy and AUC from its -v epoch lines).
# Targets, printed PASS or MISS (a miss does not fail the run): the
# assistant reaches the target with <= 0.7x uniform's grads, and ends
# within 0.3 points of uniform's test accuracy.  The target, 91.5%, is
# one that uniform training reaches in 5 to 6 of the 10 epochs: at 90%,
# reached in 2.5, the first epoch, which every policy trains whole
# (warm-up), is most of the run and leaves shrinking little to save.
#
# Builds nothing: expects `make` to have built the programs.  Environment:
# RV_BUILD (build dir, default build), SHRINK_EPOCHS (E, the most epochs
# and the cosine schedule's length, default 10), SHRINK_TARGET (test
# accuracy, a fraction, default 0.915), SHRINK_THREADS (the trainer's -j,
# default nproc), SHRINK_SEEDS (the seeds, each a full set of runs;
# default "$SHRINK_SEED", else "0 1 2"), SHRINK_LIMIT
# (train on the first N training images only, for a quick check; default
# all 60000), SHRINK_POLICIES (default "uniform assistant assistant-image
# autoassist history uniform-0.45"; uniform-F keeps a fraction F;
# assistant-encoded writes the PNGs once, to SHRINK_OUT/png),
# SHRINK_EVAL_EVERY (also
# evaluate every N steps; default 100, so that a run's grads at the
# target are not rounded up to an epoch end; 0: epoch ends only),
# SHRINK_REPORT (1: run nothing, print the table of the last run's logs
# again), SHRINK_OUT (the output directory, default bench/out/shrink).
# Output in SHRINK_OUT/seedS/ for each seed S: per policy
# P, P.log (the trainer's --log), P.summary, P.score (rv-score -v), P.wall
# (pipeline seconds); grads.png and wall.png (scripts/rv-plot --x grads,
# --x wall).  With more than one seed, last tables (scripts/seeds.bash)
# give per policy the mean and standard deviation over the seeds of the
# grads and wall time to the target and their ratios to uniform's, the
# accuracy at equal grads, at equal wall time and at the end, the data
# wait, and the assistant's AUC and positive share, with a dagger where a
# difference from uniform exceeds the seed-to-seed spread.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${SHRINK_OUT:-$here/out/shrink}
build=${RV_BUILD:-build}
case $build in
/*) bin=$build/bin ;;
*) bin=$root/$build/bin ;;
esac
epochs=${SHRINK_EPOCHS:-10}
target=${SHRINK_TARGET:-0.915}
threads=${SHRINK_THREADS:-$(nproc)}
read -r -a seeds <<<"${SHRINK_SEEDS:-${SHRINK_SEED:-0 1 2}}"
limit=${SHRINK_LIMIT:-}
read -r -a policies <<<"${SHRINK_POLICIES:-uniform assistant assistant-image autoassist history uniform-0.45}"
eval_every=${SHRINK_EVAL_EVERY:-100}
report=${SHRINK_REPORT:-0}
lr=0.05
batch=128
floor=0.3
beta=1
fmnist=/usr/share/datasets/fashion-mnist
unset RV_LEVEL

die() {
	echo "shrink.sh: $*" >&2
	exit 1
}
# shellcheck source=scripts/seeds.bash
. "$root/scripts/seeds.bash"

# --- set-up -----------------------------------------------------------------
for v in epochs threads eval_every; do
	[[ ${!v} =~ ^[0-9]+$ ]] ||
	    die "SHRINK_${v^^}: '${!v}': not an integer"
done
msg=$(seeds_check SHRINK_SEEDS "${seeds[@]}") || die "$msg"
if [ "$epochs" -lt 1 ] || [ "$threads" -lt 1 ]; then
	die "SHRINK_EPOCHS and SHRINK_THREADS must be at least 1"
fi
if [ -n "$limit" ]; then
	[[ $limit =~ ^0*[1-9][0-9]*$ ]] ||
	    die "SHRINK_LIMIT: '$limit': not a positive integer"
fi
[[ $target =~ ^(0?\.[0-9]+|0|1|1\.0*)$ ]] ||
    die "SHRINK_TARGET: '$target': not a fraction from 0 to 1"
[ "${#policies[@]}" -ge 1 ] || die "SHRINK_POLICIES: no policy"
declare -A seen_policy=()
for p in "${policies[@]}"; do
	case $p in
	uniform | assistant | assistant-image | assistant-encoded | \
	    autoassist | history) ;;
	uniform-0.[0-9]*) [[ $p =~ ^uniform-0\.[0-9]+$ ]] ||
	    die "SHRINK_POLICIES: '$p': uniform-F wants a fraction F" ;;
	*) die "SHRINK_POLICIES: '$p': uniform, uniform-F, assistant, assistant-image, assistant-encoded, autoassist or history" ;;
	esac
	[ -z "${seen_policy[$p]:-}" ] || die "SHRINK_POLICIES: '$p' twice"
	seen_policy[$p]=1
done
if [ "$report" != 1 ]; then
	for p in rv-decode rv-score rv-batch rv-train-gpu; do
		[ -x "$bin/$p" ] || die "'$bin/$p' is missing: run 'make' first"
	done
	[ -f "$fmnist/train-images-idx3-ubyte.gz" ] ||
	    die "'$fmnist' is missing: apt-get install dataset-fashion-mnist"
fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# policy_args P: rv-score's options for policy P, one a line.
policy_args() {
	case $1 in
	uniform) printf '%s\n' --policy uniform --keep 1 ;;
	uniform-*) printf '%s\n' --policy uniform --keep "${1#uniform-}" ;;
	assistant | assistant-encoded) printf '%s\n' --policy assistant \
	    --floor "$floor" ;;
	assistant-image) printf '%s\n' --policy assistant --floor "$floor" \
	    --features image ;;
	autoassist) printf '%s\n' --policy assistant --assistant autoassist \
	    --floor "$floor" ;;
	history) printf '%s\n' --policy history --floor "$floor" \
	    --beta "$beta" ;;
	esac
}

n_train=60000
[ -z "$limit" ] || [ "$limit" -ge "$n_train" ] || n_train=$limit
echo "# shrinking experiment: cnn-small on Fashion-MNIST ($n_train" \
    "training images), to $target test accuracy, at most $epochs" \
    "epochs, threads $threads, lr $lr (cosine), batch $batch, seeds" \
    "${seeds[*]}"
if [ "$report" = 1 ]; then
	echo "# SHRINK_REPORT=1: no run; the tables of the logs in '$out'"
else
	echo "# machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' \
	    /proc/cpuinfo | head -1); load before the runs:" \
	    "$(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
fi

# --- the runs -----------------------------------------------------------------
# One pipeline per policy and seed, the same command but for rv-score's
# policy options; a fresh FIFO each.  rv-decode reads the IDX files and
# drives the epochs; -v makes rv-score write a line per epoch end on its
# stderr, kept in P.score.
batcher=(rv-batch -q -b "$batch")
evalopt=()
[ "$eval_every" = 0 ] || evalopt=(--eval-every "$eval_every")
shown_eval=
[ "$eval_every" = 0 ] || shown_eval=" --eval-every $eval_every"
limitopt=()
[ -z "$limit" ] || limitopt=(--limit "$limit")
echo "# run:   rv-decode -q -j 1 --epochs $epochs --shuffle --seed S" \
    "${limitopt[*]} train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz |"
echo "#        rv-score -q -v POLICY --feedback fb --seed S |" \
    "${batcher[*]} |"
echo "#        rv-train-gpu -q -m cnn-small -j $threads --device cpu" \
    "--lr $lr --momentum 0.9 --wd 5e-4 --schedule cosine --epochs" \
    "$epochs --mean 0.5 --std 0.5 --eval test.rvs$shown_eval" \
    "--target-acc $target --feedback fb --log P.log --seed S"
for p in "${policies[@]}"; do
	mapfile -t pargs < <(policy_args "$p")
	echo "# POLICY $p: ${pargs[*]}"
done
[ -z "${seen_policy[assistant-encoded]:-}" ] ||
    echo "# assistant-encoded: rv-decode -q -j 1 --encoded --channels 1" \
	"--epochs $epochs --shuffle --seed S ${limitopt[*]} png/ |" \
	"rv-score ... | rv-augment -q -j 1 '' | ${batcher[*]} | rv-train-gpu ..."

# The training images as PNG files in class folders, for
# assistant-encoded: made once, again when the count changes.
png=$out/png
if [ "$report" != 1 ] && [ -n "${seen_policy[assistant-encoded]:-}" ] &&
    [ "$(cat "$png/.done" 2>/dev/null)" != "v1 $n_train" ]; then
	rm -rf "$png"
	/usr/bin/python3 - "$here" "$fmnist" "$png" "$n_train" <<'PY' ||
import os, sys
from PIL import Image
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
from fmnist_photos import idx  # the IDX reader regime.sh's images use
src, dst, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
x = idx(src + "/train-images-idx3-ubyte.gz")
y = idx(src + "/train-labels-idx1-ubyte.gz")
for c in range(10):
    os.makedirs(f"{dst}/{c}", exist_ok=True)
for i in range(n):
    Image.fromarray(x[i]).save(f"{dst}/{y[i]}/{i:05d}.png")
PY
	    die "writing the PNGs to '$png' failed (python3-pil, python3-numpy)"
	echo "v1 $n_train" >"$png/.done"
fi

# run_seed SEED: every policy's run of that seed, into $out/seedSEED.
run_seed() {
	local seed=$1 sout=$out/seed$1 p fb t0 bad i s
	local -a decode score train st pargs idx batching
	local stages
	mkdir -p "$sout"
	idx=("$bin/rv-decode" -q -j 1 --epochs "$epochs" --shuffle --seed "$seed"
	    "${limitopt[@]}" "$fmnist/train-images-idx3-ubyte.gz"
	    "$fmnist/train-labels-idx1-ubyte.gz")
	for p in "${policies[@]}"; do
		rm -f "$sout/$p.log" "$sout/$p.summary" "$sout/$p.score" \
		    "$sout/$p.wall"
	done
	for p in "${policies[@]}"; do
		mapfile -t pargs < <(policy_args "$p")
		stages=(rv-decode rv-score rv-batch rv-train-gpu)
		decode=("${idx[@]}")
		batching=("$bin/${batcher[0]}" "${batcher[@]:1}")
		if [ "$p" = assistant-encoded ]; then
			stages[2]="rv-augment | rv-batch"
			decode=("$bin/rv-decode" -q -j 1 --encoded --channels 1
			    --epochs "$epochs" --shuffle --seed "$seed"
			    "${limitopt[@]}" "$png")
			# shellcheck disable=SC2016 # bash -c's parameters
			batching=(bash -c 'set -o pipefail
			    "$1/rv-augment" -q -j 1 "" | "$1/rv-batch" -q -b "$2"' \
			    - "$bin" "$batch")
		fi
		fb=$tmp/fb.$p
		mkfifo "$fb"
		score=(rv-score -q -v "${pargs[@]}" --feedback "$fb"
		    --seed "$seed")
		train=(rv-train-gpu -q -m cnn-small -j "$threads"
		    --device cpu --lr "$lr" --momentum 0.9 --wd 5e-4
		    --schedule cosine --epochs "$epochs" --mean 0.5 --std 0.5
		    --eval "$tmp/test.rvs" "${evalopt[@]}"
		    --target-acc "$target" --feedback "$fb"
		    --log "$sout/$p.log" --seed "$seed")
		t0=$(date +%s.%N)
		# The trainer stops at the target without reading the rest
		# of its input, and the stages upstream then die of SIGPIPE
		# (141): that status is fine for them, not for the trainer.
		set +e
		"${decode[@]}" |
		    "$bin/${score[0]}" "${score[@]:1}" 2>"$sout/$p.score" |
		    "${batching[@]}" |
		    "$bin/${train[0]}" "${train[@]:1}" \
		    >"$sout/$p.summary" 2>"$tmp/$p.err"
		st=("${PIPESTATUS[@]}")
		set -e
		calc "b - a" -v a="$t0" -v b="$(date +%s.%N)" >"$sout/$p.wall"
		rm -f "$fb"
		bad=
		for i in 0 1 2 3; do
			s=${st[$i]}
			[ "$s" = 0 ] && continue
			[ "$i" -lt 3 ] && [ "$s" = 141 ] && continue
			bad="$bad ${stages[$i]} exited $s;"
		done
		if [ -n "$bad" ]; then
			grep -v '^rv-score: epoch ' "$sout/$p.score" |
			    sed 's/^/    /' >&2 || true
			sed 's/^/    /' "$tmp/$p.err" >&2
			die "the $p pipeline (seed $seed) failed:${bad%;}"
		fi
		if [ -s "$tmp/$p.err" ]; then
			sed "s/^/# $p: rv-train-gpu stderr: /" "$tmp/$p.err"
		fi
	done
}

if [ "$report" != 1 ]; then
	# The test set, decoded once, for --eval.
	"$bin/rv-decode" -q -j 1 "$fmnist/t10k-images-idx3-ubyte.gz" \
	    "$fmnist/t10k-labels-idx1-ubyte.gz" -o "$tmp/test.rvs" ||
	    die "rv-decode of the Fashion-MNIST test set failed"
	for s in "${seeds[@]}"; do
		run_seed "$s"
	done
	echo "# load after the runs: $(cut -d' ' -f1-3 /proc/loadavg);" \
	    "$(date -u '+%Y-%m-%d %H:%M UTC')"
fi

# --- the tables ---------------------------------------------------------------
# From each log: the summary line (reached, epochs, the last evaluation)
# and the first eval line at or above the target (grads and wall there).
# The trainer's own summary says the same in its "target" line: checked.

# ratio P KEY-ARRAY: P's value over uniform's, "-" when either is missing.
ratio() {
	local -n arr=$2
	local a=${arr[$1]:--} b=${arr[uniform]:--}
	if [ "$a" = - ] || [ "$b" = - ] || [ "$b" = 0 ]; then
		echo -
	else
		printf '%.2fx' "$(calc "a / b" -v a="$a" -v b="$b")"
	fi
}

# pts P: P's final accuracy minus uniform's, in points.
pts() {
	local a=${FINAL[$1]:-null} b=${FINAL[uniform]:-null}
	if [ "$a" = null ] || [ "$b" = null ]; then
		echo -
	else
		printf '%+.2f' "$(calc "(a - b) * 100" -v a="$a" -v b="$b")"
	fi
}

pct() {
	if [ "$1" = null ] || [ "$1" = - ]; then
		echo -
	else
		printf '%.2f' "$(calc "a * 100" -v a="$1")"
	fi
}

verdict() { if "$@"; then echo PASS; else echo MISS; fi; }

# table_seed SEED: the tables, targets and curves of that seed's runs.
table_seed() {
	local seed=$1 sout=$out/seed$1 p log r e a s d g w sg wt yes f x ga gu
	local -A REACHED EPOCHS FINAL GRADS WALL SAMPLES FBDROP
	echo "## seed $seed"
	for p in "${policies[@]}"; do
		log=$sout/$p.log
		[ -s "$log" ] || die "'$log': missing or empty (run without" \
		    "SHRINK_REPORT=1 first)"
		IFS=$'\t' read -r r e a s d < <(jfield summary reached epochs \
		    eval_acc samples feedback_dropped <"$log") ||
		    die "'$log': no summary line"
		REACHED[$p]=$r
		EPOCHS[$p]=$e
		FINAL[$p]=$a
		SAMPLES[$p]=$s
		FBDROP[$p]=$d
		GRADS[$p]=-
		WALL[$p]=-
		g=
		w=
		IFS=$'\t' read -r g w < <(jfield eval eval_acc grads wall \
		    <"$log" | awk -F'\t' -v t="$target" '$1 != "null" &&
		    $1 + 0 >= t + 0 { print $2 "\t" $3; exit }') || true
		if [ -n "$g" ]; then
			GRADS[$p]=$g
			WALL[$p]=$w
		fi
		if [ "$r" = true ] && [ "${GRADS[$p]}" = - ]; then
			echo "# warning: $p: the summary says reached, but no" \
			    "eval line reaches $target"
		elif [ "$r" != true ] && [ "${GRADS[$p]}" != - ]; then
			echo "# warning: $p: an eval line reaches $target, but" \
			    "the summary says not reached"
		fi
		sg=$(sed -n 's/^target .* reached at .*, \([0-9]*\) grads$/\1/p' \
		    "$sout/$p.summary" 2>/dev/null || true)
		if [ "$r" = true ] && [ "$sg" != "${GRADS[$p]}" ]; then
			echo "# warning: $p: the summary's target line says" \
			    "'${sg:-nothing}' grads, the log ${GRADS[$p]}"
		fi
		seeds_evals "$log" >"$tmp/$p.evals"
		[ -s "$tmp/$p.evals" ] || die "'$log': no evaluation"
	done

	echo "# grads_tgt, wall_tgt: grads (samples backpropagated) and the"
	echo "#   trainer's wall seconds (evaluations included) at the first"
	echo "#   evaluation at or above $target; epochs: epoch ends trained;"
	echo "#   final_acc: test accuracy (%) of the last evaluation; x and"
	echo "#   diff_pts: against uniform (every sample)"
	printf '%-15s %7s %10s %9s %6s %9s %8s %7s %8s\n' policy reached \
	    grads_tgt wall_tgt epochs final_acc grads_x wall_x diff_pts
	for p in "${policies[@]}"; do
		if [ "${WALL[$p]}" = - ]; then
			wt=-
		else
			wt=$(printf '%.1f' "${WALL[$p]}")
		fi
		if [ "${REACHED[$p]}" = true ]; then yes=yes; else yes=no; fi
		printf '%-15s %7s %10s %9s %6s %9s %8s %7s %8s\n' "$p" "$yes" \
		    "${GRADS[$p]}" "$wt" "${EPOCHS[$p]}" \
		    "$(pct "${FINAL[$p]}")" "$(ratio "$p" GRADS)" \
		    "$(ratio "$p" WALL)" "$(pts "$p")"
	done

	# rv-score's -v epoch lines: the last one and the totals over all of
	# them.  rv-score reads ahead of the trainer (the pipes and rv-batch
	# hold thousands of samples), so its last lines may be of epochs the
	# trainer never reached; and it dies of SIGPIPE at the target, before
	# its own summary line.
	echo "# rv-score (its -v epoch lines): the epochs it finished, the"
	echo "#   share kept over them and in the last, the feedback lines"
	echo "#   used, those unmatched, and the assistant's accuracy, AUC and"
	echo "#   share of positive labels (pos) in the last line"
	printf '%-15s %6s %8s %9s %9s %9s %8s %8s %8s\n' policy epochs \
	    kept_pct last_kept feedback unmatched asst_acc asst_auc asst_pos
	for p in "${policies[@]}"; do
		f=$sout/$p.score
		[ -f "$f" ] || die "'$f' is missing"
		awk -v p="$p" '
		# num RE: the number (or nan) in the first match of RE.
		function num(re,    s) {
			if (!match($0, re))
				return "-"
			s = substr($0, RSTART, RLENGTH)
			match(s, /(-?[0-9.]+|nan)/)
			return substr(s, RSTART, RLENGTH)
		}
		/^rv-score: epoch [0-9]+: / {
			n++
			seen += num("[0-9]+ seen")
			kept += num("[0-9]+ kept")
			last = num("\\([0-9.]+%")
			fb = num("feedback [0-9]+")
			um = num("\\([0-9]+ unmatched")
			acc = num("acc (-?[0-9.]+|nan)")
			auc = num("auc (-?[0-9.]+|nan)")
			pos = num("pos (-?[0-9.]+|nan)")
		}
		END {
			if (acc == "" || acc == "nan")
				acc = "-"
			if (auc == "" || auc == "nan")
				auc = "-"
			if (pos == "" || pos == "nan")
				pos = "-"
			if (n == 0) {
				printf "%-15s %6d %8s %9s %9s %9s %8s %8s %8s\n",
				    p, 0, "-", "-", "-", "-", "-", "-", "-"
				exit
			}
			printf "%-15s %6d %8.1f %9s %9s %9s %8s %8s %8s\n", p,
			    n, seen ? 100 * kept / seen : 0, last, fb, um, acc,
			    auc, pos
		}' "$f" | tee "$tmp/$p.score"
	done

	# This seed's lines of the table over the seeds: the equal budgets
	# are the fewest grads and the least wall time any policy's run of
	# this seed ended at; the assistant's last AUC and positive share.
	local gmin wmin ev=()
	for p in "${policies[@]}"; do
		ev+=("$tmp/$p.evals")
	done
	read -r gmin wmin < <(seeds_budgets "${ev[@]}")
	for p in "${policies[@]}"; do
		seeds_row "$seed" "$p" "$tmp/$p.evals" "$gmin" "$wmin" \
		    "$(jfield summary wait_frac <"$sout/$p.log")" "$target" \
		    "$(awk '{ print $8, $9 }' "$tmp/$p.score")" >>"$tmp/runs.tsv"
	done
	for p in "${policies[@]}"; do
		if [ "${FBDROP[$p]:-0}" != 0 ]; then
			echo "# $p: the trainer dropped ${FBDROP[$p]} feedback" \
			    "lines (rv-score did not read them in time, or had" \
			    "exited)"
		fi
		echo "# $p: ${SAMPLES[$p]} samples trained; pipeline" \
		    "$(cat "$sout/$p.wall" 2>/dev/null || echo -)s wall"
	done

	# --- targets ---
	if [ -z "${seen_policy[assistant]:-}" ] ||
	    [ -z "${seen_policy[uniform]:-}" ]; then
		echo "target: assistant grads to $target <= 0.7x uniform's:" \
		    "n/a (SHRINK_POLICIES lacks assistant or uniform)"
		echo "target: assistant final accuracy within 0.3 points of" \
		    "uniform's: n/a (SHRINK_POLICIES lacks assistant or" \
		    "uniform)"
	else
		ga=${GRADS[assistant]} gu=${GRADS[uniform]}
		if [ "$gu" = - ]; then
			echo "target: assistant grads to $target <= 0.7x" \
			    "uniform's: n/a (uniform did not reach $target)"
		elif [ "$ga" = - ]; then
			echo "target: assistant grads to $target <= 0.7x" \
			    "uniform's: assistant did not reach it (uniform" \
			    "at $gu): MISS"
		else
			x=$(calc "a / b" -v a="$ga" -v b="$gu")
			echo "target: assistant grads to $target <= 0.7x" \
			    "uniform's: $ga vs $gu, $(printf '%.3f' "$x")x:" \
			    "$(verdict ge 0.7 "$x")"
		fi
		d=$(pts assistant)
		if [ "$d" = - ]; then
			echo "target: assistant final accuracy within 0.3" \
			    "points of uniform's: n/a (no evaluation)"
		else
			echo "target: assistant final accuracy within 0.3" \
			    "points of uniform's: $(pct "${FINAL[assistant]}")%" \
			    "vs $(pct "${FINAL[uniform]}")%, $d points:" \
			    "$(verdict ge 0.3 "$(calc "d < 0 ? -d : d" \
			    -v d="$d")")"
		fi
	fi

	# --- the curves ---
	local title="cnn-small, Fashion-MNIST, rv-score policies, to $target,"
	title="$title seed $seed"
	local -a plotargs=()
	for p in "${policies[@]}"; do
		plotargs+=("$p=$sout/$p.log")
	done
	for x in grads wall; do
		if "$root/scripts/rv-plot" --x "$x" --title "$title" \
		    -o "$sout/$x.png" "${plotargs[@]}" 2>"$tmp/plot"; then
			echo "# curves: $sout/$x.png (scripts/rv-plot --x $x)"
		else
			echo "# curves: $x.png not drawn: $(cat "$tmp/plot")"
		fi
	done
}

for s in "${seeds[@]}"; do
	table_seed "$s"
done

# --- over the seeds -------------------------------------------------------------
if [ "${#seeds[@]}" -gt 1 ]; then
	# uniform, when run, is the baseline: first
	order=()
	[ -z "${seen_policy[uniform]:-}" ] || order=(uniform)
	for p in "${policies[@]}"; do
		[ "$p" = uniform ] || order+=("$p")
	done
	labels=$(for p in "${order[@]}"; do printf '%s=%s\t' "$p" "$p"; done)
	echo "## over the seeds ${seeds[*]}"
	echo
	seeds_tables "$tmp/runs.tsv" "${order[*]}" "$labels" "$target" \
	    "${#seeds[@]}" "$(printf '%s\t%s' "assistant AUC|%.3f" \
	    "assistant's positive share|%.3f")" \
	    "Assistant AUC and positive share: rv-score's last -v epoch line, for the policies with an assistant.  wall: the trainer's seconds, evaluations included." \
	    "rv-score policy"
fi
