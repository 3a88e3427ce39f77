/*
 * The stream contract of DESIGN.md section 2, read side
 * (lib/stream/stream_read.c): round trips over a file, a pipe and memory;
 * concatenation; epochs; skippable frames; every truncation and random
 * corruption of a small stream; hostile headers, and samples and metadata
 * records over their caps, refused before allocation; frames without a
 * content size; seeking; no allocation per record in steady state.  The
 * write side: t_stream_write.c; their shared fixture: stream_fix.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

int usleep(useconds_t);

#include "base/err.h"
#include "base/io.h"
#include "base/rng.h"
#include "stream/meta.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "stream_fix.h"
#include "unit.h"

/*
 * Count allocations by interposing malloc (not under AddressSanitizer,
 * which owns malloc itself).  Zstd allocates through malloc/calloc too, so
 * this sees every allocation the stream code causes.
 */
#if defined(__SANITIZE_ADDRESS__)
#define COUNT_MALLOC 0
#else
#define COUNT_MALLOC 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static size_t nalloc, maxalloc;

static void
note(size_t n)
{
	nalloc++;
	if (n > maxalloc)
		maxalloc = n;
}

void *
malloc(size_t n)
{
	note(n);
	return __libc_malloc(n);
}

void *
calloc(size_t n, size_t s)
{
	note(n * s);
	return __libc_calloc(n, s);
}

void *
realloc(void *p, size_t n)
{
	note(n);
	return __libc_realloc(p, n);
}

void
free(void *p)
{
	__libc_free(p);
}
#endif

static void
alloc_reset(void)
{
#if COUNT_MALLOC
	nalloc = maxalloc = 0;
#endif
}

static void
t_roundtrip_mem(void)
{
	struct fixture f;
	struct rv_reader *r;
	struct rv_rec rec;
	int nok;

	small_fixture(&f, 3);
	r = as_raw(rv_reader_mem(f.s.data, f.s.len, NAME));
	EXPECT_EQ(check_reader(r, &f, &nok, 0), 0);
	EXPECT_EQ(nok, nrecords(&f));
	EXPECT_EQ(rv_reader_bytes(r), f.s.len);
	/* the end stays the end */
	EXPECT_EQ(rv_reader_next(r, &rec), 0);
	EXPECT_STR(rv_reader_name(r), NAME);
	rv_reader_close(r);
	rv_reader_close(NULL);
	fixture_release(&f);
}

/* Write with rv_writer to a file, read it by path and by fd. */
static void
t_roundtrip_file(void)
{
	struct fixture f;
	struct rv_writer *w;
	struct rv_reader *r;
	char *path = tmppath("rt.rvs");
	int fd, i, nok;
	unsigned char *got;
	size_t glen;

	small_fixture(&f, 1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	w = rv_writer_new(fd, path, 1);
	for (i = 0; i < f.n; i++) {
		const struct item *it = &f.it[i];
		if (it->skip)
			continue;
		EXPECT_EQ(rv_writer_put(w, &it->rec, it->payload), 0);
	}
	EXPECT_EQ(rv_writer_records(w), nrecords(&f));
	EXPECT_EQ(rv_writer_close(w), 0);
	close(fd);

	/* the writer's bytes are the encoder's bytes, minus skippables */
	EXPECT_EQ(rv_slurp(path, &got, &glen), 0);
	{
		struct rv_buf want = { 0 };
		for (i = 0; i < f.n; i++)
			if (!f.it[i].skip)
				rv_buf_append(&want, f.s.data + f.it[i].start,
				    f.it[i].end - f.it[i].start);
		EXPECT_EQ(glen, want.len);
		EXPECT(glen == want.len && memcmp(got, want.data, glen) == 0);
		rv_buf_release(&want);
	}
	free(got);

	/* by path; and by fd, with the stream starting mid-file */
	write_file(path, f.s.data, f.s.len);
	r = as_raw(rv_reader_open(path));
	EXPECT(r != NULL);
	EXPECT_EQ(check_reader(r, &f, &nok, 0), 0);
	EXPECT_EQ(nok, nrecords(&f));
	EXPECT_EQ(rv_reader_seekable(r), 1);
	rv_reader_close(r);

	fd = open(path, O_RDWR | O_TRUNC);
	EXPECT(write(fd, "junk!", 5) == 5);
	EXPECT(write(fd, f.s.data, f.s.len) == (ssize_t)f.s.len);
	EXPECT(lseek(fd, 5, SEEK_SET) == 5);
	r = as_raw(rv_reader_fdopen(fd, "fd"));
	EXPECT_EQ(check_reader(r, &f, &nok, 5), 0);
	EXPECT_EQ(nok, nrecords(&f));
	rv_reader_close(r);
	/* the reader does not close an fd it was given */
	EXPECT(fcntl(fd, F_GETFD) != -1);
	close(fd);

	r = as_raw(rv_reader_open(tmpdir));
	EXPECT(r == NULL);
	EXPECT(strstr(rv_errmsg(), "': is a directory") != NULL);
	r = as_raw(rv_reader_open("/nonexistent/x.rvs"));
	EXPECT(r == NULL);
	EXPECT_STR(rv_errmsg(), "'/nonexistent/x.rvs': No such file or "
	    "directory");
	unlink(path);
	free(path);
	fixture_release(&f);
}

/*
 * A pipe, fed by a child that writes the stream in tiny pieces, so that
 * every read returns a few bytes and every buffer boundary of the reader
 * is crossed; then a long stream (several MiB) written by rv_writer.
 */
static void
t_pipe(void)
{
	struct fixture f;
	struct rv_reader *r;
	int p[2], nok, st;
	pid_t pid;

	small_fixture(&f, 1);
	EXPECT(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		size_t off = 0, k = 0;
		close(p[0]);
		while (off < f.s.len) {
			size_t n = 1 + (k++ % 7);
			if (n > f.s.len - off)
				n = f.s.len - off;
			if (write(p[1], f.s.data + off, n) != (ssize_t)n)
				_exit(1);
			off += n;
			if (k % 16 == 0)
				usleep(100);
		}
		_exit(0);
	}
	close(p[1]);
	r = as_raw(rv_reader_fdopen(p[0], "<pipe>"));
	EXPECT_EQ(rv_reader_seekable(r), 0);
	EXPECT_EQ(check_reader(r, &f, &nok, 0), 0);
	EXPECT_EQ(nok, nrecords(&f));
	EXPECT_EQ(rv_reader_seek(r, 0, 0), -1);
	EXPECT_STR(rv_errmsg(), "'<pipe>': cannot seek in a pipe");
	rv_reader_close(r);
	close(p[0]);
	EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0);

	/* 3000 records of 28x28 plus big ones: several reader buffers */
	EXPECT(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		struct rv_writer *w;
		struct rv_rec rec;
		unsigned char *px = xmalloc(224 * 224 * 3);
		uint64_t i;
		close(p[0]);
		w = rv_writer_new(p[1], "<pipe>", -1);
		for (i = 0; i < 3000; i++) {
			int big = i % 500 == 7;
			rv_rec_init(&rec, RV_SAMPLE);
			rec.dtype = RV_DT_U8;
			rec.id = i;
			rec.height = rec.width = big ? 224 : 28;
			rec.channels = big ? 3 : 1;
			rec.payload_len = (uint64_t)rec.height * rec.width *
			    rec.channels;
			fill_bytes(px, (size_t)rec.payload_len, i);
			if (rv_writer_put(w, &rec, px) < 0)
				_exit(1);
		}
		free(px);
		_exit(rv_writer_close(w) == 0 ? 0 : 1);
	}
	close(p[1]);
	r = as_raw(rv_reader_fdopen(p[0], "<pipe>"));
	{
		struct rv_rec rec;
		unsigned char *px = xmalloc(224 * 224 * 3);
		uint64_t i = 0;
		int rc, bad = 0;
		while ((rc = rv_reader_next(r, &rec)) == 1) {
			fill_bytes(px, (size_t)rec.payload_len, i);
			if (rec.id != i || memcmp(px, rec.payload,
			    (size_t)rec.payload_len) != 0)
				bad++;
			i++;
		}
		EXPECT_EQ(rc, 0);
		EXPECT_EQ(i, 3000);
		EXPECT_EQ(bad, 0);
		free(px);
	}
	rv_reader_close(r);
	close(p[0]);
	EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0);
	fixture_release(&f);
}

/* cat a b is a stream: records of a, then records of b. */
static void
t_concat(void)
{
	struct fixture a, b;
	struct rv_buf s = { 0 };
	struct rv_reader *r;
	struct rv_rec rec;
	int i, j, n = 0, bad = 0;

	small_fixture(&a, 1);
	small_fixture(&b, 5);
	rv_buf_append(&s, a.s.data, a.s.len);
	rv_buf_append(&s, b.s.data, b.s.len);
	r = as_raw(rv_reader_mem(s.data, s.len, NAME));
	for (j = 0; j < 2; j++) {
		struct fixture *f = j ? &b : &a;
		for (i = 0; i < f->n; i++) {
			if (f->it[i].skip)
				continue;
			if (rv_reader_next(r, &rec) != 1 ||
			    !same_rec(&rec, &f->it[i]) ||
			    rv_reader_offset(r) != (j ? a.s.len : 0) +
			    f->it[i].start)
				bad++;
			n++;
		}
	}
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(rv_reader_next(r, &rec), 0);
	EXPECT_EQ(rv_reader_records(r), n);
	EXPECT_EQ(n, nrecords(&a) + nrecords(&b));
	rv_reader_close(r);
	rv_buf_release(&s);
	fixture_release(&a);
	fixture_release(&b);
}

/* One record of the epoch tests into s: kind 'm' meta, 's' a sample,
 * 'e' an epoch-end of count n. */
static void
put_rec(struct rv_enc *e, struct rv_buf *s, int kind, uint32_t epoch,
    uint32_t n)
{
	static const unsigned char px[4] = { 1, 2, 3, 4 };
	static const char meta[] = "source=t\n";
	struct rv_rec r;

	rv_rec_init(&r, kind == 'm' ? RV_META : kind == 's' ? RV_SAMPLE :
	    RV_EPOCH_END);
	r.epoch = epoch;
	if (kind == 's') {
		r.dtype = RV_DT_U8;
		r.height = r.width = 2;
		r.channels = 1;
		r.payload_len = 4;
	} else if (kind == 'm') {
		r.payload_len = sizeof(meta) - 1;
	} else {
		r.count = n;
	}
	EXPECT(rv_enc_frame(e, &r, kind == 's' ? (const void *)px :
	    kind == 'm' ? (const void *)meta : NULL, s) == 0);
}

/* What the joining reader returns, one letter a record ("e0:5/3": the end
 * of epoch 0, count 5, from 3 epoch-end records), then "." or "!". */
static void
epochs_seen(const struct rv_buf *s, char *out, size_t cap)
{
	struct rv_reader *r = rv_reader_mem(s->data, s->len, NAME);
	struct rv_rec rec;
	size_t len = 0;
	int got;

	out[0] = '\0';
	while ((got = rv_reader_next(r, &rec)) == 1 && len + 32 < cap)
		len += (size_t)(rec.kind == RV_EPOCH_END ?
		    snprintf(out + len, cap - len, "e%u:%u/%u ", rec.epoch,
		    rec.count, (unsigned)rv_reader_merged(r)) :
		    snprintf(out + len, cap - len, "%c%u ",
		    rec.kind == RV_META ? 'm' : 's',
		    rec.kind == RV_META ? 0 : rec.epoch));
	snprintf(out + len, cap - len, "%s", got == 0 ? "." : "!");
	rv_reader_close(r);
}

/*
 * Epochs (rv-stream(5)): consecutive epoch-ends of one number are one
 * epoch, whatever metadata and empty shards lie between; another number
 * between keeps them apart; the end of input ends the held one.  The
 * records' index and offset are those of the record returned.
 */
static void
t_epochs(void)
{
	static const char *const cases[][2] = {
		/* cat of shards: one epoch, metadata first */
		{ "m0 s0 s0 e0:2 m0 s0 s0 s0 e0:3 e0:0 m0 s1 e1:1 s0 e0:1",
		  "m0 s0 s0 m0 s0 s0 s0 m0 e0:5/3 s1 e1:1/1 s0 e0:1/1 ." },
		/* two runs of epochs 0 and 1 */
		{ "s0 e0:1 s1 e1:1 s0 e0:1 s1 e1:1",
		  "s0 e0:1/1 s1 e1:1/1 s0 e0:1/1 s1 e1:1/1 ." },
		/* metadata after the last end comes before it */
		{ "s0 e0:1 m0", "s0 m0 e0:1/1 ." },
		/* empty epochs join too */
		{ "e3:0 e3:0 e4:0", "e3:0/2 e4:0/1 ." },
		/* a sample of another epoch with no end between */
		{ "s0 s1 e1:1", "s0 !" },
		/* an end of another epoch than its samples */
		{ "s0 e1:1", "s0 !" },
	};
	char got[512];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rv_enc *e = rv_enc_new(0);
		struct rv_buf s = { 0 };
		const char *p = cases[i][0];

		while (*p) {
			unsigned ep = 0, n = 0;
			int kind = *p++;

			ep = (unsigned)strtoul(p, (char **)&p, 10);
			if (*p == ':')
				n = (unsigned)strtoul(p + 1, (char **)&p, 10);
			put_rec(e, &s, kind, ep, n);
			while (*p == ' ')
				p++;
		}
		epochs_seen(&s, got, sizeof(got));
		EXPECT_STR(got, cases[i][1]);
		rv_enc_free(e);
		rv_buf_release(&s);
	}
	/* the message names the record and its byte */
	{
		struct rv_enc *e = rv_enc_new(0);
		struct rv_buf s = { 0 };
		struct rv_reader *r;
		struct rv_rec rec;
		size_t off;
		char want[160];

		put_rec(e, &s, 's', 0, 0);
		off = s.len;
		put_rec(e, &s, 's', 1, 0);
		r = rv_reader_mem(s.data, s.len, NAME);
		EXPECT_EQ(rv_reader_next(r, &rec), 1);
		EXPECT_EQ(rv_reader_next(r, &rec), -1);
		snprintf(want, sizeof(want), "'%s': record 1 at byte %zu: "
		    "sample of epoch 1 after samples of epoch 0 with no "
		    "epoch-end between them", NAME, off);
		EXPECT_STR(rv_errmsg(), want);
		rv_reader_close(r);
		/* and the joined end is the last end record's */
		s.len = 0;
		put_rec(e, &s, 'e', 0, 1);
		off = s.len;
		put_rec(e, &s, 'e', 0, 2);
		put_rec(e, &s, 'm', 0, 0);
		r = rv_reader_mem(s.data, s.len, NAME);
		EXPECT_EQ(rv_reader_next(r, &rec), 1);
		EXPECT_EQ(rec.kind, RV_META);
		EXPECT_EQ(rv_reader_records(r), 3);
		EXPECT_EQ(rv_reader_next(r, &rec), 1);
		EXPECT_EQ(rec.count, 3);
		EXPECT_EQ(rv_reader_records(r), 2);
		EXPECT_EQ(rv_reader_offset(r), off);
		EXPECT_EQ(rv_reader_next(r, &rec), 0);
		rv_reader_close(r);
		rv_enc_free(e);
		rv_buf_release(&s);
	}
}

/*
 * Skippable frames of every magic (0x184D2A50 to 5F), of size 0, small,
 * and bigger than the reader's 1 MiB input buffer, at the start, between
 * records and at the end, over memory and over a file.
 */
static void
t_skippable(void)
{
	struct fixture f;
	struct item *it;
	struct rv_reader *r;
	char *path = tmppath("skip.rvs");
	int i, nok;

	memset(&f, 0, sizeof(f));
	for (i = 0; i < 14; i++) {
		if (i % 2 == 0) {
			add_skip(&f, i == 6 ? (3u << 20) + 11 :
			    (size_t)i * 3);
		} else {
			it = add_rec(&f, RV_SAMPLE, RV_DT_JPEG);
			it->rec.id = (uint64_t)i;
			set_payload(it, 50 + (size_t)i, (uint64_t)i);
		}
	}
	add_skip(&f, 1);
	encode(&f, 1);
	r = as_raw(rv_reader_mem(f.s.data, f.s.len, NAME));
	EXPECT_EQ(check_reader(r, &f, &nok, 0), 0);
	EXPECT_EQ(nok, 7);
	rv_reader_close(r);

	write_file(path, f.s.data, f.s.len);
	r = as_raw(rv_reader_open(path));
	EXPECT_EQ(check_reader(r, &f, &nok, 0), 0);
	EXPECT_EQ(nok, 7);
	rv_reader_close(r);

	/* a stream of nothing but skippable frames is an empty stream */
	r = as_raw(rv_reader_mem(f.s.data, f.it[0].end, NAME));
	EXPECT_EQ(check_reader(r, &f, &nok, 0), 0);
	EXPECT_EQ(nok, 0);
	rv_reader_close(r);
	unlink(path);
	free(path);
	fixture_release(&f);
}

/* The message a reader must give for a stream cut at byte len. */
static void
expect_cut(const struct fixture *f, size_t len, char *msg, size_t msz,
    int *nrec, int *clean)
{
	int i, n = 0;

	*clean = 1;
	msg[0] = '\0';
	for (i = 0; i < f->n; i++) {
		const struct item *it = &f->it[i];
		if (it->end <= len) {
			n += !it->skip;
			continue;
		}
		if (it->start < len) {
			*clean = 0;
			snprintf(msg, msz, "'%s': record %d at byte %zu: %s",
			    NAME, n, it->start, it->skip && len - it->start
			    >= 4 ? "truncated skippable frame" :
			    "truncated frame");
		}
		break;
	}
	*nrec = n;
}

/*
 * Every prefix of the small stream: a clean end exactly at frame
 * boundaries, else "record N at byte B: truncated frame" with the N and B
 * of the frame that was cut; the records before it intact.  Over memory
 * and over a file.
 */
static void
t_truncation(void)
{
	struct fixture f;
	char *path = tmppath("cut.rvs");
	char want[256];
	size_t len;
	int bad = 0, clean_seen = 0, fd;

	small_fixture(&f, 1);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	for (len = 0; len <= f.s.len; len++) {
		int pass, nrec, clean, nok, rc;
		expect_cut(&f, len, want, sizeof(want), &nrec, &clean);
		clean_seen += clean;
		for (pass = 0; pass < 2; pass++) {
			struct rv_reader *r;
			if (pass == 0) {
				r = as_raw(rv_reader_mem(f.s.data, len, NAME));
			} else {
				EXPECT(ftruncate(fd, 0) == 0);
				EXPECT(pwrite(fd, f.s.data, len, 0) ==
				    (ssize_t)len);
				EXPECT(lseek(fd, 0, SEEK_SET) == 0);
				r = as_raw(rv_reader_fdopen(fd, NAME));
			}
			rc = check_reader(r, &f, &nok, 0);
			if (nok != nrec || rc != (clean ? 0 : -1) ||
			    (!clean && strcmp(rv_errmsg(), want) != 0)) {
				if (bad++ < 5)
					printf("# cut at %zu (pass %d): rc %d "
					    "after %d records, '%s', want "
					    "%d after %d, '%s'\n", len, pass,
					    rc, nok, rc < 0 ? rv_errmsg() : "",
					    clean ? 0 : -1, nrec, want);
			}
			/* a failed reader stays failed */
			if (rc < 0) {
				struct rv_rec rec;
				if (rv_reader_next(r, &rec) != -1)
					bad++;
			}
			rv_reader_close(r);
		}
	}
	EXPECT_EQ(bad, 0);
	/* 0, and the end of every frame */
	EXPECT_EQ(clean_seen, f.n + 1);
	close(fd);
	unlink(path);
	free(path);
	fixture_release(&f);
}

/* Parse "'t': record N at byte B: reason"; 0 if it has that form. */
static int
parse_msg(const char *m, unsigned long long *n, unsigned long long *b)
{
	int end = 0;

	if (sscanf(m, "'" NAME "': record %llu at byte %llu: %n", n, b,
	    &end) != 2 || end == 0 || m[end] == '\0')
		return -1;
	return 0;
}

/*
 * Seeded random corruption: flip a bit or overwrite a byte (1 to 3 of
 * them) anywhere.  The reader must never crash, must return only records
 * that are exactly right, and end cleanly only with all of them; errors
 * name a record and a byte inside the stream.
 */
static void
t_corruption(void)
{
	struct fixture f;
	struct rv_rng g;
	unsigned char *copy;
	int iter, bad = 0, errors = 0, total = 3000;

	small_fixture(&f, 1);
	copy = xmalloc(f.s.len);
	rv_rng_init(&g, 42, 100, 0, 0, 0);
	for (iter = 0; iter < total; iter++) {
		struct rv_reader *r;
		int k, nflip = 1 + (int)rv_rng_below(&g, 3), nok, rc;
		unsigned long long n, b;

		memcpy(copy, f.s.data, f.s.len);
		for (k = 0; k < nflip; k++) {
			size_t at = (size_t)rv_rng_below(&g, f.s.len);
			if (rv_rng_below(&g, 2))
				copy[at] ^= (unsigned char)(1u <<
				    rv_rng_below(&g, 8));
			else
				copy[at] = (unsigned char)rv_rng_u32(&g);
		}
		r = as_raw(rv_reader_mem(copy, f.s.len, NAME));
		rc = check_reader(r, &f, &nok, 0);
		if (rc == -1) {
			errors++;
			if (parse_msg(rv_errmsg(), &n, &b) < 0 ||
			    n != (unsigned long long)nok || b >= f.s.len) {
				if (bad++ < 5)
					printf("# flip %d: bad message '%s' "
					    "after %d records\n", iter,
					    rv_errmsg(), nok);
			}
		} else if (rc != 0 || nok != nrecords(&f)) {
			if (bad++ < 5)
				printf("# flip %d: rc %d after %d records\n",
				    iter, rc, nok);
		}
		rv_reader_close(r);
	}
	printf("# %d corruptions, %d detected (the rest hit skippable "
	    "frames or bytes zstd ignores)\n", total, errors);
	EXPECT_EQ(bad, 0);
	EXPECT(errors > total * 3 / 4);
	free(copy);
	fixture_release(&f);
}

/* Frame bytes with (known 1) or without (0) a content size. */
static void
zframe(struct rv_buf *out, const void *p, size_t n, int known)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_inBuffer in = { p, n, 0 };
	ZSTD_outBuffer ob;
	size_t ret;

	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
	if (known)
		ZSTD_CCtx_setPledgedSrcSize(c, n);
	rv_buf_reserve(out, ZSTD_compressBound(n) + 64);
	ob = (ZSTD_outBuffer){ out->data, out->cap, out->len };
	/* continue, then end with nothing: zstd cannot know the size */
	do {
		ret = ZSTD_compressStream2(c, &ob, &in, known ? ZSTD_e_end :
		    ZSTD_e_continue);
	} while (!ZSTD_isError(ret) && (in.pos < in.size || (known &&
	    ret)));
	if (!known) {
		ZSTD_inBuffer none = { NULL, 0, 0 };
		do
			ret = ZSTD_compressStream2(c, &ob, &none, ZSTD_e_end);
		while (!ZSTD_isError(ret) && ret);
	}
	EXPECT(!ZSTD_isError(ret));
	out->len = ob.pos;
	ZSTD_freeCCtx(c);
}

/*
 * A frame made by hand (RFC 8878): a 4-byte content size field that says
 * fcs, no checksum, and the n bytes of p in one raw block.  Lets a test
 * write a frame header that lies.
 */
static void
craft_frame(struct rv_buf *out, const void *p, size_t n, uint64_t fcs)
{
	unsigned char h[14];

	rv_put32(h, 0xFD2FB528u);
	h[4] = 0x80;		/* 4-byte content size, no checksum */
	h[5] = 10 << 3;		/* window 1 MiB */
	rv_put32(h + 6, (uint32_t)fcs);
	rv_put32(h + 10, (uint32_t)(n << 3 | 1));	/* last, raw, n */
	rv_buf_append(out, h, 13);
	rv_buf_append(out, p, n);
}

/* A raw record: header (with fields patched by the caller) + payload. */
static void
raw_rec(struct rv_buf *out, const struct rv_rec *r, const void *payload,
    size_t n)
{
	unsigned char h[RV_HDR_LEN];

	rv_rec_encode(r, h);
	rv_buf_append(out, h, sizeof(h));
	rv_buf_append(out, payload, n);
}

/* Read s; expect failure at record 0, byte 0 with this reason. */
static int
read_fails(const struct rv_buf *s, const char *reason)
{
	struct rv_reader *r = as_raw(rv_reader_mem(s->data, s->len, NAME));
	struct rv_rec rec;
	char want[512];
	int rc, ok;

	rc = rv_reader_next(r, &rec);
	snprintf(want, sizeof(want), "'%s': record 0 at byte 0: %s", NAME,
	    reason);
	ok = rc == -1 && strcmp(rv_errmsg(), want) == 0;
	if (!ok)
		printf("# rc %d, '%s'\n# want '%s'\n", rc,
		    rc < 0 ? rv_errmsg() : "", want);
	rv_reader_close(r);
	return ok;
}

/* A frame holding a header and n payload bytes, with the header patched. */
static void
hostile(struct rv_buf *s, int known, const struct rv_rec *r, size_t n)
{
	struct rv_buf raw = { 0 };
	unsigned char *p = xcalloc(1, n + 1);

	s->len = 0;
	raw_rec(&raw, r, p, n);
	zframe(s, raw.data, raw.len, known);
	free(p);
	rv_buf_release(&raw);
}

static void
t_hostile_headers(void)
{
	struct rv_buf s = { 0 };
	struct rv_rec r;
	int known;

	for (known = 0; known < 2; known++) {
		rv_rec_init(&r, RV_SAMPLE);
		r.dtype = RV_DT_U8;
		r.height = r.width = 28;
		r.channels = 1;
		r.payload_len = (uint64_t)1 << 60;
		hostile(&s, known, &r, 0);
		EXPECT(read_fails(&s, "record declares a 1152921504606846976"
		    "-byte payload, over the 2147483648-byte limit"));

		r.height = r.width = UINT32_MAX;
		r.channels = 4;
		r.payload_len = 100;
		hostile(&s, known, &r, 100);
		EXPECT(read_fails(&s, "shape 4294967295x4294967295x4 "
		    "overflows"));

		rv_rec_init(&r, RV_BATCH);
		r.dtype = RV_DT_U8;
		r.count = UINT32_MAX;
		r.height = r.width = 65535;
		r.channels = 4;
		r.payload_len = 100;
		hostile(&s, known, &r, 100);
		EXPECT(read_fails(&s, "shape 65535x65535x4 overflows"));

		rv_rec_init(&r, RV_SAMPLE);
		r.dtype = RV_DT_U8;
		r.height = r.width = 28;
		r.channels = 1;
		r.payload_len = 100;
		hostile(&s, known, &r, 100);
		EXPECT(read_fails(&s, "payload is 100 bytes, shape needs 784"));

		r.channels = 5;
		r.payload_len = 28 * 28 * 5;
		hostile(&s, known, &r, 28 * 28 * 5);
		EXPECT(read_fails(&s, "5 channels (at most 4)"));

		r.channels = 0;
		r.payload_len = 0;
		hostile(&s, known, &r, 0);
		EXPECT(read_fails(&s, "sample record with empty shape "
		    "28x28x0"));

		rv_rec_init(&r, RV_BATCH);
		r.dtype = RV_DT_U8;
		r.count = 2;
		r.height = r.width = r.channels = 1;
		r.payload_len = 2;	/* forgot the ids, labels, weights */
		hostile(&s, known, &r, 2);
		EXPECT(read_fails(&s, "payload is 2 bytes, shape needs 34"));
		r.count = 0;
		r.payload_len = 0;
		hostile(&s, known, &r, 0);
		EXPECT(read_fails(&s, "empty batch record"));
		r.count = 1;
		r.dtype = RV_DT_JPEG;
		r.payload_len = 10;
		hostile(&s, known, &r, 10);
		EXPECT(read_fails(&s, "batch record with dtype jpeg"));

		rv_rec_init(&r, RV_SAMPLE);
		r.dtype = RV_DT_JPEG;
		r.count = 2;
		r.payload_len = 10;
		hostile(&s, known, &r, 10);
		EXPECT(read_fails(&s, "sample record with count 2"));
		r.count = 1;
		r.payload_len = 0;
		hostile(&s, known, &r, 0);
		EXPECT(read_fails(&s, "empty encoded sample"));
		r.dtype = 9;
		r.payload_len = 1;
		hostile(&s, known, &r, 1);
		EXPECT(read_fails(&s, "unknown dtype 9"));

		rv_rec_init(&r, RV_EPOCH_END);
		r.payload_len = 3;
		hostile(&s, known, &r, 3);
		EXPECT(read_fails(&s, "epoch-end record with a payload"));
		r.payload_len = 0;
		r.dtype = RV_DT_U8;
		hostile(&s, known, &r, 0);
		EXPECT(read_fails(&s, "epoch-end record with dtype u8"));
		rv_rec_init(&r, 7);
		hostile(&s, known, &r, 0);
		EXPECT(read_fails(&s, "unknown record kind 7"));
	}

	/* not a record at all, inside a good frame */
	s.len = 0;
	{
		unsigned char junk[100];
		memset(junk, 'x', sizeof(junk));
		zframe(&s, junk, sizeof(junk), 1);
		EXPECT(read_fails(&s, "not an rv record (bad magic "
		    "0x78787878)"));
		s.len = 0;
		zframe(&s, junk, 10, 0);
		EXPECT(read_fails(&s, "not an rv record (bad magic "
		    "0x78787878)"));
		s.len = 0;
		zframe(&s, junk, 5, 0);
		EXPECT(read_fails(&s, "short record header (5 bytes)"));
		s.len = 0;
		zframe(&s, junk, 10, 1);
		EXPECT(read_fails(&s, "frame shorter than a record header"));
	}
	/* header fields patched by hand */
	{
		struct rv_buf raw = { 0 };
		rv_rec_init(&r, RV_EPOCH_END);
		raw_rec(&raw, &r, NULL, 0);
		raw.data[4] = 2;
		s.len = 0;
		zframe(&s, raw.data, raw.len, 1);
		EXPECT(read_fails(&s, "unsupported record version 2"));
		raw.data[4] = 1;
		raw.data[6] = 32;
		s.len = 0;
		zframe(&s, raw.data, 32, 0);
		EXPECT(read_fails(&s, "record header length 32 below 64"));
		/* a 64-byte header that claims 80: cut short */
		raw.data[6] = 80;
		s.len = 0;
		zframe(&s, raw.data, 64, 0);
		EXPECT(read_fails(&s, "short record header (64 of 80 "
		    "bytes)"));
		rv_buf_release(&raw);
	}
	/* one frame, two records */
	{
		struct rv_buf raw = { 0 };
		rv_rec_init(&r, RV_EPOCH_END);
		raw_rec(&raw, &r, NULL, 0);
		raw_rec(&raw, &r, NULL, 0);
		s.len = 0;
		zframe(&s, raw.data, raw.len, 1);
		EXPECT(read_fails(&s, "frame holds 128 bytes, record header "
		    "says 64"));
		s.len = 0;
		zframe(&s, raw.data, raw.len, 0);
		EXPECT(read_fails(&s, "frame holds more than its record"));
		rv_buf_release(&raw);
	}
	/* not zstd at all */
	s.len = 0;
	rv_buf_append(&s, "hello, world\n", 13);
	EXPECT(read_fails(&s, "not an rv stream: it looks like text "
	    "(rv-decode(1) makes a stream of a dataset)"));
	s.len = 0;
	rv_buf_append(&s, "\x1f\x8b\x08\0\0\0\0\0", 8);
	EXPECT(read_fails(&s, "not an rv stream: it looks like gzip data "
	    "(rv-decode(1) makes a stream of a dataset)"));
	s.len = 0;
	rv_buf_append(&s, "\x01\x02\x03\x04\x05", 5);
	EXPECT(read_fails(&s, "not a zstd frame (bad magic)"));
	s.len = 0;
	rv_buf_append(&s, "\x28\xb5\x2f", 3);
	EXPECT(read_fails(&s, "truncated frame"));
	rv_buf_release(&s);
}

/*
 * A header that claims a big (allowed) payload in a frame that holds a few
 * bytes: the reader must not allocate what the header claims.  Proved by
 * counting allocations, and by reading under an address-space limit far
 * below the claim in a child process.
 */
static int
read_lying(const struct rv_buf *s, const char *want)
{
	struct rv_reader *r;
	struct rv_rec rec;
	int rc, ok;

	r = as_raw(rv_reader_mem(s->data, s->len, NAME));
	rc = rv_reader_next(r, &rec);
	ok = rc == -1 && strstr(rv_errmsg(), want) != NULL;
	if (!ok)
		printf("# rc %d '%s'\n", rc, rc < 0 ? rv_errmsg() : "");
	rv_reader_close(r);
	return ok;
}

static void
t_before_allocation(void)
{
	struct rv_buf s = { 0 }, lie[2] = { { 0 }, { 0 } };
	struct rv_rec r;
	int known;

	/* under both caps: the sample limit raised past it */
	setenv("RV_MAX_SAMPLE", "2G", 1);
	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_JPEG;
	r.payload_len = (uint64_t)3 << 29;	/* 1.5 GiB, under the cap */
	for (known = 0; known < 2; known++) {
		struct rv_buf raw = { 0 };
		unsigned char pay[1000];
		memset(pay, 1, sizeof(pay));
		raw_rec(&raw, &r, pay, sizeof(pay));
		if (known)	/* the frame header lies too */
			craft_frame(&lie[1], raw.data, raw.len, RV_HDR_LEN +
			    r.payload_len);
		else
			zframe(&lie[0], raw.data, raw.len, 0);
		alloc_reset();
		EXPECT(read_lying(&lie[known], known ? "corrupt frame" :
		    "record shorter than its header says"));
#if COUNT_MALLOC
		printf("# largest allocation while reading: %zu bytes\n",
		    maxalloc);
		EXPECT(maxalloc < (8u << 20));
#endif
		rv_buf_release(&raw);
	}
#if COUNT_MALLOC
	/* and under an address-space limit far below the claim */
	{
		pid_t pid;
		int st;
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			struct rlimit rl;
			long pages = 0;
			FILE *fp = fopen("/proc/self/statm", "r");
			if (!fp || fscanf(fp, "%ld", &pages) != 1)
				_exit(3);
			fclose(fp);
			rl.rlim_cur = rl.rlim_max = (rlim_t)pages *
			    (rlim_t)sysconf(_SC_PAGESIZE) + (256u << 20);
			if (setrlimit(RLIMIT_AS, &rl) != 0)
				_exit(4);
			_exit(read_lying(&lie[0], "record shorter than its "
			    "header says") && read_lying(&lie[1],
			    "corrupt frame") ? 0 : 5);
		}
		EXPECT(waitpid(pid, &st, 0) == pid);
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			printf("# child status %d\n", st);
	}
#else
	printf("# allocation counts skipped under AddressSanitizer\n");
#endif
	unsetenv("RV_MAX_SAMPLE");
	rv_buf_release(&lie[0]);
	rv_buf_release(&lie[1]);

	/* RV_MAX_RECORD lowers the cap; checked on the header alone */
	setenv("RV_MAX_RECORD", "1K", 1);
	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_JPEG;
	r.payload_len = 2000;
	hostile(&s, 0, &r, 10);
	EXPECT(read_fails(&s, "record declares a 2000-byte payload, over "
	    "the 1024-byte limit"));
	/* and the frame header is checked before any decompression */
	{
		struct rv_buf raw = { 0 };
		unsigned char *big = xcalloc(1, 100000);
		raw_rec(&raw, &r, big, 0);
		rv_buf_append(&raw, big, 100000 - RV_HDR_LEN);
		s.len = 0;
		zframe(&s, raw.data, raw.len, 1);
		EXPECT(read_fails(&s, "frame declares 100000 bytes, over the "
		    "1024-byte record limit"));
		free(big);
		rv_buf_release(&raw);
	}
	unsetenv("RV_MAX_RECORD");
	rv_buf_release(&s);
}

/*
 * RV_MAX_SAMPLE: a sample, or each sample of a batch, over the limit is
 * refused from its header, whatever the frame holds after it.
 */
static void
t_max_sample(void)
{
	struct rv_buf s = { 0 };
	struct rv_rec r;
	int known;

	unsetenv("RV_MAX_SAMPLE");
	EXPECT(rv_stream_max_sample() == RV_MAX_SAMPLE);
	EXPECT(RV_MAX_SAMPLE == 715827880);
	setenv("RV_MAX_SAMPLE", "0", 1);
	EXPECT(rv_stream_max_sample() == RV_MAX_SAMPLE);
	setenv("RV_MAX_SAMPLE", "2G", 1);
	EXPECT(rv_stream_max_sample() == (uint64_t)2 << 30);
	for (known = 0; known < 2; known++) {
		setenv("RV_MAX_SAMPLE", "1K", 1);
		rv_rec_init(&r, RV_SAMPLE);
		r.dtype = RV_DT_JPEG;
		r.payload_len = 2000;
		hostile(&s, known, &r, 10);
		EXPECT(read_fails(&s, "sample of 2000 bytes is over the limit "
		    "of 1024 (RV_MAX_SAMPLE to raise)"));
		/* 16384x21845x3, 1 GiB of u8: the default refuses it */
		unsetenv("RV_MAX_SAMPLE");
		r.dtype = RV_DT_U8;
		r.height = 16384;
		r.width = 21845;
		r.channels = 3;
		r.payload_len = (uint64_t)16384 * 21845 * 3;
		hostile(&s, known, &r, 0);
		EXPECT(read_fails(&s, "sample of 1073725440 bytes is over the "
		    "limit of 715827880 (RV_MAX_SAMPLE to raise)"));
		/* a batch: each sample counts, not the whole */
		setenv("RV_MAX_SAMPLE", "767", 1);
		rv_rec_init(&r, RV_BATCH);
		r.dtype = RV_DT_U8;
		r.height = r.width = 16;
		r.channels = 3;
		r.count = 2;
		r.payload_len = 2 * 768 + rv_batch_pixels_off(2);
		hostile(&s, known, &r, 0);
		EXPECT(read_fails(&s, "sample of 768 bytes in a batch is over "
		    "the limit of 767 (RV_MAX_SAMPLE to raise)"));
	}
	/* at the limit is allowed */
	setenv("RV_MAX_SAMPLE", "768", 1);
	{
		struct rv_buf raw = { 0 };
		unsigned char *px = xcalloc(1, 2 * 768 + 32);
		struct rv_reader *rd;
		struct rv_rec got;

		raw_rec(&raw, &r, px, (size_t)r.payload_len);
		s.len = 0;
		zframe(&s, raw.data, raw.len, 1);
		rd = as_raw(rv_reader_mem(s.data, s.len, NAME));
		EXPECT_EQ(rv_reader_next(rd, &got), 1);
		EXPECT_EQ(got.count, 2);
		rv_reader_close(rd);
		free(px);
		rv_buf_release(&raw);
	}
	unsetenv("RV_MAX_SAMPLE");
	rv_buf_release(&s);
}

/*
 * RV_META_MAX: a metadata record over it is refused from its header,
 * whatever the frame holds, before its payload costs memory (a 16 KB
 * frame held a 512 MiB value that every program copied twice); a record
 * at it is read and parses.
 */
static void
t_max_meta(void)
{
	struct rv_buf s = { 0 };
	struct rv_enc *e = rv_enc_new(1);
	struct rv_reader *rd;
	struct rv_meta m;
	struct rv_rec r, got;
	unsigned char *p;
	int known;

	EXPECT(RV_META_MAX == (uint64_t)16 << 20);
	rv_rec_init(&r, RV_META);
	for (known = 0; known < 2; known++) {
		r.payload_len = (uint64_t)512 << 20;
		hostile(&s, known, &r, 10);
		EXPECT(read_fails(&s, "metadata record of 536870912 bytes is "
		    "over the limit of 16777216"));
	}
	/* "k=" x... "\n": RV_META_MAX bytes, then one more */
	p = xmalloc(RV_META_MAX + 1);
	memset(p, 'x', RV_META_MAX + 1);
	memcpy(p, "k=", 2);
	p[RV_META_MAX - 1] = '\n';
	r.payload_len = RV_META_MAX;
	s.len = 0;
	EXPECT_EQ(rv_enc_frame(e, &r, p, &s), 0);
	rd = as_raw(rv_reader_mem(s.data, s.len, NAME));
	EXPECT_EQ(rv_reader_next(rd, &got), 1);
	rv_meta_init(&m);
	EXPECT_EQ(rv_meta_parse(&m, got.payload, (size_t)got.payload_len),
	    0);
	EXPECT_EQ(m.bytes, RV_META_MAX);
	rv_meta_release(&m);
	rv_reader_close(rd);
	p[RV_META_MAX - 1] = 'x';
	p[RV_META_MAX] = '\n';
	r.payload_len = RV_META_MAX + 1;
	s.len = 0;
	EXPECT_EQ(rv_enc_frame(e, &r, p, &s), 0);
	alloc_reset();
	EXPECT(read_fails(&s, "metadata record of 16777217 bytes is over the "
	    "limit of 16777216"));
#if COUNT_MALLOC
	printf("# largest allocation while refusing: %zu bytes\n", maxalloc);
	EXPECT(maxalloc < (4u << 20));
#endif
	free(p);
	rv_enc_free(e);
	rv_buf_release(&s);
}

/*
 * rv_reader_take hands the payload over (the reader keeps the old
 * buffer), also for the record the reader held back behind an epoch-end.
 */
static void
t_take(void)
{
	struct rv_enc *e = rv_enc_new(1);
	struct rv_buf s = { 0 }, a = { 0 }, b = { 0 };
	struct rv_reader *rd;
	struct rv_rec r, got;
	unsigned char px[300];
	const unsigned char *was;
	size_t i;

	for (i = 0; i < sizeof(px); i++)
		px[i] = (unsigned char)(i * 7);
	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_U8;
	r.height = 10;
	r.width = 10;
	r.channels = 3;
	r.payload_len = 300;
	EXPECT_EQ(rv_enc_frame(e, &r, px, &s), 0);
	rv_rec_init(&r, RV_EPOCH_END);
	r.count = 1;
	EXPECT_EQ(rv_enc_frame(e, &r, NULL, &s), 0);
	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_U8;
	r.epoch = 1;
	r.id = 1;
	r.height = 10;
	r.width = 10;
	r.channels = 3;
	r.payload_len = 300;
	EXPECT_EQ(rv_enc_frame(e, &r, px + 0, &s), 0);
	rv_rec_init(&r, RV_EPOCH_END);
	r.epoch = 1;
	r.count = 1;
	EXPECT_EQ(rv_enc_frame(e, &r, NULL, &s), 0);

	rd = rv_reader_mem(s.data, s.len, NAME);
	EXPECT_EQ(rv_reader_next(rd, &got), 1);
	was = got.payload;
	rv_reader_take(rd, &got, &a);
	EXPECT_EQ(a.len, 300);
	EXPECT(got.payload == a.data);
	EXPECT(a.data + RV_HDR_LEN == was);	/* the reader's own buffer */
	EXPECT(memcmp(a.data, px, 300) == 0);
	/* the epoch-end, returned while sample 1 waits in the reader */
	EXPECT_EQ(rv_reader_next(rd, &got), 1);
	EXPECT_EQ(got.kind, RV_EPOCH_END);
	rv_reader_take(rd, &got, &b);
	EXPECT_EQ(b.len, 0);
	EXPECT_EQ(rv_reader_next(rd, &got), 1);
	EXPECT_EQ(got.id, 1);
	rv_reader_take(rd, &got, &b);
	EXPECT_EQ(b.len, 300);
	EXPECT(memcmp(b.data, px, 300) == 0);
	EXPECT(memcmp(a.data, px, 300) == 0);	/* a is ours now */
	EXPECT_EQ(rv_reader_next(rd, &got), 1);
	EXPECT_EQ(got.kind, RV_EPOCH_END);
	EXPECT_EQ(rv_reader_next(rd, &got), 0);
	rv_reader_close(rd);
	rv_enc_free(e);
	rv_buf_release(&a);
	rv_buf_release(&b);
	rv_buf_release(&s);
}

/* A frame without content size or checksum, with the window 2^wlog. */
static void
window_frame(struct rv_buf *out, unsigned wlog, const void *p, size_t n)
{
	unsigned char h[10];

	rv_put32(h, 0xFD2FB528u);
	h[4] = 0x00;
	h[5] = (unsigned char)((wlog - 10) << 3);
	rv_put32(h + 6, (uint32_t)(n << 3 | 1));	/* last, raw, n */
	rv_buf_append(out, h, 9);
	rv_buf_append(out, p, n);
}

/*
 * The frame window is bounded (16 MiB) before libzstd allocates it; level
 * 19, the highest a writer uses, stays below it even for a large record.
 */
static void
t_window(void)
{
	struct rv_buf s = { 0 }, raw = { 0 };
	struct rv_rec r, got;
	struct rv_enc *e = rv_enc_new(19);
	struct rv_reader *rd;
	unsigned char *p;
	size_t i, n = 20u << 20;

	rv_rec_init(&r, RV_EPOCH_END);
	raw_rec(&raw, &r, NULL, 0);
	window_frame(&s, 24, raw.data, raw.len);
	rd = as_raw(rv_reader_mem(s.data, s.len, NAME));
	EXPECT_EQ(rv_reader_next(rd, &got), 1);
	rv_reader_close(rd);
	s.len = 0;
	window_frame(&s, 25, raw.data, raw.len);
	alloc_reset();
	EXPECT(read_fails(&s, "corrupt frame: Frame requires too much memory "
	    "for decoding"));
#if COUNT_MALLOC
	EXPECT(maxalloc < (1u << 20));
#endif

	p = xmalloc(n);
	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 7 + (i >> 10));
	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_PNG;
	r.payload_len = n;
	s.len = 0;
	EXPECT_EQ(rv_enc_frame(e, &r, p, &s), 0);
	/* window descriptor: 2^(10 + exponent), exponent in the top 5 bits */
	EXPECT(s.data[4] & 0x20 || (s.data[5] >> 3) + 10 <= 23);
	rd = as_raw(rv_reader_mem(s.data, s.len, NAME));
	EXPECT_EQ(rv_reader_next(rd, &got), 1);
	EXPECT(got.payload_len == n && memcmp(got.payload, p, n) == 0);
	rv_reader_close(rd);
	free(p);
	rv_enc_free(e);
	rv_buf_release(&raw);
	rv_buf_release(&s);
}

/*
 * Frames made by zstd's streaming API without a pledged size carry no
 * content size: still read, small and large (the buffer grows as data
 * comes), with the checksum verified.
 */
static void
t_unknown_size(void)
{
	struct fixture f;
	struct rv_buf s = { 0 }, raw = { 0 };
	struct rv_reader *r;
	int i, nok;

	small_fixture(&f, 1);
	/* one big record too */
	{
		struct item *it = add_rec(&f, RV_SAMPLE, RV_DT_U8);
		it->rec.height = it->rec.width = 224;
		it->rec.channels = 3;
		it->payload = xmalloc(224 * 224 * 3);
		fill_image(it->payload, 224, 224, 3, 9);
		it->rec.payload_len = 224 * 224 * 3;
	}
	for (i = 0; i < f.n; i++) {
		struct item *it = &f.it[i];
		it->start = s.len;
		if (!it->skip) {
			raw.len = 0;
			raw_rec(&raw, &it->rec, it->payload,
			    (size_t)it->rec.payload_len);
			zframe(&s, raw.data, raw.len, 0);
			EXPECT(ZSTD_getFrameContentSize(s.data + it->start,
			    s.len - it->start) == ZSTD_CONTENTSIZE_UNKNOWN);
		}
		it->end = s.len;
	}
	r = as_raw(rv_reader_mem(s.data, s.len, NAME));
	EXPECT_EQ(check_reader(r, &f, &nok, 0), 0);
	EXPECT_EQ(nok, nrecords(&f));
	rv_reader_close(r);

	/* a frame without a checksum (zstd --no-check) is a frame too */
	{
		struct rv_buf one = { 0 };
		struct rv_rec rec;
		const struct item *it = &f.it[2];
		raw.len = 0;
		raw_rec(&raw, &it->rec, it->payload,
		    (size_t)it->rec.payload_len);
		craft_frame(&one, raw.data, raw.len, raw.len);
		r = as_raw(rv_reader_mem(one.data, one.len, NAME));
		EXPECT_EQ(rv_reader_next(r, &rec), 1);
		EXPECT(same_rec(&rec, it));
		EXPECT_EQ(rv_reader_next(r, &rec), 0);
		rv_reader_close(r);
		rv_buf_release(&one);
	}

	/* and the checksum is checked: corrupt the last byte */
	s.data[s.len - 1] ^= 1;
	r = as_raw(rv_reader_mem(s.data, s.len, NAME));
	EXPECT_EQ(check_reader(r, &f, &nok, 0), -1);
	EXPECT_EQ(nok, nrecords(&f) - 1);
	EXPECT(strstr(rv_errmsg(), "corrupt frame") != NULL);
	rv_reader_close(r);
	rv_buf_release(&raw);
	rv_buf_release(&s);
	fixture_release(&f);
}

/*
 * A header longer than 64 bytes (a later version appending fields): read,
 * the extra bytes skipped, the payload found after them.
 */
static void
t_longer_header(void)
{
	struct rv_buf raw = { 0 }, s = { 0 };
	struct rv_reader *r;
	struct rv_rec rec, w;
	unsigned char h[RV_HDR_LEN];
	int rc;

	rv_rec_init(&w, RV_SAMPLE);
	w.dtype = RV_DT_JPEG;
	w.id = 77;
	w.payload_len = 5;
	rv_rec_encode(&w, h);
	h[6] = 72;		/* hdr_len */
	rv_buf_append(&raw, h, sizeof(h));
	rv_buf_append(&raw, "newfield", 8);
	rv_buf_append(&raw, "hello", 5);
	zframe(&s, raw.data, raw.len, 1);
	zframe(&s, raw.data, raw.len, 0);
	r = as_raw(rv_reader_mem(s.data, s.len, NAME));
	for (int k = 0; k < 2; k++) {
		rc = rv_reader_next(r, &rec);
		EXPECT_EQ(rc, 1);
		if (rc == 1) {
			EXPECT_EQ(rec.hdr_len, 72);
			EXPECT_EQ(rec.id, 77);
			EXPECT_EQ(rec.payload_len, 5);
			EXPECT(memcmp(rec.payload, "hello", 5) == 0);
		}
	}
	EXPECT_EQ(rv_reader_next(r, &rec), 0);
	rv_reader_close(r);
	rv_buf_release(&raw);
	rv_buf_release(&s);
}

/* Metadata records anywhere read back, and merge. */
static void
t_meta_anywhere(void)
{
	struct rv_buf s = { 0 };
	struct rv_meta a, b, got;
	struct rv_enc *e = rv_enc_new(1);
	struct rv_rec rec;
	struct rv_reader *r;
	unsigned char px[4] = { 1, 2, 3, 4 };
	int rc, nmeta = 0, nsamp = 0;

	rv_meta_init(&a);
	rv_meta_init(&b);
	rv_meta_init(&got);
	rv_meta_set(&a, "source", "a.tar");
	rv_meta_set(&a, "classes", "2");
	rv_meta_set(&b, "source", "b.tar");
	rv_meta_set(&b, "x.unknown", "kept");
	rv_rec_init(&rec, RV_SAMPLE);
	rec.dtype = RV_DT_U8;
	rec.height = rec.width = 2;
	rec.channels = 1;
	rec.payload_len = 4;
	EXPECT_EQ(rv_enc_frame(e, &rec, px, &s), 0);
	{
		struct rv_buf m = { 0 };
		struct rv_rec mr;
		rv_meta_encode(&a, &m);
		rv_rec_init(&mr, RV_META);
		mr.payload_len = m.len;
		EXPECT_EQ(rv_enc_frame(e, &mr, m.data, &s), 0);
		EXPECT_EQ(rv_enc_frame(e, &rec, px, &s), 0);
		m.len = 0;
		rv_meta_encode(&b, &m);
		mr.payload_len = m.len;
		EXPECT_EQ(rv_enc_frame(e, &mr, m.data, &s), 0);
		rv_buf_release(&m);
	}
	r = as_raw(rv_reader_mem(s.data, s.len, NAME));
	while ((rc = rv_reader_next(r, &rec)) == 1) {
		if (rec.kind == RV_META) {
			nmeta++;
			EXPECT_EQ(rv_meta_parse(&got, rec.payload,
			    (size_t)rec.payload_len), 0);
		} else {
			nsamp++;
		}
	}
	EXPECT_EQ(rc, 0);
	EXPECT_EQ(nmeta, 2);
	EXPECT_EQ(nsamp, 2);
	EXPECT_STR(rv_meta_get(&got, "source"), "b.tar");
	EXPECT_STR(rv_meta_get(&got, "classes"), "2");
	EXPECT_STR(rv_meta_get(&got, "x.unknown"), "kept");
	rv_reader_close(r);
	rv_enc_free(e);
	rv_meta_release(&a);
	rv_meta_release(&b);
	rv_meta_release(&got);
	rv_buf_release(&s);
}

/* Seek back to a record's offset over a file and memory. */
static void
t_seek(void)
{
	struct fixture f;
	char *path = tmppath("seek.rvs");
	int pass;

	small_fixture(&f, 1);
	write_file(path, f.s.data, f.s.len);
	for (pass = 0; pass < 2; pass++) {
		struct rv_reader *r = pass ? as_raw(rv_reader_open(path)) :
		    as_raw(rv_reader_mem(f.s.data, f.s.len, NAME));
		struct rv_rec rec;
		const struct item *it = &f.it[5];	/* the epoch end */
		EXPECT_EQ(rv_reader_seekable(r), 1);
		while (rv_reader_next(r, &rec) == 1)
			;
		EXPECT_EQ(rv_reader_seek(r, it->start, 4), 0);
		EXPECT_EQ(rv_reader_next(r, &rec), 1);
		EXPECT(same_rec(&rec, it));
		EXPECT_EQ(rv_reader_records(r), 5);
		EXPECT_EQ(rv_reader_offset(r), it->start);
		/* a seek to the middle of a frame fails cleanly */
		EXPECT_EQ(rv_reader_seek(r, it->start + 1, 4), 0);
		EXPECT_EQ(rv_reader_next(r, &rec), -1);
		/* and a seek heals a failed reader */
		EXPECT_EQ(rv_reader_seek(r, f.it[1].start, 0), 0);
		EXPECT_EQ(rv_reader_next(r, &rec), 1);
		EXPECT(same_rec(&rec, &f.it[1]));
		if (!pass) {
			EXPECT_EQ(rv_reader_seek(r, f.s.len + 1, 0), -1);
			EXPECT_STR(rv_errmsg(), "'t': seek past the end");
		}
		rv_reader_close(r);
	}
	unlink(path);
	free(path);
	fixture_release(&f);
}

#if COUNT_MALLOC

/*
 * Write then read 600 records of one shape (or alternating shapes, with
 * mixed), counting allocations after the first 100.
 */
static void
steady(int mixed, int big, size_t *wallocs, size_t *rallocs)
{
	struct rv_writer *w;
	struct rv_reader *r;
	struct rv_rec rec;
	char *path = tmppath("steady.rvs");
	unsigned char *px = xmalloc(224 * 224 * 3);
	int fd, i, rc;

	unsigned char *small = xmalloc(28 * 28);

	fill_image(px, 224, 224, 3, 1);
	fill_image(small, 28, 28, 1, 2);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	w = rv_writer_new(fd, path, 1);
	for (i = 0; i < 600; i++) {
		unsigned char *img;
		if (mixed)
			big = i % 3 == 0;
		rv_rec_init(&rec, RV_SAMPLE);
		rec.dtype = RV_DT_U8;
		rec.id = (uint64_t)i;
		rec.height = rec.width = big ? 224 : 28;
		rec.channels = big ? 3 : 1;
		rec.payload_len = (uint64_t)rec.height * rec.width *
		    rec.channels;
		/* the same picture with a different corner each time */
		img = big ? px : small;
		fill_bytes(img, 16, (uint64_t)i);
		if (i == 100)
			alloc_reset();
		EXPECT_EQ(rv_writer_put(w, &rec, img), 0);
	}
	*wallocs = nalloc;
	EXPECT_EQ(rv_writer_close(w), 0);
	close(fd);

	r = as_raw(rv_reader_open(path));
	i = 0;
	while ((rc = rv_reader_next(r, &rec)) == 1)
		if (++i == 100)
			alloc_reset();
	*rallocs = nalloc;
	EXPECT_EQ(rc, 0);
	EXPECT_EQ(i, 600);
	rv_reader_close(r);
	free(px);
	free(small);
	unlink(path);
	free(path);
}
#endif

/*
 * Steady state: once the first records have sized the buffers, writing
 * and reading more records of the same shape allocates nothing.  When
 * sizes alternate, zstd re-sizes its compression workspace after 128
 * frames that left most of it unused: about one allocation per 130
 * records, allowed below.
 */
static void
t_no_alloc_per_record(void)
{
#if COUNT_MALLOC
	size_t wa, ra;
	int big;

	for (big = 0; big < 2; big++) {
		steady(0, big, &wa, &ra);
		printf("# allocations in 500 steady-state %s records: write "
		    "%zu, read %zu\n", big ? "224x224x3" : "28x28", wa, ra);
		EXPECT_EQ(wa, 0);
		EXPECT_EQ(ra, 0);
	}
	steady(1, 0, &wa, &ra);
	printf("# allocations in 500 records of alternating shapes: write "
	    "%zu, read %zu\n", wa, ra);
	EXPECT(wa <= 500 / 50);
	EXPECT_EQ(ra, 0);
#else
	printf("# skipped under AddressSanitizer\n");
#endif
}

int
main(void)
{
	if (fix_start("t_stream_read") < 0)
		return 1;
	RUN(t_roundtrip_mem);
	RUN(t_roundtrip_file);
	RUN(t_pipe);
	RUN(t_concat);
	RUN(t_epochs);
	RUN(t_skippable);
	RUN(t_truncation);
	RUN(t_corruption);
	RUN(t_hostile_headers);
	RUN(t_max_sample);
	RUN(t_max_meta);
	RUN(t_take);
	RUN(t_before_allocation);
	RUN(t_window);
	RUN(t_unknown_size);
	RUN(t_longer_header);
	RUN(t_meta_anywhere);
	RUN(t_seek);
	RUN(t_no_alloc_per_record);
	rmdir(tmpdir);
	return UNIT_DONE();
}

