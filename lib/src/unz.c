/*
 * An archive input read through its compression (unz.h).  The raw bytes
 * live in one window, [off, off + len) of the input, read on at its end
 * and trimmed at its start to UNZ_TAIL behind the reading position; the
 * decoders read from it in place, and what is not compressed is given
 * from it in place too.
 */
#include "src/unz.h"

#include <bzlib.h>
#include <errno.h>
#include <limits.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"

/* Bytes asked of one read(), and given to libarchive at once. */
#define READ_MAX	((size_t)128 << 10)
/* Decoded bytes given at once. */
#define OUT_CAP		((size_t)64 << 10)
/* Bytes a magic needs, at most (bzip2's: "BZh9" and a block's magic). */
#define MAGIC_MAX	10
/* The memory a decoder may take, as its window or dictionary says: zstd's
 * window up to 2^27 bytes (its decoders' default, what zstd -19 and
 * --long=27 write), and xz's decoder up to that and its own state (xz -9's
 * 64 MiB dictionary needs 65 MiB); a stream that asks more is refused
 * before anything is allocated, so a 60 KB file cannot cost a GiB. */
#define ZSTD_WLOG_MAX	27
#define XZ_MEMLIMIT	(((uint64_t)1 << ZSTD_WLOG_MAX) + ((uint64_t)8 << 20))

struct unz {
	int fd;
	int seekable;
	off_t origin;		/* fd's offset of raw offset 0 */
	unsigned char *win;
	size_t cap, len;
	uint64_t off;		/* raw offset of win[0] */
	uint64_t pos;		/* next raw byte to give or to decode */
	int eof;		/* the input ends at off + len */
	enum unz_kind kind;	/* the archive's: its run's first stream */
	enum unz_kind cur;	/* the stream being decoded; NONE between */
	int ended;		/* the run is over, at end */
	uint64_t base, end;
	enum unz_state state;
	int pending;		/* a failure, told at the next read */
	char err[160];
	unsigned char *out;
	z_stream z;
	int zinit;
	ZSTD_DStream *zs;
	lzma_stream lz;
	int lzinit;
	bz_stream bz;
	int bzinit;
};

static const char *const names[] = { "none", "gzip", "zstd", "xz", "bzip2" };

const char *
unz_name(enum unz_kind k)
{
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] :
	    "none";
}

enum unz_kind
unz_detect(const unsigned char *p, size_t n)
{
	static const unsigned char xz[6] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
	static const unsigned char block[6] = {
		0x31, 0x41, 0x59, 0x26, 0x53, 0x59 };	/* pi */
	static const unsigned char eos[6] = {
		0x17, 0x72, 0x45, 0x38, 0x50, 0x90 };	/* sqrt(pi) */

	if (n >= 3 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8)
		return UNZ_GZIP;
	/* A frame, or a skippable frame (0x184D2A5?, little-endian). */
	if (n >= 4 && ((p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f &&
	    p[3] == 0xfd) || ((p[0] & 0xf0) == 0x50 && p[1] == 0x2a &&
	    p[2] == 0x4d && p[3] == 0x18)))
		return UNZ_ZSTD;
	if (n >= 6 && memcmp(p, xz, 6) == 0)
		return UNZ_XZ;
	if (n >= 10 && p[0] == 'B' && p[1] == 'Z' && p[2] == 'h' &&
	    p[3] >= '1' && p[3] <= '9' && (memcmp(p + 4, block, 6) == 0 ||
	    memcmp(p + 4, eos, 6) == 0))
		return UNZ_BZIP2;
	return UNZ_NONE;
}

struct unz *
unz_new(int fd, int seekable)
{
	struct unz *u = xcalloc(1, sizeof(*u));
	lzma_stream init = LZMA_STREAM_INIT;

	u->fd = fd;
	u->seekable = seekable;
	if (seekable && (u->origin = lseek(fd, 0, SEEK_CUR)) < 0)
		u->origin = 0;
	/* The tail moved down at most once every 3.75 MiB read. */
	u->cap = 32 * READ_MAX;
	u->win = xmalloc(u->cap);
	u->out = xmalloc(OUT_CAP);
	u->lz = init;
	return u;
}

void
unz_free(struct unz *u)
{
	if (!u)
		return;
	if (u->zinit)
		inflateEnd(&u->z);
	ZSTD_freeDStream(u->zs);
	if (u->lzinit)
		lzma_end(&u->lz);
	if (u->bzinit)
		BZ2_bzDecompressEnd(&u->bz);
	free(u->win);
	free(u->out);
	free(u);
}

static size_t
held(const struct unz *u)
{
	return (size_t)(u->off + u->len - u->pos);
}

static const unsigned char *
at(const struct unz *u)
{
	return u->win + (u->pos - u->off);
}

static int
fail(struct unz *u, enum unz_state st, const char *fmt, const char *arg)
{
	u->state = st;
	snprintf(u->err, sizeof(u->err), fmt, arg);
	return rv_seterr("%s", u->err);
}

/*
 * Room to read into: drop what is over UNZ_TAIL behind pos (nothing is
 * kept behind a decoder, which takes exactly what it uses), and grow when
 * that is not room enough.
 */
static void
room(struct unz *u)
{
	uint64_t keep = u->kind == UNZ_NONE ? UNZ_TAIL : 0;
	uint64_t lo = u->pos > keep ? u->pos - keep : 0;

	/* Cheaply (little to move: a decoder's input) or when full: a
	 * window read at its start again stays in the cache. */
	if (lo > u->off && (u->len - (size_t)(lo - u->off) <= READ_MAX / 8 ||
	    u->cap - u->len < READ_MAX)) {
		size_t d = (size_t)(lo - u->off);

		memmove(u->win, u->win + d, u->len - d);
		u->len -= d;
		u->off = lo;
	}
	if (u->cap - u->len < READ_MAX) {
		u->cap *= 2;
		u->win = xrealloc(u->win, u->cap);
	}
}

/* Hold at least need bytes from pos, or all there are. */
static int
fill(struct unz *u, size_t need)
{
	while (!u->eof && held(u) < need) {
		ssize_t k;

		room(u);
		do
			k = read(u->fd, u->win + u->len, READ_MAX);
		while (k < 0 && errno == EINTR);
		if (k < 0)
			return fail(u, UNZ_IOERR, "read error: %s",
			    strerror(errno));
		if (k == 0)
			u->eof = 1;
		u->len += (size_t)k;
	}
	return 0;
}

/* An archive said to end past the input's end: what follows it in the
 * input would be skipped, so it is an error. */
static int
past_end(struct unz *u, uint64_t end, uint64_t to)
{
	char why[160];

	(void)u;
	snprintf(why, sizeof(why), "the input ends at byte %llu, before "
	    "byte %llu where the archive before says it ends",
	    (unsigned long long)end, (unsigned long long)to);
	return rv_seterr("%s", why);	/* the data is not at fault */
}

/* Go to raw offset to: back within the window (or anywhere in a file),
 * or on, reading past what lies between; not past the input's end. */
static int
go(struct unz *u, uint64_t to)
{
	if (u->len > 0 && to >= u->off && to <= u->off + u->len) {
		u->pos = to;
		return 0;
	}
	if (u->seekable) {
		struct stat st;

		if (fstat(u->fd, &st) == 0 &&
		    (uint64_t)(st.st_size - u->origin) < to)
			return past_end(u, (uint64_t)(st.st_size - u->origin),
			    to);
		if (lseek(u->fd, u->origin + (off_t)to, SEEK_SET) < 0)
			return fail(u, UNZ_IOERR, "seek error: %s",
			    strerror(errno));
		u->off = u->pos = to;
		u->len = 0;
		u->eof = 0;
		return 0;
	}
	if (to < u->off)
		return rv_seterr("byte %llu of the input was read past and "
		    "is no longer held", (unsigned long long)to);
	while (u->pos < to) {
		u->pos = u->off + u->len;
		if (u->pos >= to || u->eof)
			break;
		if (fill(u, 1) < 0)
			return -1;
	}
	if (u->pos < to)
		return past_end(u, u->pos, to);
	if (u->pos > to)
		u->pos = to;
	return 0;
}

int
unz_ends_before(struct unz *u, uint64_t off)
{
	struct stat st;

	if (u->seekable) {
		if (fstat(u->fd, &st) < 0)
			return fail(u, UNZ_IOERR, "cannot stat: %s",
			    strerror(errno));
		return (uint64_t)(st.st_size - u->origin) < off;
	}
	if (off <= u->off + u->len)
		return 0;
	/* What lies before off is not wanted: as go(), but the end of the
	 * input is an answer, not an error. */
	while (!u->eof && u->off + u->len < off) {
		u->pos = u->off + u->len;
		if (fill(u, 1) < 0)
			return -1;
	}
	return u->off + u->len < off;
}

/* Skip zero bytes from pos; at the end of the input, pos is there. */
static int
skip_zeros(struct unz *u)
{
	for (;;) {
		const unsigned char *p;
		size_t n;

		if (fill(u, 1) < 0)
			return -1;
		if ((n = held(u)) == 0)
			return 0;
		p = at(u);
		while (n > 0 && *p == 0) {
			p++;
			n--;
		}
		u->pos = u->off + (uint64_t)(p - u->win);
		if (n > 0)
			return 0;
	}
}

static int
begin(struct unz *u, enum unz_kind k)
{
	int r;

	switch (k) {
	case UNZ_GZIP:
		if (!u->zinit) {
			r = inflateInit2(&u->z, 15 + 16);	/* gzip */
			u->zinit = r == Z_OK;
		} else {
			r = inflateReset(&u->z);
		}
		if (r != Z_OK)
			return fail(u, UNZ_CORRUPT, "%s",
			    "cannot start a gzip decoder");
		break;
	case UNZ_ZSTD:
		if (!u->zs && !(u->zs = ZSTD_createDStream()))
			return fail(u, UNZ_CORRUPT, "%s", "out of memory");
		if (ZSTD_isError(ZSTD_initDStream(u->zs)) ||
		    ZSTD_isError(ZSTD_DCtx_setParameter(u->zs,
		    ZSTD_d_windowLogMax, ZSTD_WLOG_MAX)))
			return fail(u, UNZ_CORRUPT, "%s",
			    "cannot start a zstd decoder");
		break;
	case UNZ_XZ:
		u->lzinit = 1;
		if (lzma_stream_decoder(&u->lz, XZ_MEMLIMIT, 0) != LZMA_OK)
			return fail(u, UNZ_CORRUPT, "%s",
			    "cannot start an xz decoder");
		break;
	case UNZ_BZIP2:
		if (u->bzinit)
			BZ2_bzDecompressEnd(&u->bz);
		memset(&u->bz, 0, sizeof(u->bz));
		u->bzinit = BZ2_bzDecompressInit(&u->bz, 0, 0) == BZ_OK;
		if (!u->bzinit)
			return fail(u, UNZ_CORRUPT, "%s",
			    "cannot start a bzip2 decoder");
		break;
	case UNZ_NONE:
		break;
	}
	u->cur = k;
	return 0;
}

static const char *
lzma_why(lzma_ret r)
{
	switch (r) {
	case LZMA_MEM_ERROR:
		return "out of memory";
	case LZMA_FORMAT_ERROR:
		return "not the xz format";
	case LZMA_OPTIONS_ERROR:
		return "unsupported options";
	default:
		return "compressed data is corrupt";
	}
}

/*
 * Decode what is held into out[0..outn): 1 at the end of the stream, 0
 * after some progress (or none, when more input is needed), -1 when the
 * data is refused.  *used and *made say how much.
 */
static int
step(struct unz *u, unsigned char *out, size_t outn, size_t *used,
    size_t *made)
{
	const unsigned char *in = at(u);
	size_t avail = held(u);
	int done = 0;

	*used = *made = 0;

	if (avail > UINT_MAX)
		avail = UINT_MAX;
	if (outn > UINT_MAX)
		outn = UINT_MAX;
	switch (u->cur) {
	case UNZ_GZIP: {
		int r;

		u->z.next_in = (Bytef *)(uintptr_t)in;
		u->z.avail_in = (uInt)avail;
		u->z.next_out = out;
		u->z.avail_out = (uInt)outn;
		r = inflate(&u->z, Z_NO_FLUSH);
		*used = avail - u->z.avail_in;
		*made = outn - u->z.avail_out;
		if (r == Z_STREAM_END)
			done = 1;
		else if (r != Z_OK && r != Z_BUF_ERROR)
			return fail(u, UNZ_CORRUPT, "gzip data corrupt: %s",
			    r == Z_MEM_ERROR ? "out of memory" : u->z.msg ?
			    u->z.msg : "bad data");
		break;
	}
	case UNZ_ZSTD: {
		ZSTD_inBuffer ib = { in, avail, 0 };
		ZSTD_outBuffer ob = { out, outn, 0 };
		size_t r = ZSTD_decompressStream(u->zs, &ob, &ib);

		if (ZSTD_isError(r))
			return fail(u, UNZ_CORRUPT, "zstd data corrupt: %s",
			    ZSTD_getErrorName(r));
		*used = ib.pos;
		*made = ob.pos;
		done = r == 0;
		break;
	}
	case UNZ_XZ: {
		lzma_ret r;

		u->lz.next_in = in;
		u->lz.avail_in = avail;
		u->lz.next_out = out;
		u->lz.avail_out = outn;
		r = lzma_code(&u->lz, LZMA_RUN);
		*used = avail - u->lz.avail_in;
		*made = outn - u->lz.avail_out;
		if (r == LZMA_STREAM_END)
			done = 1;
		else if (r == LZMA_MEMLIMIT_ERROR)
			return fail(u, UNZ_CORRUPT, "%s", "xz stream refused: "
			    "decoding it needs over 136 MiB (a dictionary over "
			    "128 MiB), rv's limit");
		else if (r != LZMA_OK && r != LZMA_BUF_ERROR)
			return fail(u, UNZ_CORRUPT, "xz data corrupt: %s",
			    lzma_why(r));
		break;
	}
	case UNZ_BZIP2: {
		int r;

		u->bz.next_in = (char *)(uintptr_t)in;
		u->bz.avail_in = (unsigned)avail;
		u->bz.next_out = (char *)out;
		u->bz.avail_out = (unsigned)outn;
		r = BZ2_bzDecompress(&u->bz);
		*used = avail - u->bz.avail_in;
		*made = outn - u->bz.avail_out;
		if (r == BZ_STREAM_END)
			done = 1;
		else if (r != BZ_OK)
			return fail(u, UNZ_CORRUPT, "bzip2 data corrupt: %s",
			    r == BZ_MEM_ERROR ? "out of memory" :
			    "bad data");
		break;
	}
	case UNZ_NONE:
		*used = *made = 0;
		return 1;
	}
	u->pos += *used;
	return done;
}

int
unz_start(struct unz *u, uint64_t off)
{
	u->state = UNZ_OK;
	u->pending = 0;
	u->err[0] = '\0';
	u->ended = 0;
	u->cur = UNZ_NONE;
	u->kind = UNZ_NONE;
	if (go(u, off) < 0 || skip_zeros(u) < 0)
		return -1;
	u->base = u->end = u->pos;
	if (held(u) == 0)
		return 0;
	if (fill(u, MAGIC_MAX) < 0)
		return -1;
	u->kind = unz_detect(at(u), held(u));
	if (u->kind != UNZ_NONE && begin(u, u->kind) < 0)
		return -1;
	return 1;
}

enum unz_kind
unz_kind(const struct unz *u)
{
	return u->kind;
}

uint64_t
unz_base(const struct unz *u)
{
	return u->base;
}

uint64_t
unz_pos(const struct unz *u)
{
	return u->pos;
}

uint64_t
unz_end(const struct unz *u)
{
	return u->end;
}

enum unz_state
unz_state(const struct unz *u)
{
	return u->state;
}

const char *
unz_error(const struct unz *u)
{
	return u->err;
}

static int
truncated(struct unz *u)
{
	return fail(u, UNZ_TRUNCATED, "truncated %s input", unz_name(u->cur));
}

/* A run of compressed streams, decoded into out. */
static ssize_t
read_run(struct unz *u, const void **p)
{
	size_t made = 0, used = 0, got = 0;
	int r;

	while (made < OUT_CAP && !u->ended) {
		if (u->cur == UNZ_NONE) {
			enum unz_kind k;

			if (skip_zeros(u) < 0 || fill(u, MAGIC_MAX) < 0)
				goto failed;
			k = unz_detect(at(u), held(u));
			if (k == UNZ_NONE) {
				u->ended = 1;
				u->end = u->pos;
				break;
			}
			if (begin(u, k) < 0)
				goto failed;
		}
		if (fill(u, 1) < 0)
			goto failed;
		if (held(u) == 0) {
			truncated(u);
			goto failed;
		}
		if ((r = step(u, u->out + made, OUT_CAP - made, &used,
		    &got)) < 0)
			goto failed;
		made += got;
		if (r == 1) {
			u->cur = UNZ_NONE;
		} else if (used == 0 && got == 0) {
			/* More input than is held, to make progress. */
			size_t n = held(u);

			if (fill(u, n + 1) < 0)
				goto failed;
			if (held(u) == n) {
				truncated(u);
				goto failed;
			}
		}
	}
	*p = u->out;
	return (ssize_t)made;
failed:
	if (made == 0)
		return -1;
	u->pending = 1;		/* give what was decoded first */
	*p = u->out;
	return (ssize_t)made;
}

ssize_t
unz_read(struct unz *u, const void **p)
{
	size_t n;

	if (u->pending) {
		rv_seterr("%s", u->err);
		return -1;
	}
	if (u->kind != UNZ_NONE)
		return read_run(u, p);
	if (fill(u, 1) < 0)
		return -1;
	n = held(u) < READ_MAX ? held(u) : READ_MAX;
	*p = at(u);
	u->pos += n;
	return (ssize_t)n;
}

ssize_t
unz_peek(struct unz *u, uint64_t off, void *buf, size_t n)
{
	size_t k;

	if (off >= u->off && u->len > 0 && off <= u->off + u->len &&
	    off + n <= u->off + u->len) {
		memcpy(buf, u->win + (off - u->off), n);
		return (ssize_t)n;
	}
	if (u->seekable) {
		ssize_t got = rv_pread_upto(u->fd, buf, n,
		    u->origin + (off_t)off);

		return got < 0 ? fail(u, UNZ_IOERR, "read error: %s",
		    strerror(errno)) : got;
	}
	/* A pipe is read on to off: what lies before it is not wanted. */
	if (off > u->pos && go(u, off) < 0)
		return -1;
	if (off + n > u->pos && fill(u, (size_t)(off + n - u->pos)) < 0)
		return -1;
	if (off < u->off)
		return rv_seterr("byte %llu of the input was read past and "
		    "is no longer held", (unsigned long long)off);
	if (off >= u->off + u->len)
		return 0;
	k = (size_t)(u->off + u->len - off);
	if (k > n)
		k = n;
	memcpy(buf, u->win + (off - u->off), k);
	return (ssize_t)k;
}
