/*
 * Counter-based randomness (Philox4x32-10, Salmon et al., SC'11), keyed by
 * (seed, stage, op) and counted by (epoch, id): any sample's random numbers
 * depend only on what it is, never on which thread or process drew them,
 * so output bytes are the same for any -j and any pipeline split.
 * A struct rv_rng is plain state, cheap to make on the stack, one user.
 */
#ifndef RV_RNG_H
#define RV_RNG_H

#include <stddef.h>
#include <stdint.h>

/* Stages: who draws.  Never renumber; outputs depend on them. */
enum rv_stage {
	RV_STAGE_DECODE_ORDER = 1,	/* rv-decode --shuffle */
	RV_STAGE_BATCH_SHUFFLE = 2,	/* rv-batch --shuffle-buffer */
	RV_STAGE_AUGMENT = 3,		/* rv-augment ops */
	RV_STAGE_PARTIAL = 4,		/* rv-refurbish partial ops */
	RV_STAGE_FINAL = 5,		/* rv-refurbish final ops */
	RV_STAGE_REFURB_ORDER = 6,	/* rv-refurbish permutations */
	RV_STAGE_SCORE = 7,		/* rv-score keep decisions */
	RV_STAGE_TRAIN = 8,		/* rv-train-gpu init, dropout */
};

struct rv_rng {
	uint32_t key[2];
	uint32_t ctr[4];
	uint32_t out[4];
	int used;		/* words of out[] consumed */
};

void rv_rng_init(struct rv_rng *r, uint64_t seed, uint32_t stage,
    uint32_t op, uint32_t epoch, uint64_t id);
uint32_t rv_rng_u32(struct rv_rng *r);
uint64_t rv_rng_u64(struct rv_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double rv_rng_uniform(struct rv_rng *r);
/* Uniform in [0, n), unbiased (Lemire's method); 0 when n is 0. */
uint64_t rv_rng_below(struct rv_rng *r, uint64_t n);
/* Fisher-Yates shuffle of v[0..n). */
void rv_rng_shuffle_u64(struct rv_rng *r, uint64_t *v, size_t n);
/* The same shuffle (the same draws) on u32 elements. */
void rv_rng_shuffle_u32(struct rv_rng *r, uint32_t *v, size_t n);

/* The raw Philox4x32-10 block function (for known-answer tests). */
void rv_philox4x32(const uint32_t key[2], const uint32_t ctr[4],
    uint32_t out[4]);

#endif
