/*
 * The worker pool: every index runs exactly once for n = 0, 1, small and
 * large with 1 to 8 threads, over repeated runs of one pool; each worker's
 * state is made once, used by one thread at a time, and stopped once; a
 * start that fails leaves its worker's state NULL (pool.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/pool.h"
#include "unit.h"

struct wstate {
	int magic;
	atomic_int busy;	/* 1 while fn runs with this state */
	atomic_int overlap;	/* fn ran twice at once on this state */
	long items;		/* items this worker ran */
	int stopped;
};

struct counts {
	atomic_int started, stopped;
	struct wstate *all[16];
};

static void *
start(void *arg)
{
	struct counts *c = arg;
	struct wstate *s = calloc(1, sizeof(*s));
	int k = atomic_fetch_add(&c->started, 1);

	s->magic = 0x5eed;
	if (k < 16)
		c->all[k] = s;
	return s;
}

static struct counts *stop_counts;

static void
stop(void *state)
{
	struct wstate *s = state;

	s->stopped++;
	atomic_fetch_add(&stop_counts->stopped, 1);
}

struct job {
	atomic_int *hits;
	uint64_t *slot;
	atomic_int badstate;
};

static void
work(void *state, size_t i, void *ctx)
{
	struct job *j = ctx;
	struct wstate *s = state;

	if (!s || s->magic != 0x5eed) {
		atomic_fetch_add(&j->badstate, 1);
		return;
	}
	if (atomic_exchange(&s->busy, 1))
		atomic_store(&s->overlap, 1);
	atomic_fetch_add(&j->hits[i], 1);
	j->slot[i] = (uint64_t)i * 2654435761u;
	s->items++;
	atomic_store(&s->busy, 0);
}

static void
t_every_index_once(void)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 7, 64, 100000 };
	int nt, bad = 0;

	for (nt = 1; nt <= 8; nt++) {
		struct counts c;
		struct rv_pool *p;
		size_t k, i;
		long total = 0;

		memset(&c, 0, sizeof(c));
		stop_counts = &c;
		p = rv_pool_new(nt, start, stop, &c);
		EXPECT_EQ(rv_pool_size(p), nt);
		EXPECT_EQ(atomic_load(&c.started), nt);
		for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t n = sizes[k];
			struct job j;
			j.hits = calloc(n + 1, sizeof(*j.hits));
			j.slot = calloc(n + 1, sizeof(*j.slot));
			atomic_init(&j.badstate, 0);
			/* twice: a pool is reused across runs */
			rv_pool_run(p, n, work, &j);
			rv_pool_run(p, n, work, &j);
			for (i = 0; i < n; i++)
				if (atomic_load(&j.hits[i]) != 2 ||
				    j.slot[i] != (uint64_t)i * 2654435761u)
					bad++;
			if (atomic_load(&j.hits[n]) != 0)
				bad++;
			if (atomic_load(&j.badstate))
				bad++;
			total += 2 * (long)n;
			free(j.hits);
			free(j.slot);
		}
		/* the states are the pool's, each used by one thread at a
		 * time, and together they ran every item */
		{
			long sum = 0;
			int w;
			for (w = 0; w < nt; w++) {
				struct wstate *s = rv_pool_state(p, w);
				int found = 0, m;
				for (m = 0; m < nt; m++)
					found += c.all[m] == s;
				EXPECT_EQ(found, 1);
				EXPECT_EQ(atomic_load(&s->overlap), 0);
				sum += s->items;
			}
			EXPECT_EQ(sum, total);
		}
		rv_pool_free(p);
		EXPECT_EQ(atomic_load(&c.stopped), nt);
		for (k = 0; k < (size_t)nt; k++) {
			EXPECT_EQ(c.all[k]->stopped, 1);
			free(c.all[k]);
		}
	}
	EXPECT_EQ(bad, 0);
}

/* With more than one thread, work is shared (not all on the caller). */
struct spread {
	pthread_t who[64];
	atomic_int n;
};

static void
slow(void *state, size_t i, void *ctx)
{
	struct spread *s = ctx;
	volatile unsigned x = 0;
	unsigned k;

	for (k = 0; k < 2000000; k++)
		x += k;
	s->who[i] = pthread_self();
	atomic_fetch_add(&s->n, 1);
}

static void
t_shared(void)
{
	struct rv_pool *p = rv_pool_new(4, NULL, NULL, NULL);
	struct spread s;
	int i, distinct = 1;

	memset(&s, 0, sizeof(s));
	rv_pool_run(p, 64, slow, &s);
	EXPECT_EQ(atomic_load(&s.n), 64);
	for (i = 1; i < 64; i++)
		if (!pthread_equal(s.who[i], s.who[0]))
			distinct = 2;
	EXPECT_EQ(distinct, 2);
	/* no start hook: every state is NULL */
	for (i = 0; i < 4; i++)
		EXPECT(rv_pool_state(p, i) == NULL);
	rv_pool_free(p);
	rv_pool_free(NULL);
	/* a pool of 1 runs on the caller */
	p = rv_pool_new(0, NULL, NULL, NULL);
	EXPECT_EQ(rv_pool_size(p), 1);
	memset(&s, 0, sizeof(s));
	rv_pool_run(p, 3, slow, &s);
	EXPECT(pthread_equal(s.who[0], pthread_self()) &&
	    pthread_equal(s.who[2], pthread_self()));
	rv_pool_free(p);
}

/* start() runs on the caller, once a worker, in order; one that fails
 * leaves that state NULL and the others made; stop() gets every state,
 * the NULL one too. */
struct order {
	pthread_t caller;
	int next, bad, wrong_thread, stops, null_stops;
	int seen[8];
};

static void *
start_some(void *arg)
{
	struct order *o = arg;
	int k = o->next++;

	if (!pthread_equal(pthread_self(), o->caller))
		o->wrong_thread = 1;
	if (k == o->bad) {
		rv_seterr("worker %d cannot start", k);
		return NULL;
	}
	o->seen[k] = k + 1;
	return &o->seen[k];
}

static struct order *stop_order;

static void
stop_some(void *state)
{
	stop_order->stops++;
	stop_order->null_stops += state == NULL;
}

static void
t_start_fails(void)
{
	struct order o;
	struct rv_pool *p;
	int k;

	memset(&o, 0, sizeof(o));
	o.caller = pthread_self();
	o.bad = 2;
	stop_order = &o;
	p = rv_pool_new(4, start_some, stop_some, &o);
	EXPECT_EQ(rv_pool_size(p), 4);
	EXPECT_EQ(o.next, 4);
	EXPECT_EQ(o.wrong_thread, 0);
	for (k = 0; k < 4; k++)
		EXPECT(k == 2 ? rv_pool_state(p, k) == NULL :
		    rv_pool_state(p, k) == &o.seen[k] && o.seen[k] == k + 1);
	EXPECT_STR(rv_errmsg(), "worker 2 cannot start");
	rv_pool_free(p);
	EXPECT_EQ(o.stops, 4);
	EXPECT_EQ(o.null_stops, 1);
}

int
main(void)
{
	rv_setprogname("t_pool");
	RUN(t_every_index_once);
	RUN(t_shared);
	RUN(t_start_fails);
	return UNIT_DONE();
}
