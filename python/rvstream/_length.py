"""How many batches a stream holds, from its metadata (rv-stream(5)).

The keys that tell:

  samples     samples per epoch (rv-decode(1): its shard's share, after
              --even; carried on by rv-augment, rv-refurbish, rv-batch)
  epochs      epochs written (rv-decode)
  batch.size, batch.drop_last (or batch.drop-last)
              rv-batch's -b and --drop-last, when a writer records them

and the first record after the head's metadata: a batch's count is the
batch size whenever it is less than `samples` (the first batch of an
epoch is full unless the epoch is shorter), and a sample stream is
collated by the reader's own batch_size.

The keys that say the metadata cannot tell:

  score.*     rv-score(1) ran: it drops samples, so `samples` says only
              how many came in
  refurbish.* rv-refurbish(1) ran: its output holds `samples` per epoch,
              but it may hold only some of its refurbish.epochs epochs
              (--epoch-range, or one file per epoch), so the epoch count
              is unknown

Without the batch size keys, rv-batch's --drop-last is unknown when the
batch size does not divide `samples`: the last batch of each epoch is
short or gone.  The caller may then count the first epoch's batches in
the file (_index.first_epoch_records), or give up.
"""

# what the head of a stream ends with: its first data record, an
# epoch-end before any data, or the end of the input
FIRST_DATA, FIRST_END, NO_DATA = "data", "epoch-end", "end"


def meta_int(meta, key):
    """meta[key] as a non-negative int, or None."""
    v = meta.get(key)
    if v is None or not v.isdigit():
        return None
    return int(v)


def meta_bool(meta, *keys):
    for k in keys:
        v = meta.get(k)
        if v in ("0", "1"):
            return v == "1"
    return None


class Size:
    """What a stream's metadata says of its length, in batches.

    per_epoch and epochs are exact or None; hint_per_epoch and
    hint_epochs are the best estimates (None when there is none); why
    says what is unknown.  ambiguous_drop is (floor, ceil) when only
    rv-batch's --drop-last is unknown (a count of the first epoch's
    batches settles it).
    """

    def __init__(self):
        self.per_epoch = self.epochs = None
        self.hint_per_epoch = self.hint_epochs = None
        self.samples = None  # samples per epoch, when exact
        self.kind = None  # "batch" or "sample" records
        self.ambiguous_drop = None
        self.why = []

    @property
    def total(self):
        if self.per_epoch is None or self.epochs is None:
            return None
        return self.per_epoch * self.epochs

    @property
    def hint_total(self):
        p = self.per_epoch if self.per_epoch is not None else \
            self.hint_per_epoch
        e = self.epochs if self.epochs is not None else self.hint_epochs
        if p is None:
            return None
        return p * (e if e is not None else 1)

    def reason(self):
        return "; ".join(self.why) or "unknown"

    def settle_drop(self, per_epoch):
        """The first epoch held per_epoch batches: that settles
        --drop-last (when it is one of the two candidates)."""
        if self.ambiguous_drop and per_epoch in self.ambiguous_drop:
            self.per_epoch = per_epoch
            self.ambiguous_drop = None
            self.why = [w for w in self.why if "drop-last" not in w]


def _ceil(a, b):
    return -(-a // b)


def size_from_meta(meta, first, first_kind=None, first_count=None,
                   batch_size=None):
    """The Size of a stream whose head's merged metadata is meta.

    first: FIRST_DATA (then first_kind "batch" or "sample" and
    first_count, the first record's count), FIRST_END (an epoch-end came
    before any data) or NO_DATA (the input ended first).  batch_size is
    the reader's (it collates sample records)."""
    sz = Size()
    if first == NO_DATA:  # nothing to yield, whatever the metadata says
        sz.per_epoch, sz.epochs = 0, 0
        return sz
    S = meta_int(meta, "samples")
    E = meta_int(meta, "epochs")
    scored = any(k.startswith("score.") for k in meta)
    refurbished = any(k.startswith("refurbish.") for k in meta)
    S_hint = S
    if S is None:
        sz.why.append("the metadata has no 'samples' key")
    elif scored:
        sz.why.append("rv-score drops samples: 'samples' counts those "
                      "that came in")
        keep = meta.get("score.keep") or meta.get("score.budget")
        try:
            k = float(keep) if keep is not None else None
        except ValueError:
            k = None
        if k is not None and 0 < k <= 1:
            S_hint = max(1, round(S * k))
        S = None
    if meta.get("resume") is not None and S is not None:
        # rv-decode --resume: its first epoch is what was left of it
        sz.why.append("rv-decode --resume: the first epoch holds "
                      "'resume-samples', the others 'samples'")
        S = None
    if refurbished:
        total = meta_int(meta, "refurbish.epochs")
        first_e = meta_int(meta, "refurbish.epoch") or 0
        if total is not None and total > first_e:
            sz.hint_epochs = total - first_e
        sz.why.append("rv-refurbish may write only some of its epochs "
                      "(--epoch-range): the epoch count is unknown")
        E = None
    elif E is None:
        sz.why.append("the metadata has no 'epochs' key")
    else:
        sz.hint_epochs = E
    sz.epochs = E
    sz.samples = S

    if first == FIRST_END:
        # the first epoch holds nothing: all dropped (rv-batch
        # --drop-last with a batch larger than the epoch)
        sz.kind = None
        if S is not None:
            sz.per_epoch = 0
        sz.hint_per_epoch = 0
        return sz
    sz.kind = first_kind
    if first_kind == "sample":
        if batch_size is None:
            sz.why.append("a stream of samples is read with batch_size")
            return sz
        if S is not None:
            sz.per_epoch = _ceil(S, batch_size)
        if S_hint is not None:
            sz.hint_per_epoch = _ceil(S_hint, batch_size)
        return sz
    # batches as rv-batch wrote them
    B = meta_int(meta, "batch.size")
    drop = meta_bool(meta, "batch.drop_last", "batch.drop-last")
    n0 = first_count
    if B is None or B == 0:
        if S_hint is not None and n0 < S_hint:
            B = n0  # the first batch of an epoch is full
        elif S_hint is not None and n0 == S_hint:
            B = None  # one batch per epoch, whatever the size
        else:
            B = n0
    if S is None:
        if S_hint is not None and B:
            sz.hint_per_epoch = _ceil(S_hint, B)
        return sz
    if n0 > S or (B and n0 > B):
        sz.why.append(f"the first batch holds {n0} samples, the metadata "
                      f"says {S} per epoch")
        sz.hint_per_epoch = _ceil(S, n0)
        return sz
    if B is None or B >= S:
        sz.per_epoch = 1 if S else 0
    elif S % B == 0:
        sz.per_epoch = S // B
    elif drop is not None:
        sz.per_epoch = S // B if drop else _ceil(S, B)
    else:
        sz.ambiguous_drop = (S // B, _ceil(S, B))
        sz.why.append(f"rv-batch's --drop-last is not in the metadata "
                      f"(batch.drop-last) and {B} does not divide {S}")
    sz.hint_per_epoch = sz.per_epoch if sz.per_epoch is not None else \
        _ceil(S, B)
    return sz
