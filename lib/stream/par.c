/*
 * Ordered parallel runs (par.h): a pool, one array of slots reused chunk
 * after chunk, and the sizing rule that keeps a chunk's frames near the
 * byte budget while giving every worker several items per wait.
 */
#include "stream/par.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/progress.h"
#include "base/xmem.h"

struct rv_par {
	struct rv_par_conf c;
	struct rv_pool *pool;
	struct rv_par_slot *slots;
	size_t max;		/* slots */
	size_t lo;		/* fewest items a chunk closes with */
	size_t cur;		/* items the pending chunk takes */
	size_t n;		/* items pending */
	size_t held;		/* bytes the caller holds for them */
	size_t avg;		/* mean frame of the last chunk */
	struct rv_par_stats st;
	int failed;
	char err[RV_PAR_MSGLEN];
};

struct rv_par *
rv_par_new(const struct rv_par_conf *conf)
{
	struct rv_par *p;
	char msg[RV_PAR_MSGLEN];
	int k, nw;

	if (!conf->item) {
		rv_seterr("par: no item function");
		return NULL;
	}
	p = xcalloc(1, sizeof(*p));
	p->c = *conf;
	if (p->c.budget == 0)
		p->c.budget = RV_PAR_BUDGET;
	p->pool = rv_pool_new(conf->nthreads, conf->start, conf->stop,
	    conf->arg);
	nw = rv_pool_size(p->pool);
	for (k = 0; conf->start && k < nw; k++) {
		if (!rv_pool_state(p->pool, k)) {
			/* the stop hooks must not lose the start's message */
			snprintf(msg, sizeof(msg), "%s", rv_errmsg());
			rv_par_free(p);
			rv_seterr("%s", msg);
			return NULL;
		}
	}
	p->max = conf->max_items ? conf->max_items : (size_t)256 * nw;
	p->lo = (size_t)4 * nw;
	if (p->lo > p->max)
		p->lo = p->max;
	p->cur = p->lo;
	p->slots = xcalloc(p->max, sizeof(*p->slots));
	return p;
}

void
rv_par_free(struct rv_par *p)
{
	size_t i;

	if (!p)
		return;
	rv_pool_free(p->pool);
	if (p->slots)
		for (i = 0; i < p->max; i++)
			rv_buf_release(&p->slots[i].frame);
	free(p->slots);
	free(p);
}

size_t
rv_par_max(const struct rv_par *p)
{
	return p->max;
}

int
rv_par_threads(const struct rv_par *p)
{
	return rv_pool_size(p->pool);
}

const struct rv_par_stats *
rv_par_stats(const struct rv_par *p)
{
	return &p->st;
}

/* Remember the failure: the rv_par is spent. */
static int
fail(struct rv_par *p)
{
	p->failed = 1;
	snprintf(p->err, sizeof(p->err), "%s", rv_errmsg());
	return -1;
}

/*
 * How many items the next chunk takes, from the last one's frames: enough
 * to keep every worker busy between two waits (lo), few enough that the
 * frames stay near the budget (a chunk of 256 x J decoded photographs
 * would hold gigabytes).
 */
static size_t
chunk_items(const struct rv_par *p, size_t bytes, size_t items)
{
	size_t want;

	if (items == 0 || bytes == 0)
		return p->max;
	want = p->c.budget / (bytes / items + 1);
	if (want < p->lo)
		want = p->lo;
	return want < p->max ? want : p->max;
}

static void
run_item(void *state, size_t i, void *ctx)
{
	struct rv_par *p = ctx;
	struct rv_par_slot *s = &p->slots[i];
	int rc;

	rc = p->c.item(state, i, s, p->c.ctx);
	if (rc != RV_PAR_OK) {
		s->status = rc < 0 ? RV_PAR_FATAL : RV_PAR_SKIP;
		snprintf(s->msg, sizeof(s->msg), "%s", rv_errmsg());
	}
}

/*
 * What the slots keep between chunks: their frame buffers, each as large
 * as the largest frame it has held, so that over a long run every slot
 * comes to hold the largest frames and memory grows to slots x the
 * largest frame, not the budget.  Past one and a half budgets, the
 * buffers of the slots the next chunk does not take, and those over twice
 * the last chunk's mean frame, are let go.
 */
static void
trim(struct rv_par *p)
{
	size_t i, kept = 0, big = 2 * p->avg + 4096;

	for (i = 0; i < p->max; i++)
		kept += p->slots[i].frame.cap;
	if (kept <= p->c.budget + p->c.budget / 2)
		return;
	for (i = 0; i < p->max; i++)
		if (i >= p->cur || p->slots[i].frame.cap > big)
			rv_buf_release(&p->slots[i].frame);
}

/* Run the pending chunk on the pool, then consume it in order. */
static int
run(struct rv_par *p)
{
	size_t i, n = p->n, bytes = 0;

	if (n == 0)
		return 0;
	if (p->c.before && p->c.before(p->c.ctx, p->slots, n) < 0)
		return fail(p);
	rv_pool_run(p->pool, n, run_item, p);
	p->st.chunks++;
	for (i = 0; i < n; i++)
		bytes += p->slots[i].frame.len;
	p->cur = chunk_items(p, bytes, n);
	p->avg = bytes / n;
	p->n = 0;
	p->held = 0;
	for (i = 0; i < n; i++) {
		const struct rv_par_slot *s = &p->slots[i];
		if (p->c.each && p->c.each(p->c.ctx, i, s) < 0)
			return fail(p);
		if (s->status == RV_PAR_FATAL) {
			rv_seterr("%s", s->msg);
			return fail(p);
		}
		if (s->status == RV_PAR_SKIP) {
			p->st.skipped++;
		} else if (s->frame.len) {
			if (p->c.out && rv_writer_put_frames(p->c.out,
			    s->frame.data, s->frame.len, 1) < 0)
				return fail(p);
			p->st.frames++;
		}
		p->st.consumed++;
	}
	if (p->c.after && p->c.after(p->c.ctx, p->slots, n) < 0)
		return fail(p);
	trim(p);
	if (p->c.prog)
		rv_progress_tick(p->c.prog, p->st.frames);
	return 0;
}

int
rv_par_add(struct rv_par *p, size_t hold, size_t *slot)
{
	struct rv_par_slot *s;

	if (p->failed)
		return rv_seterr("%s", p->err);
	if (p->n >= p->cur || (p->n >= p->lo &&
	    p->held + p->n * p->avg >= p->c.budget))
		if (run(p) < 0)
			return -1;
	s = &p->slots[p->n];
	s->seq = p->st.added++;
	s->frame.len = 0;
	s->status = RV_PAR_OK;
	s->msg[0] = '\0';
	p->held += hold;
	*slot = p->n++;
	return 0;
}

int
rv_par_flush(struct rv_par *p)
{
	if (p->failed)
		return rv_seterr("%s", p->err);
	return run(p);
}
