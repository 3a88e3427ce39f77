# Shared by the pipelines in this directory (sourced, not run): the
# settings each takes from the environment, and two helpers.  A pipeline
# sets `here` (the source tree) and calls pipeline_env NAME; then:
#   bin      the programs' directory: RV_BIN, else build/bin (put on PATH,
#            with scripts/)
#   data     Fashion-MNIST's IDX files: FMNIST, else Debian's
#            /usr/share/datasets/fashion-mnist
#   out      the output directory, made: OUT, else out/NAME (out without
#            NAME)
#   epochs   EPOCHS, else 5
#   limit    rv-decode options for the training set: --limit LIMIT
#   evlimit  and for the test set: --limit EVAL_LIMIT
#   target   rv-train-gpu options: --target-acc TARGET
#   evalopt  and --eval-every EVAL_EVERY (evaluate every N steps too)
#   seed     SEED, else 0: every stage's --seed (rv-decode's shuffle,
#            rv-augment's and rv-refurbish's ops, rv-score's draws, the
#            trainer's initialisation)
#   partial, final, reuse
#            the refurbishing pipelines' split and reuse: PARTIAL, FINAL
#            and REUSE, else RandAugment as the partial, random crop and
#            flip as the final, reuse 3 (pipeline_env sets them for all)
# shellcheck shell=bash
# shellcheck disable=SC2034	# the variables are the sourcing script's

pipeline_env() {
	bin="${RV_BIN:-$here/build/bin}"
	data="${FMNIST:-/usr/share/datasets/fashion-mnist}"
	out="${OUT:-$here/out${1:+/$1}}"
	epochs="${EPOCHS:-5}"
	limit=()
	[ -z "${LIMIT:-}" ] || limit=(--limit "$LIMIT")
	evlimit=()
	[ -z "${EVAL_LIMIT:-}" ] || evlimit=(--limit "$EVAL_LIMIT")
	target=()
	[ -z "${TARGET:-}" ] || target=(--target-acc "$TARGET")
	evalopt=()
	[ -z "${EVAL_EVERY:-}" ] || evalopt=(--eval-every "$EVAL_EVERY")
	seed="${SEED:-0}"
	partial="${PARTIAL:-randaugment n=1 m=5}"
	final="${FINAL:-random_crop size=28 padding=2; flip}"
	reuse="${REUSE:-3}"
	mkdir -p "$out"
	PATH="$bin:$here/scripts:$PATH"
}

# decode_fmnist train|test [rv-decode options]: the training or test set
# into $out/fmnist-train.rvs or $out/fmnist-test.rvs (LIMIT, EVAL_LIMIT).
decode_fmnist() {
	local set=$1 prefix lim
	shift
	if [ "$set" = train ]; then
		prefix=train lim=("${limit[@]}")
	else
		prefix=t10k lim=("${evlimit[@]}")
	fi
	rv-decode "$@" "${lim[@]}" "$data/$prefix-images-idx3-ubyte.gz" \
	    "$data/$prefix-labels-idx1-ubyte.gz" -o "$out/fmnist-$set.rvs"
}

# train_index NAME: with SHARDS (a pattern of archive shards, WebDataset
# style: key.jpg + key.cls), the data-parallel launchers train on them
# instead of Fashion-MNIST's training set, through their index (rv-index(5))
# INDEX (default $out/train.idx), which this builds once, when it is
# missing: then each rank reads the index and its own shards only.  An
# index that no longer matches its shards stops the ranks, naming the
# shard: remove it to rebuild it.  NAME for messages.
train_index() {
	local -a files
	[ -n "${SHARDS:-}" ] || return 0
	INDEX="${INDEX:-$out/train.idx}"
	export SHARDS INDEX
	[ -s "$INDEX" ] && return 0
	# shellcheck disable=SC2206	# SHARDS is a pattern
	files=($SHARDS)
	[ -e "${files[0]}" ] || {
		echo "$1: SHARDS='$SHARDS': no such files" >&2
		exit 1
	}
	echo "$1: indexing ${#files[@]} shards into $INDEX" >&2
	rv-decode -q --index-out "$INDEX" "${files[@]}"
}

# torch_python NAME MODULE: set py to $PYTHON, else the first python3 that
# imports MODULE (torch or torch.distributed) and zstandard; else say what
# to install, as NAME, and exit 1.
torch_python() {
	local p
	py="${PYTHON:-}"
	[ -z "$py" ] || return 0
	for p in python3 /usr/bin/python3; do
		if "$p" -c "import $2, zstandard" 2>/dev/null; then
			py="$p"
			return 0
		fi
	done
	echo "$1: no python3 with torch and zstandard: apt-get install python3-torch python3-zstandard" >&2
	exit 1
}

# With TARGET the trainer exits without reading the rest of its input, and
# the stages upstream die of SIGPIPE (141) at their next write: that end is
# theirs to take, not the trainer's (rv-train-gpu(1), CAVEATS).  Run them
# as `upstream CMD...`.
upstream() { "$@" || [ $? -eq 141 ]; }
