/*
 * The refurbishing schedule (Revamper, USENIX ATC 2021): which samples get
 * a fresh partial augmentation in which epoch, and the order an epoch is
 * served in.  Pure functions of (seed, N, r, B, epoch): no state, so any
 * epoch can be planned alone (offline mode, --resume, --epoch-range) and
 * the plan never depends on threads, memory limits or what the cache
 * happens to hold.
 *
 * Positions 0..N-1 index the input's samples in input order.  A seeded
 * permutation of the positions, fixed for the run, is cut into r chunks of
 * near-equal size (chunk k = permutation[k*N/r .. (k+1)*N/r)).  Epoch 0
 * computes every partial; epoch e >= 1 recomputes chunk (e-1) mod r, so
 * every partial is served exactly r times in steady state and every epoch
 * after the first does about N/r partial augmentations.  r = 1 recomputes
 * everything every epoch (standard training).
 *
 * In the first cycle chunk c is served c+1 times (epochs 0..c) before its
 * first recompute in epoch c+1; from then on exactly r times.  This is
 * inherent to evicting one chunk per epoch after a full first epoch.
 *
 * Randomness, all RV_STAGE_REFURB_ORDER (never change: outputs depend on
 * it): op 0, epoch 0xFFFFFFFF, id 0 draws the chunks (a fixed epoch no
 * real epoch's draws use); op 1 and op 2, epoch e, id 0 shuffle the misses
 * and the hits; op 3, epoch e, id g shuffles inside group g.
 *
 * A struct rv_sched is read-only after rv_sched_init: every function below
 * taking a const pointer may run from many threads at once.
 */
#ifndef RV_SCHED_H
#define RV_SCHED_H

#include <stddef.h>
#include <stdint.h>

struct rv_sched {
	uint64_t seed;
	uint64_t n;		/* samples per epoch */
	uint32_t reuse;		/* r >= 1 */
	uint32_t batch;		/* B >= 1, for the cache-aware shuffle */
	uint32_t *chunk;	/* chunk of each position, owned */
};

/*
 * Plan for n positions: allocates the chunk array (n u32; xmalloc, so an
 * exhaustion exits).  0, or -1 with rv_errmsg() set and nothing allocated
 * when n = 0 ("no samples"), n is too large to address, reuse = 0,
 * reuse > n or batch = 0.  rv_sched_release frees the chunk array and
 * sets it to NULL: safe after a failed init and when called twice.
 */
int rv_sched_init(struct rv_sched *s, uint64_t seed, uint64_t n,
    uint32_t reuse, uint32_t batch);
void rv_sched_release(struct rv_sched *s);

/* 1 if position pos gets a fresh partial in epoch e (a miss).  Here and
 * below pos < s->n (not checked) and any epoch e is allowed. */
int rv_sched_fresh(const struct rv_sched *s, uint64_t pos, uint32_t e);
/* The epoch whose partial of pos is served in epoch e: the last epoch
 * <= e in which pos was fresh.  It keys the partial's random numbers. */
uint32_t rv_sched_refresh(const struct rv_sched *s, uint64_t pos, uint32_t e);
/* How many times the partial served for pos in epoch e has been served,
 * this time included: e - rv_sched_refresh(s, pos, e) + 1. */
uint32_t rv_sched_uses(const struct rv_sched *s, uint64_t pos, uint32_t e);
/* Misses planned in epoch e (N for e = 0 or r = 1, else the size of
 * chunk (e-1) mod r: floor(N/r) or ceil(N/r)). */
uint64_t rv_sched_misses(const struct rv_sched *s, uint32_t e);

/*
 * Epoch e's order into out[0..n): every position once.  Misses and hits
 * are shuffled separately, dealt so that every group of B consecutive
 * outputs (aligned: 0..B-1, B..2B-1, ...) holds the same number of misses
 * (+-1), and each group is then shuffled inside.  Randomness keyed by
 * (seed, RV_STAGE_REFURB_ORDER, epoch).
 *
 * The deal puts a miss in slot i iff floor((i+1)m/N) > floor(im/N), m the
 * misses, so every window of B consecutive slots holds floor(Bm/N) or
 * ceil(Bm/N) misses; the shuffle inside aligned groups keeps that for each
 * aligned group (the last, of len < B slots, holds floor or ceil of
 * len*m/N), not for windows across two groups.  B = 1 returns the dealt
 * order.  O(N) time; allocates (and frees before returning) a scratch of
 * min(m, N-m) u64, at most N/2 entries.  out must hold s->n entries.
 */
void rv_sched_order(const struct rv_sched *s, uint32_t e, uint64_t *out);
/*
 * The same deal for misses given by miss[pos] != 0 (n entries) instead
 * of the schedule's, and no groups (B = 1): every window of w consecutive
 * outputs holds floor or ceil of w m / N misses.  rv-refurbish --score
 * deals the candidates it offers the scorer with it, the misses being
 * the samples whose partial is due (refurb.h).
 */
void rv_sched_deal(const struct rv_sched *s, uint32_t e,
    const unsigned char *miss, uint64_t *out);

#endif
