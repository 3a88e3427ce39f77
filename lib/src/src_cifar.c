/*
 * CIFAR-10 and CIFAR-100 binary batches: fixed records of a label byte
 * (CIFAR-100: coarse then fine) and 32x32 pixels stored channel-planar
 * (all R, all G, all B).  Records are read by offset on fetch, so a batch
 * costs no memory; pixels are turned interleaved (HWC) into the scratch.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "src/src_impl.h"
#include "stream/record.h"

#define SIDE	32
#define PLANE	(SIDE * SIDE)
#define PIXELS	(3 * PLANE)

struct cifar {
	int fd;
	int rec;		/* 3073 (CIFAR-10) or 3074 (CIFAR-100) */
	int nlabels;		/* labels must be below this */
};

static int
has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static int
has_suffix(const char *s, const char *x)
{
	size_t n = strlen(s), k = strlen(x);

	return n >= k && strcmp(s + n - k, x) == 0;
}

/* The record size a batch of this file name has, or 0. */
static int
named_recsize(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if ((has_prefix(b, "data_batch_") && has_suffix(b, ".bin")) ||
	    strcmp(b, "test_batch.bin") == 0)
		return PIXELS + 1;
	if (strcmp(b, "train.bin") == 0 || strcmp(b, "test.bin") == 0)
		return PIXELS + 2;
	return 0;
}

/* The CIFAR record size (3073 or 3074) a file of this name and size has,
 * or 0 if it is not a CIFAR batch. */
static int
recsize_of(const char *path, off_t size)
{
	int rec = named_recsize(path);

	return rec && size > 0 && size % rec == 0 ? rec : 0;
}

/* 1 with errmsg set ("'qname': CIFAR-10 batch cut short ...") if path is
 * named as a CIFAR batch and starts like one but its size is not a whole
 * number of records; else 0. */
static int
cut_short(const char *path, const char *qname, off_t size)
{
	unsigned char lb[2];
	int rec = named_recsize(path), fd;
	ssize_t r;

	if (!rec || size <= 0 || size % rec == 0)
		return 0;
	/* The first record's labels in range, as no archive's first bytes
	 * are (a tar starts with a name, the others with a magic). */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	r = pread(fd, lb, sizeof(lb), 0);
	close(fd);
	if (r < (ssize_t)sizeof(lb) || (rec == PIXELS + 1 && lb[0] >= 10) ||
	    (rec == PIXELS + 2 && (lb[0] >= 20 || lb[1] >= 100)))
		return 0;
	rv_seterr("'%s': CIFAR-%d batch cut short or padded: %lld bytes is "
	    "not a multiple of the %d-byte record", qname,
	    rec == PIXELS + 1 ? 10 : 100, (long long)size, rec);
	return 1;
}

static int
cifar_fetch(const struct src *s, uint64_t i, struct rv_buf *scratch,
    struct rv_item *it)
{
	const struct cifar *cf = s->priv;
	const unsigned char *p, *pl;
	unsigned char *out;
	char rec[32];
	int k, ch;

	snprintf(rec, sizeof(rec), "record %" PRIu64, i);
	src_item_name(it, s, rec);
	scratch->len = 0;
	rv_buf_reserve(scratch, PIXELS + (size_t)cf->rec);
	out = scratch->data;
	p = out + PIXELS;
	if (rv_pread_full(cf->fd, out + PIXELS, (size_t)cf->rec,
	    (off_t)i * cf->rec) < 0)
		return rv_preferr("'%s': record %" PRIu64, s->name, i);
	/* The fine label is the last label byte. */
	it->label = p[cf->rec - PIXELS - 1];
	if (it->label >= cf->nlabels)
		return rv_seterr("'%s': record %" PRIu64 ": label %d is out "
		    "of range (%d classes)", s->name, i, (int)it->label,
		    cf->nlabels);
	pl = p + cf->rec - PIXELS;
	for (k = 0; k < PLANE; k++)
		for (ch = 0; ch < 3; ch++)
			out[3 * k + ch] = pl[ch * PLANE + k];
	scratch->len = PIXELS;
	it->dtype = RV_DT_U8;
	it->h = it->w = SIDE;
	it->c = 3;
	it->data = out;
	it->len = PIXELS;
	return 0;
}

static void
cifar_free(struct src *s)
{
	struct cifar *cf = s->priv;

	if (cf) {
		close(cf->fd);
		free(cf);
	}
}

static const struct src_ops cifar_ops = { cifar_fetch, cifar_free };

/* Class names from the meta file beside the batch, when it is there. */
static void
cifar_names(struct src_ctx *c, struct src *s, const char *path, int want)
{
	const char *slash = strrchr(path, '/');
	const char *file = want == 10 ? "batches.meta.txt" :
	    "fine_label_names.txt";
	char *mp, *qm;
	char **names;
	size_t n;
	int r;

	if (slash)
		mp = xasprintf("%.*s/%s", (int)(slash - path), path, file);
	else
		mp = xstrdup(file);
	r = src_read_names(mp, &names, &n);
	qm = src_sanitized(mp);
	if (r < 0)
		src_note(c, "'%s': class names ignored: %s", qm, rv_errmsg());
	else if (r > 0 && n != (size_t)want) {
		src_note(c, "'%s': %zu class names, not %d: names ignored",
		    qm, n, want);
		src_free_names(names, n);
	} else if (r > 0) {
		s->names = names;
		s->nnames = n;
		s->names_kind = SRC_NAMES_FIXED;
	}
	free(qm);
	free(mp);
}

static int
cifar_open(struct src_ctx *c, struct src *s)
{
	const char *path = s->path[0];
	int recsize = s->recsize;
	struct cifar *cf;
	off_t size;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return rv_seterr("'%s': cannot open:", s->name);
	if ((size = lseek(fd, 0, SEEK_END)) < 0) {
		close(fd);
		return rv_seterr("'%s': cannot seek:", s->name);
	}
	if (size % recsize != 0) {
		close(fd);
		return rv_seterr("'%s': CIFAR batch changed: %lld bytes is not "
		    "a multiple of the %d-byte record", s->name,
		    (long long)size, recsize);
	}
	if (c->o->max_pixels && PLANE > c->o->max_pixels) {
		/* Every image is the same size: one line, not a warning a
		 * record. */
		close(fd);
		return rv_seterr("'%s': CIFAR images are %dx%d, over the "
		    "%llu-pixel limit (--max-pixels)", s->name, SIDE, SIDE,
		    (unsigned long long)c->o->max_pixels);
	}
	cf = xcalloc(1, sizeof(*cf));
	cf->fd = fd;
	cf->rec = recsize;
	cf->nlabels = recsize == PIXELS + 1 ? 10 : 100;
	s->priv = cf;
	s->ops = &cifar_ops;
	s->n = (uint64_t)(size / recsize);
	/* The format's class count, names file or not (a label beyond it
	 * fails its fetch). */
	s->nlabels = (uint32_t)cf->nlabels;
	s->desc = xasprintf("cifar%d:%s", cf->nlabels, s->name);
	cifar_names(c, s, path, cf->nlabels);
	return 0;
}

static int
cifar_probe(const char *path, const char *qname, const struct stat *st,
    struct src_probe *pr)
{
	if (st == NULL || !S_ISREG(st->st_mode))
		return 0;
	pr->recsize = recsize_of(path, st->st_size);
	return pr->recsize != 0;
}

static int
cut_probe(const char *path, const char *qname, const struct stat *st,
    struct src_probe *pr)
{
	if (st == NULL || !S_ISREG(st->st_mode))
		return 0;
	return cut_short(path, qname, st->st_size) ? -1 : 0;
}

const struct src_reader src_reader_cifar = {
	"CIFAR", cifar_probe, cifar_open
};
/* Not a reader: a CIFAR batch cut short must not be read as an archive. */
const struct src_reader src_reader_cifar_cut = {
	"CIFAR cut short", cut_probe, NULL
};
