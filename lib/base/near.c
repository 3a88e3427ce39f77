/* "Did you mean": the nearest of a list of names to a mistyped word. */
#include "base/near.h"

#include <ctype.h>
#include <string.h>

size_t
rv_edit_distance(const char *a, size_t na, const char *b, size_t nb,
    size_t cap)
{
	/* optimal string alignment: insertions, deletions, substitutions
	 * and transpositions of neighbours ("levle" is 1 from "level") */
	unsigned char d[64][64];
	size_t i, j;

	if (na >= 64 || nb >= 64 || na > nb + cap || nb > na + cap)
		return cap + 1;
	for (i = 0; i <= na; i++)
		d[i][0] = (unsigned char)i;
	for (j = 0; j <= nb; j++)
		d[0][j] = (unsigned char)j;
	for (i = 1; i <= na; i++) {
		size_t best = d[i][0];

		for (j = 1; j <= nb; j++) {
			size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1u < v)
				v = d[i - 1][j] + 1u;
			if (d[i][j - 1] + 1u < v)
				v = d[i][j - 1] + 1u;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1u < v)
				v = d[i - 2][j - 2] + 1u;
			d[i][j] = (unsigned char)v;
			if (v < best)
				best = v;
		}
		if (best > cap)
			return cap + 1;
	}
	return d[na][nb];
}

/* word[0..n) and name[0..m) the same but for case, '-' and '_'? */
static int
same_folded(const char *word, size_t n, const char *name, size_t m)
{
	size_t i = 0, j = 0;

	for (;;) {
		while (i < n && (word[i] == '-' || word[i] == '_'))
			i++;
		while (j < m && (name[j] == '-' || name[j] == '_'))
			j++;
		if (i == n || j == m)
			return i == n && j == m;
		if (tolower((unsigned char)word[i]) !=
		    tolower((unsigned char)name[j]))
			return 0;
		i++;
		j++;
	}
}

size_t
rv_near(const char *word, size_t n, const char *name, size_t m)
{
	size_t cap = n / 3, d;

	if (m == n && memcmp(word, name, n) == 0)
		return (size_t)-1;
	if (same_folded(word, n, name, m))
		return 0;
	if (cap < 1)
		cap = 1;
	if (cap > 2)
		cap = 2;
	d = rv_edit_distance(word, n, name, m, cap);
	return d <= cap ? d : (size_t)-1;
}

void
rv_nearby_init(struct rv_nearby *b, const char *word, size_t n)
{
	b->word = word;
	b->n = n;
	b->best = NULL;
	b->len = 0;
	b->d = (size_t)-1;
	b->exact = 0;
}

void
rv_nearby_offer(struct rv_nearby *b, const char *name, size_t m)
{
	size_t d;

	if (m == b->n && memcmp(b->word, name, m) == 0) {
		b->exact = 1;
		return;
	}
	if ((d = rv_near(b->word, b->n, name, m)) < b->d) {
		b->d = d;
		b->best = name;
		b->len = m;
	}
}

const char *
rv_nearby_best(const struct rv_nearby *b)
{
	return b->exact ? NULL : b->best;
}

const char *
rv_nearest(const char *word, const char *const *names)
{
	struct rv_nearby b;

	rv_nearby_init(&b, word, strlen(word));
	for (; *names; names++)
		rv_nearby_offer(&b, *names, strlen(*names));
	return rv_nearby_best(&b);
}
