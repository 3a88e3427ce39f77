/*
 * IDX files (MNIST, Fashion-MNIST, ...), raw or gzip: an images file of
 * u8 N x H x W (or N x H x W x C) and an optional labels file of u8 N.
 * Both are loaded into memory at open, after the header's arithmetic has
 * been checked against the data, so a fetch is a pointer into the array.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/err.h"
#include "base/xmem.h"
#include "codec/codec.h"
#include "src/src_impl.h"
#include "stream/record.h"

/* gzread() takes an unsigned int: read in slices of this size. */
#define SLICE	((size_t)16 << 20)

static const char *const fashion_names[10] = {
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
};

struct idx {
	unsigned char *px;	/* N x H x W x C */
	unsigned char *lb;	/* N, or NULL */
	uint32_t h, w, c;
	size_t isz;		/* bytes per image */
};

struct idxfile {
	int ndims;
	uint32_t dim[4];
	unsigned char *data;
	size_t len;
};

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/*
 * Set errmsg from gz's error: zlib's message, less the "<fd:N>: " it
 * starts with (the caller names the file).  No offset: zlib says neither
 * where in the file nor where in the data (gztell() stops at the start of
 * the failed read; a data check fails at the end).
 */
static int
gz_err(gzFile gz)
{
	int e;
	const char *m = gzerror(gz, &e);
	const char *c;

	if (e == Z_ERRNO)
		return rv_seterr("read:");
	if (m[0] == '<' && (c = strstr(m, ">: ")) != NULL)
		m = c + 3;
	return rv_seterr("gzip data corrupt: %s", m);
}

/* Read n bytes; returns bytes read (short at EOF) or -1 (errmsg set). */
static ssize_t
gz_full(gzFile gz, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		size_t want = n - got < SLICE ? n - got : SLICE;
		int r = gzread(gz, (char *)buf + got, (unsigned)want);
		if (r < 0)
			return gz_err(gz);
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static gzFile
gz_open(const char *path, struct stat *st)
{
	gzFile gz;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		rv_seterr("cannot open:");
		return NULL;
	}
	if (fstat(fd, st) < 0) {
		rv_seterr("cannot stat:");
		close(fd);
		return NULL;
	}
	gz = gzdopen(fd, "rb");
	if (!gz) {
		close(fd);
		rv_seterr("out of memory");
		return NULL;
	}
	gzbuffer(gz, 1 << 17);
	return gz;
}

/* Magic 00 00 type ndims: the types IDX defines and 1..4 dimensions. */
static int
idx_magic(const unsigned char *m)
{
	return m[0] == 0 && m[1] == 0 && (m[2] == 0x08 || m[2] == 0x09 ||
	    (m[2] >= 0x0b && m[2] <= 0x0e)) && m[3] >= 1 && m[3] <= 4;
}

/*
 * 1 if path is an IDX file (raw or gzip), with its dimension count and
 * first dimension; 0 if not; -1 with errmsg set if unreadable.
 */
static int
header_probe(const char *path, int *ndims, uint32_t *n0)
{
	struct stat st;
	unsigned char h[8];
	gzFile gz;
	ssize_t r;

	if (!(gz = gz_open(path, &st)))
		return -1;
	/* Eight bytes wanted: not 128 KiB of every archive a job lists. */
	gzbuffer(gz, 4096);
	r = gz_full(gz, h, sizeof(h));
	gzclose(gz);
	/* gzip data that cannot be decompressed from its start is neither
	 * an IDX file nor an archive anyone can read: say why. */
	if (r < 0)
		return -1;
	if (r < (ssize_t)sizeof(h) || !idx_magic(h))
		return 0;
	*ndims = h[3];
	*n0 = be32(h + 4);
	return 1;
}

/*
 * Load an IDX file of u8 elements.  Every check of the header happens
 * before the data buffer is allocated: the dimensions' product must not
 * overflow, images (3 or 4 dimensions) must be within maxpx pixels (0:
 * no limit), and for a raw file the product must equal what the file
 * holds.  A gzip file's size is unknown until it is read, so its buffer
 * grows with the data actually decompressed, never to what the header
 * claims.
 */
static int
idx_load(const char *path, const char *qname, uint64_t maxpx,
    struct idxfile *f)
{
	unsigned char hdr[4 + 16];
	struct stat st;
	gzFile gz;
	size_t hlen, need, have = 0, cap;
	uint64_t prod = 1;
	ssize_t r;
	int i, direct;

	memset(f, 0, sizeof(*f));
	if (!(gz = gz_open(path, &st)))
		return rv_preferr("'%s'", qname);
	if ((r = gz_full(gz, hdr, 4)) < 0)
		goto err;
	if (r < 4 || !idx_magic(hdr)) {
		rv_seterr("not an IDX file");
		goto err;
	}
	if (hdr[2] != 0x08) {
		rv_seterr("byte 2: IDX element type 0x%02x is not unsigned "
		    "bytes", hdr[2]);
		goto err;
	}
	f->ndims = hdr[3];
	hlen = 4 + 4 * (size_t)f->ndims;
	if ((r = gz_full(gz, hdr + 4, hlen - 4)) < 0)
		goto err;
	if ((size_t)r < hlen - 4) {
		rv_seterr("byte %zd: truncated IDX header", 4 + r);
		goto err;
	}
	for (i = 0; i < f->ndims; i++) {
		f->dim[i] = be32(hdr + 4 + 4 * i);
		if (f->dim[i] != 0 && prod > SIZE_MAX / f->dim[i]) {
			rv_seterr("byte %d: IDX dimension %" PRIu32
			    " overflows the size of the data", 4 + 4 * i,
			    f->dim[i]);
			goto err;
		}
		prod *= f->dim[i];
	}
	if (maxpx && f->ndims >= 3 && (uint64_t)f->dim[1] * f->dim[2] > maxpx) {
		rv_seterr("byte 8: IDX header declares %" PRIu32 " image%s of %"
		    PRIu32 "x%" PRIu32 ", over the %" PRIu64 "-pixel limit "
		    "(--max-pixels)", f->dim[0], f->dim[0] == 1 ? "" : "s",
		    f->dim[2], f->dim[1], maxpx);
		goto err;
	}
	need = (size_t)prod;
	direct = gzdirect(gz);
	if (direct && (uint64_t)st.st_size - hlen != prod) {
		rv_seterr("byte %zu: IDX header promises %" PRIu64 " bytes of "
		    "data, the file holds %" PRIu64, hlen, prod,
		    (uint64_t)st.st_size - hlen);
		goto err;
	}
	cap = direct || need < SLICE ? need : SLICE;
	f->data = xmalloc(cap ? cap : 1);
	while (have < need) {
		size_t want = need - have;

		if (have == cap) {
			cap = cap > need / 2 ? need : cap * 2;
			f->data = xrealloc(f->data, cap);
		}
		if (want > cap - have)
			want = cap - have;
		if ((r = gz_full(gz, f->data + have, want)) < 0)
			goto err;
		have += (size_t)r;
		if ((size_t)r < want)
			break;
	}
	if (have < need) {
		rv_seterr("byte %zu: IDX header promises %" PRIu64 " bytes of "
		    "data, the file holds %zu", hlen, prod, have);
		goto err;
	}
	if ((r = gz_full(gz, hdr, 1)) < 0)
		goto err;
	if (r > 0) {
		rv_seterr("byte %zu: IDX header promises %" PRIu64 " bytes of "
		    "data, the file holds more", hlen, prod);
		goto err;
	}
	gzclose(gz);
	f->len = need;
	return 0;
err:
	gzclose(gz);
	free(f->data);
	f->data = NULL;
	return rv_preferr("'%s'", qname);
}

/*
 * Is path in a Fashion-MNIST folder?  IDX files hold no class names, and
 * Fashion-MNIST's are indistinguishable by content from MNIST's, so the
 * names come from where the files are: a directory of the path (made
 * absolute) named, ignoring case, fashion-mnist, fashion_mnist,
 * fashionmnist (Debian's /usr/share/datasets/fashion-mnist, torchvision's
 * FashionMNIST/raw) or fashion (the upstream repository's data/fashion).
 * Nothing else ("fashionista", "my-fashion-set") counts.
 */
static int
is_fashion(const char *path)
{
	static const char *const dirs[] = {
		"fashion-mnist", "fashion_mnist", "fashionmnist", "fashion",
	};
	char cwd[PATH_MAX];
	const char *part[2] = { "", path };
	const char *last = strrchr(path, '/');
	int i;

	if (!last)
		last = path;
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd)))
		part[0] = cwd;
	for (i = 0; i < 2; i++) {
		const char *p = part[i];

		/* Each component of the directory part: of the cwd all of
		 * it, of path all but the file name. */
		while (*p) {
			const char *e = strchr(p, '/');
			size_t n, k;

			if (!e)
				e = p + strlen(p);
			if (i == 1 && e > last)
				break;
			n = (size_t)(e - p);
			for (k = 0; k < sizeof(dirs) / sizeof(dirs[0]); k++) {
				char comp[16];

				if (n != strlen(dirs[k]))
					continue;
				memcpy(comp, p, n);
				comp[n] = '\0';
				if (src_lower_eq(comp, dirs[k]))
					return 1;
			}
			p = *e ? e + 1 : e;
		}
	}
	return 0;
}

static int
idx_fetch(const struct src *s, uint64_t i, struct rv_buf *scratch,
    struct rv_item *it)
{
	const struct idx *x = s->priv;
	char rec[32];

	it->dtype = RV_DT_U8;
	it->h = x->h;
	it->w = x->w;
	it->c = x->c;
	it->data = x->px + (size_t)i * x->isz;
	it->len = x->isz;
	it->label = x->lb ? x->lb[i] : -1;
	snprintf(rec, sizeof(rec), "record %" PRIu64, i);
	src_item_name(it, s, rec);
	return 0;
}

static void
idx_free(struct src *s)
{
	struct idx *x = s->priv;

	if (x) {
		free(x->px);
		free(x->lb);
		free(x);
	}
}

static const struct src_ops idx_ops = { idx_fetch, idx_free };

/*
 * The labels file that goes with IDX images at path, by the MNIST
 * naming ("...-images-idx3-..." to "...-labels-idx1-...", else "images"
 * to "labels" in the file's name): a new string, or NULL where the name
 * says nothing.
 */
static char *
labels_name(const char *path)
{
	static const struct { const char *from, *to; } rule[] = {
		{ "images-idx3", "labels-idx1" },
		{ "images.idx3", "labels.idx1" },
		{ "images", "labels" },
	};
	const char *base = strrchr(path, '/');
	size_t i;

	base = base ? base + 1 : path;
	for (i = 0; i < sizeof(rule) / sizeof(rule[0]); i++) {
		const char *at = strstr(base, rule[i].from);
		size_t pre, lf = strlen(rule[i].from), lt = strlen(rule[i].to);
		char *out;

		if (!at)
			continue;
		pre = (size_t)(at - path);
		out = xmalloc(strlen(path) - lf + lt + 1);
		memcpy(out, path, pre);
		memcpy(out + pre, rule[i].to, lt);
		strcpy(out + pre + lt, at + lf);
		return out;
	}
	return NULL;
}

/* IDX images given without labels: a warning naming the labels file the
 * images' name expects, and whether it is there. */
static void
warn_unlabelled(struct src_ctx *c, const struct src *s, uint32_t n)
{
	char *want = labels_name(s->path[0]), *q = NULL, *msg;
	struct stat st;

	if (want)
		q = src_sanitized(want);
	if (!want)
		msg = xasprintf("'%s': IDX images without a labels file: its "
		    "%" PRIu32 " samples are unlabelled (give the labels "
		    "file after it)", s->name, n);
	else if (stat(want, &st) == 0)
		msg = xasprintf("'%s': IDX images without a labels file: its "
		    "%" PRIu32 " samples are unlabelled; '%s' is there: give "
		    "it after the images", s->name, n, q);
	else
		msg = xasprintf("'%s': IDX images without a labels file: its "
		    "%" PRIu32 " samples are unlabelled (expected '%s', "
		    "not found)", s->name, n, q);
	src_msgs_add(c->warn, msg);
	free(msg);
	free(q);
	free(want);
}

/* Images (3 or 4 dims) in s->path[0], with an optional labels file
 * (1 dim) in s->path[1]. */
static int
idx_open(struct src_ctx *c, struct src *s)
{
	const char *images = s->path[0], *labels = s->path[1];
	struct idxfile fi, fl;
	struct idx *x;
	char *ql = NULL;
	size_t i;

	uint64_t maxpx = c->o->max_pixels ? c->o->max_pixels :
	    RV_MAX_PIXELS_DEFAULT;

	if (idx_load(images, s->name, maxpx, &fi) < 0)
		return -1;
	if (fi.ndims < 3 || (fi.ndims == 4 && fi.dim[3] != 1 &&
	    fi.dim[3] != 3)) {
		free(fi.data);
		return rv_seterr("'%s': IDX images must be N x H x W or "
		    "N x H x W x C with C 1 or 3, not %d dimensions%s",
		    s->name, fi.ndims, fi.ndims == 4 ? " of that C" : "");
	}
	if (fi.dim[1] == 0 || fi.dim[2] == 0) {
		free(fi.data);
		return rv_seterr("'%s': IDX images of size %" PRIu32 " x %"
		    PRIu32, s->name, fi.dim[1], fi.dim[2]);
	}
	memset(&fl, 0, sizeof(fl));
	if (labels) {
		ql = src_sanitized(labels);
		if (idx_load(labels, ql, 0, &fl) < 0)
			goto fail;
		if (fl.ndims != 1 || fl.dim[0] != fi.dim[0]) {
			rv_seterr("'%s': %" PRIu32 " IDX labels for the %"
			    PRIu32 " images of '%s'", ql, fl.dim[0],
			    fi.dim[0], s->name);
			goto fail;
		}
	}
	x = xcalloc(1, sizeof(*x));
	x->px = fi.data;
	x->lb = fl.data;
	x->h = fi.dim[1];
	x->w = fi.dim[2];
	x->c = fi.ndims == 4 ? fi.dim[3] : 1;
	x->isz = (size_t)x->h * x->w * x->c;
	s->priv = x;
	s->ops = &idx_ops;
	s->n = fi.dim[0];
	s->desc = labels ? xasprintf("idx:%s,%s", s->name, ql) :
	    xasprintf("idx:%s", s->name);
	if (!labels && c->warn && s->n > 0)
		warn_unlabelled(c, s, fi.dim[0]);
	for (i = 0; x->lb && i < s->n; i++)
		if (x->lb[i] >= s->nlabels)
			s->nlabels = (uint32_t)x->lb[i] + 1;
	for (i = 0; x->lb && i < s->n && x->lb[i] < 10; i++)
		continue;
	if ((is_fashion(images) || (labels && is_fashion(labels))) &&
	    (!x->lb || i == s->n)) {
		s->names = xcalloc(10, sizeof(*s->names));
		for (i = 0; i < 10; i++)
			s->names[i] = xstrdup(fashion_names[i]);
		s->nnames = 10;
		s->names_kind = SRC_NAMES_FIXED;
	}
	free(ql);
	return 0;
fail:
	free(fi.data);
	free(fl.data);
	free(ql);
	return -1;
}

static int
idx_probe(const char *path, const char *qname, const struct stat *st,
    struct src_probe *pr)
{
	int r;

	if (st == NULL || !S_ISREG(st->st_mode))
		return 0;
	if ((r = header_probe(path, &pr->ndims, &pr->n0)) < 0)
		return rv_preferr("'%s'", qname);
	return r;
}

const struct src_reader src_reader_idx = { "IDX", idx_probe, idx_open };
