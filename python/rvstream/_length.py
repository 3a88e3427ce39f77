"""How many batches a stream holds, from its metadata (rv-stream(5)).

The keys that tell:

  samples     samples per epoch (rv-decode(1): its shard's share, after
              --even; rv-refurbish: the samples it serves)
  kept, kept-first
              the samples each epoch holds after a stage kept a number
              of them fixed ahead (rv-score --budget, rv-refurbish
              --score), and those of the first epoch (whole under a
              warm-up); written by rv-refurbish whether it scores or
              not, and empty where a stage dropped samples it could not
              count ahead (rv-score without --budget)
  resume, resume-samples
              rv-decode --resume: the first epoch holds resume-samples
  epochs      epochs written (rv-decode; rv-refurbish to one stream:
              empty in its one-file-an-epoch output, which may be joined)
  batch.size, batch.drop_last (or batch.drop-last)
              rv-batch's -b and --drop-last, when a writer records them

and the first record after the head's metadata: a batch's count is the
batch size whenever it is less than the first epoch's samples (the first
batch of an epoch is full unless the epoch is shorter), and a sample
stream is collated by the reader's own batch_size.

What the metadata cannot tell: score.* keys without kept (a writer before
kept), refurbish.* keys without kept (an rv-refurbish before it wrote its
own epochs key), an empty kept or epochs, and rv-batch's --drop-last
without its key when the batch size does not divide an epoch.  The
caller may then count a file's batches from its frame headers
(_index.FileIndex), or give up.
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
    """What a stream says of its length, in batches.

    first and per_epoch: the batches of its first epoch and of each
    later one, exact or None; epochs: exact or None; hint_first,
    hint_per_epoch and hint_epochs the best estimates (None when there
    is none); counts, when the frame headers were counted, the batches
    of every epoch (exact: it overrides the rest).  samples and
    first_samples: the samples of an epoch, when exact.  why says what
    is unknown; index is the FileIndex counted, if any.
    """

    def __init__(self):
        self.first = self.per_epoch = self.epochs = None
        self.hint_first = self.hint_per_epoch = self.hint_epochs = None
        self.samples = self.first_samples = None
        self.counts = None
        self.kind = None  # "batch" or "sample" records
        self.index = None
        self.why = []

    def at(self, i):
        """The batches of epoch i (from 0), or None."""
        if self.counts is not None:
            return self.counts[i] if i < len(self.counts) else 0
        return self.first if i == 0 else self.per_epoch

    def every(self):
        """The batches of each epoch, a list, or None."""
        if self.counts is not None:
            return list(self.counts)
        if self.epochs is None or self.first is None or \
                (self.epochs > 1 and self.per_epoch is None):
            return None
        return [self.at(i) for i in range(self.epochs)]

    def uniform(self):
        """The batches of every epoch when they are all the same (and
        known), else None."""
        e = self.every()
        if e is None:
            return self.per_epoch if self.first == self.per_epoch else None
        if not e:
            return 0
        return e[0] if all(n == e[0] for n in e) else None

    @property
    def total(self):
        e = self.every()
        return None if e is None else sum(e)

    @property
    def hint_total(self):
        first = self.first if self.first is not None else self.hint_first
        per = self.per_epoch if self.per_epoch is not None else \
            self.hint_per_epoch
        e = self.epochs if self.epochs is not None else self.hint_epochs
        if first is None and per is None:
            return None
        first = per if first is None else first
        per = first if per is None else per
        e = 1 if e is None else e
        return 0 if e == 0 else first + per * (e - 1)

    def reason(self):
        return "; ".join(dict.fromkeys(self.why)) or "unknown"

    def from_index(self, ix, batch_size):
        """Count the batches of every epoch of the file ix indexed (its
        data records, or its samples, one a data record, collated by
        batch_size)."""
        self.index = ix
        if ix.data_kind == BATCH_KIND or ix.data_kind is None:
            self.counts = [n for _, n in ix.epochs]
        elif batch_size is None:
            return
        else:
            self.counts = [_ceil(n, batch_size) for _, n in ix.epochs]
        self.epochs = len(self.counts)
        self.why = []


BATCH_KIND = 2  # rv-stream(5)'s batch record kind, as FileIndex has it


def _ceil(a, b):
    return -(-a // b)


def _counts(meta):
    """(first, rest, why, hint): the samples of the first epoch and of
    each later one the head's metadata says, exact or None, why not, and
    an estimate of rest."""
    S = meta_int(meta, "samples")
    if "kept" in meta:
        rest = meta_int(meta, "kept")
        first = meta_int(meta, "kept-first") if "kept-first" in meta \
            else rest
        if rest is None or first is None:
            why = ("a stage dropped samples it could not count ahead "
                   "(rv-score without --budget): 'kept' is empty")
            return first, rest, why, _keep_hint(meta, S)
        return first, rest, None, rest
    if any(k.startswith("score.") for k in meta):
        return None, None, ("rv-score drops samples: 'samples' counts "
                            "those that came in"), _keep_hint(meta, S)
    if S is None:
        return None, None, "the metadata has no 'samples' key", None
    if meta.get("resume"):
        R = meta_int(meta, "resume-samples")
        if R is None:
            return None, S, ("rv-decode --resume without 'resume-samples'"
                             ), S
        return R, S, None, S
    return S, S, None, S


def _keep_hint(meta, S):
    keep = meta.get("score.budget") or meta.get("score.keep")
    try:
        k = float(keep) if keep is not None else None
    except ValueError:
        k = None
    if S is None or k is None or not 0 < k <= 1:
        return S
    return max(1, round(S * k))


def size_from_meta(meta, first, first_kind=None, first_count=None,
                   batch_size=None):
    """The Size of a stream whose head's merged metadata is meta.

    first: FIRST_DATA (then first_kind "batch" or "sample" and
    first_count, the first record's count), FIRST_END (an epoch-end came
    before any data) or NO_DATA (the input ended first).  batch_size is
    the reader's (it collates sample records)."""
    sz = Size()
    if first == NO_DATA:  # nothing to yield, whatever the metadata says
        sz.first, sz.per_epoch, sz.epochs = 0, 0, 0
        return sz
    E = meta_int(meta, "epochs")
    f_n, r_n, why, r_hint = _counts(meta)
    if why:
        sz.why.append(why)
    if any(k.startswith("refurbish.") for k in meta):
        total = meta_int(meta, "refurbish.epochs")
        first_e = meta_int(meta, "refurbish.epoch") or 0
        hint = total - first_e if total is not None and total > first_e \
            else None
        if "kept" not in meta:  # an rv-refurbish before its epochs key
            E = None
            sz.why.append("rv-refurbish may write only some of its epochs "
                          "(--epoch-range): the epoch count is unknown")
        elif E is None:
            sz.why.append("rv-refurbish wrote one file an epoch (-o "
                          "PATTERN), which may be joined to others: the "
                          "epoch count is unknown")
        sz.hint_epochs = E if E is not None else hint
    elif E is None:
        sz.why.append("the metadata has no 'epochs' key")
    else:
        sz.hint_epochs = E
    sz.epochs = E
    sz.first_samples, sz.samples = f_n, r_n

    if first == FIRST_END:
        # the first epoch holds nothing: all dropped (rv-batch
        # --drop-last with a batch larger than the epoch)
        sz.first = sz.hint_first = 0
        if f_n == r_n:
            sz.per_epoch = sz.hint_per_epoch = 0
        return sz
    sz.kind = first_kind
    if first_kind == "sample":
        if batch_size is None:
            sz.why.append("a stream of samples is read with batch_size")
            return sz
        if f_n is not None:
            sz.first = _ceil(f_n, batch_size)
        if r_n is not None:
            sz.per_epoch = _ceil(r_n, batch_size)
        if r_hint is not None:
            sz.hint_per_epoch = _ceil(r_hint, batch_size)
        return sz
    # batches as rv-batch wrote them
    B = meta_int(meta, "batch.size")
    drop = meta_bool(meta, "batch.drop_last", "batch.drop-last")
    n0 = first_count
    if not B:
        ref = f_n if f_n is not None else r_hint
        if ref is not None and n0 < ref:
            B = n0  # the first batch of an epoch is full
        elif ref is not None and n0 == ref:
            B = None  # one batch per epoch, whatever the size
        else:
            B = n0
    if f_n is not None and (n0 > f_n or (B and n0 > B)):
        sz.why.append(f"the first batch holds {n0} samples, the metadata "
                      f"says {f_n} in the first epoch")
        sz.hint_per_epoch = _ceil(f_n, n0)
        return sz

    def batches(n):
        if n is None:
            return None
        if B is None:  # one batch held a whole epoch of f_n
            return (1 if n else 0) if f_n is not None and n <= f_n \
                else None
        if n % B == 0:
            return n // B
        if drop is None:
            sz.why.append(f"rv-batch's --drop-last is not in the metadata "
                          f"(batch.drop-last) and {B} does not divide {n}")
            return None
        return n // B if drop else _ceil(n, B)

    sz.first, sz.per_epoch = batches(f_n), batches(r_n)
    sz.hint_first = sz.first
    if r_hint is not None:
        sz.hint_per_epoch = sz.per_epoch if sz.per_epoch is not None \
            else _ceil(r_hint, B or max(r_hint, 1))
    return sz
