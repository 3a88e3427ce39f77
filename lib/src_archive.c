/*
 * Archives (tar, tar.gz, tar.zst, zip, ... whatever libarchive reads, from
 * a file or stdin) in the WebDataset convention: a sample is every member
 * sharing a key (the path up to the first dot of the base name), its
 * image the .jpg/.jpeg/.png member, its label from a sidecar or from the
 * parent directory.  The archive is read once, at open, and its image
 * members are kept in memory still encoded, so the dataset costs about
 * the archive's own (uncompressed) size; fetches are pointers into it.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "src_impl.h"
#include "xmem.h"

/* Image bytes are packed into chunks of this size (bigger ones alone). */
#define CHUNK		((size_t)8 << 20)
/* Sidecars larger than these are not labels (captions, metadata). */
#define MAX_CLS		64
#define MAX_JSON	((size_t)64 << 10)
/* A member's buffer is sized from its header up to this, then grows. */
#define PREALLOC	((size_t)1 << 20)
/* Damaged headers in a row before we give up on the archive. */
#define MAX_RETRY	100

enum role {
	R_OTHER,
	R_IMAGE,
	R_CLS,
	R_TXT,
	R_JSON,
};

struct member {
	char *key;		/* owned */
	char *path;		/* owned: the stored path, for messages */
	const unsigned char *data;	/* image bytes, in the arena */
	size_t len;
	size_t seq;		/* order in the archive */
	int32_t label;		/* sidecar's label, if haslabel */
	unsigned char role;
	unsigned char primary;	/* the whole extension is the role's */
	unsigned char bad;	/* unreadable: the sample is dropped */
	unsigned char haslabel;
};

struct asample {
	const unsigned char *data;
	size_t len;
	char *path;		/* the image member's, owned */
	int32_t label;
	int derived;		/* label is a local directory class */
};

struct chunk {
	unsigned char *p;
	size_t len, cap;
};

struct arch {
	struct chunk *chunk;	/* the arena of image bytes */
	size_t nchunk;
	struct asample *v;
	size_t n;
};

/* State of one open. */
struct reader {
	struct src_ctx *c;
	struct src *s;
	struct arch *ar;
	struct archive *a;
	struct member *m;
	size_t nm, capm;
	struct rv_buf buf;	/* one member's data, reused */
	char err[256];
};

static unsigned char *
arena_alloc(struct arch *ar, size_t n)
{
	struct chunk *k = ar->nchunk ? &ar->chunk[ar->nchunk - 1] : NULL;
	unsigned char *p;

	if (!k || k->cap - k->len < n) {
		ar->chunk = xreallocarray(ar->chunk, ar->nchunk + 1,
		    sizeof(*ar->chunk));
		k = &ar->chunk[ar->nchunk++];
		k->cap = n > CHUNK ? n : CHUNK;
		k->p = xmalloc(k->cap);
		k->len = 0;
	}
	p = k->p + k->len;
	k->len += n;
	return p;
}

/* libarchive's last message, first letter lowered unless an acronym. */
static const char *
la_err(struct reader *r)
{
	const char *m = archive_error_string(r->a);

	if (!m)
		m = "unknown libarchive error";
	/* Its messages may quote member names: those are sanitized too. */
	src_sanitize(r->err, sizeof(r->err), m, strlen(m));
	if (r->err[0] >= 'A' && r->err[0] <= 'Z' &&
	    !(r->err[1] >= 'A' && r->err[1] <= 'Z'))
		r->err[0] = (char)(r->err[0] - 'A' + 'a');
	return r->err;
}

/*
 * A sidecar's text as a label: a decimal integer, white space around it,
 * -1 (no label) up to INT32_MAX.  Anything else is no label (a caption).
 */
static int
parse_label(const char *p, size_t n, int32_t *v)
{
	const char *e = p + n;
	int64_t x = 0;
	int neg = 0, digits = 0;

	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p < e && *p == '-') {
		neg = 1;
		p++;
	}
	for (; p < e && *p >= '0' && *p <= '9'; p++, digits++) {
		x = x * 10 + (*p - '0');
		if (x > INT32_MAX)
			return 0;
	}
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p != e || digits == 0 || (neg && x != 1))
		return 0;
	*v = neg ? -1 : (int32_t)x;
	return 1;
}

/*
 * A JSON sidecar's integer "label" (else "cls") member.  A minimal scan,
 * not a parser: the first "key" followed by a colon and an integer wins,
 * at whatever depth; a float or a string is no label.
 */
static int
json_label(const char *p, size_t n, const char *key, int32_t *v)
{
	size_t k = strlen(key), i;

	for (i = 0; i + k + 2 <= n; i++) {
		size_t j, start;

		if (p[i] != '"' || memcmp(p + i + 1, key, k) != 0 ||
		    p[i + 1 + k] != '"')
			continue;
		j = i + k + 2;
		while (j < n && (p[j] == ' ' || p[j] == '\t' || p[j] == '\n' ||
		    p[j] == '\r'))
			j++;
		if (j >= n || p[j] != ':')
			continue;
		j++;
		while (j < n && (p[j] == ' ' || p[j] == '\t' || p[j] == '\n' ||
		    p[j] == '\r'))
			j++;
		start = j;
		if (j < n && p[j] == '-')
			j++;
		while (j < n && p[j] >= '0' && p[j] <= '9')
			j++;
		if (j < n && (p[j] == '.' || p[j] == 'e' || p[j] == 'E'))
			return 0;
		return parse_label(p + start, j - start, v);
	}
	return 0;
}

/*
 * Read the current member's data into r->buf, at most max bytes.
 * Returns 0, 1 if the member is bigger than max, or a negative libarchive
 * status (ARCHIVE_FATAL: the archive is spent) with r->err set.
 */
static int
read_member(struct reader *r, struct archive_entry *e, size_t max)
{
	int64_t size = archive_entry_size_is_set(e) ?
	    archive_entry_size(e) : -1;

	r->buf.len = 0;
	if (size > (int64_t)max)
		return 1;
	/* The header's size is a claim: a 512-byte tar header saying 1 GiB
	 * must not cost 1 GiB.  Beyond PREALLOC the buffer grows with the
	 * data that actually arrives. */
	if (size > 0)
		rv_buf_reserve(&r->buf, size < (int64_t)PREALLOC ?
		    (size_t)size : PREALLOC);
	for (;;) {
		la_ssize_t got;

		if (r->buf.cap - r->buf.len < 4096)
			rv_buf_reserve(&r->buf, 65536);
		got = archive_read_data(r->a, r->buf.data + r->buf.len,
		    r->buf.cap - r->buf.len);
		if (got < 0) {
			la_err(r);
			return got == ARCHIVE_FATAL ? ARCHIVE_FATAL :
			    ARCHIVE_FAILED;
		}
		if (got == 0)
			break;
		r->buf.len += (size_t)got;
		if (r->buf.len > max)
			return 1;
	}
	if (size >= 0 && r->buf.len != (size_t)size) {
		snprintf(r->err, sizeof(r->err), "member holds %zu bytes, "
		    "its header says %" PRId64, r->buf.len, size);
		return ARCHIVE_FAILED;
	}
	return 0;
}

static struct member *
new_member(struct reader *r)
{
	struct member *m;

	if (r->nm == r->capm) {
		r->capm = r->capm ? r->capm * 2 : 256;
		r->m = xreallocarray(r->m, r->capm, sizeof(*r->m));
	}
	m = &r->m[r->nm];
	memset(m, 0, sizeof(*m));
	m->seq = r->nm++;
	return m;
}

/*
 * One regular member: find its key and role, read what the role needs.
 * Returns 0, 1 when the archive is spent (truncated), -1 to fail.
 */
static int
take_member(struct reader *r, struct archive_entry *e)
{
	const char *path = archive_entry_pathname(e), *p, *base, *dot, *last;
	struct member *m;
	size_t max = 0;
	char *q;
	int st;

	if (!path || !*path)
		return src_skip(r->c, "'%s': member %zu: unreadable name",
		    r->s->name, r->nm);
	p = path;
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	while (p[0] == '/')
		p++;
	base = strrchr(p, '/');
	base = base ? base + 1 : p;
	/* As in WebDataset, a name needs a stem and an extension; hidden
	 * files (macOS's ._x.jpg among them) are not data. */
	if (base[0] == '.' || !(dot = strchr(base, '.')))
		return 0;
	last = strrchr(base, '.');
	m = new_member(r);
	m->key = xstrndup(p, (size_t)(dot - p));
	m->primary = dot == last;
	if (src_image_ext(last + 1)) {
		m->role = R_IMAGE;
		max = SRC_MAX_MEMBER;
	} else if (src_lower_eq(dot + 1, "cls")) {
		m->role = R_CLS;
		max = MAX_CLS;
	} else if (src_lower_eq(dot + 1, "txt")) {
		m->role = R_TXT;
		max = MAX_CLS;
	} else if (src_lower_eq(dot + 1, "json")) {
		m->role = R_JSON;
		max = MAX_JSON;
	} else
		return 0;	/* read on: libarchive skips its data */
	m->path = xstrdup(path);
	st = read_member(r, e, max);
	if (st == 1 && m->role != R_IMAGE) {
		m->role = R_OTHER;	/* too long to be a label */
		return 0;
	}
	if (st != 0) {
		q = src_sanitized(path);
		if (st == 1)
			snprintf(r->err, sizeof(r->err), "member is over the "
			    "1 GiB limit");
		m->bad = 1;
		st = src_bad(r->c, "'%s': '%s': %s", r->s->name, q, r->err) <
		    0 ? -1 : st == ARCHIVE_FATAL;
		free(q);
		return st;
	}
	if (m->role == R_IMAGE) {
		m->len = r->buf.len;
		m->data = arena_alloc(r->ar, m->len);
		if (m->len)
			memcpy((unsigned char *)m->data, r->buf.data, m->len);
	} else if (m->role == R_JSON) {
		m->haslabel = json_label((char *)r->buf.data, r->buf.len,
		    "label", &m->label) || json_label((char *)r->buf.data,
		    r->buf.len, "cls", &m->label);
	} else
		m->haslabel = parse_label((char *)r->buf.data, r->buf.len,
		    &m->label);
	return 0;
}

/* The archive cannot be read at all: say what we looked for. */
static int
no_archive(struct reader *r)
{
	/* libarchive's ARCHIVE_ERRNO_FILE_FORMAT is private: EFTYPE where
	 * the system has it, else EILSEQ. */
#ifdef EFTYPE
	if (archive_errno(r->a) == EFTYPE)
#else
	if (archive_errno(r->a) == EILSEQ)
#endif
		return rv_seterr("'%s': not a directory, archive, IDX file or "
		    "CIFAR batch (libarchive: %s)", r->s->name, la_err(r));
	return rv_seterr("'%s': %s", r->s->name, la_err(r));
}

/* Read every member.  Returns 0 or -1. */
static int
read_all(struct reader *r)
{
	struct archive_entry *e;
	size_t entries = 0;
	int retries = 0;

	for (;;) {
		int st = archive_read_next_header(r->a, &e);

		if (st == ARCHIVE_EOF)
			return 0;
		if (st == ARCHIVE_FATAL && entries == 0)
			return no_archive(r);
		if (st == ARCHIVE_FATAL)
			return src_skip(r->c, "'%s': %s after %zu members; "
			    "kept what came before", r->s->name, la_err(r),
			    entries);
		if (st == ARCHIVE_RETRY || st == ARCHIVE_FAILED) {
			if (src_skip(r->c, "'%s': %s", r->s->name,
			    la_err(r)) < 0)
				return -1;
			if (++retries == MAX_RETRY)
				return src_skip(r->c, "'%s': too damaged, "
				    "giving up after %zu members", r->s->name,
				    entries);
			continue;
		}
		retries = 0;
		entries++;
		/* Links, directories and devices are not images. */
		if (archive_entry_filetype(e) != AE_IFREG ||
		    archive_entry_hardlink(e) != NULL)
			continue;
		if ((st = take_member(r, e)) != 0)
			return st < 0 ? -1 : 0;
	}
}

static int
cmp_member(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The last directory name of a key ("a/cat/x" -> "cat"), or NULL. */
static char *
parent_name(const char *key)
{
	const char *slash = strrchr(key, '/'), *p;

	if (!slash)
		return NULL;
	for (p = slash; p > key && p[-1] != '/'; p--)
		continue;
	if (p == slash)
		return NULL;
	return xstrndup(p, (size_t)(slash - p));
}

/*
 * Group the members by key into samples.  Within a key the image is the
 * member whose whole extension is an image one (abc.jpg over abc.seg.png),
 * else the last; a later member replaces an earlier one, as tar's append
 * does.  The label comes from the sample's own sidecar (.cls, else .txt,
 * else .json) and only failing that from its parent directory, per
 * sample: an archive that mixes both keeps the sidecar numbers as they are
 * and gives directory classes their index among the directory names, so
 * mixing the two is only sound when they agree.
 */
static int
group(struct reader *r)
{
	struct arch *ar = r->ar;
	char **par, **names = NULL;
	size_t i, j, k, nnames = 0;

	if (r->nm > 0)
		qsort(r->m, r->nm, sizeof(*r->m), cmp_member);
	ar->v = xcalloc(r->nm ? r->nm : 1, sizeof(*ar->v));
	par = xcalloc(r->nm ? r->nm : 1, sizeof(*par));
	for (i = 0; i < r->nm; i = j) {
		struct member *img = NULL, *lab[R_JSON + 1] = { 0 };
		struct asample *a;
		int bad = 0;

		for (j = i; j < r->nm && strcmp(r->m[j].key, r->m[i].key) == 0;
		    j++) {
			struct member *m = &r->m[j];

			bad |= m->bad;
			if (m->role == R_IMAGE &&
			    (!img || m->primary >= img->primary))
				img = m;
			else if (m->role >= R_CLS && m->haslabel)
				lab[m->role] = m;
		}
		if (bad) {
			src_count(r->c);
			continue;
		}
		if (!img) {
			char *q = src_sanitized(r->m[i].key);
			int st = src_skip(r->c, "'%s': '%s': no image member",
			    r->s->name, q);
			free(q);
			if (st < 0)
				goto fail;
			continue;
		}
		a = &ar->v[ar->n];
		a->data = img->data;
		a->len = img->len;
		a->path = img->path;
		img->path = NULL;
		a->label = -1;
		for (k = R_CLS; k <= R_JSON && !lab[k]; k++)
			continue;
		if (k <= R_JSON)
			a->label = lab[k]->label;
		else if ((par[ar->n] = parent_name(img->key)) != NULL)
			a->derived = 1;
		ar->n++;
	}
	/* The directory classes: sorted distinct parent names. */
	for (i = 0; i < ar->n; i++)
		if (par[i]) {
			names = xreallocarray(names, nnames + 1,
			    sizeof(*names));
			names[nnames++] = par[i];
		}
	if (nnames > 0) {
		qsort(names, nnames, sizeof(*names), cmp_str);
		for (i = j = 0; i < nnames; i++)
			if (j == 0 || strcmp(names[j - 1], names[i]) != 0)
				names[j++] = xstrdup(names[i]);
		nnames = j;
		for (i = 0; i < ar->n; i++) {
			char **f;

			if (!par[i])
				continue;
			f = bsearch(&par[i], names, nnames, sizeof(*names),
			    cmp_str);
			ar->v[i].label = (int32_t)(f - names);
		}
		r->s->names = names;
		r->s->nnames = nnames;
		r->s->names_kind = SRC_NAMES_DERIVED;
	}
	for (i = 0; i < ar->n; i++)
		free(par[i]);
	free(par);
	return 0;
fail:
	for (i = 0; i < ar->n; i++)
		free(par[i]);
	free(par);
	return -1;
}

static int
arch_fetch(const struct src *s, uint64_t i, struct rv_buf *scratch,
    struct rv_item *it)
{
	const struct arch *ar = s->priv;
	const struct asample *a = &ar->v[i];

	(void)scratch;
	src_item_name(it, s, a->path);
	it->data = a->data;
	it->len = a->len;
	it->dtype = src_encoded_dtype(a->data, a->len, a->path);
	it->label = a->derived ? src_label(s, a->label) : a->label;
	return 0;
}

static void
arch_free(struct src *s)
{
	struct arch *ar = s->priv;
	size_t i;

	if (!ar)
		return;
	for (i = 0; i < ar->n; i++)
		free(ar->v[i].path);
	free(ar->v);
	for (i = 0; i < ar->nchunk; i++)
		free(ar->chunk[i].p);
	free(ar->chunk);
	free(ar);
}

static const struct src_ops archive_ops = { arch_fetch, arch_free };

int
src_archive_open(struct src_ctx *c, struct src *s, const char *path)
{
	struct reader r;
	size_t i;
	int st;

	memset(&r, 0, sizeof(r));
	r.c = c;
	r.s = s;
	r.ar = xcalloc(1, sizeof(*r.ar));
	s->priv = r.ar;
	s->ops = &archive_ops;
	s->desc = xasprintf("archive:%s", s->name);
	if (!(r.a = archive_read_new()))
		return rv_seterr("'%s': out of memory", s->name);
	archive_read_support_filter_all(r.a);
	archive_read_support_format_all(r.a);
	if (strcmp(path, "-") == 0)
		st = archive_read_open_fd(r.a, STDIN_FILENO, 1 << 16);
	else
		st = archive_read_open_filename(r.a, path, 1 << 16);
	if (st != ARCHIVE_OK)
		st = no_archive(&r);
	else
		st = read_all(&r);
	archive_read_free(r.a);
	rv_buf_release(&r.buf);
	if (st == 0)
		st = group(&r);
	for (i = 0; i < r.nm; i++) {
		free(r.m[i].key);
		free(r.m[i].path);
	}
	free(r.m);
	s->n = r.ar->n;
	return st;
}
