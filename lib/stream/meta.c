/*
 * Metadata records: small, text, order-preserving.  The parser is strict
 * (every line key=value, nothing else) so that two readers never disagree
 * about what a stream says, and bounded (RV_META_MAX, RV_META_MAX_KEYS) so
 * that a stream cannot make a reader hold more than a record's worth.
 */
#include "stream/meta.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
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
	free(m->slot);
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
 * The key index, m->slot: open addressing over positions in m, kept up
 * to date as keys are added (none is ever removed), so that merging L
 * pairs into n keys costs O(L), not O(n L).  Without an index a 60 KB
 * record of 100000 keys took 25 s to read; with one rebuilt for every
 * record, a record of a million keys then a thousand tiny ones took 58 s.
 * Slots hold position + 1; 0 is empty.
 */
/* The keys are the input's: hashed under m's own secret (base/hash.h),
 * so that keys chosen to collide, as they can be under FNV-1a, find no
 * run of slots to walk. */
static size_t *
kindex_find(const struct rv_meta *m, const char *k, size_t kn)
{
	size_t h = (size_t)rv_hash_bytes(&m->hkey, k, kn) & m->mask;

	while (m->slot[h] != 0) {
		const char *key = m->key[m->slot[h] - 1];

		if (strncmp(key, k, kn) == 0 && key[kn] == '\0')
			break;
		h = (h + 1) & m->mask;
	}
	return &m->slot[h];
}

/* Make room in the index for one more key: rebuilt twice as large when
 * the keys would fill more than half its slots, so that it is never
 * more than four times their count and each key is rehashed O(1) times
 * on average. */
static void
kindex_fit(struct rv_meta *m)
{
	size_t cap = 16, i;

	if (m->slot != NULL && m->n + 1 <= m->mask / 2)
		return;
	if (m->slot == NULL)
		rv_hkey_draw(&m->hkey);
	while (cap / 2 < m->n + 1)
		cap *= 2;
	free(m->slot);
	m->slot = xcalloc(cap, sizeof(*m->slot));
	m->mask = cap - 1;
	for (i = 0; i < m->n; i++)
		*kindex_find(m, m->key[i], strlen(m->key[i])) = i + 1;
}

/* A pair refused for the caps: m is marked, so rv_meta_put refuses it. */
static int
over(struct rv_meta *m, int keys)
{
	m->refused = 1;
	if (keys)
		return rv_seterr("metadata over the limit of %zu keys",
		    RV_META_MAX_KEYS);
	return rv_seterr("metadata over the limit of %llu bytes",
	    (unsigned long long)RV_META_MAX);
}

/* The pair's own checks, before anything about m. */
static int
pair_ok(const char *k, size_t kn, const char *v, size_t vn)
{
	if (!key_ok(k, kn))
		return rv_seterr("bad metadata key '%.*s'", (int)kn, k);
	if (memchr(v, '\n', vn))
		return rv_seterr("metadata value of '%.*s' holds a newline",
		    (int)kn, k);
	if (memchr(v, '\0', vn))
		return rv_seterr("metadata value of '%.*s' holds a NUL byte",
		    (int)kn, k);
	return 0;
}

/*
 * Set key k to v: 0, -1 for a bad pair, -2 (message set, m marked) for
 * a pair over the caps, checked unless !capped (a merge checks its total
 * first).  m is unchanged unless it returns 0; a refused pair costs no
 * copy of its value.
 */
static int
set_n(struct rv_meta *m, const char *k, size_t kn, const char *v, size_t vn,
    int capped)
{
	size_t *slot, i, old;

	if (pair_ok(k, kn, v, vn) < 0)
		return -1;
	kindex_fit(m);
	slot = kindex_find(m, k, kn);
	if (*slot != 0) {
		i = *slot - 1;
		old = strlen(m->val[i]);
		if (capped && vn > old && vn - old > RV_META_MAX - m->bytes) {
			over(m, 0);
			return -2;
		}
		free(m->val[i]);
		m->val[i] = xstrndup(v, vn);
		m->bytes = m->bytes - old + vn;
		return 0;
	}
	/* kn <= 128: kn + vn + 2 cannot wrap for any value in memory */
	if (capped && (m->n >= RV_META_MAX_KEYS ||
	    kn + vn + 2 > RV_META_MAX - m->bytes)) {
		over(m, m->n >= RV_META_MAX_KEYS);
		return -2;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		m->key = xreallocarray(m->key, m->cap, sizeof(*m->key));
		m->val = xreallocarray(m->val, m->cap, sizeof(*m->val));
	}
	m->key[m->n] = xstrndup(k, kn);
	m->val[m->n] = xstrndup(v, vn);
	m->n++;
	*slot = m->n;
	m->bytes += kn + vn + 2;
	return 0;
}

int
rv_meta_set(struct rv_meta *m, const char *key, const char *val)
{
	return set_n(m, key, strlen(key), val, strlen(val), 1) < 0 ? -1 : 0;
}

int
rv_meta_set_u64(struct rv_meta *m, const char *key, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return rv_meta_set(m, key, buf);
}

const char *
rv_meta_get(const struct rv_meta *m, const char *key)
{
	size_t *slot;

	if (m->slot == NULL)
		return NULL;
	slot = kindex_find(m, key, strlen(key));
	return *slot != 0 ? m->val[*slot - 1] : NULL;
}

int
rv_meta_parse(struct rv_meta *m, const unsigned char *p, size_t len)
{
	const char *s = (const char *)p, *end = s + len;
	size_t line = 1;
	int rc;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eq;
		if (!nl)
			nl = end;
		eq = memchr(s, '=', (size_t)(nl - s));
		if (!eq)
			return rv_seterr("metadata line %zu has no '='", line);
		rc = set_n(m, s, (size_t)(eq - s), eq + 1,
		    (size_t)(nl - eq - 1), 1);
		/* over the caps: the total is at fault, not the line */
		if (rc == -2)
			return -1;
		if (rc < 0)
			return rv_preferr("metadata line %zu", line);
		s = nl + 1;
		line++;
	}
	return 0;
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

	if (m->refused)
		return rv_seterr("metadata cut at its limits (%zu keys, %llu "
		    "bytes): not written", RV_META_MAX_KEYS,
		    (unsigned long long)RV_META_MAX);
	rv_meta_encode(m, &b);
	rv_rec_init(&r, RV_META);
	r.payload_len = b.len;
	rc = rv_writer_put(w, &r, b.data);
	rv_buf_release(&b);
	return rc;
}

int
rv_meta_merge(struct rv_meta *dst, const struct rv_meta *src)
{
	size_t i, keys = dst->n, bytes = dst->bytes;

	if (src->refused)
		dst->refused = 1;
	/* What the merge would hold, first: all of src or none of it, and
	 * no pair refused halfway because of an order of replacements. */
	kindex_fit(dst);
	for (i = 0; i < src->n; i++) {
		size_t kn = strlen(src->key[i]);
		size_t *slot = kindex_find(dst, src->key[i], kn);

		if (*slot != 0)
			bytes -= kn + strlen(dst->val[*slot - 1]) + 2;
		else
			keys++;
	}
	if (keys > RV_META_MAX_KEYS)
		return over(dst, 1);
	if (src->bytes > RV_META_MAX - bytes)
		return over(dst, 0);
	for (i = 0; i < src->n; i++)
		(void)set_n(dst, src->key[i], strlen(src->key[i]),
		    src->val[i], strlen(src->val[i]), 0);
	return 0;
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

/* A count key's value: RV_META_UNKNOWN when absent, empty or no number. */
static uint64_t
count_key(const struct rv_meta *m, const char *key)
{
	const char *v = rv_meta_get(m, key);
	uint64_t n;

	if (v == NULL || rv_parse_u64(v, 0, RV_META_UNKNOWN - 1, &n) < 0)
		return RV_META_UNKNOWN;
	return n;
}

void
rv_meta_epoch_counts(const struct rv_meta *m, uint64_t *first,
    uint64_t *rest)
{
	const char *resume = rv_meta_get(m, "resume");

	if (rv_meta_get(m, "kept") != NULL) {
		*rest = count_key(m, "kept");
		*first = rv_meta_get(m, "kept-first") != NULL ?
		    count_key(m, "kept-first") : *rest;
		return;
	}
	*rest = count_key(m, "samples");
	*first = resume != NULL && *resume != '\0' ?
	    count_key(m, "resume-samples") : *rest;
}

static int
set_count(struct rv_meta *m, const char *key, uint64_t n)
{
	return n == RV_META_UNKNOWN ? rv_meta_set(m, key, "") :
	    rv_meta_set_u64(m, key, n);
}

int
rv_meta_set_kept(struct rv_meta *m, uint64_t first, uint64_t rest)
{
	if (set_count(m, "kept-first", first) < 0 ||
	    set_count(m, "kept", rest) < 0)
		return -1;
	return 0;
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

