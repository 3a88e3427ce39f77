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
	run -0 shellcheck -x pipelines/*.sh pipelines/*.sbatch scripts/*.sh scripts/rv-plot bench/*.sh bench/run \
	    fuzz/*.sh tests/*.bash tests/*.sh tests/gpu/*.sh tests/run .ci/run
}
