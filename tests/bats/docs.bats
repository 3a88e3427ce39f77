#!/usr/bin/env bats
# The README's runnable lines run as written: every fenced block that
# follows a `<!-- run -->` line, in order, in one shell (a block's files
# and variables are the next one's), from a directory laid out as a
# checkout (build/, scripts/, python/ linked to this one's), under set -e:
# a line that no longer works fails here.  The blocks not marked are
# set-up (apt-get) or show a form with a placeholder.
#
# The man pages' EXAMPLES likewise: a literal block right after a
# '.\" run' comment line runs, the marked blocks of a page in order in one
# shell, in a folder of the page's own, on Fashion-MNIST cut to 2000
# training and 500 test samples (the page's d= line pointed at the cut
# files).  Mark an example that runs on Fashion-MNIST; one that needs
# photographs, shards, a GPU or hours stays unmarked.

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
	[ "$(ls tour/parts)" = "$(printf '%s\n' 000.rvs 001.rvs 002.rvs)" ]
	[ -x tour/venv/bin/python ]
}

# man_runnable FILE: the EXAMPLES blocks of FILE marked by a '.\" run'
# line right before their .Bd -literal, each preceded by a comment naming
# its line, with mdoc's escapes undone (\e, \-, \&), on stdout.
man_runnable() {
	awk '
	    /^\.\\" run/ { want = 1; next }
	    want && /^\.Bd -literal/ { inside = 1; want = 0
		printf "# %s:%d\n", FILENAME, NR; next }
	    inside && /^\.Ed$/ { inside = 0; next }
	    inside { gsub(/\\e/, "\\"); gsub(/\\-/, "-"); gsub(/\\&/, "")
		print; next }
	    { want = 0 }' "$1"
}

# small_fmnist DIR N M: Fashion-MNIST's four files in DIR, cut to the
# first N training and M test samples (the IDX headers say so).
small_fmnist() {
	mkdir -p "$1"
	"$PY" - "$FMNIST" "$1" "$2" "$3" <<'PY'
import gzip, struct, sys
src, dst, n, m = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for part, k in (("train", n), ("t10k", m)):
    for kind in ("images-idx3", "labels-idx1"):
        name = f"{part}-{kind}-ubyte.gz"
        d = gzip.open(f"{src}/{name}").read()
        nd = d[3]
        dims = list(struct.unpack(f">{nd}I", d[4:4 + 4 * nd]))
        each = 1
        for x in dims[1:]:
            each *= x
        dims[0] = k
        body = d[4 + 4 * nd:4 + 4 * nd + k * each]
        with gzip.open(f"{dst}/{name}", "wb") as f:
            f.write(d[:4] + struct.pack(f">{nd}I", *dims) + body)
PY
}

@test "man pages: the marked EXAMPLES are there, each a literal block right after its marker" {
	local f n m total=0
	for f in "$REPO"/man/*.[1-9]; do
		n=$(grep -c '^\.\\" run' "$f" || true)
		m=$(man_runnable "$f" | grep -c "^# $f:" || true)
		[ "$n" = "$m" ] || { echo "$f: $n markers, $m blocks"; false; }
		total=$((total + n))
	done
	[ "$total" -ge 10 ]
}

@test "man pages: the marked EXAMPLES run as written, page by page, on Fashion-MNIST cut to 2000 samples" {
	slow
	need_fmnist
	local small="$BATS_TEST_TMPDIR/fmnist" f page
	PY=/usr/bin/python3
	small_fmnist "$small" 2000 500
	for f in "$REPO"/man/*.[1-9]; do
		grep -q '^\.\\" run' "$f" || continue
		page="$BATS_TEST_TMPDIR/${f##*/}"
		mkdir "$page.d"
		{
			echo 'set -e'
			# the dataset where the examples look for it, cut short
			man_runnable "$f" |
			    sed "s|^d=/usr/share/datasets/fashion-mnist$|d='$small'|"
		} > "$page.sh"
		(cd "$page.d" && bash -x "$page.sh" > "$page.out" 2>&1) ||
		    { echo "${f##*/}:"; tail -20 "$page.out"; false; }
	done
	# what the lines say they make
	[ "$(grep -c . "$BATS_TEST_TMPDIR/rv.7.out")" -gt 0 ]
	grep -qx intact "$BATS_TEST_TMPDIR/rv.7.out"
	[ -s "$BATS_TEST_TMPDIR/rv-refurbish.1.d/train.rvs" ]
	[ -s "$BATS_TEST_TMPDIR/rv-score.1.d/kept.rvs" ]
	[ -s "$BATS_TEST_TMPDIR/rv-train-gpu.1.d/log.jsonl" ]
}
