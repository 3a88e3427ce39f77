/*
 * Datasets and their indexes (rv-index(5), index.h): the index of a
 * listed dataset, the dataset of an index (no shard opened), and the check
 * that a shard read through an index is the file that was indexed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "src/index.h"
#include "src/src.h"
#include "src/src_impl.h"

/* The readers whose sources an index may list: one file each. */
static const struct src_reader *const file_readers[] = {
	&src_reader_archive, &src_reader_cifar, &src_reader_idx,
};
#define NFILE_READERS (sizeof(file_readers) / sizeof(file_readers[0]))

/* A reader's name as an index writes it: lower case. */
static void
kind_of(const struct src_reader *r, char *kind, size_t n)
{
	size_t i;

	for (i = 0; r->name[i] && i + 1 < n; i++)
		kind[i] = (char)(r->name[i] >= 'A' && r->name[i] <= 'Z' ?
		    r->name[i] - 'A' + 'a' : r->name[i]);
	kind[i] = '\0';
}

const char *
rv_dataset_index_name(const struct rv_dataset *d)
{
	return d->index;
}

/* Nanoseconds since the epoch, held within what an index holds. */
static int64_t
mtime_ns(const struct stat *st)
{
	int64_t s = (int64_t)st->st_mtim.tv_sec;

	s = s > RV_INDEX_MAX_SEC ? RV_INDEX_MAX_SEC : s < -RV_INDEX_MAX_SEC ?
	    -RV_INDEX_MAX_SEC : s;
	return s * 1000000000 + st->st_mtim.tv_nsec;
}

/* ---- writing ---- */

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The line of source s, whose path is written relative to out. */
static int
shard_line(const struct src *s, const char *out, struct rv_index_shard *sh)
{
	size_t k, j;

	memset(sh, 0, sizeof(*sh));
	for (k = 0; k < NFILE_READERS && s->reader != file_readers[k]; k++)
		continue;
	if (k == NFILE_READERS || s->path[1] != NULL)
		return rv_seterr("'%s': %s: an index lists files (archives, "
		    "CIFAR batches, IDX files without labels): index its "
		    "files, or decode it without an index", s->name,
		    s->path[1] ? "an IDX pair" : "a folder");
	if (s->indexed) {
		sh->size = s->fsize;
		sh->mtime_ns = s->mtime_ns;
		sh->check = s->check;
	} else {
		struct stat st;
		int fd = open(s->path[0], O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return rv_seterr("'%s': cannot open:", s->name);
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			return rv_seterr("'%s': not a regular file: an index "
			    "lists files", s->name);
		}
		sh->size = (uint64_t)st.st_size;
		sh->mtime_ns = mtime_ns(&st);
		if (rv_index_checksum(fd, sh->size, &sh->check) < 0) {
			rv_preferr("'%s'", s->name);
			close(fd);
			return -1;
		}
		close(fd);
	}
	sh->samples = s->n;
	kind_of(s->reader, sh->kind, sizeof(sh->kind));
	sh->labels = s->nlabels;
	if (s->nnames == 0) {
		sh->names_kind = RV_INDEX_NAMES_NONE;
	} else if (s->names_kind == SRC_NAMES_FIXED) {
		sh->names_kind = RV_INDEX_NAMES_FIXED;
	} else {
		sh->names_kind = RV_INDEX_NAMES_SOME;
		sh->names = xcalloc(s->nnames, sizeof(*sh->names));
		for (j = 0; j < s->nnames; j++)
			sh->names[j] = (uint32_t)s->map[j];
		sh->nnames = s->nnames;
		qsort(sh->names, sh->nnames, sizeof(*sh->names), cmp_u32);
	}
	if ((sh->path = rv_index_relative(out, s->path[0])) == NULL)
		return rv_preferr("'%s'", s->name);
	return 0;
}

int
rv_dataset_write_index(const struct rv_dataset *d, const char *path)
{
	struct rv_index ix;
	struct rv_buf b = { 0 };
	struct rv_out out;
	const char *v = rv_meta_get(&d->meta, "classes");
	size_t k;
	int rc = -1;

	memset(&ix, 0, sizeof(ix));
	ix.samples = d->n;
	ix.classes = v ? strtoull(v, NULL, 10) : 0;
	ix.names = d->classes;
	ix.nnames = d->nclasses;
	ix.shard = xcalloc(d->nsrc + 1, sizeof(*ix.shard));
	for (k = 0; k < d->nsrc; k++, ix.nshards++)
		if (shard_line(&d->src[k], path, &ix.shard[k]) < 0)
			goto out;
	rv_index_format(&ix, &b);
	if (rv_out_open(&out, path, 0) < 0)
		goto out;
	rc = rv_write_full(out.fd, b.data, b.len);
	if (rv_out_finish(&out, rc == 0) < 0)
		rc = -1;
out:
	/* The names are the dataset's. */
	ix.names = NULL;
	ix.nnames = 0;
	rv_index_release(&ix);
	rv_buf_release(&b);
	return rc;
}

/* ---- reading ---- */

/* Source s from line sh of index ix at path. */
static int
shard_source(const struct rv_index *ix, const struct rv_index_shard *sh,
    const char *path, struct src *s)
{
	char kind[16];
	size_t k, j;

	for (k = 0; k < NFILE_READERS; k++) {
		kind_of(file_readers[k], kind, sizeof(kind));
		if (strcmp(kind, sh->kind) == 0)
			break;
	}
	s->path[0] = rv_index_resolve(ix->piped ? "" : path, sh->path);
	s->name = src_sanitized(s->path[0]);
	if (k == NFILE_READERS)
		return rv_seterr("'%s': kind '%s': not a reader this rv has",
		    s->name, sh->kind);
	s->reader = file_readers[k];
	s->desc = xasprintf("%s:%s", sh->kind, s->name);
	s->n = sh->samples;
	s->nlabels = sh->labels;
	s->indexed = 1;
	s->fsize = sh->size;
	s->mtime_ns = sh->mtime_ns;
	s->check = sh->check;
	if (sh->names_kind == RV_INDEX_NAMES_FIXED) {
		if (ix->nnames == 0)
			return rv_seterr("'%s': fixed class names, but the "
			    "index has none", s->name);
		s->names_kind = SRC_NAMES_FIXED;
		s->nnames = ix->nnames;
		s->names = xcalloc(ix->nnames, sizeof(*s->names));
		for (j = 0; j < ix->nnames; j++)
			s->names[j] = xstrdup(ix->names[j]);
	} else if (sh->names_kind == RV_INDEX_NAMES_SOME) {
		/* As the reader names them: sorted. */
		s->names_kind = SRC_NAMES_DERIVED;
		s->nnames = sh->nnames;
		s->names = xcalloc(sh->nnames, sizeof(*s->names));
		for (j = 0; j < sh->nnames; j++)
			s->names[j] = xstrdup(ix->names[sh->names[j]]);
		qsort(s->names, s->nnames, sizeof(*s->names), src_cmp_str);
	}
	return 0;
}

/* Does the dataset made of the one index ix say what ix says? */
static int
same_classes(const struct rv_dataset *d, const struct rv_index *ix,
    const char *name)
{
	const char *v = rv_meta_get(&d->meta, "classes");
	uint64_t have = v ? strtoull(v, NULL, 10) : 0;
	size_t j;

	if (have != ix->classes || d->nclasses != ix->nnames)
		return rv_seterr("'%s': says %" PRIu64 " classes and %zu "
		    "names, its shards %" PRIu64 " and %zu: not an index "
		    "rv-decode wrote", name, ix->classes, ix->nnames, have,
		    d->nclasses);
	for (j = 0; j < ix->nnames; j++)
		if (strcmp(d->classes[j], ix->names[j]) != 0)
			return rv_seterr("'%s': class %zu is out of order: "
			    "not an index rv-decode wrote", name, j);
	return 0;
}

struct rv_dataset *
rv_dataset_from_index(char *const paths[], int n, const struct rv_src_opts *o)
{
	static const struct rv_src_opts defaults;
	struct rv_dataset *d = xcalloc(1, sizeof(*d));
	struct rv_index *ix = xcalloc((size_t)n + 1, sizeof(*ix));
	size_t nsrc = 0, k;
	char *qname = NULL;
	int i;

	rv_meta_init(&d->meta);
	d->opts = o ? *o : defaults;
	d->list_opts = d->opts;
	d->list_opts.strict = 0;
	for (i = 0; i < n; i++) {
		if (rv_index_load(paths[i], &ix[i]) < 0)
			goto fail;
		nsrc += ix[i].nshards;
	}
	d->src = xcalloc(nsrc + 1, sizeof(*d->src));
	for (i = 0; i < n; i++) {
		for (k = 0; k < ix[i].nshards; k++) {
			struct src *s = &d->src[d->nsrc++];

			if (shard_source(&ix[i], &ix[i].shard[k], paths[i],
			    s) < 0) {
				qname = src_sanitized(paths[i]);
				rv_preferr("'%s': shard %zu", qname, k);
				goto fail;
			}
			s->base = d->n;
			s->have = s->n;
			if (s->n > UINT64_MAX - d->n) {
				rv_seterr("'%s': too many samples", s->name);
				goto fail;
			}
			d->n += s->n;
		}
	}
	if (src_merge_classes(d) < 0)
		goto fail;
	qname = src_sanitized(paths[0]);
	if (n == 1 && same_classes(d, &ix[0], qname) < 0)
		goto fail;
	d->index = n == 1 ? qname : xasprintf("%s and %d more", qname,
	    n - 1);
	if (n > 1)
		free(qname);
	qname = xasprintf("index:%s (%zu shards)", d->index, d->nsrc);
	rv_meta_set(&d->meta, "source", qname);
	free(qname);
	for (i = 0; i < n; i++)
		rv_index_release(&ix[i]);
	free(ix);
	return d;
fail:
	free(qname);
	for (i = 0; i < n; i++)
		rv_index_release(&ix[i]);
	free(ix);
	rv_dataset_free(d);
	return NULL;
}

int
src_index_verify(const struct rv_dataset *d, const struct src *s,
    struct src_probe *pr)
{
	struct stat st;
	uint64_t sum;
	int fd;

	memset(pr, 0, sizeof(*pr));
	if (stat(s->path[0], &st) < 0)
		return rv_seterr("'%s': cannot open: %s: restore it, or "
		    "rebuild the index '%s' (rv-decode --index-out)", s->name,
		    strerror(errno), d->index);
	if (!S_ISREG(st.st_mode))
		return rv_seterr("'%s': no longer a regular file: rebuild the "
		    "index '%s'", s->name, d->index);
	if ((uint64_t)st.st_size != s->fsize)
		return rv_seterr("'%s': %" PRIu64 " bytes, %" PRIu64 " when "
		    "it was indexed: rewritten since; rebuild the index '%s' "
		    "(rv-decode --index-out)", s->name, (uint64_t)st.st_size,
		    s->fsize, d->index);
	/* A new time with the same ends is a copy (cp, a download). */
	if (mtime_ns(&st) != s->mtime_ns) {
		if ((fd = open(s->path[0], O_RDONLY | O_CLOEXEC)) < 0)
			return rv_seterr("'%s': cannot open:", s->name);
		if (rv_index_checksum(fd, s->fsize, &sum) < 0) {
			close(fd);
			return rv_preferr("'%s'", s->name);
		}
		if (sum != s->check) {
			close(fd);
			return rv_seterr("'%s': changed since it was indexed "
			    "(another modification time and other bytes): "
			    "rebuild the index '%s' (rv-decode --index-out)",
			    s->name, d->index);
		}
		close(fd);
	}
	/* The index says which reader; a CIFAR batch's record size is its
	 * probe's (by name and size: nothing read). */
	pr->reader = s->reader;
	if (s->reader == &src_reader_cifar &&
	    s->reader->probe(s->path[0], s->name, &st, pr) <= 0)
		return rv_seterr("'%s': no longer a CIFAR batch, as it was "
		    "indexed: rebuild the index '%s'", s->name, d->index);
	return 0;
}
