/*
 * Worker pool: one mutex and two condition variables.  Items are handed
 * out by an atomic counter one at a time, so uneven item costs (a big JPEG
 * beside a small one) balance out without a queue.
 */
#include "base/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/xmem.h"

struct worker {
	struct rv_pool *pool;
	pthread_t tid;
	void *state;
};

struct rv_pool {
	int n;
	struct worker *w;
	rv_pool_stop_fn stop;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	unsigned long gen;	/* bumped for each run */
	int quit;
	int busy;		/* workers still in the current run */
	/* current job */
	rv_pool_fn fn;
	void *ctx;
	size_t items;
	atomic_size_t next;
};

static void
work(struct rv_pool *p, void *state)
{
	for (;;) {
		size_t i = atomic_fetch_add(&p->next, 1);
		if (i >= p->items)
			break;
		p->fn(state, i, p->ctx);
	}
}

static void *
thread_main(void *arg)
{
	struct worker *w = arg;
	struct rv_pool *p = w->pool;
	unsigned long seen = 0;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen && !p->quit)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->gen;
		pthread_mutex_unlock(&p->mu);
		work(p, w->state);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct rv_pool *
rv_pool_new(int nthreads, rv_pool_start_fn start, rv_pool_stop_fn stop,
    void *arg)
{
	struct rv_pool *p = xcalloc(1, sizeof(*p));
	int k;

	if (nthreads < 1)
		nthreads = 1;
	p->n = nthreads;
	p->stop = stop;
	p->w = xcalloc((size_t)nthreads, sizeof(*p->w));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	for (k = 0; k < nthreads; k++) {
		p->w[k].pool = p;
		p->w[k].state = start ? start(arg) : NULL;
	}
	for (k = 1; k < nthreads; k++) {
		if (pthread_create(&p->w[k].tid, NULL, thread_main,
		    &p->w[k]) != 0) {
			/* run with the threads we have */
			if (p->stop)
				for (int j = k; j < nthreads; j++)
					p->stop(p->w[j].state);
			p->n = k;
			break;
		}
	}
	return p;
}

void
rv_pool_run(struct rv_pool *p, size_t n, rv_pool_fn fn, void *ctx)
{
	p->fn = fn;
	p->ctx = ctx;
	p->items = n;
	atomic_store(&p->next, 0);
	if (p->n > 1 && n > 1) {
		pthread_mutex_lock(&p->mu);
		p->busy = p->n - 1;
		p->gen++;
		pthread_cond_broadcast(&p->go);
		pthread_mutex_unlock(&p->mu);
	}
	work(p, p->w[0].state);
	if (p->n > 1 && n > 1) {
		pthread_mutex_lock(&p->mu);
		while (p->busy > 0)
			pthread_cond_wait(&p->done, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
}

int
rv_pool_size(const struct rv_pool *p)
{
	return p->n;
}

void *
rv_pool_state(const struct rv_pool *p, int k)
{
	return p->w[k].state;
}

void
rv_pool_free(struct rv_pool *p)
{
	int k;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (k = 1; k < p->n; k++)
		pthread_join(p->w[k].tid, NULL);
	if (p->stop)
		for (k = 0; k < p->n; k++)
			p->stop(p->w[k].state);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	free(p->w);
	free(p);
}
