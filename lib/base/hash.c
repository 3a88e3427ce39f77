/*
 * SipHash and the secrets it is keyed with (hash.h).
 */
#include "base/hash.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define ROTL(x, b)	((x) << (b) | (x) >> (64 - (b)))

struct sip {
	uint64_t v0, v1, v2, v3;
};

static void
round_(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = ROTL(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = ROTL(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = ROTL(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = ROTL(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = ROTL(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = ROTL(s->v2, 32);
}

static void
start(struct sip *s, const struct rv_hkey *key)
{
	s->v0 = key->k[0] ^ 0x736f6d6570736575ull;
	s->v1 = key->k[1] ^ 0x646f72616e646f6dull;
	s->v2 = key->k[0] ^ 0x6c7967656e657261ull;
	s->v3 = key->k[1] ^ 0x7465646279746573ull;
}

/* The finalisation: d rounds, and the state folded to 64 bits. */
static uint64_t
finish(struct sip *s, int d)
{
	int r;

	s->v2 ^= 0xff;
	for (r = 0; r < d; r++)
		round_(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

static void
word(struct sip *s, uint64_t m, int c)
{
	int i;

	s->v3 ^= m;
	for (i = 0; i < c; i++)
		round_(s);
	s->v0 ^= m;
}

uint64_t
rv_siphash(const struct rv_hkey *key, const void *p, size_t n, int c,
    int d)
{
	const unsigned char *b = p;
	struct sip s;
	uint64_t last = (uint64_t)n << 56;
	size_t i;

	start(&s, key);
	for (; n >= 8; n -= 8, b += 8) {
		uint64_t m = 0;

		for (i = 8; i-- > 0;)
			m = m << 8 | b[i];
		word(&s, m, c);
	}
	for (i = 0; i < n; i++)
		last |= (uint64_t)b[i] << (8 * i);
	word(&s, last, c);
	return finish(&s, d);
}

uint64_t
rv_hash_bytes(const struct rv_hkey *key, const void *p, size_t n)
{
	return rv_siphash(key, p, n, 1, 3);
}

uint64_t
rv_hash_u64(const struct rv_hkey *key, uint64_t x)
{
	struct sip s;

	/* rv_siphash of the 8 bytes, without the loop over them */
	start(&s, key);
	word(&s, x, 1);
	word(&s, (uint64_t)8 << 56, 1);
	return finish(&s, 3);
}

void
rv_hkey_draw(struct rv_hkey *key)
{
	struct rv_hkey k;
	struct timespec ts;
	uint64_t salt;

	if (getrandom(k.k, sizeof(k.k), GRND_NONBLOCK) ==
	    (ssize_t)sizeof(k.k)) {
		*key = k;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	salt = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	salt ^= (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)key;
	k.k[0] = rv_hash_u64(key, salt);
	k.k[1] = rv_hash_u64(key, ~salt);
	*key = k;
}
