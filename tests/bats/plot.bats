#!/usr/bin/env bats
# scripts/rv-plot: learning curves from rv-train-gpu --log files.  The logs
# here are written by hand in the documented JSON-lines format, but for one
# written by the trainer on a stream rv-score shrinks.  A wrapper standing
# in for gnuplot keeps the script and data rv-plot hands it, to check what
# is parsed, not only that a PNG appears; --data prints the same rows.

load helpers

PLOT="$REPO/scripts/rv-plot"

setup() {
	command -v gnuplot >/dev/null || skip "gnuplot is not installed"
	T=$BATS_TEST_TMPDIR
	# Two epochs of 30000 samples: step lines, an eval and an epoch line
	# at each epoch end, a summary.
	cat >"$T/a.log" <<'EOF'
{"event":"step","step":100,"epoch":0,"loss":1.2,"acc":0.6,"lr":0.1,"samples_per_s":5000,"wait_frac":0.1,"samples":12800,"grads":12800,"wall":2.5}
{"event":"step","step":200,"epoch":0,"loss":0.8,"acc":0.7,"lr":0.1,"samples_per_s":5000,"wait_frac":0.1,"samples":25600,"grads":25600,"wall":5}
{"event":"eval","step":235,"epoch":0,"eval_loss":0.6,"eval_acc":0.78,"samples":30000,"grads":30000,"wall":6.5}
{"event":"epoch","step":235,"epoch":0,"loss":0.9,"acc":0.68,"lr":0.1,"samples_per_s":5000,"wait_frac":0.1,"samples":30000,"grads":30000,"wall":6.5,"epoch_s":6.5}
{"event":"step","step":300,"epoch":1,"loss":0.5,"acc":0.82,"lr":0.1,"samples_per_s":5000,"wait_frac":0.05,"samples":38400,"grads":38000,"wall":8}
{"event":"step","step":400,"epoch":1,"loss":0.45,"acc":0.84,"lr":0.1,"samples_per_s":5000,"wait_frac":0.05,"samples":51200,"grads":50000,"wall":10.5}
{"event":"eval","step":470,"epoch":1,"eval_loss":0.42,"eval_acc":0.85,"samples":60000,"grads":58000,"wall":13}
{"event":"epoch","step":470,"epoch":1,"loss":0.47,"acc":0.83,"lr":0.1,"samples_per_s":5000,"wait_frac":0.05,"samples":60000,"grads":58000,"wall":13,"epoch_s":6.5}
{"event":"summary","reached":false,"target_acc":null,"wall":13.1,"epochs":2,"steps":470,"samples":60000,"grads":58000,"eval_acc":0.85,"eval_loss":0.42,"wait_frac":0.07,"feedback_written":0,"feedback_dropped":0}
EOF
	# gnuplot stand-in: keeps the script and its data files, then runs
	# the real gnuplot.
	cat >"$T/gp" <<EOF
#!/bin/sh
if [ "\$1" != -e ]; then
	cp "\$1" "$T/kept.gp"
	for f in "\${1%/*}"/*.train "\${1%/*}"/*.eval; do
		[ -f "\$f" ] && cp "\$f" "$T/kept.\${f##*/}"
	done
fi
exec gnuplot "\$@"
EOF
	chmod +x "$T/gp"
}

# is_png FILE: the PNG signature, then an IHDR chunk of 900 x 900.
is_png() {
	[ "$(od -An -tx1 -N16 "$1" | tr -d ' \n')" = \
	    89504e470d0a1a0a0000000d49484452 ]
	[ "$(od -An -j16 -N8 -tu1 "$1" | tr -s ' ' | sed 's/^ //')" = \
	    "0 0 3 132 0 0 3 132" ]
}

@test "rv-plot: --help prints the usage on stdout" {
	run -0 --separate-stderr "$PLOT" --help
	[[ "${lines[0]}" == "usage: rv-plot [-o FILE] [--x step|wall|grads|samples|epoch] [--title T]" ]]
	[ "$stderr" = "" ]
}

@test "rv-plot: one log makes a 900x900 PNG, atomically, nothing left over" {
	slow
	run -0 --separate-stderr "$PLOT" -o "$T/out.png" --title 'a run' "$T/a.log"
	[ "$output" = "" ]
	[ "$stderr" = "" ]
	is_png "$T/out.png"
	[ "$(find "$T" -name '.out.png.tmp.*' | wc -l)" -eq 0 ]
	run -0 file "$T/out.png"
	[[ "$output" == *"PNG image data, 900 x 900"* ]]
}

@test "rv-plot: writes to standard output by default" {
	slow
	"$PLOT" "$T/a.log" >"$T/out.png"
	is_png "$T/out.png"
}

@test "rv-plot: --x step, wall, grads, samples, epoch take their column" {
	slow
	# axis | the x of the training rows | the x of the eval rows
	while IFS='|' read -r axis train eval; do
		rm -f "$T"/kept.*
		GNUPLOT=$T/gp "$PLOT" --x "$axis" -o "$T/$axis.png" "$T/a.log"
		is_png "$T/$axis.png"
		[ "$(cut -d' ' -f1 "$T/kept.0.train" | paste -sd,)" = "$train" ]
		[ "$(cut -d' ' -f1 "$T/kept.0.eval" | paste -sd,)" = "$eval" ]
		grep -q "^set xlabel " "$T/kept.gp"
	done <<'EOF'
step|100,200,300,400|235,470
wall|2.5,5,8,10.5|6.5,13
grads|12800,25600,38000,50000|30000,58000
samples|12800,25600,38400,51200|30000,60000
epoch|0.426667,0.853333,1.28,1.70667|1,2
EOF
	# --x=AXIS is the same option.
	"$PLOT" --x=wall -o "$T/w2.png" "$T/a.log"
	is_png "$T/w2.png"
}

# epoch_x LOG: the fractional epoch of each training row of LOG, worked
# out here from its epoch lines: e + (samples - the samples at the end of
# epoch e - 1) / the samples of epoch e, one a line.
epoch_x() {
	awk '
	/"event":"epoch"/ {
		match($0, /"epoch":[0-9]+/)
		e = substr($0, RSTART + 8, RLENGTH - 8)
		match($0, /"samples":[0-9]+/)
		end[e] = substr($0, RSTART + 10, RLENGTH - 10)
	}
	/"event":"step"/ { n++; line[n] = $0 }
	END {
		for (i = 1; i <= n; i++) {
			$0 = line[i]
			match($0, /"epoch":[0-9]+/)
			e = substr($0, RSTART + 8, RLENGTH - 8)
			match($0, /"samples":[0-9]+/)
			s = substr($0, RSTART + 10, RLENGTH - 10)
			b = e > 0 ? end[e - 1] : 0
			printf "%.6g\n", e + (s - b) / (end[e] - b)
		}
	}' "$1"
}

@test "rv-plot: --x epoch on a shrunk run: each epoch by its own samples, 0 to the epochs" {
	slow
	need_fmnist
	# rv-score keeps about half of the samples of epochs 1 and 2, so the
	# epochs have 600, about 300 and about 300 samples.
	rv-decode -q --epochs 3 --shuffle --limit 600 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" |
	    rv-score -q --policy uniform --keep 0.5 --seed 3 |
	    rv-batch -q -b 64 |
	    rv-train-gpu -q -j 1 -m mlp --epochs 3 --log-every 2 \
		--log "$T/shrunk.log" -o /dev/null
	run -0 grep -o '"event":"epoch",.*"samples":[0-9]*' "$T/shrunk.log"
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" == *'"samples":600' ]]
	local e1=${lines[1]##*:}
	[ "$e1" -gt 700 ] && [ "$e1" -lt 1100 ]
	rm -f "$T"/kept.*
	GNUPLOT=$T/gp "$PLOT" --x epoch -o "$T/out.png" "$T/shrunk.log"
	is_png "$T/out.png"
	cut -d' ' -f1 "$T/kept.0.train" >"$T/x"
	epoch_x "$T/shrunk.log" >"$T/want"
	[ "$(wc -l <"$T/x")" -eq "$(grep -c '"event":"step"' "$T/shrunk.log")" ]
	diff "$T/want" "$T/x"
	# Monotone, from 0 to 3; the last row of epoch 0 (sample 600) at 1.
	sort -g -c "$T/x"
	awk '$1 < 0 || $1 > 3 { exit 1 }' "$T/x"
	grep -qx 1 "$T/x"
	# --data prints the same x.
	run -0 "$PLOT" --data --x epoch "$T/shrunk.log"
	[ "$(printf '%s\n' "${lines[@]:1}" | cut -f3)" = "$(cat "$T/x")" ]
	# The epoch lines alone: at 1, 2 and 3.
	grep -v '"event":"step"' "$T/shrunk.log" >"$T/epochs.log"
	rm -f "$T"/kept.*
	GNUPLOT=$T/gp "$PLOT" --x epoch -o "$T/out.png" "$T/epochs.log"
	[ "$(cut -d' ' -f1 "$T/kept.0.train" | paste -sd,)" = 1,2,3 ]
}

@test "rv-plot: --x epoch when the log does not show where an epoch starts or ends" {
	slow
	# The log begins in epoch 3 (a resumed run's, written to a new file):
	# its start is guessed, its end (6000) less the size of epoch 4
	# (500).  Epoch 5 has no epoch line yet: it is taken to be as long as
	# epoch 4.
	cat >"$T/part.log" <<'EOF'
{"event":"step","step":1,"epoch":3,"loss":1,"acc":0.5,"samples":5800}
{"event":"epoch","step":2,"epoch":3,"loss":1,"acc":0.5,"samples":6000}
{"event":"step","step":3,"epoch":4,"loss":1,"acc":0.5,"samples":6250}
{"event":"epoch","step":4,"epoch":4,"loss":1,"acc":0.5,"samples":6500}
{"event":"step","step":5,"epoch":5,"loss":1,"acc":0.5,"samples":6600}
{"event":"eval","step":5,"epoch":5,"eval_loss":1,"eval_acc":0.5,"samples":6600}
EOF
	run -0 "$PLOT" --data --x epoch "$T/part.log"
	[ "$output" = "$(printf '%s\t%s\t%s\t%s\t%s\n' '# name' series epoch \
	    loss acc% part train 3.6 1 50 part train 4.5 1 50 \
	    part train 5.2 1 50 part eval 5.2 1 50)" ]
	# No other epoch's size is known: epoch 3 is taken to start at 0.
	head -2 "$T/part.log" >"$T/one.log"
	run -0 "$PLOT" --data --x epoch "$T/one.log"
	[ "${lines[1]}" = "$(printf 'one\ttrain\t3.96667\t1\t50')" ]
}

@test "rv-plot: --data prints the points as text, with no gnuplot" {
	slow
	sed 's/"loss":\([0-9.]*\)/"loss":1\1/' "$T/a.log" >"$T/b.log"
	GNUPLOT=/nonexistent run -0 --separate-stderr "$PLOT" --data \
	    --x samples "$T/a.log" "two words=$T/b.log"
	[ "$stderr" = "" ]
	[ "${lines[0]}" = "$(printf '# name\tseries\tsamples\tloss\tacc%%')" ]
	[ "${#lines[@]}" -eq 13 ]
	[ "${lines[1]}" = "$(printf 'a\ttrain\t12800\t1.2\t60')" ]
	[ "${lines[5]}" = "$(printf 'a\teval\t30000\t0.6\t78')" ]
	[ "${lines[12]}" = "$(printf 'two words\teval\t60000\t0.42\t85')" ]
	"$PLOT" --data -o "$T/d.txt" "$T/a.log"
	[ "$(wc -l <"$T/d.txt")" -eq 7 ]
	[ "$(sed -n 2p "$T/d.txt")" = "$(printf 'a\ttrain\t100\t1.2\t60')" ]
}

@test "rv-plot: loss and accuracy in percent, from step and eval lines" {
	slow
	GNUPLOT=$T/gp "$PLOT" -o "$T/out.png" "$T/a.log"
	[ "$(cat "$T/kept.0.train")" = "$(printf '%s\n' '100 1.2 60' \
	    '200 0.8 70' '300 0.5 82' '400 0.45 84')" ]
	[ "$(cat "$T/kept.0.eval")" = "$(printf '%s\n' '235 0.6 78' \
	    '470 0.42 85')" ]
}

@test "rv-plot: two logs, one colour each, labels from NAME= or the base name" {
	sed 's/"loss":\([0-9.]*\)/"loss":1\1/' "$T/a.log" >"$T/run.b.jsonl"
	GNUPLOT=$T/gp "$PLOT" -o "$T/two.png" "$T/a.log" "$T/run.b.jsonl" \
	    "with space=$T/a.log"
	is_png "$T/two.png"
	# Per log: a training line and an eval series, in each panel.
	[ "$(grep -c "title 'a'" "$T/kept.gp")" -eq 2 ]
	[ "$(grep -c "title 'a (eval)'" "$T/kept.gp")" -eq 2 ]
	[ "$(grep -c "title 'run.b'" "$T/kept.gp")" -eq 2 ]
	[ "$(grep -c "title 'with space (eval)'" "$T/kept.gp")" -eq 2 ]
	[ "$(grep -o "lc rgb '#[0-9a-f]*'" "$T/kept.gp" | sort -u | wc -l)" -eq 3 ]
	[ "$(head -1 "$T/kept.1.train")" = "100 11.2 60" ]
}

@test "rv-plot: a log without step lines plots its epoch lines" {
	slow
	grep -v '"event":"step"' "$T/a.log" >"$T/epochs.log"
	GNUPLOT=$T/gp "$PLOT" --x epoch -o "$T/out.png" "$T/epochs.log"
	is_png "$T/out.png"
	[ "$(cat "$T/kept.0.train")" = "$(printf '%s\n' '1 0.9 68' \
	    '2 0.47 83')" ]
}

@test "rv-plot: spaces, nulls, blank and cut lines are tolerated" {
	slow
	# The last line was cut mid-write: it is skipped, not half read.
	cat >"$T/odd.log" <<'EOF'
{"event": "step", "step": 10, "epoch": 0, "loss": 2.5, "acc": null, "samples": 1280, "grads": 1280, "wall": 0.5}

{"event":"eval","step":20,"epoch":0,"eval_loss":null,"eval_acc":0.5,"samples":2560,"grads":2560,"wall":1}
{"event":"step","step":20,"epoch":0,"loss":2.1,"acc":0.3
EOF
	GNUPLOT=$T/gp "$PLOT" -o "$T/out.png" "$T/odd.log"
	is_png "$T/out.png"
	[ "$(cat "$T/kept.0.train")" = "10 2.5 ?" ]
	[ "$(cat "$T/kept.0.eval")" = "20 ? 50" ]
}

@test "rv-plot: after a resume, the line written last for a step counts" {
	slow
	# A first run got to step 400 and died; its checkpoint was at the end
	# of epoch 0 (step 235), so the resumed run wrote step 300 and on anew.
	{
		head -5 "$T/a.log"
		sed 's/"loss":0.45,/"loss":0.99,/' "$T/a.log" | sed -n 6p
		sed -n '5,$p' "$T/a.log"
	} >"$T/resumed.log"
	GNUPLOT=$T/gp "$PLOT" -o "$T/out.png" "$T/resumed.log"
	is_png "$T/out.png"
	[ "$(cat "$T/kept.0.train")" = "$(printf '%s\n' '100 1.2 60' \
	    '200 0.8 70' '300 0.5 82' '400 0.45 84')" ]
	[ "$(cat "$T/kept.0.eval")" = "$(printf '%s\n' '235 0.6 78' \
	    '470 0.42 85')" ]
}

@test "rv-plot: a missing or unreadable log is exit 1, no output" {
	slow
	run -1 --separate-stderr "$PLOT" -o "$T/out.png" "$T/a.log" "$T/none.log"
	[ "$stderr" = "rv-plot: '$T/none.log': No such file or directory" ]
	[ ! -e "$T/out.png" ]
	run -1 --separate-stderr "$PLOT" -o "$T/out.png" "$T"
	[ "$stderr" = "rv-plot: '$T': Is a directory" ]
	run -1 --separate-stderr "$PLOT" -o "$T/out.png" "x=$T/none.log"
	[ "$stderr" = "rv-plot: '$T/none.log': No such file or directory" ]
}

@test "rv-plot: a log with no data is exit 1" {
	slow
	: >"$T/empty.log"
	grep summary "$T/a.log" >"$T/summary.log"
	printf 'not json\n' >"$T/junk.log"
	for f in empty summary junk; do
		run -1 --separate-stderr "$PLOT" -o "$T/out.png" "$T/$f.log"
		[ "$stderr" = "rv-plot: '$T/$f.log': no step, epoch or eval lines" ]
		[ ! -e "$T/out.png" ]
	done
}

@test "rv-plot: no gnuplot is exit 1" {
	GNUPLOT=/nonexistent/gnuplot run -1 --separate-stderr "$PLOT" \
	    -o "$T/out.png" "$T/a.log"
	[ "$stderr" = "rv-plot: '/nonexistent/gnuplot': not found: install gnuplot-nox (or set GNUPLOT)" ]
	[ ! -e "$T/out.png" ]
}

@test "rv-plot: a failing gnuplot leaves the old output and no temp file" {
	slow
	printf 'old\n' >"$T/out.png"
	printf '#!/bin/sh\necho "gnuplot broke" >&2\nexit 1\n' >"$T/bad"
	chmod +x "$T/bad"
	GNUPLOT=$T/bad run -1 --separate-stderr "$PLOT" -o "$T/out.png" \
	    "$T/a.log"
	# gnuplot's messages, indented, then ours.
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ "${stderr_lines[0]}" == *"gnuplot broke" ]]
	[ "${stderr_lines[1]}" = "rv-plot: gnuplot failed" ]
	[ "$(cat "$T/out.png")" = old ]
	[ "$(find "$T" -name '.out.png.tmp.*' | wc -l)" -eq 0 ]
}

@test "rv-plot: an output in a missing directory is exit 1" {
	run -1 --separate-stderr "$PLOT" -o "$T/no/out.png" "$T/a.log"
	[ "$stderr" = "rv-plot: '$T/no/out.png': cannot create a file in '$T/no'" ]
}

@test "rv-plot: usage errors are exit 2 with where the usage is" {
	slow
	# arguments | the first line of stderr
	while IFS='|' read -r args msg; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr "$PLOT" $args
		[ "${stderr_lines[0]}" = "rv-plot: $msg" ]
		[ "${stderr_lines[1]}" = "Try 'rv-plot --help' for more information." ]
		[ "$output" = "" ]
	done <<EOF
|no log file given
--bogus $T/a.log|unknown option '--bogus'
--bogus=1 $T/a.log|unknown option '--bogus'
-z $T/a.log|unknown option '-z'
--x foo $T/a.log|--x: 'foo': not one of step, wall, grads, samples, epoch
$T/a.log --x|option '--x' needs an argument
$T/a.log -o|option '-o' needs an argument
--help=1|option '--help' doesn't allow an argument
--data=1 $T/a.log|option '--data' doesn't allow an argument
EOF
}
