/*
 * The trainer's input thread (train_in.h).  A ring of `depth` slots: the
 * thread fills the slot after the last filled one while it is free, the
 * trainer takes the oldest and hands it back with rv_tin_done().  Slots
 * keep their buffers, grown only when a larger batch comes, so steady
 * state allocates nothing.  Stopping sets a flag the thread sees while it
 * waits for a slot, and cancels it in case it sits in a blocking read of
 * a pipe whose writer is still busy: cancellation is enabled around that
 * read only, so the thread never dies holding the mutex or half a slot.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/xmem.h"
#include "stream/batch.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "train/train.h"
#include "train/train_in.h"

struct rv_tin {
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* any change of count */
	struct rv_tin_item *slots;
	int depth;
	int head;		/* oldest filled slot */
	int count;		/* filled slots, those being used included */
	int taken;		/* the oldest `taken` are the trainer's */
	int quit;
	/* thread side */
	char *const *paths;
	int npaths;
	uint32_t batch;
	struct rv_reader *rd;	/* open reader, closed by stop if cancelled */
	struct rv_batcher *bt;
};

/* Wait for a free slot; NULL when told to quit. */
static struct rv_tin_item *
acquire(struct rv_tin *t)
{
	struct rv_tin_item *it = NULL;

	pthread_mutex_lock(&t->mu);
	while (!t->quit && t->count == t->depth)
		pthread_cond_wait(&t->cv, &t->mu);
	if (!t->quit)
		it = &t->slots[(t->head + t->count) % t->depth];
	pthread_mutex_unlock(&t->mu);
	return it;
}

static void
publish(struct rv_tin *t)
{
	pthread_mutex_lock(&t->mu);
	t->count++;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

static void
grow(struct rv_tin_item *it, size_t n, size_t px)
{
	if (n > it->cap_n) {
		free(it->ids);
		free(it->labels);
		free(it->weights);
		it->ids = xmalloc(n * sizeof(*it->ids));
		it->labels = xmalloc(n * sizeof(*it->labels));
		it->weights = xmalloc(n * sizeof(*it->weights));
		it->cap_n = n;
	}
	if (px > it->cap_px) {
		free(it->pixels);
		it->pixels = xmalloc(px);
		it->cap_px = px;
	}
}

/* Copy a BATCH record into the next slot. */
static int
put_batch(void *ctx, const struct rv_rec *rec)
{
	struct rv_tin *t = ctx;
	struct rv_tin_item *it;
	const unsigned char *p = rec->payload;
	size_t n = rec->count, px, i;
	uint32_t u;

	if (rec->dtype != RV_DT_U8)
		return rv_seterr("batch of %s samples: the trainer needs u8 "
		    "pixels", rv_dtype_name(rec->dtype));
	if ((it = acquire(t)) == NULL)
		return rv_seterr("stopped");
	px = (size_t)rec->height * rec->width * rec->channels * n;
	grow(it, n, px);
	it->kind = RV_TIN_BATCH;
	it->n = (uint32_t)n;
	it->h = rec->height;
	it->w = rec->width;
	it->c = rec->channels;
	it->epoch = rec->epoch;
	for (i = 0; i < n; i++) {
		it->ids[i] = rv_le64(p + 8 * i);
		it->labels[i] = (int32_t)rv_le32(p + 8 * n + 4 * i);
		if (it->labels[i] < 0)
			return rv_seterr("sample %llu has no label: the "
			    "trainer needs labelled samples",
			    (unsigned long long)it->ids[i]);
		u = rv_le32(p + 12 * n + 4 * i);
		memcpy(&it->weights[i], &u, 4);
	}
	memcpy(it->pixels, p + rv_batch_pixels_off((uint32_t)n), px);
	publish(t);
	return 0;
}

static void
put_simple(struct rv_tin *t, enum rv_tin_kind kind, uint32_t epoch,
    const char *msg)
{
	struct rv_tin_item *it;

	if ((it = acquire(t)) == NULL)
		return;
	it->kind = kind;
	it->epoch = epoch;
	if (msg != NULL)
		snprintf(it->msg, sizeof(it->msg), "%s", msg);
	publish(t);
}

static int
put_meta(struct rv_tin *t, const struct rv_rec *rec)
{
	struct rv_tin_item *it;

	if ((it = acquire(t)) == NULL)
		return rv_seterr("stopped");
	rv_meta_release(&it->meta);
	rv_meta_init(&it->meta);
	/* classes and samples are always acted on: checked here; mean and
	 * std only where they are used, without --mean/--std (train.c). */
	if (rv_meta_parse(&it->meta, rec->payload,
	    (size_t)rec->payload_len) < 0 || rv_meta_counts(&it->meta) < 0)
		return -1;	/* slot not published: reused as is */
	it->kind = RV_TIN_META;
	snprintf(it->msg, sizeof(it->msg), "'%s': record %llu at byte %llu",
	    rv_reader_name(t->rd),
	    (unsigned long long)rv_reader_records(t->rd) - 1,
	    (unsigned long long)rv_reader_offset(t->rd));
	publish(t);
	return 0;
}

/* The inputs, read as one stream, to their end: 0, or -1 with a message
 * naming the record. */
static int
read_all(struct rv_tin *t)
{
	struct rv_rec rec;
	uint64_t seen = 0;	/* samples of the epoch so far */
	int r;

	if ((t->rd = rv_reader_open_list(t->paths, t->npaths)) == NULL)
		return -1;
	for (;;) {
		/* The read is the one place the thread may be cancelled. */
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		r = rv_reader_next(t->rd, &rec);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (r != 1)
			break;
		if (rec.kind == RV_SAMPLE || rec.kind == RV_BATCH)
			seen += rec.count;
		switch (rec.kind) {
		case RV_BATCH:
			/* its count would size the model's buffers */
			if (rec.count > RV_TRAIN_BATCH_MAX) {
				r = rv_seterr("batch of %u samples is over "
				    "the limit of %u (the largest -b)",
				    rec.count, RV_TRAIN_BATCH_MAX);
				break;
			}
			r = rv_batch_check_weights(&rec);
			if (r == 0)
				r = rv_batcher_end_epoch(t->bt);
			if (r == 0)
				r = put_batch(t, &rec);
			break;
		case RV_SAMPLE:
			if (rec.label < 0)
				r = rv_seterr("sample %llu has no label: the "
				    "trainer needs labelled samples",
				    (unsigned long long)rec.id);
			else
				r = rv_batcher_add(t->bt, &rec);
			break;
		case RV_EPOCH_END:
			r = rv_batch_check_epoch_end(&rec, seen);
			seen = 0;
			if (r == 0)
				r = rv_batcher_end_epoch(t->bt);
			if (r == 0)
				put_simple(t, RV_TIN_EPOCH_END, rec.epoch,
				    NULL);
			break;
		case RV_META:
			r = put_meta(t, &rec);
			break;
		default:
			r = 0;
		}
		if (r < 0) {
			rv_preferr("'%s': record %llu at byte %llu",
			    rv_reader_name(t->rd), (unsigned long long)
			    rv_reader_records(t->rd) - 1,
			    (unsigned long long)rv_reader_offset(t->rd));
			break;
		}
	}
	if (r == 0 && rv_batcher_end_epoch(t->bt) < 0)
		r = -1;
	if (r == 0 && rv_reader_check_end(t->rd) < 0)
		r = -1;
	rv_reader_close(t->rd);
	t->rd = NULL;
	return r;
}

static void *
run(void *arg)
{
	struct rv_tin *t = arg;
	int rc;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	rc = read_all(t);
	if (rc < 0)
		put_simple(t, RV_TIN_ERROR, 0, rv_errmsg());
	else
		put_simple(t, RV_TIN_END, 0, NULL);
	return NULL;
}

struct rv_tin *
rv_tin_start(char *const *paths, int npaths, uint32_t batch, int depth)
{
	struct rv_tin *t = xcalloc(1, sizeof(*t));
	struct rv_batch_conf bc;
	int i, e;

	t->depth = depth < 2 ? 2 : depth;
	t->slots = xcalloc((size_t)t->depth, sizeof(*t->slots));
	for (i = 0; i < t->depth; i++)
		rv_meta_init(&t->slots[i].meta);
	t->paths = paths;
	t->npaths = npaths;
	t->batch = batch;
	rv_batch_conf_init(&bc);
	bc.size = batch;
	t->bt = rv_batcher_new(&bc, put_batch, t);
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	if ((e = pthread_create(&t->th, NULL, run, t)) != 0) {
		errno = e;
		rv_seterr("input thread:");
		rv_tin_stop(t);
		return NULL;
	}
	t->started = 1;
	return t;
}

struct rv_tin_item *
rv_tin_next(struct rv_tin *t, double *waited, volatile sig_atomic_t *stop)
{
	struct rv_tin_item *it = NULL;
	double t0 = rv_now();
	struct timespec ts;

	pthread_mutex_lock(&t->mu);
	while (t->count <= t->taken && !(stop != NULL && *stop)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&t->cv, &t->mu, &ts);
	}
	if (t->count > t->taken)
		it = &t->slots[(t->head + t->taken++) % t->depth];
	pthread_mutex_unlock(&t->mu);
	if (waited != NULL)
		*waited += rv_now() - t0;
	return it;
}

void
rv_tin_done(struct rv_tin *t, struct rv_tin_item *it)
{
	(void)it;
	pthread_mutex_lock(&t->mu);
	t->head = (t->head + 1) % t->depth;
	t->count--;
	t->taken--;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

void
rv_tin_stop(struct rv_tin *t)
{
	int i;

	if (t == NULL)
		return;
	if (t->started) {
		pthread_mutex_lock(&t->mu);
		t->quit = 1;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_cancel(t->th);
		pthread_join(t->th, NULL);
	}
	rv_reader_close(t->rd);
	rv_batcher_free(t->bt);
	for (i = 0; i < t->depth; i++) {
		struct rv_tin_item *it = &t->slots[i];
		free(it->ids);
		free(it->labels);
		free(it->weights);
		free(it->pixels);
		rv_meta_release(&it->meta);
	}
	free(t->slots);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	free(t);
}
