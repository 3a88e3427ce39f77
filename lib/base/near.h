/*
 * The closest of a list of names to a word a person mistyped ("fllip" for
 * "flip", "resnet-20" for "resnet20", "--limt" for "--limit"), for the
 * "did you mean" of a usage error.
 */
#ifndef RV_NEAR_H
#define RV_NEAR_H

#include <stddef.h>

/* The edit distance of a[0..na) and b[0..nb) (insertions, deletions,
 * substitutions, and transpositions of neighbours), or cap + 1 when it
 * is more than cap (or either is longer than 63). */
size_t rv_edit_distance(const char *a, size_t na, const char *b, size_t nb,
    size_t cap);

/*
 * Is name[0..m) near word[0..n)?  Equal but for case, '-' and '_'
 * (distance 0 then), or within max(1, min(2, n / 3)) edits: its distance,
 * else (size_t)-1.  Never 0 for the same bytes: those are not a mistake.
 */
size_t rv_near(const char *word, size_t n, const char *name, size_t m);

/*
 * The nearest so far of the names offered one by one (a table's entries,
 * the long options a usage text lists): rv_nearby_init, then
 * rv_nearby_offer for each name (the first of equally near ones stays),
 * then best (NULL where none is near or word is one of them) and len.
 */
struct rv_nearby {
	const char *word, *best;
	size_t n, len, d;
	int exact;
};

void rv_nearby_init(struct rv_nearby *b, const char *word, size_t n);
void rv_nearby_offer(struct rv_nearby *b, const char *name, size_t m);
/* b->best, or NULL where word was among the names offered. */
const char *rv_nearby_best(const struct rv_nearby *b);

/* The nearest of names[0..] (NULL-terminated) to word, or NULL (also
 * where word is one of them). */
const char *rv_nearest(const char *word, const char *const *names);

#endif
