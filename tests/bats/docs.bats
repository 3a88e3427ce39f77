#!/usr/bin/env bats
# The README's runnable lines run as written: every fenced block that
# follows a `<!-- run -->` line, in order, in one shell (a block's files
# and variables are the next one's), from a directory laid out as a
# checkout (build/, scripts/, python/ linked to this one's), under set -e:
# a line that no longer works fails here.  The blocks not marked are
# set-up (apt-get) or show a form with a placeholder.

load helpers

# runnable FILE: the marked blocks of FILE, each preceded by a comment
# naming its line, on stdout.
runnable() {
	awk '
	    /^<!-- run -->$/ { want = 1; next }
	    want && /^```/ && !inside { inside = 1; want = 0
		printf "# %s:%d\n", FILENAME, NR; next }
	    inside && /^```$/ { inside = 0; next }
	    inside { print; next }
	    { want = 0 }' "$1"
}

@test "README.md: the marked blocks are there, each a fenced block right after its marker" {
	local n m
	n=$(grep -c '^<!-- run -->$' "$REPO/README.md")
	m=$(runnable "$REPO/README.md" | grep -c "^# $REPO/README.md:")
	[ "$n" -ge 6 ]
	[ "$n" = "$m" ]
}

@test "README.md: a newcomer's page: at most 250 lines, no issue numbers in it or the man pages" {
	[ "$(wc -l < "$REPO/README.md")" -le 250 ]
	run grep -nE '[Ii]ssue [0-9]+' "$REPO/README.md" "$REPO"/man/*.[1-9]
	[ "$status" = 1 ] || { echo "$output"; false; }
}

@test "README.md: the tour and the PyTorch loop run as written, in order" {
	slow
	need_fmnist
	need_torch
	command -v convert >/dev/null || skip "needs ImageMagick (make deps)"
	local c="$BATS_TEST_TMPDIR/checkout"
	mkdir -p "$c"
	ln -s "${BIN%/bin}" "$c/build"
	ln -s "$REPO/scripts" "$c/scripts"
	cp -r "$REPO/python" "$c/python"
	{
		echo 'set -e'
		runnable "$REPO/README.md"
	} > "$BATS_TEST_TMPDIR/tour.sh"
	cd "$c"
	run -0 --separate-stderr bash -x "$BATS_TEST_TMPDIR/tour.sh"
	# what the lines say they make
	[ -s tour/train.rvs ] && [ -s tour/test.rvs ] && [ -s tour/model.ck ]
	[ "$(head -c 4 tour/sheet.png | od -An -tx1 | tr -d ' ')" = 89504e47 ]
	[ "$(head -c 4 tour/curves.png | od -An -tx1 | tr -d ' ')" = 89504e47 ]
	[ "$(head -c 4 tour/photos.png | od -An -tx1 | tr -d ' ')" = 89504e47 ]
	[ "$(ls tour/epochs)" = "$(printf '%s\n' 000.rvs 001.rvs 002.rvs)" ]
	[ -x tour/venv/bin/python ]
}
