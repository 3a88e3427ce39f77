/*
 * The counter-based generator: Philox4x32-10 against the Random123
 * known-answer vectors, the keying by (seed, stage, op, epoch, id), a
 * pinned first output (outputs of every program depend on it), unbiased
 * rv_rng_below (chi-square) and shuffles that are permutations.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/rng.h"
#include "unit.h"

/* Random123 kat_vectors, philox4x32_10 */
static void
t_philox_kat(void)
{
	static const struct {
		uint32_t ctr[4], key[2], out[4];
	} kat[] = {
		{ { 0, 0, 0, 0 }, { 0, 0 },
		  { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
		{ { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff },
		  { 0xffffffff, 0xffffffff },
		  { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
		{ { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 },
		  { 0xa4093822, 0x299f31d0 },
		  { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
	};
	size_t i;
	int k;

	for (i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
		uint32_t out[4];
		rv_philox4x32(kat[i].key, kat[i].ctr, out);
		for (k = 0; k < 4; k++) {
			if (out[k] != kat[i].out[k])
				printf("# kat %zu word %d: %08x != %08x\n", i,
				    k, out[k], kat[i].out[k]);
			EXPECT(out[k] == kat[i].out[k]);
		}
	}
}

/*
 * The first outputs for a fixed key are part of every program's output
 * (shuffles, augmentations): pin them, so a change shows up here first.
 */
static void
t_pinned(void)
{
	struct rv_rng g;
	uint32_t a, b;

	rv_rng_init(&g, 1, RV_STAGE_DECODE_ORDER, 0, 0, 0);
	a = rv_rng_u32(&g);
	b = rv_rng_u32(&g);
	printf("# seed 1 stage 1: %08x %08x\n", a, b);
	EXPECT(a == 0xeba74d92u);
	EXPECT(b == 0xb664585cu);
	/* the stage numbers are fixed too */
	EXPECT_EQ(RV_STAGE_DECODE_ORDER, 1);
	EXPECT_EQ(RV_STAGE_BATCH_SHUFFLE, 2);
	EXPECT_EQ(RV_STAGE_AUGMENT, 3);
	EXPECT_EQ(RV_STAGE_PARTIAL, 4);
	EXPECT_EQ(RV_STAGE_FINAL, 5);
	EXPECT_EQ(RV_STAGE_REFURB_ORDER, 6);
	EXPECT_EQ(RV_STAGE_SCORE, 7);
	EXPECT_EQ(RV_STAGE_TRAIN, 8);
}

/* Draw 8 words. */
static void
draw(uint64_t seed, uint32_t stage, uint32_t op, uint32_t epoch,
    uint64_t id, uint32_t out[8])
{
	struct rv_rng g;
	int i;

	rv_rng_init(&g, seed, stage, op, epoch, id);
	for (i = 0; i < 8; i++)
		out[i] = rv_rng_u32(&g);
}

static void
t_keying(void)
{
	uint32_t base[8], x[8];
	struct rv_rng g;
	uint32_t w[4];

	draw(42, 3, 1, 2, 1000, base);
	draw(42, 3, 1, 2, 1000, x);
	EXPECT(memcmp(base, x, sizeof(x)) == 0);
	/* every part of the key or counter changes everything */
	draw(43, 3, 1, 2, 1000, x);
	EXPECT(memcmp(base, x, sizeof(x)) != 0);
	draw(42, 4, 1, 2, 1000, x);
	EXPECT(memcmp(base, x, sizeof(x)) != 0);
	draw(42, 3, 2, 2, 1000, x);
	EXPECT(memcmp(base, x, sizeof(x)) != 0);
	draw(42, 3, 1, 3, 1000, x);
	EXPECT(memcmp(base, x, sizeof(x)) != 0);
	draw(42, 3, 1, 2, 1001, x);
	EXPECT(memcmp(base, x, sizeof(x)) != 0);
	draw(42, 3, 1, 2, 1000 + (1ull << 32), x);
	EXPECT(memcmp(base, x, sizeof(x)) != 0);
	/* stage and op are not interchangeable */
	draw(42, 1, 3, 2, 1000, x);
	draw(42, 3, 1, 2, 1000, base);
	EXPECT(memcmp(base, x, sizeof(x)) != 0);

	/* the generator is Philox on (0..n, epoch, id lo, id hi) */
	rv_rng_init(&g, 7, 1, 0, 5, 0x100000002ull);
	EXPECT(g.ctr[1] == 5 && g.ctr[2] == 2 && g.ctr[3] == 1);
	rv_philox4x32(g.key, (uint32_t[4]){ 1, 5, 2, 1 }, w);
	(void)rv_rng_u64(&g);
	(void)rv_rng_u64(&g);
	EXPECT(rv_rng_u32(&g) == w[0]);
	/* u64 is two u32, high first */
	rv_rng_init(&g, 7, 1, 0, 5, 0);
	{
		struct rv_rng h = g;
		uint64_t v = rv_rng_u64(&g);
		uint32_t hi = rv_rng_u32(&h), lo = rv_rng_u32(&h);
		EXPECT(v == ((uint64_t)hi << 32 | lo));
	}
}

static void
t_uniform(void)
{
	struct rv_rng g;
	double sum = 0, lo = 1, hi = 0;
	int i;

	rv_rng_init(&g, 9, 1, 0, 0, 0);
	for (i = 0; i < 100000; i++) {
		double u = rv_rng_uniform(&g);
		EXPECT(u >= 0 && u < 1);
		sum += u;
		if (u < lo)
			lo = u;
		if (u > hi)
			hi = u;
	}
	EXPECT(fabs(sum / 100000 - 0.5) < 0.005);
	EXPECT(lo < 0.001 && hi > 0.999);
}

/*
 * Chi-square of rv_rng_below(n) over n cells; the limits are the 0.001
 * quantiles, and the seeds are fixed, so the test is deterministic.
 */
static double
chi2_below(uint64_t seed, uint64_t n, int draws)
{
	struct rv_rng g;
	int *cnt = calloc((size_t)n, sizeof(*cnt));
	double e = (double)draws / (double)n, chi = 0;
	uint64_t k;
	int i;

	rv_rng_init(&g, seed, 2, 0, 0, 0);
	for (i = 0; i < draws; i++) {
		uint64_t v = rv_rng_below(&g, n);
		if (v >= n) {
			free(cnt);
			return 1e9;
		}
		cnt[v]++;
	}
	for (k = 0; k < n; k++)
		chi += (cnt[k] - e) * (cnt[k] - e) / e;
	free(cnt);
	return chi;
}

static void
t_below(void)
{
	struct rv_rng g;
	double c;
	int i, top = 0;

	c = chi2_below(1, 2, 100000);
	printf("# chi2 n=2: %.2f (limit 10.83)\n", c);
	EXPECT(c < 10.83);
	c = chi2_below(2, 7, 70000);
	printf("# chi2 n=7: %.2f (limit 22.46)\n", c);
	EXPECT(c < 22.46);
	c = chi2_below(3, 10, 100000);
	printf("# chi2 n=10: %.2f (limit 27.88)\n", c);
	EXPECT(c < 27.88);
	c = chi2_below(4, 100, 200000);
	printf("# chi2 n=100: %.2f (limit 148.23)\n", c);
	EXPECT(c < 148.23);

	rv_rng_init(&g, 5, 2, 0, 0, 0);
	EXPECT_EQ(rv_rng_below(&g, 1), 0);
	EXPECT_EQ(rv_rng_below(&g, 0), 0);
	/* the worst case for rejection: n just above 2^63, every draw in
	 * range and both halves hit */
	for (i = 0; i < 1000; i++) {
		uint64_t n = (1ull << 63) + 1, v = rv_rng_below(&g, n);
		EXPECT(v < n);
		top += v >= (1ull << 62);
	}
	EXPECT(top > 400 && top < 600);
	for (i = 0; i < 1000; i++)
		EXPECT(rv_rng_below(&g, UINT64_MAX) < UINT64_MAX);
}

static int
is_perm(const uint64_t *v, size_t n)
{
	char *seen = calloc(n + 1, 1);
	size_t i;
	int ok = 1;

	for (i = 0; i < n; i++) {
		if (v[i] >= n || seen[v[i]])
			ok = 0;
		else
			seen[v[i]] = 1;
	}
	free(seen);
	return ok;
}

static void
t_shuffle(void)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 10, 1000, 65537 };
	struct rv_rng g;
	uint64_t *v = malloc(65537 * sizeof(*v));
	size_t i, k;
	int cnt[6] = { 0 }, moved = 0;
	double chi = 0;

	rv_rng_init(&g, 11, 2, 0, 0, 0);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (i = 0; i < sizes[k]; i++)
			v[i] = i;
		rv_rng_shuffle_u64(&g, v, sizes[k]);
		EXPECT(is_perm(v, sizes[k]));
	}
	for (i = 0; i < 1000; i++)
		moved += v[i] != i;
	EXPECT(moved > 900);

	/* all 6 orders of 3 items equally likely */
	for (k = 0; k < 60000; k++) {
		v[0] = 0;
		v[1] = 1;
		v[2] = 2;
		rv_rng_shuffle_u64(&g, v, 3);
		cnt[v[0] * 2 + (v[1] > v[2])]++;
	}
	for (k = 0; k < 6; k++)
		chi += (cnt[k] - 10000.0) * (cnt[k] - 10000.0) / 10000.0;
	printf("# chi2 of the 6 orders of 3: %.2f (limit 20.52)\n", chi);
	EXPECT(chi < 20.52);

	/* the same key shuffles the same way */
	{
		struct rv_rng a, b;
		uint64_t x[100], y[100];
		for (i = 0; i < 100; i++)
			x[i] = y[i] = i;
		rv_rng_init(&a, 3, 1, 0, 4, 0);
		rv_rng_init(&b, 3, 1, 0, 4, 0);
		rv_rng_shuffle_u64(&a, x, 100);
		rv_rng_shuffle_u64(&b, y, 100);
		EXPECT(memcmp(x, y, sizeof(x)) == 0);
	}
	free(v);
}

int
main(void)
{
	rv_setprogname("t_rng");
	RUN(t_philox_kat);
	RUN(t_pinned);
	RUN(t_keying);
	RUN(t_uniform);
	RUN(t_below);
	RUN(t_shuffle);
	return UNIT_DONE();
}
