#!/usr/bin/env bats
# rv-refurbish: every promise of the schedule (each id once per epoch,
# the planned misses, exactly r uses, misses spread +-1 over each group of
# B), on Fashion-MNIST and on JPEG fixtures; determinism over -j, seed,
# file or pipe input, the memory limit and the disk tier, kill -9 and
# --resume, --epoch-range; the baselines; -v; every error with its
# message; scored by the assistant (--score): kept counts, uses, misses
# per batch, thumbnails, its usage errors.  Records are read by the python checker below, written from
# rv-stream(5), so the tests share no code with lib/.
# shellcheck shell=bash disable=SC2016,SC2030,SC2031,SC2154

load helpers

# check.py MODE IN OUT [R E B FINAL]: reads the raw records of the input
# (its first epoch) and of a run's output.
#   check: verifies the whole run against the plan (structure, metadata,
#       ids, labels, flags, misses, uses, groups of B) and prints
#       "N samples, E epochs, P partials", "misses m0 m1 ...", then one
#       line per distinct sequence of uses over the epochs: "count u0 u1 ...".
#       A broken promise prints "FAIL: ..." and exits 1.
#   pix: one line per sample, "epoch id uses sha1-of-pixels".
CHECK_PY='
import hashlib, struct, subprocess, sys
HDR = struct.Struct("<IHHBBHIQiIIIIIffQ")
F_PARTIAL, F_FINAL, F_CACHED = 1, 2, 4
SAMPLE, BATCH, END, META = 1, 2, 3, 4

def records(path):
    d = subprocess.run(["zstd", "-dcq", path], check=True,
                       stdout=subprocess.PIPE).stdout
    off = 0
    while off < len(d):
        f = HDR.unpack_from(d, off)
        if f[0] != 0x31525652:
            sys.exit("FAIL: %s: bad magic at byte %d" % (path, off))
        hl, pl = f[2], f[16]
        yield dict(kind=f[3], dtype=f[4], flags=f[5], epoch=f[6], id=f[7],
                   label=f[8], h=f[9], w=f[10], c=f[11], count=f[12],
                   uses=f[13], weight=f[14], payload=d[off + hl:off + hl + pl])
        off += hl + pl

def meta(r):
    return dict(l.split("=", 1) for l in r["payload"].decode().splitlines())

fails = []
def fail(msg):
    fails.append(msg)
    if len(fails) > 20:
        finish()

def finish():
    for m in fails[:20]:
        print("FAIL: " + m)
    sys.exit(1 if fails else 0)

mode, inp, out = sys.argv[1:4]
if mode == "same":
    # the records of inp and out, byte for byte, but the metadata
    # epochs key (what each output holds); prints the records and the
    # epochs values of each stream
    a, b = list(records(inp)), list(records(out))
    if len(a) != len(b):
        sys.exit("FAIL: %d records, %d" % (len(a), len(b)))
    said = [set(), set()]
    for i, (x, y) in enumerate(zip(a, b)):
        if x["kind"] == META and y["kind"] == META:
            mx, my = meta(x), meta(y)
            said[0].add(mx.pop("epochs", None))
            said[1].add(my.pop("epochs", None))
            x, y = dict(x, payload=mx), dict(y, payload=my)
        if x != y:
            sys.exit("FAIL: record %d differs" % i)
    print(len(a), *("/".join(sorted(map(repr, s))) for s in said))
    sys.exit(0)
if mode == "pix":
    for r in records(out):
        if r["kind"] == SAMPLE:
            print(r["epoch"], r["id"], r["uses"],
                  hashlib.sha1(r["payload"]).hexdigest())
    sys.exit(0)

R, E, B, FINAL = (int(a) for a in sys.argv[4:8])
inmeta, label, weight, ids = {}, {}, {}, []
for r in records(inp):
    if r["kind"] == META:
        inmeta.update(meta(r))
    elif r["kind"] == END:
        break
    elif r["kind"] == SAMPLE:
        ids.append(r["id"])
        label[r["id"]], weight[r["id"]] = r["label"], r["weight"]
N = len(ids)
idset = set(ids)

def chunk_size(k):
    return (k + 1) * N // R - k * N // R

# Cut the output into epochs: META, N samples, END.
epochs, cur = [], None
for r in records(out):
    if r["kind"] == META:
        if cur is not None:
            fail("epoch %d: a metadata record before its epoch-end" % len(epochs))
        cur = dict(meta=meta(r), samples=[])
    elif r["kind"] == SAMPLE:
        if cur is None:
            fail("a sample outside an epoch (no metadata record before it)")
            cur = dict(meta={}, samples=[])
        cur["samples"].append(r)
    elif r["kind"] == END:
        if cur is None:
            fail("an epoch-end with no metadata record before its epoch")
            cur = dict(meta={}, samples=[])
        cur["end"] = r
        epochs.append(cur)
        cur = None
    else:
        fail("record of kind %d" % r["kind"])
if cur is not None:
    fail("the output ends inside an epoch")
if len(epochs) != E:
    fail("%d epochs, not %d" % (len(epochs), E))
    finish()

fresh = {}      # id -> list of epochs in which it was a miss
uses = {i: [] for i in ids}
misses, orders = [], set()
for e, ep in enumerate(epochs):
    m = ep["meta"]
    # total: the samples of all E epochs of the run, rv-stream(5)
    want = {"producer": "rv-refurbish 0.1.0", "refurbish.reuse": str(R),
            "refurbish.batch": str(B), "refurbish.epochs": str(E),
            "refurbish.epoch": str(e), "total": str(E * N),
            # what the output holds: N an epoch, every epoch kept
            "samples": str(N), "kept": str(N), "kept-first": str(N)}
    for k, v in inmeta.items():
        if k not in ("producer", "total", "epochs"):
            want.setdefault(k, v)
    for k, v in want.items():
        if m.get(k) != v:
            fail("epoch %d: metadata %s=%r, not %r" % (e, k, m.get(k), v))
    # the epochs one stream holds; empty in one file an epoch, joined
    if m.get("epochs") not in (str(E), ""):
        fail("epoch %d: metadata epochs=%r, not %d or empty" %
             (e, m.get("epochs"), E))
    for k in ("refurbish.partial", "refurbish.final", "refurbish.seed"):
        if k not in m:
            fail("epoch %d: no metadata %s" % (e, k))
    s = ep["samples"]
    if ep["end"]["epoch"] != e or ep["end"]["count"] != N:
        fail("epoch %d: epoch-end says epoch %d, count %d" %
             (e, ep["end"]["epoch"], ep["end"]["count"]))
    seen = [r["id"] for r in s]
    if len(seen) != N or set(seen) != idset:
        fail("epoch %d: %d samples, %d distinct ids, %d of the input" %
             (e, len(seen), len(set(seen)), len(set(seen) & idset)))
    orders.add(tuple(seen))
    miss = []
    for r in s:
        i = r["id"]
        if r["epoch"] != e:
            fail("epoch %d: sample %d says epoch %d" % (e, i, r["epoch"]))
        if r["label"] != label.get(i) or r["weight"] != weight.get(i):
            fail("epoch %d: sample %d: label or weight changed" % (e, i))
        if r["dtype"] != 1 or len(r["payload"]) != r["h"] * r["w"] * r["c"]:
            fail("epoch %d: sample %d: not u8 pixels" % (e, i))
        want = F_PARTIAL | (F_FINAL if FINAL else 0)
        if r["uses"] > 1:
            want |= F_CACHED
        if r["flags"] != want:
            fail("epoch %d: sample %d: flags %#x with uses %d, not %#x" %
                 (e, i, r["flags"], r["uses"], want))
        hit = r["flags"] & F_CACHED
        miss.append(0 if hit else 1)
        if not hit:
            fresh.setdefault(i, []).append(e)
        if i in uses:
            uses[i].append(r["uses"])
    m_e = sum(miss)
    misses.append(m_e)
    want_m = N if e == 0 or R == 1 else chunk_size((e - 1) % R)
    if m_e != want_m:
        fail("epoch %d: %d misses, not %d" % (e, m_e, want_m))
    if ep["meta"].get("refurbish.misses") != str(m_e) or \
            ep["meta"].get("refurbish.hits") != str(N - m_e):
        fail("epoch %d: metadata misses/hits %s/%s, records %d/%d" %
             (e, m.get("refurbish.misses"), m.get("refurbish.hits"),
              m_e, N - m_e))
    # every aligned group of B: floor or ceil of its share of the misses
    for g in range(0, N, B):
        L = min(B, N - g)
        k = sum(miss[g:g + L])
        lo, hi = L * m_e // N, -(-L * m_e // N)
        if not lo <= k <= hi:
            fail("epoch %d: group at %d of %d holds %d misses, not %d..%d" %
                 (e, g, L, k, lo, hi))

# Freshness follows one chunk per id, and uses count from the refresh.
for i in ids:
    f = fresh.get(i, [])
    if not f or f[0] != 0:
        fail("id %d: not fresh in epoch 0" % i)
        continue
    later = [e for e in f if e >= 1]
    if R == 1:
        if f != list(range(E)):
            fail("id %d: fresh in %s with r = 1" % (i, f))
    elif later:
        c = (later[0] - 1) % R
        if later[0] != c + 1 or later != list(range(c + 1, E, R)):
            fail("id %d: fresh in %s, not chunk %d\x27s epochs" % (i, f, c))
    elif E > R:
        fail("id %d: never refreshed in %d epochs" % (i, E))
    last = 0
    for e in range(E):
        if e in f:
            last = e
        if uses[i][e] != e - last + 1:
            fail("id %d: uses %s, fresh in %s" % (i, uses[i], f))
            break
        if uses[i][e] > R:
            fail("id %d: used %d times, r = %d" % (i, uses[i][e], R))
            break
P = sum(misses)
if abs(P - (N + (E - 1) * N / R)) >= 1:
    fail("%d partials, far from N + (E-1)N/r = %g" % (P, N + (E - 1) * N / R))
if E > 2 and N > 8 and len(orders) < E:
    fail("only %d distinct orders in %d epochs" % (len(orders), E))
if fails:
    finish()
print("%d samples, %d epochs, %d partials" % (N, E, P))
print("misses " + " ".join(map(str, misses)))
seqs = {}
for i in ids:
    k = " ".join(map(str, uses[i]))
    seqs[k] = seqs.get(k, 0) + 1
for k in sorted(seqs):
    print(seqs[k], k)
'

setup_file() {
	need_fixtures
	printf '%s' "$CHECK_PY" > "$BATS_FILE_TMPDIR/check.py"
}

setup() {
	need_fmnist
	IMG="$FMNIST/train-images-idx3-ubyte.gz"
	LAB="$FMNIST/train-labels-idx1-ubyte.gz"
	T="$BATS_TEST_TMPDIR"
	CHK="$BATS_FILE_TMPDIR/check.py"
	# The CIFAR-style split on Fashion-MNIST; an ImageNet-style one on
	# the JPEG and PNG fixtures.
	FP='randaugment n=2 m=9'
	FF='random_crop size=28 padding=4; flip'
	JP='rrc size=32 scale=0.3,1; randaugment n=2 m=9 interp=bilinear'
	JF='flip'
}

fmnist() {	# fmnist N OUT [rv-decode options]
	rv-decode -q --limit "$1" "${@:3}" "$IMG" "$LAB" -o "$2"
}

jpegs() {	# jpegs OUT: 32 encoded samples (the folder four times)
	local d="$FIX/ds/folder"
	rv-decode -q --encoded "$d" "$d" "$d" "$d" -o "$1"
}

check() {	# check IN OUT R E B FINAL
	python3 "$CHK" check "$@"
}

pix() {		# pix OUT
	python3 "$CHK" pix - "$1"
}

# ---- the schedule ----------------------------------------------------------

@test "rv-refurbish: Fashion-MNIST: each id once per epoch, planned misses, exactly r uses, misses spread over groups of B" {
	slow
	fmnist 200 "$T/in.rvs"
	# E = 2r + 1: chunks of 66, 67 and 67 (floor(kN/r) cuts)
	rv-refurbish -q --partial "$FP" --final "$FF" --reuse 3 --epochs 7 \
	    --batch 16 --seed 4 "$T/in.rvs" -o "$T/out.rvs"
	run -0 check "$T/in.rvs" "$T/out.rvs" 3 7 16 1
	[ "${lines[0]}" = "200 samples, 7 epochs, 600 partials" ]
	[ "${lines[1]}" = "misses 200 66 67 67 66 67 67" ]
	# one uses sequence per chunk: chunk c is fresh in 0, c+1, c+1+r
	[ "${lines[2]}" = "66 1 1 2 3 1 2 3" ]
	[ "${lines[3]}" = "67 1 2 1 2 3 1 2" ]
	[ "${lines[4]}" = "67 1 2 3 1 2 3 1" ]
	[ "${#lines[@]}" = 5 ]
	# B dividing N: every group of 16 holds exactly 60/15 = 4 misses
	fmnist 240 "$T/in2.rvs"
	rv-refurbish -q --partial "$FP" --final "$FF" --reuse 4 --epochs 9 \
	    --batch 16 "$T/in2.rvs" -o "$T/out2.rvs"
	run -0 check "$T/in2.rvs" "$T/out2.rvs" 4 9 16 1
	[ "${lines[0]}" = "240 samples, 9 epochs, 720 partials" ]
	[ "${lines[1]}" = "misses 240 60 60 60 60 60 60 60 60" ]
	run -0 bash -c "rv-inspect --dump '$T/out2.rvs' | awk -F'\t' '
	    \$3 == \"sample\" && \$4 >= 1 { i = n[\$4]++; k = \$4 \" \" int(i / 16)
	        if (\$12 !~ /cached/) m[k]++ }
	    END { for (k in m) c[m[k]]++; for (v in c) print v, c[v] }'"
	[ "$output" = "4 120" ]
}

@test "rv-refurbish: JPEGs: each id once per epoch, planned misses, exactly r uses, groups of B" {
	slow
	jpegs "$T/in.rvs"
	rv-refurbish -q --partial "$JP" --final "$JF" --reuse 3 --epochs 7 \
	    --batch 8 --seed 2 "$T/in.rvs" -o "$T/out.rvs"
	run -0 check "$T/in.rvs" "$T/out.rvs" 3 7 8 1
	[ "${lines[0]}" = "32 samples, 7 epochs, 96 partials" ]
	[ "${lines[1]}" = "misses 32 10 11 11 10 11 11" ]
	[ "${lines[2]}" = "10 1 1 2 3 1 2 3" ]
	[ "${lines[3]}" = "11 1 2 1 2 3 1 2" ]
	[ "${lines[4]}" = "11 1 2 3 1 2 3 1" ]
	# decoded, then cropped: every sample 32x32x3 u8
	run -0 bash -c "rv-inspect --dump '$T/out.rvs' | awk -F'\t' '
	    \$3 == \"sample\" { print \$7 \"x\" \$8 \"x\" \$9, \$10 }' |
	    sort | uniq -c | awk '{ print \$1, \$2, \$3 }'"
	[ "$output" = "224 32x32x3 u8" ]
}

@test "rv-refurbish: a hit serves its refresh epoch's partial; the final is drawn anew each epoch" {
	slow
	fmnist 120 "$T/in.rvs"
	# empty final (data echoing): a hit is its partial, byte for byte
	rv-refurbish -q --partial "$FP" --final '' --reuse 3 --epochs 7 \
	    "$T/in.rvs" -o "$T/echo.rvs"
	run -0 check "$T/in.rvs" "$T/echo.rvs" 3 7 128 0
	[ "${lines[0]}" = "120 samples, 7 epochs, 360 partials" ]
	pix "$T/echo.rvs" > "$T/p.txt"
	# key (id, refresh epoch = epoch - uses + 1): one image per key,
	# and the refreshes of an id draw new partials
	run -0 awk '{ k = $2 " " ($1 - $3 + 1); if (k in h && h[k] != $4) bad++
	    h[k] = $4 } END { print bad + 0 }' "$T/p.txt"
	[ "$output" = 0 ]
	run -0 awk '$3 == 1 { n++; if (seen[$2 " " $4]++) same++ }
	    END { print n, (same < n / 20) }' "$T/p.txt"
	[ "$output" = "360 1" ]
	# with a final, hits of one partial differ from one another
	rv-refurbish -q --partial "$FP" --final "$FF" --reuse 3 --epochs 7 \
	    "$T/in.rvs" -o "$T/fin.rvs"
	pix "$T/fin.rvs" > "$T/f.txt"
	run -0 awk '{ k = $2 " " ($1 - $3 + 1); n[k]++; if (!((k, $4) in s)) d[k]++
	    s[k, $4] = 1 } END { for (k in n) if (n[k] == 3) { t++; if (d[k] >= 2) v++ }
	    print (t > 100), (v > 0.9 * t) }' "$T/f.txt"
	[ "$output" = "1 1" ]
}

@test "rv-refurbish: --reuse 1 recomputes everything every epoch; --final '' and --reuse 1 together" {
	slow
	fmnist 100 "$T/in.rvs"
	rv-refurbish -q --partial "$FP" --final "$FF" --reuse 1 --epochs 3 \
	    --batch 32 "$T/in.rvs" -o "$T/r1.rvs"
	run -0 check "$T/in.rvs" "$T/r1.rvs" 1 3 32 1
	[ "$output" = $'100 samples, 3 epochs, 300 partials\nmisses 100 100 100\n100 1 1 1' ]
	rv-refurbish -q --partial "$FP; $FF" --final '' --reuse 1 --epochs 2 \
	    "$T/in.rvs" -o "$T/std.rvs"
	run -0 check "$T/in.rvs" "$T/std.rvs" 1 2 128 0
	[ "${lines[1]}" = "misses 100 100" ]
	run -0 bash -c "zstd -dcq '$T/std.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    grep -E '^#meta.refurbish.(partial|final|reuse)='"
	[ "${lines[0]}" = $'#meta\trefurbish.partial=randaugment n=2 m=9 bins=31 interp=nearest fill=0 p=1; random_crop size=28 padding=4 fill=0 pad_mode=constant p=1; flip p=0.5' ]
	[ "${lines[1]}" = $'#meta\trefurbish.final=' ]
	[ "${lines[2]}" = $'#meta\trefurbish.reuse=1' ]
}

@test "rv-refurbish: the input's metadata is carried; a second epoch is an error" {
	slow
	fmnist 50 "$T/in3.rvs" --epochs 3 --shuffle
	# samples it would not use: an error, never a silent drop
	run -1 --separate-stderr rv-refurbish -q --partial "$FP" --final "$FF" \
	    "$T/in3.rvs" -o "$T/out.rvs"
	[ "$stderr" = "rv-refurbish: '$T/in3.rvs': record 52 at byte $(rv-inspect --dump "$T/in3.rvs" | awk -F'\t' 'NR == 54 { print $2 }'): a second epoch (epoch 1) after the dataset's: rv-refurbish reads one epoch of samples and makes the epochs itself (decode without --epochs)" ]
	[ ! -e "$T/out.rvs" ]
	fmnist 50 "$T/in.rvs" --shuffle
	rv-refurbish -q --partial "$FP" --final "$FF" --reuse 2 --epochs 3 \
	    --batch 10 --seed 7 "$T/in.rvs" -o "$T/out.rvs"
	run -0 check "$T/in.rvs" "$T/out.rvs" 2 3 10 1
	[ "${lines[0]}" = "50 samples, 3 epochs, 100 partials" ]
	run -0 bash -c "zstd -dcq '$T/out.rvs' | python3 '$REPO/tests/checks/rvparse.py' |
	    grep -E '^#meta.(producer|class.9|refurbish)' | head -12"
	[ "${lines[0]}" = $'#meta\tproducer=rv-refurbish 0.1.0' ]
	[[ "$output" == *$'#meta\tclass.9=Ankle boot'* ]]
	[[ "$output" == *$'#meta\trefurbish.final=random_crop size=28 padding=4 fill=0 pad_mode=constant p=1; flip p=0.5'* ]]
	[[ "$output" == *$'#meta\trefurbish.seed=7'* ]]
	[[ "$output" == *$'#meta\trefurbish.epoch=0'* ]]
}

# ---- determinism -------------------------------------------------------------

@test "rv-refurbish: the same bytes for -j 1 and -j 4, on Fashion-MNIST and JPEGs" {
	slow
	fmnist 300 "$T/f.rvs"
	jpegs "$T/j.rvs"
	for j in 1 4; do
		rv-refurbish -q -j "$j" --partial "$FP" --final "$FF" --reuse 2 \
		    --epochs 4 --batch 32 --seed 5 "$T/f.rvs" -o "$T/f$j.rvs"
		rv-refurbish -q -j "$j" --partial "$JP" --final "$JF" --reuse 3 \
		    --epochs 4 --batch 8 --seed 5 "$T/j.rvs" -o "$T/j$j.rvs"
	done
	cmp "$T/f1.rvs" "$T/f4.rvs"
	cmp "$T/j1.rvs" "$T/j4.rvs"
}

@test "rv-refurbish: the seed fixes the bytes, another seed changes the plan and the pixels" {
	slow
	fmnist 200 "$T/in.rvs"
	for s in 1 1b 2; do
		rv-refurbish -q --partial "$FP" --final "$FF" --reuse 2 --epochs 3 \
		    --seed "${s%b}" "$T/in.rvs" -o "$T/s$s.rvs"
	done
	cmp "$T/s1.rvs" "$T/s1b.rvs"
	run -1 cmp -s "$T/s1.rvs" "$T/s2.rvs"
	pix "$T/s1.rvs" | sort -k1,1n -k2,2n > "$T/a.txt"
	pix "$T/s2.rvs" | sort -k1,1n -k2,2n > "$T/b.txt"
	# other orders, other chunks, other pixels for nearly every sample
	run -1 cmp -s <(pix "$T/s1.rvs" | cut -d' ' -f2) <(pix "$T/s2.rvs" | cut -d' ' -f2)
	run -0 bash -c "paste -d' ' '$T/a.txt' '$T/b.txt' |
	    awk '\$3 != \$7 { u++ } \$4 != \$8 { d++ } END { print (u > 0), (d > 570) }'"
	[ "$output" = "1 1" ]
}

@test "rv-refurbish: file and pipe input give the same bytes; the spill file goes" {
	fmnist 300 "$T/f.rvs"
	jpegs "$T/j.rvs"
	mkdir "$T/tmp" "$T/cd"
	rv-refurbish -q --partial "$FP" --final "$FF" --reuse 3 --epochs 4 \
	    "$T/f.rvs" -o "$T/file.rvs"
	TMPDIR="$T/tmp" rv-refurbish -q --partial "$FP" --final "$FF" \
	    --reuse 3 --epochs 4 < "$T/f.rvs" -o "$T/pipe.rvs"
	cmp "$T/file.rvs" "$T/pipe.rvs"
	# a real pipe, '-' for stdin, spilled under --cache-dir
	run -0 bash -c "set -o pipefail; cat '$T/f.rvs' | rv-refurbish -q \
	    --partial '$FP' --final '$FF' --reuse 3 --epochs 4 \
	    --cache-dir '$T/cd' - -o '$T/pipe2.rvs'"
	cmp "$T/file.rvs" "$T/pipe2.rvs"
	# stdout (stored frames) holds the same records
	run -0 bash -c "cat '$T/f.rvs' | TMPDIR='$T/tmp' rv-refurbish -q \
	    --partial '$FP' --final '$FF' --reuse 3 --epochs 4 > '$T/out.rvs'"
	cmp <(zstd -dcq "$T/file.rvs") <(zstd -dcq "$T/out.rvs")
	# JPEGs through a pipe: the encoded records are spilled and decoded
	rv-refurbish -q --partial "$JP" --final "$JF" --reuse 2 --epochs 3 \
	    "$T/j.rvs" -o "$T/jfile.rvs"
	run -0 bash -c "cat '$T/j.rvs' | TMPDIR='$T/tmp' rv-refurbish -q \
	    --partial '$JP' --final '$JF' --reuse 2 --epochs 3 -o '$T/jpipe.rvs'"
	cmp "$T/jfile.rvs" "$T/jpipe.rvs"
	# nothing is left behind in either directory
	[ -z "$(ls -A "$T/tmp")" ]
	[ -z "$(ls -A "$T/cd")" ]
}

@test "rv-refurbish: encoded and decoded input give the same samples when no decode hint applies" {
	d="$FIX/ds/folder"
	rv-decode -q --encoded "$d" "$d" -o "$T/enc.rvs"
	rv-decode -q "$d" "$d" -o "$T/dec.rvs"
	# rrc second: no reduced decoding, so the pixels must agree
	p='randaugment n=2 m=9; rrc size=24'
	rv-refurbish -q --partial "$p" --final flip --reuse 2 --epochs 3 \
	    "$T/enc.rvs" -o "$T/a.rvs"
	rv-refurbish -q --partial "$p" --final flip --reuse 2 --epochs 3 \
	    "$T/dec.rvs" -o "$T/b.rvs"
	pix "$T/a.rvs" > "$T/a.txt"
	pix "$T/b.rvs" > "$T/b.txt"
	diff "$T/a.txt" "$T/b.txt"
	run -0 wc -l < "$T/a.txt"
	[ "$output" = 48 ]
}

# ---- output files, resume, epoch ranges --------------------------------------

@test "rv-refurbish: -o PATTERN writes one file per epoch; they concatenate into the stream" {
	fmnist 150 "$T/in.rvs"
	# the folder not made yet: named, nothing written
	run -1 --separate-stderr rv-refurbish -q --partial "$FP" --final "$FF" \
	    --reuse 2 --epochs 4 --batch 20 "$T/in.rvs" -o "$T/ep/e-%03d.rvs"
	[ "$stderr" = "rv-refurbish: '$T/ep/e-000.rvs': no folder '$T/ep' to write it in (make it first: mkdir -p '$T/ep')" ]
	[ ! -e "$T/ep" ]
	mkdir "$T/ep"
	rv-refurbish -q --partial "$FP" --final "$FF" --reuse 2 --epochs 4 \
	    --batch 20 "$T/in.rvs" -o "$T/ep/e-%03d.rvs"
	run -0 ls "$T/ep"
	[ "$output" = $'e-000.rvs\ne-001.rvs\ne-002.rvs\ne-003.rvs' ]
	for e in 0 1 2 3; do
		# each file: metadata, 150 samples of its epoch, epoch-end
		run -0 bash -c "rv-inspect --dump '$T/ep/e-00$e.rvs' | awk -F'\t' '
		    NR > 1 { k[\$3 \" \" \$4]++ } END { for (x in k) print x, k[x] }' | sort"
		[ "$output" = "epoch-end $e 1"$'\n'"meta 0 1"$'\n'"sample $e 150" ] ||
		    [ "$output" = "epoch-end $e 1"$'\n'"meta $e 1"$'\n'"sample $e 150" ]
	done
	rv-refurbish -q --partial "$FP" --final "$FF" --reuse 2 --epochs 4 \
	    --batch 20 "$T/in.rvs" > "$T/all.rvs"
	# the same records, but the epochs the output holds: 4 in one
	# stream, unknown (empty) in one file an epoch, which may be joined
	cat "$T"/ep/e-*.rvs > "$T/cat.rvs"
	run -0 python3 "$CHK" same "$T/cat.rvs" "$T/all.rvs"
	[ "$output" = "608 '' '4'" ]
	run -0 check "$T/in.rvs" "$T/cat.rvs" 2 4 20 1
	[ "${lines[1]}" = "misses 150 75 75 75" ]
	# -o FILE: the bytes of stdout
	rv-refurbish -q --partial "$FP" --final "$FF" --reuse 2 --epochs 4 \
	    --batch 20 "$T/in.rvs" -o "$T/one.rvs"
	cmp <(zstd -dcq "$T/one.rvs") <(zstd -dcq "$T/all.rvs")
}

@test "rv-refurbish: --resume after kill -9 gives the bytes of an uninterrupted run" {
	slow
	fmnist 10000 "$T/in.rvs"
	mkdir "$T/full" "$T/res"
	opts=(-q -j 2 --partial 'rotate deg=20 interp=bilinear; randaugment n=2 m=9 interp=bilinear; jitter brightness=0.4 contrast=0.4'
	    --final "$FF" --reuse 2 --epochs 8 --batch 64 --seed 3)
	rv-refurbish "${opts[@]}" "$T/in.rvs" -o "$T/full/%d.rvs"
	# the run to kill on one thread (the bytes do not depend on -j):
	# about a second after its first file appears
	rv-refurbish "${opts[@]}" -j 1 "$T/in.rvs" -o "$T/res/%d.rvs" \
	    > /dev/null 2>&1 3>&- &
	pid=$!
	for ((i = 0; i < 3000; i++)); do
		[ -e "$T/res/0.rvs" ] && break
		sleep 0.02
	done
	kill -9 "$pid"
	wait "$pid" || true
	[ -e "$T/res/0.rvs" ]
	[ ! -e "$T/res/7.rvs" ] || {
		echo "the run ended before the kill: make the input larger"
		false
	}
	before=$(stat -c '%i %Y' "$T/res/0.rvs")
	run -0 --separate-stderr rv-refurbish "${opts[@]}" --resume \
	    "$T/in.rvs" -o "$T/res/%d.rvs"
	[ -z "$stderr" ]
	# the complete files were kept, not written again
	[ "$(stat -c '%i %Y' "$T/res/0.rvs")" = "$before" ]
	for e in 0 1 2 3 4 5 6 7; do
		cmp "$T/full/$e.rvs" "$T/res/$e.rvs"
	done
	# resuming a finished run writes nothing and succeeds
	run -0 --separate-stderr rv-refurbish "${opts[@]}" --resume \
	    "$T/in.rvs" -o "$T/res/%d.rvs"
	[ "$(stat -c '%i %Y' "$T/res/0.rvs")" = "$before" ]
	# and a gap in the middle is filled
	rm "$T/res/3.rvs" "$T/res/5.rvs"
	rv-refurbish "${opts[@]}" --resume "$T/in.rvs" -o "$T/res/%d.rvs"
	cmp "$T/full/3.rvs" "$T/res/3.rvs"
	cmp "$T/full/5.rvs" "$T/res/5.rvs"
}

@test "rv-refurbish: --epoch-range a-b writes exactly those epochs, the bytes of a whole run" {
	fmnist 200 "$T/in.rvs"
	jpegs "$T/j.rvs"
	mkdir "$T/full" "$T/part" "$T/jfull" "$T/jpart"
	opts=(-q --partial "$FP" --final "$FF" --reuse 3 --epochs 7 --batch 16)
	rv-refurbish "${opts[@]}" "$T/in.rvs" -o "$T/full/%d.rvs"
	rv-refurbish "${opts[@]}" --epoch-range 2-4 "$T/in.rvs" \
	    -o "$T/part/%d.rvs"
	run -0 ls "$T/part"
	[ "$output" = $'2.rvs\n3.rvs\n4.rvs' ]
	for e in 2 3 4; do
		cmp "$T/full/$e.rvs" "$T/part/$e.rvs"
	done
	# to one stream: the same records as those epochs' files joined
	rv-refurbish "${opts[@]}" --epoch-range 5-6 "$T/in.rvs" > "$T/56.rvs"
	cat "$T/full/5.rvs" "$T/full/6.rvs" > "$T/56cat.rvs"
	run -0 python3 "$CHK" same "$T/56cat.rvs" "$T/56.rvs"
	[ "$output" = "404 '' '2'" ]
	rv-refurbish "${opts[@]}" --epoch-range 0-0 "$T/in.rvs" -o "$T/0.rvs"
	run -0 python3 "$CHK" same "$T/full/0.rvs" "$T/0.rvs"
	[ "$output" = "202 '' '1'" ]
	# JPEGs, from a pipe
	jopts=(-q --partial "$JP" --final "$JF" --reuse 2 --epochs 5 --batch 8)
	rv-refurbish "${jopts[@]}" "$T/j.rvs" -o "$T/jfull/%d.rvs"
	run -0 bash -c "cat '$T/j.rvs' | TMPDIR='$T' rv-refurbish ${jopts[*]@Q} \
	    --epoch-range 3-4 -o '$T/jpart/%d.rvs'"
	cmp "$T/jfull/3.rvs" "$T/jpart/3.rvs"
	cmp "$T/jfull/4.rvs" "$T/jpart/4.rvs"
	[ ! -e "$T/jpart/2.rvs" ]
}

# ---- memory ------------------------------------------------------------------

@test "rv-refurbish: a tiny --mem with --cache-dir engages the disk tier: same bytes, no recomputation, memory kept" {
	slow
	fmnist 6000 "$T/in.rvs"
	mkdir "$T/cd"
	# 96x96 partials: 55 MB raw, ~26 MB compressed in the cache
	opts=(-q -v -j 1 --partial 'resize size=96; randaugment n=2 m=9'
	    --final 'resize size=28' --reuse 3 --epochs 4 --batch 32)
	plan="rv-refurbish: partials: expected 6000 + (4-1)*6000/3 = 12000"
	run -0 --separate-stderr /usr/bin/time -f 'rss %M' \
	    rv-refurbish "${opts[@]}" "$T/in.rvs" -o "$T/mem.rvs"
	[ "${stderr_lines[-2]}" = "$plan, actual 12000" ]
	rss_mem=${stderr_lines[-1]#rss }
	run -0 --separate-stderr /usr/bin/time -f 'rss %M' \
	    rv-refurbish "${opts[@]}" --mem 64K --cache-dir "$T/cd" \
	    "$T/in.rvs" -o "$T/disk.rvs"
	# no warning, nothing recomputed: the disk tier took what memory
	# could not
	[[ "$stderr" != *"cache holds"* ]]
	[ "${stderr_lines[-2]}" = "$plan, actual 12000" ]
	rss_disk=${stderr_lines[-1]#rss }
	cmp "$T/mem.rvs" "$T/disk.rvs"
	# no cache at all: the memory a run needs besides the cache
	run -0 --separate-stderr /usr/bin/time -f 'rss %M' \
	    rv-refurbish "${opts[@]}" --mem 64K "$T/in.rvs" -o "$T/none.rvs"
	[[ "${stderr_lines[0]}" == "rv-refurbish: cache holds "* ]]
	rss_none=${stderr_lines[-1]#rss }
	cmp "$T/mem.rvs" "$T/none.rvs"
	# the disk tier holds its entries out of memory: its run needs less
	# than a third of what the entries take in memory (peak RSS, KB)
	echo "peak RSS: $rss_mem KB in memory, $rss_disk KB on disk, $rss_none KB uncached"
	[ "$((rss_mem - rss_none))" -gt 15000 ]
	[ "$((3 * (rss_disk - rss_none)))" -lt "$((rss_mem - rss_none))" ]
	# and the disk tier's files are gone
	[ -z "$(ls -A "$T/cd")" ]
}

@test "rv-refurbish: a tiny --mem without --cache-dir warns once, recomputes, gives the same bytes" {
	fmnist 500 "$T/in.rvs"
	opts=(-q --partial "$FP" --final "$FF" --reuse 3 --epochs 5 --batch 50)
	rv-refurbish "${opts[@]}" "$T/in.rvs" -o "$T/ref.rvs"
	run -0 --separate-stderr rv-refurbish "${opts[@]}" --mem 4K \
	    "$T/in.rvs" -o "$T/tiny.rvs"
	[ "${#stderr_lines[@]}" = 1 ]
	[[ "${stderr_lines[0]}" =~ ^rv-refurbish:\ cache\ holds\ ([0-9]+)\ of\ 500\ partials\;\ the\ rest\ are\ recomputed:\ raise\ --mem\ or\ give\ --cache-dir$ ]]
	[ "${BASH_REMATCH[1]}" -lt 500 ]
	cmp "$T/ref.rvs" "$T/tiny.rvs"
	# -v: more partials run than planned
	run -0 --separate-stderr rv-refurbish "${opts[@]}" -v --mem 4K \
	    "$T/in.rvs" -o "$T/tiny2.rvs"
	# N + (E-1)N/r = 1166.67: the plan's chunks hold 1166
	[[ "${stderr_lines[-1]}" =~ ^rv-refurbish:\ partials:\ expected\ 500\ \+\ \(5-1\)\*500/3\ =\ 1166,\ actual\ ([0-9]+)$ ]]
	[ "${BASH_REMATCH[1]}" -gt 1166 ]
	cmp "$T/ref.rvs" "$T/tiny2.rvs"
	# the JPEGs too (the partial includes the decode)
	jpegs "$T/j.rvs"
	rv-refurbish -q --partial "$JP" --final "$JF" --reuse 3 --epochs 4 \
	    "$T/j.rvs" -o "$T/jref.rvs"
	run -0 --separate-stderr rv-refurbish -q --partial "$JP" --final "$JF" \
	    --reuse 3 --epochs 4 --mem 1K "$T/j.rvs" -o "$T/jtiny.rvs"
	[[ "$stderr" == "rv-refurbish: cache holds "*" of 32 partials; the rest are recomputed: raise --mem or give --cache-dir" ]]
	cmp "$T/jref.rvs" "$T/jtiny.rvs"
}

# ---- reporting and errors ----------------------------------------------------

@test "rv-refurbish: -v prints one line per epoch and the expected-vs-actual line" {
	slow
	fmnist 200 "$T/in.rvs"
	run -0 --separate-stderr rv-refurbish -q -v --partial "$FP" --final "$FF" \
	    --reuse 3 --epochs 7 --batch 16 --seed 4 "$T/in.rvs" -o "$T/out.rvs"
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" = 8 ]
	local e m want=(200 66 67 67 66 67 67)
	for e in 0 1 2 3 4 5 6; do
		m=${want[$e]}
		[[ "${stderr_lines[$e]}" =~ ^rv-refurbish:\ epoch\ $e:\ $m\ misses,\ $((200 - m))\ hits,\ $m\ partials\ run,\ [0-9.]+\ s\ CPU,\ [0-9.]+\ samples/s$ ]] ||
		    { echo "line $e: '${stderr_lines[$e]}'"; false; }
	done
	[ "${stderr_lines[7]}" = "rv-refurbish: partials: expected 200 + (7-1)*200/3 = 600, actual 600" ]
	# -q alone says nothing
	run -0 --separate-stderr rv-refurbish -q --partial "$FP" --final "$FF" \
	    --reuse 3 --epochs 2 "$T/in.rvs" -o "$T/out2.rvs"
	[ -z "$stderr" ]
}

@test "rv-refurbish: usage errors exit 2 with one line naming the option" {
	fmnist 10 "$T/in.rvs"
	local args msg
	while IFS='|' read -r args msg; do
		eval "set -- $args"
		run -2 --separate-stderr rv-refurbish "$@" "$T/in.rvs"
		[ "${stderr_lines[0]}" = "rv-refurbish: $msg" ] ||
		    { echo "args $args: got '${stderr_lines[0]}', want 'rv-refurbish: $msg'"; false; }
		[ -z "$output" ]
	done <<'EOF'
--final flip|--partial is required
--partial flip|--final is required
--partial flip --final flip --resume|--resume needs -o with a %d pattern
--partial flip --final flip --resume -o x.rvs|--resume needs -o with a %d pattern
--partial 'flip; rotate angel=3' --final flip|--partial: op 2 'rotate': unknown argument 'angel' (rotate takes deg, interp, fill, p)
--partial flip --final 'flip; rotate angel=3'|--final: op 2 'rotate': unknown argument 'angel' (rotate takes deg, interp, fill, p)
--partial rotat --final flip|--partial: op 1: unknown op 'rotat' (did you mean 'rotate'? rv-augment --list-ops lists them)
--partial 'rrc size=0' --final flip|--partial: op 1 'rrc': size: '0': out of range [1, 65536]
--partial flip --final flip --reuse 0|--reuse: '0': out of range [1, 4294967295]
--partial flip --final flip --reuse x|--reuse: 'x': not a non-negative integer
EOF
	# where the usage is follows the message
	run -2 --separate-stderr rv-refurbish --final flip "$T/in.rvs"
	[ "${stderr_lines[1]}" = "Try 'rv-refurbish --help' for more information." ]
	# these are usage errors too, whatever their wording
	for args in "--epochs 0" "--batch 0" "--mem lots" "--epoch-range 3-1" \
	    "--epoch-range 2-9 --epochs 5" "--epoch-range x" "-j 0" \
	    "-o x%s.rvs" "-o x%d%d.rvs"; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr rv-refurbish --partial flip --final flip \
		    $args "$T/in.rvs"
		[[ "${stderr_lines[0]}" == "rv-refurbish: "* ]] ||
		    { echo "$args: '${stderr_lines[0]}'"; false; }
	done
}

@test "rv-refurbish: runtime errors exit 1 naming the input and the record" {
	fmnist 10 "$T/in.rvs"
	rv-batch -q -b 4 "$T/in.rvs" -o "$T/b.rvs"
	run -1 --separate-stderr rv-refurbish --partial flip --final flip \
	    "$T/b.rvs" -o "$T/out.rvs"
	[ "$stderr" = "rv-refurbish: '$T/b.rvs': record 1 is a batch; refurbish before rv-batch" ]
	[ ! -e "$T/out.rvs" ]
	run -1 --separate-stderr bash -c "rv-refurbish --partial flip --final flip < '$T/b.rvs' > /dev/null"
	[ "$stderr" = "rv-refurbish: '<stdin>': record 1 is a batch; refurbish before rv-batch" ]
	run -1 --separate-stderr rv-refurbish --partial flip --final flip "$T/nope.rvs"
	[ "$stderr" = "rv-refurbish: '$T/nope.rvs': No such file or directory" ]
	head -c 3000 "$T/in.rvs" > "$T/cut.rvs"
	run -1 --separate-stderr rv-refurbish --partial flip --final flip \
	    "$T/cut.rvs" -o "$T/out.rvs"
	[[ "$stderr" == "rv-refurbish: '$T/cut.rvs': record "*" at byte "*": "* ]]
	[ ! -e "$T/out.rvs" ]
	# a partial that cannot apply names the record and the id
	run -1 --separate-stderr rv-refurbish --partial 'random_crop size=40' \
	    --final flip "$T/in.rvs" -o "$T/out.rvs"
	[[ "$stderr" == "rv-refurbish: '$T/in.rvs': record "*" (id "*"): op 1 'random_crop': "* ]]
	# a bad JPEG is fatal, naming record and id
	mkdir "$T/tr"
	cp "$FIX/img/rgb.jpg" "$FIX/img/truncated.jpg" "$T/tr/"
	rv-decode -q --encoded "$T/tr" -o "$T/tr.rvs"
	run -1 --separate-stderr rv-refurbish --partial flip --final flip \
	    "$T/tr.rvs" -o "$T/out.rvs"
	[ "$stderr" = "rv-refurbish: '$T/tr.rvs': record 2 (id 1): truncated JPEG data" ]
	[ ! -e "$T/out.rvs" ]
}

@test "rv-refurbish: --exact: a partial that starts with rrc gives on encoded JPEGs the bytes of decoded input" {
	local d="$FIX/ds/folder"
	rv-decode -q --encoded "$d" "$d" -o "$T/enc.rvs"
	rv-decode -q "$d" "$d" -o "$T/dec.rvs"
	rv-refurbish -q --exact --partial "$JP" --final "$JF" --reuse 2 \
	    --epochs 4 --batch 4 "$T/enc.rvs" -o "$T/a.rvs"
	rv-refurbish -q --partial "$JP" --final "$JF" --reuse 2 --epochs 4 \
	    --batch 4 "$T/dec.rvs" -o "$T/b.rvs"
	diff <(pix "$T/a.rvs") <(pix "$T/b.rvs")
	[ "$(pix "$T/a.rvs" | wc -l)" -ge 64 ]
}

# ---- scored: --score -------------------------------------------------------

# scored_ok OUT N K R B: the pix lines of a scored run (--final '', so a
# served partial's pixels are its fresh use's) keep every promise: epoch 0
# whole, K samples an epoch after it, each id once an epoch; a fresh
# partial (uses 1) only for a sample kept, a hit serves the last fresh
# pixels of its id with uses one more and at most R, and a partial is
# made again only after R uses (its first, after at most R); every full
# batch of B of an epoch after the first holds the same misses +-1, and
# each such epoch makes K/R partials +-20%.  Prints the partials made.
scored_ok() {
	pix "$1" | awk -v N="$2" -v K="$3" -v R="$4" -v B="$5" '
	function bad(m) { print "FAIL: " m; fails++ }
	{
		e = $1; id = $2; u = $3; h = $4
		if (seen[e " " id]++) bad("epoch " e ": id " id " twice")
		i = n[e]++
		if (u == 1) {
			if (id in last && (last[id] > R ||
			    (nref[id]++ > 0 && last[id] != R)))
				bad("id " id ": made again after " last[id] " uses")
			px[id] = h; made[e]++; parts++
			if (e > 0 && i < int(K / B) * B)
				miss[e " " int(i / B)]++
		} else if (!(id in last) || u != last[id] + 1 || u > R ||
		    px[id] != h) {
			bad("epoch " e ": id " id ": uses " u " after " last[id] ", or other pixels")
		}
		last[id] = u; if (e > E) E = e
	}
	END {
		if (n[0] != N) bad("epoch 0: " n[0] " samples")
		for (e = 1; e <= E; e++) {
			if (n[e] != K) bad("epoch " e ": " n[e] " samples")
			lo = K; hi = 0
			for (g = 0; g < int(K / B); g++) {
				v = miss[e " " g] + 0
				if (v < lo) lo = v; if (v > hi) hi = v
			}
			if (hi - lo > 1) bad("epoch " e ": " lo " to " hi " misses a batch")
			if (made[e] < 0.8 * K / R || made[e] > 1.2 * K / R)
				bad("epoch " e ": " made[e] " partials for " K " samples, r " R)
		}
		if (fails) exit 1
		print parts
	}'
}

@test "rv-refurbish --score: F N samples an epoch after a whole first, a partial only for the kept, r uses each, misses even per batch, the same bytes for any -j" {
	fmnist 600 "$T/in.rvs"
	run -0 --separate-stderr rv-refurbish -v -j 1 --partial "$FP" --final '' \
	    --reuse 3 --epochs 7 --batch 32 --seed 3 --score '--budget 0.5' \
	    "$T/in.rvs" -o "$T/a.rvs"
	[[ "${stderr_lines[0]}" == "rv-refurbish: epoch 0: 600 misses, 0 hits, 600 partials run, "* ]]
	[[ "${stderr_lines[1]}" == "rv-refurbish: score epoch 0: 600 seen, 600 kept (100.0%), 0 dropped; feedback 0 lines"* ]]
	# epoch 1 makes the partials of chunk 0 kept: its share exactly
	[[ "${stderr_lines[2]}" == "rv-refurbish: epoch 1: 100 misses, 200 hits, 100 partials run, "* ]]
	# no --feedback: every drop uninformed, and the run says so
	[[ "${stderr_lines[3]}" == "rv-refurbish: score epoch 1: 600 seen, 300 kept (50.0%), 300 dropped (all uninformed);"* ]]
	[[ "$stderr" == *"rv-refurbish: score: warning: no feedback arrived: the 1800 samples dropped were dropped by chance and the floor, not chosen by what the trainer said (is it writing its feedback where --feedback reads?)"* ]]
	[[ "$stderr" == *"rv-refurbish: partials: "*" for 2400 samples served, "*" a sample (1/r = 0.333)"* ]]
	run -0 scored_ok "$T/a.rvs" 600 300 3 32
	[ "$output" -ge 1100 ] && [ "$output" -le 1300 ]
	# the epoch ends count the kept; the metadata says what was served
	run -0 bash -c "rv-inspect --dump '$T/a.rvs' | awk -F'\t' '\$3 == \"epoch-end\" { print \$11 }' | xargs"
	[ "$output" = "600 300 300 300 300 300 300" ]
	run -0 bash -c "rv-inspect '$T/a.rvs' | grep -E '^  (score.budget|refurbish.misses) '"
	[ "${#lines[@]}" = 2 ]
	# rv-batch knows that a batch of 32 is a window of the scorer's
	run -0 --separate-stderr rv-batch -q -b 32 "$T/a.rvs" -o "$T/b32.rvs"
	[ "$stderr" = "" ]
	run -0 --separate-stderr rv-batch -q -b 48 "$T/a.rvs" -o "$T/b48.rvs"
	[[ "$stderr" == *"batches of 48 cut across rv-score's windows of 32 kept samples"* ]]
	rv-refurbish -q -j 3 --partial "$FP" --final '' --reuse 3 --epochs 7 \
	    --batch 32 --seed 3 --score '--budget 0.5' "$T/in.rvs" -o "$T/b.rvs"
	cmp "$T/a.rvs" "$T/b.rvs"
	# r = 1: a partial for every kept sample, a whole epoch at F = 1
	rv-refurbish -q --partial "$FP" --final '' --epochs 3 --batch 32 \
	    --score '--budget 0.25 --policy uniform' "$T/in.rvs" -o "$T/c.rvs"
	run -0 scored_ok "$T/c.rvs" 600 150 1 32
	[ "$output" = 900 ]
	rv-refurbish -q --partial "$FP" --final '' --reuse 2 --epochs 3 \
	    --batch 32 --score '--budget 1' "$T/in.rvs" -o "$T/d.rvs"
	run -0 scored_ok "$T/d.rvs" 600 600 2 32
}

@test "rv-refurbish --score: encoded JPEGs scored from a thumbnail made once a run; a cut one stops, naming it" {
	jpegs "$T/in.rvs"
	run -0 --separate-stderr rv-refurbish -v --partial "$JP" --final "$JF" \
	    --reuse 2 --epochs 4 --batch 4 --score '--budget 0.5' \
	    "$T/in.rvs" -o "$T/out.rvs"
	[[ "$stderr" == *"rv-refurbish: score epoch 3: 32 seen, 16 kept (50.0%), 16 dropped (all uninformed);"* ]]
	[[ "$stderr" == *"; 32 encoded samples decoded reduced for the assistant, 96 from its cache" ]]
	run -0 bash -c "rv-inspect --dump '$T/out.rvs' | awk -F'\t' '\$3 == \"sample\" { print \$7 \"x\" \$8 \"x\" \$9, \$10 }' | sort | uniq -c | awk '{ print \$1, \$2, \$3 }'"
	[ "$output" = "80 32x32x3 u8" ]
	mkdir "$T/tr"
	cp "$FIX/img/rgb.jpg" "$FIX/img/truncated.jpg" "$T/tr/"
	rv-decode -q --encoded "$T/tr" -o "$T/tr.rvs"
	run -1 --separate-stderr rv-refurbish --partial flip --final flip \
	    --score '--budget 0.5' "$T/tr.rvs" -o "$T/out2.rvs"
	[ "$stderr" = "rv-refurbish: '$T/tr.rvs': record 2 (id 1): truncated JPEG data" ]
	[ ! -e "$T/out2.rvs" ]
}

@test "rv-refurbish --score: usage errors exit 2 with one line naming --score" {
	fmnist 10 "$T/in.rvs"
	for s in '' '--policy uniform' '--budget 0.5 --window 8' \
	    '--budget 0.5 --strict' '--budget 0.5 --bogus 1' \
	    '--budget 0.5 -o x' '--budget 0.5 extra' '--budget 2' \
	    '--budget 0.5 --keep 0.3' '--budget 0.5 --floor'; do
		run -2 --separate-stderr rv-refurbish --partial flip --final flip \
		    --score "$s" "$T/in.rvs" -o "$T/out.rvs"
		[[ "${stderr_lines[0]}" == "rv-refurbish: --"* ]]
		[ "${stderr_lines[1]}" = "Try 'rv-refurbish --help' for more information." ]
		[ ! -e "$T/out.rvs" ]
	done
	run -2 --separate-stderr rv-refurbish --partial flip --final flip \
	    --score '--budget 0.5 --bogus' "$T/in.rvs"
	[ "${stderr_lines[0]}" = "rv-refurbish: --score: '--bogus': not an rv-score option that can go here, or its value is missing" ]
	run -2 --separate-stderr rv-refurbish --partial flip --final flip \
	    --score '--policy uniform' "$T/in.rvs"
	[[ "${stderr_lines[0]}" == "rv-refurbish: --score: give --budget F: "* ]]
}
