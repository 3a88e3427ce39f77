#!/usr/bin/env bats
# Memory bombs in the stream (issue 21, item 4): a 25 KB stream holding
# one valid 768 MiB sample of zeros.  Every stream reader refuses it from
# the record header, with one line and exit 1, before any memory goes to
# its payload (RV_MAX_SAMPLE, default 715827880 bytes: rv-decode's
# default --max-pixels of 4 channels).  Under the limit, rv-augment and
# rv-refurbish hold a sample without copying it: with -j 1 their peak is
# the sample plus the output frame (twice the sample to a pipe, where the
# frame is stored; once to a file, where it is compressed), plus a fixed
# baseline (not asserted under sanitizers, which still run the programs).

load helpers

setup_file() {
	need_fmnist
	local d="$BATS_FILE_TMPDIR"
	mksample "$d/bomb.rvs" 16384 16384 3
	mksample "$d/bombb.rvs" 16384 16384 3 batch
	# 64 MiB (67084288 bytes) for the peak RSS checks
	mksample "$d/big.rvs" 4096 5461 3
	rv-decode -q --limit 8 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$d/s.rvs"
	rv-batch -b 4 "$d/s.rvs" -o "$d/b.rvs"
}

setup() {
	D="$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
}

quiet() {
	"$@" > /dev/null
}

# refused FILE WHAT: every reader fails on FILE with exit 1 and the one
# line "prog: 'FILE': record 0 at byte 0: WHAT", from a file and a pipe.
refused() {
	local c p st
	for c in "${READERS[@]}"; do
		p=${c%% *}
		st=0
		# shellcheck disable=SC2086
		$c "$1" > "$T/out" 2> "$T/err" || st=$?
		if [ "$st" -ne 1 ] || [ "$(cat "$T/err")" != \
		    "$p: '$1': record 0 at byte 0: $2" ]; then
			echo "$c '$1': status $st, stderr:" >&2
			cat "$T/err" >&2
			return 1
		fi
		st=0
		# shellcheck disable=SC2086
		$c < "$1" > "$T/out" 2> "$T/err" || st=$?
		if [ "$st" -ne 1 ] || [ "$(cat "$T/err")" != \
		    "$p: '<stdin>': record 0 at byte 0: $2" ]; then
			echo "$c < '$1': status $st, stderr:" >&2
			cat "$T/err" >&2
			return 1
		fi
	done
}

@test "hostile-memory: the bomb is a valid stream of one 768 MiB sample" {
	slow
	[ "$(stat -c %s "$D/bomb.rvs")" -lt 40000 ]
	run -0 zstd -t -q "$D/bomb.rvs"
	run -0 zstd -t -q "$D/bombb.rvs"
}

@test "hostile-memory: every reader refuses a 768 MiB sample from its header" {
	slow
	refused "$D/bomb.rvs" "sample of 805306368 bytes is over the limit of 715827880 (RV_MAX_SAMPLE to raise)"
}

@test "hostile-memory: every reader refuses a batch of one 768 MiB sample" {
	slow
	refused "$D/bombb.rvs" "sample of 805306368 bytes in a batch is over the limit of 715827880 (RV_MAX_SAMPLE to raise)"
}

@test "hostile-memory: RV_MAX_SAMPLE lowers the limit; a sample at it is read" {
	# Fashion-MNIST samples are 28x28x1 = 784 bytes
	local c f want
	for c in "${READERS[@]}"; do
		case $c in
		rv-train-gpu*) f="$D/b.rvs" ;;
		*) f="$D/s.rvs" ;;
		esac
		# shellcheck disable=SC2086
		RV_MAX_SAMPLE=784 run -0 quiet $c "$f"
		# shellcheck disable=SC2086
		RV_MAX_SAMPLE=783 run -1 --separate-stderr quiet $c "$f"
		case $c in
		rv-train-gpu*) want="sample of 784 bytes in a batch" ;;
		*) want="sample of 784 bytes" ;;
		esac
		[[ "$stderr" == "${c%% *}: '$f': record "*" at byte "*": $want is over the limit of 783 (RV_MAX_SAMPLE to raise)" ]] ||
		    { echo "$c: $stderr" >&2; return 1; }
	done
	# an invalid value is ignored: the default applies
	RV_MAX_SAMPLE=lots run -0 quiet rv-inspect "$D/s.rvs"
	RV_MAX_SAMPLE=lots run -1 --separate-stderr rv-inspect "$D/bomb.rvs"
	[[ "$stderr" == *"over the limit of 715827880 (RV_MAX_SAMPLE to raise)" ]]
}

# 64 MiB sample = 65512 KB; baseline allowance 24 MiB.
S_KB=65512
BASE_KB=24576

@test "hostile-memory: rv-augment holds a 64 MiB sample once (file) or twice (pipe)" {
	slow
	need_time
	local kb
	# to a pipe the output frame is stored: the sample and its frame
	kb=$(peak rv-augment -j 1 flip "$D/big.rvs")
	echo "flip to a pipe: $kb KB" >&2
	under "$kb" $((2 * S_KB + BASE_KB))
	kb=$(peak rv-augment -j 1 "rrc size=224; flip" "$D/big.rvs")
	echo "rrc to a pipe: $kb KB" >&2
	under "$kb" $((S_KB + BASE_KB))
	# to a file the frame is compressed: the sample alone
	/usr/bin/time -f '%M' -o "$T/rss" rv-augment -j 1 flip "$D/big.rvs" \
	    -o "$T/o.rvs"
	kb=$(tail -1 "$T/rss")
	echo "flip to a file: $kb KB" >&2
	under "$kb" $((S_KB + BASE_KB))
	run -0 rv-inspect "$T/o.rvs"
	[[ "$output" == *"shapes       4096x5461x3 1"* ]]
}

@test "hostile-memory: rv-refurbish holds a 64 MiB sample once (file) or twice (pipe)" {
	slow
	need_time
	local kb
	kb=$(peak rv-refurbish -q -j 1 --mem 2G --partial flip --final flip \
	    "$D/big.rvs")
	echo "to a pipe: $kb KB" >&2
	under "$kb" $((2 * S_KB + BASE_KB))
	/usr/bin/time -f '%M' -o "$T/rss" rv-refurbish -q -j 1 --mem 2G \
	    --partial flip --final flip "$D/big.rvs" -o "$T/o.rvs"
	kb=$(tail -1 "$T/rss")
	echo "to a file: $kb KB" >&2
	under "$kb" $((S_KB + BASE_KB))
	run -0 rv-inspect "$T/o.rvs"
	[[ "$output" == *"shapes       4096x5461x3 1"* ]]
}
