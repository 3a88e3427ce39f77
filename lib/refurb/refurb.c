/*
 * The epoch loop of rv-refurbish (refurb.h): per chunk of the epoch's
 * order, cache lookups and one batched read of the misses' input on the
 * main thread, the partial and final augmentations on the workers, then
 * frames written and new partials cached in order.  A table of the refresh
 * epoch each cached entry was made for keeps a stale entry (an epoch
 * skipped by --resume) from ever being served.  Scored, the epoch is
 * offered to the scorer window by window first (score_epoch), and the
 * items are the samples it keeps, planned from the uses counted.
 */
#include "refurb/refurb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/rng.h"
#include "base/xmem.h"
#include "codec/codec.h"
#include "codec/coder.h"
#include "refurb/sched.h"
#include "shrink/score_io.h"
#include "stream/meta.h"
#include "stream/par.h"

#define HELD_NONE	UINT32_MAX
/* RV_STAGE_REFURB_ORDER's op of a scored epoch's batch shuffle (epoch e,
 * id j: batch j); sched.c has ops 0 to 3.  Never change. */
#define REFURB_OP_BATCH	4

/* One item of a chunk, in par slot order. */
struct item {
	uint64_t pos;
	uint32_t refresh;	/* epoch whose partial is served */
	uint32_t uses;
	uint16_t flags;
	unsigned char fresh;	/* the schedule makes its partial now */
	unsigned char keep;	/* the partial is served again: cache it */
	unsigned char compute;	/* run the partial (else: from the cache) */
	unsigned char put;	/* pack the partial for the cache */
	float score;		/* scored: the assistant's score */
	float weight;		/* the sample's weight */
	size_t req;		/* compute: its request in the batch */
	struct rv_cache_ref ref;	/* !compute: its cache entry */
	struct rv_cache_entry entry;	/* put: the packed partial */
};

struct worker {
	struct rv_coder k;	/* decoder, encoder, image */
	struct rv_aug_ctx ctx;
	struct rv_cache_scratch *cs;
	struct rv_refsrc_reader *rd;
};

struct rv_refurb {
	struct rv_refurb_conf c;
	const struct rv_refsrc *src;
	uint64_t n;
	struct rv_sched sched;
	struct rv_cache *cache;
	struct rv_par *par;
	uint64_t *order;	/* the epoch's order, N */
	uint32_t *held;		/* refresh epoch of pos's entry, N */
	struct item *items;	/* rv_par_max of each below */
	uint64_t *hitpos, *misspos;
	size_t *hitslot;
	struct rv_cache_ref *refs;
	unsigned char *found;
	size_t max;
	struct rv_refsrc_batch batch;
	/* the epoch being written */
	uint32_t epoch, next;
	struct rv_writer *w;
	struct rv_refurb_stats *st;
	int cache_err;		/* 1: a message waits in cache_msg; 2: told */
	char cache_msg[512];
	/* scored (conf.scorer): the uses counted, per position */
	uint32_t *gen;		/* refresh epoch of its partial, or HELD_NONE
				 * before its first */
	uint32_t *used;		/* kept uses of that partial */
	uint32_t *quota;	/* uses it is served: chunk + 1, then r */
	unsigned char *due;	/* this epoch: its partial must be made */
	unsigned char *thumbed;	/* its thumbnail was made: no read to score */
	uint64_t *offered;	/* a window's positions, in order */
	struct rv_keep *keeps;	/* and the decisions */
	uint64_t *kept;		/* the kept ones' indexes in offered, shuffled */
	size_t *need;		/* the window's frame request of each, or -1 */
	uint64_t *loadpos;
	struct rv_refsrc_batch sbatch, obatch;	/* frames to score */
	struct rv_refsrc_reader *srd;
	struct rv_rec shape;	/* the first sample's header */
	size_t wmax;		/* window slots */
};

/* ---------------------------------------------------------------- workers */

static void
worker_stop(void *state)
{
	struct worker *w = state;

	if (!w)
		return;
	rv_coder_release(&w->k);
	rv_aug_ctx_release(&w->ctx);
	rv_cache_scratch_free(w->cs);
	rv_refsrc_reader_free(w->rd);
	free(w);
}

static void *
worker_start(void *arg)
{
	const struct rv_refurb *rf = arg;
	struct worker *w = xcalloc(1, sizeof(*w));

	rv_aug_ctx_init(&w->ctx);
	w->cs = rv_cache_scratch_new(RV_CACHE_LEVEL);
	if (w->cs)
		rv_cache_scratch_raw_max(w->cs,
		    rv_cache_raw_share(rf->c.mem, rf->n));
	w->rd = rv_refsrc_reader_new(rf->src);
	if (rv_coder_init(&w->k, rf->c.level, 0) < 0 || !w->cs) {
		worker_stop(w);
		return NULL;
	}
	return w;
}

/* Partial (computed or from the cache), final, frame: one item. */
static int
refurb_item(void *state, size_t i, struct rv_par_slot *s, void *ctx)
{
	struct worker *w = state;
	struct rv_refurb *rf = ctx;
	struct item *it = &rf->items[i];
	const struct rv_refsrc_item *src = rv_refsrc_item(rf->src, it->pos);
	struct rv_rec rec, out;

	if (!it->compute) {
		if (rv_cache_unpack(w->cs, it->ref.h, it->ref.w, it->ref.c,
		    it->ref.p, it->ref.n, &w->k.img) < 0)
			goto bad;
	} else {
		if (rv_refsrc_decode(w->rd, &rf->batch, it->req, &rec) < 0)
			return RV_PAR_FATAL;
		if (rv_refsrc_apply(w->rd, &w->k, &w->ctx, rf->c.partial,
		    &rec, rf->c.seed, RV_STAGE_PARTIAL, it->refresh,
		    src->id) < 0)
			goto bad;
		if (it->put && rv_cache_pack(w->cs, &w->k.img, &it->entry) < 0)
			goto bad;
	}
	if (rv_spec_apply(rf->c.final, &w->k.img, &w->ctx, rf->c.seed,
	    RV_STAGE_FINAL, rf->epoch, src->id) < 0)
		goto bad;
	rv_refsrc_rec(&out, &w->k.img, src, it->flags, rf->epoch, it->weight,
	    it->score, it->uses);
	if (rv_enc_frame(w->k.enc, &out, w->k.img.data, &s->frame) < 0)
		return RV_PAR_FATAL;
	return RV_PAR_OK;
bad:
	rv_preferr("'%s': record %llu (id %llu)", rv_refsrc_name(rf->src),
	    (unsigned long long)src->recno, (unsigned long long)src->id);
	return RV_PAR_FATAL;
}

/* ---------------------------------------------------------------- chunks */

/*
 * Before a chunk runs: what the schedule says of each item, the hits the
 * cache holds for the right refresh epoch, and one batched read of the
 * input frames of everything else.
 */
static int
chunk_before(void *ctx, const struct rv_par_slot *slots, size_t n)
{
	struct rv_refurb *rf = ctx;
	size_t i, nh = 0, nm = 0;

	for (i = 0; i < n; i++) {
		struct item *it = &rf->items[i];

		it->compute = 1;
		if (!it->fresh && rf->held[it->pos] == it->refresh) {
			rf->hitpos[nh] = it->pos;
			rf->hitslot[nh++] = i;
		}
	}
	if (nh && rv_cache_get_many(rf->cache, rf->hitpos, nh, rf->refs,
	    rf->found) < 0)
		return -1;
	for (i = 0; i < nh; i++) {
		struct item *it = &rf->items[rf->hitslot[i]];
		if (rf->found[i]) {
			it->compute = 0;
			it->ref = rf->refs[i];
		} else {
			rf->held[it->pos] = HELD_NONE;
		}
	}
	for (i = 0; i < n; i++) {
		struct item *it = &rf->items[i];
		if (!it->compute) {
			it->put = 0;
			continue;
		}
		it->req = nm;
		rf->misspos[nm++] = it->pos;
		it->put = it->keep;
	}
	rf->st->partials += nm;
	if (nm && rv_refsrc_load(rf->src, rf->misspos, nm, &rf->batch) < 0)
		return -1;
	return 0;
}

/* In order: the item's frame to the epoch's writer. */
static int
chunk_each(void *ctx, size_t i, const struct rv_par_slot *s)
{
	struct rv_refurb *rf = ctx;

	if (s->status != RV_PAR_OK)
		return 0;	/* rv_par stops on it */
	/* the trainer's lines, as often as rv-score takes them */
	if (rf->c.scorer != NULL)
		rv_scorer_poll(rf->c.scorer);
	return rv_writer_put_frames(rf->w, s->frame.data, s->frame.len, 1);
}

/*
 * After the chunk is written: its new partials into the cache, in order.
 * A failing disk tier is not fatal (the cache carries on in memory): the
 * first message is kept for the program to tell.
 */
static int
chunk_after(void *ctx, const struct rv_par_slot *slots, size_t n)
{
	struct rv_refurb *rf = ctx;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		struct item *it = &rf->items[i];
		if (!it->put)
			continue;
		rc = rv_cache_put(rf->cache, it->pos, &it->entry);
		rf->held[it->pos] = rc == 1 ? it->refresh : HELD_NONE;
		if (rc < 0 && rf->cache_err == 0) {
			snprintf(rf->cache_msg, sizeof(rf->cache_msg), "%s",
			    rv_errmsg());
			rf->cache_err = 1;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- scored */

/* The samples every epoch keeps but the first this run scores. */
static uint64_t
kept_rest(const struct rv_refurb *rf)
{
	if (rf->c.scorer == NULL)
		return rf->n;
	return rv_shrink_budget_k(rv_scorer_conf(rf->c.scorer)->budget,
	    (size_t)rf->n);
}

/*
 * floor(a b / c) for a <= c (a kept count over the epoch's): without
 * overflow for counts of samples.
 */
static uint64_t
muldiv(uint64_t a, uint64_t b, uint64_t c)
{
	return (uint64_t)((unsigned __int128)a * b / c);
}

/*
 * The scored run's state: the uses counted, the scorer's window (the
 * most candidates one trained batch takes: B N / K, K the samples an
 * epoch keeps) and what the scorer learns from the input's metadata.
 */
static int
score_new(struct rv_refurb *rf)
{
	struct rv_shrink_conf *sc = rv_scorer_conf(rf->c.scorer);
	uint64_t n = rf->n, k, w;

	if (!(sc->budget > 0))
		return rv_seterr("refurbish: scoring needs a budget: each "
		    "window keeps one batch");
	k = rv_shrink_budget_k(sc->budget, (size_t)n);
	w = muldiv(rf->c.batch < n ? rf->c.batch : n, n, k) + 1;
	if (w > n)
		w = n;
	if (w > RV_SHRINK_MAX_WINDOW)
		return rv_seterr("refurbish: a batch of %u at budget %g is a "
		    "window of %llu samples, more than %d: lower --batch",
		    rf->c.batch, sc->budget, (unsigned long long)w,
		    RV_SHRINK_MAX_WINDOW);
	sc->window = (uint32_t)w;
	if (rv_scorer_meta(rf->c.scorer, rv_refsrc_meta(rf->src)) < 0)
		return rv_preferr("'%s'", rv_refsrc_name(rf->src));
	rf->wmax = (size_t)w;
	rf->gen = xreallocarray(NULL, (size_t)n, sizeof(*rf->gen));
	memset(rf->gen, 0xff, (size_t)n * sizeof(*rf->gen));
	rf->used = xcalloc((size_t)n, sizeof(*rf->used));
	rf->quota = xcalloc((size_t)n, sizeof(*rf->quota));
	rf->due = xmalloc((size_t)n);
	rf->thumbed = xcalloc((size_t)n, 1);
	rf->offered = xreallocarray(NULL, rf->wmax, sizeof(*rf->offered));
	rf->keeps = xreallocarray(NULL, rf->wmax, sizeof(*rf->keeps));
	rf->kept = xreallocarray(NULL, rf->wmax, sizeof(*rf->kept));
	rf->need = xreallocarray(NULL, rf->wmax, sizeof(*rf->need));
	rf->loadpos = xreallocarray(NULL, rf->wmax, sizeof(*rf->loadpos));
	rf->srd = rv_refsrc_reader_new(rf->src);
	return 0;
}

/* Name the sample of pos in the message rv_errmsg() holds. */
static int
sample_err(const struct rv_refurb *rf, uint64_t pos)
{
	const struct rv_refsrc_item *it = rv_refsrc_item(rf->src, pos);

	return rv_preferr("'%s': record %llu (id %llu)",
	    rv_refsrc_name(rf->src), (unsigned long long)it->recno,
	    (unsigned long long)it->id);
}

/* The input sample of pos, read alone (its payload borrowed from srd). */
static int
read_one(struct rv_refurb *rf, uint64_t pos, struct rv_rec *rec)
{
	if (rv_refsrc_load(rf->src, &pos, 1, &rf->obatch) < 0)
		return -1;
	return rv_refsrc_decode(rf->srd, &rf->obatch, 0, rec);
}

/* The shrinker, from the first sample the run scores. */
static int
score_start(struct rv_refurb *rf, uint64_t pos)
{
	struct rv_rec rec;

	if (rv_scorer_shrink(rf->c.scorer) != NULL)
		return 0;
	if (read_one(rf, pos, &rec) < 0)
		return -1;
	rf->shape = rec;
	rf->shape.payload = NULL;
	if (rv_scorer_start(rf->c.scorer, &rec) < 0)
		return sample_err(rf, pos);
	return 0;
}

/*
 * Offer candidates order[lo..hi) to the scorer, in order.  What the
 * assistant looks at is read in one batch first: every decoded sample's
 * frame, and the encoded ones whose thumbnail was never made (a
 * thumbnail the cache has since forgotten is read alone).  A sample the
 * scorer cannot look at stops the run, as its partial would.
 */
static int
offer(struct rv_refurb *rf, uint32_t e, uint64_t lo, uint64_t hi)
{
	struct rv_scorer *sc = rf->c.scorer;
	struct rv_shrink *sh = rv_scorer_shrink(sc);
	int wants = rv_scorer_wants_pixels(sc);
	const struct rv_refsrc_item *src;
	const uint8_t *px;
	uint32_t h, w, c;
	struct rv_rec rec;
	uint64_t i, pos;
	size_t nl = 0, k;
	int rc;

	for (i = lo; i < hi; i++) {
		pos = rf->order[i];
		rf->need[i - lo] = (size_t)-1;
		if (wants && !rf->thumbed[pos]) {
			rf->need[i - lo] = nl;
			rf->loadpos[nl++] = pos;
		}
	}
	if (nl > 0 && rv_refsrc_load(rf->src, rf->loadpos, nl,
	    &rf->sbatch) < 0)
		return -1;
	for (i = lo; i < hi; i++) {
		pos = rf->order[i];
		src = rv_refsrc_item(rf->src, pos);
		k = rf->need[i - lo];
		px = NULL;
		h = w = c = 0;
		if (wants && k == (size_t)-1)
			px = rv_scorer_view_cached(sc, &rf->shape, src->id, &h,
			    &w, &c);
		if (wants && px == NULL) {
			rc = k != (size_t)-1 ?
			    rv_refsrc_decode(rf->srd, &rf->sbatch, k, &rec) :
			    read_one(rf, pos, &rec);
			if (rc < 0)
				return -1;
			if (rv_scorer_view(sc, &rec, &px, &h, &w, &c) != 0)
				return sample_err(rf, pos);
			rf->thumbed[pos] = rec.dtype != RV_DT_U8;
		}
		if (rv_shrink_offer(sh, src->id, e, src->label,
		    rf->due[pos] ? 0 : 1, px, h, w, c) < 0)
			return sample_err(rf, pos);
		rf->offered[i - lo] = pos;
	}
	return 0;
}

/* Plan a kept sample from its uses: a fresh partial when due. */
static void
plan_scored(struct rv_refurb *rf, struct item *it, const struct rv_keep *k)
{
	const struct rv_shrink_conf *cf = rv_scorer_conf(rf->c.scorer);
	uint64_t pos = it->pos;
	uint16_t base = RV_F_PARTIAL | (rf->c.final->n ? RV_F_FINAL : 0);

	it->fresh = rf->due[pos];
	if (it->fresh) {
		rf->quota[pos] = rf->gen[pos] == HELD_NONE ?
		    rf->sched.chunk[pos] + 1 : rf->c.reuse;
		rf->gen[pos] = rf->epoch;
		rf->used[pos] = 0;
	}
	rf->used[pos]++;
	it->refresh = rf->gen[pos];
	it->uses = rf->used[pos];
	it->keep = rf->used[pos] < rf->quota[pos];
	it->flags = base | RV_F_SCORED | (it->fresh ? 0 : RV_F_CACHED);
	it->score = k->score;
	it->weight = rv_refsrc_item(rf->src, pos)->weight;
	if (cf->reweight) {
		it->flags |= RV_F_REWEIGHTED;
		it->weight *= k->weight;
	}
}

/*
 * A scored epoch: the candidates dealt, then window j offered and
 * decided to keep samples (j B, (j+1) B] of the K the epoch keeps, with
 * its share of the due ones; the kept batch shuffled and run.
 */
static int
score_epoch(struct rv_refurb *rf, uint32_t e)
{
	struct rv_shrink *sh;
	uint64_t n = rf->n, B = rf->c.batch, pos, i, m = 0, kk;
	uint64_t K, kc = 0, oc = 0, kc1, oc1, mdone = 0, want, n0, lo, hi;
	size_t ks[RV_SHRINK_STRATA], nk, slot, j;
	struct rv_rng rg;
	struct item *it;

	for (pos = 0; pos < n; pos++) {
		rf->due[pos] = rf->gen[pos] == HELD_NONE ||
		    rf->used[pos] >= rf->quota[pos];
		m += rf->due[pos];
	}
	rv_sched_deal(&rf->sched, e, rf->due, rf->order);
	if (score_start(rf, rf->order[0]) < 0)
		return -1;
	sh = rv_scorer_shrink(rf->c.scorer);
	K = rv_shrink_keeps_all(sh, e) ? n : kept_rest(rf);
	for (j = 0; kc < K; j++) {
		kc1 = K - kc < B ? K : kc + B;
		oc1 = kc1 == K ? n : muldiv(kc1, n, K);
		rv_scorer_poll(rf->c.scorer);
		if (offer(rf, e, oc, oc1) < 0)
			return -1;
		/* the due ones' share, counted over the epoch so far */
		for (n0 = 0, i = oc; i < oc1; i++)
			n0 += rf->due[rf->order[i]];
		kk = kc1 - kc;
		want = muldiv(kc1, m, n);
		want = want > mdone ? want - mdone : 0;
		lo = kk > (oc1 - oc) - n0 ? kk - ((oc1 - oc) - n0) : 0;
		hi = n0 < kk ? n0 : kk;
		want = want < lo ? lo : want > hi ? hi : want;
		ks[0] = (size_t)want;
		ks[1] = (size_t)(kk - want);
		rv_shrink_decide_window_ks(sh, ks, rf->keeps);
		for (nk = 0, i = 0; i < oc1 - oc; i++)
			if (rf->keeps[i].keep) {
				rf->kept[nk] = i;
				mdone += rf->due[rf->offered[i]];
				nk++;
			}
		rv_rng_init(&rg, rf->c.seed, RV_STAGE_REFURB_ORDER,
		    REFURB_OP_BATCH, e, j);
		rv_rng_shuffle_u64(&rg, rf->kept, nk);
		for (i = 0; i < nk; i++) {
			size_t at = (size_t)rf->kept[i];

			pos = rf->offered[at];
			if (rv_par_add(rf->par, (size_t)rv_refsrc_item(rf->src,
			    pos)->len, &slot) < 0)
				return -1;
			it = &rf->items[slot];
			it->pos = pos;
			plan_scored(rf, it, &rf->keeps[at]);
			if (it->fresh)
				rf->st->misses++;
			else
				rf->st->hits++;
			rf->st->kept++;
		}
		kc = kc1;
		oc = oc1;
	}
	return 0;
}

/* ---------------------------------------------------------------- run */

void
rv_refurb_free(struct rv_refurb *rf)
{
	size_t i;

	if (!rf)
		return;
	rv_par_free(rf->par);
	if (rf->items)
		for (i = 0; i < rf->max; i++)
			rv_cache_entry_release(&rf->items[i].entry);
	free(rf->items);
	free(rf->hitpos);
	free(rf->misspos);
	free(rf->hitslot);
	free(rf->refs);
	free(rf->found);
	rv_refsrc_batch_release(&rf->batch);
	rv_cache_free(rf->cache);
	free(rf->order);
	free(rf->held);
	free(rf->gen);
	free(rf->used);
	free(rf->quota);
	free(rf->due);
	free(rf->thumbed);
	free(rf->offered);
	free(rf->keeps);
	free(rf->kept);
	free(rf->need);
	free(rf->loadpos);
	rv_refsrc_reader_free(rf->srd);
	rv_refsrc_batch_release(&rf->sbatch);
	rv_refsrc_batch_release(&rf->obatch);
	rv_sched_release(&rf->sched);
	free(rf);
}

struct rv_refurb *
rv_refurb_new(const struct rv_refurb_conf *conf, const struct rv_refsrc *src)
{
	struct rv_refurb *rf = xcalloc(1, sizeof(*rf));
	struct rv_cache_conf cc;
	struct rv_par_conf pc;
	size_t m;

	rf->c = *conf;
	rf->src = src;
	rf->n = rv_refsrc_count(src);
	rv_refsrc_batch_init(&rf->batch);
	rv_refsrc_batch_init(&rf->sbatch);
	rv_refsrc_batch_init(&rf->obatch);
	if (rv_sched_init(&rf->sched, conf->seed, rf->n, conf->reuse,
	    conf->batch) < 0) {
		rv_preferr("'%s'", rv_refsrc_name(src));
		goto fail;
	}
	memset(&cc, 0, sizeof(cc));
	cc.n = rf->n;
	cc.mem = conf->mem;
	cc.dir = conf->cache_dir;
	cc.level = RV_CACHE_LEVEL;
	if ((rf->cache = rv_cache_new(&cc)) == NULL)
		goto fail;
	rf->order = xreallocarray(NULL, (size_t)rf->n, sizeof(*rf->order));
	rf->held = xreallocarray(NULL, (size_t)rf->n, sizeof(*rf->held));
	memset(rf->held, 0xff, (size_t)rf->n * sizeof(*rf->held));

	memset(&pc, 0, sizeof(pc));
	pc.nthreads = conf->jobs > 0 ? conf->jobs : 1;
	pc.start = worker_start;
	pc.stop = worker_stop;
	pc.arg = rf;
	pc.item = refurb_item;
	pc.before = chunk_before;
	pc.each = chunk_each;
	pc.after = chunk_after;
	pc.ctx = rf;
	pc.prog = conf->prog;
	if ((rf->par = rv_par_new(&pc)) == NULL)
		goto fail;
	m = rf->max = rv_par_max(rf->par);
	rf->items = xcalloc(m, sizeof(*rf->items));
	rf->hitpos = xreallocarray(NULL, m, sizeof(*rf->hitpos));
	rf->misspos = xreallocarray(NULL, m, sizeof(*rf->misspos));
	rf->hitslot = xreallocarray(NULL, m, sizeof(*rf->hitslot));
	rf->refs = xreallocarray(NULL, m, sizeof(*rf->refs));
	rf->found = xmalloc(m);
	if (conf->scorer != NULL && score_new(rf) < 0)
		goto fail;
	return rf;
fail:
	rv_refurb_free(rf);
	return NULL;
}

/* The samples the epoch about to be written keeps (score_epoch's K): the
 * first one scored passes whole, but under autoassist. */
static uint64_t
kept_first(const struct rv_refurb *rf)
{
	if (rf->c.scorer == NULL || (rv_scorer_shrink(rf->c.scorer) == NULL &&
	    rv_shrink_conf_warms(rv_scorer_conf(rf->c.scorer))))
		return rf->n;
	return kept_rest(rf);
}

void
rv_refurb_meta_set(struct rv_meta *m, const struct rv_refurb_conf *c,
    const char *partial, uint32_t e, uint64_t n)
{
	rv_meta_set(m, "producer", "rv-refurbish " RV_VERSION_STRING);
	rv_meta_set(m, "refurbish.partial", partial);
	rv_meta_set(m, "refurbish.final", c->final->text);
	rv_meta_set_u64(m, "refurbish.reuse", c->reuse);
	rv_meta_set_u64(m, "refurbish.batch", c->batch);
	rv_meta_set_u64(m, "refurbish.seed", c->seed);
	rv_meta_set_u64(m, "refurbish.epochs", c->epochs);
	rv_meta_set_u64(m, "refurbish.epoch", e);
	/* what this output holds (rv-stream(5)): the input's epochs and
	 * counts are not its own */
	rv_meta_set_u64(m, "samples", n);
	if (c->written > 0)
		rv_meta_set_u64(m, "epochs", c->written);
	else
		rv_meta_set(m, "epochs", "");
	if (c->total > 0)
		rv_meta_set_u64(m, "total", c->total);
	else
		rv_meta_set(m, "total", "");
}

/* The epoch's metadata record: the input's, and what made this epoch. */
static int
put_meta(const struct rv_refurb *rf, struct rv_writer *w, uint32_t e,
    const struct rv_refurb_stats *st)
{
	struct rv_meta m;
	int rc;

	rv_meta_init(&m);
	rv_meta_merge(&m, rv_refsrc_meta(rf->src));
	rv_refurb_meta_set(&m, &rf->c, rf->c.partial->text, e, rf->n);
	if (rf->c.scorer == NULL) {
		rv_meta_set_u64(&m, "refurbish.misses", st->misses);
		rv_meta_set_u64(&m, "refurbish.hits", st->hits);
	} else {
		if (rv_score_meta_conf(&m, rv_scorer_conf(rf->c.scorer)) < 0) {
			rv_meta_release(&m);
			return -1;
		}
		/* each window keeps one batch: rv-batch -b B keeps them */
		rv_meta_set_u64(&m, "score.window_keep", rf->c.batch);
	}
	if (rv_meta_set_kept(&m, kept_first(rf), kept_rest(rf)) < 0) {
		rv_meta_release(&m);
		return -1;
	}
	rc = rv_meta_put(w, &m);
	rv_meta_release(&m);
	return rc;
}

/* Plan item it of epoch e from the schedule alone. */
static void
plan_item(const struct rv_refurb *rf, struct item *it)
{
	const struct rv_sched *sc = &rf->sched;
	uint32_t e = rf->epoch;
	uint16_t base = RV_F_PARTIAL | (rf->c.final->n ? RV_F_FINAL : 0);

	it->fresh = (unsigned char)rv_sched_fresh(sc, it->pos, e);
	it->refresh = rv_sched_refresh(sc, it->pos, e);
	it->uses = e - it->refresh + 1;
	it->flags = base | (it->fresh ? 0 : RV_F_CACHED);
	/* keep it only if the next epoch written serves it again */
	it->keep = rf->next != RV_REFURB_NONE &&
	    rv_sched_refresh(sc, it->pos, rf->next) == it->refresh;
	it->score = NAN;
	it->weight = rv_refsrc_item(rf->src, it->pos)->weight;
}

/* A scored epoch's counts, as metadata ahead of its end. */
static int
put_score_meta(const struct rv_refurb *rf, struct rv_writer *w, uint32_t e,
    const struct rv_refurb_stats *st)
{
	struct rv_meta m;
	int rc;

	rv_meta_init(&m);
	rv_meta_set_u64(&m, "refurbish.epoch", e);
	rv_meta_set_u64(&m, "refurbish.misses", st->misses);
	rv_meta_set_u64(&m, "refurbish.hits", st->hits);
	rc = rv_score_meta_epoch(&m, e, &st->score);
	if (rc == 0)
		rc = rv_meta_put(w, &m);
	rv_meta_release(&m);
	return rc;
}

int
rv_refurb_epoch(struct rv_refurb *rf, uint32_t e, uint32_t next,
    struct rv_writer *w, struct rv_refurb_stats *st)
{
	double t0 = rv_now(), c0 = rv_cpu_now();
	uint64_t k, preads = rf->batch.preads;
	struct rv_rec end;
	size_t slot;

	memset(st, 0, sizeof(*st));
	if (e >= RV_REFURB_NONE - 1 || (next != RV_REFURB_NONE && next <= e))
		return rv_seterr("refurbish: epoch %u then %u: out of order",
		    e, next);
	st->samples = rf->n;
	rf->epoch = e;
	rf->next = next;
	rf->w = w;
	rf->st = st;
	if (rf->c.scorer == NULL) {
		st->misses = rv_sched_misses(&rf->sched, e);
		st->hits = rf->n - st->misses;
		st->kept = rf->n;
	}
	if (put_meta(rf, w, e, st) < 0)
		return -1;
	if (rf->c.scorer != NULL) {
		if (score_epoch(rf, e) < 0)
			return -1;
	} else {
		rv_sched_order(&rf->sched, e, rf->order);
		for (k = 0; k < rf->n; k++) {
			/* what a chunk holds: at most the input frame */
			uint64_t len = rv_refsrc_item(rf->src,
			    rf->order[k])->len;

			if (rv_par_add(rf->par, (size_t)len, &slot) < 0)
				return -1;
			rf->items[slot].pos = rf->order[k];
			plan_item(rf, &rf->items[slot]);
		}
	}
	if (rv_par_flush(rf->par) < 0)
		return -1;
	if (rf->c.scorer != NULL) {
		struct rv_shrink *sh = rv_scorer_shrink(rf->c.scorer);

		rv_score_stats(sh, &st->score);
		rv_shrink_epoch_end(sh);
		if (put_score_meta(rf, w, e, st) < 0)
			return -1;
	}
	rv_rec_init(&end, RV_EPOCH_END);
	end.epoch = e;
	end.count = (uint32_t)st->kept;
	if (rv_writer_put(w, &end, NULL) < 0)
		return -1;
	st->preads = rf->batch.preads - preads;
	st->cpu = rv_cpu_now() - c0;
	st->wall = rv_now() - t0;
	return 0;
}

const struct rv_cache_stats *
rv_refurb_cache_stats(const struct rv_refurb *rf)
{
	return rv_cache_stats(rf->cache);
}

const char *
rv_refurb_cache_error(struct rv_refurb *rf)
{
	if (rf->cache_err != 1)
		return NULL;
	rf->cache_err = 2;
	return rf->cache_msg;
}
