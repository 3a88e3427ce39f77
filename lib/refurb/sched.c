/*
 * The refurbishing schedule (Revamper's balanced eviction and cache-aware
 * shuffle): a chunk label per position, fixed for the run, from which
 * freshness, refresh epochs and use counts follow by arithmetic; and each
 * epoch's serving order, dealt so misses spread evenly over batches.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/rng.h"
#include "base/xmem.h"
#include "refurb/sched.h"

/* Fixed epoch of the chunk draw (op 0), outside every real epoch. */
#define SCHED_PERM_EPOCH 0xFFFFFFFFu

enum {
	SCHED_OP_CHUNKS = 0,	/* the permutation cut into chunks */
	SCHED_OP_MISSES = 1,	/* epoch e: order of the misses */
	SCHED_OP_HITS = 2,	/* epoch e: order of the hits */
	SCHED_OP_GROUP = 3,	/* epoch e, id = group: inside a group */
};

/* Start of chunk k: floor(k * n / r), without overflow for r < 2^32. */
static uint64_t
chunk_start(uint64_t n, uint32_t r, uint32_t k)
{
	return (uint64_t)k * (n / r) + (uint64_t)k * (n % r) / r;
}


int
rv_sched_init(struct rv_sched *s, uint64_t seed, uint64_t n,
    uint32_t reuse, uint32_t batch)
{
	struct rv_rng g;
	uint32_t k;

	s->seed = seed;
	s->n = n;
	s->reuse = reuse;
	s->batch = batch;
	s->chunk = NULL;
	if (n == 0)
		return rv_seterr("no samples");
	if (n > SIZE_MAX / sizeof(uint64_t))
		return rv_seterr("%llu samples: too many",
		    (unsigned long long)n);
	if (reuse == 0)
		return rv_seterr("reuse 0: must be at least 1");
	if (reuse > n)
		return rv_seterr("reuse %u: more than the %llu samples", reuse,
		    (unsigned long long)n);
	if (batch == 0)
		return rv_seterr("batch 0: must be at least 1");

	/*
	 * Cutting a uniform permutation p into chunks gives position p[i]
	 * the label of index i; shuffling the sorted labels in place gives
	 * the same distribution (the inverse of a uniform permutation is
	 * uniform) without a second N-sized array.
	 */
	s->chunk = xmalloc((size_t)n * sizeof(*s->chunk));
	for (k = 0; k < reuse; k++) {
		uint64_t i = chunk_start(n, reuse, k);
		uint64_t end = k + 1 == reuse ? n :
		    chunk_start(n, reuse, k + 1);
		for (; i < end; i++)
			s->chunk[i] = k;
	}
	rv_rng_init(&g, seed, RV_STAGE_REFURB_ORDER, SCHED_OP_CHUNKS,
	    SCHED_PERM_EPOCH, 0);
	rv_rng_shuffle_u32(&g, s->chunk, (size_t)n);
	return 0;
}

void
rv_sched_release(struct rv_sched *s)
{
	free(s->chunk);
	s->chunk = NULL;
}

int
rv_sched_fresh(const struct rv_sched *s, uint64_t pos, uint32_t e)
{
	if (e == 0 || s->reuse == 1)
		return 1;
	return s->chunk[pos] == (e - 1) % s->reuse;
}

/*
 * Chunk c is fresh in epoch 0 and in epochs c+1, c+1+r, c+1+2r, ...: the
 * last of these at or before e is found by division, not by a loop.
 */
uint32_t
rv_sched_refresh(const struct rv_sched *s, uint64_t pos, uint32_t e)
{
	uint32_t first;

	if (s->reuse == 1)
		return e;
	first = s->chunk[pos] + 1;
	if (e < first)
		return 0;
	return first + (e - first) / s->reuse * s->reuse;
}

uint32_t
rv_sched_uses(const struct rv_sched *s, uint64_t pos, uint32_t e)
{
	return e - rv_sched_refresh(s, pos, e) + 1;
}

uint64_t
rv_sched_misses(const struct rv_sched *s, uint32_t e)
{
	uint32_t k, r = s->reuse;

	if (e == 0 || r == 1)
		return s->n;
	k = (e - 1) % r;
	return (k + 1 == r ? s->n : chunk_start(s->n, r, k + 1)) -
	    chunk_start(s->n, r, k);
}

/*
 * Misses go to the output slots i with floor((i+1)m/n) > floor(im/n), i.e.
 * ((i+1)m mod n) < m: a Bresenham spread, so any B consecutive slots hold
 * floor(Bm/n) or ceil(Bm/n) misses.  The larger class (misses or hits) is
 * gathered at the front of out, the smaller in a scratch array; dealing
 * backwards from slot n-1 then never overwrites an entry of out before it
 * is read (the k-th entry of the larger class moves to a slot >= k).
 */
static int
is_miss(const struct rv_sched *s, const unsigned char *miss, uint64_t pos,
    uint32_t e)
{
	return miss != NULL ? miss[pos] != 0 : rv_sched_fresh(s, pos, e);
}

/* The deal of order(), with misses from miss[] (NULL: the schedule's),
 * m of them, and groups of batch. */
static void
order(const struct rv_sched *s, uint32_t e, const unsigned char *miss,
    uint64_t m, uint32_t batch, uint64_t *out)
{
	uint64_t n = s->n;
	uint64_t pos, i, rem, g, ngroups;
	uint64_t *small = NULL;
	size_t nbig = 0, nsmall = 0;
	int small_is_miss = m <= n - m;
	struct rv_rng rg;

	if (m != 0 && m != n)
		small = xmalloc((size_t)(small_is_miss ? m : n - m) *
		    sizeof(*small));
	for (pos = 0; pos < n; pos++) {
		if (small != NULL &&
		    is_miss(s, miss, pos, e) == small_is_miss)
			small[nsmall++] = pos;
		else
			out[nbig++] = pos;
	}

	rv_rng_init(&rg, s->seed, RV_STAGE_REFURB_ORDER,
	    small_is_miss ? SCHED_OP_HITS : SCHED_OP_MISSES, e, 0);
	rv_rng_shuffle_u64(&rg, out, nbig);
	if (small != NULL) {
		rv_rng_init(&rg, s->seed, RV_STAGE_REFURB_ORDER,
		    small_is_miss ? SCHED_OP_MISSES : SCHED_OP_HITS, e, 0);
		rv_rng_shuffle_u64(&rg, small, nsmall);

		rem = 0;	/* (i+1)m mod n, from i = n-1 down */
		for (i = n; i-- > 0;) {
			int slot_miss = rem < m;
			if (slot_miss)
				rem += n - m;
			else
				rem -= m;
			if (slot_miss == small_is_miss)
				out[i] = small[--nsmall];
			else
				out[i] = out[--nbig];
		}
		free(small);
	}

	if (batch == 1)
		return;
	ngroups = (n - 1) / batch + 1;
	for (g = 0; g < ngroups; g++) {
		uint64_t lo = g * batch;
		uint64_t len = n - lo < batch ? n - lo : batch;
		rv_rng_init(&rg, s->seed, RV_STAGE_REFURB_ORDER,
		    SCHED_OP_GROUP, e, g);
		rv_rng_shuffle_u64(&rg, out + lo, (size_t)len);
	}
}

void
rv_sched_order(const struct rv_sched *s, uint32_t e, uint64_t *out)
{
	order(s, e, NULL, rv_sched_misses(s, e), s->batch, out);
}

void
rv_sched_deal(const struct rv_sched *s, uint32_t e, const unsigned char *miss,
    uint64_t *out)
{
	uint64_t pos, m = 0;

	for (pos = 0; pos < s->n; pos++)
		m += miss[pos] != 0;
	order(s, e, miss, m, 1, out);
}
