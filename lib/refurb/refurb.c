/*
 * The epoch loop of rv-refurbish (refurb.h): per chunk of the epoch's
 * order, cache lookups and one batched read of the misses' input on the
 * main thread, the partial and final augmentations on the workers, then
 * frames written and new partials cached in order.  A table of the refresh
 * epoch each cached entry was made for keeps a stale entry (an epoch
 * skipped by --resume) from ever being served.
 */
#include "refurb/refurb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/rng.h"
#include "base/xmem.h"
#include "codec/codec.h"
#include "codec/coder.h"
#include "refurb/sched.h"
#include "stream/meta.h"
#include "stream/par.h"

#define HELD_NONE	UINT32_MAX

/* One item of a chunk, in par slot order. */
struct item {
	uint64_t pos;
	uint32_t refresh;	/* epoch whose partial is served */
	uint32_t uses;
	uint16_t flags;
	unsigned char compute;	/* run the partial (else: from the cache) */
	unsigned char put;	/* pack the partial for the cache */
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

/*
 * The input sample's partial into w->k.img: a decoded record's buffer is
 * taken as the image's (no copy, so a big sample is held once, not
 * twice), then the partial ops; an encoded one is decoded with a leading
 * crop fused (rv_spec_decode_apply, rv-augment(1) explains it).
 */
static int
compute_partial(struct worker *w, const struct rv_refurb *rf,
    struct rv_rec *r, uint32_t refresh, uint64_t id)
{
	if (r->dtype == RV_DT_U8) {
		struct rv_buf b = { w->k.img.data, 0, w->k.img.cap };

		rv_refsrc_take(w->rd, r, &b);
		w->k.img.data = b.data;
		w->k.img.cap = b.cap;
		w->k.img.h = r->height;
		w->k.img.w = r->width;
		w->k.img.c = r->channels;
		return rv_spec_apply(rf->c.partial, &w->k.img, &w->ctx,
		    rf->c.seed, RV_STAGE_PARTIAL, refresh, id);
	}
	return rv_spec_decode_apply(rf->c.partial, w->k.codec, r, r->payload,
	    (size_t)r->payload_len, &w->k.img, &w->ctx, rf->c.seed,
	    RV_STAGE_PARTIAL, refresh, id) < 0 ? -1 : 0;
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
		if (compute_partial(w, rf, &rec, it->refresh, src->id) < 0)
			goto bad;
		if (it->put && rv_cache_pack(w->cs, &w->k.img, &it->entry) < 0)
			goto bad;
	}
	if (rv_spec_apply(rf->c.final, &w->k.img, &w->ctx, rf->c.seed,
	    RV_STAGE_FINAL, rf->epoch, src->id) < 0)
		goto bad;
	rv_rec_init(&out, RV_SAMPLE);
	out.dtype = RV_DT_U8;
	out.flags = it->flags;
	out.epoch = rf->epoch;
	out.id = src->id;
	out.label = src->label;
	out.weight = src->weight;
	out.uses = it->uses;
	out.height = w->k.img.h;
	out.width = w->k.img.w;
	out.channels = w->k.img.c;
	out.payload_len = (uint64_t)w->k.img.h * w->k.img.w * w->k.img.c;
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
	const struct rv_sched *sc = &rf->sched;
	uint32_t e = rf->epoch;
	uint16_t base = RV_F_PARTIAL | (rf->c.final->n ? RV_F_FINAL : 0);
	size_t i, nh = 0, nm = 0;

	for (i = 0; i < n; i++) {
		struct item *it = &rf->items[i];
		int fresh = rv_sched_fresh(sc, it->pos, e);

		it->refresh = rv_sched_refresh(sc, it->pos, e);
		it->uses = e - it->refresh + 1;
		it->flags = base | (fresh ? 0 : RV_F_CACHED);
		it->compute = 1;
		if (!fresh && rf->held[it->pos] == it->refresh) {
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
		/* keep it only if the next epoch written serves it again */
		it->put = rf->next != RV_REFURB_NONE &&
		    rv_sched_refresh(sc, it->pos, rf->next) == it->refresh;
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
	return rf;
fail:
	rv_refurb_free(rf);
	return NULL;
}

static double
cpu_now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void
set_u64(struct rv_meta *m, const char *key, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	rv_meta_set(m, key, buf);
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
	rv_meta_set(&m, "producer", "rv-refurbish " RV_VERSION_STRING);
	rv_meta_set(&m, "refurbish.partial", rf->c.partial->text);
	rv_meta_set(&m, "refurbish.final", rf->c.final->text);
	set_u64(&m, "refurbish.reuse", rf->c.reuse);
	set_u64(&m, "refurbish.batch", rf->c.batch);
	set_u64(&m, "refurbish.seed", rf->c.seed);
	set_u64(&m, "refurbish.epochs", rf->c.epochs);
	set_u64(&m, "refurbish.epoch", e);
	set_u64(&m, "refurbish.misses", st->misses);
	set_u64(&m, "refurbish.hits", st->hits);
	rc = rv_meta_put(w, &m);
	rv_meta_release(&m);
	return rc;
}

int
rv_refurb_epoch(struct rv_refurb *rf, uint32_t e, uint32_t next,
    struct rv_writer *w, struct rv_refurb_stats *st)
{
	double t0 = rv_now(), c0 = cpu_now();
	uint64_t k, preads = rf->batch.preads;
	struct rv_rec end;
	size_t slot;

	memset(st, 0, sizeof(*st));
	if (e >= RV_REFURB_NONE - 1 || (next != RV_REFURB_NONE && next <= e))
		return rv_seterr("refurbish: epoch %u then %u: out of order",
		    e, next);
	st->samples = rf->n;
	st->misses = rv_sched_misses(&rf->sched, e);
	st->hits = rf->n - st->misses;
	rf->epoch = e;
	rf->next = next;
	rf->w = w;
	rf->st = st;
	if (put_meta(rf, w, e, st) < 0)
		return -1;
	rv_sched_order(&rf->sched, e, rf->order);
	for (k = 0; k < rf->n; k++) {
		/* what a chunk holds: at most the item's input frame */
		uint64_t len = rv_refsrc_item(rf->src, rf->order[k])->len;

		if (rv_par_add(rf->par, (size_t)len, &slot) < 0)
			return -1;
		rf->items[slot].pos = rf->order[k];
	}
	if (rv_par_flush(rf->par) < 0)
		return -1;
	rv_rec_init(&end, RV_EPOCH_END);
	end.epoch = e;
	end.count = (uint32_t)rf->n;
	if (rv_writer_put(w, &end, NULL) < 0)
		return -1;
	st->preads = rf->batch.preads - preads;
	st->cpu = cpu_now() - c0;
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
