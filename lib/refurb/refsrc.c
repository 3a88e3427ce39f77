/*
 * rv-refurbish's input (refsrc.h): one pass that indexes a regular file or
 * spills a pipe into a temporary file, then batched reads by position.
 * Frames are read raw with pread and decoded by a memory reader of
 * stream.h over the batch's buffer, so the one stream library still
 * validates every record read back.
 */
#include "refurb/refsrc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "stream/stream.h"

/*
 * Runs: a pread from the page cache costs about what copying 8 KiB does,
 * so a smaller gap is read through rather than split; runs stop at 8 MiB.
 * The kernel is told of runs of FADV_MIN bytes or more before any is read
 * (a cold disk then serves them in parallel); for smaller ones the advice
 * costs more than it saves, and a dataset of small samples is cached.
 */
#define RUN_GAP		((uint64_t)8 << 10)
#define RUN_MAX		((uint64_t)8 << 20)
#define FADV_MIN	((uint64_t)32 << 10)
#define SPILL_BUF	((size_t)1 << 20)	/* spill write buffer */

struct rv_refsrc {
	char *name;		/* the input's name, for messages */
	int fd;			/* the file read back: input or spill */
	int own_fd;		/* close fd at _free */
	int spilled;
	struct rv_refsrc_item *items;
	uint64_t n, cap;
	struct rv_meta meta;
};

/* A request sorted by offset: idx is its index in the caller's list. */
struct rv_refsrc_req {
	uint64_t off, len;
	size_t idx;
};

struct rv_refsrc_reader {
	const struct rv_refsrc *src;
	struct rv_reader *mem;	/* over membuf[0..memcap), or NULL */
	const unsigned char *membuf;
	size_t memcap;
};

/* ---------------------------------------------------------------- index */

static void
add_item(struct rv_refsrc *s, const struct rv_rec *rec, uint64_t off,
    uint64_t len, uint64_t recno)
{
	struct rv_refsrc_item *it;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 4096;
		s->items = xreallocarray(s->items, (size_t)s->cap,
		    sizeof(*s->items));
	}
	it = &s->items[s->n++];
	it->id = rec->id;
	it->off = off;
	it->len = len;
	it->recno = recno;
	it->label = rec->label;
	it->weight = rec->weight;
}

/* A sample the ops cannot take is refused now, before any output. */
static int
check_sample(const struct rv_refsrc *s, const struct rv_rec *rec,
    uint64_t recno)
{
	const char *why = NULL;
	char buf[128];

	if (rec->dtype != RV_DT_U8 && rec->dtype != RV_DT_JPEG &&
	    rec->dtype != RV_DT_PNG) {
		snprintf(buf, sizeof(buf), "sample of dtype '%s' has no "
		    "pixels", rv_dtype_name(rec->dtype));
		why = buf;
	} else if (rec->channels != 1 && rec->channels != 3) {
		snprintf(buf, sizeof(buf), "sample has %u channels; ops take "
		    "1 or 3", rec->channels);
		why = buf;
	} else if (rec->height == 0 || rec->width == 0) {
		snprintf(buf, sizeof(buf), "sample is %ux%u", rec->width,
		    rec->height);
		why = buf;
	}
	if (!why)
		return 0;
	return rv_seterr("'%s': record %llu (id %llu): %s", s->name,
	    (unsigned long long)recno, (unsigned long long)rec->id, why);
}

/* A spill file in dir, its name removed at once.  fd or -1. */
static int
spill_open(const char *dir)
{
	int fd = rv_anon_file(dir, "rv-refurbish");

	if (fd < 0)
		rv_preferr("spill file");
	return fd;
}

/* The spill state: frames go through a buffer to the file. */
struct spill {
	struct rv_enc *enc;
	struct rv_buf buf;
	uint64_t written;	/* bytes in the file */
	const char *dir;
};

static int
spill_flush(struct rv_refsrc *s, struct spill *sp)
{
	if (sp->buf.len == 0)
		return 0;
	if (rv_write_full(s->fd, sp->buf.data, sp->buf.len) < 0)
		return rv_preferr("spill file in '%s'", sp->dir);
	sp->written += sp->buf.len;
	sp->buf.len = 0;
	return 0;
}

/* Append rec as one frame; *off and *len get where it lands. */
static int
spill_put(struct rv_refsrc *s, struct spill *sp, const struct rv_rec *rec,
    uint64_t *off, uint64_t *len)
{
	size_t before = sp->buf.len;

	if (rv_enc_frame(sp->enc, rec, rec->payload, &sp->buf) < 0)
		return -1;
	*off = sp->written + before;
	*len = sp->buf.len - before;
	return sp->buf.len >= SPILL_BUF ? spill_flush(s, sp) : 0;
}

/*
 * After the dataset's epoch: metadata only.  Another epoch would be
 * samples refurbishing never uses: an error, not a silent drop.
 */
static int
read_rest(struct rv_refsrc *s, struct rv_reader *r)
{
	struct rv_rec rec;
	int got;

	while ((got = rv_reader_next(r, &rec)) == 1) {
		if (rec.kind == RV_META) {
			if (rv_meta_parse(&s->meta, rec.payload,
			    (size_t)rec.payload_len) < 0)
				return rv_preferr("'%s': record %llu at byte "
				    "%llu", s->name, (unsigned long long)
				    rv_reader_records(r) - 1,
				    (unsigned long long)rv_reader_offset(r));
			continue;
		}
		return rv_seterr("'%s': record %llu at byte %llu: a second "
		    "epoch (epoch %lu) after the dataset's: rv-refurbish "
		    "reads one epoch of samples and makes the epochs itself "
		    "(decode without --epochs)", rv_reader_name(r),
		    (unsigned long long)rv_reader_records(r) - 1,
		    (unsigned long long)rv_reader_offset(r),
		    (unsigned long)rec.epoch);
	}
	return got;
}

/*
 * Read the epoch (every epoch-end of it: rv_reader_next joins shards'),
 * index samples (spilling them if sp), merge metadata.
 */
static int
read_epoch(struct rv_refsrc *s, struct rv_reader *r, struct spill *sp)
{
	struct rv_rec rec;
	uint64_t recno, off, len;
	int got;

	while ((got = rv_reader_next(r, &rec)) == 1) {
		recno = rv_reader_records(r) - 1;
		switch (rec.kind) {
		case RV_EPOCH_END:
			return read_rest(s, r);
		case RV_BATCH:
			return rv_seterr("'%s': record %llu is a batch; "
			    "refurbish before rv-batch", s->name,
			    (unsigned long long)recno);
		case RV_META:
			if (rv_meta_parse(&s->meta, rec.payload,
			    (size_t)rec.payload_len) < 0)
				return rv_preferr("'%s': record %llu at byte "
				    "%llu", s->name, (unsigned long long)recno,
				    (unsigned long long)rv_reader_offset(r));
			break;
		case RV_SAMPLE:
			if (check_sample(s, &rec, recno) < 0)
				return -1;
			if (s->n == UINT32_MAX)
				return rv_seterr("'%s': more than %u samples",
				    s->name, UINT32_MAX - 1);
			if (sp) {
				if (spill_put(s, sp, &rec, &off, &len) < 0)
					return -1;
			} else {
				off = rv_reader_offset(r);
				len = rv_reader_bytes(r) - off;
			}
			add_item(s, &rec, off, len, recno);
			break;
		default:
			break;	/* kinds of later versions */
		}
	}
	if (got == 0 && rv_reader_check_end(r) < 0)
		return -1;
	return got;
}

struct rv_refsrc *
rv_refsrc_open(const char *path, const char *spill_dir)
{
	struct rv_refsrc *s = xcalloc(1, sizeof(*s));
	struct rv_reader *r = NULL;
	struct spill sp = { 0 };
	struct stat st;
	int infd, ok = 0;

	rv_meta_init(&s->meta);
	s->fd = -1;
	if (strcmp(path, "-") == 0) {
		s->name = xstrdup("<stdin>");
		infd = STDIN_FILENO;
	} else {
		s->name = xstrdup(path);
		if ((infd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
			rv_seterr("'%s':", path);
			goto out;
		}
		(void)fcntl(infd, F_SETFD, FD_CLOEXEC);
	}
	if (fstat(infd, &st) < 0) {
		rv_seterr("'%s':", s->name);
		goto out_in;
	}
	if (S_ISDIR(st.st_mode)) {
		rv_seterr("'%s': is a directory", s->name);
		goto out_in;
	}
	if (S_ISREG(st.st_mode)) {
		/* read where it lies: the index holds absolute offsets */
		s->fd = infd;
		s->own_fd = infd != STDIN_FILENO;
	} else {
		if (!spill_dir || !*spill_dir)
			spill_dir = getenv("TMPDIR");
		if (!spill_dir || !*spill_dir)
			spill_dir = "/tmp";
		if ((s->fd = spill_open(spill_dir)) < 0)
			goto out_in;
		s->own_fd = 1;
		s->spilled = 1;
		sp.dir = spill_dir;
		if ((sp.enc = rv_enc_new(RV_REFSRC_SPILL_LEVEL)) == NULL)
			goto out_in;
	}
	if ((r = rv_reader_fdopen(infd, s->name)) == NULL)
		goto out_in;
	if (read_epoch(s, r, s->spilled ? &sp : NULL) < 0)
		goto out_in;
	if (s->spilled && spill_flush(s, &sp) < 0)
		goto out_in;
	ok = 1;
out_in:
	rv_reader_close(r);
	if (infd != STDIN_FILENO && infd != s->fd)
		close(infd);
out:
	rv_enc_free(sp.enc);
	rv_buf_release(&sp.buf);
	if (!ok) {
		rv_refsrc_free(s);
		return NULL;
	}
	return s;
}

void
rv_refsrc_free(struct rv_refsrc *s)
{
	if (!s)
		return;
	if (s->own_fd && s->fd >= 0)
		close(s->fd);
	free(s->items);
	rv_meta_release(&s->meta);
	free(s->name);
	free(s);
}

uint64_t
rv_refsrc_count(const struct rv_refsrc *s)
{
	return s->n;
}

const struct rv_refsrc_item *
rv_refsrc_item(const struct rv_refsrc *s, uint64_t pos)
{
	return &s->items[pos];
}

const struct rv_meta *
rv_refsrc_meta(const struct rv_refsrc *s)
{
	return &s->meta;
}

const char *
rv_refsrc_name(const struct rv_refsrc *s)
{
	return s->name;
}

int
rv_refsrc_spilled(const struct rv_refsrc *s)
{
	return s->spilled;
}

/* ---------------------------------------------------------------- batches */

void
rv_refsrc_batch_init(struct rv_refsrc_batch *b)
{
	memset(b, 0, sizeof(*b));
}

void
rv_refsrc_batch_release(struct rv_refsrc_batch *b)
{
	free(b->buf);
	free(b->req);
	free(b->pos);
	free(b->at);
	memset(b, 0, sizeof(*b));
}

/* Offsets of distinct positions are distinct: the order is total. */
static int
req_less(const struct rv_refsrc_req *x, const struct rv_refsrc_req *y)
{
	return x->off < y->off || (x->off == y->off && x->idx < y->idx);
}

static void
sift_down(struct rv_refsrc_req *r, size_t i, size_t n)
{
	struct rv_refsrc_req t = r[i];
	size_t c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && req_less(&r[c], &r[c + 1]))
			c++;
		if (!req_less(&t, &r[c]))
			break;
		r[i] = r[c];
		i = c;
	}
	r[i] = t;
}

/*
 * Heapsort by offset: glibc's qsort may malloc a merge buffer on every
 * call, and a chunk's load must allocate nothing in steady state.
 */
static void
sort_reqs(struct rv_refsrc_req *r, size_t n)
{
	struct rv_refsrc_req t;
	size_t i;

	for (i = n / 2; i-- > 0;)
		sift_down(r, i, n);
	for (i = n; i-- > 1;) {
		t = r[0];
		r[0] = r[i];
		r[i] = t;
		sift_down(r, 0, i);
	}
}

/*
 * The run of sorted requests from r[i]: the next ones that start less than
 * RUN_GAP after its end while it spans at most RUN_MAX bytes.  Sets
 * [*start, *end) and returns the index after the run.
 */
static size_t
run_end(const struct rv_refsrc_req *r, size_t i, size_t k, uint64_t *start,
    uint64_t *end)
{
	uint64_t e = r[i].off + r[i].len;
	size_t j;

	for (j = i + 1; j < k; j++) {
		uint64_t je = r[j].off + r[j].len;
		if (r[j].off >= e + RUN_GAP || je - r[i].off > RUN_MAX)
			break;
		if (je > e)
			e = je;
	}
	*start = r[i].off;
	*end = e;
	return j;
}

/* Room for k requests (contents need not survive). */
static void
batch_reserve(struct rv_refsrc_batch *b, size_t k)
{
	if (k <= b->capn)
		return;
	b->capn = k < 256 ? 256 : k;
	free(b->req);
	free(b->pos);
	free(b->at);
	b->req = xreallocarray(NULL, b->capn, sizeof(*b->req));
	b->pos = xreallocarray(NULL, b->capn, sizeof(*b->pos));
	b->at = xreallocarray(NULL, b->capn, sizeof(*b->at));
}

/*
 * Room for n bytes of runs.  Zeroed when made, so a reader over the whole
 * buffer never meets uninitialised bytes, even past a corrupt frame.
 */
static void
buf_reserve(struct rv_refsrc_batch *b, uint64_t n)
{
	size_t cap;

	if (n <= b->cap)
		return;
	if (n > SIZE_MAX / 2)
		(void)xreallocarray(NULL, SIZE_MAX, 2);	/* out of memory */
	cap = b->cap ? b->cap : (size_t)256 << 10;
	while (cap < n)
		cap *= 2;
	free(b->buf);
	b->buf = xcalloc(1, cap);
	b->cap = cap;
}

int
rv_refsrc_load(const struct rv_refsrc *s, const uint64_t *pos, size_t k,
    struct rv_refsrc_batch *b)
{
	uint64_t start, end, total = 0, at = 0;
	size_t i, j, next, nruns = 0;

	batch_reserve(b, k);
	b->n = k;
	for (i = 0; i < k; i++) {
		const struct rv_refsrc_item *it = &s->items[pos[i]];
		b->pos[i] = pos[i];
		b->req[i] = (struct rv_refsrc_req){ it->off, it->len, i };
	}
	sort_reqs(b->req, k);
	for (j = 0; j < k; j = next) {
		next = run_end(b->req, j, k, &start, &end);
		total += end - start;
		nruns++;
	}
	buf_reserve(b, total);
	for (j = 0; nruns > 1 && j < k; j = next) {
		next = run_end(b->req, j, k, &start, &end);
		if (end - start >= FADV_MIN)
			(void)posix_fadvise(s->fd, (off_t)start,
			    (off_t)(end - start), POSIX_FADV_WILLNEED);
	}
	for (j = 0; j < k; j = next) {
		next = run_end(b->req, j, k, &start, &end);
		if (rv_pread_full(s->fd, b->buf + at, (size_t)(end - start),
		    (off_t)start) < 0)
			return rv_preferr("'%s'%s", s->name,
			    s->spilled ? " (spill file)" : "");
		b->preads++;
		b->bytes += end - start;
		for (i = j; i < next; i++)
			b->at[b->req[i].idx] = at + (b->req[i].off - start);
		at += end - start;
	}
	return 0;
}

/* ---------------------------------------------------------------- readers */

struct rv_refsrc_reader *
rv_refsrc_reader_new(const struct rv_refsrc *s)
{
	struct rv_refsrc_reader *rd = xcalloc(1, sizeof(*rd));

	rd->src = s;
	return rd;
}

void
rv_refsrc_reader_free(struct rv_refsrc_reader *rd)
{
	if (!rd)
		return;
	rv_reader_close(rd->mem);
	free(rd);
}

/*
 * The memory reader's message names the offset in the batch's buffer:
 * say the file's instead, keeping the reason after "at byte B: ".
 */
static int
decode_err(const struct rv_refsrc_reader *rd,
    const struct rv_refsrc_item *it, const char *why)
{
	char reason[512];
	const char *m = rv_errmsg(), *p;

	if (!why) {
		p = strstr(m, " at byte ");
		p = p ? strstr(p, ": ") : NULL;
		why = p ? p + 2 : m;
	}
	snprintf(reason, sizeof(reason), "%s", why);
	if (rd->src->spilled)
		return rv_seterr("'%s': record %llu (spill file): %s",
		    rd->src->name, (unsigned long long)it->recno, reason);
	return rv_seterr("'%s': record %llu at byte %llu: %s", rd->src->name,
	    (unsigned long long)it->recno, (unsigned long long)it->off,
	    reason);
}

int
rv_refsrc_decode(struct rv_refsrc_reader *rd,
    const struct rv_refsrc_batch *b, size_t i, struct rv_rec *rec)
{
	const struct rv_refsrc_item *it = &rd->src->items[b->pos[i]];
	int got;

	/* a memory reader borrows its buffer: follow the batch's */
	if (!rd->mem || rd->membuf != b->buf || rd->memcap != b->cap) {
		rv_reader_close(rd->mem);
		rd->membuf = b->buf;
		rd->memcap = b->cap;
		if ((rd->mem = rv_reader_mem(b->buf, b->cap,
		    rd->src->name)) == NULL)
			return -1;
	}
	if (rv_reader_seek(rd->mem, b->at[i], it->recno) < 0)
		return -1;
	got = rv_reader_next(rd->mem, rec);
	if (got < 0)
		return decode_err(rd, it, NULL);
	if (got == 0 || rec->kind != RV_SAMPLE || rec->id != it->id ||
	    rv_reader_bytes(rd->mem) - b->at[i] != it->len)
		return decode_err(rd, it, "not the sample indexed there: the "
		    "input changed while it was read");
	return 0;
}

void
rv_refsrc_take(struct rv_refsrc_reader *rd, struct rv_rec *rec,
    struct rv_buf *dst)
{
	rv_reader_take(rd->mem, rec, dst);
}

int
rv_refsrc_apply(struct rv_refsrc_reader *rd, struct rv_coder *k,
    struct rv_aug_ctx *ctx, const struct rv_spec *spec, struct rv_rec *rec,
    uint64_t seed, uint32_t stage, uint32_t epoch, uint64_t id)
{
	if (rec->dtype == RV_DT_U8) {
		struct rv_buf b = { k->img.data, 0, k->img.cap };

		rv_refsrc_take(rd, rec, &b);
		k->img.data = b.data;
		k->img.cap = b.cap;
		k->img.h = rec->height;
		k->img.w = rec->width;
		k->img.c = rec->channels;
		return rv_spec_apply(spec, &k->img, ctx, seed, stage, epoch, id);
	}
	return rv_spec_decode_apply(spec, k->codec, rec, rec->payload,
	    (size_t)rec->payload_len, &k->img, ctx, seed, stage, epoch,
	    id) < 0 ? -1 : 0;
}

void
rv_refsrc_rec(struct rv_rec *out, const struct rv_img *img,
    const struct rv_refsrc_item *src, uint16_t flags, uint32_t epoch,
    float weight, float score, uint32_t uses)
{
	rv_rec_init(out, RV_SAMPLE);
	out->dtype = RV_DT_U8;
	out->flags = flags;
	out->epoch = epoch;
	out->id = src->id;
	out->label = src->label;
	out->weight = weight;
	out->score = score;
	out->uses = uses;
	out->height = img->h;
	out->width = img->w;
	out->channels = img->c;
	out->payload_len = (uint64_t)img->h * img->w * img->c;
}
