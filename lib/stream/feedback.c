/*
 * Feedback lines between the trainer and rv-score (man/rv-feedback.5):
 * the strict line format, a writer that queues lines in a fixed ring and
 * hands the fd only whole lines without ever blocking, and a reader that
 * polls a FIFO or a growing file and reassembles lines split by reads.
 */
#include "stream/feedback.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/xmem.h"

#ifndef PIPE_BUF
#define PIPE_BUF	512	/* the POSIX minimum */
#endif

/* One write() at most: whole lines up to PIPE_BUF are atomic on a FIFO. */
#define FB_BATCH	PIPE_BUF
/* Reader buffer: one read() takes up to a page (about 100 lines). */
#define FB_RDBUF	4096
#define FB_ERRLEN	256

static const char *const field_name[5] = {
	"id", "epoch", "step", "loss", "gradnorm",
};

size_t
rv_fb_format(const struct rv_fb_line *l, char *buf)
{
	/* -0 would print as "-0": a sign the reader's eye need not see */
	double loss = l->loss == 0 ? 0.0 : (double)l->loss;
	double gn = l->gradnorm == 0 ? 0.0 : (double)l->gradnorm;
	int n;

	n = snprintf(buf, RV_FB_LINE_MAX, "%llu\t%lu\t%llu\t%.6g\t%.6g\n",
	    (unsigned long long)l->id, (unsigned long)l->epoch,
	    (unsigned long long)l->step, loss, gn);
	/* at most 20+10+20+12+12 characters, 4 tabs and the LF */
	return (size_t)n;
}

/* Decimal digits only, no sign, at most max. */
static int
parse_uint(const char *s, size_t len, uint64_t max, uint64_t *v, int field)
{
	uint64_t x = 0;
	size_t i;

	if (len == 0)
		return rv_seterr("field %d '%s': empty", field + 1,
		    field_name[field]);
	for (i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9)
			return rv_seterr("field %d '%s': not an unsigned "
			    "decimal integer", field + 1, field_name[field]);
		if (x > (max - d) / 10)
			return rv_seterr("field %d '%s': out of range",
			    field + 1, field_name[field]);
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

/* A finite non-negative number as strtof reads it, with nothing around. */
static int
parse_float(const char *s, size_t len, float *v, int field)
{
	char tmp[RV_FB_LINE_MAX];
	char *end;
	float x;

	if (len == 0)
		return rv_seterr("field %d '%s': empty", field + 1,
		    field_name[field]);
	/* the caller bounds the line, so a field always fits */
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	if (tmp[0] == ' ' || (tmp[0] >= '\t' && tmp[0] <= '\r'))
		goto nan;
	errno = 0;
	x = strtof(tmp, &end);
	if (end != tmp + len)
		goto nan;
	if (!isfinite(x))
		return rv_seterr("field %d '%s': %s", field + 1,
		    field_name[field],
		    errno == ERANGE ? "out of range" : "not finite");
	if (x < 0)
		return rv_seterr("field %d '%s': negative", field + 1,
		    field_name[field]);
	*v = x == 0 ? 0.0f : x;
	return 0;
nan:
	return rv_seterr("field %d '%s': not a number", field + 1,
	    field_name[field]);
}

int
rv_fb_parse(const char *s, size_t len, struct rv_fb_line *l)
{
	const char *f[5];
	size_t flen[5];
	struct rv_fb_line out;
	uint64_t v;
	size_t i, start = 0;
	int nf = 0;

	if (len >= RV_FB_LINE_MAX)
		return rv_seterr("line too long");
	if (len == 0)
		return rv_seterr("empty line");
	if (s[len - 1] == '\r')
		return rv_seterr("carriage return at the end of the line");
	for (i = 0; i <= len; i++) {
		if (i < len && s[i] != '\t')
			continue;
		if (nf < 5) {
			f[nf] = s + start;
			flen[nf] = i - start;
		}
		nf++;
		start = i + 1;
	}
	if (nf != 5)
		return rv_seterr("%d tab-separated field%s, expected 5", nf,
		    nf == 1 ? "" : "s");
	if (parse_uint(f[0], flen[0], UINT64_MAX, &out.id, 0) < 0)
		return -1;
	if (parse_uint(f[1], flen[1], UINT32_MAX, &v, 1) < 0)
		return -1;
	out.epoch = (uint32_t)v;
	if (parse_uint(f[2], flen[2], UINT64_MAX, &out.step, 2) < 0)
		return -1;
	if (parse_float(f[3], flen[3], &out.loss, 3) < 0 ||
	    parse_float(f[4], flen[4], &out.gradnorm, 4) < 0)
		return -1;
	*l = out;
	return 0;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The queue is a ring of cap fixed slots of RV_FB_LINE_MAX bytes, made at
 * open, so a put never allocates.  A write that stops inside a line (a
 * regular file near ENOSPC; never a FIFO, whose writes of at most
 * PIPE_BUF bytes are all or nothing) leaves that line's rest in tail,
 * which goes out before anything else: a reader sees whole lines only.
 */
struct rv_fb_writer {
	char *path;
	int fd;			/* -1: no reader (FIFO) */
	int fifo;		/* reopen on EPIPE instead of failing */
	int64_t last_open;	/* CLOCK_MONOTONIC ms of the last open */
	char *slot;		/* cap * RV_FB_LINE_MAX bytes */
	unsigned char *len;	/* cap line lengths */
	size_t cap, head, n;	/* oldest slot, lines queued */
	char tail[RV_FB_LINE_MAX];
	size_t tail_len, tail_off;	/* tail_len 0: none */
	uint64_t written, dropped;
	char err[FB_ERRLEN];	/* first regular-file failure, for close */
	char batch[FB_BATCH];
};

/* Give up the fd of a reader that went away; reopening starts over. */
static void
lose_reader(struct rv_fb_writer *w)
{
	close(w->fd);
	w->fd = -1;
	w->last_open = now_ms();
	/* the start of this line went to the reader that left: its rest
	 * would be half a line to the next one */
	if (w->tail_len > 0) {
		w->tail_len = w->tail_off = 0;
		w->dropped++;
	}
}

/* Try to open the FIFO again; 1 if a reader has it now. */
static int
reopen(struct rv_fb_writer *w)
{
	struct stat st;
	int fd;

	w->last_open = now_ms();
	do
		fd = open(w->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return 0;
	/* a regular file put in the FIFO's place is not ours to append to */
	if (fstat(fd, &st) < 0 || S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	w->fd = fd;
	return 1;
}

struct rv_fb_writer *
rv_fb_writer_open(const char *path, size_t queue_lines)
{
	return rv_fb_writer_openf(path, queue_lines, 0);
}

struct rv_fb_writer *
rv_fb_writer_openf(const char *path, size_t queue_lines, int flags)
{
	struct rv_fb_writer *w;
	struct stat st;
	int fd;

	if (queue_lines < 1 || queue_lines > SIZE_MAX / RV_FB_LINE_MAX) {
		rv_seterr("'%s': bad feedback queue length %zu", path,
		    queue_lines);
		return NULL;
	}
	/* O_TRUNC and O_CREAT do nothing to an existing FIFO */
	do
		fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC |
		    (flags & RV_FB_APPEND ? O_APPEND : O_TRUNC), 0666);
	while (fd < 0 && errno == EINTR);
	if (fd < 0 && errno != ENXIO) {
		rv_seterr("'%s':", path);
		return NULL;
	}
	if (fd >= 0 && fstat(fd, &st) < 0) {
		rv_seterr("'%s':", path);
		close(fd);
		return NULL;
	}
	w = xcalloc(1, sizeof(*w));
	w->path = xstrdup(path);
	w->fd = fd;
	/* ENXIO: a FIFO (or socket) nobody reads yet */
	w->fifo = fd < 0 || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
	w->last_open = now_ms();
	w->cap = queue_lines;
	w->slot = xmalloc(queue_lines * RV_FB_LINE_MAX);
	w->len = xmalloc(queue_lines);
	return w;
}

static char *
slot_at(const struct rv_fb_writer *w, size_t i)
{
	size_t k = w->head + i;

	if (k >= w->cap)
		k -= w->cap;
	return w->slot + k * RV_FB_LINE_MAX;
}

static unsigned char *
len_at(const struct rv_fb_writer *w, size_t i)
{
	size_t k = w->head + i;

	if (k >= w->cap)
		k -= w->cap;
	return w->len + k;
}

static void
pop(struct rv_fb_writer *w)
{
	if (++w->head == w->cap)
		w->head = 0;
	w->n--;
}

/* Copy the oldest whole lines that fit into w->batch; their length. */
static size_t
fill_batch(struct rv_fb_writer *w)
{
	size_t i, used = 0;

	for (i = 0; i < w->n; i++) {
		size_t l = *len_at(w, i);

		if (used + l > sizeof(w->batch))
			break;
		memcpy(w->batch + used, slot_at(w, i), l);
		used += l;
	}
	return used;
}

/* r bytes of a batch went out: retire the lines they complete. */
static void
retire(struct rv_fb_writer *w, size_t r)
{
	while (r > 0) {
		size_t l = *len_at(w, 0);

		if (r < l) {
			memcpy(w->tail, slot_at(w, 0), l);
			w->tail_len = l;
			w->tail_off = r;
			pop(w);
			return;
		}
		pop(w);
		w->written++;
		r -= l;
	}
}

static int
write_failed(struct rv_fb_writer *w)
{
	rv_seterr("'%s': write:", w->path);
	if (w->fifo) {
		lose_reader(w);
		return -1;
	}
	if (w->err[0] == '\0')
		snprintf(w->err, sizeof(w->err), "%s", rv_errmsg());
	return -1;
}

int
rv_fb_flush(struct rv_fb_writer *w)
{
	for (;;) {
		const char *p;
		size_t len;
		ssize_t r;
		int tail;

		if (w->tail_len == 0 && w->n == 0)
			return 0;
		if (w->fd < 0) {
			if (now_ms() - w->last_open < RV_FB_REOPEN_MS ||
			    !reopen(w))
				return 0;
		}
		tail = w->tail_len > 0;
		if (tail) {
			p = w->tail + w->tail_off;
			len = w->tail_len - w->tail_off;
		} else {
			len = fill_batch(w);
			p = w->batch;
		}
		r = write(w->fd, p, len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EPIPE && w->fifo) {
				lose_reader(w);
				return 0;
			}
			return write_failed(w);
		}
		if (r == 0)	/* nothing taken, no error: try later */
			return 0;
		if (tail) {
			w->tail_off += (size_t)r;
			if (w->tail_off == w->tail_len) {
				w->tail_len = w->tail_off = 0;
				w->written++;
			}
		} else {
			retire(w, (size_t)r);
		}
	}
}

void
rv_fb_put(struct rv_fb_writer *w, const struct rv_fb_line *l)
{
	if (w->n == w->cap) {
		/* make room by writing first; drop only what cannot go */
		(void)rv_fb_flush(w);
		if (w->n == w->cap) {
			pop(w);
			w->dropped++;
		}
	}
	*len_at(w, w->n) = (unsigned char)rv_fb_format(l, slot_at(w, w->n));
	w->n++;
	(void)rv_fb_flush(w);
}

uint64_t
rv_fb_written(const struct rv_fb_writer *w)
{
	return w->written;
}

uint64_t
rv_fb_dropped(const struct rv_fb_writer *w)
{
	return w->dropped;
}

size_t
rv_fb_queued(const struct rv_fb_writer *w)
{
	return w->n + (w->tail_len > 0);
}

int
rv_fb_writer_close(struct rv_fb_writer *w, int timeout_ms,
    uint64_t *written, uint64_t *dropped)
{
	const struct timespec ms = { 0, 1000000 };
	int64_t deadline;
	int status = 0;

	if (written)
		*written = 0;
	if (dropped)
		*dropped = 0;
	if (!w)
		return 0;
	deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	for (;;) {
		if (rv_fb_flush(w) < 0 && !w->fifo)
			break;
		if (rv_fb_queued(w) == 0 || now_ms() >= deadline)
			break;
		nanosleep(&ms, NULL);
	}
	w->dropped += rv_fb_queued(w);
	if (w->fd >= 0 && close(w->fd) < 0 && !w->fifo &&
	    w->err[0] == '\0') {
		rv_seterr("'%s': close:", w->path);
		snprintf(w->err, sizeof(w->err), "%s", rv_errmsg());
	}
	if (w->err[0] != '\0')
		status = rv_seterr("%s", w->err);
	if (written)
		*written = w->written;
	if (dropped)
		*dropped = w->dropped;
	free(w->slot);
	free(w->len);
	free(w->path);
	free(w);
	return status;
}

/*
 * The reader keeps unconsumed bytes in buf[start, end).  A line is
 * consumed only when it is handed out or reported, so a call that has
 * already parsed lines returns them and leaves a bad line for the next
 * call, which reports it alone.
 */
struct rv_fb_reader {
	char *path;
	int fd;
	int fifo;		/* end of file means no writer now */
	int eof;		/* a regular file read to its end, for now */
	int skip;		/* in an over-long line, reported */
	int torn;		/* the writer left in mid-line: report it */
	int writer;		/* a FIFO: bytes came since the last end */
	uint64_t left;		/* a FIFO: times its writer left */
	size_t start, end;
	uint64_t lineno, parsed;
	char buf[FB_RDBUF];
};

struct rv_fb_reader *
rv_fb_reader_open(const char *path)
{
	struct rv_fb_reader *r;
	struct stat st;
	int fd;

	do
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		rv_seterr("'%s':", path);
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		rv_seterr("'%s':", path);
		close(fd);
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		rv_seterr("'%s': is a directory", path);
		close(fd);
		return NULL;
	}
	r = xmalloc(sizeof(*r));
	r->path = xstrdup(path);
	r->fd = fd;
	r->fifo = !S_ISREG(st.st_mode);
	r->eof = r->skip = r->torn = r->writer = 0;
	r->left = 0;
	r->start = r->end = 0;
	r->lineno = r->parsed = 0;
	return r;
}

/* Report line r->lineno (already counted) as malformed. */
static int
line_error(const struct rv_fb_reader *r, const char *why)
{
	return rv_seterr("'%s': line %llu: %s", r->path,
	    (unsigned long long)r->lineno, why);
}

/* Read more after buf[start, end); 1 if bytes came, 0 if none now. */
static int
fill(struct rv_fb_reader *r)
{
	ssize_t got;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	do
		got = read(r->fd, r->buf + r->end, sizeof(r->buf) - r->end);
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return rv_seterr("'%s': read:", r->path);
	}
	if (got == 0) {
		if (r->fifo && r->writer) {
			r->writer = 0;
			r->left++;
		}
		if (!r->fifo) {
			r->eof = 1;
		} else if (r->skip) {
			/* the over-long line ended with its writer */
			r->skip = 0;
			r->start = r->end = 0;
		} else if (r->end > 0) {
			r->torn = 1;
		}
		return 0;
	}
	r->eof = 0;
	r->writer = 1;
	r->end += (size_t)got;
	return 1;
}

int
rv_fb_poll(struct rv_fb_reader *r, struct rv_fb_line *out, int max)
{
	int n = 0, got;

	while (n < max) {
		char *s = r->buf + r->start;
		size_t avail = r->end - r->start;
		char *nl;

		if (r->torn) {
			if (n > 0)
				break;
			r->torn = 0;
			r->start = r->end = 0;
			r->lineno++;
			return line_error(r, "no newline before the writer "
			    "closed the FIFO");
		}
		nl = memchr(s, '\n', avail);
		if (nl && r->skip) {
			r->skip = 0;
			r->start += (size_t)(nl - s) + 1;
			continue;
		}
		if (nl) {
			if (rv_fb_parse(s, (size_t)(nl - s), &out[n]) < 0) {
				if (n > 0)
					break;
				r->start += (size_t)(nl - s) + 1;
				r->lineno++;
				return rv_preferr("'%s': line %llu", r->path,
				    (unsigned long long)r->lineno);
			}
			r->start += (size_t)(nl - s) + 1;
			r->lineno++;
			r->parsed++;
			n++;
			continue;
		}
		if (r->skip) {
			r->start = r->end = 0;
		} else if (avail >= RV_FB_LINE_MAX) {
			if (n > 0)
				break;
			r->start = r->end = 0;
			r->skip = 1;
			r->lineno++;
			return line_error(r, "line too long");
		}
		if ((got = fill(r)) < 0)
			return n > 0 ? n : -1;
		if (got == 0 && !r->torn)
			break;
	}
	return n;
}

int
rv_fb_reader_connected(const struct rv_fb_reader *r)
{
	return r->writer;
}

uint64_t
rv_fb_reader_left(const struct rv_fb_reader *r)
{
	return r->left;
}

int
rv_fb_reader_eof(const struct rv_fb_reader *r)
{
	return !r->fifo && r->eof;
}

uint64_t
rv_fb_lines(const struct rv_fb_reader *r)
{
	return r->parsed;
}

void
rv_fb_reader_close(struct rv_fb_reader *r)
{
	if (!r)
		return;
	close(r->fd);
	free(r->path);
	free(r);
}
