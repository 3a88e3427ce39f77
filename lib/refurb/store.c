/*
 * Partials stored once (store.h): the writer runs the partial of the
 * samples an epoch makes fresh and stores them, raw or encoded; the
 * reader serves an epoch from the files of its refresh epochs, each
 * indexed as an input of rv-refurbish (refsrc.h) and read in one batch a
 * chunk, the final running on the workers (par.h) as in refurb.c.
 */
#include "refurb/store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/rng.h"
#include "base/xmem.h"
#include "codec/coder.h"
#include "refurb/sched.h"
#include "stream/meta.h"
#include "stream/par.h"

#define STORE_KIND	"partials"
/* What --from-partials' output says of itself: served from a store. */
#define STORE_SERVED	"served"

static const char *
format_name(int dtype)
{
	return dtype == RV_DT_JPEG ? "jpeg" : dtype == RV_DT_PNG ? "png" :
	    "raw";
}

int
rv_store_format(const char *s, int *dtype)
{
	if (strcmp(s, "raw") == 0) {
		*dtype = RV_DT_U8;
		return 0;
	}
	if (rv_encode_format(s, dtype) < 0)
		return rv_seterr("'%s': not a format (raw, jpeg or png)", s);
	return 0;
}

char *
rv_store_path(const char *pattern, uint32_t e)
{
	return xasprintf(pattern, (int)e);
}

void
rv_store_needs(uint32_t reuse, uint32_t e, uint32_t *lo, int *zero)
{
	/* chunk c is made again in epochs c+1, c+1+r, ...: the last r
	 * epochs up to e made one chunk each, and those not yet made again
	 * are epoch 0's */
	*lo = e >= reuse ? e - reuse + 1 : (e > 0 ? 1 : 0);
	*zero = e > 0 && e < reuse;
}

/* The -j workers of a writer or a reader, ctx theirs. */
static struct rv_par *
par_new(const struct rv_refurb_conf *c, rv_pool_start_fn start,
    rv_pool_stop_fn stop, rv_par_item_fn item, rv_par_chunk_fn before,
    rv_par_each_fn each, void *ctx)
{
	return rv_par_new(&(struct rv_par_conf){
		.nthreads = c->jobs > 0 ? c->jobs : 1,
		.start = start, .stop = stop, .arg = ctx,
		.item = item, .before = before, .each = each, .ctx = ctx,
		.prog = c->prog });
}

/* ---------------------------------------------------------------- write */

struct wworker {
	struct rv_coder k;
	struct rv_aug_ctx ctx;
	struct rv_encoder e;
	struct rv_buf out;
	struct rv_refsrc_reader *rd;
};

struct rv_store_writer {
	struct rv_store_conf c;
	const struct rv_refsrc *src;
	uint64_t n;
	struct rv_sched sched;
	char run[17];
	struct rv_par *par;
	uint64_t *pos;		/* the chunk's positions, rv_par_max */
	size_t max;
	struct rv_refsrc_batch batch;
	uint32_t epoch;
	struct rv_writer *w;
};

static void
wworker_stop(void *state)
{
	struct wworker *w = state;

	if (!w)
		return;
	rv_coder_release(&w->k);
	rv_aug_ctx_release(&w->ctx);
	rv_encoder_release(&w->e);
	rv_buf_release(&w->out);
	rv_refsrc_reader_free(w->rd);
	free(w);
}

static void *
wworker_start(void *arg)
{
	const struct rv_store_writer *sw = arg;
	struct wworker *w = xcalloc(1, sizeof(*w));
	struct rv_encode_conf ec = { sw->c.dtype, sw->c.quality,
	    sw->c.subsample };

	rv_aug_ctx_init(&w->ctx);
	w->rd = rv_refsrc_reader_new(sw->src);
	if (rv_coder_init(&w->k, sw->c.run.level, 0) < 0 ||
	    (sw->c.dtype != RV_DT_U8 && rv_encoder_init(&w->e, &ec) < 0)) {
		wworker_stop(w);
		return NULL;
	}
	return w;
}

/* One fresh sample: decode, partial, encode, frame. */
static int
store_item(void *state, size_t i, struct rv_par_slot *s, void *ctx)
{
	struct wworker *w = state;
	struct rv_store_writer *sw = ctx;
	const struct rv_refsrc_item *src = rv_refsrc_item(sw->src, sw->pos[i]);
	struct rv_rec rec, out, hdr;

	if (rv_refsrc_decode(w->rd, &sw->batch, i, &rec) < 0)
		return RV_PAR_FATAL;
	if (rv_refsrc_apply(w->rd, &w->k, &w->ctx, sw->c.run.partial, &rec,
	    sw->c.run.seed, RV_STAGE_PARTIAL, sw->epoch, src->id) < 0)
		goto bad;
	rv_refsrc_rec(&out, &w->k.img, src, RV_F_PARTIAL, sw->epoch,
	    src->weight, NAN, 0);
	if (sw->c.dtype == RV_DT_U8)
		return rv_enc_frame(w->k.enc, &out, w->k.img.data,
		    &s->frame) < 0 ? RV_PAR_FATAL : RV_PAR_OK;
	if (rv_encode_sample(&w->e, &w->k, &out, w->k.img.data, &hdr,
	    &w->out) < 0)
		goto bad;
	return rv_enc_frame(w->k.enc, &hdr, w->out.data, &s->frame) < 0 ?
	    RV_PAR_FATAL : RV_PAR_OK;
bad:
	rv_preferr("'%s': record %llu (id %llu)", rv_refsrc_name(sw->src),
	    (unsigned long long)src->recno, (unsigned long long)src->id);
	return RV_PAR_FATAL;
}

static int
store_before(void *ctx, const struct rv_par_slot *slots, size_t n)
{
	struct rv_store_writer *sw = ctx;

	return rv_refsrc_load(sw->src, sw->pos, n, &sw->batch);
}

static int
store_each(void *ctx, size_t i, const struct rv_par_slot *s)
{
	struct rv_store_writer *sw = ctx;

	if (s->status != RV_PAR_OK)
		return 0;
	return rv_writer_put_frames(sw->w, s->frame.data, s->frame.len, 1);
}

/* The run key (store.h): what a partial depends on, the input's samples
 * included. */
static void
run_key(struct rv_store_writer *sw)
{
	XXH64_state_t *h = XXH64_createState();
	const char *text = sw->c.run.partial->text;
	uint64_t v[4], pos;

	if (h == NULL)
		rv_die(1, "out of memory");
	XXH64_reset(h, 0);
	XXH64_update(h, "rv-store 1", 10);
	v[0] = sw->n;
	v[1] = sw->c.run.seed;
	v[2] = sw->c.run.reuse;
	v[3] = (uint64_t)sw->c.run.partial->exact;
	XXH64_update(h, v, sizeof(v));
	XXH64_update(h, text, strlen(text) + 1);
	for (pos = 0; pos < sw->n; pos++) {
		const struct rv_refsrc_item *it = rv_refsrc_item(sw->src, pos);

		v[0] = it->id;
		v[1] = (uint64_t)(uint32_t)it->label;
		XXH64_update(h, v, 2 * sizeof(v[0]));
	}
	snprintf(sw->run, sizeof(sw->run), "%016llx",
	    (unsigned long long)XXH64_digest(h));
	XXH64_freeState(h);
}

void
rv_store_writer_free(struct rv_store_writer *sw)
{
	if (!sw)
		return;
	rv_par_free(sw->par);
	free(sw->pos);
	rv_refsrc_batch_release(&sw->batch);
	rv_sched_release(&sw->sched);
	free(sw);
}

struct rv_store_writer *
rv_store_writer_new(const struct rv_store_conf *conf,
    const struct rv_refsrc *src)
{
	struct rv_store_writer *sw = xcalloc(1, sizeof(*sw));

	sw->c = *conf;
	sw->src = src;
	sw->n = rv_refsrc_count(src);
	rv_refsrc_batch_init(&sw->batch);
	if (rv_sched_init(&sw->sched, conf->run.seed, sw->n, conf->run.reuse, 1) < 0) {
		rv_preferr("'%s'", rv_refsrc_name(src));
		goto fail;
	}
	run_key(sw);
	sw->par = par_new(&conf->run, wworker_start, wworker_stop, store_item,
	    store_before, store_each, sw);
	if (sw->par == NULL)
		goto fail;
	sw->max = rv_par_max(sw->par);
	sw->pos = xreallocarray(NULL, sw->max, sizeof(*sw->pos));
	return sw;
fail:
	rv_store_writer_free(sw);
	return NULL;
}

uint64_t
rv_store_writer_count(const struct rv_store_writer *sw, uint32_t e)
{
	return rv_sched_misses(&sw->sched, e);
}

static int
put_store_meta(const struct rv_store_writer *sw, struct rv_writer *w,
    uint32_t e, uint64_t count)
{
	struct rv_meta m;
	int rc = 0;

	rv_meta_init(&m);
	rv_meta_merge(&m, rv_refsrc_meta(sw->src));
	rv_meta_set(&m, "producer", "rv-refurbish " RV_VERSION_STRING);
	rv_meta_set(&m, "store.kind", STORE_KIND);
	rv_meta_set_u64(&m, "store.epoch", e);
	rv_meta_set_u64(&m, "store.samples", sw->n);
	rv_meta_set_u64(&m, "store.seed", sw->c.run.seed);
	rv_meta_set_u64(&m, "store.reuse", sw->c.run.reuse);
	rv_meta_set_u64(&m, "store.epochs", sw->c.run.epochs);
	rv_meta_set(&m, "store.partial", sw->c.run.partial->text);
	rv_meta_set(&m, "store.format", format_name(sw->c.dtype));
	if (sw->c.dtype == RV_DT_JPEG) {
		rv_meta_set_u64(&m, "store.quality", (uint64_t)sw->c.quality);
		rv_meta_set(&m, "store.subsample",
		    sw->c.subsample == 444 ? "444" : "420");
	} else {
		rv_meta_set(&m, "store.quality", "");
		rv_meta_set(&m, "store.subsample", "");
	}
	rv_meta_set(&m, "store.run", sw->run);
	/* what this file holds, as a stream */
	rv_meta_set_u64(&m, "samples", count);
	rv_meta_set_u64(&m, "epochs", 1);
	rv_meta_set_u64(&m, "total", count);
	if (rv_meta_set_kept(&m, count, count) < 0)
		rc = -1;
	if (rc == 0)
		rc = rv_meta_put(w, &m);
	rv_meta_release(&m);
	return rc;
}

int
rv_store_write(struct rv_store_writer *sw, uint32_t e, struct rv_writer *w,
    struct rv_refurb_stats *st)
{
	double t0 = rv_now(), c0 = rv_cpu_now();
	uint64_t pos, count = rv_sched_misses(&sw->sched, e);
	uint64_t preads = sw->batch.preads;
	struct rv_rec end;
	size_t slot;

	memset(st, 0, sizeof(*st));
	sw->epoch = e;
	sw->w = w;
	if (put_store_meta(sw, w, e, count) < 0)
		return -1;
	for (pos = 0; pos < sw->n; pos++) {
		if (!rv_sched_fresh(&sw->sched, pos, e))
			continue;
		if (rv_par_add(sw->par, (size_t)rv_refsrc_item(sw->src,
		    pos)->len, &slot) < 0)
			return -1;
		sw->pos[slot] = pos;
	}
	if (rv_par_flush(sw->par) < 0)
		return -1;
	rv_rec_init(&end, RV_EPOCH_END);
	end.epoch = e;
	end.count = (uint32_t)count;
	if (rv_writer_put(w, &end, NULL) < 0)
		return -1;
	st->samples = st->kept = st->misses = st->partials = count;
	st->preads = sw->batch.preads - preads;
	st->cpu = rv_cpu_now() - c0;
	st->wall = rv_now() - t0;
	return 0;
}

/* ---------------------------------------------------------------- read */

/* A file of the store, open while the epochs asked for read it. */
struct sfile {
	uint32_t epoch;
	char *path;
	struct rv_refsrc *src;
	struct rv_refsrc_batch batch;
	uint64_t *ranks;	/* the chunk's requests, rv_par_max */
	size_t nreq;
};

struct ritem {
	uint64_t pos;
	uint32_t refresh;
	size_t slot;		/* its file's */
	size_t req;		/* its request in the file's batch */
};

struct rworker {
	struct rv_coder k;
	struct rv_aug_ctx ctx;
	size_t nslots;
	struct rv_refsrc_reader **rd;	/* a reader a file slot */
	const struct rv_refsrc **rdsrc;	/* the file it reads */
};

struct rv_store {
	struct rv_store_conf c;
	char *pattern;
	struct rv_store_info info;
	char *ref;		/* the file info came from, for messages */
	uint64_t n;
	struct rv_sched sched;
	uint32_t *rank;		/* pos's record in its refresh epoch's file */
	uint64_t *order;
	size_t nslots;		/* r + 1: epochs mod r, and epoch 0 */
	struct sfile **files;
	size_t *touched;	/* the slots a chunk reads */
	struct rv_par *par;
	struct ritem *items;
	size_t max;
	uint32_t epoch;		/* the epoch being (or last) served */
	int served;		/* an epoch was asked for */
	struct rv_writer *w;
	uint64_t preads;
	uint64_t skipped;	/* this epoch's */
};

static size_t
slot_of(const struct rv_store *s, uint32_t f)
{
	return f == 0 ? s->nslots - 1 : f % s->c.run.reuse;
}

/* pos's record in epoch f's file. */
static uint64_t
rank_in(const struct rv_store *s, uint64_t pos, uint32_t f)
{
	return f == 0 ? pos : s->rank[pos];
}

static void
sfile_free(struct sfile *f)
{
	if (!f)
		return;
	free(f->path);
	rv_refsrc_free(f->src);
	rv_refsrc_batch_release(&f->batch);
	free(f->ranks);
	free(f);
}

static void
rworker_stop(void *state)
{
	struct rworker *w = state;
	size_t i;

	if (!w)
		return;
	rv_coder_release(&w->k);
	rv_aug_ctx_release(&w->ctx);
	for (i = 0; i < w->nslots; i++)
		rv_refsrc_reader_free(w->rd[i]);
	free(w->rd);
	free(w->rdsrc);
	free(w);
}

static void *
rworker_start(void *arg)
{
	const struct rv_store *s = arg;
	struct rworker *w = xcalloc(1, sizeof(*w));

	rv_aug_ctx_init(&w->ctx);
	w->nslots = s->nslots;
	w->rd = xcalloc(w->nslots, sizeof(*w->rd));
	w->rdsrc = xcalloc(w->nslots, sizeof(*w->rdsrc));
	if (rv_coder_init(&w->k, s->c.run.level, s->c.strict) < 0) {
		rworker_stop(w);
		return NULL;
	}
	return w;
}

/* This worker's reader of the file in slot k (made again when the slot
 * holds another file than last time). */
static struct rv_refsrc_reader *
rworker_reader(struct rworker *w, size_t k, const struct rv_refsrc *src)
{
	if (w->rdsrc[k] != src) {
		rv_refsrc_reader_free(w->rd[k]);
		w->rd[k] = rv_refsrc_reader_new(src);
		w->rdsrc[k] = src;
	}
	return w->rd[k];
}

/* One sample: its stored partial, the final, the frame. */
static int
serve_item(void *state, size_t i, struct rv_par_slot *slot, void *ctx)
{
	struct rworker *w = state;
	struct rv_store *s = ctx;
	struct ritem *it = &s->items[i];
	struct sfile *f = s->files[it->slot];
	const struct rv_refsrc_item *src = rv_refsrc_item(f->src,
	    rank_in(s, it->pos, it->refresh));
	struct rv_refsrc_reader *rd = rworker_reader(w, it->slot, f->src);
	uint16_t flags = RV_F_PARTIAL | (s->c.run.final->n ? RV_F_FINAL : 0);
	struct rv_rec rec, out;

	if (rv_refsrc_decode(rd, &f->batch, it->req, &rec) < 0)
		return RV_PAR_FATAL;
	if (rv_refsrc_apply(rd, &w->k, &w->ctx, s->c.run.final, &rec, s->c.run.seed,
	    RV_STAGE_FINAL, s->epoch, src->id) < 0) {
		rv_preferr("'%s': record %llu (id %llu)", f->path,
		    (unsigned long long)src->recno,
		    (unsigned long long)src->id);
		return s->c.strict ? RV_PAR_FATAL : RV_PAR_SKIP;
	}
	if (it->refresh != s->epoch)
		flags |= RV_F_CACHED;
	rv_refsrc_rec(&out, &w->k.img, src, flags, s->epoch, src->weight, NAN,
	    s->epoch - it->refresh + 1);
	return rv_enc_frame(w->k.enc, &out, w->k.img.data, &slot->frame) < 0 ?
	    RV_PAR_FATAL : RV_PAR_OK;
}

/* Each file's requests of the chunk, read in one batch a file. */
static int
serve_before(void *ctx, const struct rv_par_slot *slots, size_t n)
{
	struct rv_store *s = ctx;
	size_t i, nt = 0;

	for (i = 0; i < n; i++) {
		struct ritem *it = &s->items[i];
		struct sfile *f = s->files[it->slot];

		if (f->nreq == 0)
			s->touched[nt++] = it->slot;
		it->req = f->nreq;
		f->ranks[f->nreq++] = rank_in(s, it->pos, it->refresh);
	}
	for (i = 0; i < nt; i++) {
		struct sfile *f = s->files[s->touched[i]];
		uint64_t before = f->batch.preads;
		int rc = rv_refsrc_load(f->src, f->ranks, f->nreq, &f->batch);

		s->preads += f->batch.preads - before;
		f->nreq = 0;
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int
serve_each(void *ctx, size_t i, const struct rv_par_slot *slot)
{
	struct rv_store *s = ctx;

	if (slot->status == RV_PAR_SKIP) {
		rv_warn("%s (skipped)", slot->msg);
		s->skipped++;
		return 0;
	}
	if (slot->status != RV_PAR_OK)
		return 0;
	return rv_writer_put_frames(s->w, slot->frame.data, slot->frame.len,
	    1);
}

void
rv_store_free(struct rv_store *s)
{
	size_t i;

	if (!s)
		return;
	rv_par_free(s->par);
	if (s->files)
		for (i = 0; i < s->nslots; i++)
			sfile_free(s->files[i]);
	free(s->files);
	free(s->touched);
	free(s->items);
	free(s->rank);
	free(s->order);
	free(s->pattern);
	free(s->ref);
	rv_sched_release(&s->sched);
	free(s);
}

/* The info of a store file's metadata m (path: for messages). */
static int
info_of(const struct rv_meta *m, const char *path, uint32_t e,
    struct rv_store_info *info)
{
	const char *kind = rv_meta_get(m, "store.kind");
	const char *fmt = rv_meta_get(m, "store.format");
	const char *run = rv_meta_get(m, "store.run");
	uint64_t v[4];
	int rc = 1;

	if (kind == NULL || strcmp(kind, STORE_KIND) != 0)
		return rv_seterr("'%s': not partials of rv-refurbish "
		    "--partials-out (no store.kind=%s)", path, STORE_KIND);
	memset(info, 0, sizeof(*info));
	if (rc == 1)
		rc = rv_meta_u64(m, "store.epoch", 0, UINT32_MAX - 2, &v[0]);
	if (rc == 1)
		rc = rv_meta_u64(m, "store.samples", 1, UINT64_MAX, &v[1]);
	if (rc == 1)
		rc = rv_meta_u64(m, "store.seed", 0, UINT64_MAX, &info->seed);
	if (rc == 1)
		rc = rv_meta_u64(m, "store.reuse", 1, UINT32_MAX, &v[2]);
	if (rc == 1)
		rc = rv_meta_u64(m, "store.epochs", 1, UINT32_MAX, &v[3]);
	if (rc == 0)
		return rv_seterr("'%s': a store's metadata lacks a key "
		    "(store.epoch, .samples, .seed, .reuse, .epochs)", path);
	if (rc < 0)
		return rv_preferr("'%s'", path);
	if (fmt == NULL || run == NULL || strlen(run) != 16)
		return rv_seterr("'%s': a store's metadata lacks store.format "
		    "or store.run", path);
	info->epoch = (uint32_t)v[0];
	info->samples = v[1];
	info->reuse = (uint32_t)v[2];
	info->epochs = (uint32_t)v[3];
	if (info->reuse > info->samples)
		return rv_seterr("'%s': store.reuse %u is more than its %llu "
		    "samples", path, info->reuse,
		    (unsigned long long)info->samples);
	strcpy(info->run, run);
	if (info->epoch != e)
		return rv_seterr("'%s': partials of epoch %u, not %u: the "
		    "store's files were renamed or mixed", path, info->epoch,
		    e);
	return 0;
}

int
rv_store_peek(const char *pattern, uint32_t e, struct rv_store_info *info)
{
	char *path = rv_store_path(pattern, e);
	struct rv_reader *r = NULL;
	struct rv_meta m;
	struct rv_rec rec;
	int rc = -1, got;

	rv_meta_init(&m);
	if ((r = rv_reader_open(path)) == NULL)
		goto out;
	/* the metadata records before the first sample */
	while ((got = rv_reader_next(r, &rec)) == 1 && rec.kind == RV_META)
		if (rv_meta_parse(&m, rec.payload,
		    (size_t)rec.payload_len) < 0) {
			rv_preferr("'%s': record %llu", path,
			    (unsigned long long)rv_reader_records(r) - 1);
			goto out;
		}
	if (got < 0)
		goto out;
	rc = info_of(&m, path, e, info);
out:
	rv_reader_close(r);
	rv_meta_release(&m);
	free(path);
	return rc;
}

/* 1 with rv_errmsg() set if epoch f's file, which epoch e reads, is not
 * there. */
static int
missing(const char *pattern, uint32_t f, uint32_t e)
{
	char *path = rv_store_path(pattern, f);
	struct stat sb;
	int rc = 0;

	if (stat(path, &sb) < 0) {
		rv_seterr("'%s': missing: epoch %u serves the partials epoch "
		    "%u made (rv-refurbish --partials-out ... --epoch-range "
		    "%u-%u)", path, e, f, f, f);
		rc = 1;
	}
	free(path);
	return rc;
}

struct rv_store *
rv_store_open(const char *pattern, const struct rv_store_conf *conf,
    const struct rv_store_info *info, const uint32_t *epochs, size_t n)
{
	struct rv_store *s = xcalloc(1, sizeof(*s));
	uint64_t *seen, pos;
	uint32_t lo, f;
	size_t i;
	int zero;

	s->c = *conf;
	if (s->c.run.total == 0)
		s->c.run.total = info->samples * conf->run.epochs;
	s->pattern = xstrdup(pattern);
	s->info = *info;
	s->n = info->samples;
	s->ref = rv_store_path(pattern, info->epoch);
	if (conf->run.seed != info->seed) {
		rv_seterr("'%s': partials of --seed %llu; asked for --seed "
		    "%llu", s->ref, (unsigned long long)info->seed,
		    (unsigned long long)conf->run.seed);
		goto fail;
	}
	if (conf->run.reuse != info->reuse) {
		rv_seterr("'%s': partials of --reuse %u; asked for --reuse %u",
		    s->ref, info->reuse, conf->run.reuse);
		goto fail;
	}
	if (rv_sched_init(&s->sched, conf->run.seed, s->n, conf->run.reuse,
	    conf->run.batch) < 0) {
		rv_preferr("'%s'", s->ref);
		goto fail;
	}
	/* every file the epochs read, there before anything is written */
	for (i = 0; i < n; i++) {
		rv_store_needs(conf->run.reuse, epochs[i], &lo, &zero);
		if (zero && missing(pattern, 0, epochs[i]))
			goto fail;
		for (f = lo; f <= epochs[i]; f++)
			if (missing(pattern, f, epochs[i]))
				goto fail;
	}
	/* rank: a position's record in its chunk's files (positions in
	 * order); epoch 0's holds them all (record pos) */
	s->rank = xreallocarray(NULL, (size_t)s->n, sizeof(*s->rank));
	seen = xcalloc(conf->run.reuse, sizeof(*seen));
	for (pos = 0; pos < s->n; pos++)
		s->rank[pos] = (uint32_t)seen[s->sched.chunk[pos]]++;
	free(seen);
	s->order = xreallocarray(NULL, (size_t)s->n, sizeof(*s->order));
	s->nslots = (size_t)conf->run.reuse + 1;
	s->files = xcalloc(s->nslots, sizeof(*s->files));
	s->touched = xreallocarray(NULL, s->nslots, sizeof(*s->touched));

	s->par = par_new(&conf->run, rworker_start, rworker_stop, serve_item,
	    serve_before, serve_each, s);
	if (s->par == NULL)
		goto fail;
	s->max = rv_par_max(s->par);
	s->items = xcalloc(s->max, sizeof(*s->items));
	return s;
fail:
	rv_store_free(s);
	return NULL;
}

/* Open epoch f's file into its slot and check it is the one expected. */
static int
open_file(struct rv_store *s, uint32_t f)
{
	size_t k = slot_of(s, f);
	struct sfile *sf;
	struct rv_store_info in;
	uint64_t want = rv_sched_misses(&s->sched, f), got;

	if (s->files[k] != NULL && s->files[k]->epoch == f)
		return 0;
	sfile_free(s->files[k]);
	s->files[k] = NULL;
	sf = xcalloc(1, sizeof(*sf));
	sf->epoch = f;
	sf->path = rv_store_path(s->pattern, f);
	rv_refsrc_batch_init(&sf->batch);
	sf->ranks = xreallocarray(NULL, s->max, sizeof(*sf->ranks));
	if ((sf->src = rv_refsrc_open(sf->path, NULL)) == NULL)
		goto fail;
	if (info_of(rv_refsrc_meta(sf->src), sf->path, f, &in) < 0)
		goto fail;
	if (strcmp(in.run, s->info.run) != 0) {
		rv_seterr("'%s': partials of another run than '%s' (another "
		    "input, --partial, --seed or --reuse)", sf->path, s->ref);
		goto fail;
	}
	got = rv_refsrc_count(sf->src);
	if (got != want) {
		rv_seterr("'%s': holds %llu partials; epoch %u made %llu: "
		    "the file is %s", sf->path, (unsigned long long)got, f,
		    (unsigned long long)want, got < want ? "cut short" :
		    "not this run's");
		goto fail;
	}
	s->files[k] = sf;
	return 0;
fail:
	sfile_free(sf);
	return -1;
}

/*
 * Close the files e does not read, open those it does.  Epochs come in
 * increasing order, so a file e no longer reads is read by no later one
 * (the window of files only moves forward).
 */
static int
open_files(struct rv_store *s, uint32_t e)
{
	uint32_t lo, f;
	int zero;
	size_t k;

	rv_store_needs(s->c.run.reuse, e, &lo, &zero);
	for (k = 0; k < s->nslots; k++) {
		struct sfile *sf = s->files[k];

		if (sf == NULL)
			continue;
		f = sf->epoch;
		if (!((f >= lo && f <= e) || (f == 0 && zero))) {
			sfile_free(sf);
			s->files[k] = NULL;
		}
	}
	if (zero && open_file(s, 0) < 0)
		return -1;
	for (f = lo; f <= e; f++)
		if (open_file(s, f) < 0)
			return -1;
	return 0;
}

/* The epoch's metadata: its newest file's, as rv_refurb_epoch's. */
static int
put_serve_meta(const struct rv_store *s, struct rv_writer *w, uint32_t e,
    const struct rv_refurb_stats *st)
{
	const struct rv_meta *fm = rv_refsrc_meta(s->files[slot_of(s,
	    e)]->src);
	const char *partial = rv_meta_get(fm, "store.partial");
	struct rv_meta m;
	int rc;

	rv_meta_init(&m);
	rv_meta_merge(&m, fm);
	rv_refurb_meta_set(&m, &s->c.run, partial ? partial : "", e, s->n);
	rv_meta_set(&m, "store.kind", STORE_SERVED);
	rv_meta_set(&m, "store.epoch", "");
	rv_meta_set_u64(&m, "refurbish.misses", st->misses);
	rv_meta_set_u64(&m, "refurbish.hits", st->hits);
	rc = rv_meta_set_kept(&m, s->n, s->n);
	if (rc == 0)
		rc = rv_meta_put(w, &m);
	rv_meta_release(&m);
	return rc;
}

int
rv_store_epoch(struct rv_store *s, uint32_t e, struct rv_writer *w,
    struct rv_refurb_stats *st)
{
	double t0 = rv_now(), c0 = rv_cpu_now();
	uint64_t k, preads = s->preads;
	struct rv_rec end;
	size_t slot;

	memset(st, 0, sizeof(*st));
	if (e >= RV_REFURB_NONE - 1 || (s->served && e <= s->epoch))
		return rv_seterr("refurbish: epoch %u after %u: out of order",
		    e, s->epoch);
	if (open_files(s, e) < 0)
		return -1;
	s->epoch = e;
	s->served = 1;
	s->w = w;
	s->skipped = 0;
	st->samples = st->kept = s->n;
	st->misses = rv_sched_misses(&s->sched, e);
	st->hits = s->n - st->misses;
	if (put_serve_meta(s, w, e, st) < 0)
		return -1;
	rv_sched_order(&s->sched, e, s->order);
	for (k = 0; k < s->n; k++) {
		uint64_t pos = s->order[k];
		uint32_t f = rv_sched_refresh(&s->sched, pos, e);
		size_t fs = slot_of(s, f);
		struct ritem *it;

		if (rv_par_add(s->par, (size_t)rv_refsrc_item(s->files[fs]->src,
		    rank_in(s, pos, f))->len, &slot) < 0)
			return -1;
		it = &s->items[slot];
		it->pos = pos;
		it->refresh = f;
		it->slot = fs;
	}
	if (rv_par_flush(s->par) < 0)
		return -1;
	st->skipped = s->skipped;
	st->kept = s->n - s->skipped;
	rv_rec_init(&end, RV_EPOCH_END);
	end.epoch = e;
	end.count = (uint32_t)st->kept;
	if (rv_writer_put(w, &end, NULL) < 0)
		return -1;
	st->preads = s->preads - preads;
	st->cpu = rv_cpu_now() - c0;
	st->wall = rv_now() - t0;
	return 0;
}
