/*
 * A bounded map from 64-bit sample ids to slots 0..cap-1, for the per-id
 * state of lib/shrink (the samples awaiting feedback, the history of each
 * id, the thumbnails of encoded samples): a hash table (linear probing,
 * backward-shift deletion, so no tombstones) over a doubly linked age
 * list, oldest first, that evicts its head when a new id finds the map
 * full.  The caller keeps the payload in its own arrays by slot.  tab[]
 * holds slot + 1 and slots are handed out in order before the free list
 * is used, so zeroed (untouched) pages are valid state: a map of a
 * million slots costs memory only as ids arrive.  Fields are private.
 *
 * Ids come from the stream and from feedback lines, so an attacker
 * chooses them: the hash is keyed with a secret of the map's own
 * (getrandom(2)), and no probe goes further than RV_IDMAP_PROBE_MAX
 * slots from an id's home (the map draws a new secret and rebuilds when
 * an insert would).  Which slot an id gets, which id is evicted and
 * everything the caller sees follow from the order of the calls alone,
 * never from the secret: only the table's layout does, which nothing
 * outside this file reads, so outputs stay the same bytes for a seed.
 */
#ifndef RV_IDMAP_H
#define RV_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"

#define RV_IDMAP_NIL	UINT32_MAX	/* "no slot" */
#define RV_IDMAP_PROBE_MAX	128	/* farthest entry from its home */

struct rv_idmap {
	uint32_t *tab;
	size_t mask;
	struct rv_hkey key;	/* the hash's secret */
	size_t reach;		/* no entry sits further from its home */
	uint64_t rekeys;	/* secrets drawn after the first */
	uint64_t *id;
	uint32_t *prev, *next;
	uint32_t head, tail, free;
	size_t n, fresh, cap;
};

/* Room for cap ids (1 <= cap < 2^31; xcalloc, so exhaustion exits). */
void rv_idmap_init(struct rv_idmap *m, size_t cap);
/* Frees what init allocated. */
void rv_idmap_release(struct rv_idmap *m);
/* The slot of id, or RV_IDMAP_NIL. */
uint32_t rv_idmap_find(const struct rv_idmap *m, uint64_t id);
/* A slot for an id not in the map (not checked), the youngest; when the
 * map is full, the oldest id's slot, that id forgotten. */
uint32_t rv_idmap_insert(struct rv_idmap *m, uint64_t id);
/* Forget the id of slot s (in the map). */
void rv_idmap_remove(struct rv_idmap *m, uint32_t s);
/* Slot s (in the map) becomes the youngest: the last to be evicted. */
void rv_idmap_touch(struct rv_idmap *m, uint32_t s);
/* The most slots a lookup reads now (RV_IDMAP_PROBE_MAX + 1 at most,
 * unless 8 fresh secrets in a row failed), and how many times the map has
 * drawn a new secret: for tests. */
size_t rv_idmap_reach(const struct rv_idmap *m);
uint64_t rv_idmap_rekeys(const struct rv_idmap *m);

#endif
