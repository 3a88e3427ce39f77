#!/usr/bin/env bats
# Progress a person can follow (rv(7), "Progress").  When standard error
# is no terminal (a batch job's log), every stage of a pipeline writes a
# plain line at most every RV_PROGRESS seconds: done/total, percent,
# rate, elapsed and time left, the total passed down in the stream's
# "total" metadata key; the trainer writes its step lines instead, every
# --log-every steps, with the time left to the end of its schedule.  -q
# silences them; a bad RV_PROGRESS is said once.  The Slurm jobs' logs
# hold them too (slurm.bats).

load helpers

setup() {
	need_fmnist
	T="$BATS_TEST_TMPDIR"
}

# stamp FILE: standard input's lines into FILE, each after the time it
# came at (seconds).
stamp() {
	local l
	while IFS= read -r l; do
		printf '%s %s\n' "$EPOCHREALTIME" "$l"
	done > "$1"
}

@test "a pipeline's log: every stage's progress line at the interval asked, with its total and ETA; the trainer's step lines" {
	slow
	# 3 epochs of 3000 samples: the total rv-decode puts in the metadata
	# reaches rv-augment, rv-batch and the trainer
	RV_PROGRESS=0.5 bash -c "rv-decode --epochs 3 --shuffle --limit 3000 \
	    '$FMNIST/train-images-idx3-ubyte.gz' '$FMNIST/train-labels-idx1-ubyte.gz' |
	    rv-augment 'randaugment n=1 m=5; random_crop size=28 padding=2; flip' |
	    rv-batch -b 64 | rv-train-gpu -j 1 --log-every 10 > /dev/null" \
	    2> >(stamp "$T/log")
	wait $!
	for p in rv-decode rv-augment rv-batch; do
		grep " $p: " "$T/log" > "$T/$p"
		[ -s "$T/$p" ]
		# every line: done/total (percent), rate, elapsed, ETA
		! grep -Ev "^[0-9.]+ $p: [0-9]+/9000 samples \([0-9]+\.[0-9]%\), [0-9]+/s, elapsed [0-9]+ s, ETA [0-9]+ s$" "$T/$p"
		# never closer than the interval
		awk 'NR > 1 && $1 - t < 0.45 { print "too soon: " $0; bad = 1 }
		    { t = $1 } END { exit bad }' "$T/$p"
	done
	# the trainer: a step line every 10 steps, with the time left
	grep ' rv-train-gpu: step ' "$T/log" | cut -d' ' -f2- > "$T/steps"
	[ "$(wc -l < "$T/steps")" -ge 10 ]
	! grep -Ev '^rv-train-gpu: step [0-9]*0, epoch [0-2], loss [0-9.]+, acc [0-9.]+, lr [0-9.e-]+, [0-9]+ samples/s, data wait [0-9.]+%, elapsed [0-9]+ s, ETA [0-9]+ s$' "$T/steps"
	[ "$(head -n 1 "$T/steps" | cut -d' ' -f3)" = "10," ]
	# and no plain progress line of its own in its place
	! grep -q ' rv-train-gpu: [0-9]*/' "$T/log"
}

@test "progress: -q silences the lines, RV_PROGRESS=0 too; a bad RV_PROGRESS is said once; the total in the metadata, and where it is not known" {
	rv-decode -q --epochs 2 --limit 300 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$T/d.rvs"
	run -0 --separate-stderr bash -c "RV_PROGRESS=0.0001 rv-batch -b 8 '$T/d.rvs' > /dev/null"
	[[ "${stderr_lines[0]}" =~ ^rv-batch:\ [0-9]+/600\ samples ]]
	run -0 --separate-stderr bash -c "RV_PROGRESS=0.0001 rv-batch -q -b 8 '$T/d.rvs' > /dev/null"
	[ -z "$stderr" ]
	run -0 --separate-stderr bash -c "RV_PROGRESS=0 rv-batch -b 8 '$T/d.rvs' > /dev/null"
	[ -z "$stderr" ]
	run -0 --separate-stderr bash -c "RV_PROGRESS=soon rv-batch -b 8 '$T/d.rvs' > /dev/null"
	[ "$stderr" = "rv-batch: RV_PROGRESS=soon: not a number of seconds, 0 or more: progress lines every 30 s" ]
	# rv-decode counts its inputs while it opens them, before any sample
	need_fixtures
	for i in 1 2 3; do cp "$FIX/ds/wds.tar" "$T/w$i.tar"; done
	run -0 --separate-stderr bash -c "RV_PROGRESS=0.0001 rv-decode --index-out '$T/w.idx' '$T'/w?.tar"
	[[ "${stderr_lines[0]}" =~ ^rv-decode:\ [1-3]/3\ inputs\ \([0-9.]+%\),\  ]]
	# the samples the stream is to hold: rv-decode's epochs of its
	# share, passed on 1 for 1; rv-refurbish's epochs; after a stage
	# that drops samples, not known
	total() { rv-inspect - | awk '$1 == "total" { print ($2 == "" ? "none" : $2) }'; }
	[ "$(total < "$T/d.rvs")" = 600 ]
	[ "$(rv-augment -q flip "$T/d.rvs" | rv-batch -q -b 8 | total)" = 600 ]
	rv-decode -q --limit 300 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$T/one.rvs"
	[ "$(rv-refurbish -q --partial flip --final '' --epochs 3 "$T/one.rvs" | total)" = 900 ]
	[ "$(rv-refurbish -q --partial flip --final '' --epochs 3 --score '--budget 0.5' "$T/one.rvs" | total)" = none ]
	[ "$(rv-score -q --budget 0.5 "$T/d.rvs" | total)" = none ]
}
