#!/usr/bin/env bats
# Faults around the programs rather than in their input: a reader that
# closes early, an upstream that stops mid-record, a full disk (/dev/full
# and a tiny tmpfs), and signals during a run.  Every program must end
# quietly or with one "write: No space left on device" line, exit as
# documented, and never leave an output file that looks complete.
# kill -9 then --resume is in refurbish.bats ("--resume after kill -9").

load helpers

setup_file() {
	need_fmnist
	local d="$BATS_FILE_TMPDIR"
	rv-decode -q --limit 20 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$d/s.rvs"
	rv-decode -q --limit 2000 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$d/m.rvs"
}

setup() {
	D="$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	IMG="$FMNIST/train-images-idx3-ubyte.gz"
	LAB="$FMNIST/train-labels-idx1-ubyte.gz"
	FULL=
}

teardown() {
	[ -z "$FULL" ] || umount "$FULL" 2>/dev/null || true
}

# Each program that writes, as a command taking its input last; %s is
# the input.  rv-decode's input is Fashion-MNIST.
writers() {
	cat <<EOF
rv-decode -q --limit %n $IMG $LAB
rv-batch -b 4 %s
rv-augment flip %s
rv-refurbish -q -j 2 --partial flip --final flip --epochs 3 %s
rv-score -q %s
rv-score -q --policy uniform --keep 0.9 --reweight %s
rv-inspect %s
rv-inspect --dump %s %s %s %s %s %s %s %s %s %s %s %s
EOF
}

# writers with %s/%n filled in: FILE and the rv-decode limit
each_writer() {
	writers | sed -e "s|%s|$1|g" -e "s|%n|$2|g"
}

# A 64 kB tmpfs at $T/full, filled up when $1 is "filled".
full_fs() {
	mkdir -p "$T/full"
	if ! mount -t tmpfs -o size=64k tmpfs "$T/full" 2> "$T/mount.err"; then
		skip "cannot mount a tmpfs here: $(cat "$T/mount.err")"
	fi
	FULL="$T/full"
	if [ "${1:-}" = filled ]; then
		dd if=/dev/zero of="$FULL/filler" bs=4k 2>/dev/null || true
	fi
}

@test "faults: a reader that closes early ends every writer quietly (SIGPIPE)" {
	while read -r cmd; do
		st=$(bash -c "$cmd 2> '$T/err' | head -c 1000 > /dev/null; echo \${PIPESTATUS[0]}")
		# 141: killed by SIGPIPE, the default the filters keep.  The
		# summary of rv-inspect (1.2 kB, written at the end in one
		# go) fits in the pipe before head exits: status 0.  Every
		# other writer must write more than a pipe can hold (1 MiB
		# at most), or it could finish first: hence --dump of the
		# stream twelve times over (24000 lines, ~1.5 MB).
		want=141
		[ "$cmd" != "rv-inspect $D/m.rvs" ] || want=0
		[ "$st" -eq "$want" ] || { echo "$cmd: status $st" >&2; false; }
		[ ! -s "$T/err" ] || { echo "$cmd:" >&2; cat "$T/err" >&2; false; }
	done < <(each_writer "$D/m.rvs" 2000)
}

@test "faults: an upstream that stops mid-record: 'truncated frame', exit 1" {
	for p in "rv-batch -b 4" "rv-augment flip" "rv-inspect" \
	    "rv-refurbish -q --partial flip --final flip" "rv-score -q"; do
		run -1 --separate-stderr bash -c "head -c 100000 '$D/m.rvs' | $p > /dev/null"
		re="^${p%% *}: '<stdin>': record [0-9]+ at byte [0-9]+: truncated frame\$"
		[[ "$stderr" =~ $re ]]
	done
	# from a producer, through a pipe that is cut
	run -1 --separate-stderr bash -c "rv-decode -q --limit 2000 '$IMG' '$LAB' |
	    head -c 100000 | rv-batch -b 4 > /dev/null"
	re="^rv-batch: '<stdin>': record [0-9]+ at byte [0-9]+: truncated frame\$"
	[[ "$stderr" =~ $re ]]
}

@test "faults: /dev/full, as -o and as stdout: one line, exit 1" {
	slow
	while read -r cmd; do
		prog=${cmd%% *}
		run -1 --separate-stderr $cmd -o /dev/full
		[ "$stderr" = "$prog: '/dev/full': write: No space left on device" ] ||
		    { echo "$cmd -o: $stderr" >&2; false; }
		run -1 --separate-stderr bash -c "$cmd > /dev/full"
		[ "$stderr" = "$prog: '<stdout>': write: No space left on device" ] ||
		    { echo "$cmd >: $stderr" >&2; false; }
	done < <(each_writer "$D/s.rvs" 20)
	run -1 --separate-stderr rv-inspect --grid /dev/full -o /dev/null "$D/s.rvs"
	[ "$stderr" = "rv-inspect: '/dev/full': write: No space left on device" ]
}

@test "faults: -o into a full filesystem: exit 1, no file left, not even a temp file" {
	full_fs filled
	while read -r cmd; do
		prog=${cmd%% *}
		run -1 --separate-stderr $cmd -o "$FULL/out"
		[ "$stderr" = "$prog: '$FULL/out': write: No space left on device" ] ||
		    { echo "$cmd: $stderr" >&2; false; }
		[ "$(ls -A "$FULL")" = filler ]
	done < <(each_writer "$D/s.rvs" 20)
	run -1 --separate-stderr rv-inspect --grid "$FULL/g.png" -o /dev/null "$D/s.rvs"
	[ "$stderr" = "rv-inspect: '$FULL/g.png': write: No space left on device" ]
	run -1 --separate-stderr rv-refurbish -q --partial flip --final flip \
	    --epochs 2 -o "$FULL/%03d.rvs" "$D/s.rvs"
	[ "$stderr" = "rv-refurbish: '$FULL/000.rvs': write: No space left on device" ]
	[ "$(ls -A "$FULL")" = filler ]
}

@test "faults: a filesystem that fills up during the run: no file left" {
	full_fs
	# 2000 samples are 1 MB: the 64 kB tmpfs fills part way
	run -1 --separate-stderr rv-decode -q --limit 2000 "$IMG" "$LAB" -o "$FULL/d.rvs"
	[ "$stderr" = "rv-decode: '$FULL/d.rvs': write: No space left on device" ]
	[ -z "$(ls -A "$FULL")" ]
	run -1 --separate-stderr rv-augment flip "$D/m.rvs" -o "$FULL/a.rvs"
	[ "$stderr" = "rv-augment: '$FULL/a.rvs': write: No space left on device" ]
	[ -z "$(ls -A "$FULL")" ]
}

# signal_run SIG DELAY DIR cmd...: start cmd, wait until a temp file
# (.NAME.tmp.XXXXXX) shows up in DIR, DELAY seconds more, then send SIG.
# Prints "SEEN STATUS": SEEN 1 when the temp file was there, so the signal
# came while it was.  Job control (set -m) keeps the background job from
# ignoring SIGINT, as a non-interactive shell's jobs otherwise do.
# (The shell's "[1]+ Interrupt" notice goes to its stderr.)
signal_run() {
	local sig=$1 delay=$2 dir=$3
	shift 3
	bash -c '
		set -m
		sig=$1 delay=$2 dir=$3 err=$4
		shift 4
		"$@" 2> "$err" &
		pid=$!
		seen=0
		for ((i = 0; i < 2000; i++)); do
			if ls -A "$dir" | grep -q "\.tmp\."; then
				seen=1
				break
			fi
			sleep 0.01
		done
		sleep "$delay"
		kill -s "$sig" "$pid"
		st=0
		wait "$pid" || st=$?
		echo "$seen $st"' _ "$sig" "$delay" "$dir" "$T/err" "$@"
}

@test "faults: SIGINT during a long rv-decode: status 130, no file, no temp file" {
	slow
	mkdir "$T/o"
	run -0 --separate-stderr signal_run INT 0.2 "$T/o" rv-decode -q --epochs 1000 "$IMG" "$LAB" -o "$T/o/x.rvs"
	[ "$output" = "1 130" ]
	[ ! -s "$T/err" ]
	[ -z "$(ls -A "$T/o")" ]
}

@test "faults: SIGTERM and SIGHUP: status 128+sig, no temp file; finished epochs stay" {
	slow
	mkdir "$T/o" "$T/p"
	# rv-augment from a long upstream, killed with SIGTERM
	run -0 --separate-stderr signal_run TERM 0.2 "$T/o" bash -c "exec rv-augment flip -o '$T/o/a.rvs' \
	    < <(rv-decode -q --epochs 1000 '$IMG' '$LAB')"
	[ "$output" = "1 143" ]
	[ ! -s "$T/err" ]
	[ -z "$(ls -A "$T/o")" ]
	# rv-score from a long upstream, with feedback, killed with SIGTERM
	mkfifo "$T/fb"
	run -0 --separate-stderr signal_run TERM 0.3 "$T/o" bash -c "exec rv-score -q --feedback '$T/fb' \
	    -o '$T/o/s.rvs' < <(rv-decode -q --epochs 1000 '$IMG' '$LAB')"
	[ "$output" = "1 143" ]
	[ ! -s "$T/err" ]
	[ -z "$(ls -A "$T/o")" ]
	# rv-refurbish writing one file per epoch, killed with SIGHUP: the
	# epochs already renamed into place are complete streams
	run -0 --separate-stderr signal_run HUP 0.5 "$T/p" rv-refurbish -q -j 2 --partial flip \
	    --final flip --epochs 100000 "$D/m.rvs" -o "$T/p/%06d.rvs"
	[ "$output" = "1 129" ]
	[ ! -s "$T/err" ]
	[ -z "$(ls -A "$T/p" | grep -v '^[0-9]*\.rvs$')" ]
	for f in "$T"/p/*.rvs; do
		[ -e "$f" ] || continue
		run -0 rv-inspect "$f"
		[[ "$output" == *"2000 samples, epoch-end 2000"* ]]
	done
}

@test "faults: an ignored SIGINT (nohup-style) stays ignored: the run completes" {
	# bash's background jobs ignore SIGINT; the program must not undo it
	rv-decode -q --epochs 6 "$IMG" "$LAB" -o "$T/x.rvs" &
	pid=$!
	sleep 0.3
	kill -INT "$pid"	# fails if the run were already over
	wait "$pid"
	run -0 rv-inspect "$T/x.rvs"
	[[ "$output" == *"epochs       6"* ]]
}
