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

/* word[0..n) and name the same but for case, '-' and '_'? */
static int
same_folded(const char *word, size_t n, const char *name)
{
	size_t i = 0;

	for (;;) {
		while (i < n && (word[i] == '-' || word[i] == '_'))
			i++;
		while (*name == '-' || *name == '_')
			name++;
		if (i == n || *name == '\0')
			return i == n && *name == '\0';
		if (tolower((unsigned char)word[i]) !=
		    tolower((unsigned char)*name))
			return 0;
		i++;
		name++;
	}
}

size_t
rv_near(const char *word, size_t n, const char *name)
{
	size_t cap = n / 3, d, m = strlen(name);

	if (m == n && memcmp(word, name, n) == 0)
		return (size_t)-1;
	if (same_folded(word, n, name))
		return 0;
	if (cap < 1)
		cap = 1;
	if (cap > 2)
		cap = 2;
	d = rv_edit_distance(word, n, name, m, cap);
	return d <= cap ? d : (size_t)-1;
}

const char *
rv_nearest(const char *word, const char *const *names)
{
	const char *best = NULL;
	size_t bd = (size_t)-1, n = strlen(word);

	for (; *names; names++) {
		size_t d = rv_near(word, n, *names);

		if (strcmp(word, *names) == 0)
			return NULL;	/* a name: no mistake */

		if (d < bd) {
			bd = d;
			best = *names;
		}
	}
	return best;
}
