#!/usr/bin/env bats
# The benchmarks over seeds, in short variants so that they do not rot:
# bench/regime.sh, the regime where refurbishing pays (a few hundred
# photographs, two epochs, two seeds): its image set
# (bench/fmnist_photos.py), its six pipelines with every stage timed and
# its tables, through scripts/seeds.bash, as pipelines/experiment.sh
# tabulates.  The shrinking frontier has its own: frontier.bats.

load helpers

setup() {
	need_fmnist
	[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import PIL, numpy' 2>/dev/null ||
	    skip "needs /usr/bin/python3 with PIL and numpy"
	T="$BATS_TEST_TMPDIR"
	# two backgrounds, ImageMagick's seeded plasma: the same bytes
	# every time
	mkdir -p "$T/photos"
	convert -seed 1 -size 640x480 plasma:green-blue "$T/photos/a.jpg"
	convert -seed 2 -size 500x500 plasma:yellow-red "$T/photos/b.jpg"
}

@test "fmnist_photos.py: labelled 480x360 JPEGs of Fashion-MNIST's garments, the same bytes every build" {
	slow
	local py="$REPO/bench/fmnist_photos.py" fm=/usr/share/datasets/fashion-mnist
	run -0 /usr/bin/python3 "$py" "$fm" "$T/photos" "$T/a" 120 30
	run -0 /usr/bin/python3 "$py" "$fm" "$T/photos" "$T/b" 120 30
	diff -r "$T/a" "$T/b"
	[ "$(find "$T/a/train" -name '*.jpg' | wc -l)" -eq 120 ]
	[ "$(find "$T/a/test" -name '*.jpg' | wc -l)" -eq 30 ]
	[ -z "$(find "$T/a" -name '*.tmp')" ]
	run -0 identify -format '%m %wx%h\n' "$T/a/train/0/"*.jpg
	[ "$(printf '%s\n' "${lines[@]}" | sort -u)" = "JPEG 480x360" ]
	# the directories are the labels: the first 120 training labels'
	# counts, through rv-decode
	run -0 bash -c "'$BIN/rv-decode' -q --encoded '$T/a/train' | '$BIN/rv-inspect'"
	[[ "$output" == *"samples      120 "* ]]
	[[ "$output" == *"classes      10 (120 labelled, 0 unlabelled)"* ]]
	local want got
	want=$(/usr/bin/python3 -c "
import gzip
d = gzip.open('$fm/train-labels-idx1-ubyte.gz').read()[8:128]
print(' '.join(str(d.count(bytes([c]))) for c in range(10)))")
	got=$(for c in 0 1 2 3 4 5 6 7 8 9; do find "$T/a/train/$c" -name '*.jpg' | wc -l; done | paste -sd ' ')
	[ "$got" = "$want" ]
	# bad arguments: a one-line usage error, nothing written
	run -1 /usr/bin/python3 "$py" "$fm" "$T/photos" "$T/c" 120
	[[ "$output" == *"usage: fmnist_photos.py FMNIST_DIR PHOTO_DIR OUT N_TRAIN N_TEST"* ]]
	run -1 /usr/bin/python3 "$py" "$fm" "$T/photos" "$T/c" 60001 10
	[[ "$output" == *"train: 60000 images, not 60001"* ]]
	run -1 /usr/bin/python3 "$py" "$fm" "$T/photos" "$T/c" 10 10001
	[[ "$output" == *"test: 10000 images, not 10001"* ]]
	run -1 /usr/bin/python3 "$py" "$fm" "$T" "$T/c" 10 10
	[[ "$output" == *"no photographs"* ]]
	[ ! -e "$T/c" ]
}

@test "regime.sh: seven pipelines over two seeds on one step-counted schedule, every stage timed; tables over the seeds with the CPU per stage; results.jsonl" {
	slow
	run -0 --separate-stderr env RV_BUILD="${RV_BUILD:-build}" \
	    REGIME_OUT="$T/out" REGIME_PHOTOS="$T/photos" REGIME_TRAIN=400 \
	    REGIME_TEST=100 REGIME_EPOCHS=2 REGIME_SEEDS="4 7" \
	    REGIME_TARGET="0.02 0.05" REGIME_EVAL_EVERY=2 \
	    REGIME_RUNS="standard refurbish-2 refurbish-3 shrink random both shrink-r1" \
	    bash "$REPO/bench/regime.sh"
	[ "$output" = "$(cat "$T/out/results.md")" ]
	# 2 epochs of 400 at 128 a batch: 8 steps, every run
	[[ "${lines[0]}" == "Fashion-MNIST on photographs (400 training, 100 test JPEGs of 480x360), 'rrc size=64 scale=0.25,1; flip; randaugment n=2 m=9' to 64 px, "*"seeds 4 7; every run 8 steps (2 epochs of every sample at 128 a batch) on a cosine schedule counted in steps; evaluations every 2 steps, and at the end; "* ]]
	# to each target, 7 rows; every class is at least 6 of the first 100
	# test images, so a model reaches 2% and 5% at its first evaluation
	local ms='[0-9]+(\.[0-9]+)? ± [0-9]+(\.[0-9]+)?'
	run -0 grep -c -E "^\| [^|]+ \| (2|5) % \| 2/2 \| $ms \| $ms( †)? \| $ms \| $ms( †)? \|\$" "$T/out/results.md"
	[ "$output" -eq 14 ]
	for l in standard 'refurbished, r=2' 'refurbished, r=3' \
	    'shrunk, scored before the decode' \
	    "random drop of shrink's share (control)" \
	    'refurbished (r=3) + shrunk before the partials' \
	    'shrunk inside rv-refurbish (r=1), before the read'; do
		grep -qF "| $l | 5 % | 2/2 | " "$T/out/results.md"
		# the CPU table: six numbers per run
		grep -qE "^\| ${l//[()+]/.} \| $ms( †)? \| $ms( †)? \| $ms( †)? \| $ms( †)? \| $ms( †)? \| $ms( †)? \|\$" "$T/out/results.md"
	done
	grep -qF '| pipeline | data CPU (s) | data CPU a trained sample (ms) | rv-batch CPU (s) | trainer CPU (s) | data share of CPU (%) | kept |' "$T/out/results.md"
	for s in 4 7; do
		for k in standard refurbish-2 refurbish-3 shrink random both shrink-r1; do
			local d="$T/out/seed$s/$k"
			# the whole schedule, evaluated on the grid and at the end
			run -0 grep -o '"event":"eval","step":[0-9]*' "$d/train.log"
			[ "$(echo $output)" = '"event":"eval","step":2 "event":"eval","step":4 "event":"eval","step":6 "event":"eval","step":8' ]
			for f in data batch train; do
				tail -n 1 "$d/$f.time" | grep -qE '^[0-9]+\.[0-9]+ [0-9]+\.[0-9]+$'
			done
			# sampled while the data stage ran (a short run's may
			# end before the trainer's first evaluation)
			[ -f "$d/cpu_evals.txt" ]
		done
		# the assistant ran in the shrinking runs only: rv-score
		# before the decode in shrink and random, inside rv-refurbish
		# in both, which served exactly half of its second epoch
		for k in shrink random; do
			grep -q '^rv-score: epoch 0: 400 seen' "$T/out/seed$s/$k/score"
		done
		grep -q '^rv-refurbish: score epoch 0: 400 seen, 400 kept' "$T/out/seed$s/both/score"
		grep -q '^rv-refurbish: score epoch 1: 400 seen, 200 kept' "$T/out/seed$s/both/score"
		# shrink-r1: the same budget, a partial made for every sample served
		grep -q '^rv-refurbish: score epoch 1: 400 seen, 200 kept' "$T/out/seed$s/shrink-r1/score"
		grep -q '^rv-refurbish: epoch 1: 200 misses, 0 hits' "$T/out/seed$s/shrink-r1/score"
		[ ! -f "$T/out/seed$s/standard/score" ]
	done
	# the seeds give different runs
	! cmp -s "$T/out/seed4/standard/train.log" "$T/out/seed7/standard/train.log"
	[ "$(wc -l < "$T/out/runs.tsv")" -eq 14 ]
	# results.jsonl: a line a run and seed, every field
	run -0 python3 - "$T/out/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 14, len(rows)
keys = ("run seed target reached wall_s grads final_acc data_cpu_s "
        "data_cpu_total_s samples data_cpu_per_sample_ms kept steps "
        "wait_frac").split()
for r in rows:
    assert list(r) == keys, list(r)
    assert r["target"] == 0.05 and r["reached"] is True, r
    assert r["wall_s"] > 0 and r["grads"] > 0 and r["steps"] == 8, r
    assert 0 < r["data_cpu_s"] <= r["data_cpu_total_s"] + 0.05, r
    assert 0 < r["kept"] <= 1 and 0 <= r["final_acc"] <= 1, r
    if r["run"] in ("standard", "refurbish-2", "refurbish-3"):
        assert r["kept"] == 1, r
print(sorted({(r["run"], r["seed"]) for r in rows}) == sorted(
    (k, s) for k in ("standard", "refurbish-2", "refurbish-3", "shrink",
                     "random", "both", "shrink-r1") for s in (4, 7)))
PY
	[ "$output" = True ]
	# the image set is built once per recipe
	[ "$(cat "$T/out/data/.done")" = "v1 train=400 test=100 photos=$T/photos" ]
	[[ "$stderr" == *"== building 400 + 100 images"* ]]
	run -0 --separate-stderr env RV_BUILD="${RV_BUILD:-build}" \
	    REGIME_OUT="$T/out" REGIME_PHOTOS="$T/photos" REGIME_TRAIN=400 \
	    REGIME_TEST=100 REGIME_EPOCHS=1 REGIME_SEEDS=4 \
	    REGIME_RUNS="standard refurbish-2" REGIME_REUSE=2 \
	    bash "$REPO/bench/regime.sh"
	[[ "$stderr" != *"== building"* ]]
	[ "$(wc -l < "$T/out/runs.tsv")" -eq 2 ]
	[ "$(wc -l < "$T/out/results.jsonl")" -eq 2 ]
}

@test "regime.sh: bad settings are refused with a one-line error, before anything runs" {
	local e=(env RV_BUILD="${RV_BUILD:-build}" REGIME_OUT="$T/out"
	    REGIME_PHOTOS="$T/photos")
	run -1 "${e[@]}" REGIME_SEEDS="1 x" bash "$REPO/bench/regime.sh"
	[ "$output" = "regime.sh: REGIME_SEEDS: 'x': not a non-negative integer" ]
	run -1 "${e[@]}" REGIME_SEEDS="1 1" bash "$REPO/bench/regime.sh"
	[ "$output" = "regime.sh: REGIME_SEEDS: '1' twice" ]
	run -1 "${e[@]}" REGIME_TARGET="0.5 1.5" bash "$REPO/bench/regime.sh"
	[ "$output" = "regime.sh: REGIME_TARGET: '1.5': not an accuracy in (0, 1)" ]
	run -1 "${e[@]}" REGIME_EPOCHS=0 bash "$REPO/bench/regime.sh"
	[ "$output" = "regime.sh: REGIME_EPOCHS: at least 1" ]
	run -1 "${e[@]}" REGIME_TRAIN=70000 bash "$REPO/bench/regime.sh"
	[ "$output" = "regime.sh: REGIME_TRAIN: '70000': from 1 to 60000" ]
	run -1 "${e[@]}" REGIME_REUSE="2 0" bash "$REPO/bench/regime.sh"
	[ "$output" = "regime.sh: REGIME_REUSE: '0': not a positive integer" ]
	run -1 "${e[@]}" REGIME_RUNS="shrink standard" bash "$REPO/bench/regime.sh"
	[ "$output" = "regime.sh: REGIME_RUNS: the first run must be standard, the baseline" ]
	run -1 "${e[@]}" REGIME_RUNS="standard refurbish-x" bash "$REPO/bench/regime.sh"
	[ "$output" = "regime.sh: REGIME_RUNS: 'refurbish-x': standard, refurbish-R, shrink, random, both or shrink-r1" ]
	run -1 "${e[@]}" REGIME_KEEP=0 bash "$REPO/bench/regime.sh"
	[ "$output" = "regime.sh: REGIME_KEEP: '0': not a share in (0, 1]" ]
	run -1 "${e[@]}" REGIME_POLICY="--budget 0.5" bash "$REPO/bench/regime.sh"
	[ "$output" = "regime.sh: REGIME_POLICY: '--budget 0.5': rv-score's options, from --policy NAME on" ]
	[ ! -e "$T/out" ]
}

@test "regime.sh: a stage that fails mid-run, or an image set that cannot be built, stops the run with a one-line error and no tables" {
	slow
	# a build whose rv-augment fails in the training runs' data stage
	# (it passes through the set-up's "rv-augment ... -o test.rvs")
	mkdir -p "$T/b/bin" "$T/empty"
	local p
	for p in rv-decode rv-refurbish rv-score rv-batch rv-train-gpu; do
		ln -s "$BIN/$p" "$T/b/bin/$p"
	done
	printf '%s\n' '#!/bin/sh' \
	    "case \" \$* \" in *\" -o \"*) exec '$BIN/rv-augment' \"\$@\" ;; esac" \
	    'head -c 100000 >/dev/null' \
	    'echo "rv-augment: failing on purpose" >&2' 'exit 3' \
	    >"$T/b/bin/rv-augment"
	chmod +x "$T/b/bin/rv-augment"
	run -1 --separate-stderr env RV_BUILD="$T/b" REGIME_OUT="$T/out" \
	    REGIME_PHOTOS="$T/photos" REGIME_TRAIN=200 REGIME_TEST=50 \
	    REGIME_EPOCHS=1 REGIME_SEEDS=3 bash "$REPO/bench/regime.sh"
	[ "$output" = "" ]
	[ "${stderr_lines[-1]}" = "regime.sh: seed 3, standard: stage 1 of the pipeline exited 3; its files are in $T/out/seed3/standard" ]
	[[ "$stderr" == *"rv-augment: failing on purpose"* ]]
	[ ! -e "$T/out/results.md" ] && [ ! -s "$T/out/runs.tsv" ]
	# the image set was complete: it is kept for the next run
	[ "$(cat "$T/out/data/.done")" = "v1 train=200 test=50 photos=$T/photos" ]
	# photographs that are not there: the image set is not built
	run -1 --separate-stderr env RV_BUILD="${RV_BUILD:-build}" \
	    REGIME_OUT="$T/out2" REGIME_PHOTOS="$T/empty" REGIME_TRAIN=200 \
	    REGIME_TEST=50 REGIME_EPOCHS=1 REGIME_SEEDS=3 \
	    bash "$REPO/bench/regime.sh"
	[ "${stderr_lines[-1]}" = "regime.sh: fmnist_photos.py failed" ]
	[[ "$stderr" == *"no photographs"* ]]
	[ ! -e "$T/out2/data/.done" ] && [ ! -e "$T/out2/results.md" ]
}
