# shellcheck shell=bash
# Checkpoints compared across runs (sourced by tests/bats/train.bats,
# tests/gpu/run.sh and scripts/golden-outputs.sh).  Two runs of the same
# training write the same checkpoint but for the f64 wall clock (at byte
# 108) and input wait (124) seconds and the trailing XXH64 covering them
# (layout: lib/train/ckpt.h).

# ck_stable CK: the bytes of CK that two such runs share.  (dd for the
# middle field: a `tail | head` there fails on SIGPIPE under pipefail.)
ck_stable() {
	head -c 108 "$1"
	dd if="$1" bs=1 skip=116 count=8 status=none
	tail -c +133 "$1" | head -c -8
}

# ck_same A B: the checkpoints are equal but for those fields.
ck_same() {
	if [ ! -s "$1" ] || [ ! -s "$2" ]; then
		echo "ck_same: missing $1 or $2"
		return 1
	fi
	cmp <(ck_stable "$1") <(ck_stable "$2")
}
