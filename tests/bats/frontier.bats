# bench/frontier.sh, the shrinking frontier, in a variant of seconds so
# that it does not rot: a grid of two budgets and four policies on the
# first 256 training images, results.jsonl that accumulates (a second
# sitting runs nothing), the controls following the assistant's kept
# share, the report and its plot, the noisy regime's labels, and bad
# settings and a failing run refused with nothing half-written.
# shellcheck shell=bash disable=SC2154

load helpers

setup() {
	need_fmnist
	W="$BATS_TEST_TMPDIR"
	SMOKE=(env FRONTIER_LIMIT=256 FRONTIER_TEST_LIMIT=200
	    FRONTIER_BUDGETS="0.5 1" FRONTIER_SEEDS=0 FRONTIER_THREADS=1
	    FRONTIER_OUT="$W/out" RV_BUILD="${BIN%/bin}")
}

# field FILE POLICY BUDGET KEY: KEY of that run in results.jsonl.
field() {
	python3 -c 'import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["policy"] == sys.argv[2] and o["budget_steps"] == int(sys.argv[3]):
        print(o[sys.argv[4]])' "$@"
}

@test "frontier.sh: a grid of budgets and policies, each run its schedule fitted to its budget; results accumulate; the controls follow the assistant" {
	run -0 "${SMOKE[@]}" FRONTIER_POLICIES="uniform assistant rs2 random" \
	    bash "$REPO/bench/frontier.sh" clean
	local r="$W/out/clean/results.jsonl"
	[ "$(wc -l < "$r")" = 8 ]
	# the reference is 10 epochs of 256 in batches of 128: 20 steps
	run -0 python3 -c 'import json, sys
keys = ("regime policy seed budget_steps budget grads final_acc wall_s "
        "data_cpu_s train_cpu_s kept kept_after keep_arg schedule n_train "
        "n_test").split()
for l in open(sys.argv[1]):
    o = json.loads(l)
    assert all(k in o for k in keys), o
    assert o["regime"] == "clean" and o["schedule"] == "linear", o
    assert (o["n_train"], o["n_test"]) == (256, 200), o
    assert 0 < o["final_acc"] <= 1 and o["wall_s"] > 0, o
    assert o["grads"] <= 128 * o["budget_steps"], o
    print(o["policy"], o["budget_steps"], o["budget"])' "$r"
	[ "$(sort <<<"$output" | tr '\n' ' ')" = "assistant 10 0.5 assistant 20 1 random 10 0.5 random 20 1 rs2 10 0.5 rs2 20 1 uniform 10 0.5 uniform 20 1 " ]
	# every sample for uniform; the trainer's --steps in its log
	[ "$(field "$r" uniform 20 grads)" = 2560 ]
	[ "$(field "$r" uniform 20 kept)" = 1 ]
	grep -q '"steps":20,' "$W/out/clean/runs/uniform-s0-b20.log"
	# rs2 runs at the assistant's share of everything it saw, random at
	# its share after the warm-up epoch, both from results.jsonl
	[ "$(field "$r" rs2 20 keep_arg)" = "$(field "$r" assistant 20 kept)" ]
	[ "$(field "$r" random 10 keep_arg)" = "$(field "$r" assistant 10 kept_after)" ]
	# the report: every policy at every budget, and the plot
	grep -q '^| budget (steps) | x ref | uniform | rs2 | random | assistant |$' \
	    "$W/out/clean/frontier.md"
	grep -q '^| 20 | 1.00 | [0-9.]* (1) | ' "$W/out/clean/frontier.md"
	[ "$(head -c 4 "$W/out/clean/frontier.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ]
	# a second sitting: nothing run again, one policy added
	run -0 "${SMOKE[@]}" FRONTIER_POLICIES="uniform history" \
	    bash "$REPO/bench/frontier.sh" clean
	[ "$(grep -c ': in results.jsonl$' <<<"$output")" = 2 ]
	[ "$(wc -l < "$r")" = 10 ]
	grep -q '| history |$' "$W/out/clean/frontier.md"
	# FRONTIER_REPORT=1 runs nothing and tabulates all of it
	rm "$W/out/clean/frontier.md"
	run -0 "${SMOKE[@]}" FRONTIER_REPORT=1 bash "$REPO/bench/frontier.sh" clean
	[[ "$output" == *"from 10 runs in results.jsonl"* ]]
	[ -s "$W/out/clean/frontier.md" ]
}

@test "frontier.sh noisy: 30% of the training labels made wrong by the bench, the test set clean" {
	run -0 "${SMOKE[@]}" FRONTIER_POLICIES="uniform history-nc" \
	    FRONTIER_BUDGETS=1 bash "$REPO/bench/frontier.sh" noisy
	[[ "$output" == *"# noisy labels: 18000 of 60000 wrong (0.3000)"* ]]
	local l="$W/out/noisy/data/train-labels-noise0.3-seed48-idx1-ubyte.gz"
	[ -s "$l" ]
	run -0 python3 -c 'import gzip, sys
a = gzip.open(sys.argv[1]).read()[8:]
b = gzip.open(sys.argv[2]).read()[8:]
print(len(a), sum(x != y for x, y in zip(a, b)), max(a))' "$l" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
	[ "$output" = "60000 18000 9" ]
	[ "$(wc -l < "$W/out/noisy/results.jsonl")" = 2 ]
	grep -q '"regime":"noisy","policy":"history-nc"' \
	    "$W/out/noisy/results.jsonl"
	# the cut is on: rv-score's epoch lines count the suspects
	grep -q '; [0-9]* suspected$' "$W/out/noisy/runs/history-nc-s0-b20.score"
}

@test "frontier.sh: bad settings are refused in one line before anything is written; a failing run leaves nothing behind" {
	run -2 --separate-stderr "${SMOKE[@]}" bash "$REPO/bench/frontier.sh" \
	    blurry
	[ "${stderr_lines[0]}" = "frontier.sh: 'blurry': not a regime (clean, noisy or photos)" ]
	local v want
	while IFS='|' read -r v want; do
		run -1 --separate-stderr "${SMOKE[@]}" "$v" \
		    bash "$REPO/bench/frontier.sh" clean
		[ "$stderr" = "frontier.sh: $want" ] ||
		    { echo "$v: got '$stderr'"; return 1; }
		[ ! -e "$W/out" ]
	done <<'EOF'
FRONTIER_BUDGETS=0 1|FRONTIER_BUDGETS: '0': not a fraction of the reference in (0, 1]
FRONTIER_BUDGETS=1.5|FRONTIER_BUDGETS: '1.5': not a fraction of the reference in (0, 1]
FRONTIER_BUDGETS=0.5 0.5|FRONTIER_BUDGETS: '0.5' twice
FRONTIER_POLICIES=best|FRONTIER_POLICIES: 'best': not a policy (uniform, rs2, random, assistant, assistant-f15, autoassist, history, assistant-nc, history-nc or cut-only)
FRONTIER_SEEDS=x|FRONTIER_SEEDS: 'x': not a non-negative integer
FRONTIER_SCHEDULE=step|FRONTIER_SCHEDULE: 'step': want linear or cosine
FRONTIER_NOISE=1.2|FRONTIER_NOISE: '1.2': not a fraction in [0, 1)
FRONTIER_TARGETS=92|FRONTIER_TARGETS: '92': not an accuracy in (0, 1)
FRONTIER_LR=-1|FRONTIER_LR: '-1': not a positive number
FRONTIER_REF_EPOCHS=x|FRONTIER_REF_EPOCHS: 'x': not a positive integer
EOF
	# a trainer that fails: the run's logs go, results.jsonl keeps none
	mkdir -p "$W/b/bin"
	local p
	for p in rv-decode rv-score rv-batch; do
		ln -s "$BIN/$p" "$W/b/bin/$p"
	done
	printf '#!/bin/sh\ncat >/dev/null\necho "rv-train-gpu: out of luck" >&2\nexit 3\n' \
	    > "$W/b/bin/rv-train-gpu"
	chmod +x "$W/b/bin/rv-train-gpu"
	run -1 --separate-stderr "${SMOKE[@]}" RV_BUILD="$W/b" \
	    FRONTIER_POLICIES=assistant bash "$REPO/bench/frontier.sh" clean
	[[ "$stderr" == *"rv-train-gpu: out of luck"* ]]
	[[ "${stderr_lines[-1]}" == "frontier.sh: assistant-s0-b10 failed: rv-train-gpu exited 3" ]]
	[ ! -s "$W/out/clean/results.jsonl" ]
	[ -z "$(ls "$W/out/clean/runs")" ]
}

# photos_env: regime photos in seconds: 256 training and 64 test images on
# two plasma backgrounds, a reference of 2 epochs (4 steps).
photos_env() {
	[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import PIL, numpy' 2>/dev/null ||
	    skip "needs /usr/bin/python3 with PIL and numpy"
	mkdir -p "$W/photos"
	convert -seed 1 -size 640x480 plasma:green-blue "$W/photos/a.jpg"
	convert -seed 2 -size 500x500 plasma:yellow-red "$W/photos/b.jpg"
	PHOTOS=(env FRONTIER_TRAIN=256 FRONTIER_TEST=64 FRONTIER_REF_EPOCHS=2
	    FRONTIER_BUDGETS="0.5 1" FRONTIER_SEEDS="0 1" FRONTIER_REUSE=2
	    FRONTIER_PHOTOS="$W/photos" FRONTIER_OUT="$W/out"
	    RV_BUILD="${BIN%/bin}")
}

@test "fmnist_photos.py: labelled 480x360 JPEGs of Fashion-MNIST's garments, the same bytes every build" {
	slow
	photos_env
	local py="$REPO/bench/fmnist_photos.py" fm=/usr/share/datasets/fashion-mnist
	run -0 /usr/bin/python3 "$py" "$fm" "$W/photos" "$W/a" 120 30
	run -0 /usr/bin/python3 "$py" "$fm" "$W/photos" "$W/b" 120 30
	diff -r "$W/a" "$W/b"
	[ "$(find "$W/a/train" -name '*.jpg' | wc -l)" -eq 120 ]
	[ "$(find "$W/a/test" -name '*.jpg' | wc -l)" -eq 30 ]
	[ -z "$(find "$W/a" -name '*.tmp')" ]
	run -0 identify -format '%m %wx%h\n' "$W/a/train/0/"*.jpg
	[ "$(printf '%s\n' "${lines[@]}" | sort -u)" = "JPEG 480x360" ]
	# the directories are the labels: the first 120 training labels'
	# counts, through rv-decode
	run -0 bash -c "'$BIN/rv-decode' -q --encoded '$W/a/train' | '$BIN/rv-inspect'"
	[[ "$output" == *"samples      120 "* ]]
	[[ "$output" == *"classes      10 (120 labelled, 0 unlabelled)"* ]]
	local want got
	want=$(/usr/bin/python3 -c "
import gzip
d = gzip.open('$fm/train-labels-idx1-ubyte.gz').read()[8:128]
print(' '.join(str(d.count(bytes([c]))) for c in range(10)))")
	got=$(for c in 0 1 2 3 4 5 6 7 8 9; do find "$W/a/train/$c" -name '*.jpg' | wc -l; done | paste -sd ' ')
	[ "$got" = "$want" ]
	# bad arguments: a one-line usage error, nothing written
	run -1 /usr/bin/python3 "$py" "$fm" "$W/photos" "$W/c" 120
	[[ "$output" == *"usage: fmnist_photos.py FMNIST_DIR PHOTO_DIR OUT N_TRAIN N_TEST"* ]]
	run -1 /usr/bin/python3 "$py" "$fm" "$W/photos" "$W/c" 60001 10
	[[ "$output" == *"train: 60000 images, not 60001"* ]]
	run -1 /usr/bin/python3 "$py" "$fm" "$W/photos" "$W/c" 10 10001
	[[ "$output" == *"test: 10000 images, not 10001"* ]]
	run -1 /usr/bin/python3 "$py" "$fm" "$W" "$W/c" 10 10
	[[ "$output" == *"no photographs"* ]]
	[ ! -e "$W/c" ]
}

@test "frontier.sh photos: the data-bound pipelines on one grid, the controls and both at shrink's share, the wall time to standard's accuracy" {
	slow
	photos_env
	run -0 "${PHOTOS[@]}" \
	    FRONTIER_POLICIES="standard refurbish-2 shrink rs2 both shrink-r1" \
	    bash "$REPO/bench/frontier.sh" photos
	local r="$W/out/photos/results.jsonl"
	[ "$(wc -l < "$r")" = 24 ]
	# shrink ran first: the controls and both read its share
	[[ "$(grep -m1 '^# [a-z0-9-]*-s0-b2:' <<<"$output")" == "# shrink-s0-b2: "* ]]
	run -0 python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {(o["pipeline"], o["seed"], o["budget_steps"]): o for o in rows}
for o in rows:
    assert o["regime"] == "photos" and o["policy"] == o["pipeline"], o
    assert (o["n_train"], o["n_test"], o["ref_steps"]) == (256, 64, 4), o
    assert 0 <= o["final_acc"] <= 1 and o["grads"] <= 128 * o["budget_steps"], o
    assert 0 < o["train_wall_s"] <= o["wall_s"] and o["data_cpu_s"] > 0, o
    if o["pipeline"] in ("standard", "refurbish-2"):
        assert o["kept"] == 1 and o["grads"] == 128 * o["budget_steps"], o
    if o["pipeline"] == "rs2":
        assert o["keep_arg"] == by[("shrink", o["seed"], o["budget_steps"])]["kept"], o
    if o["pipeline"] in ("both", "shrink-r1"):
        assert o["keep_arg"] == by[("shrink", o["seed"], o["budget_steps"])]["kept_after"], o
print(" ".join(sorted({o["pipeline"] for o in rows})))' "$r"
	[ "$output" = "both refurbish-2 rs2 shrink shrink-r1 standard" ]
	# how data-bound the machine makes the job, measured each sitting
	run -0 python3 -c 'import json, sys
b = json.load(open(sys.argv[1]))
assert b["data_per_s"] > 0 and b["train_per_s"] > 0 and b["cores"] >= 1, b
assert b["cpu"] and b["date"], b' "$W/out/photos/balance.json"
	[[ "$output" == "" ]]
	# the scorers' epoch lines: rv-score's for shrink, rv-refurbish's for both
	grep -q '^rv-score: epoch 1: ' "$W/out/photos/runs/shrink-s0-b4.score"
	grep -q '^rv-refurbish: score epoch 1: ' "$W/out/photos/runs/both-s1-b4.score"
	# shrink-r1: every sample served a partial of its own, none reused
	local r1="$W/out/photos/runs/shrink-r1-s0-b4.score"
	grep -q '^rv-refurbish: score epoch 1: 256 seen, ' "$r1"
	grep -Eq '^rv-refurbish: epoch 1: [1-9][0-9]* misses, 0 hits' "$r1"
	! grep -Eq '^rv-refurbish: epoch [0-9]+: [0-9]+ misses, [1-9]' "$r1"
	# the report: accuracy per budget against standard, the wall-time table
	local md="$W/out/photos/frontier.md"
	grep -q '^| budget (steps) | x ref | standard | refurbish-2 | rs2 | shrink | both | shrink-r1 |$' "$md"
	grep -q "^## Wall time to the baseline's final accuracy" "$md"
	grep -Eq '^\| 1\.0x \(4 steps\) \| [0-9.]+ % \| [0-9]+ \| ' "$md"
	grep -q "^standard's last doubling of steps, 2 to 4: " "$md"
	grep -Eq '^Balance on this machine \([0-9]+ cores, .*\): the data stage alone prepares [0-9]+ images/s on its core, the trainer alone trains [0-9]+/s, [0-9.]+x as fast: ' "$md"
	grep -Eq '^- both reaches standard.s 1.0x final accuracy in <= 0.60x its wall, beyond the spread: [0-9.]+x: (MET|MISSED)$' "$md"
	grep -Eq '^- both beats refurbish-2 alone beyond the spread: ' "$md"
	[ "$(head -c 4 "$W/out/photos/frontier.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ]
}

@test "frontier.sh photos: stored-R trains refurbish-R's plan from partials stored once as JPEG" {
	slow
	photos_env
	run -0 "${PHOTOS[@]}" FRONTIER_SEEDS=0 FRONTIER_BUDGETS=1 \
	    FRONTIER_POLICIES="refurbish-2 stored-2" \
	    bash "$REPO/bench/frontier.sh" photos
	local r="$W/out/photos/results.jsonl"
	run -0 python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert sorted(o["pipeline"] for o in rows) == ["refurbish-2", "stored-2"], rows
for o in rows:
    assert o["grads"] == 128 * o["budget_steps"] and 0 <= o["final_acc"] <= 1, o
    assert o["data_cpu_s"] > 0, o' "$r"
	grep -q '^| budget (steps) | x ref | refurbish-2 | stored-2 |$' \
	    "$W/out/photos/frontier.md"
}

@test "frontier.sh photos: a regime it cannot build is one line naming what to install, nothing written" {
	photos_env
	run -1 --separate-stderr "${PHOTOS[@]}" FRONTIER_PHOTOS="$W/none" \
	    bash "$REPO/bench/frontier.sh" photos
	[ "$stderr" = "frontier.sh: FRONTIER_PHOTOS: '$W/none': no photographs (*.jpg) there: bench/photos.sh makes them from mate-backgrounds (apt-get install mate-backgrounds imagemagick)" ]
	[ ! -e "$W/out" ]
	printf '#!/bin/sh\nexit 1\n' > "$W/py"
	chmod +x "$W/py"
	run -1 --separate-stderr "${PHOTOS[@]}" FRONTIER_PYTHON="$W/py" \
	    bash "$REPO/bench/frontier.sh" photos
	[ "$stderr" = "frontier.sh: '$W/py' cannot import PIL and numpy, which regime photos builds its images with: apt-get install python3-pil python3-numpy" ]
	[ ! -e "$W/out" ]
	run -1 --separate-stderr "${PHOTOS[@]}" FRONTIER_POLICIES="standard uniform" \
	    bash "$REPO/bench/frontier.sh" photos
	[ "$stderr" = "frontier.sh: FRONTIER_POLICIES: 'uniform': not a pipeline of regime photos (standard, refurbish-R or stored-R with R from 1 to 99, shrink, rs2, random, both or shrink-r1)" ]
	run -1 --separate-stderr "${PHOTOS[@]}" FRONTIER_TRAIN=0 \
	    bash "$REPO/bench/frontier.sh" photos
	[ "$stderr" = "frontier.sh: FRONTIER_TRAIN: '0': not a positive integer" ]
	[ ! -e "$W/out" ]
	# a trainer that fails stops the sitting at the balance, before any
	# run: no balance.json, no results
	mkdir -p "$W/b/bin"
	local p
	for p in rv-decode rv-score rv-batch rv-augment rv-refurbish; do
		ln -s "$BIN/$p" "$W/b/bin/$p"
	done
	printf '#!/bin/sh\ncat >/dev/null\necho "rv-train-gpu: out of luck" >&2\nexit 3\n' \
	    > "$W/b/bin/rv-train-gpu"
	chmod +x "$W/b/bin/rv-train-gpu"
	run -1 --separate-stderr "${PHOTOS[@]}" RV_BUILD="$W/b" \
	    FRONTIER_POLICIES=standard bash "$REPO/bench/frontier.sh" photos
	[[ "$stderr" == *"rv-train-gpu: out of luck"* ]]
	[ "${stderr_lines[-1]}" = "frontier.sh: the trainer alone (balance) failed" ]
	[ ! -e "$W/out/photos/balance.json" ]
	[ ! -s "$W/out/photos/results.jsonl" ]
}
