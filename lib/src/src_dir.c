/*
 * A directory in the ImageFolder layout: each immediate subdirectory is a
 * class (index = its place among the subdirectory names in byte order),
 * every image file below it (by extension: src_image_ext) a sample of
 * that class; image files at the top level have no label.  Samples are
 * sorted by relative path.  Every other entry is accounted for: a file in
 * an image format rv does not read, a link to nothing, or a file over the
 * 1 GiB limit is a skipped sample; a file that is no image, a hidden
 * entry, a special file or a link to a directory is ignored, with a note.
 * Only the listing is kept: a fetch reads the file into the scratch (a
 * file unreadable by then is that sample skipped: RV_FETCH_BAD).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "src/src_impl.h"

struct dsample {
	char *rel;		/* path below the root */
	int32_t label;		/* local class index or -1 */
};

struct dir {
	char *root;		/* the operand, with no trailing slash */
	struct dsample *v;
	size_t n, cap;
};

struct walk {
	struct src_ctx *c;
	struct src *s;
	struct dir *d;
	char path[PATH_MAX];	/* root/rel being visited */
	size_t rootlen;		/* root + '/' */
	struct src_tally tally;	/* what it held */
};

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
cmp_sample(const void *a, const void *b)
{
	return strcmp(((const struct dsample *)a)->rel,
	    ((const struct dsample *)b)->rel);
}

static const char *
ext_of(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot ? dot + 1 : "";
}

/* Note that w->path's entry name (at len) is ignored, and why. */
static void
ignore(struct walk *w, size_t len, const char *name, const char *why)
{
	char rel[PATH_MAX + 256];
	char *q;

	/* w->path holds the directory in its first len bytes (what comes
	 * after may be an entry's name). */
	if (len >= w->rootlen)
		snprintf(rel, sizeof(rel), "%.*s/%s", (int)(len - w->rootlen),
		    w->path + w->rootlen, name);
	else
		snprintf(rel, sizeof(rel), "%s", name);
	q = src_sanitized(rel);
	src_ignore(w->c, "'%s': '%s': %s (ignored)", w->s->name, q, why);
	free(q);
}

/* The entries of directory w->path (of length len), sorted; hidden ones
 * are noted and left out. */
static int
list_dir(struct walk *w, size_t len, char ***names, size_t *n)
{
	size_t cap = 0;
	struct dirent *e;
	DIR *dp;

	*names = NULL;
	*n = 0;
	if (!(dp = opendir(w->path)))
		return -1;
	errno = 0;
	while ((e = readdir(dp))) {
		/* Dot entries: ".", "..", and hidden files and folders
		 * (.DS_Store, ._x.jpg, .ipynb_checkpoints) are never data. */
		if (e->d_name[0] == '.') {
			if (strcmp(e->d_name, ".") != 0 &&
			    strcmp(e->d_name, "..") != 0) {
				ignore(w, len, e->d_name, "hidden");
				src_tally(&w->tally, e->d_name, 0);
			}
			errno = 0;
			continue;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			*names = xreallocarray(*names, cap, sizeof(**names));
		}
		(*names)[(*n)++] = xstrdup(e->d_name);
	}
	if (errno) {
		int saved = errno;
		closedir(dp);
		src_free_names(*names, *n);
		*names = NULL;
		*n = 0;
		errno = saved;
		return -1;
	}
	closedir(dp);
	if (*n > 0)
		qsort(*names, *n, sizeof(**names), cmp_str);
	return 0;
}

static int walk(struct walk *w, size_t len, int32_t label);

/*
 * One entry, name, of the directory w->path (of length len): recurse into
 * a real directory (so symlink loops cannot happen), add an image file
 * (or a symlink to one) as a sample of class label, and account for
 * anything else.
 */
static int
visit(struct walk *w, size_t len, const char *name, int32_t label)
{
	size_t k = strlen(name);
	const char *ext = ext_of(name);
	struct stat st, lst;
	char *q;
	int r;

	if (len + 1 + k >= sizeof(w->path)) {
		q = src_sanitized(name);
		r = src_skip(w->c, "'%s': '%s': path too long", w->s->name, q);
		free(q);
		return r;
	}
	w->path[len] = '/';
	memcpy(w->path + len + 1, name, k + 1);
	if (lstat(w->path, &lst) < 0)
		return 0;	/* gone since the listing */
	if (S_ISDIR(lst.st_mode))
		return walk(w, len + 1 + k, label);
	src_tally(&w->tally, name, src_image_ext(ext));
	st = lst;
	if (S_ISLNK(lst.st_mode) && stat(w->path, &st) == 0 &&
	    S_ISDIR(st.st_mode)) {
		/* walk_top() has warned about one at the top. */
		if (len + 1 == w->rootlen)
			w->c->ignored++;
		else
			ignore(w, len, name, "symlink to a directory, not "
			    "followed");
		return 0;
	}
	if (!src_image_ext(ext)) {
		if (!src_unsupported_ext(ext)) {
			ignore(w, len, name, S_ISREG(st.st_mode) ?
			    "not an image" : "not a regular file");
			return 0;
		}
		q = src_sanitized(w->path + w->rootlen);
		r = src_skip(w->c, "'%s': '%s': unsupported image format; "
		    "rv reads JPEG, PNG, WebP, GIF, BMP and TIFF",
		    w->s->name, q);
		free(q);
		return r;
	}
	if (S_ISLNK(lst.st_mode) && (stat(w->path, &st) < 0 ||
	    !S_ISREG(st.st_mode))) {
		q = src_sanitized(w->path + w->rootlen);
		r = src_skip(w->c, "'%s': '%s': symlink to no regular file",
		    w->s->name, q);
		free(q);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		ignore(w, len, name, "not a regular file");
		return 0;
	}
	if ((uint64_t)st.st_size > SRC_MAX_MEMBER) {
		/* As an archive member of that size is: a sample lost. */
		q = src_sanitized(w->path + w->rootlen);
		r = src_skip(w->c, "'%s': '%s': file of %lld bytes is over "
		    "the 1 GiB limit", w->s->name, q, (long long)st.st_size);
		free(q);
		return r;
	}
	if (w->d->n == w->d->cap) {
		w->d->cap = w->d->cap ? w->d->cap * 2 : 256;
		w->d->v = xreallocarray(w->d->v, w->d->cap, sizeof(*w->d->v));
	}
	w->d->v[w->d->n].rel = xstrdup(w->path + w->rootlen);
	w->d->v[w->d->n].label = label;
	w->d->n++;
	return 0;
}

/* Visit everything below w->path (of length len). */
static int
walk(struct walk *w, size_t len, int32_t label)
{
	char **names;
	size_t n, i;
	int r = 0;

	if (list_dir(w, len, &names, &n) < 0) {
		char *q = src_sanitized(w->path + w->rootlen);
		r = src_skip(w->c, "'%s': '%s': cannot read the directory:",
		    w->s->name, q);
		free(q);
		return r;
	}
	for (i = 0; i < n && r == 0; i++)
		r = visit(w, len, names[i], label);
	w->path[len] = '\0';
	src_free_names(names, n);
	return r;
}

/*
 * The top level: its real subdirectories, sorted, are the classes, and
 * image files beside them have no label.  A symlink to a directory is no
 * class (its target is not walked, to keep loops out); say so, since a
 * class going missing would surprise.
 */
static int
walk_top(struct walk *w, size_t len)
{
	char **names, **classes = NULL;
	size_t n, i, nclass = 0;
	int r = 0;

	if (list_dir(w, len, &names, &n) < 0)
		return rv_seterr("'%s': cannot read the directory:",
		    w->s->name);
	for (i = 0; i < n; i++) {
		struct stat st;
		size_t k = strlen(names[i]);

		if (len + 1 + k >= sizeof(w->path))
			continue;	/* visit() reports it */
		w->path[len] = '/';
		memcpy(w->path + len + 1, names[i], k + 1);
		if (lstat(w->path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			classes = xreallocarray(classes, nclass + 1,
			    sizeof(*classes));
			classes[nclass++] = names[i];
		} else if (S_ISLNK(st.st_mode) && stat(w->path, &st) == 0 &&
		    S_ISDIR(st.st_mode)) {
			char *q = src_sanitized(names[i]);
			src_note(w->c, "'%s': '%s': symlink to a directory, "
			    "not followed", w->s->name, q);
			free(q);
		}
	}
	w->path[len] = '\0';
	/* names came sorted, so the classes are in byte order. */
	for (i = 0; i < n && r == 0; i++) {
		char **cls = nclass == 0 ? NULL : bsearch(&names[i], classes,
		    nclass, sizeof(*classes), cmp_str);

		r = visit(w, len, names[i],
		    cls ? (int32_t)(cls - classes) : -1);
	}
	w->path[len] = '\0';
	if (nclass > 0) {
		w->s->names = xcalloc(nclass, sizeof(*w->s->names));
		for (i = 0; i < nclass; i++)
			w->s->names[i] = xstrdup(classes[i]);
		w->s->nnames = nclass;
		w->s->names_kind = SRC_NAMES_DERIVED;
	}
	free(classes);
	src_free_names(names, n);
	return r;
}

/*
 * A file listed may have gone, lost its permissions, become something
 * else or grown since: that sample is bad on its own (RV_FETCH_BAD, the
 * reason in errmsg), never the whole run.
 */
static int
dir_fetch(const struct src *s, uint64_t i, struct rv_buf *scratch,
    struct rv_item *it)
{
	const struct dir *d = s->priv;
	const struct dsample *e = &d->v[i];
	char path[PATH_MAX];
	struct stat st;
	int fd;

	src_item_name(it, s, e->rel);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", d->root, e->rel) >=
	    sizeof(path)) {
		rv_seterr("path too long");
		return RV_FETCH_BAD;
	}
	/* O_NONBLOCK: a FIFO put in the file's place must not hang us. */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		rv_seterr("cannot open:");
		return RV_FETCH_BAD;
	}
	if (fstat(fd, &st) < 0) {
		rv_seterr("cannot stat:");
		goto bad;
	}
	if (!S_ISREG(st.st_mode)) {
		rv_seterr("no longer a regular file");
		goto bad;
	}
	if ((uint64_t)st.st_size > SRC_MAX_MEMBER) {
		rv_seterr("file of %lld bytes is over the 1 GiB limit",
		    (long long)st.st_size);
		goto bad;
	}
	scratch->len = 0;
	rv_buf_reserve(scratch, (size_t)st.st_size + 1);
	if (rv_pread_full(fd, scratch->data, (size_t)st.st_size, 0) < 0)
		goto bad;
	close(fd);
	scratch->len = (size_t)st.st_size;
	it->data = scratch->data;
	it->len = scratch->len;
	it->dtype = src_encoded_dtype(it->data, it->len, e->rel);
	it->label = src_label(s, e->label);
	return 0;
bad:
	close(fd);
	return RV_FETCH_BAD;
}

static void
dir_free(struct src *s)
{
	struct dir *d = s->priv;
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++)
		free(d->v[i].rel);
	free(d->v);
	free(d->root);
	free(d);
}

static const struct src_ops dir_ops = { dir_fetch, dir_free };

static int
dir_open(struct src_ctx *c, struct src *s)
{
	const char *path = s->path[0];
	struct walk *w;
	struct dir *d;
	size_t len = strlen(path);
	int r;

	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len + 2 >= PATH_MAX)
		return rv_seterr("'%s': path too long", s->name);
	d = xcalloc(1, sizeof(*d));
	d->root = xstrndup(path, len);
	s->priv = d;
	s->ops = &dir_ops;
	w = xcalloc(1, sizeof(*w));
	w->c = c;
	w->s = s;
	w->d = d;
	memcpy(w->path, path, len);
	w->path[len] = '\0';
	w->rootlen = len + 1;
	r = walk_top(w, len);
	if (r == 0 && d->n == 0)
		s->held = src_tally_held(&w->tally, "file");
	free(w);
	if (r < 0)
		return -1;
	if (d->n > 0)
		qsort(d->v, d->n, sizeof(*d->v), cmp_sample);
	s->n = d->n;
	s->desc = xasprintf("dir:%s", s->name);
	return 0;
}

static int
dir_probe(const char *path, const char *qname, const struct stat *st,
    struct src_probe *pr)
{
	return st != NULL && S_ISDIR(st->st_mode);
}

const struct src_reader src_reader_dir = { "folder", dir_probe, dir_open };
