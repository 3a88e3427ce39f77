/*
 * The refurbishing cache (cache.h): a table of one 32-byte slot per
 * position; memory entries in their own malloc'd buffers, counted against
 * the budget by capacity; disk entries appended to one unlinked temp file
 * through a write buffer and read back in runs that one pread covers.
 * Everything but the entries is made once and reused (first touch of
 * fresh pages is the expensive part on these machines).
 */
#include "refurb/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"

/*
 * An entry's last byte says how its pixels are held: raw (images of at
 * most RV_CACHE_RAW_MAX bytes) or one zstd frame.
 */
#define PACK_RAW	0x52	/* 'R' */
#define PACK_ZSTD	0x5a	/* 'Z' */

#define WBUF_CAP	((size_t)1 << 20)	/* disk write buffer */
#define READ_GAP	((uint64_t)64 << 10)	/* reads span smaller gaps */
#define COMPACT_RUN	((uint64_t)4 << 20)	/* compaction's largest read */
#define COMPACT_MIN	((uint64_t)64 << 20)	/* default conf->compact_min */

enum { T_NONE, T_MEM, T_DISK };

struct slot {
	union {
		unsigned char *p;	/* T_MEM: buffer of cap bytes */
		uint64_t off;		/* T_DISK: offset in the file */
	} u;
	uint32_t len, cap;	/* compressed bytes; T_MEM: buffer size */
	uint32_t h, w, c;
	unsigned char tier;
};

/* A disk entry to read: for get_many idx is the index into pos[], for a
 * compaction the position. */
struct req {
	uint64_t off, idx;
	uint32_t len;
};

struct rv_cache {
	struct slot *slot;
	uint64_t n, mem;
	char *dir;		/* NULL: no disk tier */
	int fd;			/* the disk file, -1 if none */
	int disk_ok;		/* appends allowed (off after a write error) */
	uint64_t compact_min;
	uint64_t compact_retry;	/* garbage before retrying a compaction */
	unsigned char *wbuf;	/* WBUF_CAP bytes, made on first append */
	size_t wlen;
	uint64_t wbase;		/* file offset of wbuf[0]: bytes written */
	uint64_t *wpos;		/* positions appended into wbuf */
	size_t nwpos, capwpos;
	unsigned char *rbuf;	/* get_many's and compaction's reads */
	size_t rcap;
	struct req *req;
	size_t capreq;
	struct rv_cache_stats st;
};

struct rv_cache_scratch {
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
	int level;
	size_t raw_max;		/* images up to this size are kept raw */
};

/* h * w * c, or -1 with rv_errmsg() set when it overflows. */
static int
raw_size(uint32_t h, uint32_t w, uint32_t c, size_t *n)
{
	if (__builtin_mul_overflow((size_t)h, (size_t)w, n) ||
	    __builtin_mul_overflow(*n, (size_t)c, n))
		return rv_seterr("cache: %ux%ux%u image is too large", h, w,
		    c);
	return 0;
}

struct rv_cache_scratch *
rv_cache_scratch_new(int level)
{
	struct rv_cache_scratch *s = xcalloc(1, sizeof(*s));

	s->level = level;
	s->raw_max = RV_CACHE_RAW_MAX;
	s->cctx = ZSTD_createCCtx();
	s->dctx = ZSTD_createDCtx();
	if (!s->cctx || !s->dctx) {
		rv_cache_scratch_free(s);
		rv_seterr("cache: cannot create a zstd context");
		return NULL;
	}
	return s;
}

void
rv_cache_scratch_raw_max(struct rv_cache_scratch *s, size_t bytes)
{
	s->raw_max = bytes > RV_CACHE_RAW_MAX ? bytes : RV_CACHE_RAW_MAX;
}

size_t
rv_cache_raw_share(uint64_t mem, uint64_t n)
{
	uint64_t per;

	if (n == 0)
		return 0;
	per = mem / n;
	/* an entry's buffer: the pixels, a tag byte, 1/16 slack, rounding
	 * to 16 bytes and the 16-byte per-entry overhead */
	per = per - per / 16;
	per = per > 48 ? per - 48 : 0;
	return per > SIZE_MAX ? SIZE_MAX : (size_t)per;
}

void
rv_cache_scratch_free(struct rv_cache_scratch *s)
{
	if (!s)
		return;
	ZSTD_freeCCtx(s->cctx);
	ZSTD_freeDCtx(s->dctx);
	free(s);
}

void
rv_cache_entry_release(struct rv_cache_entry *e)
{
	rv_buf_release(&e->data);
}

int
rv_cache_pack(struct rv_cache_scratch *s, const struct rv_img *img,
    struct rv_cache_entry *e)
{
	size_t raw, r;

	if (raw_size(img->h, img->w, img->c, &raw) < 0)
		return -1;
	e->h = img->h;
	e->w = img->w;
	e->c = img->c;
	e->data.len = 0;
	if (raw <= s->raw_max) {
		/* Small images, or a budget that holds every entry raw:
		 * compressing would cost time (a zstd call per small image
		 * costs about as much as the augmentation that made it; a
		 * 224x224 photo takes ~300 us to pack, ~90 us to unpack)
		 * to save memory nobody needs. */
		rv_buf_reserve(&e->data, raw + 1);
		memcpy(e->data.data, img->data, raw);
		e->data.data[raw] = PACK_RAW;
		e->data.len = raw + 1;
		return 0;
	}
	rv_buf_reserve(&e->data, ZSTD_compressBound(raw) + 1);
	r = ZSTD_compressCCtx(s->cctx, e->data.data, e->data.cap - 1,
	    img->data, raw, s->level);
	if (ZSTD_isError(r))
		return rv_seterr("cache: compress: %s", ZSTD_getErrorName(r));
	e->data.data[r] = PACK_ZSTD;
	e->data.len = r + 1;
	return 0;
}

int
rv_cache_unpack(struct rv_cache_scratch *s, uint32_t h, uint32_t w,
    uint32_t c, const void *p, size_t n, struct rv_img *img)
{
	const unsigned char *b = p;
	size_t raw, r;

	if (raw_size(h, w, c, &raw) < 0)
		return -1;
	if (n == 0)
		return rv_seterr("cache: corrupt entry: empty");
	rv_img_reserve(img, h, w, c);
	if (b[n - 1] == PACK_RAW) {
		if (n - 1 != raw)
			return rv_seterr("cache: corrupt entry: %zu bytes for "
			    "a %ux%ux%u image", n - 1, h, w, c);
		memcpy(img->data, b, raw);
		return 0;
	}
	if (b[n - 1] != PACK_ZSTD)
		return rv_seterr("cache: corrupt entry: unknown form %u",
		    (unsigned)b[n - 1]);
	r = ZSTD_decompressDCtx(s->dctx, img->data, raw, p, n - 1);
	if (ZSTD_isError(r))
		return rv_seterr("cache: corrupt entry: %s",
		    ZSTD_getErrorName(r));
	if (r != raw)
		return rv_seterr("cache: corrupt entry: %zu bytes for a "
		    "%ux%ux%u image", r, h, w, c);
	return 0;
}

/* A fresh file in dir, its name removed at once.  fd or -1. */
static int
make_file(const char *dir)
{
	int fd = rv_anon_file(dir, "rv-cache");

	if (fd < 0)
		rv_preferr("cache");
	return fd;
}

struct rv_cache *
rv_cache_new(const struct rv_cache_conf *conf)
{
	struct rv_cache *c = xcalloc(1, sizeof(*c));

	/* calloc'd: T_NONE everywhere, pages touched only when used */
	c->slot = xcalloc(conf->n, sizeof(*c->slot));
	c->n = conf->n;
	c->mem = conf->mem;
	c->fd = -1;
	c->compact_min = conf->compact_min ? conf->compact_min : COMPACT_MIN;
	if (conf->dir) {
		c->dir = xstrdup(conf->dir);
		if ((c->fd = make_file(c->dir)) < 0) {
			rv_cache_free(c);
			return NULL;
		}
		c->disk_ok = 1;
	}
	return c;
}

void
rv_cache_free(struct rv_cache *c)
{
	uint64_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		if (c->slot[i].tier == T_MEM)
			free(c->slot[i].u.p);
	if (c->fd >= 0)
		close(c->fd);
	free(c->slot);
	free(c->dir);
	free(c->wbuf);
	free(c->wpos);
	free(c->rbuf);
	free(c->req);
	free(c);
}

static void
set_stats_file(struct rv_cache *c)
{
	c->st.disk_file_bytes = c->wbase + c->wlen;
}

/* Capacity for an entry of n bytes: 1/16 slack, a multiple of 16. */
static uint32_t
entry_cap(size_t n)
{
	return (uint32_t)((n + n / 16 + 15) & ~(size_t)15) + (n == 0) * 16;
}

static uint64_t
slot_raw(const struct slot *s)
{
	return (uint64_t)s->h * s->w * s->c;
}

/* Forget pos's entry, giving its memory back or leaving its disk bytes
 * as garbage. */
static void
release(struct rv_cache *c, struct slot *s)
{
	switch (s->tier) {
	case T_MEM:
		free(s->u.p);
		c->st.mem_used -= (uint64_t)s->cap + RV_CACHE_ENTRY_OVERHEAD;
		c->st.mem_bytes -= s->len;
		c->st.mem_entries--;
		break;
	case T_DISK:
		c->st.disk_bytes -= s->len;
		c->st.disk_entries--;
		break;
	default:
		return;
	}
	c->st.raw_bytes -= slot_raw(s);
	s->tier = T_NONE;
}

static void
set_shape(struct rv_cache *c, struct slot *s,
    const struct rv_cache_entry *e)
{
	s->h = e->h;
	s->w = e->w;
	s->c = e->c;
	s->len = (uint32_t)e->data.len;
	c->st.raw_bytes += slot_raw(s);
}

/* pwrite all n bytes at off, counting calls. */
static int
wr(struct rv_cache *c, const void *p, size_t n, uint64_t off)
{
	ssize_t r;

	while (n > 0) {
		r = pwrite(c->fd, p, n, (off_t)off);
		c->st.disk_writes++;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return rv_seterr("cache: '%s': write:", c->dir);
		if (r == 0)
			return rv_seterr("cache: '%s': write: no progress",
			    c->dir);
		p = (const unsigned char *)p + r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* pread all n bytes at off from fd, counting calls. */
static int
rd(struct rv_cache *c, int fd, void *p, size_t n, uint64_t off)
{
	ssize_t r;

	while (n > 0) {
		r = pread(fd, p, n, (off_t)off);
		c->st.disk_reads++;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return rv_seterr("cache: '%s': read:", c->dir);
		if (r == 0)
			return rv_seterr("cache: '%s': read: unexpected end "
			    "of file", c->dir);
		p = (unsigned char *)p + r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* Write the buffer out.  On failure nothing changes. */
static int
wflush(struct rv_cache *c)
{
	if (c->wlen == 0)
		return 0;
	if (wr(c, c->wbuf, c->wlen, c->wbase) < 0)
		return -1;
	c->wbase += c->wlen;
	c->wlen = 0;
	c->nwpos = 0;
	return 0;
}

/*
 * Append pos's n bytes at the end of the file, through the buffer unless
 * they would fill it alone; *off gets their offset.  On failure the
 * buffer is as it was.
 */
static int
wappend(struct rv_cache *c, uint64_t pos, const void *p, size_t n,
    uint64_t *off)
{
	if (c->wlen + n > WBUF_CAP && wflush(c) < 0)
		return -1;
	if (n > WBUF_CAP) {
		if (wr(c, p, n, c->wbase) < 0)
			return -1;
		*off = c->wbase;
		c->wbase += n;
		return 0;
	}
	if (!c->wbuf)
		c->wbuf = xmalloc(WBUF_CAP);
	if (c->nwpos == c->capwpos) {
		c->capwpos = c->capwpos ? 2 * c->capwpos : 256;
		c->wpos = xreallocarray(c->wpos, c->capwpos,
		    sizeof(*c->wpos));
	}
	c->wpos[c->nwpos++] = pos;
	*off = c->wbase + c->wlen;
	if (n)
		memcpy(c->wbuf + c->wlen, p, n);
	c->wlen += n;
	return 0;
}

/*
 * After a failed write: the entries still in the buffer are lost, and the
 * disk tier takes no more (what is on disk stays readable).
 */
static void
disk_fail(struct rv_cache *c)
{
	struct slot *s;
	size_t i;

	for (i = 0; i < c->nwpos; i++) {
		s = &c->slot[c->wpos[i]];
		if (s->tier == T_DISK && s->u.off >= c->wbase) {
			release(c, s);
			c->st.dropped++;
		}
	}
	c->wlen = 0;
	c->nwpos = 0;
	c->disk_ok = 0;
	set_stats_file(c);
}

static void
reserve_req(struct rv_cache *c, size_t k)
{
	if (k <= c->capreq)
		return;
	c->capreq = k < 64 ? 64 : k;
	free(c->req);
	c->req = xreallocarray(NULL, c->capreq, sizeof(*c->req));
}

/* Contents need not survive: free and allocate, no copy. */
static void
reserve_rbuf(struct rv_cache *c, uint64_t n)
{
	size_t cap;

	if (n <= c->rcap && c->rbuf)
		return;
	if (n > SIZE_MAX / 2)
		(void)xreallocarray(NULL, SIZE_MAX, 2);	/* out of memory */
	cap = c->rcap ? c->rcap : (size_t)64 << 10;
	while (cap < n)
		cap *= 2;
	free(c->rbuf);
	c->rbuf = xmalloc(cap);
	c->rcap = cap;
}

static int
cmp_req(const void *a, const void *b)
{
	const struct req *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * The run of sorted requests that starts at r[i]: the following ones that
 * begin less than READ_GAP after the run's end, while the run spans at
 * most cap bytes (a single entry may be longer).  Sets [*start, *end) and
 * returns the index after the run.
 */
static size_t
run(const struct req *r, size_t i, size_t k, uint64_t cap,
    uint64_t *start, uint64_t *end)
{
	uint64_t e = r[i].off + r[i].len, je;
	size_t j;

	for (j = i + 1; j < k; j++) {
		je = r[j].off + r[j].len;
		if (r[j].off >= e + READ_GAP)
			break;
		if (je > e && je - r[i].off > cap)
			break;
		if (je > e)
			e = je;
	}
	*start = r[i].off;
	*end = e;
	return j;
}

/*
 * Copy the live entries, in file order, into a fresh file.  Returns -1
 * only when writing out the buffer first fails (a put's I/O error); if
 * the copy fails, the old file stays and nothing is lost.
 */
static int
compact(struct rv_cache *c, uint64_t dead)
{
	uint64_t i, start, end, oldend;
	size_t k = 0, j, m, next;
	int oldfd = -1, newfd;

	if (wflush(c) < 0) {
		disk_fail(c);
		return -1;
	}
	reserve_req(c, (size_t)c->st.disk_entries);
	for (i = 0; i < c->n; i++)
		if (c->slot[i].tier == T_DISK)
			c->req[k++] = (struct req){ c->slot[i].u.off, i,
			    c->slot[i].len };
	if (k > 1)
		qsort(c->req, k, sizeof(*c->req), cmp_req);
	if ((newfd = make_file(c->dir)) < 0)
		goto later;
	oldfd = c->fd;
	oldend = c->wbase;
	c->fd = newfd;
	c->wbase = 0;
	for (j = 0; j < k; j = next) {
		next = run(c->req, j, k, COMPACT_RUN, &start, &end);
		reserve_rbuf(c, end - start);
		if (rd(c, oldfd, c->rbuf, end - start, start) < 0)
			goto fail;
		/* the request's offset becomes the new one */
		for (m = j; m < next; m++)
			if (wappend(c, c->req[m].idx,
			    c->rbuf + (c->req[m].off - start), c->req[m].len,
			    &c->req[m].off) < 0)
				goto fail;
	}
	close(oldfd);
	for (m = 0; m < k; m++)
		c->slot[c->req[m].idx].u.off = c->req[m].off;
	c->compact_retry = 0;
	c->st.compactions++;
	set_stats_file(c);
	return 0;
fail:
	close(newfd);
	c->fd = oldfd;
	c->wbase = oldend;
	c->wlen = 0;
	c->nwpos = 0;
later:
	c->compact_retry = dead + c->compact_min;
	return 0;
}

static int
maybe_compact(struct rv_cache *c)
{
	uint64_t dead;

	if (!c->disk_ok)
		return 0;
	dead = c->wbase + c->wlen - c->st.disk_bytes;
	if (dead <= c->st.disk_bytes || dead <= c->compact_min ||
	    dead < c->compact_retry)
		return 0;
	return compact(c, dead);
}

int
rv_cache_put(struct rv_cache *c, uint64_t pos,
    const struct rv_cache_entry *e)
{
	struct slot *s;
	size_t n = e->data.len;
	uint64_t off;
	uint32_t cap;
	int ret;

	if (pos >= c->n)
		return rv_seterr("cache: position %llu out of range (%llu "
		    "positions)", (unsigned long long)pos,
		    (unsigned long long)c->n);
	s = &c->slot[pos];
	if (s->tier == T_MEM && n <= s->cap && s->cap - n <= s->cap / 4) {
		/* same buffer, same budget */
		c->st.mem_bytes = c->st.mem_bytes - s->len + n;
		c->st.raw_bytes -= slot_raw(s);
		if (n)
			memcpy(s->u.p, e->data.data, n);
		set_shape(c, s, e);
		return 1;
	}
	release(c, s);
	cap = n <= RV_CACHE_MAX_ENTRY ? entry_cap(n) : 0;
	if (cap == 0) {
		c->st.dropped++;
		ret = 0;
	} else if (c->mem - c->st.mem_used >=
	    (uint64_t)cap + RV_CACHE_ENTRY_OVERHEAD) {
		/* mem_used <= mem always: the subtraction cannot wrap */
		s->u.p = xmalloc(cap);
		if (n)
			memcpy(s->u.p, e->data.data, n);
		s->cap = cap;
		s->tier = T_MEM;
		set_shape(c, s, e);
		c->st.mem_used += (uint64_t)cap + RV_CACHE_ENTRY_OVERHEAD;
		c->st.mem_bytes += n;
		c->st.mem_entries++;
		ret = 1;
	} else if (c->disk_ok) {
		if (wappend(c, pos, e->data.data, n, &off) < 0) {
			disk_fail(c);
			c->st.dropped++;
			return -1;
		}
		s->u.off = off;
		s->cap = 0;
		s->tier = T_DISK;
		set_shape(c, s, e);
		c->st.disk_bytes += n;
		c->st.disk_entries++;
		ret = 1;
	} else {
		c->st.dropped++;
		ret = 0;
	}
	/* releasing disk bytes may call for a compaction */
	if (maybe_compact(c) < 0)
		ret = -1;
	set_stats_file(c);
	return ret;
}

int
rv_cache_has(const struct rv_cache *c, uint64_t pos)
{
	return pos < c->n && c->slot[pos].tier != T_NONE;
}

int
rv_cache_flush(struct rv_cache *c)
{
	if (!c->disk_ok)
		return 0;
	if (wflush(c) < 0) {
		disk_fail(c);
		return -1;
	}
	return 0;
}

int
rv_cache_get_many(struct rv_cache *c, const uint64_t *pos, size_t k,
    struct rv_cache_ref *out, unsigned char *found)
{
	const struct slot *s;
	uint64_t start, end, total, at;
	size_t i, j, next, nr = 0;

	reserve_req(c, k);
	for (i = 0; i < k; i++) {
		if (pos[i] >= c->n)
			return rv_seterr("cache: position %llu out of range "
			    "(%llu positions)", (unsigned long long)pos[i],
			    (unsigned long long)c->n);
		s = &c->slot[pos[i]];
		found[i] = s->tier != T_NONE;
		if (s->tier == T_NONE) {
			memset(&out[i], 0, sizeof(out[i]));
			continue;
		}
		out[i] = (struct rv_cache_ref){ s->h, s->w, s->c, NULL,
		    s->len };
		if (s->tier == T_MEM)
			out[i].p = s->u.p;
		else if (s->u.off >= c->wbase)
			out[i].p = c->wbuf + (s->u.off - c->wbase);
		else
			c->req[nr++] = (struct req){ s->u.off, i, s->len };
	}
	if (nr == 0)
		return 0;
	if (nr > 1)
		qsort(c->req, nr, sizeof(*c->req), cmp_req);
	/* every run stays in the buffer: the pointers must all hold */
	total = 0;
	for (j = 0; j < nr; j = next) {
		next = run(c->req, j, nr, UINT64_MAX, &start, &end);
		total += end - start;
	}
	reserve_rbuf(c, total);
	at = 0;
	for (j = 0; j < nr; j = next) {
		next = run(c->req, j, nr, UINT64_MAX, &start, &end);
		if (rd(c, c->fd, c->rbuf + at, end - start, start) < 0)
			return -1;
		for (i = j; i < next; i++)
			out[c->req[i].idx].p = c->rbuf + at +
			    (c->req[i].off - start);
		at += end - start;
	}
	return 0;
}

const struct rv_cache_stats *
rv_cache_stats(const struct rv_cache *c)
{
	return &c->st;
}
