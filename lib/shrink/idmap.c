/*
 * The bounded id map of lib/shrink (idmap.h).
 */
#include "shrink/idmap.h"

#include <stdlib.h>

#include "base/xmem.h"

/* splitmix64's finaliser: consecutive ids spread over the table. */
static size_t
id_hash(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return (size_t)(x ^ (x >> 31));
}

void
rv_idmap_init(struct rv_idmap *m, size_t cap)
{
	size_t size = 2;

	while (size < 2 * cap)
		size *= 2;
	m->tab = xcalloc(size, sizeof(*m->tab));
	m->mask = size - 1;
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
	size_t i = id_hash(id) & m->mask;

	for (; m->tab[i] != 0; i = (i + 1) & m->mask)
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

static void
hash_remove(struct rv_idmap *m, uint32_t s)
{
	size_t i = id_hash(m->id[s]) & m->mask, j, k;

	while (m->tab[i] != s + 1)
		i = (i + 1) & m->mask;
	m->tab[i] = 0;
	/* pull back every later entry of the run that may sit at i */
	for (j = (i + 1) & m->mask; m->tab[j] != 0; j = (j + 1) & m->mask) {
		k = id_hash(m->id[m->tab[j] - 1]) & m->mask;
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
	size_t i;

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
	for (i = id_hash(id) & m->mask; m->tab[i] != 0; i = (i + 1) & m->mask)
		;
	m->tab[i] = s + 1;
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
