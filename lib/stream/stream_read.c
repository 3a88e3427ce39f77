/*
 * Reading the stream: one record per zstd frame, checksums on, content
 * size in every frame header.  The reader decompresses a record's header
 * first and validates it before its buffer grows for the payload, and then
 * grows it only as payload bytes arrive: a hostile size is refused before
 * any allocation, and a lying one costs at most what the frame holds.
 */
#include "stream/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "stream/stream_impl.h"

#define SKIP_MAGIC_LO	0x184D2A50u
#define SKIP_MAGIC_HI	0x184D2A5Fu
#define FRAME_HDR_MAX	18	/* ZSTD_FRAMEHEADERSIZE_MAX */
#define INBUF		(1u << 20)
/*
 * The largest frame window a reader accepts: 16 MiB.  Our writers, at
 * levels up to 19, never use more than 8 MiB (zstd's largest window below
 * its --ultra levels); without this bound a 70-byte frame could make
 * libzstd allocate 128 MiB.  rv-stream(5) documents it.
 */
#define WINDOW_LOG_MAX	24

struct rv_reader {
	char *name;
	int fd;			/* -1 for memory input */
	int own_fd;
	int seekable;
	int failed;
	/* input window: in[pos..len) is unconsumed */
	const unsigned char *in;
	unsigned char *inbuf;	/* owned, for fd input */
	size_t pos, len;
	int eof;
	uint64_t base;		/* input offset of in[0] */
	uint64_t rec_off;	/* offset of the last record returned */
	uint64_t nrec;		/* records returned */
	uint64_t open_epoch;	/* samples and batches since an epoch-end */
	uint64_t max_payload;
	uint64_t max_sample;	/* bytes of one sample, batched or not */
	ZSTD_DCtx *dctx;
	struct rv_buf rec;	/* decompressed record */
	/* rv_reader_open_list: the inputs (borrowed) and the names of those
	 * read before this one, kept for records that still name them */
	char *const *paths;
	int npaths, ipath;
	char **old_names;
	/* Epochs (rv-stream(5), "Epochs"); unused when raw. */
	int raw;
	struct rv_rec pend;	/* an epoch-end that may go on */
	int has_pend;
	uint64_t pend_off, pend_nrec, pend_merged;
	struct rv_rec held;	/* read past pend, returned next */
	int held_got;		/* 1: held is a record, 0: the end */
	int has_held;
	uint64_t held_off, held_nrec;
	uint64_t carry;		/* samples of the open epoch's ends so far */
	uint64_t carry_merged;	/* epoch-ends behind carry */
	uint32_t carry_epoch;
	int has_carry;
	uint32_t seg_epoch;	/* of the samples since the last epoch-end */
	int has_seg;
	uint64_t shown_off, shown_nrec, merged;
};

static struct rv_reader *
reader_new(const char *name)
{
	struct rv_reader *r = xcalloc(1, sizeof(*r));

	r->name = xstrdup(name);
	r->fd = -1;
	r->max_payload = rv_stream_max_payload();
	r->max_sample = rv_stream_max_sample();
	r->dctx = ZSTD_createDCtx();
	if (!r->dctx) {
		free(r->name);
		free(r);
		rv_seterr("'%s': cannot create a zstd context", name);
		return NULL;
	}
	/* libzstd sizes its window buffer from the frame header, before
	 * our header checks can run: bound it (see WINDOW_LOG_MAX) */
	ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, WINDOW_LOG_MAX);
	return r;
}

/* Read from fd next, from its current offset, with an empty window. */
static void
set_input(struct rv_reader *r, int fd)
{
	struct stat st;

	r->fd = fd;
	r->pos = r->len = 0;
	r->eof = 0;
	r->base = 0;
	r->seekable = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		off_t here = lseek(fd, 0, SEEK_CUR);

		r->seekable = 1;
		if (here > 0)
			r->base = (uint64_t)here;
	} else {
		rv_pipe_grow(fd);
	}
}

struct rv_reader *
rv_reader_fdopen(int fd, const char *name)
{
	struct rv_reader *r = reader_new(name);

	if (!r)
		return NULL;
	r->inbuf = xmalloc(INBUF);
	r->in = r->inbuf;
	set_input(r, fd);
	return r;
}

/* Open path for reading: an fd, or -1 with rv_errmsg() set. */
static int
open_input(const char *path)
{
	struct stat st;
	int fd;

	if (strcmp(path, "-") == 0)
		return STDIN_FILENO;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rv_seterr("'%s':", path);
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		return rv_seterr("'%s': is a directory", path);
	}
	return fd;
}

static const char *
input_name(const char *path)
{
	return strcmp(path, "-") == 0 ? "<stdin>" : path;
}

struct rv_reader *
rv_reader_open(const char *path)
{
	struct rv_reader *r;
	int fd;

	if ((fd = open_input(path)) < 0)
		return NULL;
	r = rv_reader_fdopen(fd, input_name(path));
	if (!r) {
		if (fd != STDIN_FILENO)
			close(fd);
		return NULL;
	}
	r->own_fd = fd != STDIN_FILENO;
	return r;
}

struct rv_reader *
rv_reader_open_list(char *const *paths, int n)
{
	struct rv_reader *r;

	if (n < 1)
		return rv_reader_open("-");
	if ((r = rv_reader_open(paths[0])) == NULL)
		return NULL;
	r->paths = paths;
	r->npaths = n;
	r->ipath = 0;
	return r;
}

/*
 * At the clean end of one input of a list, go on with the next as `cat`
 * would: the record count and offsets restart, the epoch state does not.
 * 1 if there is a next input, 0 if not, -1 on error.
 */
static int
next_input(struct rv_reader *r)
{
	const char *path;
	int fd;

	if (r->ipath + 1 >= r->npaths)
		return 0;
	path = r->paths[++r->ipath];
	if ((fd = open_input(path)) < 0) {
		r->failed = 1;
		return -1;
	}
	if (r->own_fd)
		close(r->fd);
	set_input(r, fd);
	r->own_fd = fd != STDIN_FILENO;
	if (r->old_names == NULL)
		r->old_names = xcalloc((size_t)r->npaths, sizeof(char *));
	r->old_names[r->ipath - 1] = r->name;
	r->name = xstrdup(input_name(path));
	r->nrec = 0;
	r->rec_off = 0;
	return 1;
}

void
rv_reader_set_raw(struct rv_reader *r, int raw)
{
	r->raw = raw;
}

struct rv_reader *
rv_reader_mem(const void *buf, size_t len, const char *name)
{
	struct rv_reader *r = reader_new(name);

	if (!r)
		return NULL;
	r->in = buf;
	r->len = len;
	r->eof = 1;
	return r;
}

void
rv_reader_close(struct rv_reader *r)
{
	if (!r)
		return;
	if (r->own_fd)
		close(r->fd);
	ZSTD_freeDCtx(r->dctx);
	rv_buf_release(&r->rec);
	free(r->inbuf);
	free(r->name);
	if (r->old_names != NULL) {
		int i;

		for (i = 0; i < r->npaths; i++)
			free(r->old_names[i]);
		free(r->old_names);
	}
	free(r);
}

/* Make at least want bytes available (fewer only at EOF).  0 or -1. */
static int
fill(struct rv_reader *r, size_t want)
{
	if (r->len - r->pos >= want || r->eof)
		return 0;
	if (r->pos > 0) {
		memmove(r->inbuf, r->inbuf + r->pos, r->len - r->pos);
		r->base += r->pos;
		r->len -= r->pos;
		r->pos = 0;
	}
	while (r->len < want && !r->eof) {
		ssize_t n = read(r->fd, r->inbuf + r->len, INBUF - r->len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return rv_seterr("read:");
		}
		if (n == 0)
			r->eof = 1;
		r->len += (size_t)n;
	}
	return 0;
}

static uint64_t
cur_off(const struct rv_reader *r)
{
	return r->base + r->pos;
}

static int
fail(struct rv_reader *r, uint64_t off, const char *reason)
{
	r->failed = 1;
	return rv_seterr("'%s': record %llu at byte %llu: %s", r->name,
	    (unsigned long long)r->nrec, (unsigned long long)off, reason);
}

/*
 * What a file that is no rv stream looks like, by its first bytes p[0..n):
 * a phrase ("gzip data"), or NULL where nothing is known.
 */
static const char *
looks_like(const unsigned char *p, size_t n)
{
	static const struct {
		const char *magic;
		size_t len;
		const char *what;
	} k[] = {
		{ "\x1f\x8b", 2, "gzip data" },
		{ "\xfd" "7zXZ\0", 6, "xz data" },
		{ "BZh", 3, "bzip2 data" },
		{ "PK\x03\x04", 4, "a zip archive" },
		{ "\xff\xd8\xff", 3, "a JPEG image" },
		{ "\x89PNG\r\n\x1a\n", 8, "a PNG image" },
		{ "GIF8", 4, "a GIF image" },
		{ "RIFF", 4, "a RIFF file (WebP?)" },
		{ "\0\0\x08", 3, "an IDX file (MNIST's format)" },
		{ "{", 1, "JSON or text" },
	};
	size_t i, txt;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (n >= k[i].len && memcmp(p, k[i].magic, k[i].len) == 0)
			return k[i].what;
	if (n >= 262 && memcmp(p + 257, "ustar", 5) == 0)
		return "a tar archive";
	for (txt = 0; txt < n && txt < 64; txt++)
		if (!(p[txt] == '\n' || p[txt] == '\t' || p[txt] == '\r' ||
		    (p[txt] >= 0x20 && p[txt] < 0x7f)))
			break;
	if (n > 0 && (txt == n || txt == 64))
		return "text";
	return NULL;
}

/* fail() for the record last read, whose index is one less than nrec. */
static int
fail_last(struct rv_reader *r, const char *reason)
{
	r->failed = 1;
	return rv_seterr("'%s': record %llu at byte %llu: %s", r->name,
	    (unsigned long long)(r->nrec - 1), (unsigned long long)r->rec_off,
	    reason);
}

/* Skip n bytes of input (a skippable frame's body). */
static int
skip_bytes(struct rv_reader *r, uint64_t n, uint64_t start)
{
	while (n > 0) {
		size_t have;
		if (r->pos == r->len) {
			if (r->eof)
				return fail(r, start, "truncated skippable "
				    "frame");
			if (fill(r, 1) < 0)
				return fail(r, start, rv_errmsg());
		}
		have = r->len - r->pos;
		if (have > n)
			have = (size_t)n;
		r->pos += have;
		n -= have;
	}
	return 0;
}

/* Decompress until out has `upto` bytes or the frame ends.  Returns 1 when
 * the frame ended, 0 when upto was reached first, -1 on error. */
static int
inflate_to(struct rv_reader *r, size_t upto, uint64_t start)
{
	while (r->rec.len < upto) {
		ZSTD_inBuffer in;
		ZSTD_outBuffer out = { r->rec.data, upto, r->rec.len };
		size_t ret;

		if (r->pos == r->len) {
			if (r->eof)
				return fail(r, start, "truncated frame");
			if (fill(r, 1) < 0)
				return fail(r, start, rv_errmsg());
			if (r->pos == r->len)
				return fail(r, start, "truncated frame");
		}
		in.src = r->in;
		in.size = r->len;
		in.pos = r->pos;
		ret = ZSTD_decompressStream(r->dctx, &out, &in);
		r->pos = in.pos;
		r->rec.len = out.pos;
		if (ZSTD_isError(ret)) {
			char msg[256];
			snprintf(msg, sizeof(msg), "corrupt frame: %s",
			    ZSTD_getErrorName(ret));
			return fail(r, start, msg);
		}
		if (ret == 0)
			return 1;
	}
	return 0;
}

/* The record is complete: consume the frame's tail (checksum), making
 * sure it holds no extra data. */
static int
finish_frame(struct rv_reader *r, uint64_t start)
{
	unsigned char extra;

	for (;;) {
		ZSTD_inBuffer in;
		ZSTD_outBuffer out = { &extra, 1, 0 };
		size_t ret;

		if (r->pos == r->len && !r->eof && fill(r, 1) < 0)
			return fail(r, start, rv_errmsg());
		in.src = r->in;
		in.size = r->len;
		in.pos = r->pos;
		ret = ZSTD_decompressStream(r->dctx, &out, &in);
		r->pos = in.pos;
		if (ZSTD_isError(ret)) {
			char msg[256];
			snprintf(msg, sizeof(msg), "corrupt frame: %s",
			    ZSTD_getErrorName(ret));
			return fail(r, start, msg);
		}
		if (out.pos)
			return fail(r, start, "frame holds more than its "
			    "record");
		if (ret == 0)
			return 0;
		if (r->pos == r->len && r->eof)
			return fail(r, start, "truncated frame");
	}
}

/*
 * The size of a zstd frame header (RFC 8878, 3.1.1.1) from its first five
 * bytes, so that a stream cut inside a frame header reads as truncated
 * rather than corrupt.
 */
static size_t
zstd_hdr_size(const unsigned char *p)
{
	static const unsigned char did[4] = { 0, 1, 2, 4 };
	static const unsigned char fcs[4] = { 0, 2, 4, 8 };
	unsigned fhd = p[4], single = fhd >> 5 & 1;

	return 5 + !single + did[fhd & 3] + fcs[fhd >> 6] +
	    (single && fhd >> 6 == 0);
}

/*
 * A sample, or each sample of a batch, against the sample limit, and a
 * metadata record against RV_META_MAX.  The record cap alone lets a 33 KB
 * frame of zeros hand every program a 2 GiB image to copy, and a 16 KB
 * frame a 512 MiB metadata value that each program copied twice; this
 * bounds what one sample or metadata record can cost, from the header
 * alone.
 */
static int
check_size(struct rv_reader *r, const struct rv_rec *rec, uint64_t start)
{
	char msg[200];
	uint64_t n;

	if (rec->kind == RV_META) {
		if (rec->payload_len <= RV_META_MAX)
			return 0;
		snprintf(msg, sizeof(msg), "metadata record of %llu bytes is "
		    "over the limit of %llu",
		    (unsigned long long)rec->payload_len,
		    (unsigned long long)RV_META_MAX);
		return fail(r, start, msg);
	}
	if (rec->kind == RV_SAMPLE)
		n = rec->payload_len;
	else if (rec->kind == RV_BATCH)
		n = (uint64_t)rec->height * rec->width * rec->channels;
	else
		return 0;
	if (n <= r->max_sample)
		return 0;
	snprintf(msg, sizeof(msg), "sample of %llu bytes%s is over the limit "
	    "of %llu (RV_MAX_SAMPLE to raise)", (unsigned long long)n,
	    rec->kind == RV_BATCH ? " in a batch" : "",
	    (unsigned long long)r->max_sample);
	return fail(r, start, msg);
}

/*
 * Decode the zstd frame at the input position into r->rec, header first:
 * the header is validated before the buffer is sized for the payload, and
 * the buffer then grows with the bytes actually decoded, so a header that
 * lies about its size costs at most twice what the frame really holds.
 */
static int
read_frame(struct rv_reader *r, struct rv_rec *rec, uint64_t start)
{
	const unsigned char *p = r->in + r->pos;
	size_t avail = r->len - r->pos, total, hl, upto;
	unsigned long long fcs;
	char msg[160];
	int ended;

	if (avail < 5 || avail < zstd_hdr_size(p))
		return fail(r, start, "truncated frame");
	fcs = ZSTD_getFrameContentSize(p, avail);
	if (fcs == ZSTD_CONTENTSIZE_ERROR)
		return fail(r, start, "corrupt frame header");
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs > r->max_payload + 65535) {
		snprintf(msg, sizeof(msg), "frame declares %llu bytes, over "
		    "the %llu-byte record limit", fcs,
		    (unsigned long long)r->max_payload);
		return fail(r, start, msg);
	}
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs < RV_HDR_LEN)
		return fail(r, start, "frame shorter than a record header");

	ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
	r->rec.len = 0;
	rv_buf_reserve(&r->rec, RV_HDR_LEN);
	/* magic, version and the header's own length come first */
	if ((ended = inflate_to(r, 8, start)) < 0)
		return -1;
	if (!ended && rv_le32(r->rec.data) == RV_MAGIC) {
		hl = (size_t)(r->rec.data[6] | r->rec.data[7] << 8);
		if (hl > 8) {
			rv_buf_reserve(&r->rec, hl - r->rec.len);
			if ((ended = inflate_to(r, hl, start)) < 0)
				return -1;
		}
	}
	if (rv_rec_decode(rec, r->rec.data, r->rec.len, r->max_payload) < 0)
		return fail(r, start, rv_errmsg());
	if (check_size(r, rec, start) < 0)
		return -1;
	total = rec->hdr_len + (size_t)rec->payload_len;
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != total) {
		snprintf(msg, sizeof(msg), "frame holds %llu bytes, record "
		    "header says %zu", fcs, total);
		return fail(r, start, msg);
	}
	while (!ended && r->rec.len < total) {
		if (r->rec.len == r->rec.cap)
			rv_buf_reserve(&r->rec, total - r->rec.len <
			    r->rec.cap ? total - r->rec.len : r->rec.cap);
		upto = total < r->rec.cap ? total : r->rec.cap;
		if ((ended = inflate_to(r, upto, start)) < 0)
			return -1;
	}
	if (r->rec.len < total)
		return fail(r, start, "record shorter than its header says");
	if (!ended && finish_frame(r, start) < 0)
		return -1;
	rec->payload = r->rec.data + rec->hdr_len;
	return 0;
}

/* The next record as it lies in the input: 1, 0 at the end, or -1. */
static int
read_next(struct rv_reader *r, struct rv_rec *rec)
{
	for (;;) {
		uint64_t start;
		uint32_t magic, n;
		int more;

		if (r->failed)
			return -1;
		if (fill(r, FRAME_HDR_MAX) < 0)
			return fail(r, cur_off(r), rv_errmsg());
		start = cur_off(r);
		if (r->pos == r->len) {
			if ((more = next_input(r)) <= 0)
				return more;
			continue;
		}
		if (r->len - r->pos < 4)
			return fail(r, start, "truncated frame");
		magic = rv_le32(r->in + r->pos);
		if (magic == ZSTD_MAGIC) {
			if (read_frame(r, rec, start) < 0)
				return -1;
			r->rec_off = start;
			r->nrec++;
			if (rec->kind == RV_EPOCH_END)
				r->open_epoch = 0;
			else if (rec->kind == RV_SAMPLE ||
			    rec->kind == RV_BATCH)
				r->open_epoch++;
			return 1;
		}
		if (magic < SKIP_MAGIC_LO || magic > SKIP_MAGIC_HI) {
			const char *kind = r->nrec == 0 && start == 0 ?
			    looks_like(r->in + r->pos, r->len - r->pos) : NULL;
			char why[160];

			if (!kind)
				return fail(r, start,
				    "not a zstd frame (bad magic)");
			snprintf(why, sizeof(why), "not an rv stream: it "
			    "looks like %s (rv-decode(1) makes a stream of "
			    "a dataset)", kind);
			return fail(r, start, why);
		}
		if (r->len - r->pos < 8)
			return fail(r, start, "truncated skippable frame");
		n = rv_le32(r->in + r->pos + 4);
		r->pos += 8;
		if (skip_bytes(r, n, start) < 0)
			return -1;
	}
}

/*
 * A sample or batch, or an epoch-end, against the samples since the last
 * epoch-end: one epoch number for them all.
 */
static int
check_segment(struct rv_reader *r, const struct rv_rec *rec)
{
	char why[128];

	if (rec->kind == RV_EPOCH_END) {
		int ok = !r->has_seg || r->seg_epoch == rec->epoch;

		r->has_seg = 0;
		if (ok)
			return 0;
		snprintf(why, sizeof(why), "epoch-end of epoch %lu after "
		    "samples of epoch %lu", (unsigned long)rec->epoch,
		    (unsigned long)r->seg_epoch);
		return fail_last(r, why);
	}
	if (r->has_seg && r->seg_epoch != rec->epoch) {
		snprintf(why, sizeof(why), "%s of epoch %lu after samples of "
		    "epoch %lu with no epoch-end between them",
		    rec->kind == RV_BATCH ? "batch" : "sample",
		    (unsigned long)rec->epoch, (unsigned long)r->seg_epoch);
		return fail_last(r, why);
	}
	r->has_seg = 1;
	r->seg_epoch = rec->epoch;
	return 0;
}

/* Return the held epoch-end: every input record it stands for is read. */
static int
give_pend(struct rv_reader *r, struct rv_rec *rec)
{
	*rec = r->pend;
	r->has_pend = 0;
	r->shown_off = r->pend_off;
	r->shown_nrec = r->pend_nrec;
	r->merged = r->pend_merged;
	return 1;
}

/*
 * Records with an epoch's epoch-ends joined (rv-stream(5), "Epochs"): an
 * epoch-end is held until the next sample, batch or epoch-end, skipping
 * metadata, which is returned meanwhile.  One of the same epoch means
 * the epoch goes on (`cat` of shards, of datasets): that epoch-end is
 * dropped and its count carried to the next.  Anything else, or the end
 * of input, returns it, with the sum of the counts it stands for.
 */
int
rv_reader_next(struct rv_reader *r, struct rv_rec *rec)
{
	for (;;) {
		struct rv_rec x;
		int got;

		if (r->raw) {
			if ((got = read_next(r, rec)) == 1) {
				r->shown_off = r->rec_off;
				r->shown_nrec = r->nrec;
				r->merged = rec->kind == RV_EPOCH_END;
			}
			return got;
		}
		if (r->has_held) {
			x = r->held;
			got = r->held_got;
			r->has_held = 0;
			r->shown_off = r->held_off;
			r->shown_nrec = r->held_nrec;
			if (got == 0)
				return 0;
		} else {
			if ((got = read_next(r, &x)) < 0)
				return -1;
			r->shown_off = r->rec_off;
			r->shown_nrec = r->nrec;
		}
		if (r->has_pend) {
			if (got == 1 && x.kind != RV_SAMPLE &&
			    x.kind != RV_BATCH && x.kind != RV_EPOCH_END) {
				*rec = x;	/* metadata, later kinds */
				r->merged = 0;
				return 1;
			}
			if (got == 1 && x.epoch == r->pend.epoch) {
				if (check_segment(r, &x) < 0)
					return -1;
				if (x.kind == RV_EPOCH_END) {
					r->pend.count += x.count;
					r->pend_merged++;
					if (r->pend.count < x.count)
						return fail_last(r, "epoch of "
						    "more than 4294967295 "
						    "samples");
					r->pend_off = r->shown_off;
					r->pend_nrec = r->shown_nrec;
					continue;
				}
				/* the epoch goes on */
				r->has_carry = 1;
				r->carry = r->pend.count;
				r->carry_merged = r->pend_merged;
				r->carry_epoch = r->pend.epoch;
				r->has_pend = 0;
				*rec = x;
				r->merged = 0;
				return 1;
			}
			r->held = x;
			r->held_got = got;
			r->held_off = r->shown_off;
			r->held_nrec = r->shown_nrec;
			r->has_held = 1;
			return give_pend(r, rec);
		}
		if (got == 0)
			return 0;
		if (x.kind == RV_SAMPLE || x.kind == RV_BATCH ||
		    x.kind == RV_EPOCH_END)
			if (check_segment(r, &x) < 0)
				return -1;
		if (x.kind != RV_EPOCH_END) {
			*rec = x;
			r->merged = 0;
			return 1;
		}
		r->pend = x;
		r->pend_merged = 1;
		r->pend_off = r->shown_off;
		r->pend_nrec = r->shown_nrec;
		if (r->has_carry && r->carry_epoch == x.epoch) {
			r->pend.count += (uint32_t)r->carry;
			r->pend_merged += r->carry_merged;
			if (r->pend.count < r->carry)
				return fail_last(r, "epoch of more than "
				    "4294967295 samples");
		}
		r->has_carry = 0;
		r->has_pend = 1;
	}
}

/*
 * A record with a payload that rv_reader_next() returns is always the one
 * in r->rec (a record held back behind an epoch-end is returned only after
 * that payload-less record), so the buffer can be handed over.
 */
void
rv_reader_take(struct rv_reader *r, struct rv_rec *rec, struct rv_buf *dst)
{
	size_t n = (size_t)rec->payload_len;
	struct rv_buf t;

	if (n > 0 && r->rec.data && rec->payload == r->rec.data +
	    rec->hdr_len && r->rec.len >= rec->hdr_len + n) {
		memmove(r->rec.data, rec->payload, n);
		r->rec.len = n;
		t = *dst;
		*dst = r->rec;
		r->rec = t;
		r->rec.len = 0;
	} else {
		dst->len = 0;
		rv_buf_append(dst, rec->payload, n);
	}
	rec->payload = dst->data;
}

uint64_t
rv_reader_merged(const struct rv_reader *r)
{
	return r->merged;
}

uint64_t
rv_reader_offset(const struct rv_reader *r)
{
	return r->shown_off;
}

int
rv_reader_check_end(const struct rv_reader *r)
{
	if (r->open_epoch == 0)
		return 0;
	return rv_seterr("'%s': record %llu at byte %llu: truncated stream: "
	    "%llu sample record%s after the last epoch-end", r->name,
	    (unsigned long long)r->nrec, (unsigned long long)cur_off(r),
	    (unsigned long long)r->open_epoch,
	    r->open_epoch == 1 ? "" : "s");
}

uint64_t
rv_reader_records(const struct rv_reader *r)
{
	return r->shown_nrec;
}

uint64_t
rv_reader_bytes(const struct rv_reader *r)
{
	return cur_off(r);
}

int
rv_reader_seekable(const struct rv_reader *r)
{
	return r->seekable || r->fd < 0;
}

int
rv_reader_seek(struct rv_reader *r, uint64_t off, uint64_t n)
{
	if (r->fd < 0) {
		if (off > r->len)
			return rv_seterr("'%s': seek past the end", r->name);
		r->pos = (size_t)off;
	} else {
		if (!r->seekable)
			return rv_seterr("'%s': cannot seek in a pipe",
			    r->name);
		if (lseek(r->fd, (off_t)off, SEEK_SET) < 0)
			return rv_seterr("'%s': seek:", r->name);
		r->base = off;
		r->pos = r->len = 0;
		r->eof = 0;
	}
	r->failed = 0;
	r->nrec = n;
	r->shown_nrec = n;
	r->has_pend = r->has_held = r->has_carry = r->has_seg = 0;
	return 0;
}

const char *
rv_reader_name(const struct rv_reader *r)
{
	return r->name;
}
