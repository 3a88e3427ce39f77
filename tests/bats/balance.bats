# Shrinking keeps refurbishing's even batches: on the main pipeline's
# order, rv-refurbish | rv-score --budget | rv-batch | rv-train-gpu, with
# the trainer's feedback driving rv-score's assistant for real, every
# trained batch holds the same number of rv-refurbish's misses, +-1
# (rv-score(1), strata); rv-score's independent draws do not, which is
# why the budget is the composition to use; rv-batch says when its batch
# size undoes it.  Records are read by tests/checks/rvparse.py's reader.
# shellcheck shell=bash disable=SC2154

load helpers

PARTIAL='randaugment n=1 m=5'
FINAL='random_crop size=28 padding=2; flip'

# misses KEPT BATCHES: for every full batch of BATCHES (a tee of what the
# trainer read), the epoch and the number of its members that KEPT (a tee
# of rv-score's output) says were misses (no RV_F_CACHED, 0x4): one line
# "EPOCH MISSES" per batch; then "kept EPOCH N MISSES" per epoch.
PY_MISSES='
import sys
sys.path.insert(0, sys.argv[3])
import rvparse, zstandard
def recs(path):
    with open(path, "rb") as f:
        data = zstandard.ZstdDecompressor().stream_reader(f).read()
    return rvparse.records(data)
fresh, kept = {}, {}
for r in recs(sys.argv[1]):
    if r["kind"] == 1:
        miss = not (r["flags"] & 4)
        fresh[(r["epoch"], r["id"])] = miss
        n, m = kept.get(r["epoch"], (0, 0))
        kept[r["epoch"]] = (n + 1, m + miss)
size = int(sys.argv[4])
for r in recs(sys.argv[2]):
    if r["kind"] == 2 and r["count"] == size:
        ids = [int.from_bytes(r["payload"][8 * i:8 * i + 8], "little")
               for i in range(r["count"])]
        print(r["epoch"], sum(fresh[(r["epoch"], i)] for i in ids))
for e in sorted(kept):
    print("kept", e, *kept[e])
'

# meta FILE: the keys of FILE's metadata records, one KEY=VALUE a line.
PY_META='
import sys
sys.path.insert(0, sys.argv[2])
import rvparse, zstandard
with open(sys.argv[1], "rb") as f:
    data = zstandard.ZstdDecompressor().stream_reader(f).read()
for r in rvparse.records(data):
    if r["kind"] == 4:
        print(r["payload"].decode())
'
meta() {
	"$PY" -c "$PY_META" "$1" "$REPO/tests/checks"
}

# spread FILE: per epoch after the first, "EPOCH MIN MAX BATCHES" of the
# misses per batch lines of FILE.
spread() {
	awk '$1 != "kept" && $1 > 0 {
	    if (!($1 in lo) || $2 < lo[$1]) lo[$1] = $2
	    if (!($1 in hi) || $2 > hi[$1]) hi[$1] = $2
	    n[$1]++ }
	    END { for (e in n) print e, lo[e], hi[e], n[e] }' "$1" | sort -n
}

setup_file() {
	need_fmnist
	need_torch zstandard
	rv-decode -q --shuffle --limit 3000 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" > "$BATS_FILE_TMPDIR/train.rvs"
}

setup() {
	T="$BATS_FILE_TMPDIR"
	W="$BATS_TEST_TMPDIR"
	MODEL='conv 8 k=3 pad=1; bn; relu; maxpool 2; linear'
	need_torch zstandard
}

# loop SCOREOPTS: the main pipeline's order on 3000 samples, 5 epochs,
# reuse 3, groups of 64, batches of 32, the trainer's feedback back to
# rv-score's assistant; kept.rvs and batches.rvs are tees of rv-score's
# and rv-batch's output, score.err rv-score's -v lines.
loop() {
	mkfifo "$W/fb"
	run -0 --separate-stderr timeout 300 bash -c "set -o pipefail
	    rv-refurbish -q --partial '$PARTIAL' --final '$FINAL' --reuse 3 \
		--epochs 5 --batch 64 '$T/train.rvs' |
	    rv-score -v --feedback '$W/fb' --min-feedback 100 $1 \
		2> '$W/score.err' | tee '$W/kept.rvs' |
	    rv-batch -q -b 32 | tee '$W/batches.rvs' |
	    rv-train-gpu -q -j 1 -b 32 --lr 0.01 -m '$MODEL' \
		--feedback '$W/fb' > /dev/null"
	"$PY" -c "$PY_MISSES" "$W/kept.rvs" "$W/batches.rvs" "$REPO/tests/checks" 32 \
	    > "$W/misses"
}

@test "balance: refurbish | score --budget | batch | train: misses per trained batch within +-1, the assistant choosing" {
	slow
	loop "--budget 0.5"
	cat "$W/score.err"
	# the window is rv-refurbish's group, 64, and keeps 32 of it
	meta "$W/kept.rvs" | grep -x 'score.window=64' > /dev/null
	meta "$W/kept.rvs" | grep -x 'score.window_keep=32' > /dev/null
	# epoch 0 passes whole (warm-up); then 1500 kept an epoch: 46
	# windows of 32 and the last, of 56, 28
	grep -qx 'kept 0 3000 3000' "$W/misses"
	local e
	for e in 1 2 3 4; do
		grep -Eqx "kept $e 1500 [0-9]+" "$W/misses" ||
		    { grep kept "$W/misses"; return 1; }
	done
	# the assistant had learned from 100 of the trainer's lines by the
	# end of epoch 3: its predictions chose epoch 4's samples at least
	[[ "$(grep '^rv-score: epoch 3:' "$W/score.err")" =~ feedback\ ([0-9]+)\ lines ]]
	[ "${BASH_REMATCH[1]}" -ge 100 ]
	spread "$W/misses" > "$W/spread"
	cat "$W/spread"
	[ "$(wc -l < "$W/spread")" -eq 4 ]
	local lo hi n
	while read -r e lo hi n; do
		[ "$n" -eq 46 ] && [ $((hi - lo)) -le 1 ] ||
		    { echo "epoch $e: $lo..$hi misses over $n batches"; return 1; }
	done < "$W/spread"
}

@test "balance: without --budget, rv-score's independent draws spread the misses per batch" {
	slow
	loop ""
	spread "$W/misses" > "$W/spread"
	cat "$W/spread"
	# binomial: about 11 +- 2.7 a batch of 32; 3 apart over 40-odd
	# batches an epoch misses with probability far below 1e-9
	local e lo hi n wide=0
	while read -r e lo hi n; do
		[ $((hi - lo)) -ge 3 ] && wide=$((wide + 1))
	done < "$W/spread"
	[ "$wide" -eq 4 ]
}

@test "balance: --window overrides refurbish.batch; rv-batch warns once when its batches cut the windows" {
	slow
	rv-refurbish -q --partial "$PARTIAL" --final "$FINAL" --reuse 3 \
	    --epochs 3 --batch 64 "$T/train.rvs" > "$W/ref.rvs"
	rv-score -q --budget 0.5 --window 100 "$W/ref.rvs" > "$W/k100.rvs"
	meta "$W/k100.rvs" | grep -x 'score.window=100' > /dev/null
	meta "$W/k100.rvs" | grep -x 'score.window_keep=50' > /dev/null
	rv-score -q --budget 0.3 "$W/ref.rvs" > "$W/k.rvs"
	meta "$W/k.rvs" | grep -x 'score.window=64' > /dev/null
	meta "$W/k.rvs" | grep -x 'score.window_keep=19' > /dev/null
	run -0 --separate-stderr rv-batch -q -b 38 "$W/k.rvs"
	[ -z "$stderr" ]
	run -0 --separate-stderr rv-batch -q -b 32 "$W/k.rvs"
	[ "$stderr" = "rv-batch: warning: batches of 32 cut across rv-score's windows of 19 kept samples (score.window_keep): they no longer hold even shares of rv-refurbish's misses; -b 19 keeps them even" ]
	run -0 --separate-stderr rv-batch -q -b 19 --shuffle-buffer 100 \
	    "$W/k.rvs"
	[ "$stderr" = "rv-batch: warning: --shuffle-buffer mixes rv-score's windows of 19 kept samples: batches no longer hold even shares of rv-refurbish's misses" ]
	# a stream that was not refurbished has no misses to keep even
	rv-score -q --budget 0.3 "$T/train.rvs" > "$W/plain.rvs"
	meta "$W/plain.rvs" | grep -x 'score.window=256' > /dev/null
	run -0 --separate-stderr rv-batch -q -b 32 "$W/plain.rvs"
	[ -z "$stderr" ]
}

@test "balance: a refurbish.batch over the largest window is refused, naming the record, with nothing written; --window takes over" {
	slow
	rv-refurbish -q --partial flip --final '' --reuse 2 --epochs 2 \
	    --batch 70000 "$T/train.rvs" > "$W/big.rvs"
	run -1 --separate-stderr rv-score -q --budget 0.5 -o "$W/out.rvs" \
	    "$W/big.rvs"
	[ "$stderr" = "rv-score: '$W/big.rvs': record 0 at byte 0: refurbish.batch 70000: over the largest --budget window, 65536: give --window" ]
	# no output, and no temporary file beside it
	[ -z "$(ls -A "$W" | grep out)" ]
	run -0 --separate-stderr rv-score -q --budget 0.5 --window 1000 \
	    -o "$W/out.rvs" "$W/big.rvs"
	meta "$W/out.rvs" | grep -x 'score.window=1000' > /dev/null
}

@test "bench/balance.sh: both compositions over two seeds, a row per run from its own logs, a line per composition over the seeds; bad settings refused" {
	slow
	run -0 --separate-stderr env RV_BUILD="${RV_BUILD:-build}" \
	    BAL_OUT="$W/out" BAL_SEEDS="3 5" BAL_EPOCHS=2 BAL_LIMIT=1000 \
	    BAL_THREADS=1 bash "$REPO/bench/balance.sh"
	[ "${lines[0]}" = "# misses per trained batch: cnn-small on Fashion-MNIST (1000 training images), 2 epochs, reuse 3, batch 128, trainer -j 1; seeds 3 5" ]
	# per run: comp, seed, misses mean, sd, min, max; kept %;
	# accuracy %; grads; wall
	local num='[0-9]+\.[0-9]+' c s row grads
	for c in draws budget; do
		for s in 3 5; do
			row=$(printf '%s\n' "${lines[@]}" | grep -E "^$c +$s ")
			[[ $row =~ ^$c\ +$s\ +$num\ +$num\ +[0-9]+\ +[0-9]+\ +$num\ +$num\ +([0-9]+)\ +$num$ ]]
			# grads: the trainer's summary line's
			grads=$(grep '"event":"summary"' "$W/out/$c-$s.log" |
			    grep -o '"grads":[0-9]*')
			[ "${BASH_REMATCH[1]}" = "${grads#*:}" ]
			[ -s "$W/out/$c-$s.misses" ]
		done
		# the budget keeps the whole first epoch and half the second
		[ "$c" = draws ] || [[ $row == *" 75.0 "* ]]
		printf '%s\n' "${lines[@]}" | grep -qE "^$c +sd of misses $num \($num-$num\), range [0-9]+-[0-9]+; kept $num%; accuracy $num% \($num-$num\); grads [0-9]+; wall [0-9]+ s \([0-9]+-[0-9]+\)\$"
	done
	run -1 env RV_BUILD="${RV_BUILD:-build}" BAL_OUT="$W/bad" BAL_EPOCHS=1 \
	    bash "$REPO/bench/balance.sh"
	[ "$output" = "balance.sh: BAL_EPOCHS: at least 2: the misses are counted after the first epoch" ]
	run -1 env RV_BUILD="${RV_BUILD:-build}" BAL_OUT="$W/bad" BAL_LIMIT=200 \
	    bash "$REPO/bench/balance.sh"
	[ "$output" = "balance.sh: BAL_LIMIT: '200': at least 256, two batches of 128 (--budget 0.5 keeps one)" ]
	run -1 env RV_BUILD="${RV_BUILD:-build}" BAL_OUT="$W/bad" BAL_SEEDS="1 1" \
	    bash "$REPO/bench/balance.sh"
	[ "$output" = "balance.sh: BAL_SEEDS: '1' twice" ]
	[ ! -e "$W/bad" ]
}
