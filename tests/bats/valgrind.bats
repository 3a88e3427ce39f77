#!/usr/bin/env bats
# A whole pipeline under valgrind memcheck: no invalid access, no use of
# uninitialised memory, no leak, in any program of the pipe.  The plain
# build only (AddressSanitizer and valgrind do not mix; the ASan build runs
# the rest of the suite).

load helpers

setup() {
	need_fmnist
	case "${RV_BUILD:-build}" in
	*asan*) skip "valgrind runs on the plain build" ;;
	esac
	command -v valgrind >/dev/null || {
		echo "valgrind is not installed: run make deps" >&2
		return 1
	}
	T="$BATS_TEST_TMPDIR"
	VG=(valgrind -q --error-exitcode=99 --leak-check=full
	    --errors-for-leak-kinds=definite,indirect --track-origins=yes)
}

@test "valgrind: decode | augment | refurbish | batch | inspect is memcheck-clean" {
	slow plain
	run -0 --separate-stderr bash -c "set -o pipefail
	    ${VG[*]} rv-decode -q -j 2 --limit 200 '$FMNIST/train-images-idx3-ubyte.gz' \
	        '$FMNIST/train-labels-idx1-ubyte.gz' |
	    ${VG[*]} rv-augment -q -j 2 'random_crop size=28 padding=4; randaugment n=2 m=9' > '$T/aug.rvs'
	    ${VG[*]} rv-refurbish -q -j 2 --partial 'randaugment n=2 m=9' --final flip \
	        --reuse 2 --epochs 3 --mem 40K --cache-dir '$T' '$T/aug.rvs' |
	    ${VG[*]} rv-batch -q -b 32 --shuffle-buffer 64 |
	    ${VG[*]} rv-inspect > '$T/summary'"
	[ -z "$stderr" ]
	grep -q '^samples *600 ' "$T/summary"
}

@test "valgrind: rv-score, learning from a feedback file under each policy, is memcheck-clean" {
	slow plain
	rv-decode -q --limit 300 --epochs 3 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$T/s.rvs"
	# two epochs of feedback, some ids hard (gradnorm 1.1), most easy
	awk 'BEGIN { for (e = 0; e < 2; e++) for (i = 0; i < 300; i++)
	    printf "%d\t%d\t%d\t%.6g\t%.6g\n", i, e, e * 10 + int(i / 32),
	        0.5 + (i % 7) / 7, (i % 5 == 0) + 0.1 }' > "$T/fb.txt"
	for p in "assistant --min-feedback 10" "assistant --features image" \
	    "history" "uniform --keep 0.5"; do
		# shellcheck disable=SC2086
		run -0 --separate-stderr "${VG[@]}" rv-score -v --policy $p \
		    --reweight --feedback "$T/fb.txt" -o "$T/out.rvs" "$T/s.rvs"
		[[ "$stderr" == *"rv-score: 900 seen, "* ]]
		[ "$(grep -vc '^rv-score: ' <<< "$stderr")" -eq 0 ]
	done
}

@test "valgrind: JPEG and PNG decoding of every fixture flavour is memcheck-clean" {
	slow plain
	need_fixtures
	run -0 --separate-stderr bash -c "${VG[*]} rv-decode -q -j 2 '$FIX/ds/folder' \
	    '$FIX/ds/wds.tar' '$FIX/ds/broken.tar' > /dev/null"
	# the broken members are reported, and nothing else is
	[ -n "$stderr" ]
	while IFS= read -r line; do
		case $line in
		*"(skipped)" | *": no image member") ;;
		*) echo "unexpected: $line" >&2; return 1 ;;
		esac
	done <<< "$stderr"
}
