#!/usr/bin/env bats
# scripts/rv-plot: learning curves from rv-train-gpu --log files.  The logs
# here are written by hand in the documented JSON-lines format, so the test
# needs no trainer.  A wrapper standing in for gnuplot keeps the script and
# data rv-plot hands it, to check what is parsed, not only that a PNG
# appears.

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
	run -0 --separate-stderr "$PLOT" -o "$T/out.png" --title 'a run' "$T/a.log"
	[ "$output" = "" ]
	[ "$stderr" = "" ]
	is_png "$T/out.png"
	[ "$(find "$T" -name '.out.png.tmp.*' | wc -l)" -eq 0 ]
	run -0 file "$T/out.png"
	[[ "$output" == *"PNG image data, 900 x 900"* ]]
}

@test "rv-plot: writes to standard output by default" {
	"$PLOT" "$T/a.log" >"$T/out.png"
	is_png "$T/out.png"
}

@test "rv-plot: --x step, wall, grads, samples, epoch take their column" {
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

@test "rv-plot: loss and accuracy in percent, from step and eval lines" {
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
	grep -v '"event":"step"' "$T/a.log" >"$T/epochs.log"
	GNUPLOT=$T/gp "$PLOT" --x epoch -o "$T/out.png" "$T/epochs.log"
	is_png "$T/out.png"
	[ "$(cat "$T/kept.0.train")" = "$(printf '%s\n' '1 0.9 68' \
	    '2 0.47 83')" ]
}

@test "rv-plot: spaces, nulls, blank and cut lines are tolerated" {
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
	run -1 --separate-stderr "$PLOT" -o "$T/out.png" "$T/a.log" "$T/none.log"
	[ "$stderr" = "rv-plot: '$T/none.log': No such file or directory" ]
	[ ! -e "$T/out.png" ]
	run -1 --separate-stderr "$PLOT" -o "$T/out.png" "$T"
	[ "$stderr" = "rv-plot: '$T': Is a directory" ]
	run -1 --separate-stderr "$PLOT" -o "$T/out.png" "x=$T/none.log"
	[ "$stderr" = "rv-plot: '$T/none.log': No such file or directory" ]
}

@test "rv-plot: a log with no data is exit 1" {
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

@test "rv-plot: usage errors are exit 2 with the usage" {
	# arguments | the first line of stderr
	while IFS='|' read -r args msg; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr "$PLOT" $args
		[ "${stderr_lines[0]}" = "rv-plot: $msg" ]
		[ "${stderr_lines[1]}" = "usage: rv-plot [-o FILE] [--x step|wall|grads|samples|epoch] [--title T]" ]
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
EOF
}
