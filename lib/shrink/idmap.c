/*
 * The bounded id map of lib/shrink (idmap.h).
 */
#include "shrink/idmap.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/xmem.h"

#define REDRAWS	8	/* secrets a rebuild tries before it settles */

/*
 * The ids are the attacker's: the old hash, splitmix64's finaliser, is a
 * bijection anyone can invert, so 150000 ids chosen to share a home made
 * every insert walk one run of the whole table (20 s for what takes
 * 0.15 s).  SipHash-1-3 under the map's own secret (base/hash.h) takes
 * that away, at about 10 ns an id, nothing next to scoring a sample.
 */
static size_t
home(const struct rv_idmap *m, uint64_t id)
{
	return (size_t)rv_hash_u64(&m->key, id) & m->mask;
}

void
rv_idmap_init(struct rv_idmap *m, size_t cap)
{
	size_t size = 2;

	while (size < 2 * cap)
		size *= 2;
	m->tab = xcalloc(size, sizeof(*m->tab));
	m->mask = size - 1;
	memset(&m->key, 0, sizeof(m->key));
	rv_hkey_draw(&m->key);
	m->reach = 0;
	m->rekeys = 0;
	m->id = xcalloc(cap, sizeof(*m->id));
	m->prev = xcalloc(cap, sizeof(*m->prev));
	m->next = xcalloc(cap, sizeof(*m->next));
	m->head = m->tail = m->free = RV_IDMAP_NIL;
	m->n = m->fresh = 0;
	m->cap = cap;
}

void
rv_idmap_release(struct rv_idmap *m)
{
	free(m->tab);
	free(m->id);
	free(m->prev);
	free(m->next);
}

uint32_t
rv_idmap_find(const struct rv_idmap *m, uint64_t id)
{
	size_t i = home(m, id), d;

	/* no entry sits more than reach slots past its home */
	for (d = 0; d <= m->reach && m->tab[i] != 0;
	    d++, i = (i + 1) & m->mask)
		if (m->id[m->tab[i] - 1] == id)
			return m->tab[i] - 1;
	return RV_IDMAP_NIL;
}

static void
list_unlink(struct rv_idmap *m, uint32_t s)
{
	if (m->prev[s] != RV_IDMAP_NIL)
		m->next[m->prev[s]] = m->next[s];
	else
		m->head = m->next[s];
	if (m->next[s] != RV_IDMAP_NIL)
		m->prev[m->next[s]] = m->prev[s];
	else
		m->tail = m->prev[s];
}

static void
list_append(struct rv_idmap *m, uint32_t s)
{
	m->prev[s] = m->tail;
	m->next[s] = RV_IDMAP_NIL;
	if (m->tail != RV_IDMAP_NIL)
		m->next[m->tail] = s;
	else
		m->head = s;
	m->tail = s;
}

/* Put slot s's id in the table at the first free place from its home:
 * 0, or, when bounded, -1 with nothing done where that place is more
 * than RV_IDMAP_PROBE_MAX slots on. */
static int
place(struct rv_idmap *m, uint32_t s, int bounded)
{
	size_t i = home(m, m->id[s]), d = 0;

	for (; m->tab[i] != 0; i = (i + 1) & m->mask)
		if (++d > RV_IDMAP_PROBE_MAX && bounded)
			return -1;
	m->tab[i] = s + 1;
	if (d > m->reach)
		m->reach = d;
	return 0;
}

/* Hash the ids of the age list again under a new secret, until none is
 * too far from its home (a fresh key almost never leaves one; after
 * REDRAWS tries the last layout stays, still correct). */
static void
rebuild(struct rv_idmap *m)
{
	uint32_t s;
	int tries;

	for (tries = 0; tries < REDRAWS; tries++) {
		rv_hkey_draw(&m->key);
		m->rekeys++;
		memset(m->tab, 0, (m->mask + 1) * sizeof(*m->tab));
		m->reach = 0;
		for (s = m->head; s != RV_IDMAP_NIL; s = m->next[s])
			if (place(m, s, tries + 1 < REDRAWS) < 0)
				break;
		if (s == RV_IDMAP_NIL)
			return;
	}
}

static void
hash_remove(struct rv_idmap *m, uint32_t s)
{
	size_t i = home(m, m->id[s]), j, k;

	while (m->tab[i] != s + 1)
		i = (i + 1) & m->mask;
	m->tab[i] = 0;
	/* pull back every later entry of the run that may sit at i: one
	 * more than reach slots past the hole, none may */
	for (j = (i + 1) & m->mask; m->tab[j] != 0 &&
	    ((j - i) & m->mask) <= m->reach; j = (j + 1) & m->mask) {
		k = home(m, m->id[m->tab[j] - 1]);
		if (((j - k) & m->mask) >= ((j - i) & m->mask)) {
			m->tab[i] = m->tab[j];
			m->tab[j] = 0;
			i = j;
		}
	}
}

uint32_t
rv_idmap_insert(struct rv_idmap *m, uint64_t id)
{
	uint32_t s;

	if (m->free != RV_IDMAP_NIL) {
		s = m->free;
		m->free = m->next[s];
	} else if (m->fresh < m->cap) {
		s = (uint32_t)m->fresh++;
	} else {
		s = m->head;
		list_unlink(m, s);
		hash_remove(m, s);
		m->n--;
	}
	m->id[s] = id;
	/* under a secret key a run this long is all but impossible: an
	 * attacker who found one gets a new secret (s is in no list yet,
	 * so the rebuild leaves it out) */
	if (place(m, s, 1) < 0) {
		rebuild(m);
		place(m, s, 0);
	}
	list_append(m, s);
	m->n++;
	return s;
}

void
rv_idmap_remove(struct rv_idmap *m, uint32_t s)
{
	list_unlink(m, s);
	hash_remove(m, s);
	m->next[s] = m->free;
	m->free = s;
	m->n--;
}

void
rv_idmap_touch(struct rv_idmap *m, uint32_t s)
{
	list_unlink(m, s);
	list_append(m, s);
}

size_t
rv_idmap_reach(const struct rv_idmap *m)
{
	return m->reach + 1;
}

uint64_t
rv_idmap_rekeys(const struct rv_idmap *m)
{
	return m->rekeys;
}
