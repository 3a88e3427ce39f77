/*
 * Philox4x32-10 (Salmon et al., SC'11), checked against the Random123
 * known-answer vectors in tests/unit/t_rng.c; the key is derived from
 * (seed, stage, op) with splitmix64 so nearby seeds give unrelated streams.
 */
#include "base/rng.h"
#include "base/rng_philox.h"

static uint64_t
splitmix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

void
rv_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4])
{
	rv_philox_block(key[0], key[1], ctr[0], ctr[1], ctr[2], ctr[3], out);
}

void
rv_rng_init(struct rv_rng *r, uint64_t seed, uint32_t stage, uint32_t op,
    uint32_t epoch, uint64_t id)
{
	uint64_t k = splitmix64(seed ^ splitmix64((uint64_t)stage << 32 | op));

	r->key[0] = (uint32_t)k;
	r->key[1] = (uint32_t)(k >> 32);
	r->ctr[0] = 0;
	r->ctr[1] = epoch;
	r->ctr[2] = (uint32_t)id;
	r->ctr[3] = (uint32_t)(id >> 32);
	r->used = 4;
}

uint32_t
rv_rng_u32(struct rv_rng *r)
{
	if (r->used == 4) {
		rv_philox4x32(r->key, r->ctr, r->out);
		r->ctr[0]++;
		r->used = 0;
	}
	return r->out[r->used++];
}

uint64_t
rv_rng_u64(struct rv_rng *r)
{
	uint64_t hi = rv_rng_u32(r);

	return hi << 32 | rv_rng_u32(r);
}

double
rv_rng_uniform(struct rv_rng *r)
{
	return (double)(rv_rng_u64(r) >> 11) * 0x1.0p-53;
}

uint64_t
rv_rng_below(struct rv_rng *r, uint64_t n)
{
	unsigned __int128 m;
	uint64_t lo;

	if (n == 0)
		return 0;
	m = (unsigned __int128)rv_rng_u64(r) * n;
	lo = (uint64_t)m;
	if (lo < n) {
		uint64_t t = -n % n;
		while (lo < t) {
			m = (unsigned __int128)rv_rng_u64(r) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

void
rv_rng_shuffle_u64(struct rv_rng *r, uint64_t *v, size_t n)
{
	size_t i;

	for (i = n; i > 1; i--) {
		size_t j = (size_t)rv_rng_below(r, i);
		uint64_t t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

void
rv_rng_shuffle_u32(struct rv_rng *r, uint32_t *v, size_t n)
{
	size_t i;

	for (i = n; i > 1; i--) {
		size_t j = (size_t)rv_rng_below(r, i);
		uint32_t t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}
