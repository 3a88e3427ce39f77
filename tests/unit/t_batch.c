/*
 * Unit tests for the collator (lib/stream/batch.c): batch layout, epoch
 * boundaries, drop-last, shape and dtype errors, re-batching, and the
 * shuffle buffer's permutation properties.  Batches are caught by the emit
 * callback and checked against the record format's own decoder.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/xmem.h"
#include "stream/batch.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "unit.h"

#define H 2
#define W 3
#define C 1
#define S (H * W * C)

/* One caught batch, decoded back into arrays. */
struct got {
	uint32_t n, epoch;
	uint16_t flags;
	uint64_t id[64];
	int32_t label[64];
	float weight[64];
	unsigned char px[64 * S];
};

struct catcher {
	struct got b[512];
	size_t n;
	int fail_at;		/* emit fails on this batch (1-based); 0 never */
	int bad;		/* a batch did not validate */
};

static int
catch(void *ctx, const struct rv_rec *r)
{
	struct catcher *k = ctx;
	unsigned char hdr[RV_HDR_LEN];
	struct rv_rec d;
	struct got *g;
	uint32_t i, n = r->count;
	float f;

	if (k->fail_at && (int)k->n + 1 == k->fail_at)
		return rv_seterr("sink refused");
	/* the header must pass the reader's own validation */
	rv_rec_encode(r, hdr);
	if (rv_rec_decode(&d, hdr, sizeof(hdr), 1 << 20) < 0 ||
	    d.kind != RV_BATCH || d.dtype != RV_DT_U8 || n > 64 ||
	    k->n == 512) {
		k->bad = 1;
		return 0;
	}
	g = &k->b[k->n++];
	g->n = n;
	g->epoch = r->epoch;
	g->flags = r->flags;
	for (i = 0; i < n; i++) {
		g->id[i] = rv_le64(r->payload + 8 * i);
		g->label[i] = (int32_t)rv_le32(r->payload + 8 * n + 4 * i);
		{
			uint32_t u = rv_le32(r->payload + 12 * n + 4 * i);
			memcpy(&f, &u, 4);
		}
		g->weight[i] = f;
	}
	memcpy(g->px, r->payload + 16 * n, (size_t)n * S);
	return 0;
}

/* Sample id's pixels: a pattern that tells ids apart. */
static void
pixels(uint64_t id, unsigned char *px)
{
	int i;

	for (i = 0; i < S; i++)
		px[i] = (unsigned char)(id * 7 + (uint64_t)i * 13);
}

static int
add(struct rv_batcher *b, uint64_t id, uint32_t epoch, uint16_t flags)
{
	unsigned char px[S];
	struct rv_rec r;

	pixels(id, px);
	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_U8;
	r.id = id;
	r.epoch = epoch;
	r.label = (int32_t)(id % 10);
	r.weight = 1.0f + (float)id / 4;
	r.flags = flags;
	r.uses = 3;
	r.score = 0.5f;
	r.height = H;
	r.width = W;
	r.channels = C;
	r.payload_len = S;
	r.payload = px;
	return rv_batcher_add(b, &r);
}

static struct rv_batcher *
make(uint32_t n, uint32_t k, uint64_t seed, int drop, struct catcher *c)
{
	struct rv_batch_conf conf;

	rv_batch_conf_init(&conf);
	conf.size = n;
	conf.shuffle = k;
	conf.seed = seed;
	conf.drop_last = drop;
	memset(c, 0, sizeof(*c));
	return rv_batcher_new(&conf, catch, c);
}

static void
t_collate(void)
{
	struct catcher *c = xmalloc(sizeof(*c));
	struct rv_batcher *b = make(4, 0, 0, 0, c);
	unsigned char px[S];
	uint64_t id = 0;
	size_t i, j;

	for (i = 0; i < 10; i++)
		EXPECT_EQ(add(b, 100 + i, 0, i == 5 ? RV_F_FINAL :
		    RV_F_PARTIAL), 0);
	EXPECT_EQ(c->n, 2);
	EXPECT_EQ(rv_batcher_held(b), 2);
	EXPECT_EQ(rv_batcher_end_epoch(b), 0);
	EXPECT(!c->bad);
	EXPECT_EQ(c->n, 3);
	EXPECT_EQ(c->b[0].n, 4);
	EXPECT_EQ(c->b[1].n, 4);
	EXPECT_EQ(c->b[2].n, 2);
	/* flags: the OR of the members' */
	EXPECT_EQ(c->b[0].flags, RV_F_PARTIAL);
	EXPECT_EQ(c->b[1].flags, RV_F_PARTIAL | RV_F_FINAL);
	for (i = 0; i < 3; i++)
		for (j = 0; j < c->b[i].n; j++, id++) {
			EXPECT_EQ(c->b[i].id[j], 100 + id);
			EXPECT_EQ(c->b[i].label[j], (100 + id) % 10);
			EXPECT(c->b[i].weight[j] == 1.0f + (float)(100 + id)
			    / 4);
			pixels(100 + id, px);
			EXPECT(memcmp(c->b[i].px + j * S, px, S) == 0);
		}
	EXPECT_EQ(rv_batcher_stats(b)->samples, 10);
	EXPECT_EQ(rv_batcher_stats(b)->batches, 3);
	EXPECT_EQ(rv_batcher_stats(b)->short_out, 1);
	EXPECT_EQ(rv_batcher_stats(b)->epochs, 1);
	/* nothing held: ending again emits nothing and counts no epoch */
	EXPECT_EQ(rv_batcher_end_epoch(b), 0);
	EXPECT_EQ(c->n, 3);
	EXPECT_EQ(rv_batcher_stats(b)->epochs, 1);
	rv_batcher_free(b);
	free(c);
}

static void
t_drop_last(void)
{
	struct catcher *c = xmalloc(sizeof(*c));
	struct rv_batcher *b = make(4, 0, 0, 1, c);
	size_t i;

	for (i = 0; i < 10; i++)
		add(b, i, 0, 0);
	EXPECT_EQ(rv_batcher_end_epoch(b), 0);
	EXPECT_EQ(c->n, 2);
	EXPECT_EQ(rv_batcher_stats(b)->short_dropped, 1);
	EXPECT_EQ(rv_batcher_stats(b)->samples_dropped, 2);
	/* the dropped samples do not leak into the next epoch */
	for (i = 0; i < 4; i++)
		add(b, 50 + i, 1, 0);
	EXPECT_EQ(c->n, 3);
	EXPECT_EQ(c->b[2].id[0], 50);
	EXPECT_EQ(c->b[2].epoch, 1);
	/* an exact multiple drops nothing */
	EXPECT_EQ(rv_batcher_end_epoch(b), 0);
	EXPECT_EQ(rv_batcher_stats(b)->short_dropped, 1);
	rv_batcher_free(b);
	free(c);
}

/* Batch sizes and epochs for: 5 samples of epoch 0, 5 of epoch 1, with
 * or without an explicit end between them. */
static void
t_epochs(void)
{
	int explicit;

	for (explicit = 0; explicit < 2; explicit++) {
		struct catcher *c = xmalloc(sizeof(*c));
		struct rv_batcher *b = make(4, 0, 0, 0, c);
		size_t i;

		for (i = 0; i < 5; i++)
			add(b, i, 0, 0);
		if (explicit)
			EXPECT_EQ(rv_batcher_end_epoch(b), 0);
		for (i = 5; i < 10; i++)
			add(b, i, 1, 0);
		EXPECT_EQ(rv_batcher_end_epoch(b), 0);
		EXPECT_EQ(c->n, 4);
		EXPECT_EQ(c->b[0].n, 4);
		EXPECT_EQ(c->b[1].n, 1);
		EXPECT_EQ(c->b[1].id[0], 4);
		EXPECT_EQ(c->b[1].epoch, 0);
		EXPECT_EQ(c->b[2].n, 4);
		EXPECT_EQ(c->b[2].id[0], 5);
		EXPECT_EQ(c->b[2].epoch, 1);
		EXPECT_EQ(c->b[3].n, 1);
		EXPECT_EQ(rv_batcher_stats(b)->epochs, 2);
		rv_batcher_free(b);
		free(c);
	}
}

static void
t_shape_mismatch(void)
{
	struct catcher *c = xmalloc(sizeof(*c));
	struct rv_batcher *b = make(4, 0, 0, 0, c);
	unsigned char px[2 * 3 * 3] = { 0 };
	struct rv_rec r;

	EXPECT_EQ(add(b, 1, 0, 0), 0);
	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_U8;
	r.id = 123;
	r.height = 2;
	r.width = 3;
	r.channels = 3;
	r.payload_len = sizeof(px);
	r.payload = px;
	EXPECT_EQ(rv_batcher_add(b, &r), -1);
	EXPECT_STR(rv_errmsg(), "sample 123 is 2x3x3, batch is 2x3x1");
	/* the shape holds across epochs too */
	rv_batcher_free(b);
	b = make(4, 0, 0, 0, c);
	EXPECT_EQ(add(b, 1, 0, 0), 0);
	EXPECT_EQ(rv_batcher_end_epoch(b), 0);
	r.epoch = 1;
	EXPECT_EQ(rv_batcher_add(b, &r), -1);
	EXPECT_STR(rv_errmsg(), "sample 123 is 2x3x3, batch is 2x3x1");
	/* a failed batcher stays failed */
	EXPECT_EQ(add(b, 2, 1, 0), -1);
	EXPECT_EQ(rv_batcher_end_epoch(b), -1);
	rv_batcher_free(b);
	free(c);
}

static void
t_encoded(void)
{
	struct catcher *c = xmalloc(sizeof(*c));
	struct rv_batcher *b = make(4, 0, 0, 0, c);
	unsigned char jpg[4] = { 0xff, 0xd8, 0xff, 0xe0 };
	struct rv_rec r;

	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_JPEG;
	r.id = 9;
	r.height = r.width = 8;
	r.channels = 3;
	r.payload_len = sizeof(jpg);
	r.payload = jpg;
	EXPECT_EQ(rv_batcher_add(b, &r), -1);
	EXPECT_STR(rv_errmsg(), "sample 9 is an encoded jpeg; decode it "
	    "first (rv-augment or rv-decode without --encoded)");
	rv_batcher_free(b);
	/* a record that holds no samples is refused */
	b = make(4, 0, 0, 0, c);
	rv_rec_init(&r, RV_META);
	EXPECT_EQ(rv_batcher_add(b, &r), -1);
	EXPECT_STR(rv_errmsg(), "a meta record holds no samples");
	rv_batcher_free(b);
	free(c);
}

static void
t_too_large(void)
{
	struct catcher *c = xmalloc(sizeof(*c));
	struct rv_batch_conf conf;
	struct rv_batcher *b;

	rv_batch_conf_init(&conf);
	conf.size = 10;
	conf.max_payload = 100;	/* 10 * (16 + 6) = 220 */
	memset(c, 0, sizeof(*c));
	b = rv_batcher_new(&conf, catch, c);
	EXPECT_EQ(add(b, 5, 0, 0), -1);
	EXPECT_STR(rv_errmsg(), "sample 5: a batch of 10 2x3x1 samples is "
	    "over the 100-byte record limit");
	rv_batcher_free(b);
	conf.size = 0;
	EXPECT(rv_batcher_new(&conf, catch, c) == NULL);
	free(c);
}

static void
t_emit_failure(void)
{
	struct catcher *c = xmalloc(sizeof(*c));
	struct rv_batcher *b = make(2, 0, 0, 0, c);

	c->fail_at = 2;
	EXPECT_EQ(add(b, 0, 0, 0), 0);
	EXPECT_EQ(add(b, 1, 0, 0), 0);
	EXPECT_EQ(add(b, 2, 0, 0), 0);
	EXPECT_EQ(add(b, 3, 0, 0), -1);
	EXPECT_STR(rv_errmsg(), "sink refused");
	EXPECT_EQ(add(b, 4, 0, 0), -1);
	rv_batcher_free(b);
	free(c);
}

/* Batches of 4 in, batches of 3 out: same samples, same order. */
static void
t_rebatch(void)
{
	struct catcher *c = xmalloc(sizeof(*c));
	struct catcher *c2 = xmalloc(sizeof(*c2));
	struct rv_batcher *b = make(4, 0, 0, 0, c), *b2;
	unsigned char buf[16 * 4 + 4 * S];
	unsigned char px[S];
	size_t i, j, k = 0;

	for (i = 0; i < 10; i++)
		add(b, 20 + i, 3, RV_F_SCORED);
	rv_batcher_end_epoch(b);
	b2 = make(3, 0, 0, 0, c2);
	for (i = 0; i < c->n; i++) {
		struct got *g = &c->b[i];
		struct rv_rec r;
		uint32_t n = g->n;
		rv_rec_init(&r, RV_BATCH);
		r.dtype = RV_DT_U8;
		r.epoch = g->epoch;
		r.flags = g->flags;
		r.height = H;
		r.width = W;
		r.channels = C;
		r.count = n;
		r.payload_len = n * (16 + S);
		for (j = 0; j < n; j++) {
			uint32_t u;
			rv_put64(buf + 8 * j, g->id[j]);
			rv_put32(buf + 8 * n + 4 * j, (uint32_t)g->label[j]);
			memcpy(&u, &g->weight[j], 4);
			rv_put32(buf + 12 * n + 4 * j, u);
		}
		memcpy(buf + 16 * n, g->px, n * S);
		r.payload = buf;
		EXPECT_EQ(rv_batcher_add(b2, &r), 0);
	}
	EXPECT_EQ(rv_batcher_end_epoch(b2), 0);
	EXPECT_EQ(c2->n, 4);
	EXPECT_EQ(c2->b[3].n, 1);
	for (i = 0; i < c2->n; i++) {
		EXPECT_EQ(c2->b[i].epoch, 3);
		EXPECT_EQ(c2->b[i].flags, RV_F_SCORED);
		for (j = 0; j < c2->b[i].n; j++, k++) {
			EXPECT_EQ(c2->b[i].id[j], 20 + k);
			EXPECT_EQ(c2->b[i].label[j], (20 + k) % 10);
			EXPECT(c2->b[i].weight[j] == 1.0f + (float)(20 + k) /
			    4);
			pixels(20 + k, px);
			EXPECT(memcmp(c2->b[i].px + j * S, px, S) == 0);
		}
	}
	EXPECT_EQ(k, 10);
	rv_batcher_free(b);
	rv_batcher_free(b2);
	free(c);
	free(c2);
}

/*
 * Run nep epochs of nper samples (ids 0..nper-1, in order) through a
 * shuffling batcher and flatten the ids into out[nep * nper]; check on the
 * way that no batch spans an epoch and that pixels follow their ids.
 */
static void
shuffled(uint32_t n, uint32_t k, uint64_t seed, int nep, int nper,
    uint64_t *out)
{
	struct catcher *c = xmalloc(sizeof(*c));
	struct rv_batcher *b = make(n, k, seed, 0, c);
	unsigned char px[S];
	size_t i, j, m = 0;
	int e;

	for (e = 0; e < nep; e++) {
		for (i = 0; i < (size_t)nper; i++)
			EXPECT_EQ(add(b, i, (uint32_t)e, 0), 0);
		EXPECT_EQ(rv_batcher_end_epoch(b), 0);
		EXPECT_EQ(rv_batcher_held(b), 0);
	}
	for (i = 0; i < c->n; i++)
		for (j = 0; j < c->b[i].n; j++) {
			EXPECT_EQ(c->b[i].epoch, m / (size_t)nper);
			EXPECT_EQ(c->b[i].label[j], c->b[i].id[j] % 10);
			pixels(c->b[i].id[j], px);
			EXPECT(memcmp(c->b[i].px + j * S, px, S) == 0);
			out[m++] = c->b[i].id[j];
		}
	EXPECT_EQ(m, (size_t)(nep * nper));
	rv_batcher_free(b);
	free(c);
}

static int
is_perm(const uint64_t *v, int n)
{
	char seen[1000] = { 0 };
	int i;

	for (i = 0; i < n; i++) {
		if (v[i] >= (uint64_t)n || seen[v[i]])
			return 0;
		seen[v[i]] = 1;
	}
	return 1;
}

static void
t_shuffle(void)
{
	uint64_t a[300], a2[300], other[300];
	int e, i, moved = 0;

	shuffled(8, 16, 42, 3, 100, a);
	for (e = 0; e < 3; e++)
		EXPECT(is_perm(a + 100 * e, 100));
	for (i = 0; i < 100; i++)
		moved += a[i] != (uint64_t)i;
	EXPECT(moved > 50);
	/* epochs are shuffled differently */
	EXPECT(memcmp(a, a + 100, 100 * sizeof(*a)) != 0);
	/* the same seed gives the same order, another seed another */
	shuffled(8, 16, 42, 3, 100, a2);
	EXPECT(memcmp(a, a2, sizeof(a)) == 0);
	shuffled(8, 16, 43, 3, 100, other);
	EXPECT(memcmp(a, other, sizeof(a)) != 0);
	/* the order does not depend on the batch size */
	shuffled(7, 16, 42, 3, 100, other);
	EXPECT(memcmp(a, other, sizeof(a)) == 0);
	/* a buffer larger than the epoch: all drained at the epoch's end */
	shuffled(8, 500, 1, 2, 100, a2);
	EXPECT(is_perm(a2, 100));
	EXPECT(is_perm(a2 + 100, 100));
	/* a reservoir of K lets no sample move earlier than K places */
	shuffled(4, 10, 5, 1, 100, a2);
	for (i = 0; i < 100; i++)
		EXPECT(a2[i] <= (uint64_t)i + 10);
	/* off: the input order */
	shuffled(8, 0, 42, 1, 100, a2);
	for (i = 0; i < 100; i++)
		EXPECT_EQ(a2[i], i);
}

static int
to_writer(void *ctx, const struct rv_rec *r)
{
	return rv_writer_put(ctx, r, r->payload);
}

/* Batches written with rv_writer read back with rv_reader, short ones
 * included, with the layout the reader validates. */
static void
t_stream_roundtrip(void)
{
	struct rv_batch_conf conf;
	struct rv_batcher *b;
	struct rv_writer *w;
	struct rv_reader *r;
	struct rv_rec rec;
	unsigned char px[S];
	FILE *f = tmpfile();
	uint64_t id = 0;
	uint32_t i;
	int n = 0, got;

	EXPECT(f != NULL);
	if (!f)
		return;
	w = rv_writer_new(fileno(f), "tmp", 1);
	rv_batch_conf_init(&conf);
	conf.size = 4;
	b = rv_batcher_new(&conf, to_writer, w);
	for (i = 0; i < 10; i++)
		EXPECT_EQ(add(b, i, 0, 0), 0);
	EXPECT_EQ(rv_batcher_end_epoch(b), 0);
	EXPECT_EQ(rv_writer_close(w), 0);
	rv_batcher_free(b);
	rewind(f);
	r = rv_reader_fdopen(fileno(f), "tmp");
	while ((got = rv_reader_next(r, &rec)) == 1) {
		EXPECT_EQ(rec.kind, RV_BATCH);
		EXPECT_EQ(rec.count, n < 2 ? 4 : 2);
		EXPECT(isnan(rec.score));
		for (i = 0; i < rec.count; i++, id++) {
			EXPECT_EQ(rv_le64(rec.payload + 8 * i), id);
			pixels(id, px);
			EXPECT(memcmp(rec.payload + 16 * rec.count + i * S, px,
			    S) == 0);
		}
		n++;
	}
	EXPECT_EQ(got, 0);
	EXPECT_EQ(n, 3);
	EXPECT_EQ(id, 10);
	rv_reader_close(r);
	fclose(f);
}

/* Weights must be finite and not negative, 0 included; in batches too,
 * where the member at fault is named.  Epoch-end counts may exceed the
 * samples seen, never fall short of them. */
static void
t_weights_counts(void)
{
	struct catcher *c = xmalloc(sizeof(*c));
	struct rv_batcher *b = make(4, 0, 0, 0, c);
	const float bad[] = { NAN, INFINITY, -INFINITY, -1.0f, -1e-30f };
	unsigned char px[S], buf[16 * 2 + 2 * S];
	struct rv_rec r, e;
	size_t i;

	pixels(1, px);
	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_U8;
	r.id = 7;
	r.height = H;
	r.width = W;
	r.channels = C;
	r.payload_len = S;
	r.payload = px;
	r.weight = 0;
	EXPECT_EQ(rv_batch_check_weights(&r), 0);
	r.weight = 1e30f;
	EXPECT_EQ(rv_batch_check_weights(&r), 0);
	r.weight = -0.0f;
	EXPECT_EQ(rv_batch_check_weights(&r), 0);
	EXPECT_EQ(rv_batcher_add(b, &r), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r.weight = bad[i];
		EXPECT_EQ(rv_batch_check_weights(&r), -1);
	}
	r.weight = NAN;
	EXPECT_STR(rv_batch_check_weights(&r) < 0 ? rv_errmsg() : "",
	    "sample 7 has weight nan: a weight must be finite and not "
	    "negative");
	EXPECT_EQ(rv_batcher_add(b, &r), -1);
	EXPECT_STR(rv_errmsg(), "sample 7 has weight nan: a weight must be "
	    "finite and not negative");
	rv_batcher_free(b);

	/* a batch of ids 3 and 4, the second weighing -2 */
	rv_rec_init(&r, RV_BATCH);
	r.dtype = RV_DT_U8;
	r.height = H;
	r.width = W;
	r.channels = C;
	r.count = 2;
	r.payload_len = 2 * (16 + S);
	memset(buf, 0, sizeof(buf));
	rv_put64(buf, 3);
	rv_put64(buf + 8, 4);
	rv_put32(buf + 24, 0x3f800000u);	/* 1.0f */
	rv_put32(buf + 28, 0xc0000000u);	/* -2.0f */
	r.payload = buf;
	EXPECT_EQ(rv_batch_check_weights(&r), -1);
	EXPECT_STR(rv_errmsg(), "sample 4 has weight -2: a weight must be "
	    "finite and not negative");
	b = make(4, 0, 0, 0, c);
	EXPECT_EQ(rv_batcher_add(b, &r), -1);
	EXPECT_EQ(c->n, 0);
	rv_batcher_free(b);

	rv_rec_init(&e, RV_EPOCH_END);
	e.epoch = 2;
	e.count = 5;
	EXPECT_EQ(rv_batch_check_epoch_end(&e, 0), 0);
	EXPECT_EQ(rv_batch_check_epoch_end(&e, 5), 0);
	EXPECT_EQ(rv_batch_check_epoch_end(&e, 6), -1);
	EXPECT_STR(rv_errmsg(), "epoch-end of epoch 2 counts 5 samples, but "
	    "6 came before it");
	e.count = 1;
	EXPECT_EQ(rv_batch_check_epoch_end(&e, 2), -1);
	EXPECT_STR(rv_errmsg(), "epoch-end of epoch 2 counts 1 sample, but "
	    "2 came before it");
	free(c);
}

int
main(void)
{
	rv_setprogname("t_batch");
	RUN(t_collate);
	RUN(t_drop_last);
	RUN(t_epochs);
	RUN(t_shape_mismatch);
	RUN(t_encoded);
	RUN(t_too_large);
	RUN(t_emit_failure);
	RUN(t_rebatch);
	RUN(t_shuffle);
	RUN(t_stream_roundtrip);
	RUN(t_weights_counts);
	return UNIT_DONE();
}
