/*
 * The dataset behind rv-decode: asks the readers in turn what each operand
 * is (folder, CIFAR batch, IDX file or pair, archive), opens it with the
 * one that takes it, lays the operands end to end into one listing of
 * stable ids, merges their class names into the stream metadata and
 * dispatches fetches.  The readers live in src_*.c behind src_impl.h,
 * what they share in src_common.c.
 */
#include "src/src.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "base/progress.h"
#include "base/xmem.h"
#include "src/src_impl.h"
#include "src/src_warn.h"

/*
 * The readers, in the order they are asked; the first whose probe says yes
 * reads the operand.  The order is deliberate: a folder is a folder; a
 * CIFAR batch is known by its name and a size of whole records, before IDX
 * reads the first bytes; a file named as a CIFAR batch but cut short is
 * refused after IDX had its say, rather than read as an archive; anything
 * else, stdin, a pipe or a device included, is an archive (a probe would
 * eat a pipe).  A new kind of operand is its src_NAME.c exporting
 * src_reader_NAME, and its place in this list.
 */
#define READERS(X) X(dir) X(cifar) X(idx) X(cifar_cut) X(archive)

#define ENTRY(name) &src_reader_##name,
static const struct src_reader *const readers[] = { READERS(ENTRY) };
#define NREADERS (sizeof(readers) / sizeof(readers[0]))

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

size_t
rv_dataset_nempty(const struct rv_dataset *d)
{
	return d->empty.n;
}

const char *
rv_dataset_empty(const struct rv_dataset *d, size_t i)
{
	return i < d->empty.n ? d->empty.v[i] : NULL;
}

const char *
rv_dataset_held(const struct rv_dataset *d, size_t k)
{
	const struct src *s = &d->src[k];

	if (s->n > 0)
		return NULL;
	if (s->held)
		return s->held;
	return s->indexed ? "indexed with no samples" : "no records";
}

const char *
rv_dataset_source_name(const struct rv_dataset *d, size_t k)
{
	return d->src[k].name;
}

/* An input that yields no sample says what it held. */
static void
say_empty(struct rv_dataset *d, size_t k)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "'%s': no samples: %s", d->src[k].name,
	    rv_dataset_held(d, k));
	src_msgs_add(&d->empty, buf);
}

void
rv_dataset_counts(const struct rv_dataset *d, struct rv_src_counts *c)
{
	*c = d->counts;
}

/* ---- opening ---- */

static int
classify(const char *path, const char *qname, struct src_probe *pr)
{
	struct stat st;
	const struct stat *stp = NULL;
	size_t i;
	int r;

	memset(pr, 0, sizeof(*pr));
	if (strcmp(path, "-") != 0) {
		if (stat(path, &st) < 0)
			return rv_seterr("'%s': cannot open:", qname);
		stp = &st;
	}
	for (i = 0; i < NREADERS; i++) {
		if ((r = readers[i]->probe(path, qname, stp, pr)) < 0)
			return -1;
		if (r > 0 && readers[i]->open != NULL) {
			pr->reader = readers[i];
			return 0;
		}
	}
	return rv_seterr("'%s': no reader takes it", qname);
}

/* Do IDX operands a and b make an images + labels pair? */
static int
idx_pair(const struct src_probe *a, const struct src_probe *b)
{
	if (a->reader != &src_reader_idx || b->reader != &src_reader_idx ||
	    a->n0 != b->n0)
		return 0;
	return (a->ndims == 1 && b->ndims >= 3) ||
	    (b->ndims == 1 && a->ndims >= 3);
}

int
src_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static ssize_t
find_name(char *const *names, size_t n, const char *name, int sorted)
{
	size_t i;

	if (sorted) {
		char *const *p = bsearch(&name, names, n, sizeof(*names),
		    src_cmp_str);
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
int
src_merge_classes(struct rv_dataset *d)
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
		qsort(uni, nuni, sizeof(*uni), src_cmp_str);
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
	src_free_names(d->classes, d->nclasses);
	d->classes = xcalloc(nfinal + 1, sizeof(*d->classes));
	d->nclasses = nfinal;
	for (i = 0; i < nfinal; i++)
		d->classes[i] = xstrdup(final[i]);
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

void
src_free(struct src *s)
{
	if (s->ops)
		s->ops->free(s);
	free(s->name);
	free(s->desc);
	free(s->held);
	free(s->path[0]);
	free(s->path[1]);
	src_free_names(s->names, s->nnames);
	free(s->map);
}

/*
 * Set up source s for operand i (and i + 1 for an IDX pair: returns the
 * operands taken, or -1).
 */
static int
set_operand(struct src *s, char *const paths[], int n, int i,
    const struct src_probe *oi)
{
	s->name = strcmp(paths[i], "-") == 0 ? xstrdup("<stdin>") :
	    src_sanitized(paths[i]);
	s->reader = oi[i].reader;
	s->recsize = oi[i].recsize;
	s->path[0] = xstrdup(paths[i]);
	if (oi[i].reader != &src_reader_idx)
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

/* With --cache-dir, the reads of c spill to the dataset's file, made at
 * the first: 0, or -1 with errmsg set. */
static int
use_spill(struct rv_dataset *d, struct src_ctx *c)
{
	if (!d->opts.cache_dir)
		return 0;
	if (!d->spill.dir && src_spill_open(&d->spill, d->opts.cache_dir) < 0)
		return -1;
	c->spill = &d->spill;
	return 0;
}

static struct rv_dataset *
dataset_open(char *const paths[], int n, const struct rv_src_opts *o,
    uint64_t *skipped, int list)
{
	static const struct rv_src_opts defaults;
	struct rv_dataset *d;
	struct src_probe *oi = NULL;
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
	c.warn = &d->warn;
	c.note = &d->note;
	c.list = list;
	c.held = &d->held;
	c.fds = &d->fds;
	if (!list && use_spill(d, &c) < 0)
		goto fail;
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
		    s->reader->open(&c, s) < 0)
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
		if (s->n == 0)
			say_empty(d, d->nsrc - 1);
		if (o && o->prog)
			rv_progress_tick(o->prog, (uint64_t)(i + k));
		if (s->n > UINT64_MAX - d->n) {
			rv_seterr("'%s': too many samples", s->name);
			goto fail;
		}
		d->n += s->n;
	}
	free(oi);
	oi = NULL;
	if (src_merge_classes(d) < 0)
		goto fail;
	set_source(d);
	src_msgs_close(&d->empty, "inputs with no samples");
	if (list == 1) {
		src_msgs_clear(&d->warn);
		src_msgs_clear(&d->note);
		return d;
	}
	src_msgs_close(&d->warn, "warnings");
	src_msgs_close(&d->note, "members ignored");
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

/* A listing (dataset_open's list 1: its messages dropped, or 2: kept) of
 * operands that can be opened again. */
static struct rv_dataset *
listing(char *const paths[], int n, const struct rv_src_opts *o,
    uint64_t *skipped, int list)
{
	struct stat st;
	int i;

	for (i = 0; i < n; i++) {
		char *q;

		if (rv_dataset_relistable(paths + i, 1))
			continue;
		q = src_sanitized(paths[i]);
		if (strcmp(paths[i], "-") != 0 && stat(paths[i], &st) < 0)
			rv_seterr("'%s': cannot open:", q);
		else
			rv_seterr("only files and directories can be listed "
			    "before they are read, not standard input or a "
			    "pipe ('%s')", strcmp(paths[i], "-") ? q :
			    "<stdin>");
		free(q);
		return NULL;
	}
	return dataset_open(paths, n, o, skipped, list);
}

struct rv_dataset *
rv_dataset_list(char *const paths[], int n, const struct rv_src_opts *o)
{
	return listing(paths, n, o, NULL, 1);
}

struct rv_dataset *
rv_dataset_scan(char *const paths[], int n, const struct rv_src_opts *o,
    uint64_t *skipped)
{
	return listing(paths, n, o, skipped, 2);
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
	c.warn = &d->warn;
	c.note = &d->note;
	c.held = &d->held;
	c.fds = &d->fds;
	if (use_spill(d, &c) < 0)
		goto out;
	t.name = xstrdup(s->name);
	t.reader = s->reader;
	t.recsize = s->recsize;
	t.path[0] = s->path[0];
	t.path[1] = s->path[1];
	if (s->indexed) {
		struct src_probe pr;

		if (src_index_verify(d, s, &pr) < 0)
			goto out;
		t.reader = pr.reader;
		t.recsize = pr.recsize;
	}
	if (t.reader->open(&c, &t) < 0)
		goto out;
	if (!same_listing(s, &t)) {
		rv_seterr("'%s': changed since it was %s (%" PRIu64
		    " samples then, %" PRIu64 " now, or other classes)%s%s%s",
		    s->name, s->indexed ? "indexed" : "listed", s->n, t.n,
		    s->indexed ? ": rebuild the index '" : "",
		    s->indexed ? d->index : "", s->indexed ? "'" : "");
		goto out;
	}
	s->ops = t.ops;
	s->priv = t.priv;
	s->mem = t.mem;
	t.mem = 0;
	s->fds = t.fds;
	t.fds = 0;
	t.ops = NULL;
	t.priv = NULL;
	s->have = t.n;
	s->loaded = 1;
	if (s->counted) {
		/* Read before, unloaded, read again: said and counted once. */
		src_msgs_drop(&d->warn, nwarn);
		src_msgs_drop(&d->note, nnote);
	} else {
		d->counts.skipped += c.skipped;
		d->counts.sidecars += c.sidecars;
		d->counts.ignored += c.ignored;
		s->counted = 1;
	}
	src_msgs_close(&d->warn, "warnings");
	src_msgs_close(&d->note, "members ignored");
	r = (int64_t)s->have;
out:
	d->held -= t.mem;	/* a load that failed holds nothing */
	d->fds -= t.fds;
	t.path[0] = t.path[1] = NULL;
	src_free(&t);
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
	d->held -= s->mem;
	s->mem = 0;
	d->fds -= s->fds;
	s->fds = 0;
}

void
rv_dataset_clear_msgs(struct rv_dataset *d)
{
	src_msgs_clear(&d->warn);
	src_msgs_clear(&d->note);
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
		src_free(&d->src[i]);
	free(d->src);
	src_msgs_free(&d->warn);
	src_msgs_free(&d->note);
	src_msgs_free(&d->empty);
	rv_meta_release(&d->meta);
	free(d->index);
	src_free_names(d->classes, d->nclasses);
	src_spill_close(&d->spill);
	free(d);
}
