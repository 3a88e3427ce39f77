#!/usr/bin/env bats
# Every shell script the project ships is shellcheck-clean: the pipelines,
# the scripts, the benchmarks, the fuzz driver and the test helpers.

load helpers

@test "lint: shellcheck finds nothing in the project's shell scripts" {
	slow
	command -v shellcheck >/dev/null || {
		echo "shellcheck is not installed: run make deps" >&2
		return 1
	}
	cd "$REPO"
	run -0 shellcheck -x pipelines/*.sh pipelines/*.sbatch scripts/*.sh scripts/rv-plot bench/*.sh bench/*.bash bench/run \
	    fuzz/*.sh tests/bats/*.bash tests/setup/*.sh tests/gpu/*.sh tests/run .ci/run
}

# lib/'s folders (lib/README.md): each includes only the folders its row
# allows, every include names its folder, and the allowances have no
# cycle; a copy of lib/ with one bad include of each kind fails, naming
# the file and line.
@test "lint: lib/ keeps its layers (scripts/check-layers.py)" {
	run -0 /usr/bin/python3 "$REPO/scripts/check-layers.py"
	# every folder, each after what it includes
	[[ "$output" == "base < "* ]]
	[ "$(wc -w <<< "${output//</}")" = "$(find "$REPO/lib" -mindepth 1 -maxdepth 1 -type d | wc -l)" ]
	local l="$BATS_TEST_TMPDIR/lib"
	mkdir "$l"
	cp -r "$REPO"/lib/* "$l/"
	# stream may not include codec (codec includes stream)
	printf '#include "codec/codec.h"\n' >> "$l/stream/meta.c"
	printf '#include "err.h"\n' >> "$l/aug/aug_ops.c"
	printf '#include "base/nothing.h"\n' >> "$l/base/err.c"
	run -1 /usr/bin/python3 "$REPO/scripts/check-layers.py" "$l"
	[[ "$output" == *"lib/stream/meta.c:"*': "codec/codec.h": stream may not include codec (lib/README.md)'* ]]
	[[ "$output" == *"lib/aug/aug_ops.c:"*': "err.h": a project include names its folder'* ]]
	[[ "$output" == *"lib/base/err.c:"*': "base/nothing.h": no such file under lib/'* ]]
	# a cycle in the table itself
	cp -r "$REPO"/lib/* "$l/"
	sed -i 's/^| `base` |\(.*\)| — |$/| `base` |\1| train |/' "$l/README.md"
	run -1 /usr/bin/python3 "$REPO/scripts/check-layers.py" "$l"
	[[ "$output" == *"lib/README.md: a cycle among "*"base"* ]]
	# a folder without a row
	mkdir "$l/extra"
	run -1 /usr/bin/python3 "$REPO/scripts/check-layers.py" "$l"
	[[ "$output" == *"lib/extra/: no row in lib/README.md"* ]]
}
