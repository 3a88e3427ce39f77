/*
 * Ordered parallel runs (par.h): every item runs exactly once and is
 * consumed in the order it was added, for 1 to 8 threads, with the same
 * output bytes; skipped and fatal items; hooks stopping a run; chunk sizes
 * following the byte budget; per-worker state made once and stopped once.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/progress.h"
#include "stream/par.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "unit.h"

#define MAGIC	0x5eed

struct wstate {
	int magic;
	atomic_int busy;	/* 1 while an item runs with this state */
	atomic_int overlap;	/* two items ran at once on this state */
	long items;
	struct rv_enc *enc;	/* NULL: frames are raw bytes */
};

struct life {
	atomic_int started, stopped, stopped_null;
	int fail_at;		/* start number that fails, -1: none */
	int with_enc;
	struct wstate *all[16];
};

static void *
start(void *arg)
{
	struct life *l = arg;
	int k = atomic_fetch_add(&l->started, 1);
	struct wstate *w;

	if (k == l->fail_at) {
		rv_seterr("worker %d: no codec", k);
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	w->magic = MAGIC;
	if (l->with_enc)
		w->enc = rv_enc_new(RV_LEVEL_STORED);
	if (k < 16)
		l->all[k] = w;
	return w;
}

static struct life *cur_life;

static void
stop(void *state)
{
	struct wstate *w = state;

	if (!w) {
		atomic_fetch_add(&cur_life->stopped_null, 1);
		return;
	}
	atomic_fetch_add(&cur_life->stopped, 1);
	rv_enc_free(w->enc);
	w->magic = 0;
}

static void
free_states(struct life *l)
{
	int k;

	for (k = 0; k < 16; k++)
		free(l->all[k]);
}

/* The test's side: one value per slot, and what the hooks saw. */
struct tctx {
	uint64_t *val;		/* per slot: the item's value */
	atomic_int *hits;	/* per value: times it ran */
	atomic_int wbad;	/* a worker saw something wrong */
	size_t frame_len;	/* raw frames of this many bytes */
	uint64_t skip_mod;	/* values v % skip_mod == 0 skip (0: none) */
	uint64_t fatal_at;	/* this value is fatal */
	uint64_t each_stop;	/* each() fails at this value */
	int before_stop;	/* before() fails on this chunk */
	uint64_t seq0;		/* items added before value 0 */
	/* main thread */
	uint64_t next;		/* next value each() should see */
	int bad;
	size_t nchunks;
	size_t sizes[4096];
	const unsigned char *ptr[8];	/* slot frame buffers seen */
	int moved;		/* a frame buffer moved between chunks */
};

static int
item(void *state, size_t i, struct rv_par_slot *s, void *ctx)
{
	struct wstate *w = state;
	struct tctx *t = ctx;
	uint64_t v = t->val[i];
	int rc = RV_PAR_OK;

	if (!w || w->magic != MAGIC) {
		atomic_fetch_add(&t->wbad, 1);
		return RV_PAR_OK;
	}
	if (atomic_exchange(&w->busy, 1))
		atomic_store(&w->overlap, 1);
	atomic_fetch_add(&t->hits[v], 1);
	if (s->frame.len != 0 || s->status != RV_PAR_OK ||
	    s->seq != t->seq0 + v)
		atomic_fetch_add(&t->wbad, 1);
	if (t->skip_mod && v % t->skip_mod == 0) {
		rv_seterr("value %llu: skipped", (unsigned long long)v);
		rc = RV_PAR_SKIP;
	} else if (v == t->fatal_at) {
		rc = rv_seterr("value %llu: boom", (unsigned long long)v);
	} else if (w->enc) {
		struct rv_rec rec;
		unsigned char px[8];
		memset(px, (int)(v & 0xff), sizeof(px));
		rv_rec_init(&rec, RV_SAMPLE);
		rec.id = v;
		rec.dtype = RV_DT_U8;
		rec.height = 1;
		rec.width = 8;
		rec.channels = 1;
		rec.payload_len = sizeof(px);
		if (rv_enc_frame(w->enc, &rec, px, &s->frame) < 0)
			rc = RV_PAR_FATAL;
	} else {
		size_t k;
		rv_buf_reserve(&s->frame, t->frame_len);
		for (k = 0; k < t->frame_len; k++)
			s->frame.data[s->frame.len++] = (unsigned char)v;
	}
	w->items++;
	atomic_store(&w->busy, 0);
	return rc;
}

static int
each(void *ctx, size_t i, const struct rv_par_slot *s)
{
	struct tctx *t = ctx;
	uint64_t v = t->val[i];
	char want[64];

	if (v != t->next || s->seq != t->seq0 + v)
		t->bad++;
	t->next++;
	if (t->skip_mod && v % t->skip_mod == 0) {
		snprintf(want, sizeof(want), "value %llu: skipped",
		    (unsigned long long)v);
		if (s->status != RV_PAR_SKIP || strcmp(s->msg, want) != 0 ||
		    s->frame.len != 0)
			t->bad++;
	} else if (v == t->fatal_at) {
		if (s->status != RV_PAR_FATAL)
			t->bad++;
	} else if (s->status != RV_PAR_OK) {
		t->bad++;
	} else if (t->frame_len && (s->frame.len != t->frame_len ||
	    s->frame.data[0] != (unsigned char)v)) {
		t->bad++;
	}
	if (v == t->each_stop)
		return rv_seterr("each stops at %llu", (unsigned long long)v);
	return 0;
}

static int
before(void *ctx, const struct rv_par_slot *slots, size_t n)
{
	struct tctx *t = ctx;
	size_t i;

	for (i = 0; i < n; i++)
		if (slots[i].seq != t->seq0 + t->val[i] ||
		    slots[i].frame.len != 0)
			t->bad++;
	if ((int)t->nchunks == t->before_stop)
		return rv_seterr("before stops chunk %zu", t->nchunks);
	return 0;
}

static int
after(void *ctx, const struct rv_par_slot *slots, size_t n)
{
	struct tctx *t = ctx;
	size_t i;

	/* all consumed, in order, the last one just before */
	if (n == 0 || t->seq0 + t->next != slots[n - 1].seq + 1)
		t->bad++;
	if (t->nchunks < sizeof(t->sizes) / sizeof(t->sizes[0]))
		t->sizes[t->nchunks] = n;
	/* once warmed up, equal frames reuse their slot's buffer */
	for (i = 0; i < n && i < 8; i++) {
		if (t->nchunks >= 2 && t->ptr[i] &&
		    t->ptr[i] != slots[i].frame.data)
			t->moved = 1;
		t->ptr[i] = slots[i].frame.data;
	}
	t->nchunks++;
	return 0;
}

static void
tctx_init(struct tctx *t, size_t max, uint64_t n)
{
	memset(t, 0, sizeof(*t));
	t->val = calloc(max, sizeof(*t->val));
	t->hits = calloc(n + 1, sizeof(*t->hits));
	t->fatal_at = UINT64_MAX;
	t->each_stop = UINT64_MAX;
	t->before_stop = -1;
	t->frame_len = 3;
}

static void
tctx_release(struct tctx *t)
{
	free(t->val);
	free(t->hits);
}

/* Add values 0..n-1 in order; 0, or the first failing call's -1. */
static int
add_all(struct rv_par *p, struct tctx *t, uint64_t n, size_t hold)
{
	uint64_t v;
	size_t slot;

	for (v = 0; v < n; v++) {
		if (rv_par_add(p, hold, &slot) < 0)
			return -1;
		if (slot >= rv_par_max(p))
			t->bad++;
		else
			t->val[slot] = v;
	}
	return rv_par_flush(p);
}

static struct rv_progress quiet;

static struct rv_par *
make(struct life *l, struct tctx *t, int nt, size_t max, size_t budget,
    struct rv_writer *out)
{
	memset(l, 0, sizeof(*l));
	l->fail_at = -1;
	l->with_enc = out != NULL;
	cur_life = l;
	return rv_par_new(&(struct rv_par_conf){
		.nthreads = nt, .max_items = max, .budget = budget,
		.start = start, .stop = stop, .arg = l,
		.item = item, .before = before, .each = each,
		.after = after, .ctx = t, .out = out, .prog = &quiet });
}

static unsigned char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b;
	long n;

	*len = 0;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	b = malloc((size_t)n + 1);
	*len = fread(b, 1, (size_t)n, f);
	fclose(f);
	return b;
}

/*
 * Every item once, consumed in order, frames written in order, and the
 * output file the same bytes for 1 to 8 threads.
 */
static void
t_once_in_order(void)
{
	static const uint64_t sizes[] = { 0, 1, 2, 31, 1000 };
	unsigned char *ref[5] = { NULL };
	size_t reflen[5] = { 0 };
	int nt;
	size_t k;

	for (nt = 1; nt <= 8; nt++) {
		for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			uint64_t n = sizes[k], v;
			char path[] = "/tmp/t_par.XXXXXX";
			int fd = mkstemp(path);
			struct rv_writer *w = rv_writer_new(fd, path,
			    RV_LEVEL_STORED);
			struct life l;
			struct tctx t;
			struct rv_par *p;
			struct rv_reader *r;
			struct rv_rec rec;
			unsigned char *bytes;
			size_t len = 0;
			long sum = 0;
			int m;

			tctx_init(&t, 64, n);
			t.frame_len = 0;	/* records: checked when read */
			p = make(&l, &t, nt, 64, 0, w);
			EXPECT(p != NULL);
			EXPECT_EQ(rv_par_threads(p), nt);
			EXPECT_EQ(atomic_load(&l.started), nt);
			EXPECT_EQ(add_all(p, &t, n, 0), 0);
			EXPECT_EQ(rv_par_flush(p), 0);	/* nothing left */
			EXPECT_EQ(t.next, n);
			EXPECT_EQ(t.bad, 0);
			EXPECT_EQ(atomic_load(&t.wbad), 0);
			for (v = 0; v < n; v++)
				if (atomic_load(&t.hits[v]) != 1)
					t.bad++;
			EXPECT_EQ(t.bad, 0);
			EXPECT_EQ(rv_par_stats(p)->added, n);
			EXPECT_EQ(rv_par_stats(p)->consumed, n);
			EXPECT_EQ(rv_par_stats(p)->frames, n);
			EXPECT_EQ(rv_par_stats(p)->skipped, 0);
			for (m = 0; m < nt; m++) {
				EXPECT_EQ(atomic_load(&l.all[m]->overlap), 0);
				sum += l.all[m]->items;
			}
			EXPECT_EQ(sum, (long)n);
			rv_par_free(p);
			EXPECT_EQ(atomic_load(&l.stopped), nt);
			free_states(&l);
			EXPECT_EQ(rv_writer_close(w), 0);
			close(fd);
			/* the records, in order */
			r = rv_reader_open(path);
			EXPECT(r != NULL);
			for (v = 0; r && rv_reader_next(r, &rec) == 1; v++)
				if (rec.id != v || rec.payload[0] !=
				    (unsigned char)v)
					t.bad++;
			EXPECT_EQ(v, n);
			EXPECT_EQ(t.bad, 0);
			rv_reader_close(r);
			bytes = slurp(path, &len);
			if (nt == 1) {
				ref[k] = bytes;
				reflen[k] = len;
			} else {
				EXPECT(len == reflen[k] &&
				    memcmp(bytes, ref[k], len) == 0);
				free(bytes);
			}
			unlink(path);
			tctx_release(&t);
		}
	}
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		free(ref[k]);
	rv_par_free(NULL);
}

/* Skipped items are consumed without a frame; the message is kept. */
static void
t_skip(void)
{
	int nt;

	for (nt = 1; nt <= 8; nt += 3) {
		struct life l;
		struct tctx t;
		struct rv_par *p;

		tctx_init(&t, 40, 500);
		t.skip_mod = 7;
		p = make(&l, &t, nt, 40, 0, NULL);
		EXPECT_EQ(add_all(p, &t, 500, 0), 0);
		EXPECT_EQ(t.next, 500);
		EXPECT_EQ(t.bad, 0);
		EXPECT_EQ(atomic_load(&t.wbad), 0);
		EXPECT_EQ(rv_par_stats(p)->skipped, 72);
		EXPECT_EQ(rv_par_stats(p)->frames, 500 - 72);
		EXPECT_EQ(rv_par_stats(p)->consumed, 500);
		rv_par_free(p);
		free_states(&l);
		tctx_release(&t);
	}
}

/*
 * A fatal item stops the run where it stands in the order: everything
 * before it consumed, nothing after; the rv_par is spent.
 */
static void
t_fatal(void)
{
	int nt;

	for (nt = 1; nt <= 8; nt++) {
		struct life l;
		struct tctx t;
		struct rv_par *p;
		size_t slot;

		tctx_init(&t, 16, 300);
		t.fatal_at = 37;
		p = make(&l, &t, nt, 16, 0, NULL);
		EXPECT_EQ(add_all(p, &t, 300, 0), -1);
		EXPECT_STR(rv_errmsg(), "value 37: boom");
		/* each() saw 0..37, the fatal one last */
		EXPECT_EQ(t.next, 38);
		EXPECT_EQ(t.bad, 0);
		EXPECT_EQ(rv_par_stats(p)->consumed, 37);
		rv_seterr("other");
		EXPECT_EQ(rv_par_add(p, 0, &slot), -1);
		EXPECT_STR(rv_errmsg(), "value 37: boom");
		EXPECT_EQ(rv_par_flush(p), -1);
		EXPECT_STR(rv_errmsg(), "value 37: boom");
		rv_par_free(p);
		EXPECT_EQ(atomic_load(&l.stopped), nt);
		free_states(&l);
		tctx_release(&t);
	}
}

/* Hooks stop a run with their message. */
static void
t_hooks_stop(void)
{
	struct life l;
	struct tctx t;
	struct rv_par *p;

	tctx_init(&t, 10, 100);
	t.each_stop = 55;
	p = make(&l, &t, 3, 10, 0, NULL);
	EXPECT_EQ(add_all(p, &t, 100, 0), -1);
	EXPECT_STR(rv_errmsg(), "each stops at 55");
	EXPECT_EQ(t.next, 56);
	EXPECT_EQ(rv_par_stats(p)->consumed, 55);
	rv_par_free(p);
	free_states(&l);
	tctx_release(&t);

	tctx_init(&t, 10, 100);
	t.before_stop = 2;
	p = make(&l, &t, 3, 10, 0, NULL);
	EXPECT_EQ(add_all(p, &t, 100, 0), -1);
	EXPECT_STR(rv_errmsg(), "before stops chunk 2");
	EXPECT_EQ(t.nchunks, 2);
	EXPECT_EQ(rv_par_stats(p)->chunks, 2);
	/* the stopped chunk never ran */
	EXPECT_EQ(atomic_load(&t.hits[t.next]), 0);
	rv_par_free(p);
	free_states(&l);
	tctx_release(&t);
}

/* The sizes of the chunks of a run of n items with frames of len bytes. */
static void
chunks(int nt, size_t max, size_t budget, size_t len, size_t hold,
    uint64_t n, const size_t *want, size_t nwant)
{
	struct life l;
	struct tctx t;
	struct rv_par *p;
	size_t k;

	tctx_init(&t, max ? max : (size_t)256 * nt, n);
	t.frame_len = len;
	p = make(&l, &t, nt, max, budget, NULL);
	EXPECT_EQ(add_all(p, &t, n, hold), 0);
	EXPECT_EQ(t.bad, 0);
	EXPECT_EQ(t.nchunks, nwant);
	for (k = 0; k < nwant && k < t.nchunks; k++)
		if (t.sizes[k] != want[k]) {
			printf("# nt %d len %zu hold %zu: chunk %zu has %zu "
			    "items, want %zu\n", nt, len, hold, k,
			    t.sizes[k], want[k]);
			t.bad++;
		}
	EXPECT_EQ(t.bad, 0);
	EXPECT_EQ(t.moved, 0);
	rv_par_free(p);
	free_states(&l);
	tctx_release(&t);
}

/*
 * Chunk sizes: the first takes 4 per thread; then budget / (mean frame
 * + 1), never under 4 per thread, never over the maximum; declared held
 * bytes close a chunk early, but not under 4 per thread.
 */
static void
t_chunk_bytes(void)
{
	/* 2 threads: at least 8; budget 1000, at most 100 */
	chunks(2, 100, 1000, 99, 0, 48,
	    (const size_t[]){ 8, 10, 10, 10, 10 }, 5);
	chunks(2, 100, 1000, 9, 0, 250,
	    (const size_t[]){ 8, 100, 100, 42 }, 4);
	chunks(2, 100, 1000, 499, 0, 20,
	    (const size_t[]){ 8, 8, 4 }, 3);
	/* empty frames: no bytes to bound, the maximum */
	chunks(2, 100, 1000, 0, 0, 120,
	    (const size_t[]){ 8, 100, 12 }, 3);
	/* held input: 100 a piece closes at 10; 300 a piece at the floor */
	chunks(2, 100, 1000, 0, 100, 38,
	    (const size_t[]){ 8, 10, 10, 10 }, 4);
	chunks(2, 100, 1000, 0, 300, 20,
	    (const size_t[]){ 8, 8, 4 }, 3);
	/* held input plus the frames' estimate: (40 + 59) x 10 >= 990 */
	chunks(2, 100, 990, 59, 40, 28,
	    (const size_t[]){ 8, 10, 10 }, 3);
	/* the floor is capped by the maximum */
	chunks(4, 3, 1000, 5000, 0, 7, (const size_t[]){ 3, 3, 1 }, 3);
	/* one thread: 4 first */
	chunks(1, 256, 64, 15, 0, 12, (const size_t[]){ 4, 4, 4 }, 3);
	/* the default budget (64 MiB) and maximum (256 per thread) */
	{
		struct life l;
		struct tctx t;
		struct rv_par *p;

		tctx_init(&t, 1, 1);
		p = make(&l, &t, 3, 0, 0, NULL);
		EXPECT_EQ(rv_par_max(p), 768);
		rv_par_free(p);
		free_states(&l);
		tctx_release(&t);
	}
	chunks(2, 0, 0, 1, 0, 600, (const size_t[]){ 8, 512, 80 }, 3);
}

/*
 * Per-worker state: made once per thread before any item, used by one
 * thread at a time, stopped once; a failing start fails rv_par_new with
 * its message and stops what was made (NULL included).
 */
static void
t_state_lifecycle(void)
{
	int nt;

	for (nt = 1; nt <= 8; nt++) {
		struct life l;
		struct tctx t;
		struct rv_par *p;
		int m, r;

		tctx_init(&t, 32, 2000);
		p = make(&l, &t, nt, 32, 0, NULL);
		for (r = 0; r < 3; r++) {
			t.next = 0;
			t.seq0 = rv_par_stats(p)->added;
			EXPECT_EQ(add_all(p, &t, 2000, 0), 0);
		}
		EXPECT_EQ(atomic_load(&l.started), nt);
		EXPECT_EQ(atomic_load(&l.stopped), 0);
		EXPECT_EQ(atomic_load(&t.wbad), 0);
		for (m = 0; m < nt; m++)
			EXPECT_EQ(atomic_load(&l.all[m]->overlap), 0);
		rv_par_free(p);
		EXPECT_EQ(atomic_load(&l.stopped), nt);
		EXPECT_EQ(atomic_load(&l.stopped_null), 0);
		for (m = 0; m < nt; m++)
			EXPECT_EQ(l.all[m]->magic, 0);
		free_states(&l);
		tctx_release(&t);
	}
	for (nt = 1; nt <= 4; nt++) {
		struct life l;
		struct tctx t;

		memset(&l, 0, sizeof(l));
		l.fail_at = nt - 1;
		cur_life = &l;
		tctx_init(&t, 8, 1);
		EXPECT(rv_par_new(&(struct rv_par_conf){ .nthreads = nt,
		    .start = start, .stop = stop, .arg = &l, .item = item,
		    .ctx = &t }) == NULL);
		{
			char want[64];
			snprintf(want, sizeof(want), "worker %d: no codec",
			    nt - 1);
			EXPECT_STR(rv_errmsg(), want);
		}
		EXPECT_EQ(atomic_load(&l.started), nt);
		EXPECT_EQ(atomic_load(&l.stopped), nt - 1);
		EXPECT_EQ(atomic_load(&l.stopped_null), 1);
		free_states(&l);
		tctx_release(&t);
	}
	/* no item function */
	EXPECT(rv_par_new(&(struct rv_par_conf){ .nthreads = 2 }) == NULL);
}

int
main(void)
{
	rv_setprogname("t_par");
	rv_progress_init(&quiet, 1, "items");
	RUN(t_once_in_order);
	RUN(t_skip);
	RUN(t_fatal);
	RUN(t_hooks_stop);
	RUN(t_chunk_bytes);
	RUN(t_state_lifecycle);
	return UNIT_DONE();
}
