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
# Runs, each the whole schedule, with the same model, optimiser, batch size
# and seed, and a cosine schedule counted in steps (rv-train-gpu --steps),
# as many as standard training's EPOCHS epochs, so that a shrunk run, whose
# epochs are shorter, sees the same learning-rate curve at the same step:
#   standard     rv-decode --encoded | rv-augment SPEC      (every epoch)
#   refurbish-R  rv-refurbish --partial 'rrc; randaugment' --final flip
#                --reuse R, R from REGIME_REUSE (default 2 and 3)
#   shrink       rv-decode --encoded | rv-score (assistant, floor 0.3, the
#                trainer's feedback through a FIFO) | rv-augment SPEC:
#                scored before the decode (a thumbnail a sample, kept by
#                id), as pipelines/shrink.sh
#   random       the same with rv-score --policy uniform --keep K, K the
#                share shrink kept after its first epoch (same seed): the
#                control that tells the assistant's choice from training
#                on fewer samples at all
#   both         rv-refurbish at the largest R --score '--budget 0.5
#                --feedback FIFO': the assistant keeps half of every epoch
#                after the first, chosen before any partial is made, one
#                batch of 128 a window, as pipelines/refurbish-shrink.sh
#   shrink-r1    shrink with both's budget inside rv-refurbish --reuse 1
#                --partial SPEC --final '': no partial reused, but a
#                dropped sample is not even read (not in the default runs)
# then | rv-batch -b 128 | rv-train-gpu.  The stages upstream supply enough
# epochs for the fewest samples rv-score keeps, and end by SIGPIPE.  Every
# stage runs under /usr/bin/time, so the tables give the CPU seconds of the
# data stage (everything before rv-batch: decode, rv-score and
# augmentation, or rv-refurbish with its scoring), of rv-batch and of the
# trainer, over the run; bench/cpu_at_evals.py also samples the data
# stage's CPU at each evaluation, for its CPU to the target.  Evaluations
# run every epoch's worth of steps (REGIME_EVAL_EVERY), at the same steps
# in every run, never at a shrunk run's own epoch ends (--no-epoch-eval).
#
# It prints and writes to out/regime/results.md the tables of
# pipelines/experiment.sh (scripts/seeds.bash): per target, grads and
# wall time to it over the seeds, mean +- sd, and per seed against
# standard; data wait; accuracy at equal grads and at equal wall time;
# then the CPU seconds per stage and the data stage's share of them.  A
# dagger marks a difference beyond the seed-to-seed spread.  Beside it,
# results.jsonl: one JSON object a run and seed, with run, seed, target
# (the highest), reached, wall_s and grads to it (null where not reached),
# final_acc (at the end of the schedule), data_cpu_s (the data stage's CPU
# to the target, or to the end where it was missed), data_cpu_total_s,
# samples (trained), data_cpu_per_sample_ms (over the run), kept (the
# share of the samples offered that rv-score kept; 1 without it), steps
# and wait_frac.
#
# Builds nothing: expects `make` to have built the programs; builds the
# image set (bench/photos.sh, then fmnist_photos.py with /usr/bin/python3,
# Debian's python3-pil and python3-numpy) once, into out/regime/data.
# Environment: RV_BUILD (build dir, default build), REGIME_SEEDS (default
# "0 1 2"), REGIME_TARGET (test accuracies; results.jsonl has the highest;
# default "0.55 0.60"), REGIME_EPOCHS (the schedule's length in standard
# training's epochs, default 12), REGIME_TRAIN and REGIME_TEST (images,
# default 20000 and 2000), REGIME_EVAL_EVERY (evaluate every N steps;
# default an epoch's, TRAIN / 128 rounded up: an evaluation stops the
# trainer, not the data stage, so frequent ones would hide the very waits
# measured here), REGIME_REUSE (default "2 3"), REGIME_KEEP (random's
# share kept when shrink does not run, default 0.5), REGIME_POLICY
# (rv-score's policy options for shrink and both, default "--policy
# assistant", the rv assistant on thumbnails and history; "--policy
# history" scores from the trainer's feedback alone, so no sample is
# decoded to be scored),
# REGIME_RUNS (default "standard refurbish-R... shrink random both";
# shrink-r1 too on demand),
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
eval_every=${REGIME_EVAL_EVERY:-}
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
keep_default=${REGIME_KEEP:-0.5}
read -r -a policy <<<"${REGIME_POLICY:---policy assistant}"
[[ ${policy[0]:-} = --policy && ${#policy[@]} -ge 2 ]] ||
    die "REGIME_POLICY: '${REGIME_POLICY:-}': rv-score's options, from --policy NAME on"
[[ $keep_default =~ ^(0?\.[0-9]*[1-9][0-9]*|1)$ ]] ||
    die "REGIME_KEEP: '$keep_default': not a share in (0, 1]"
for v in EPOCHS:epochs TRAIN:ntrain TEST:ntest EVAL_EVERY:eval_every; do
	n=${v#*:}
	# the default evaluation interval: an epoch's steps
	[ "$n" != eval_every ] || [ -n "$eval_every" ] ||
	    eval_every=$(((10#$ntrain + 127) / 128))
	[[ ${!n} =~ ^[0-9]+$ ]] || die "REGIME_${v%%:*}: '${!n}': not an integer"
done
[ "$epochs" -ge 1 ] || die "REGIME_EPOCHS: at least 1"
[ "$eval_every" -ge 1 ] || die "REGIME_EVAL_EVERY: at least 1"
# standard training's steps: the schedule of every run
steps=$((epochs * ((10#$ntrain + 127) / 128)))
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
default_runs="standard$(printf ' refurbish-%s' "${reuses[@]}") shrink random both"
read -r -a runs <<<"${REGIME_RUNS:-$default_runs}"
[ "${runs[0]:-}" = standard ] || die "REGIME_RUNS: the first run must be standard, the baseline"
declare -A label=([standard]=standard
    [shrink]="shrunk, scored before the decode"
    [random]="random drop of shrink's share (control)"
    [both]="refurbished (r=$rmax) + shrunk before the partials"
    [shrink-r1]="shrunk inside rv-refurbish (r=1), before the read")
for k in "${runs[@]}"; do
	case $k in
	standard | shrink | random | both | shrink-r1) ;;
	refurbish-[1-9]*)
		[[ $k =~ ^refurbish-[1-9][0-9]*$ ]] || die "REGIME_RUNS: '$k': refurbish-R wants a reuse factor R"
		label[$k]="refurbished, r=${k#refurbish-}" ;;
	*) die "REGIME_RUNS: '$k': standard, refurbish-R, shrink, random, both or shrink-r1" ;;
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

# kept_share FILE [FROM]: the share of the samples offered that the
# assistant kept, from rv-score's -v epoch lines in FILE (or rv-refurbish
# --score's), over the epochs from FROM
# (default 0) on; 1 when it wrote none.
kept_share() {
	[ -f "$1" ] || { echo 1; return; }
	awk -v from="${2:-0}" '
		    /^rv-score: epoch [0-9]+: [0-9]+ seen, [0-9]+ kept/ {
		e = $3; sub(":", "", e)
		if (e + 0 >= from) { seen += $4; kept += $6 }
	    }
	    /^rv-refurbish: score epoch [0-9]+: [0-9]+ seen, [0-9]+ kept/ {
		e = $4; sub(":", "", e)
		if (e + 0 >= from) { seen += $5; kept += $7 }
	    }
	    END { printf "%.4f", seen ? kept / seen : 1 }' "$1"
}

# run KEY SEED: one pipeline, its stages under /usr/bin/time, into
# $out/seedSEED/KEY/.  The stages before the trainer end by SIGPIPE (141)
# when the trainer has taken its steps.
run() {
	local k=$1 s=$2 d=$out/seed$2/$1 r i st keep feed
	local T=(/usr/bin/time -f '%U %S')
	# the data stage's root process, for cpu_at_evals.py
	# shellcheck disable=SC2016 # the positional parameters of bash -c
	local dstage=(bash -c 'echo $$ > "$1"; shift; exec "$@"' -
	    "$d/data.pid" "${T[@]}" -o "$d/data.time")
	local train=("${T[@]}" -o "$d/train.time" "$bin/rv-train-gpu" -q
	    -j 1 -m "$model" --schedule cosine --steps "$steps" --seed "$s"
	    --mean 0.5 --std 0.25 --eval "$tmp/test.rvs"
	    --eval-every "$eval_every" --no-epoch-eval
	    --log "$d/train.log" -o "$d/summary")
	local score=()
	feed=$epochs
	case $k in
	shrink)
		score=("${policy[@]}")
		# the fewest the floor (0.3) keeps, and one epoch more
		feed=$(((epochs * 10 + 2) / 3 + 1)) ;;
	random)
		keep=$keep_default
		[ ! -f "$out/seed$s/shrink/score" ] ||
		    keep=$(kept_share "$out/seed$s/shrink/score" 1)
		score=(--policy uniform --keep "$keep")
		feed=$(awk -v e="$epochs" -v k="$keep" \
		    'BEGIN { f = e / k; print (f == int(f) ? f : int(f) + 1) + 1 }') ;;
	both | shrink-r1)
		score=("${policy[@]}" --budget 0.5)
		feed=$((2 * epochs + 1)) ;;
	esac
	# pipefail: a failing stage fails the data stage (141, SIGPIPE when
	# the trainer is done, passes the check below)
	# shellcheck disable=SC2016 # the positional parameters of bash -c
	local decode=(bash -c 'set -o pipefail
	    if [ -n "$7" ]; then
		"$1/rv-decode" -q -j 1 --encoded --epochs "$2" \
		    --shuffle --seed "$3" "$4" |
		    "$1/rv-score" -v --feedback "$6" --seed "$3" $7 2> "$8" |
		    "$1/rv-augment" -q -j 1 --seed "$3" "$5"
	    else
		"$1/rv-decode" -q -j 1 --encoded --epochs "$2" \
		    --shuffle --seed "$3" "$4" |
		    "$1/rv-augment" -q -j 1 --seed "$3" "$5"
	    fi' - "$bin" "$feed" "$s" "$data/train" "$spec" "$tmp/fb"
	    "${score[*]}" "$d/score")
	local rpartial=$partial rfinal=$final
	case $k in
	both) r=$rmax ;;
	refurbish-*) r=${k#refurbish-} ;;
	shrink-r1) r=1 rpartial=$spec rfinal= ;;
	esac
	if [ -n "${r:-}" ]; then
		# shellcheck disable=SC2016 # the positional parameters
		decode=(bash -c '
		    if [ -n "$8" ]; then
			exec "$1/rv-refurbish" -q -v -j 1 --seed "$2" \
			    --partial "$3" --final "$4" --reuse "$5" \
			    --epochs "$6" --batch 128 \
			    --score "$8 --feedback $9" "$7" 2> "${10}"
		    else
			exec "$1/rv-refurbish" -q -j 1 --seed "$2" \
			    --partial "$3" --final "$4" --reuse "$5" \
			    --epochs "$6" --batch 128 "$7"
		    fi' - "$bin" "$s" "$rpartial" "$rfinal" "$r" "$feed"
		    "$tmp/train.rvs" "${score[*]}" "$tmp/fb" "$d/score")
	fi
	rm -rf "$d"
	mkdir -p "$d"
	echo "== seed $s, $k: $steps steps, evaluated every $eval_every" >&2
	rm -f "$tmp/fb"
	mkfifo "$tmp/fb"
	python3 "$here/cpu_at_evals.py" "$d/data.pid" "$d/train.log" \
	    "$d/cpu_evals.txt" &
	local sampler=$!
	set +e
	"${dstage[@]}" "${decode[@]}" |
	    "${T[@]}" -o "$d/batch.time" "$bin/rv-batch" -q -b 128 |
	    "${train[@]}" --feedback "$tmp/fb"
	st=("${PIPESTATUS[@]}")
	wait "$sampler"
	set -e
	rm -f "$tmp/fb"
	for i in "${!st[@]}"; do
		[ "${st[$i]}" = 0 ] && continue
		[ "$i" -lt $((${#st[@]} - 1)) ] && [ "${st[$i]}" = 141 ] && continue
		die "seed $s, $k: stage $((i + 1)) of the pipeline exited ${st[$i]}; its files are in $d"
	done
	seeds_evals "$d/train.log" >"$d/evals.txt"
	[ -s "$d/evals.txt" ] || die "$d/train.log: no evaluation"
	IFS=$'\t' read -r acc wall grads wait < <(seeds_summary \
	    "$d/train.log" eval_acc wall grads wait_frac)
	printf '   test accuracy %s at the end, %.1f s, %d gradient computations, data wait %.1f%%, %s kept\n' \
	    "$acc" "$wall" "$grads" "$(calc "100 * w" -v w="$wait")" \
	    "$(kept_share "$d/score")" >&2
}

# jsonl_row KEY SEED: the run's line of results.jsonl.
jsonl_row() {
	local k=$1 s=$2 d=$out/seed$2/$1 dc kept
	dc=$(cpu "$d/data.time")
	kept=1
	[ ! -f "$d/score" ] || kept=$(kept_share "$d/score")
	python3 - "$k" "$s" "$stop" "$d/train.log" "$d/cpu_evals.txt" "$dc" \
	    "$kept" <<'PY'
import json, sys
k, s, target, log, cpuf, dc, kept = sys.argv[1:8]
target, dc = float(target), float(dc)
evals, summary = [], None
for line in open(log):
    o = json.loads(line)
    if o["event"] == "eval":
        evals.append(o)
    elif o["event"] == "summary":
        summary = o
cpu = {}
for line in open(cpuf):
    st, c = line.split()
    cpu[int(st)] = float(c)
hit = next((e for e in evals if e["eval_acc"] >= target), None)
samples = summary["samples"]
row = {
    "run": k, "seed": int(s), "target": target, "reached": hit is not None,
    "wall_s": round(hit["wall"], 2) if hit else None,
    "grads": hit["grads"] if hit else None,
    "final_acc": evals[-1]["eval_acc"],
    # the data stage's CPU when the target's evaluation was written (the
    # sampler's; when it has none, the data stage had ended by then, and
    # its whole CPU is the answer), else over the whole run
    "data_cpu_s": cpu.get(hit["step"], dc) if hit else dc,
    "data_cpu_total_s": dc, "samples": samples,
    "data_cpu_per_sample_ms": round(1000 * dc / samples, 4),
    "kept": float(kept), "steps": summary["steps"],
    "wait_frac": summary["wait_frac"],
}
print(json.dumps(row))
PY
}

: >"$out/runs.tsv"
: >"$out/results.jsonl.tmp"
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
		share=$(awk -v a="$dc" -v b="$tc" -v c="$oc" 'BEGIN { printf "%.2f", 100 * a / (a + b + c) }')
		pers=$(awk -v a="$dc" -v n="$(seeds_summary "$d/train.log" samples)" 'BEGIN { printf "%.3f", 1000 * a / n }')
		seeds_row "$s" "$k" "$d/evals.txt" "$gmin" "$wmin" \
		    "$(seeds_summary "$d/train.log" wait_frac)" "${targets[*]}" \
		    "$dc" "$pers" "$oc" "$tc" "$share" \
		    "$(kept_share "$d/score")" >>"$out/runs.tsv"
		jsonl_row "$k" "$s" >>"$out/results.jsonl.tmp"
	done
done
mv "$out/results.jsonl.tmp" "$out/results.jsonl"

labels=$(for k in "${runs[@]}"; do printf '%s=%s\t' "$k" "${label[$k]}"; done)
extras=$(printf '%s\t' "data CPU (s)|%.1f" "data CPU a trained sample (ms)|%.2f" \
    "rv-batch CPU (s)|%.1f" "trainer CPU (s)|%.1f" \
    "data share of CPU (%)|%.1f" "kept|%.3f")
{
	echo "Fashion-MNIST on photographs ($ntrain training, $ntest test JPEGs of 480x360), '$spec' to 64 px, a three-stage CNN; one core for the data stage, one for the trainer; seeds ${seeds[*]}; every run $steps steps ($epochs epochs of every sample at 128 a batch) on a cosine schedule counted in steps; evaluations every $eval_every steps, and at the end; shrink, both and shrink-r1 scored with rv-score ${policy[*]}; $(nproc) cores"
	echo
	seeds_tables "$out/runs.tsv" "${runs[*]}" "$labels" "${targets[*]}" \
	    "${#seeds[@]}" "${extras%$'\t'}" "Refurbished: partial '$partial', final '$final'.  wall: the trainer's seconds, evaluations included.  CPU: user + system seconds of each stage over the whole run: data is every stage before rv-batch (rv-decode, rv-score and rv-augment, or rv-refurbish, scoring inside); a trained sample's is the data CPU over the samples trained.  kept: the share of the samples offered that rv-score kept, its warm-up epoch included.  results.jsonl has each run's data CPU to the highest target."
} >"$out/results.md"
cat "$out/results.md"
echo "== tables: $out/results.md, $out/results.jsonl; per run: $out/seedS/KEY/ (train.log, summary, *.time, score, cpu_evals.txt)" >&2
