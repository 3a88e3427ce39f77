/*
 * The dataset behind rv-decode: sorts out what each operand is (archive,
 * directory, IDX pair, CIFAR batch), opens it with its reader, lays the
 * operands end to end into one listing of stable ids, merges their class
 * names into the stream metadata and dispatches fetches.  The readers
 * live in src_*.c behind src_impl.h.
 */
#include "src/src.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "codec/codec.h"
#include "src/src_impl.h"
#include "src/src_warn.h"

/* Warnings kept for the caller; past this only a count is kept. */
#define MAX_WARNINGS	1000
/* A file of class names bigger than this is not one. */
#define MAX_NAMES_FILE	((off_t)1 << 20)

struct rv_dataset {
	struct src *src;
	size_t nsrc;
	uint64_t n;
	struct rv_meta meta;
	struct msgs {
		char **v;
		size_t n, cap;
		uint64_t dropped;	/* past MAX_WARNINGS */
	} warn, note;
	struct rv_src_counts counts;
	struct rv_src_opts opts;	/* as given: loads use it */
	struct rv_src_opts list_opts;	/* the listing's: never strict */
};

enum kind {
	K_ARCHIVE,
	K_DIR,
	K_IDX,
	K_CIFAR,
};

struct opinfo {
	int kind;
	int ndims;		/* IDX */
	uint32_t n0;		/* IDX: first dimension */
	int recsize;		/* CIFAR */
};

/* ---- warnings ---- */

static void
add_msg(struct msgs *m, const char *msg)
{
	if (m->n == MAX_WARNINGS) {
		m->dropped++;
		return;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		m->v = xreallocarray(m->v, m->cap, sizeof(*m->v));
	}
	m->v[m->n++] = xstrdup(msg);
}

/* The last message says how many more there were. */
static void
close_msgs(struct msgs *m, const char *what)
{
	char buf[64];

	if (m->dropped == 0)
		return;
	m->n--;
	m->dropped++;
	free(m->v[m->n]);
	snprintf(buf, sizeof(buf), "%" PRIu64 " more %s", m->dropped, what);
	add_msg(m, buf);
}

static void
free_msgs(struct msgs *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
}

static int
vwarn(struct src_ctx *c, int fatal, int count, const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (fatal && c->o->strict)
		return rv_seterr("%s", buf);
	/* A sample lost says so, as rv-decode's decode-time warnings do. */
	if (fatal)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
		    " (skipped)");
	add_msg(&c->d->warn, buf);
	if (count)
		c->skipped++;
	return 0;
}

int
src_skip(struct src_ctx *c, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vwarn(c, 1, 1, fmt, ap);
	va_end(ap);
	return r;
}

int
src_bad(struct src_ctx *c, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vwarn(c, 1, 0, fmt, ap);
	va_end(ap);
	return r;
}

void
src_note(struct src_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(c, 0, 0, fmt, ap);
	va_end(ap);
}

void
src_count(struct src_ctx *c)
{
	c->skipped++;
}

void
src_ignore(struct src_ctx *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	add_msg(&c->d->note, buf);
	c->ignored++;
}

size_t
rv_dataset_nwarnings(const struct rv_dataset *d)
{
	return d->warn.n;
}

const char *
rv_dataset_warning(const struct rv_dataset *d, size_t i)
{
	return i < d->warn.n ? d->warn.v[i] : NULL;
}

size_t
rv_dataset_nnotes(const struct rv_dataset *d)
{
	return d->note.n;
}

const char *
rv_dataset_note(const struct rv_dataset *d, size_t i)
{
	return i < d->note.n ? d->note.v[i] : NULL;
}

void
rv_dataset_counts(const struct rv_dataset *d, struct rv_src_counts *c)
{
	*c = d->counts;
}

/* ---- helpers shared by the readers ---- */

/* Length of the valid UTF-8 sequence at p (at most n bytes), else 0. */
static size_t
utf8_seq(const unsigned char *p, size_t n)
{
	size_t k, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		k = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		k = 3;
		if (p[0] == 0xe0)
			lo = 0xa0;
		else if (p[0] == 0xed)
			hi = 0x9f;	/* no surrogates */
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		k = 4;
		if (p[0] == 0xf0)
			lo = 0x90;
		else if (p[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < k || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < k; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	/* C1 controls (U+0080..U+009F) move terminals too. */
	if (k == 2 && p[0] == 0xc2 && p[1] < 0xa0)
		return 0;
	return k;
}

void
src_sanitize(char *dst, size_t len, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0, i = 0;

	if (len == 0)
		return;
	while (i < n) {
		char esc[5];
		const char *piece = esc;
		size_t plen, k;

		if (u[i] >= 0x20 && u[i] < 0x7f) {
			piece = s + i;
			plen = 1;
		} else if (u[i] == '\n' || u[i] == '\t') {
			esc[0] = '\\';
			esc[1] = u[i] == '\n' ? 'n' : 't';
			plen = 2;
		} else if (u[i] >= 0x80 && (k = utf8_seq(u + i, n - i)) > 0) {
			piece = s + i;
			plen = k;
		} else {
			snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
			plen = 4;
		}
		if (o + plen >= len)
			break;
		memcpy(dst + o, piece, plen);
		o += plen;
		i += piece == esc ? 1 : plen;
	}
	dst[o] = '\0';
}

char *
src_sanitized(const char *s)
{
	size_t n = strlen(s), len = 4 * n + 1;
	char *p = xmalloc(len);

	src_sanitize(p, len, s, n);
	return p;
}

void
src_item_name(struct rv_item *it, const struct src *s, const char *member)
{
	size_t n;
	/* "'archive': 'member'", but "'file': record N" for record indices */
	int quote = strncmp(member, "record ", 7) != 0;

	snprintf(it->name, sizeof(it->name), "'%s': %s", s->name,
	    quote ? "'" : "");
	n = strlen(it->name);
	src_sanitize(it->name + n, sizeof(it->name) - n - 1, member,
	    strlen(member));
	if (quote)
		strcat(it->name, "'");
}

static const char *
extension(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(slash ? slash + 1 : path, '.');

	return dot ? dot + 1 : "";
}

int
src_lower_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char ca = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
		if (ca != *b)
			return 0;
	}
	return *a == *b;
}

static int
ext_in(const char *ext, const char *const *list)
{
	for (; *list; list++)
		if (src_lower_eq(ext, *list))
			return 1;
	return 0;
}

int
src_image_ext(const char *ext)
{
	return rv_format_by_ext(ext) != NULL;
}

int
src_unsupported_ext(const char *ext)
{
	static const char *const other[] = { "heic", "heif", "avif", "jxl",
	    "jp2", "j2k", "jpx", "jpf", "ppm", "pgm", "pbm", "pnm", "pam",
	    "pcx", "tga", "ico", "icns", "psd", "xcf", "svg", "svgz", "eps",
	    "exr", "hdr", "dds", "dng", "cr2", "cr3", "crw", "nef", "arw",
	    "orf", "rw2", "raf", "raw", NULL };

	return ext_in(ext, other);
}

int
src_encoded_dtype(const unsigned char *p, size_t n, const char *path)
{
	int t = rv_sniff(p, n);

	if (t != RV_DT_NONE)
		return t;
	/* A WebP, GIF, BMP or TIFF: no stream dtype of its own. */
	if (rv_codec_format(p, n) != NULL)
		return RV_DT_NONE;
	/* Let the decoder say what is wrong with it, by its name. */
	return src_lower_eq(extension(path), "png") ? RV_DT_PNG : RV_DT_JPEG;
}

int32_t
src_label(const struct src *s, int32_t local)
{
	if (local < 0 || !s->map)
		return local;
	return s->map[local];
}

void
src_free_names(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int
src_read_names(const char *path, char ***names, size_t *n)
{
	struct stat st;
	char *buf, *p, *end;
	size_t cap = 0;
	int fd;

	*names = NULL;
	*n = 0;
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return rv_seterr("cannot open:");
	}
	if (fstat(fd, &st) < 0) {
		close(fd);
		return rv_seterr("cannot stat:");
	}
	if (!S_ISREG(st.st_mode) || st.st_size > MAX_NAMES_FILE) {
		close(fd);
		return rv_seterr("not a short text file");
	}
	buf = xmalloc((size_t)st.st_size + 1);
	if (rv_pread_full(fd, buf, (size_t)st.st_size, 0) < 0) {
		free(buf);
		close(fd);
		return -1;
	}
	close(fd);
	buf[st.st_size] = '\0';
	for (p = buf, end = buf + st.st_size; p < end; ) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *e = nl ? nl : end;

		while (e > p && (e[-1] == '\r' || e[-1] == ' ' ||
		    e[-1] == '\t'))
			e--;
		if (e > p) {
			if (*n == cap) {
				cap = cap ? cap * 2 : 16;
				*names = xreallocarray(*names, cap,
				    sizeof(**names));
			}
			(*names)[(*n)++] = xstrndup(p, (size_t)(e - p));
		}
		p = nl ? nl + 1 : end;
	}
	free(buf);
	return (int)*n;
}

/* ---- opening ---- */

static int
classify(const char *path, const char *qname, struct opinfo *oi)
{
	struct stat st;
	int r;

	memset(oi, 0, sizeof(*oi));
	oi->kind = K_ARCHIVE;
	if (strcmp(path, "-") == 0)
		return 0;
	if (stat(path, &st) < 0)
		return rv_seterr("'%s': cannot open:", qname);
	if (S_ISDIR(st.st_mode)) {
		oi->kind = K_DIR;
		return 0;
	}
	/* A pipe or a device can only be an archive: probing would eat it. */
	if (!S_ISREG(st.st_mode))
		return 0;
	if ((oi->recsize = src_cifar_recsize(path, st.st_size)) != 0) {
		oi->kind = K_CIFAR;
		return 0;
	}
	r = src_idx_probe(path, &oi->ndims, &oi->n0);
	if (r < 0)
		return rv_preferr("'%s'", qname);
	if (r > 0)
		oi->kind = K_IDX;
	else if (src_cifar_cut(path, qname, st.st_size))
		return -1;
	return 0;
}

/* Do IDX operands a and b make an images + labels pair? */
static int
idx_pair(const struct opinfo *a, const struct opinfo *b)
{
	if (a->kind != K_IDX || b->kind != K_IDX || a->n0 != b->n0)
		return 0;
	return (a->ndims == 1 && b->ndims >= 3) ||
	    (b->ndims == 1 && a->ndims >= 3);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static ssize_t
find_name(char *const *names, size_t n, const char *name, int sorted)
{
	size_t i;

	if (sorted) {
		char *const *p = bsearch(&name, names, n, sizeof(*names),
		    cmp_str);
		return p ? p - names : -1;
	}
	for (i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return (ssize_t)i;
	return -1;
}

/*
 * One list of class names for the dataset.  Operands with fixed names
 * (Fashion-MNIST, CIFAR) must agree with each other.  Names derived from
 * directories are merged: each such operand's labels are remapped into
 * the sorted union of all their names, so shards of one ImageFolder tree
 * agree even when a shard lacks a class; with fixed names present the
 * directory names must be among them.
 */
static int
merge_classes(struct rv_dataset *d)
{
	const struct src *fixed = NULL;
	char **uni = NULL, *const *final;
	size_t nuni = 0, nfinal, nclasses, i, j;
	char key[32];
	int sorted = 1;

	for (i = 0; i < d->nsrc; i++) {
		const struct src *s = &d->src[i];

		if (s->names_kind == SRC_NAMES_FIXED) {
			if (!fixed) {
				fixed = s;
				continue;
			}
			if (s->nnames != fixed->nnames)
				goto differ;
			for (j = 0; j < s->nnames; j++)
				if (strcmp(s->names[j], fixed->names[j]) != 0)
					goto differ;
		} else if (s->names_kind == SRC_NAMES_DERIVED) {
			uni = xreallocarray(uni, nuni + s->nnames,
			    sizeof(*uni));
			for (j = 0; j < s->nnames; j++)
				uni[nuni++] = s->names[j];
		}
		continue;
differ:
		free(uni);
		return rv_seterr("'%s': class names differ from those of '%s'",
		    s->name, fixed->name);
	}
	if (nuni > 0) {
		qsort(uni, nuni, sizeof(*uni), cmp_str);
		for (i = j = 0; i < nuni; i++)
			if (j == 0 || strcmp(uni[j - 1], uni[i]) != 0)
				uni[j++] = uni[i];
		nuni = j;
	}
	if (fixed) {
		final = fixed->names;
		nfinal = fixed->nnames;
		sorted = 0;
	} else {
		final = uni;
		nfinal = nuni;
	}
	for (i = 0; i < d->nsrc; i++) {
		struct src *s = &d->src[i];

		if (s->names_kind != SRC_NAMES_DERIVED || s->nnames == 0)
			continue;
		s->map = xreallocarray(NULL, s->nnames, sizeof(*s->map));
		for (j = 0; j < s->nnames; j++) {
			ssize_t k = find_name(final, nfinal, s->names[j],
			    sorted);
			if (k < 0) {
				char *q = src_sanitized(s->names[j]);
				rv_seterr("'%s': class '%s' is not one of "
				    "the %zu classes of '%s'", s->name, q,
				    nfinal, fixed->name);
				free(q);
				free(uni);
				return -1;
			}
			s->map[j] = (int32_t)k;
		}
	}
	/* Numbered labels (sidecars, IDX, CIFAR) count too: a model needs
	 * an output for the highest one, names or not. */
	nclasses = nfinal;
	for (i = 0; i < d->nsrc; i++)
		if (d->src[i].nlabels > nclasses)
			nclasses = d->src[i].nlabels;
	if (nclasses > 0) {
		snprintf(key, sizeof(key), "%zu", nclasses);
		rv_meta_set(&d->meta, "classes", key);
	}
	for (i = 0; i < nfinal; i++) {
		char *q = src_sanitized(final[i]);

		snprintf(key, sizeof(key), "class.%zu", i);
		rv_meta_set(&d->meta, key, q);
		free(q);
	}
	free(uni);
	return 0;
}

static void
set_source(struct rv_dataset *d)
{
	struct rv_buf b = { 0 };
	size_t i;

	for (i = 0; i < d->nsrc; i++) {
		if (i > 0)
			rv_buf_append(&b, "; ", 2);
		rv_buf_append(&b, d->src[i].desc, strlen(d->src[i].desc));
	}
	rv_buf_append(&b, "", 1);
	rv_meta_set(&d->meta, "source", (char *)b.data);
	rv_buf_release(&b);
}

static void
free_src(struct src *s)
{
	if (s->ops)
		s->ops->free(s);
	free(s->name);
	free(s->desc);
	free(s->path[0]);
	free(s->path[1]);
	src_free_names(s->names, s->nnames);
	free(s->map);
}

/* Open source s (its name, kind and paths set) with its reader. */
static int
open_source(struct src_ctx *c, struct src *s)
{
	switch (s->kind) {
	case K_DIR:
		return src_dir_open(c, s, s->path[0]);
	case K_CIFAR:
		return src_cifar_open(c, s, s->path[0], s->recsize);
	case K_IDX:
		return src_idx_open(c, s, s->path[0], s->path[1]);
	default:
		return src_archive_open(c, s, s->path[0]);
	}
}

/* Forget the messages after the first n (unless some were dropped). */
static void
drop_msgs(struct msgs *m, size_t n)
{
	if (m->dropped)
		return;
	while (m->n > n)
		free(m->v[--m->n]);
}

static void
clear_msgs(struct msgs *m)
{
	free_msgs(m);
	memset(m, 0, sizeof(*m));
}

/*
 * Set up source s for operand i (and i + 1 for an IDX pair: returns the
 * operands taken, or -1).
 */
static int
set_operand(struct src *s, char *const paths[], int n, int i,
    const struct opinfo *oi)
{
	s->name = strcmp(paths[i], "-") == 0 ? xstrdup("<stdin>") :
	    src_sanitized(paths[i]);
	s->kind = oi[i].kind;
	s->recsize = oi[i].recsize;
	s->path[0] = xstrdup(paths[i]);
	if (oi[i].kind != K_IDX)
		return 1;
	if (i + 1 < n && idx_pair(&oi[i], &oi[i + 1])) {
		int lab = oi[i].ndims == 1;

		free(s->name);
		free(s->path[0]);
		s->name = src_sanitized(paths[i + lab]);
		s->path[0] = xstrdup(paths[i + lab]);
		s->path[1] = xstrdup(paths[i + !lab]);
		return 2;
	}
	if (oi[i].ndims == 1)
		return rv_seterr("'%s': IDX labels without an images file of "
		    "%" PRIu32 " samples beside it", s->name, oi[i].n0);
	return 1;
}

static struct rv_dataset *
dataset_open(char *const paths[], int n, const struct rv_src_opts *o,
    uint64_t *skipped, int list)
{
	static const struct rv_src_opts defaults;
	struct rv_dataset *d;
	struct opinfo *oi = NULL;
	struct src_ctx c;
	int i, k;

	if (skipped)
		*skipped = 0;
	if (n <= 0) {
		rv_seterr("no dataset operands");
		return NULL;
	}
	d = xcalloc(1, sizeof(*d));
	rv_meta_init(&d->meta);
	d->opts = o ? *o : defaults;
	memset(&c, 0, sizeof(c));
	/* A listing never fails for a bad member: the rank that reads the
	 * file says so, and fails under --strict. */
	d->list_opts = d->opts;
	if (list)
		d->list_opts.strict = 0;
	c.o = &d->list_opts;
	c.d = d;
	c.list = list;
	d->src = xcalloc((size_t)n, sizeof(*d->src));
	oi = xcalloc((size_t)n, sizeof(*oi));
	for (i = 0; i < n; i++) {
		char *q = strcmp(paths[i], "-") == 0 ? xstrdup("<stdin>") :
		    src_sanitized(paths[i]);
		int r = classify(paths[i], q, &oi[i]);

		free(q);
		if (r < 0)
			goto fail;
	}
	for (i = 0; i < n; i += k) {
		struct src *s = &d->src[d->nsrc];

		d->nsrc++;
		if ((k = set_operand(s, paths, n, i, oi)) < 0 ||
		    open_source(&c, s) < 0)
			goto fail;
		if (!s->desc)
			s->desc = xstrdup(s->name);
		s->base = d->n;
		s->have = s->n;
		s->loaded = !list;
		if (list && s->ops) {
			s->ops->free(s);
			s->priv = NULL;
		}
		if (s->n > UINT64_MAX - d->n) {
			rv_seterr("'%s': too many samples", s->name);
			goto fail;
		}
		d->n += s->n;
	}
	free(oi);
	oi = NULL;
	if (merge_classes(d) < 0)
		goto fail;
	set_source(d);
	if (list) {
		clear_msgs(&d->warn);
		clear_msgs(&d->note);
		return d;
	}
	close_msgs(&d->warn, "warnings");
	close_msgs(&d->note, "members ignored");
	d->counts.skipped = c.skipped;
	d->counts.sidecars = c.sidecars;
	d->counts.ignored = c.ignored;
	if (skipped)
		*skipped = c.skipped;
	return d;
fail:
	free(oi);
	rv_dataset_free(d);
	return NULL;
}

struct rv_dataset *
rv_dataset_open(char *const paths[], int n, const struct rv_src_opts *o,
    uint64_t *skipped)
{
	return dataset_open(paths, n, o, skipped, 0);
}

int
rv_dataset_relistable(char *const paths[], int n)
{
	struct stat st;
	int i;

	for (i = 0; i < n; i++)
		if (strcmp(paths[i], "-") == 0 || stat(paths[i], &st) < 0 ||
		    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
			return 0;
	return n > 0;
}

struct rv_dataset *
rv_dataset_list(char *const paths[], int n, const struct rv_src_opts *o)
{
	if (!rv_dataset_relistable(paths, n)) {
		rv_seterr("only files and directories can be listed before "
		    "they are read, not standard input or a pipe");
		return NULL;
	}
	return dataset_open(paths, n, o, NULL, 1);
}

size_t
rv_dataset_nsources(const struct rv_dataset *d)
{
	return d->nsrc;
}

void
rv_dataset_source(const struct rv_dataset *d, size_t k, uint64_t *base,
    uint64_t *n)
{
	*base = d->src[k].base;
	*n = d->src[k].n;
}

/* Does a source read again say what its listing said? */
static int
same_listing(const struct src *a, const struct src *b)
{
	size_t j;

	if (b->n > a->n || b->nnames != a->nnames ||
	    b->names_kind != a->names_kind || b->nlabels > a->nlabels)
		return 0;
	for (j = 0; j < a->nnames; j++)
		if (strcmp(a->names[j], b->names[j]) != 0)
			return 0;
	return 1;
}

int64_t
rv_dataset_load(struct rv_dataset *d, size_t k)
{
	struct src *s = &d->src[k], t;
	struct src_ctx c;
	size_t nwarn = d->warn.n, nnote = d->note.n;
	int64_t r = -1;

	if (s->loaded)
		return (int64_t)s->have;
	memset(&t, 0, sizeof(t));
	memset(&c, 0, sizeof(c));
	c.o = &d->opts;
	c.d = d;
	t.name = xstrdup(s->name);
	t.kind = s->kind;
	t.recsize = s->recsize;
	t.path[0] = s->path[0];
	t.path[1] = s->path[1];
	if (open_source(&c, &t) < 0)
		goto out;
	if (!same_listing(s, &t)) {
		rv_seterr("'%s': changed since it was listed (%" PRIu64
		    " samples then, %" PRIu64 " now, or other classes)",
		    s->name, s->n, t.n);
		goto out;
	}
	s->ops = t.ops;
	s->priv = t.priv;
	t.ops = NULL;
	t.priv = NULL;
	s->have = t.n;
	s->loaded = 1;
	if (s->counted) {
		/* Read before, unloaded, read again: said and counted once. */
		drop_msgs(&d->warn, nwarn);
		drop_msgs(&d->note, nnote);
	} else {
		d->counts.skipped += c.skipped;
		d->counts.sidecars += c.sidecars;
		d->counts.ignored += c.ignored;
		s->counted = 1;
	}
	close_msgs(&d->warn, "warnings");
	close_msgs(&d->note, "members ignored");
	r = (int64_t)s->have;
out:
	t.path[0] = t.path[1] = NULL;
	free_src(&t);
	return r;
}

void
rv_dataset_unload(struct rv_dataset *d, size_t k)
{
	struct src *s = &d->src[k];

	if (!s->loaded)
		return;
	s->ops->free(s);
	s->priv = NULL;
	s->loaded = 0;
}

void
rv_dataset_clear_msgs(struct rv_dataset *d)
{
	clear_msgs(&d->warn);
	clear_msgs(&d->note);
}

uint64_t
rv_dataset_count(const struct rv_dataset *d)
{
	return d->n;
}

const struct rv_meta *
rv_dataset_meta(const struct rv_dataset *d)
{
	return &d->meta;
}

int
rv_dataset_fetch(struct rv_dataset *d, uint64_t id, struct rv_buf *scratch,
    struct rv_item *it)
{
	size_t lo = 0, hi = d->nsrc;
	const struct src *s;

	if (id >= d->n)
		return rv_seterr("sample %" PRIu64 " is out of range "
		    "(%" PRIu64 " samples)", id, d->n);
	/* The last source whose base is <= id (empty ones share bases). */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->src[mid].base <= id)
			lo = mid;
		else
			hi = mid;
	}
	s = &d->src[lo];
	if (!s->loaded)
		return rv_seterr("'%s': sample %" PRIu64 " fetched from a "
		    "source not read", s->name, id);
	if (id - s->base >= s->have)
		return rv_seterr("'%s': sample %" PRIu64 " was listed but "
		    "could not be read", s->name, id);
	it->id = id;
	it->label = -1;
	it->h = it->w = it->c = 0;
	it->data = NULL;
	it->len = 0;
	it->name[0] = '\0';
	return s->ops->fetch(s, id - s->base, scratch, it);
}

void
rv_dataset_free(struct rv_dataset *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->nsrc; i++)
		free_src(&d->src[i]);
	free(d->src);
	free_msgs(&d->warn);
	free_msgs(&d->note);
	rv_meta_release(&d->meta);
	free(d);
}
