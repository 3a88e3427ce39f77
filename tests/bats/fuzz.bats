#!/usr/bin/env bats
# The libFuzzer harnesses (fuzz/): every crasher once found and fixed,
# kept in fuzz/regress/<target>/, must run clean, and every harness must
# build and survive a short run from its seeds.  The harnesses have their
# own sanitizer build (build/fuzz), so under RV_BUILDS="build:quick
# build-asan" (tests/run) these run with the last build only; they are
# slow, so make check leaves them out.

load helpers

TARGETS="stream codec archive idx_cifar batch spec model feedback ckpt index"

setup() {
	local last
	slow
	# The suite runs its jobs side by side on a busy machine, where an
	# input's wall time says more of the load than of the input: a
	# generous limit here; fuzzing proper (make fuzz) runs alone, at
	# 2 s an input.
	export FUZZ_TIMEOUT=30
	last=${RV_BUILDS:-${RV_BUILD:-build}}
	last=${last##* }
	last=${last%:quick}
	[ "${RV_BUILD:-build}" = "$last" ] ||
		skip "the fuzz build is shared: run with RV_BUILD=$last only"
	command -v clang >/dev/null || skip "clang is not installed"
	cd "$REPO"
}

@test "fuzz: every regression input replays clean through its harness" {
	local t n
	run -0 --separate-stderr bash fuzz/run.sh --regress
	[ "$stderr" = "" ]
	for t in $TARGETS; do
		n=$(find "fuzz/regress/$t" -type f 2>/dev/null | wc -l)
		[ "$n" -gt 0 ] || continue
		[[ "$output" == *"fuzz: $t: $n regression inputs ok"* ]]
	done
}

@test "fuzz: every harness survives a short run from its seeds" {
	local t
	FUZZ_SECONDS=3 FUZZ_CORPUS="$BATS_TEST_TMPDIR/corpus" \
	    run -0 --separate-stderr bash fuzz/run.sh
	[ "$stderr" = "" ]
	for t in $TARGETS; do
		[[ "$output" =~ "fuzz: $t: "[0-9]+" runs in 3s, ok" ]]
	done
}

@test "fuzz: an unknown target is a usage error" {
	run -2 --separate-stderr bash fuzz/run.sh nosuchtarget
	[ "$output" = "" ]
	[ "$stderr" = "fuzz: unknown target 'nosuchtarget' (targets: $TARGETS)" ]
}
