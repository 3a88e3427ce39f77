# rv-score: usage, the three policies' keep decisions and what kept
# samples carry, the per-epoch reports, determinism, bad input and bad
# feedback, the score -> batch -> train -> FIFO loop run for real (it
# must end, whichever stage starts first or stops early), and --budget's
# exact counts: the same on every data-parallel rank.  Records are read
# by the small python below (header layout: tests/checks/rvparse.py).
# shellcheck shell=bash disable=SC2154

load helpers

# records FILE: one line per record, "sample EPOCH ID FLAGS WEIGHT SCORE
# DTYPE", "end EPOCH COUNT", "meta" followed by "#KEY=VALUE" lines.
PY_RECORDS='
import struct, sys
b = sys.stdin.buffer.read()
out = sys.stdout
off = 0
while off < len(b):
    (magic, ver, hl, kind, dt, flags, ep, rid, label, h, w, c, n, uses,
     wt, sc, pl) = struct.unpack_from("<IHHBBHIQiIIIIIffQ", b, off)
    assert magic == 0x31525652
    p = b[off + hl:off + hl + pl]
    off += hl + pl
    if kind == 1:
        out.write("sample %d %d %d %g %s %d\n" % (ep, rid, flags, wt,
                  "nan" if sc != sc else repr(sc), dt))
    elif kind == 3:
        out.write("end %d %d\n" % (ep, n))
    elif kind == 4:
        out.write("meta\n")
        for line in p.decode().splitlines():
            out.write("#" + line + "\n")
'

records() {
	zstd -qdc "$1" | python3 -c "$PY_RECORDS"
}

# fbline ID GRADNORM: one feedback line (rv-feedback(5)).
FB_AWK='{ printf "%d\t0\t%d\t1.5\t%s\n", $1, NR, $2 }'

# epoch_counts FILE: "EPOCH SAMPLES END-COUNT" a line, from rv-inspect.
epoch_counts() {
	rv-inspect "$1" | awk '/^epochs/ { on = 1; next }
	    on && /^  [0-9]/ { print $1, $2, $5; next }
	    on { exit }'
}

# budget_count N F W: the samples --budget F --window W keeps of an epoch
# of N: F w rounded half up, at least 1, summed over its windows.
budget_count() {
	awk -v n="$1" -v f="$2" -v w="$3" 'BEGIN {
	    for (t = 0; n > 0; n -= m) {
		m = n < w ? n : w
		k = int(f * m + 0.5 + 1e-9)
		t += k < 1 ? 1 : k
	    }
	    print t }'
}

setup_file() {
	need_fmnist
	local t="$BATS_FILE_TMPDIR" img lab
	img="$FMNIST/train-images-idx3-ubyte.gz"
	lab="$FMNIST/train-labels-idx1-ubyte.gz"
	rv-decode -q --epochs 3 --shuffle --limit 2000 "$img" "$lab" \
	    > "$t/s3.rvs"
	rv-decode -q --epochs 4 --shuffle --limit 3000 "$img" "$lab" \
	    > "$t/s4.rvs"
	rv-decode -q --limit 40 "$img" "$lab" | rv-batch -q -b 8 > "$t/b.rvs"
	# the history test's feedback: ids < 1000 informative, the rest not
	seq 0 1999 | awk '{ print $1, ($1 < 1000 ? 10 : 0.5 + $1 / 10000) }' |
	    awk "$FB_AWK" > "$t/hist.fb"
}

setup() {
	T="$BATS_FILE_TMPDIR"
	W="$BATS_TEST_TMPDIR"
	MODEL='conv 8 k=3 pad=1; bn; relu; maxpool 2; linear'
}

@test "rv-score: --help, --version and usage errors" {
	run -0 --separate-stderr rv-score --help
	[[ "${lines[0]}" == "usage: rv-score [-qv] "* ]]
	[ -z "$stderr" ]
	local opt
	for opt in output feedback policy assistant floor beta keep reweight \
	    budget window target features lr l2 min-feedback max-inflight \
	    max-ids \
	    seed level jobs quiet verbose help version; do
		[[ "$output" == *"--$opt"* ]] || { echo "no --$opt"; return 1; }
	done
	run -0 --separate-stderr rv-score --version
	[[ "$output" == *"0.1.0"* ]]
	local args want
	# shellcheck disable=SC2086
	while IFS='|' read -r args want; do
		run -2 --separate-stderr rv-score $args "$T/s3.rvs"
		[ -z "$output" ]
		[ "${stderr_lines[0]}" = "rv-score: $want" ] ||
		    { echo "$args: got '${stderr_lines[0]}'"; return 1; }
		[ "${stderr_lines[1]}" = "Try 'rv-score --help' for more information." ]
	done <<'EOF'
--policy best|--policy: 'best': want assistant, history, uniform or rs2
--policy rs2 --keep 0|--keep: '0': out of range (0, 1]
--policy rs2 --keep 1.01|--keep: '1.01': out of range [0, 1]
--policy rs2 --budget 0.5|--policy rs2: not with --budget: rs2 keeps its --keep share of each epoch itself
--policy rs2 --reweight|--reweight: not with --policy rs2, whose kept samples all had the same chance (weight 1)
--noise-cut -1|--noise-cut: '-1': out of range [0, 1e+06]
--noise-cut x|--noise-cut: 'x': not a number
--noise-cut 2 --policy uniform|--noise-cut: only with --policy assistant or history
--policy rs2 --noise-cut auto|--noise-cut: only with --policy assistant or history
--noise-keep 0.1|--noise-keep: only with --noise-cut
--noise-keep 2 --noise-cut auto|--noise-keep: '2': out of range [0, 1]
--noise-streak 2|--noise-streak: only with --noise-cut
--noise-streak 0 --noise-cut auto|--noise-streak: '0': out of range [1, 255]
--floor 2|--floor: '2': out of range [0, 1]
--keep 0|--keep: '0': out of range (0, 1]
--keep 1.5|--keep: '1.5': out of range [0, 1]
--target acc|--target: 'acc': want gradnorm or loss
--features pixels|--features: 'pixels': want image,history or image
--max-inflight 0|--max-inflight: '0': out of range [1, 1073741824]
--budget 0|--budget: '0': out of range (0, 1]
--budget 1.5|--budget: '1.5': out of range [0, 1]
--budget -0.5|--budget: '-0.5': out of range [0, 1]
--budget half|--budget: 'half': not a number
--budget 0.5 --window 0|--window: '0': out of range [1, 65536]
--budget 0.5 --window 65537|--window: '65537': out of range [1, 65536]
--window 64|--window: only with --budget
--budget 0.5 --keep 0.3|--keep: not with --budget, which sets the fraction kept
--assistant best|--assistant: 'best': want rv or autoassist
--policy history --assistant autoassist|--assistant: only with --policy assistant
--policy uniform --assistant rv|--assistant: only with --policy assistant
--assistant autoassist --features image|--features: not with --assistant autoassist, whose features are the whole image
--features image,history --assistant autoassist|--features: not with --assistant autoassist, whose features are the whole image
--assistant autoassist --target gradnorm|--target gradnorm: not with --assistant autoassist, which learns the loss
--bogus|unknown option '--bogus'
EOF
}

@test "rv-score: uniform keeps about F of each epoch after the first, flagged, reweighted" {
	run -0 --separate-stderr rv-score -v --policy uniform --keep 0.5 \
	    --reweight -o "$W/u.rvs" "$T/s3.rvs"
	[ "${#stderr_lines[@]}" -eq 4 ]
	[[ "${stderr_lines[3]}" == "rv-score: 6000 seen, "*" in 3 epochs; feedback 0 lines (0 unmatched)" ]]
	records "$W/u.rvs" > "$W/r"
	# per epoch: kept samples, the epoch end's count, weights, flags, scores
	run -0 awk '
	    $1 == "sample" { n[$2]++; w[$2 " " $5]++
		if (int($4 / 8) % 2 != 1 || int($4 / 16) % 2 != 1) bad++
		if ($6 != "nan") bad++ }
	    $1 == "end" { printf "%d %d %d %d %d\n", $2, n[$2], $3,
		w[$2 " 1"], w[$2 " 2"] }
	    END { print "bad", bad + 0 }' "$W/r"
	[ "${lines[3]}" = "bad 0" ]
	# the first epoch is warm-up: all pass, weight 1
	[ "${lines[0]}" = "0 2000 2000 2000 0" ]
	local e k c w1 w2
	for i in 1 2; do
		read -r e k c w1 w2 <<<"${lines[$i]}"
		[ "$e" -eq "$i" ] && [ "$k" -eq "$c" ] && [ "$w1" -eq 0 ] &&
		    [ "$w2" -eq "$k" ]
		# binomial(2000, 0.5): 4 standard errors are 89
		[ "$k" -ge 911 ] && [ "$k" -le 1089 ] ||
		    { echo "epoch $i kept $k"; return 1; }
		[[ "${stderr_lines[$i]}" == "rv-score: epoch $i: 2000 seen, $k kept ("*"%), $((2000 - k)) dropped; feedback 0 lines (0 unmatched)" ]]
	done
	# metadata: upstream's and ours at the head, a report before each end
	run -0 grep -c '^#score.epoch=' "$W/r"
	[ "$output" = 3 ]
	grep -qx '#classes=10' "$W/r"
	grep -qx '#producer=rv-score 0.1.0' "$W/r"
	grep -qx '#score.policy=uniform' "$W/r"
	grep -qx '#score.keep=0.5' "$W/r"
	grep -qx '#score.reweight=1' "$W/r"
	grep -qx '#score.seed=0' "$W/r"
	head -1 "$W/r" | grep -qx meta
	local key
	for key in epoch seen kept dropped feedback unmatched assist.seen \
	    warm; do
		run -0 grep -c "^#score\.$key=" "$W/r"
		[ "$output" = 3 ] || { echo "score.$key: $output"; return 1; }
	done
	grep -A9 -x '#score.epoch=2' "$W/r" | grep -qx "#score.kept=$k"
	grep -A9 -x '#score.epoch=2' "$W/r" | grep -qx '#score.warm=1'
	grep -A9 -x '#score.epoch=0' "$W/r" | grep -qx '#score.warm=0'
	# without --reweight the weights stay 1
	rv-score --policy uniform "$T/s3.rvs" > "$W/n.rvs"
	run -0 awk '$1 == "sample" && ($5 != 1 || $4 != 8) { bad++ }
	    END { print bad + 0 }' <(records "$W/n.rvs")
	[ "$output" = 0 ]
}

@test "rv-score --policy rs2: a fresh random K of each epoch from the first, every sample once before any twice, the same bytes for a seed" {
	rv-decode -q --epochs 8 --shuffle --limit 2000 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" > "$W/s8.rvs"
	run -0 --separate-stderr rv-score -v --policy rs2 --keep 0.25 \
	    --seed 3 -o "$W/a.rvs" "$W/s8.rvs"
	[[ "${stderr_lines[8]}" == "rv-score: 16000 seen, "*" in 8 epochs; feedback 0 lines (0 unmatched)" ]]
	records "$W/a.rvs" > "$W/r"
	# each epoch about a quarter (binomial sd 19), none whole; every id
	# once in epochs 0-3 and once in 4-7; weight 1, no score
	run -0 awk '
	    $1 == "sample" { n[$2]++; c[int($2 / 4) " " $3]++
		if ($5 != 1 || $6 != "nan") bad++ }
	    $1 == "end" && (n[$2] < 400 || n[$2] > 600 || n[$2] != $3) { bad++ }
	    END { for (k in c) { ids++; if (c[k] != 1) bad++ }
		print ids, bad + 0 }' "$W/r"
	[ "$output" = "4000 0" ]
	grep -qx '#score.policy=rs2' "$W/r"
	grep -qx '#score.keep=0.25' "$W/r"
	rv-score -q --policy rs2 --keep 0.25 --seed 3 < "$W/s8.rvs" \
	    > "$W/c.rvs"
	cmp "$W/c.rvs" "$W/a.rvs"
	rv-score -q --policy rs2 --keep 0.25 --seed 4 "$W/s8.rvs" > "$W/b.rvs"
	! cmp -s <(records "$W/a.rvs" | grep '^sample') \
	    <(records "$W/b.rvs" | grep '^sample')
}

@test "rv-score: the same seed and feedback give the same bytes, another seed others" {
	slow
	rv-score --policy history --feedback "$T/hist.fb" "$T/s3.rvs" \
	    > "$W/a.rvs"
	rv-score --policy history --feedback "$T/hist.fb" < "$T/s3.rvs" \
	    > "$W/b.rvs"
	# the same bytes: no command line in the metadata, whatever the
	# threads, -q or -o
	cmp "$W/a.rvs" "$W/b.rvs"
	rv-score -q -j 1 --policy history --feedback "$T/hist.fb" \
	    -o "$W/c.rvs" "$T/s3.rvs"
	cmp "$W/a.rvs" "$W/c.rvs"
	rv-score -j 2 --level -1 --policy history --feedback "$T/hist.fb" \
	    "$T/s3.rvs" | cmp "$W/a.rvs" -
	run -1 grep -q '^#argv=' <(records "$W/a.rvs")
	rv-score --policy history --feedback "$T/hist.fb" "$T/s3.rvs" \
	    > "$W/c.rvs"
	cmp "$W/a.rvs" "$W/c.rvs"
	rv-score --policy uniform --seed 7 "$T/s3.rvs" > "$W/u1.rvs"
	rv-score --policy uniform --seed 7 "$T/s3.rvs" > "$W/u2.rvs"
	cmp "$W/u1.rvs" "$W/u2.rvs"
	rv-score --policy history --feedback "$T/hist.fb" --seed 1 \
	    "$T/s3.rvs" > "$W/d.rvs"
	! cmp -s <(records "$W/a.rvs" | grep '^sample') \
	    <(records "$W/d.rvs" | grep '^sample')
}

@test "rv-score: the assistant without feedback stays in warm-up: all pass, p = 0.5" {
	slow
	run -0 --separate-stderr rv-score -v "$T/s3.rvs" -o "$W/a.rvs"
	records "$W/a.rvs" > "$W/r"
	run -0 awk '$1 == "sample" { n++; if ($6 != "0.5" || $4 != 8) bad++ }
	    $1 == "end" { ends = ends " " $3 }
	    END { print n, bad + 0, ends }' "$W/r"
	[ "$output" = "6000 0  2000 2000 2000" ]
	grep -qx '#score.policy=assistant' "$W/r"
	grep -qx '#score.min_feedback=1000' "$W/r"
	run -0 grep -c -x '#score.warm=0' "$W/r"
	[ "$output" = 3 ]
	[ "${stderr_lines[2]}" = "rv-score: epoch 2: 2000 seen, 2000 kept (100.0%), 0 dropped; feedback 0 lines (0 unmatched); assistant acc nan auc nan pos nan" ]
}

@test "rv-score --noise-cut: ids whose last two losses were far above log(classes) and the median are kept at --noise-keep, the rest by the policy" {
	# a trainer that has learnt: 30% of the ids (id % 10 < 3) are
	# confidently wrong, loss 4, the rest 0.3; each id's line twice, the
	# default streak
	{ seq 0 1999; seq 0 1999; } | awk '{ print $1, ($1 % 10 < 3 ? 1.4 : 0.2),
	    ($1 % 10 < 3 ? 4 : 0.3) }' |
	    awk '{ printf "%d\t0\t%d\t%s\t%s\n", $1, NR, $3, $2 }' > "$W/fb"
	run -0 --separate-stderr rv-score -v --policy history --floor 0.5 \
	    --noise-cut auto --noise-keep 0.1 --reweight --feedback "$W/fb" \
	    -o "$W/n.rvs" "$T/s3.rvs"
	[[ "${stderr_lines[0]}" == "rv-score: epoch 0: 2000 seen, 2000 kept (100.0%), 0 dropped; feedback 4000 lines (0 unmatched); 0 suspected" ]]
	# the first lines, ids 0 to 2 at loss 4, have no median below 2 to be
	# held against, so no streak of two: 597 of the 600
	[[ "${stderr_lines[1]}" =~ "; "(597|598|599|600)" suspected"$ ]]
	records "$W/n.rvs" > "$W/r"
	run -0 awk '$1 == "sample" && $2 > 0 { if ($3 % 10 < 3) { sus++
		if ($5 != 1) bad++ } else clean++ }
	    END { print sus + 0, clean + 0, bad + 0 }' "$W/r"
	local sus clean bad
	read -r sus clean bad <<<"$output"
	# two epochs of 600 suspects at 0.1 (plus the few not suspected):
	# about 120, 4 standard errors 30; the 1400 others at >= 0.5 each
	[ "$sus" -ge 90 ] && [ "$sus" -le 200 ] && [ "$clean" -ge 1400 ] &&
	    [ "$bad" = 0 ] || { echo "kept $sus suspects, $clean others, $bad weighted"; return 1; }
	grep -qx '#score.noise_cut=auto' "$W/r"
	grep -qx '#score.noise_keep=0.1' "$W/r"
	grep -qx '#score.noise_streak=2' "$W/r"
	# a streak of three is not there yet
	run -0 --separate-stderr rv-score -v --policy history --noise-cut auto \
	    --noise-streak 3 --feedback "$W/fb" -o "$W/n3.rvs" "$T/s3.rvs"
	[[ "${stderr_lines[1]}" == *"; 0 suspected" ]]
	run -0 grep -c '^#score.suspects=' "$W/r"
	[ "$output" = 3 ]
}

@test "rv-score: history keeps high-gradnorm ids and the rest at about the floor" {
	run -0 --separate-stderr rv-score -v --policy history --floor 0.2 \
	    --beta 8 --feedback "$T/hist.fb" -o "$W/h.rvs" "$T/s3.rvs"
	[[ "${stderr_lines[0]}" == "rv-score: epoch 0: 2000 seen, 2000 kept (100.0%), 0 dropped; feedback 2000 lines (0 unmatched)" ]]
	records "$W/h.rvs" > "$W/r"
	run -0 awk '$1 == "sample" && $2 > 0 { if ($3 < 1000) hi[$2]++
		else lo[$2]++ }
	    END { print hi[1] + 0, lo[1] + 0, hi[2] + 0, lo[2] + 0 }' "$W/r"
	local h1 l1 h2 l2
	read -r h1 l1 h2 l2 <<<"$output"
	[ "$h1" -eq 1000 ] && [ "$h2" -eq 1000 ]
	# the low half ranks below 0.5: 0.5^8 < 0.2, so binomial(1000, 0.2)
	# (4 standard errors are 51)
	[ "$l1" -ge 149 ] && [ "$l1" -le 251 ] && [ "$l2" -ge 149 ] &&
	    [ "$l2" -le 251 ] || { echo "kept $l1 and $l2 of 1000"; return 1; }
	grep -qx '#score.beta=8' "$W/r"
}

@test "rv-score: the loop with the real trainer learns and drops" {
	slow
	mkfifo "$W/fb"
	run -0 --separate-stderr timeout 120 bash -c "set -o pipefail
	    rv-score --feedback '$W/fb' -v --min-feedback 500 '$T/s4.rvs' \
		2> '$W/score.err' |
	    rv-batch -q -b 32 |
	    rv-train-gpu -q -j 1 -b 32 --lr 0.01 -m '$MODEL' \
		--feedback '$W/fb'"
	cat "$W/score.err"
	mapfile -t err < "$W/score.err"
	[ "${#err[@]}" -eq 5 ]
	local re='^rv-score: epoch 3: 3000 seen, ([0-9]+) kept \([0-9.]+%\), ([0-9]+) dropped( \(([0-9]+|all) uninformed\))?; feedback ([0-9]+) lines \(([0-9]+) unmatched\), lag [0-9]+ samples mean, [0-9]+ max; assistant acc (0\.[0-9]+|1\.000) auc (0\.[0-9]+|1\.000) pos (0\.[0-9]+|1\.000)$'
	[[ "${err[3]}" =~ $re ]]
	[ "${BASH_REMATCH[1]}" -lt 3000 ] && [ "${BASH_REMATCH[2]}" -gt 0 ]
	[ "${BASH_REMATCH[5]}" -gt 500 ]
	[[ "${err[0]}" == "rv-score: epoch 0: 3000 seen, 3000 kept (100.0%), "* ]]
	[[ "$output" == *"feedback "*" lines written"* ]]
}

@test "rv-score: the loop ends whichever stage starts first or stops early" {
	slow
	local img="$FMNIST/train-images-idx3-ubyte.gz"
	local lab="$FMNIST/train-labels-idx1-ubyte.gz"
	local dec="rv-decode -q --epochs 2 --limit 1000 $img $lab"
	local train="rv-train-gpu -q -j 1 -b 32 --lr 0.01 -m '$MODEL'"
	mkfifo "$W/fb"
	# the trainer first: its feedback writer waits for a reader
	run -0 --separate-stderr timeout 60 bash -c "set -o pipefail
	    $dec | (sleep 1; exec rv-score -q --feedback '$W/fb' \
		--min-feedback 100) | rv-batch -q -b 32 |
	    $train --feedback '$W/fb' > /dev/null"
	# rv-score first: it reads a FIFO with no writer yet
	run -0 --separate-stderr timeout 60 bash -c "set -o pipefail
	    $dec | rv-score -q --feedback '$W/fb' --min-feedback 100 |
	    rv-batch -q -b 32 | (sleep 1; exec $train --feedback '$W/fb') \
		> /dev/null"
	# the trainer stops early: the stages before it end by SIGPIPE
	run -0 --separate-stderr timeout 60 bash -c "
	    rv-decode -q --epochs 8 --limit 3000 $img $lab |
	    rv-score -q --feedback '$W/fb' --min-feedback 100 |
	    rv-batch -q -b 32 | $train --max-steps 5 --feedback '$W/fb' \
		> /dev/null
	    echo \${PIPESTATUS[*]}"
	[ "$output" = "141 141 141 0" ]
}

@test "rv-score: bad input stops with the record; encoded samples pass untouched, refused by autoassist alone" {
	local size
	size=$(stat -c %s "$T/s3.rvs")
	head -c $((size / 2)) "$T/s3.rvs" > "$W/cut.rvs"
	run -1 --separate-stderr rv-score -o "$W/o.rvs" "$W/cut.rvs"
	[[ "$stderr" =~ ^rv-score:\ \'$W/cut.rvs\':\ record\ [0-9]+\ at\ byte\ [0-9]+:\ truncated\ frame$ ]]
	[ ! -e "$W/o.rvs" ]
	run -1 --separate-stderr rv-score < "$T/b.rvs"
	[[ "$stderr" =~ ^rv-score:\ \'\<stdin\>\':\ record\ 1\ at\ byte\ [0-9]+:\ rv-score\ works\ on\ samples:\ put\ it\ before\ rv-batch$ ]]
	need_fixtures
	rv-decode -q --encoded "$FIX/ds/folder" > "$W/enc.rvs"
	run -1 --separate-stderr rv-score --assistant autoassist \
	    -o "$W/o.rvs" "$W/enc.rvs"
	[[ "$stderr" =~ ^rv-score:\ \'$W/enc.rvs\':\ record\ 1\ at\ byte\ [0-9]+:\ sample\ 0\ is\ an\ encoded\ (jpeg|png):\ the\ autoassist\ assistant\'s\ features\ are\ the\ whole\ decoded\ image\;\ decode\ it\ first\ \(rv-decode\ without\ --encoded\),\ or\ score\ with\ --assistant\ rv$ ]]
	[ ! -e "$W/o.rvs" ]
	for p in uniform history assistant; do
		run -0 --separate-stderr rv-score --policy "$p" \
		    -o "$W/o.rvs" "$W/enc.rvs"
		[ -z "$stderr" ]
		run -0 awk '$1 == "sample" { n++; d[$7]++ }
		    END { print n, d[2], d[3] }' <(records "$W/o.rvs")
		[ "$output" = "$(awk '$1 == "sample" { n++; d[$7]++ }
		    END { print n, d[2], d[3] }' <(records "$W/enc.rvs"))" ]
	done
	# a malformed feedback file: ten warnings, one more line, no failure
	{
		for i in $(seq 1 30); do
			printf '%d\t0\t1\tx\t1\n' "$i"
		done
		printf '5\t0\t1\t1\t1\n'
	} > "$W/bad.fb"
	run -0 --separate-stderr rv-score --policy history \
	    --feedback "$W/bad.fb" -o "$W/o.rvs" "$T/s3.rvs"
	[ "${#stderr_lines[@]}" -eq 11 ]
	[[ "${stderr_lines[0]}" == "rv-score: '$W/bad.fb': line 1: "* ]]
	[[ "${stderr_lines[9]}" == "rv-score: '$W/bad.fb': line 10: "* ]]
	[ "${stderr_lines[10]}" = "rv-score: '$W/bad.fb': further bad lines not shown" ]
	run -1 --separate-stderr rv-score --feedback "$W/nope" "$T/s3.rvs"
	[ "$stderr" = "rv-score: '$W/nope': No such file or directory" ]
}

@test "rv-score: feedback writers may come, go and come back" {
	slow
	local ends o1 o2
	# cut the stream after each epoch end, to feed it epoch by epoch
	mapfile -t ends < <(rv-inspect --dump "$T/s3.rvs" |
	    awk '$3 == "epoch-end" { if (getline) print $2 }')
	o1=${ends[0]} o2=${ends[1]}
	mkfifo "$W/fb"
	# writer 1 before epoch 1 comes, writer 2 between epochs 1 and 2; each
	# open waits for rv-score's (timeout: never outlive the test)
	timeout 20 bash -c "sleep 0.5
	    seq 0 499 | awk '{ print \$1, 3 }' | awk '$FB_AWK' > '$W/fb'
	    sleep 2.5
	    seq 500 999 | awk '{ print \$1, 3 }' | awk '$FB_AWK' > '$W/fb'" \
	    > /dev/null 2>&1 3>&- &
	run -0 --separate-stderr timeout 30 bash -c "{
	    head -c $o1 '$T/s3.rvs'; sleep 2
	    tail -c +$((o1 + 1)) '$T/s3.rvs' | head -c $((o2 - o1)); sleep 2
	    tail -c +$((o2 + 1)) '$T/s3.rvs'; } |
	    rv-score -v --policy history --feedback '$W/fb' > '$W/o.rvs'"
	wait
	printf '%s\n' "${stderr_lines[@]}"
	[ "${#stderr_lines[@]}" -eq 5 ]
	[[ "${stderr_lines[0]}" == "rv-score: epoch 0: 2000 seen, 2000 kept (100.0%), 0 dropped; feedback 0 lines (0 unmatched)" ]]
	# the lines of ids 0-499 (500 of the 2000 places of shuffled epoch 0)
	# came before epoch 1's first decision: a lag of 2000 less the place
	[[ "${stderr_lines[1]}" =~ ^"rv-score: epoch 1: 2000 seen, "[^\;]*"; feedback 500 lines (0 unmatched), lag "([0-9]+)" samples mean, "([0-9]+)" max"$ ]]
	[ "${BASH_REMATCH[1]}" -ge 800 ] && [ "${BASH_REMATCH[1]}" -le 1200 ]
	[ "${BASH_REMATCH[2]}" -ge 1900 ] && [ "${BASH_REMATCH[2]}" -le 1999 ]
	[[ "${stderr_lines[2]}" == "rv-score: epoch 2: 2000 seen, "*"; feedback 1000 lines (0 unmatched), lag "*" samples mean, "*" max" ]]
	# the second writer left for good: said once, at the end
	[ "${stderr_lines[3]}" = "rv-score: '$W/fb': the trainer closed the feedback FIFO after 1000 lines: nothing learned since (2000 samples kept), scoring goes on as it stands" ]
	run -0 awk '$1 == "end" { print $3 }' <(records "$W/o.rvs")
	[ "${lines[0]}" = 2000 ]
	[ "${#lines[@]}" -eq 3 ]
}

@test "rv-score --budget: two ranks of other data keep the same count every epoch, by the formula" {
	slow
	local img="$FMNIST/train-images-idx3-ubyte.gz"
	local lab="$FMNIST/train-labels-idx1-ubyte.gz"
	local r
	# two data-parallel ranks: halves of Fashion-MNIST's training set,
	# 29999 samples an epoch each (117 windows of 256, then one of 47)
	for r in 0 1; do
		rv-decode -q --epochs 3 --shuffle --limit 59998 --shard "$r/2" \
		    "$img" "$lab" > "$W/rank$r.rvs"
	done
	run -0 comm -12 <(rv-inspect --dump "$W/rank0.rvs" |
	    awk -F '\t' '$3 == "sample" && $4 == 0 { print $5 }' | sort) \
	    <(rv-inspect --dump "$W/rank1.rvs" |
	    awk -F '\t' '$3 == "sample" && $4 == 0 { print $5 }' | sort)
	[ -z "$output" ]
	# history's feedback: 4 ids in 5 known, the rest keep p 1 (capped)
	seq 0 59997 | awk '$1 % 5 { print $1, 0.5 + $1 * 7919 % 1000 / 1000 }' |
	    awk "$FB_AWK" > "$W/hist.fb"
	local args f k want
	# shellcheck disable=SC2086
	while IFS='|' read -r f args; do
		k=$(budget_count 29999 "$f" 256)
		want="0 29999 29999"$'\n'"1 $k $k"$'\n'"2 $k $k"
		for r in 0 1; do
			rv-score -q --budget "$f" $args "$W/rank$r.rvs" \
			    > "$W/o$r.rvs"
			run -0 epoch_counts "$W/o$r.rvs"
			[ "$output" = "$want" ] ||
			    { echo "rank $r, --budget $f $args:"; echo "$output"
				echo "want:"; echo "$want"; return 1; }
		done
	done <<EOF
0.5|--policy uniform
0.7|--policy history --floor 0 --beta 2 --feedback $W/hist.fb
0.3|--policy history --feedback $W/hist.fb --window 256
EOF
	[ "$(budget_count 29999 0.5 256)" = 15000 ]
	[ "$(budget_count 29999 0.3 256)" = 9023 ]
	# the assistant in a closed loop, each rank learning at its own pace:
	# a stand-in trainer (classes 0-2 easy) appends a line per sample
	# it gets to the feedback file, which rv-score reads as it grows
	local trainer='$3 == "sample" { printf "%s\t%s\t%d\t1\t%s\n", $5,
	    $4, NR, ($6 < 3 ? 0.1 : 1 + $5 % 7 / 10); fflush() }'
	want="0 29999 29999"$'\n'"1 9023 9023"$'\n'"2 9023 9023"
	for r in 0 1; do
		: > "$W/fb$r"
		run -0 --separate-stderr timeout 60 bash -c "set -o pipefail
		    rv-score -v --budget 0.3 --feedback '$W/fb$r' \
			--min-feedback 100 '$W/rank$r.rvs' |
		    tee '$W/a$r.rvs' | rv-inspect --dump - |
		    awk -F '\t' '$trainer' >> '$W/fb$r'"
		printf '%s\n' "${stderr_lines[@]}"
		[[ "${stderr_lines[1]}" =~ ^"rv-score: epoch 1: 29999 seen, 9023 kept (30.1%), 20976 dropped"( \(([0-9]+|all) uninformed\))?"; feedback " ]]
		run -0 epoch_counts "$W/a$r.rvs"
		[ "$output" = "$want" ]
	done
	# without --budget the ranks' counts differ: the test can fail
	for args in "--policy uniform --keep 0.5" \
	    "--policy history --floor 0 --beta 2 --feedback $W/hist.fb"; do
		# shellcheck disable=SC2086
		for r in 0 1; do
			rv-score -q $args "$W/rank$r.rvs" > "$W/n$r.rvs"
			epoch_counts "$W/n$r.rvs" > "$W/n$r.txt"
		done
		cat "$W/n0.txt" "$W/n1.txt"
		run -1 cmp -s "$W/n0.txt" "$W/n1.txt"
	done
}

@test "rv-score: drops made before the policy had feedback to choose by are counted as uninformed; a run that got none ends with a warning" {
	slow
	: > "$W/none.fb"
	run -0 --separate-stderr rv-score -v --budget 0.5 --feedback "$W/none.fb" \
	    -o "$W/u.rvs" "$T/s3.rvs"
	[ "$(budget_count 2000 0.5 256)" = 1000 ]
	[[ "${stderr_lines[0]}" == "rv-score: epoch 0: 2000 seen, 2000 kept (100.0%), 0 dropped; feedback 0 lines (0 unmatched); assistant "* ]]
	[[ "${stderr_lines[1]}" == "rv-score: epoch 1: 2000 seen, 1000 kept (50.0%), 1000 dropped (all uninformed); feedback 0 lines (0 unmatched); assistant "* ]]
	[ "${stderr_lines[3]}" = "rv-score: warning: no feedback arrived: the 2000 samples dropped were dropped by chance and the floor, not chosen by what the trainer said (is it writing its feedback where --feedback reads?)" ]
	[[ "${stderr_lines[4]}" == "rv-score: 6000 seen, 4000 kept (66.7%), 2000 dropped (all uninformed) in 3 epochs; feedback 0 lines (0 unmatched)"* ]]
	[ "${#stderr_lines[@]}" = 5 ]
	records "$W/u.rvs" > "$W/r"
	grep -A12 -x '#score.epoch=1' "$W/r" | grep -qx '#score.uninformed=1000'
	grep -A12 -x '#score.epoch=0' "$W/r" | grep -qx '#score.uninformed=0'
	# -q: the counts stay in the metadata, the warning goes
	run -0 --separate-stderr rv-score -q --budget 0.5 --feedback "$W/none.fb" \
	    -o "$W/q.rvs" "$T/s3.rvs"
	[ -z "$stderr" ]
	# a policy that does not learn from feedback makes no uninformed drop
	run -0 --separate-stderr rv-score -v --policy uniform --budget 0.5 \
	    -o "$W/n.rvs" "$T/s3.rvs"
	[[ "$stderr" != *uninformed* && "$stderr" != *warning* ]]
	records "$W/n.rvs" > "$W/r"
	! grep -q '^#score.uninformed=' "$W/r"
}

@test "rv-score --budget: the first epoch passes whole, then F w rounded of each window, in order, weighted 1/pi" {
	slow
	run -0 --separate-stderr rv-score -v --policy uniform --budget 0.3 \
	    --reweight -o "$W/b.rvs" "$T/s3.rvs"
	# 2000 = 7 windows of 256 and one of 208: 7 x 77 + 62
	[ "$(budget_count 2000 0.3 256)" = 601 ]
	[ "${stderr_lines[0]}" = "rv-score: epoch 0: 2000 seen, 2000 kept (100.0%), 0 dropped; feedback 0 lines (0 unmatched)" ]
	[ "${stderr_lines[1]}" = "rv-score: epoch 1: 2000 seen, 601 kept (30.1%), 1399 dropped; feedback 0 lines (0 unmatched)" ]
	[ "${stderr_lines[2]}" = "rv-score: epoch 2: 2000 seen, 601 kept (30.1%), 1399 dropped; feedback 0 lines (0 unmatched)" ]
	[ "${stderr_lines[3]}" = "rv-score: 6000 seen, 3202 kept (53.4%), 2798 dropped in 3 epochs; feedback 0 lines (0 unmatched)" ]
	records "$T/s3.rvs" > "$W/in"
	records "$W/b.rvs" > "$W/r"
	# every window of every epoch: its count kept, the order kept, and
	# weight w/k (pi = k/w under uniform), or 1 in the first epoch
	run -0 awk -v W=256 -v F=0.3 '
	    NR == FNR { if ($1 == "sample") pos[$2 " " $3] = n[$2]++; next }
	    $1 == "sample" {
		p = pos[$2 " " $3]
		if (($2 in last) && p <= last[$2]) bad++
		last[$2] = p
		j = int(p / W); c[$2 " " j]++
		m = n[$2] - j * W; if (m > W) m = W
		k = int(F * m + 0.5); if (k < 1) k = 1
		want = $2 == 0 ? 1 : m / k
		if ($5 - want > 1e-4 * want || want - $5 > 1e-4 * want) bad++
	    }
	    $1 == "end" { ends = ends " " $3 }
	    END {
		for (e = 0; e < 3; e++)
		    for (j = 0; j * W < n[e]; j++) {
			m = n[e] - j * W; if (m > W) m = W
			k = int(F * m + 0.5); if (k < 1) k = 1
			if (c[e " " j] != (e == 0 ? m : k)) bad++
			t[e] += c[e " " j]
		    }
		print "bad", bad + 0
		print t[0], t[1], t[2] ends
	    }' "$W/in" "$W/r"
	[ "${lines[0]}" = "bad 0" ]
	[ "${lines[1]}" = "2000 601 601 2000 601 601" ]
	grep -qx '#score.budget=0.3' "$W/r"
	grep -qx '#score.window=256' "$W/r"
	run -1 grep -q '^#score.keep=' "$W/r"
	grep -A9 -x '#score.epoch=1' "$W/r" | grep -qx '#score.warm=1'
	grep -A9 -x '#score.epoch=0' "$W/r" | grep -qx '#score.warm=0'
	# the same seed, the same bytes; another, other samples, as many
	rv-score --policy uniform --budget 0.3 --reweight "$T/s3.rvs" \
	    > "$W/b2.rvs"
	cmp "$W/b.rvs" "$W/b2.rvs"
	rv-score --policy uniform --budget 0.3 --seed 9 "$T/s3.rvs" \
	    > "$W/b3.rvs"
	run -1 cmp -s \
	    <(records "$W/b.rvs" | grep '^sample' | cut -d' ' -f2,3) \
	    <(records "$W/b3.rvs" | grep '^sample' | cut -d' ' -f2,3)
	run -0 epoch_counts "$W/b3.rvs"
	[ "$output" = "0 2000 2000"$'\n'"1 601 601"$'\n'"2 601 601" ]
	# other windows: 2000 = 13 x 150 + 50 at F 0.5 (75 and 25); a window
	# of 1 keeps its sample whatever F; F 1 keeps all
	rv-score --policy uniform --budget 0.5 --window 150 "$T/s3.rvs" \
	    > "$W/w.rvs"
	run -0 epoch_counts "$W/w.rvs"
	[ "$output" = "0 2000 2000"$'\n'"1 1000 1000"$'\n'"2 1000 1000" ]
	[ "$(budget_count 2000 0.1 1)" = 2000 ]
	local f
	for f in "0.1 --window 1" 1; do
		# shellcheck disable=SC2086
		rv-score --policy uniform --budget $f "$T/s3.rvs" > "$W/a.rvs"
		cmp <(records "$T/s3.rvs" | grep '^sample' | cut -d' ' -f2,3) \
		    <(records "$W/a.rvs" | grep '^sample' | cut -d' ' -f2,3)
	done
}

@test "rv-score --assistant autoassist: no warm-up, its settings, the same bytes for a seed and a feedback file" {
	slow
	# a feedback file read whole at the first sample: nothing in flight
	# matches it, so the decisions come from the initial weights alone
	run -0 --separate-stderr rv-score -v --assistant autoassist \
	    --feedback "$T/hist.fb" -o "$W/a.rvs" "$T/s3.rvs"
	[[ "${stderr_lines[0]}" == "rv-score: epoch 0: 2000 seen, "*" kept ("*"%), "*" dropped (all uninformed); feedback 0 lines (2000 unmatched); assistant acc nan auc nan pos nan" ]]
	records "$W/a.rvs" > "$W/r"
	# the first epoch is not passed whole: P(keep) 0.3 + 0.7 p, p near
	# 0.5 from weights of N(0, 0.001^2), so about 65% (4 se: 43)
	run -0 awk '$1 == "sample" { n[$2]++; s = $6 + 0
		if (s < 0.45 || s > 0.55 || s == 0.5) bad++ }
	    END { print n[0], n[1], n[2], bad + 0 }' "$W/r"
	local n0 n1 n2 bad
	read -r n0 n1 n2 bad <<<"$output"
	[ "$bad" -eq 0 ]
	for n in "$n0" "$n1" "$n2"; do
		[ "$n" -ge 1257 ] && [ "$n" -le 1343 ] ||
		    { echo "kept $n of 2000"; return 1; }
	done
	grep -qx '#score.assistant=autoassist' "$W/r"
	grep -qx '#score.target=loss' "$W/r"
	grep -qx '#score.lr=0.01' "$W/r"
	grep -qx '#score.l2=0.001' "$W/r"
	grep -qx '#score.min_feedback=0' "$W/r"
	run -1 grep -q '^#score.features=' "$W/r"
	grep -A9 -x '#score.epoch=0' "$W/r" | grep -qx '#score.warm=1'
	# the same seed and feedback: the same bytes; another seed: other
	# initial weights, other scores
	rv-score --assistant autoassist --feedback "$T/hist.fb" \
	    -o "$W/b.rvs" "$T/s3.rvs"
	cmp "$W/a.rvs" "$W/b.rvs"
	rv-score --assistant autoassist --feedback "$T/hist.fb" --seed 1 \
	    -o "$W/c.rvs" "$T/s3.rvs"
	run -1 cmp -s <(records "$W/a.rvs" | grep '^sample') \
	    <(records "$W/c.rvs" | grep '^sample')
	# given options replace the published ones; the default stays rv's
	rv-score --assistant autoassist --lr 0.5 --l2 0 --min-feedback 10 \
	    --target loss "$T/s3.rvs" > "$W/d.rvs"
	records "$W/d.rvs" > "$W/r"
	grep -qx '#score.lr=0.5' "$W/r"
	grep -qx '#score.l2=0' "$W/r"
	grep -qx '#score.min_feedback=10' "$W/r"
	rv-score "$T/s3.rvs" > "$W/e.rvs"
	records "$W/e.rvs" > "$W/r"
	grep -qx '#score.assistant=rv' "$W/r"
	grep -qx '#score.features=image,history' "$W/r"
	grep -qx '#score.lr=0.05' "$W/r"
	rv-score --assistant rv "$T/s3.rvs" > "$W/f.rvs"
	cmp "$W/e.rvs" "$W/f.rvs"
}

@test "rv-score --assistant autoassist: every sample of the first one's shape" {
	local img="$FMNIST/train-images-idx3-ubyte.gz"
	local lab="$FMNIST/train-labels-idx1-ubyte.gz"
	rv-decode -q --limit 10 "$img" "$lab" > "$W/a.rvs"
	rv-decode -q --limit 10 "$img" "$lab" |
	    rv-augment -q 'resize size=14' > "$W/b.rvs"
	run -1 --separate-stderr rv-score --assistant autoassist \
	    -o "$W/o.rvs" "$W/a.rvs" "$W/b.rvs"
	[[ "$stderr" =~ ^rv-score:\ \'$W/b.rvs\':\ record\ [0-9]+\ at\ byte\ [0-9]+:\ shrink:\ image\ is\ 14x14,\ not\ 28x28:\ the\ autoassist\ assistant\'s\ features\ are\ the\ whole\ image$ ]]
	[ ! -e "$W/o.rvs" ]
	# the rv assistant pools any shape
	rv-score -q "$W/a.rvs" "$W/b.rvs" > /dev/null
}

@test "rv-score --assistant autoassist: the loop with the real trainer learns by the batch" {
	slow
	mkfifo "$W/fb"
	run -0 --separate-stderr timeout 120 bash -c "set -o pipefail
	    rv-score --feedback '$W/fb' -v --assistant autoassist \
		'$T/s4.rvs' 2> '$W/score.err' |
	    rv-batch -q -b 32 |
	    rv-train-gpu -q -j 1 -b 32 --lr 0.01 -m '$MODEL' \
		--feedback '$W/fb'"
	cat "$W/score.err"
	mapfile -t err < "$W/score.err"
	[ "${#err[@]}" -eq 5 ]
	# dropping from the first epoch on
	[[ "${err[0]}" =~ ^rv-score:\ epoch\ 0:\ 3000\ seen,\ ([0-9]+)\ kept ]]
	[ "${BASH_REMATCH[1]}" -lt 2800 ]
	local re='^rv-score: epoch 3: 3000 seen, ([0-9]+) kept \([0-9.]+%\), ([0-9]+) dropped( \(([0-9]+|all) uninformed\))?; feedback ([0-9]+) lines \(([0-9]+) unmatched\), lag [0-9]+ samples mean, [0-9]+ max; assistant acc (0\.[0-9]+|1\.000) auc (0\.[0-9]+|1\.000) pos (0\.[0-9]+)$'
	[[ "${err[3]}" =~ $re ]]
	[ "${BASH_REMATCH[5]}" -gt 500 ]
}

# payloads FILE: "ID SHA1" of each sample's payload, in order.
PY_PAYLOADS='
import hashlib, struct, sys
b = sys.stdin.buffer.read()
off = 0
while off < len(b):
    (magic, ver, hl, kind, dt, flags, ep, rid, label, h, w, c, n, uses,
     wt, sc, pl) = struct.unpack_from("<IHHBBHIQiIIIIIffQ", b, off)
    if kind == 1:
        print(rid, dt, hashlib.sha1(b[off + hl:off + hl + pl]).hexdigest())
    off += hl + pl
'

@test "rv-score: encoded samples are scored before they are decoded: passed on untouched, a thumbnail once a run; a cut JPEG skipped and counted, --strict stops" {
	need_fixtures
	mkdir "$W/tr"
	cp "$FIX/img/rgb.jpg" "$FIX/img/truncated.jpg" "$FIX/img/grey.jpg" \
	    "$FIX/img/rgb.png" "$W/tr/"
	rv-decode -q --encoded --epochs 2 "$W/tr" -o "$W/tr.rvs"
	run -0 --separate-stderr rv-score -v "$W/tr.rvs" -o "$W/o.rvs"
	# ids: grey.jpg 0, rgb.jpg 1, rgb.png 2, truncated.jpg 3
	[ "${stderr_lines[0]}" = "rv-score: '$W/tr.rvs': record 4 (id 3): truncated JPEG data (skipped)" ]
	[ "${stderr_lines[1]}" = "rv-score: epoch 0: 3 seen, 3 kept (100.0%), 0 dropped; feedback 0 lines (0 unmatched); assistant acc nan auc nan pos nan" ]
	[ "${stderr_lines[2]}" = "rv-score: '$W/tr.rvs': record 9 (id 3): truncated JPEG data (skipped)" ]
	[ "${stderr_lines[4]}" = "rv-score: 6 seen, 6 kept (100.0%), 0 dropped in 2 epochs; feedback 0 lines (0 unmatched); 5 encoded samples decoded reduced for the assistant, 3 from its cache, 2 skipped" ]
	[ "${#stderr_lines[@]}" -eq 5 ]
	# the kept samples as they came, still encoded, scored
	zstd -qdc "$W/tr.rvs" | python3 -c "$PY_PAYLOADS" |
	    awk '$1 != 3' > "$W/in.txt"
	zstd -qdc "$W/o.rvs" | python3 -c "$PY_PAYLOADS" > "$W/out.txt"
	[ "$(wc -l < "$W/out.txt")" -eq 6 ]
	cmp "$W/in.txt" "$W/out.txt"
	run -0 awk '$1 == "sample" && !($4 == 8 && $6 == "0.5") { bad++ }
	    $1 == "end" { ends = ends " " $3 } END { print bad + 0 ends }' \
	    <(records "$W/o.rvs")
	[ "$output" = "0 3 3" ]
	# --strict: the first one stops it, with nothing left behind
	run -1 --separate-stderr rv-score --strict "$W/tr.rvs" -o "$W/s.rvs"
	[ "$stderr" = "rv-score: '$W/tr.rvs': record 4 (id 3): truncated JPEG data" ]
	[ ! -e "$W/s.rvs" ]
	# the policies that read no pixels pass it on: no decode, no warning
	run -0 --separate-stderr rv-score --policy history --strict \
	    "$W/tr.rvs" -o "$W/h.rvs"
	[ -z "$stderr" ]
	[ "$(zstd -qdc "$W/h.rvs" | python3 -c "$PY_PAYLOADS" | wc -l)" -eq 8 ]
}

@test "rv-score: the loop on encoded Fashion-MNIST, scored before the decode: the assistant learns and drops, each image decoded once for it, the feedback lag bounded" {
	slow
	# 3000 Fashion-MNIST images as PNG files in a folder a class
	rv-inspect -q --png "$W/png" "$T/s4.rvs" -k 3000 > /dev/null
	python3 - "$W/png" "$W/ds" <<'PY'
import os, re, sys
src, dst = sys.argv[1], sys.argv[2]
for n in os.listdir(src):
    label = re.search(r"-l([0-9]+)\.png$", n).group(1)
    os.makedirs(os.path.join(dst, "c" + label), exist_ok=True)
    os.rename(os.path.join(src, n), os.path.join(dst, "c" + label, n))
PY
	mkfifo "$W/fb"
	run -0 --separate-stderr timeout 180 bash -c "set -o pipefail
	    rv-decode -q --encoded --channels 1 --epochs 4 --shuffle '$W/ds' |
	    rv-score --feedback '$W/fb' -v --min-feedback 500 \
		2> '$W/score.err' |
	    rv-augment -q -j 1 flip | rv-batch -q -b 32 |
	    rv-train-gpu -q -j 1 -b 32 --lr 0.01 -m '$MODEL' \
		--feedback '$W/fb'"
	cat "$W/score.err"
	mapfile -t err < "$W/score.err"
	[ "${#err[@]}" -eq 5 ]
	local re='^rv-score: epoch 3: 3000 seen, ([0-9]+) kept \([0-9.]+%\), ([0-9]+) dropped( \(([0-9]+|all) uninformed\))?; feedback ([0-9]+) lines \(([0-9]+) unmatched\), lag ([0-9]+) samples mean, ([0-9]+) max; assistant acc (0\.[0-9]+|1\.000) auc (0\.[0-9]+|1\.000) pos (0\.[0-9]+|1\.000)$'
	[[ "${err[3]}" =~ $re ]]
	[ "${BASH_REMATCH[1]}" -lt 3000 ] && [ "${BASH_REMATCH[2]}" -gt 0 ]
	[ "${BASH_REMATCH[5]}" -gt 500 ]
	# the buffers between rv-score and the trainer are bounded in
	# samples, whatever the timing: three pipes of 1 MiB (about 2,600
	# encoded and 1,300 decoded samples each), rv-augment's chunk, a batch,
	# the trainer's queue; in samples decided, at about half kept, under
	# four epochs of 3000
	[ "${BASH_REMATCH[8]}" -lt 12000 ]
	[[ "${err[4]}" =~ "; 3000 encoded samples decoded reduced for the assistant, 9000 from its cache"$ ]]
}
