/*
 * The attack on the id maps' old hash (issue 47, finding 11), for the
 * tests that show it no longer works: ids chosen to share one home under
 * splitmix64's finaliser, which rv hashed ids with unkeyed; and CPU time,
 * which the tests compare rather than wall time on a shared machine.
 */
#ifndef RV_TEST_CRAFTED_H
#define RV_TEST_CRAFTED_H

#include <stdint.h>
#include <time.h>

#define CRAFT_C1	0xBF58476D1CE4E5B9ull
#define CRAFT_C2	0x94D049BB133111EBull

static inline double
cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The old hash, and the x of y = x ^ (x >> s), and 1/c mod 2^64. */
static inline uint64_t
old_hash(uint64_t x)
{
	x = (x ^ (x >> 30)) * CRAFT_C1;
	x = (x ^ (x >> 27)) * CRAFT_C2;
	return x ^ (x >> 31);
}

static inline uint64_t
unshift(uint64_t y, int s)
{
	uint64_t x = y, t;

	for (t = y >> s; t != 0; t >>= s)
		x ^= t;
	return x;
}

static inline uint64_t
inverse(uint64_t c)
{
	uint64_t x = c;
	int i;

	for (i = 0; i < 5; i++)
		x *= 2 - c * x;
	return x;
}

/* The k-th (k >= 1) id whose old hash is 0 modulo 2^21: one home in
 * every map of up to a million ids, as an attacker would make them. */
static inline uint64_t
crafted(uint64_t k)
{
	uint64_t x = unshift(k << 21, 31) * inverse(CRAFT_C2);

	x = unshift(x, 27) * inverse(CRAFT_C1);
	return unshift(x, 30);
}

#endif
