/*
 * Keyed hashing (base/hash.h): SipHash-2-4 against the paper's vectors
 * (the rounds and the ending are SipHash's), SipHash-1-3 of a word the same
 * through both entry points, and keys drawn that differ and change the
 * hash.
 */
#include <stdint.h>
#include <string.h>

#include "base/hash.h"
#include "unit.h"

static void
t_vectors(void)
{
	/* Aumasson and Bernstein, SipHash, appendix A and the reference
	 * vectors.h: key 00..0f, messages 00..(n-1) */
	static const struct {
		size_t n;
		uint64_t h;
	} v[] = {
		{ 0, 0x726fdb47dd0e0e31ull },
		{ 8, 0x93f5f5799a932462ull },
		{ 15, 0xa129ca6149be45e5ull },
	};
	struct rv_hkey k = { { 0x0706050403020100ull,
	    0x0f0e0d0c0b0a0908ull } };
	unsigned char m[16];
	size_t i;

	for (i = 0; i < sizeof(m); i++)
		m[i] = (unsigned char)i;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		EXPECT(rv_siphash(&k, m, v[i].n, 2, 4) == v[i].h);
}

static void
t_word(void)
{
	struct rv_hkey k = { { 0x0123456789abcdefull, 0x42ull } };
	uint64_t x = 0x1122334455667788ull;
	unsigned char b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (unsigned char)(x >> (8 * i));
	EXPECT(rv_hash_u64(&k, x) == rv_hash_bytes(&k, b, 8));
	EXPECT(rv_hash_bytes(&k, b, 8) == rv_siphash(&k, b, 8, 1, 3));
}

static void
t_draw(void)
{
	struct rv_hkey a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	rv_hkey_draw(&a);
	rv_hkey_draw(&b);
	EXPECT(a.k[0] != b.k[0] || a.k[1] != b.k[1]);
	EXPECT(rv_hash_u64(&a, 7) != rv_hash_u64(&b, 7));
}

int
main(void)
{
	RUN(t_vectors);
	RUN(t_word);
	RUN(t_draw);
	return UNIT_DONE();
}
