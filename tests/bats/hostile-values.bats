#!/usr/bin/env bats
# Hostile values in well-formed streams (issue 21, items 7 and 8): sample
# weights that are not finite or are negative, mean/std and classes
# metadata that rv-stream(5) does not allow, epoch-end counts below the
# samples of their epoch.  rv-batch, rv-train-gpu and the Python reader
# refuse each with one line naming the file, the record and its byte
# offset (the Python reader numbering records as the C readers do), and
# still read every valid stream, the pipelines that drop samples included.
# The streams are 12 Fashion-MNIST samples with records rewritten by
# tests/checks/hostile_values_checks.py, each re-framed with a checksum.

load helpers

M='conv 4 k=3 pad=1; bn; relu; linear'

setup_file() {
	need_fmnist
	need_torch numpy
	local d="$BATS_FILE_TMPDIR"
	# records: 0 meta, 1-12 samples (ids 0-11), 13 epoch-end
	rv-decode -q --limit 12 "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz" -o "$d/s.rvs"
	# records: 0 meta, 1-3 batches of 4, 4 epoch-end
	rv-batch -q -b 4 -o "$d/b.rvs" "$d/s.rvs"
}

setup() {
	D="$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	need_torch numpy
}

# edit IN OUT EDIT...: rewrite records (see hostile_values_checks.py).
edit() {
	"$PY" "$REPO/tests/checks/hostile_values_checks.py" edit "$@"
}

# pyread FILE [float]: the Python reader's verdict on FILE.
pyread() {
	"$PY" "$REPO/tests/checks/hostile_values_checks.py" read "$@"
}

# off FILE N: the byte offset of record N of FILE.
off() {
	rv-inspect --dump "$1" | awk -F'\t' -v n="$2" '$1 == n { print $2 }'
}

train() {
	rv-train-gpu -q --device cpu -j 1 -b 4 -m "$M" "$@"
}

@test "a weight that is not finite or is negative is refused by rv-batch, rv-train-gpu and Python" {
	slow
	local w want
	for w in nan inf -inf -1 -1e-30; do
		edit "$D/s.rvs" "$T/w.rvs" "weight:3=$w"
		want="record 3 at byte $(off "$T/w.rvs" 3): sample 2 has weight $w: a weight must be finite and not negative"
		run -1 --separate-stderr rv-batch -b 4 -o "$T/o.rvs" "$T/w.rvs"
		[ "$stderr" = "rv-batch: '$T/w.rvs': $want" ]
		[ ! -e "$T/o.rvs" ]
		run -1 --separate-stderr train "$T/w.rvs"
		[ "$stderr" = "rv-train-gpu: '$T/w.rvs': $want" ]
		run -1 pyread "$T/w.rvs"
		[ "$output" = "RvStreamError: $T/w.rvs: $want" ]
		# the same weight inside a batch record: member 1 of batch 2
		edit "$D/b.rvs" "$T/bw.rvs" "bweight:2:1=$w"
		want="record 2 at byte $(off "$T/bw.rvs" 2): sample 5 has weight $w: a weight must be finite and not negative"
		run -1 --separate-stderr rv-batch -b 3 -o "$T/o.rvs" "$T/bw.rvs"
		[ "$stderr" = "rv-batch: '$T/bw.rvs': $want" ]
		run -1 --separate-stderr train "$T/bw.rvs"
		[ "$stderr" = "rv-train-gpu: '$T/bw.rvs': $want" ]
		run -1 pyread "$T/bw.rvs"
		[ "$output" = "RvStreamError: $T/bw.rvs: $want" ]
	done
}

@test "weights of 0 and above 1 train, in samples and in batches" {
	slow
	edit "$D/s.rvs" "$T/w.rvs" weight:1=0 weight:2=0 weight:3=2.5 \
	    weight:12=0
	run -0 --separate-stderr rv-batch -b 4 -o "$T/o.rvs" "$T/w.rvs"
	run -0 --separate-stderr train "$T/w.rvs"
	run -0 --separate-stderr train "$T/o.rvs"
	run -0 pyread "$T/w.rvs"
	[ "$output" = "ok 3" ]
	run -0 pyread "$T/o.rvs"
	[ "$output" = "ok 3" ]
}

@test "mean and std metadata that rv-stream(5) does not allow are refused by rv-train-gpu and Python alike" {
	slow
	local kv why key val want
	# KEY=VALUE|reason (the other key valid)
	while IFS='|' read -r kv why; do
		key=${kv%%=*} val=${kv#*=}
		if [ "$key" = mean ]; then
			edit "$D/s.rvs" "$T/m.rvs" meta:0:std=0.35 "meta:0:$kv"
		else
			edit "$D/s.rvs" "$T/m.rvs" meta:0:mean=0.28 "meta:0:$kv"
		fi
		want="record 0 at byte 0: metadata '$key=$val': $why"
		run -1 --separate-stderr train "$T/m.rvs"
		[ "$stderr" = "rv-train-gpu: '$T/m.rvs': $want" ]
		# the trainer judges them only where it uses them: --mean and
		# --std replace them (pixel-scale ImageNet values, say)
		if [ "$kv" = mean=1.5 ] || [ "$kv" = std=0 ]; then
			run -0 train --mean 0.3 --std 0.3 "$T/m.rvs"
		fi
		run -1 pyread "$T/m.rvs" float
		[ "$output" = "RvStreamError: $T/m.rvs: $want" ]
	done <<-'EOF'
	mean=abc|not a list of decimal numbers separated by commas
	mean=nan|not a list of decimal numbers separated by commas
	mean=inf|not a list of decimal numbers separated by commas
	mean=0x1p-2|not a list of decimal numbers separated by commas
	mean= 0.5|not a list of decimal numbers separated by commas
	mean=0.5,|not a list of decimal numbers separated by commas
	mean=|not a list of decimal numbers separated by commas
	mean=1e999|not a list of decimal numbers separated by commas
	mean=1.5|1.5 is out of range [0, 1]
	mean=-0.1|-0.1 is out of range [0, 1]
	mean=0.1,0.2,0.3,0.4,0.5|more than 4 values
	std=0|0 is out of range (0, 1000]
	std=-1|-1 is out of range (0, 1000]
	std=nan|not a list of decimal numbers separated by commas
	std=2e3|2e3 is out of range (0, 1000]
	EOF
}

@test "mean or std with a value per channel of another channel count is refused, naming the record" {
	slow
	local want
	edit "$D/s.rvs" "$T/m.rvs" meta:0:mean=0.1,0.2,0.3 meta:0:std=0.35
	want="record 0 at byte 0: metadata 'mean=0.1,0.2,0.3': 3 values for 1 channel: give one value, or one per channel"
	run -1 --separate-stderr train "$T/m.rvs"
	[ "$stderr" = "rv-train-gpu: '$T/m.rvs': $want" ]
	run -1 pyread "$T/m.rvs" float
	[ "$output" = "ValueError: $T/m.rvs: $want" ]
	# --mean and --std replace the stream's: no error
	run -0 --separate-stderr train --mean 0.3 --std 0.3 "$T/m.rvs"
	# and a mean without a std is not used (rv-train-gpu(1))
	edit "$D/s.rvs" "$T/m.rvs" meta:0:mean=0.1,0.2,0.3
	run -0 --separate-stderr train "$T/m.rvs"
	run -0 pyread "$T/m.rvs" float
	[ "$output" = "ok 3" ]
}

@test "valid mean and std metadata normalise in rv-train-gpu and Python" {
	slow
	edit "$D/s.rvs" "$T/m.rvs" meta:0:mean=0.2860 meta:0:std=0.3530
	run -0 --separate-stderr train "$T/m.rvs"
	run -0 pyread "$T/m.rvs" float
	[ "$output" = "ok 3" ]
	edit "$D/s.rvs" "$T/m.rvs" meta:0:mean=0,1e-1 meta:0:std=1000,.5
	run -1 --separate-stderr train "$T/m.rvs"
	[[ "$stderr" == *"metadata 'mean=0,1e-1': 2 values for 1 channel: "* ]]
}

@test "classes metadata must be a decimal integer, for rv-train-gpu and Python" {
	slow
	local val why want
	while IFS='|' read -r val why; do
		edit "$D/s.rvs" "$T/k.rvs" "meta:0:classes=$val"
		want="record 0 at byte 0: metadata 'classes=$val': $why"
		run -1 --separate-stderr train "$T/k.rvs"
		[ "$stderr" = "rv-train-gpu: '$T/k.rvs': $want" ]
		run -1 pyread "$T/k.rvs"
		[ "$output" = "RvStreamError: $T/k.rvs: $want" ]
	done <<-'EOF'
	10abc|not a decimal integer
	-10|not a decimal integer
	+10|not a decimal integer
	 10|not a decimal integer
	1e1|not a decimal integer
	|not a decimal integer
	4294967296|out of range [0, 4294967295]
	99999999999999999999999|out of range [0, 4294967295]
	EOF
	# 5000 digits: past Python's int() limit, one message all the same
	val=$(printf '9%.0s' {1..5000})
	edit "$D/s.rvs" "$T/k.rvs" "meta:0:classes=$val"
	want="record 0 at byte 0: metadata 'classes=${val:0:64}...': out of range [0, 4294967295]"
	run -1 --separate-stderr train "$T/k.rvs"
	[ "$stderr" = "rv-train-gpu: '$T/k.rvs': $want" ]
	run -1 pyread "$T/k.rvs"
	[ "$output" = "RvStreamError: $T/k.rvs: $want" ]
	edit "$D/s.rvs" "$T/k.rvs" meta:0:classes=010
	run -0 --separate-stderr train "$T/k.rvs"
	edit "$D/s.rvs" "$T/k.rvs" meta:0:samples=12x
	run -1 --separate-stderr train "$T/k.rvs"
	[ "$stderr" = "rv-train-gpu: '$T/k.rvs': record 0 at byte 0: metadata 'samples=12x': not a decimal integer" ]
	run -1 pyread "$T/k.rvs"
	[ "$output" = "RvStreamError: $T/k.rvs: record 0 at byte 0: metadata 'samples=12x': not a decimal integer" ]
}

@test "an epoch-end counting fewer samples than came before it is refused by rv-batch and rv-train-gpu" {
	local want
	edit "$D/s.rvs" "$T/c.rvs" count:13=11
	want="'$T/c.rvs': record 13 at byte $(off "$T/c.rvs" 13): epoch-end of epoch 0 counts 11 samples, but 12 came before it"
	run -1 --separate-stderr rv-batch -b 4 -o "$T/o.rvs" "$T/c.rvs"
	[ "$stderr" = "rv-batch: $want" ]
	run -1 --separate-stderr train "$T/c.rvs"
	[ "$stderr" = "rv-train-gpu: $want" ]
	edit "$D/s.rvs" "$T/c.rvs" count:13=0
	run -1 --separate-stderr rv-batch -b 4 -o "$T/o.rvs" "$T/c.rvs"
	[[ "$stderr" == *": epoch-end of epoch 0 counts 0 samples, but 12 came before it" ]]
	# batches: their members count
	edit "$D/b.rvs" "$T/bc.rvs" count:4=1
	want="'$T/bc.rvs': record 4 at byte $(off "$T/bc.rvs" 4): epoch-end of epoch 0 counts 1 sample, but 12 came before it"
	run -1 --separate-stderr rv-batch -b 4 -o "$T/o.rvs" "$T/bc.rvs"
	[ "$stderr" = "rv-batch: $want" ]
	run -1 --separate-stderr train "$T/bc.rvs"
	[ "$stderr" = "rv-train-gpu: $want" ]
}

@test "epoch-ends counting samples dropped downstream, and joined epochs, pass" {
	# more than came: samples dropped after the count (rv-batch --drop-last)
	edit "$D/s.rvs" "$T/c.rvs" count:13=20
	run -0 --separate-stderr rv-batch -b 4 -o "$T/o.rvs" "$T/c.rvs"
	run -0 --separate-stderr train "$T/c.rvs"
	rv-batch -q -b 5 --drop-last -o "$T/d.rvs" "$D/s.rvs"
	run -0 --separate-stderr rv-batch -b 4 -o "$T/o.rvs" "$T/d.rvs"
	run -0 --separate-stderr train "$T/d.rvs"
	# cat of two streams of epoch 0 is one epoch of 24 (rv-stream(5))
	cat "$D/s.rvs" "$D/s.rvs" > "$T/j.rvs"
	run -0 --separate-stderr rv-batch -b 4 -o "$T/o.rvs" "$T/j.rvs"
	run -0 --separate-stderr train "$T/j.rvs" "$D/b.rvs"
	# and a count cut short in one part is still caught in the join
	edit "$D/s.rvs" "$T/c.rvs" count:13=11
	cat "$D/s.rvs" "$T/c.rvs" > "$T/j.rvs"
	run -1 --separate-stderr rv-batch -b 4 -o "$T/o.rvs" "$T/j.rvs"
	[ "$stderr" = "rv-batch: '$T/j.rvs': record 27 at byte $(off "$T/j.rvs" 27): epoch-end of epoch 0 counts 23 samples, but 24 came before it" ]
}

@test "the Python reader numbers a bad metadata record as the C readers do" {
	slow
	local rec off
	edit "$D/s.rvs" "$T/m.rvs" "meta:0:bad key=1"
	cat "$D/s.rvs" "$T/m.rvs" > "$T/j.rvs"
	# record 14 is the first of the second stream (rv-inspect refuses it)
	off=$(stat -c %s "$D/s.rvs")
	[ "$(off "$D/s.rvs" 13)" -lt "$off" ]
	run -1 --separate-stderr train "$T/j.rvs"
	[ "$stderr" = "rv-train-gpu: '$T/j.rvs': record 14 at byte $off: metadata line 19: bad metadata key 'bad key'" ]
	run -1 pyread "$T/j.rvs"
	[ "$output" = "RvStreamError: $T/j.rvs: record 14 at byte $off: bad meta line 'bad key=1'" ]
	# a meta record that is not UTF-8, numbered alike
	edit "$D/s.rvs" "$T/m.rvs" "meta:0:source=$(printf '\377')"
	run -1 pyread "$T/m.rvs"
	[ "$output" = "RvStreamError: $T/m.rvs: record 0 at byte 0: meta record is not UTF-8" ]
}
