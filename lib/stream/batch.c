/*
 * Collation into batch records.  The batch is built in place in one buffer
 * sized for N samples: pixels go straight to their final offset, and the
 * ids, labels and weights are written just before the pixels when the
 * batch is emitted, so a short batch needs no move and no allocation.
 */
#include "stream/batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/rng.h"
#include "base/xmem.h"
#include "stream/stream.h"

/* What travels with a sample besides its pixels. */
struct held {
	uint64_t id;
	int32_t label;
	float weight;
	uint16_t flags;
};

struct rv_batcher {
	struct rv_batch_conf conf;
	rv_batch_emit_fn emit;
	void *ctx;
	int failed;

	int shaped;		/* the first sample has fixed the shape */
	uint32_t h, w, c;
	size_t slen;		/* bytes of one sample's pixels */

	/* the batch being filled: n samples, their pixels at buf + 16 N */
	unsigned char *buf;
	struct held *bm;	/* N */
	uint32_t n;
	uint16_t flags;		/* OR of the members' flags */

	/* shuffle buffer: slots idx[0..m) are full, idx[m..K) free */
	unsigned char *spx;	/* K * slen */
	struct held *sm;	/* K */
	uint32_t *idx;		/* K */
	uint32_t m;

	int in_epoch;		/* samples of the current epoch were added */
	uint32_t epoch;
	uint64_t draws;		/* shuffle draws in this epoch */

	struct rv_batch_stats st;
};

void
rv_batch_conf_init(struct rv_batch_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->size = RV_BATCH_DEFAULT;
}

struct rv_batcher *
rv_batcher_new(const struct rv_batch_conf *conf, rv_batch_emit_fn emit,
    void *ctx)
{
	struct rv_batcher *b;

	if (conf->size == 0) {
		rv_seterr("batch size must be at least 1");
		return NULL;
	}
	b = xcalloc(1, sizeof(*b));
	b->conf = *conf;
	if (b->conf.max_payload == 0)
		b->conf.max_payload = rv_stream_max_payload();
	b->emit = emit;
	b->ctx = ctx;
	return b;
}

void
rv_batcher_free(struct rv_batcher *b)
{
	if (!b)
		return;
	free(b->buf);
	free(b->bm);
	free(b->spx);
	free(b->sm);
	free(b->idx);
	free(b);
}

uint64_t
rv_batcher_held(const struct rv_batcher *b)
{
	return (uint64_t)b->m + b->n;
}

const struct rv_batch_stats *
rv_batcher_stats(const struct rv_batcher *b)
{
	return &b->st;
}

static int
fail(struct rv_batcher *b)
{
	b->failed = 1;
	return -1;
}

/* Fix the shape from the first sample and make the buffers, once. */
static int
set_shape(struct rv_batcher *b, const struct rv_rec *r, uint64_t id)
{
	uint64_t n = b->conf.size, k = b->conf.shuffle, s, need;

	s = (uint64_t)r->height * r->width * r->channels;
	if (b->conf.max_payload / n < 16 ||
	    s > b->conf.max_payload / n - 16)
		return rv_seterr("sample %llu: a batch of %llu %ux%ux%u "
		    "samples is over the %llu-byte record limit",
		    (unsigned long long)id, (unsigned long long)n,
		    r->height, r->width, r->channels,
		    (unsigned long long)b->conf.max_payload);
	need = n * (16 + s);
	if (k && s > (uint64_t)SIZE_MAX / 2 / k)
		return rv_seterr("sample %llu: a shuffle buffer of %llu "
		    "%ux%ux%u samples does not fit in memory",
		    (unsigned long long)id, (unsigned long long)k,
		    r->height, r->width, r->channels);
	b->h = r->height;
	b->w = r->width;
	b->c = r->channels;
	b->slen = (size_t)s;
	b->buf = xmalloc((size_t)need);
	b->bm = xcalloc((size_t)n, sizeof(*b->bm));
	if (k) {
		uint32_t i;

		b->spx = xmalloc((size_t)(k * s));
		b->sm = xcalloc((size_t)k, sizeof(*b->sm));
		b->idx = xcalloc((size_t)k, sizeof(*b->idx));
		for (i = 0; i < k; i++)
			b->idx[i] = i;
	}
	b->shaped = 1;
	return 0;
}

/* Check that r's samples can join a batch; id names the first. */
static int
check(struct rv_batcher *b, const struct rv_rec *r, uint64_t id)
{
	if (r->dtype == RV_DT_JPEG || r->dtype == RV_DT_PNG)
		return rv_seterr("sample %llu is an encoded %s; decode it "
		    "first (rv-augment or rv-decode without --encoded)",
		    (unsigned long long)id, rv_dtype_name(r->dtype));
	if (r->dtype != RV_DT_U8)
		return rv_seterr("sample %llu has dtype %s; only u8 samples "
		    "can be batched", (unsigned long long)id,
		    rv_dtype_name(r->dtype));
	if (!b->shaped)
		return set_shape(b, r, id);
	if (r->height != b->h || r->width != b->w || r->channels != b->c)
		return rv_seterr("sample %llu is %ux%ux%u, batch is %ux%ux%u",
		    (unsigned long long)id, r->height, r->width, r->channels,
		    b->h, b->w, b->c);
	return 0;
}

static void
put_f32(unsigned char *p, float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	rv_put32(p, u);
}

static float
get_f32(const unsigned char *p)
{
	uint32_t u = rv_le32(p);
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/*
 * Emit the n samples held as one batch.  With n < N the ids, labels and
 * weights start 16 (N - n) bytes in, which puts them right before the
 * pixels at 16 N: the payload is contiguous either way.
 */
static int
emit(struct rv_batcher *b)
{
	uint32_t n = b->n, i;
	unsigned char *p = b->buf + (size_t)16 * (b->conf.size - n);
	struct rv_rec rec;
	int rc;

	for (i = 0; i < n; i++) {
		rv_put64(p + (size_t)8 * i, b->bm[i].id);
		rv_put32(p + (size_t)8 * n + (size_t)4 * i,
		    (uint32_t)b->bm[i].label);
		put_f32(p + (size_t)12 * n + (size_t)4 * i, b->bm[i].weight);
	}
	rv_rec_init(&rec, RV_BATCH);
	rec.dtype = RV_DT_U8;
	rec.flags = b->flags;
	rec.epoch = b->epoch;
	rec.height = b->h;
	rec.width = b->w;
	rec.channels = b->c;
	rec.count = n;
	rec.payload_len = (uint64_t)n * (16 + b->slen);
	rec.payload = p;
	b->st.batches++;
	if (n < b->conf.size)
		b->st.short_out++;
	b->n = 0;
	b->flags = 0;
	rc = b->emit(b->ctx, &rec);
	return rc < 0 ? fail(b) : 0;
}

/* Put one sample into the batch; emit the batch when it is full. */
static int
push(struct rv_batcher *b, const struct held *s, const unsigned char *px)
{
	memcpy(b->buf + (size_t)16 * b->conf.size + (size_t)b->n * b->slen,
	    px, b->slen);
	b->bm[b->n++] = *s;
	b->flags |= s->flags;
	return b->n == b->conf.size ? emit(b) : 0;
}

/* A uniform draw in [0, n), the epoch's next: keyed by (seed, epoch) and
 * counted per draw, so the order depends on nothing but the input. */
static uint32_t
draw(struct rv_batcher *b, uint32_t n)
{
	struct rv_rng r;

	rv_rng_init(&r, b->conf.seed, RV_STAGE_BATCH_SHUFFLE, 0, b->epoch,
	    b->draws++);
	return (uint32_t)rv_rng_below(&r, n);
}

static unsigned char *
slot_px(struct rv_batcher *b, uint32_t s)
{
	return b->spx + (size_t)s * b->slen;
}

/* One sample, already checked against the shape. */
static int
add_one(struct rv_batcher *b, const struct held *s, uint32_t epoch,
    const unsigned char *px)
{
	uint32_t k = b->conf.shuffle;

	if (b->in_epoch && epoch != b->epoch &&
	    rv_batcher_end_epoch(b) < 0)
		return -1;
	if (!b->in_epoch) {
		b->in_epoch = 1;
		b->epoch = epoch;
		b->draws = 0;
	}
	b->st.samples++;
	if (k == 0)
		return push(b, s, px);
	if (b->m < k) {
		uint32_t slot = b->idx[b->m++];
		b->sm[slot] = *s;
		memcpy(slot_px(b, slot), px, b->slen);
		return 0;
	}
	/* full: a random resident leaves, the newcomer takes its place */
	{
		uint32_t slot = b->idx[draw(b, k)];
		if (push(b, &b->sm[slot], slot_px(b, slot)) < 0)
			return -1;
		b->sm[slot] = *s;
		memcpy(slot_px(b, slot), px, b->slen);
	}
	return 0;
}

static int
check_weight(uint64_t id, float w)
{
	if (w >= 0 && !isinf(w))
		return 0;
	return rv_seterr("sample %llu has weight %g: a weight must be "
	    "finite and not negative", (unsigned long long)id, (double)w);
}

int
rv_batch_check_weights(const struct rv_rec *r)
{
	uint32_t i, n = r->count;

	if (r->kind == RV_SAMPLE)
		return check_weight(r->id, r->weight);
	if (r->kind != RV_BATCH)
		return 0;
	for (i = 0; i < n; i++)
		if (check_weight(rv_le64(r->payload + (size_t)8 * i),
		    get_f32(r->payload + (size_t)12 * n + (size_t)4 * i)) < 0)
			return -1;
	return 0;
}

int
rv_batch_check_epoch_end(const struct rv_rec *end, uint64_t seen)
{
	if (seen <= end->count)
		return 0;
	return rv_seterr("epoch-end of epoch %u counts %u sample%s, but %llu "
	    "came before it", end->epoch, end->count,
	    end->count == 1 ? "" : "s", (unsigned long long)seen);
}

int
rv_batcher_add(struct rv_batcher *b, const struct rv_rec *r)
{
	struct held s;
	uint32_t i, n;

	if (b->failed)
		return -1;
	if (r->kind == RV_SAMPLE) {
		if (check(b, r, r->id) < 0 || rv_batch_check_weights(r) < 0)
			return fail(b);
		s.id = r->id;
		s.label = r->label;
		s.weight = r->weight;
		s.flags = r->flags;
		return add_one(b, &s, r->epoch, r->payload);
	}
	if (r->kind != RV_BATCH) {
		rv_seterr("a %s record holds no samples",
		    rv_kind_name(r->kind));
		return fail(b);
	}
	/* re-batching: unpack the members (layout checked by the reader) */
	n = r->count;
	if (check(b, r, n ? rv_le64(r->payload) : 0) < 0 ||
	    rv_batch_check_weights(r) < 0)
		return fail(b);
	for (i = 0; i < n; i++) {
		const unsigned char *p = r->payload;
		s.id = rv_le64(p + (size_t)8 * i);
		s.label = (int32_t)rv_le32(p + (size_t)8 * n + (size_t)4 * i);
		s.weight = get_f32(p + (size_t)12 * n + (size_t)4 * i);
		s.flags = r->flags;
		if (add_one(b, &s, r->epoch, p + (size_t)16 * n +
		    (size_t)i * b->slen) < 0)
			return -1;
	}
	return 0;
}

int
rv_batcher_end_epoch(struct rv_batcher *b)
{
	if (b->failed)
		return -1;
	/* drain the shuffle buffer in random order */
	while (b->m > 0) {
		uint32_t j = draw(b, b->m), slot = b->idx[j];
		b->idx[j] = b->idx[b->m - 1];
		b->idx[b->m - 1] = slot;
		b->m--;
		if (push(b, &b->sm[slot], slot_px(b, slot)) < 0)
			return -1;
	}
	if (b->n > 0) {
		if (b->conf.drop_last) {
			b->st.short_dropped++;
			b->st.samples_dropped += b->n;
			b->n = 0;
			b->flags = 0;
		} else if (emit(b) < 0) {
			return -1;
		}
	}
	if (b->in_epoch) {
		b->st.epochs++;
		b->in_epoch = 0;
	}
	return 0;
}
