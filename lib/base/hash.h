/*
 * Keyed hashing for the tables whose keys come from input (sample ids,
 * feedback lines, metadata keys): SipHash (Aumasson and Bernstein, 2012)
 * under a secret each table draws for itself.  An unkeyed hash, however
 * well it mixes, can be inverted or searched: keys chosen to share a slot
 * turn every insert into a walk of the table (150,000 crafted sample ids
 * took rv-score 33 s for what takes 0.3 s).  Under a secret key the
 * output says nothing an attacker can aim at.  What a key decides is only
 * where keys sit in a table, never an output: tables that use it must
 * give the same bytes whatever the key.
 */
#ifndef RV_HASH_H
#define RV_HASH_H

#include <stddef.h>
#include <stdint.h>

struct rv_hkey {
	uint64_t k[2];
};

/*
 * A new secret into key, from getrandom(2) without waiting (a filter must
 * not stall at boot); where it gives none, the clock, the process, the
 * key's address and the secret it held before, mixed (weaker against one
 * who can guess them, and only table layout depends on it).  Any content
 * of key is fine, zeros included.
 */
void rv_hkey_draw(struct rv_hkey *key);

/* SipHash-c-d of p[0..n) under key: c rounds a word, d at the end.
 * rv_hash_bytes and rv_hash_u64 are SipHash-1-3 (Rust's default). */
uint64_t rv_siphash(const struct rv_hkey *key, const void *p, size_t n,
    int c, int d);
uint64_t rv_hash_bytes(const struct rv_hkey *key, const void *p, size_t n);
/* x as its 8 little-endian bytes. */
uint64_t rv_hash_u64(const struct rv_hkey *key, uint64_t x);

#endif
