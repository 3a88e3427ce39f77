#!/usr/bin/env bats
# Man pages and the command-line conventions every program shares: each
# page lints clean, each long option a program prints in --help is
# documented in its page, and --help, --version and an unknown option
# behave the same everywhere.  The loops cover whatever programs are built,
# so the checks grow with the project; having none built is a failure.

load helpers

MAN="$REPO/man"

# The programs built, one per line; fails when there are none.
programs() {
	local p found=0
	for p in "$BIN"/rv-*; do
		[ -x "$p" ] || continue
		basename "$p"
		found=1
	done
	if [ "$found" = 0 ]; then
		echo "no programs in '$BIN': run make" >&2
		return 1
	fi
}

version() {
	sed -n 's/^#define RV_VERSION_STRING "\(.*\)"$/\1/p' "$REPO/lib/base/opt.h"
}

@test "man: every page lints clean with mandoc -T lint -W warning" {
	slow
	local page out fails=""
	local n=0
	for page in "$MAN"/*.[1-9]; do
		[ -f "$page" ] || continue
		n=$((n + 1))
		if ! out=$(mandoc -T lint -W warning "$page" 2>&1) ||
		    [ -n "$out" ]; then
			fails+="$out"$'\n'
		fi
	done
	[ "$n" -gt 0 ]
	[ -z "$fails" ] || { printf '%s' "$fails"; false; }
}

@test "man: every page renders as written: no macro name, stray section sign or joined display line left in the text" {
	slow
	local page out fails=""
	for page in "$MAN"/*.[1-9]; do
		[ -f "$page" ] || continue
		# a macro name the renderer printed as a word (a macro where
		# a line does not start with one), or the section sign of \(sc
		# written for a percent sign
		out=$(mandoc -T utf8 "$page" | sed 's/.\x08//g' | grep -nwE \
		    'Ns|Ar|Fl|Pq|Xr|Ql|Sx|Cm|Ev|Pa|Oo|Oc|Po|Pc|Bd|Ed|Bl|El|Dq|Nm|Sq|Qo|Qc|Sy|Va|Dv|Ic' |
		    sed "s|^|$page: rendered |") || true
		[ -z "$out" ] || fails+="$out"$'\n'
		out=$(mandoc -T utf8 "$page" | grep -n '§' | sed "s|^|$page: rendered |") || true
		[ -z "$out" ] || fails+="$out"$'\n'
		# in a display, a line ending in a lone backslash joins the next
		# to it (roff's continuation): a shell line's is written \e
		out=$(awk -v f="$page" '
		    /^\.Bd/ { d = 1; next }
		    /^\.Ed/ { d = 0; next }
		    d && !/^\./ && match($0, /\\+$/) && RLENGTH % 2 {
			print f ":" NR ": a display line ends in \\ (write \\e)" }' "$page")
		[ -z "$out" ] || fails+="$out"$'\n'
	done
	[ -z "$fails" ] || { printf '%s' "$fails"; false; }
}

@test "man: the overview and the format pages exist" {
	slow
	[ -f "$MAN/rv.7" ]
	[ -f "$MAN/rv-stream.5" ]
	grep -q '^\.Dt RV 7$' "$MAN/rv.7"
	grep -q '^\.Dt RV-STREAM 5$' "$MAN/rv-stream.5"
}

@test "man: every program has a page with its name and an EXIT STATUS for 0, 1 and 2" {
	slow
	local prog page fails="" upper
	programs > "$BATS_TEST_TMPDIR/progs"
	while read -r prog; do
		page="$MAN/$prog.1"
		if [ ! -f "$page" ]; then
			fails+="$prog: no man/$prog.1"$'\n'
			continue
		fi
		upper=$(printf '%s' "$prog" | tr '[:lower:]' '[:upper:]')
		grep -q "^\.Dt $upper 1\$" "$page" ||
			fails+="$prog: .Dt is not '$upper 1'"$'\n'
		grep -q "^\.Nm $prog\$" "$page" ||
			fails+="$prog: .Nm is not '$prog'"$'\n'
		# .It 0, .It 1 and .It 2 inside the EXIT STATUS section
		sed -n '/^\.Sh EXIT STATUS/,/^\.Sh /p' "$page" |
		    grep -c '^\.It [012]$' | grep -qx 3 ||
			fails+="$prog: EXIT STATUS lacks .It 0, 1 or 2"$'\n'
	done < "$BATS_TEST_TMPDIR/progs"
	[ -z "$fails" ] || { printf '%s' "$fails"; false; }
}

@test "man: every long option in --help is documented in the program's page" {
	slow
	local prog opt src fails=""
	programs > "$BATS_TEST_TMPDIR/progs"
	while read -r prog; do
		[ -f "$MAN/$prog.1" ] || { fails+="$prog: no page"$'\n'; continue; }
		# mdoc writes --name as ".Fl \-name" (or "Fl -name"): drop
		# the escapes, then look for "Fl -name" as a whole word
		src=$(sed 's/\\//g' "$MAN/$prog.1")
		"$prog" --help > "$BATS_TEST_TMPDIR/help" ||
			fails+="$prog: --help failed"$'\n'
		grep -oE -- '--[a-z0-9][a-z0-9-]*' "$BATS_TEST_TMPDIR/help" |
		    sort -u > "$BATS_TEST_TMPDIR/opts"
		[ -s "$BATS_TEST_TMPDIR/opts" ] ||
			fails+="$prog: --help lists no long option"$'\n'
		while read -r opt; do
			grep -qE -- "Fl ${opt#-}([^a-z0-9-]|\$)" <<< "$src" ||
				fails+="$prog: $opt is not in man/$prog.1"$'\n'
		done < "$BATS_TEST_TMPDIR/opts"
	done < "$BATS_TEST_TMPDIR/progs"
	[ -z "$fails" ] || { printf '%s' "$fails"; false; }
}

@test "man: --help prints the usage on stdout and exits 0" {
	slow
	local prog fails=""
	programs > "$BATS_TEST_TMPDIR/progs"
	while read -r prog; do
		run -0 --separate-stderr "$prog" --help
		[ "${lines[0]#usage: "$prog"}" != "${lines[0]}" ] ||
			fails+="$prog: first line '${lines[0]}'"$'\n'
		[ -z "$stderr" ] || fails+="$prog: stderr '$stderr'"$'\n'
		run -0 --separate-stderr "$prog" -h
		[ "${lines[0]#usage: "$prog"}" != "${lines[0]}" ] ||
			fails+="$prog -h: first line '${lines[0]}'"$'\n'
	done < "$BATS_TEST_TMPDIR/progs"
	[ -z "$fails" ] || { printf '%s' "$fails"; false; }
}

@test "man: --version prints 'prog VERSION' and exits 0" {
	local prog v fails=""
	v=$(version)
	[ "$v" = 0.1.0 ]
	programs > "$BATS_TEST_TMPDIR/progs"
	while read -r prog; do
		run -0 --separate-stderr "$prog" --version
		[ "$output" = "$prog $v" ] ||
			fails+="$prog: '$output'"$'\n'
		[ -z "$stderr" ] || fails+="$prog: stderr '$stderr'"$'\n'
		run -0 --separate-stderr "$prog" -V
		[ "$output" = "$prog $v" ] ||
			fails+="$prog -V: '$output'"$'\n'
	done < "$BATS_TEST_TMPDIR/progs"
	[ -z "$fails" ] || { printf '%s' "$fails"; false; }
}

@test "man: an unknown option exits 2 with 'prog: unknown option' and where the usage is, GNU's two lines; a near long option is named" {
	local prog fails=""
	programs > "$BATS_TEST_TMPDIR/progs"
	while read -r prog; do
		run -2 --separate-stderr "$prog" --bogus
		[ "${stderr_lines[0]}" = "$prog: unknown option '--bogus'" ] ||
			fails+="$prog: '${stderr_lines[0]}'"$'\n'
		[ "${stderr_lines[1]}" = "Try '$prog --help' for more information." ] ||
			fails+="$prog: '${stderr_lines[1]}' after the message"$'\n'
		[ "${#stderr_lines[@]}" -eq 2 ] ||
			fails+="$prog: ${#stderr_lines[@]} lines, not 2"$'\n'
		# a mistyped long option: the nearest the usage names
		run -2 --separate-stderr "$prog" --verbsoe
		[ "${stderr_lines[0]}" = "$prog: unknown option '--verbsoe' (did you mean '--verbose'?)" ] ||
			fails+="$prog --verbsoe: '${stderr_lines[0]}'"$'\n'
		[ -z "$output" ] || fails+="$prog: stdout '$output'"$'\n'
		run -2 --separate-stderr "$prog" --bogus=1 -q
		[ "${stderr_lines[0]}" = "$prog: unknown option '--bogus'" ] ||
			fails+="$prog --bogus=1: '${stderr_lines[0]}'"$'\n'
		run -2 --separate-stderr "$prog" -%
		[ "${stderr_lines[0]}" = "$prog: unknown option '-%'" ] ||
			fails+="$prog -%: '${stderr_lines[0]}'"$'\n'
		run -2 --separate-stderr "$prog" --level 99
		[ "${stderr_lines[0]}" = "$prog: --level: '99': out of range [-7, 19]" ] ||
			fails+="$prog --level 99: '${stderr_lines[0]}'"$'\n'
	done < "$BATS_TEST_TMPDIR/progs"
	[ -z "$fails" ] || { printf '%s' "$fails"; false; }
}
