/*
 * Metadata records: tiny, text, order-preserving.  The parser is strict
 * (every line key=value, nothing else) so that two readers never disagree
 * about what a stream says.
 */
#include "stream/meta.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/xmem.h"

void
rv_meta_init(struct rv_meta *m)
{
	memset(m, 0, sizeof(*m));
}

void
rv_meta_release(struct rv_meta *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		free(m->key[i]);
		free(m->val[i]);
	}
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

static int
key_ok(const char *k, size_t n)
{
	size_t i;

	if (n == 0 || n > 128)
		return 0;
	for (i = 0; i < n; i++) {
		char c = k[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		    c == '-'))
			return 0;
	}
	return 1;
}

/*
 * An index of m's keys for one bulk update (a META record, a merge):
 * open addressing over positions in m, so that merging L pairs into n
 * keys costs O(n + L), not O(n L).  Without it a 60 KB record of 100000
 * keys took 25 s to read.  Slots hold position + 1; 0 is empty.
 */
struct kindex {
	size_t *slot;
	size_t mask;
};

static size_t
khash(const char *k, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u;	/* FNV-1a */

	while (n-- > 0)
		h = (h ^ (unsigned char)*k++) * 0x100000001b3u;
	return (size_t)h;
}

/* The slot holding key k, or the empty slot where it would go. */
static size_t *
kindex_find(const struct kindex *x, const struct rv_meta *m, const char *k,
    size_t kn)
{
	size_t h = khash(k, kn) & x->mask;

	while (x->slot[h] != 0) {
		const char *key = m->key[x->slot[h] - 1];

		if (strncmp(key, k, kn) == 0 && key[kn] == '\0')
			break;
		h = (h + 1) & x->mask;
	}
	return &x->slot[h];
}

/* Index m's keys; called again when they fill half the slots, so the
 * index is never more than four times the keys' count. */
static void
kindex_init(struct kindex *x, const struct rv_meta *m)
{
	size_t cap = 16, i;

	while (cap / 2 <= m->n)
		cap *= 2;
	x->slot = xcalloc(cap, sizeof(*x->slot));
	x->mask = cap - 1;
	for (i = 0; i < m->n; i++)
		*kindex_find(x, m, m->key[i], strlen(m->key[i])) = i + 1;
}

/* Set key k to v; x, if not NULL, indexes m and is kept up to date. */
static int
set_n(struct rv_meta *m, struct kindex *x, const char *k, size_t kn,
    const char *v, size_t vn)
{
	size_t i, *slot = NULL;

	if (!key_ok(k, kn))
		return rv_seterr("bad metadata key '%.*s'", (int)kn, k);
	if (memchr(v, '\n', vn))
		return rv_seterr("metadata value of '%.*s' holds a newline",
		    (int)kn, k);
	if (memchr(v, '\0', vn))
		return rv_seterr("metadata value of '%.*s' holds a NUL byte",
		    (int)kn, k);
	if (x) {
		slot = kindex_find(x, m, k, kn);
		i = *slot ? *slot - 1 : m->n;
	} else {
		for (i = 0; i < m->n; i++)
			if (strlen(m->key[i]) == kn &&
			    memcmp(m->key[i], k, kn) == 0)
				break;
	}
	if (i < m->n) {
		free(m->val[i]);
		m->val[i] = xstrndup(v, vn);
		return 0;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		m->key = xreallocarray(m->key, m->cap, sizeof(*m->key));
		m->val = xreallocarray(m->val, m->cap, sizeof(*m->val));
	}
	m->key[m->n] = xstrndup(k, kn);
	m->val[m->n] = xstrndup(v, vn);
	m->n++;
	if (slot) {
		*slot = m->n;
		if (m->n > x->mask / 2) {
			free(x->slot);
			kindex_init(x, m);
		}
	}
	return 0;
}

int
rv_meta_set(struct rv_meta *m, const char *key, const char *val)
{
	return set_n(m, NULL, key, strlen(key), val, strlen(val));
}

const char *
rv_meta_get(const struct rv_meta *m, const char *key)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (strcmp(m->key[i], key) == 0)
			return m->val[i];
	return NULL;
}

int
rv_meta_parse(struct rv_meta *m, const unsigned char *p, size_t len)
{
	const char *s = (const char *)p, *end = s + len;
	size_t line = 1;
	struct kindex x;
	int rc = 0;

	kindex_init(&x, m);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eq;
		if (!nl)
			nl = end;
		eq = memchr(s, '=', (size_t)(nl - s));
		if (!eq) {
			rc = rv_seterr("metadata line %zu has no '='", line);
			break;
		}
		if (set_n(m, &x, s, (size_t)(eq - s), eq + 1,
		    (size_t)(nl - eq - 1)) < 0) {
			rc = rv_preferr("metadata line %zu", line);
			break;
		}
		s = nl + 1;
		line++;
	}
	free(x.slot);
	return rc;
}

void
rv_meta_encode(const struct rv_meta *m, struct rv_buf *out)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		rv_buf_append(out, m->key[i], strlen(m->key[i]));
		rv_buf_append(out, "=", 1);
		rv_buf_append(out, m->val[i], strlen(m->val[i]));
		rv_buf_append(out, "\n", 1);
	}
}

int
rv_meta_put(struct rv_writer *w, const struct rv_meta *m)
{
	struct rv_buf b = { 0 };
	struct rv_rec r;
	int rc;

	rv_meta_encode(m, &b);
	rv_rec_init(&r, RV_META);
	r.payload_len = b.len;
	rc = rv_writer_put(w, &r, b.data);
	rv_buf_release(&b);
	return rc;
}

void
rv_meta_merge(struct rv_meta *dst, const struct rv_meta *src)
{
	struct kindex x;
	size_t i;

	kindex_init(&x, dst);
	for (i = 0; i < src->n; i++)
		(void)set_n(dst, &x, src->key[i], strlen(src->key[i]),
		    src->val[i], strlen(src->val[i]));
	free(x.slot);
}

/* The value, quoted for a message: long values are cut. */
static int
bad_value(const char *key, const char *v, const char *why)
{
	return rv_seterr("metadata '%s=%.64s%s': %s", key, v,
	    strlen(v) > 64 ? "..." : "", why);
}

int
rv_meta_u64(const struct rv_meta *m, const char *key, uint64_t min,
    uint64_t max, uint64_t *out)
{
	const char *v = rv_meta_get(m, key);
	char why[96];
	uint64_t n = 0;
	const char *c;
	int over = 0;

	if (v == NULL)
		return 0;
	if (*v == '\0' || v[strspn(v, "0123456789")] != '\0')
		return bad_value(key, v, "not a decimal integer");
	for (c = v; *c != '\0' && !over; c++) {
		over = n > (UINT64_MAX - (uint64_t)(*c - '0')) / 10;
		n = n * 10 + (uint64_t)(*c - '0');
	}
	if (over || n < min || n > max) {
		snprintf(why, sizeof(why), "out of range [%llu, %llu]",
		    (unsigned long long)min, (unsigned long long)max);
		return bad_value(key, v, why);
	}
	*out = n;
	return 1;
}

int
rv_meta_floats(const struct rv_meta *m, const char *key, double lo,
    int lo_open, double hi, float *v, int maxn, int *n)
{
	const char *s = rv_meta_get(m, key), *p;
	char why[96];
	int k = 0;

	if (s == NULL)
		return 0;
	p = s;
	for (;;) {
		size_t len = strspn(p, "0123456789.eE+-");
		char *end;
		double d;

		if (len == 0 || (p[len] != '\0' && p[len] != ','))
			return bad_value(key, s, "not a list of decimal "
			    "numbers separated by commas");
		d = strtod(p, &end);
		if (end != p + len || !isfinite(d))
			return bad_value(key, s, "not a list of decimal "
			    "numbers separated by commas");
		if (k == maxn) {
			snprintf(why, sizeof(why), "more than %d values",
			    maxn);
			return bad_value(key, s, why);
		}
		if (d < lo || (lo_open && d == lo) || d > hi) {
			snprintf(why, sizeof(why), "%.*s is out of range "
			    "%c%g, %g]", (int)len, p, lo_open ? '(' : '[',
			    lo, hi);
			return bad_value(key, s, why);
		}
		v[k++] = (float)d;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	*n = k;
	return 1;
}

uint64_t
rv_meta_total(const struct rv_meta *m)
{
	const char *v = rv_meta_get(m, "total");
	uint64_t n;

	return v && *v && rv_parse_u64(v, 0, UINT64_MAX, &n) == 0 ? n : 0;
}

int
rv_meta_counts(const struct rv_meta *m)
{
	uint64_t u;

	if (rv_meta_u64(m, "classes", 0, UINT32_MAX, &u) < 0 ||
	    rv_meta_u64(m, "samples", 0, UINT64_MAX, &u) < 0)
		return -1;
	return 0;
}

int
rv_meta_stats(const struct rv_meta *m, const char *key, float v[4], int *n)
{
	int std = strcmp(key, "std") == 0;

	return rv_meta_floats(m, key, 0, std, std ? 1000 : 1, v, 4, n);
}

int
rv_meta_check(const struct rv_meta *m)
{
	float v[4];
	int n;

	if (rv_meta_counts(m) < 0 || rv_meta_stats(m, "mean", v, &n) < 0 ||
	    rv_meta_stats(m, "std", v, &n) < 0)
		return -1;
	return 0;
}

