/*
 * Metadata records: tiny, text, order-preserving.  The parser is strict
 * (every line key=value, nothing else) so that two readers never disagree
 * about what a stream says.
 */
#include "meta.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt.h"
#include "xmem.h"

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

static int
set_n(struct rv_meta *m, const char *k, size_t kn, const char *v, size_t vn)
{
	size_t i;

	if (!key_ok(k, kn))
		return rv_seterr("bad metadata key '%.*s'", (int)kn, k);
	if (memchr(v, '\n', vn))
		return rv_seterr("metadata value of '%.*s' holds a newline",
		    (int)kn, k);
	if (memchr(v, '\0', vn))
		return rv_seterr("metadata value of '%.*s' holds a NUL byte",
		    (int)kn, k);
	for (i = 0; i < m->n; i++) {
		if (strlen(m->key[i]) == kn && memcmp(m->key[i], k, kn) == 0) {
			free(m->val[i]);
			m->val[i] = xstrndup(v, vn);
			return 0;
		}
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		m->key = xreallocarray(m->key, m->cap, sizeof(*m->key));
		m->val = xreallocarray(m->val, m->cap, sizeof(*m->val));
	}
	m->key[m->n] = xstrndup(k, kn);
	m->val[m->n] = xstrndup(v, vn);
	m->n++;
	return 0;
}

int
rv_meta_set(struct rv_meta *m, const char *key, const char *val)
{
	return set_n(m, key, strlen(key), val, strlen(val));
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

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eq;
		if (!nl)
			nl = end;
		eq = memchr(s, '=', (size_t)(nl - s));
		if (!eq)
			return rv_seterr("metadata line %zu has no '='", line);
		if (set_n(m, s, (size_t)(eq - s), eq + 1,
		    (size_t)(nl - eq - 1)) < 0)
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
	size_t i;

	for (i = 0; i < src->n; i++)
		(void)rv_meta_set(dst, src->key[i], src->val[i]);
}

void
rv_meta_producer(struct rv_meta *m, int argc, char *const argv[])
{
	struct rv_buf b = { 0 };
	char *prod = xasprintf("%s %s", rv_progname(), RV_VERSION_STRING);
	int i;

	(void)rv_meta_set(m, "producer", prod);
	free(prod);
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *c;
		int plain = *a != '\0';
		if (i)
			rv_buf_append(&b, " ", 1);
		for (c = a; *c; c++)
			if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
			    "OPQRSTUVWXYZ0123456789-_./=,:%+@", *c))
				plain = 0;
		if (plain) {
			rv_buf_append(&b, a, strlen(a));
			continue;
		}
		rv_buf_append(&b, "'", 1);
		for (c = a; *c; c++) {
			if (*c == '\'')
				rv_buf_append(&b, "'\\''", 4);
			else if (*c == '\n')
				rv_buf_append(&b, " ", 1);
			else
				rv_buf_append(&b, c, 1);
		}
		rv_buf_append(&b, "'", 1);
	}
	rv_buf_append(&b, "", 1);
	(void)rv_meta_set(m, "argv", (const char *)b.data);
	rv_buf_release(&b);
}
