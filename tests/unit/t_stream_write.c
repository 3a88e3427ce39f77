/*
 * The stream contract of DESIGN.md section 2, write side
 * (lib/stream/stream_enc.c, stream_write.c, the levels of stream.c):
 * every level round trips; the writer's buffering, gathered writes and
 * failures; stored frames and shells byte for byte; the level a pipe or a
 * file gets.  The read side: t_stream_read.c.  Also prints (as TAP comments) the
 * speed of each compression level, used to choose RV_LEVEL_AUTO:
 * RV_PERF=N scales that run, RV_PERF_LEVELS="-1 1 3" picks the levels,
 * RV_PERF_U8_28 / RV_PERF_U8_224 name files of raw 28x28 / 224x224x3
 * images to measure instead of the built-in data.  The figures in
 * rv-stream(5) used tiles of photographs, made with
 *   convert p.jpg -resize '896x504^' -gravity center -extent 896x504 \
 *       -crop 224x224 +repage -depth 8 rgb:tile%03d.rgb
 * and again at 672x378 and 448x252, over /usr/share/backgrounds/mate/
 * nature/ (the JPEG files; the full 150528-byte tiles, concatenated), with
 * RV_PERF=4 RV_PERF_LEVELS="-7 -3 -1 1 3 6".
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

int usleep(useconds_t);

#include "base/err.h"
#include "base/io.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "stream_fix.h"
#include "unit.h"

static void
t_level(void)
{
	unsetenv("RV_LEVEL");
	EXPECT_EQ(rv_stream_level(-100), RV_LEVEL_AUTO);
	EXPECT_EQ(rv_stream_level(3), 3);
	EXPECT_EQ(rv_stream_level(-7), -7);
	EXPECT_EQ(rv_stream_level(19), 19);
	setenv("RV_LEVEL", "5", 1);
	EXPECT_EQ(rv_stream_level(-100), 5);
	EXPECT_EQ(rv_stream_level(2), 2);	/* --level wins */
	setenv("RV_LEVEL", "-7", 1);
	EXPECT_EQ(rv_stream_level(-100), -7);
	setenv("RV_LEVEL", "19", 1);
	EXPECT_EQ(rv_stream_level(-100), 19);
	/* invalid values are ignored */
	setenv("RV_LEVEL", "20", 1);
	EXPECT_EQ(rv_stream_level(-100), RV_LEVEL_AUTO);
	setenv("RV_LEVEL", "-8", 1);
	EXPECT_EQ(rv_stream_level(-100), RV_LEVEL_AUTO);
	setenv("RV_LEVEL", "fast", 1);
	EXPECT_EQ(rv_stream_level(-100), RV_LEVEL_AUTO);
	setenv("RV_LEVEL", "", 1);
	EXPECT_EQ(rv_stream_level(-100), RV_LEVEL_AUTO);
	unsetenv("RV_LEVEL");

	unsetenv("RV_MAX_RECORD");
	EXPECT(rv_stream_max_payload() == RV_MAX_PAYLOAD);
	EXPECT(RV_MAX_PAYLOAD == (uint64_t)2 << 30);
	setenv("RV_MAX_RECORD", "64M", 1);
	EXPECT(rv_stream_max_payload() == (uint64_t)64 << 20);
	setenv("RV_MAX_RECORD", "12345", 1);
	EXPECT(rv_stream_max_payload() == 12345);
	setenv("RV_MAX_RECORD", "0", 1);
	EXPECT(rv_stream_max_payload() == RV_MAX_PAYLOAD);
	setenv("RV_MAX_RECORD", "lots", 1);
	EXPECT(rv_stream_max_payload() == RV_MAX_PAYLOAD);
	setenv("RV_MAX_RECORD", "16000T", 1);
	EXPECT(rv_stream_max_payload() == (uint64_t)1 << 48);
	unsetenv("RV_MAX_RECORD");
}

/* Every level writes a stream every reader reads. */
static void
t_levels_roundtrip(void)
{
	static const int lv[] = { -7, -1, 0, 1, 3, 9, 19 };
	size_t i;

	for (i = 0; i < sizeof(lv) / sizeof(lv[0]); i++) {
		struct fixture f;
		struct rv_reader *r;
		int nok;
		small_fixture(&f, lv[i]);
		r = as_raw(rv_reader_mem(f.s.data, f.s.len, NAME));
		EXPECT_EQ(check_reader(r, &f, &nok, 0), 0);
		EXPECT_EQ(nok, nrecords(&f));
		rv_reader_close(r);
		fixture_release(&f);
	}
}

/* The writer: refuses invalid records, reports write errors, frames. */
static void
t_writer(void)
{
	struct rv_writer *w;
	struct rv_enc *e;
	struct rv_rec rec;
	struct rv_buf frames = { 0 };
	char *path = tmppath("w.rvs");
	unsigned char px[784] = { 0 };
	int fd, i;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	w = rv_writer_new(fd, "out", 1);
	rv_rec_init(&rec, RV_SAMPLE);
	rec.dtype = RV_DT_U8;
	rec.height = rec.width = 28;
	rec.channels = 1;
	rec.payload_len = 700;
	EXPECT_EQ(rv_writer_put(w, &rec, px), -1);
	EXPECT_STR(rv_errmsg(), "'out': record 0: invalid record: payload "
	    "is 700 bytes, shape needs 784");
	rec.payload_len = 784;
	EXPECT_EQ(rv_writer_put(w, &rec, NULL), -1);
	EXPECT_STR(rv_errmsg(), "'out': record 0: invalid record: no "
	    "payload");
	EXPECT_EQ(rv_writer_put(w, &rec, px), 0);
	/* frames encoded elsewhere (by worker threads) go in order */
	e = rv_enc_new(1);
	for (i = 0; i < 3; i++) {
		rec.id = 10 + (uint64_t)i;
		EXPECT_EQ(rv_enc_frame(e, &rec, px, &frames), 0);
	}
	EXPECT_EQ(rv_writer_put_frames(w, frames.data, frames.len, 3), 0);
	EXPECT_EQ(rv_writer_records(w), 4);
	EXPECT_EQ(rv_writer_close(w), 0);
	close(fd);
	{
		struct rv_reader *r = as_raw(rv_reader_open(path));
		struct rv_rec got;
		uint64_t want[] = { 0, 10, 11, 12 };
		for (i = 0; i < 4; i++) {
			EXPECT_EQ(rv_reader_next(r, &got), 1);
			EXPECT_EQ(got.id, want[i]);
		}
		EXPECT_EQ(rv_reader_next(r, &got), 0);
		rv_reader_close(r);
	}
	/* a big run of put_frames bypasses the buffer, order kept */
	fd = open(path, O_WRONLY | O_TRUNC);
	w = rv_writer_new(fd, "out", 1);
	EXPECT_EQ(rv_writer_put(w, &rec, px), 0);
	{
		struct rv_buf big = { 0 };
		struct rv_rec pr;
		unsigned char *pay = xmalloc(300000);
		fill_bytes(pay, 300000, 1);
		rv_rec_init(&pr, RV_SAMPLE);
		pr.dtype = RV_DT_PNG;
		pr.id = 5;
		pr.payload_len = 300000;
		EXPECT_EQ(rv_enc_frame(e, &pr, pay, &big), 0);
		EXPECT_EQ(rv_writer_put_frames(w, big.data, big.len, 1), 0);
		EXPECT_EQ(rv_writer_put(w, &rec, px), 0);
		EXPECT_EQ(rv_writer_bytes(w), frames.len / 3 * 2 + big.len);
		EXPECT_EQ(rv_writer_close(w), 0);
		close(fd);
		free(pay);
		rv_buf_release(&big);
	}
	{
		struct rv_reader *r = as_raw(rv_reader_open(path));
		struct rv_rec got;
		uint64_t want[] = { 12, 5, 12 };
		for (i = 0; i < 3; i++) {
			EXPECT_EQ(rv_reader_next(r, &got), 1);
			EXPECT_EQ(got.id, want[i]);
		}
		EXPECT_EQ(rv_reader_next(r, &got), 0);
		rv_reader_close(r);
	}
	rv_enc_free(e);
	rv_buf_release(&frames);

	/* a write error is reported once, with the name, and sticks */
	fd = open(path, O_RDONLY);
	w = rv_writer_new(fd, "ro", 1);
	EXPECT_EQ(rv_writer_put(w, &rec, px), 0);
	EXPECT_EQ(rv_writer_flush(w), -1);
	EXPECT_STR(rv_errmsg(), "'ro': write: Bad file descriptor");
	EXPECT_EQ(rv_writer_put(w, &rec, px), -1);
	EXPECT_EQ(rv_writer_close(w), -1);
	EXPECT_EQ(rv_writer_close(NULL), 0);
	close(fd);
	unlink(path);
	free(path);
}

/*
 * Output files appear only when complete: a hidden temp file beside the
 * target, renamed by rv_out_commit(), removed by rv_out_abort(); devices
 * are written in place.
 */
static void
t_out(void)
{
	struct rv_out o;
	char *path = tmppath("out.rvs");
	unsigned char *got;
	size_t len;

	unlink(path);
	EXPECT_EQ(rv_out_open(&o, path, 1), 0);
	EXPECT(o.tmp != NULL && strstr(o.tmp, "/.out.rvs.tmp.") != NULL);
	EXPECT(access(path, F_OK) != 0);
	EXPECT(access(o.tmp, F_OK) == 0);
	EXPECT_STR(rv_out_name(&o), path);
	EXPECT_EQ(rv_write_full(o.fd, "hello", 5), 0);
	{
		char *tmp = xstrdup(o.tmp);
		EXPECT_EQ(rv_out_commit(&o), 0);
		EXPECT(access(tmp, F_OK) != 0);
		free(tmp);
	}
	EXPECT_EQ(rv_slurp(path, &got, &len), 0);
	EXPECT(len == 5 && memcmp(got, "hello", 5) == 0);
	free(got);

	/* abort leaves the old file alone and no temp file */
	EXPECT_EQ(rv_out_open(&o, path, 1), 0);
	EXPECT_EQ(rv_write_full(o.fd, "partial", 7), 0);
	{
		char *tmp = xstrdup(o.tmp);
		rv_out_abort(&o);
		EXPECT(access(tmp, F_OK) != 0);
		free(tmp);
	}
	EXPECT_EQ(rv_slurp(path, &got, &len), 0);
	EXPECT(len == 5);
	free(got);

	/* a device is written in place, never replaced */
	EXPECT_EQ(rv_out_open(&o, "/dev/null", 1), 0);
	EXPECT(o.tmp == NULL);
	EXPECT_EQ(rv_write_full(o.fd, "x", 1), 0);
	EXPECT_EQ(rv_out_commit(&o), 0);
	{
		struct stat st;
		EXPECT(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
	}
	EXPECT_EQ(rv_out_open(&o, "/nonexistent/dir/x.rvs", 1), -1);
	EXPECT_STR(rv_errmsg(), "'/nonexistent/dir/x.rvs': no folder "
	    "'/nonexistent/dir' to write it in (make it first: mkdir -p "
	    "'/nonexistent/dir')");
	/* the folder is there: the system's reason */
	EXPECT_EQ(rv_out_open(&o, "/proc/self/x.rvs", 1), -1);
	EXPECT(strstr(rv_errmsg(), "no folder") == NULL);
	EXPECT_EQ(rv_slurp("/nonexistent", &got, &len), -1);
	EXPECT_STR(rv_errmsg(), "'/nonexistent': No such file or directory");
	unlink(path);
	free(path);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Load n images of sz bytes from a raw file, or make them. */
static unsigned char *
perf_data(const char *env, size_t sz, size_t *n, uint32_t h, uint32_t w,
    uint32_t c)
{
	const char *path = getenv(env);
	unsigned char *p;
	size_t len, i;

	if (path && rv_slurp(path, &p, &len) == 0 && len >= sz) {
		*n = len / sz;
		printf("# %s: %zu images from '%s'\n", env, *n, path);
		return p;
	}
	if (sz == 784) {
		/* Fashion-MNIST when installed: real 28x28 images */
		gzFile gz = gzopen("/usr/share/datasets/fashion-mnist/"
		    "train-images-idx3-ubyte.gz", "rb");
		if (gz) {
			unsigned char hdr[16];
			*n = 2000;
			p = xmalloc(*n * sz);
			if (gzread(gz, hdr, 16) == 16 &&
			    gzread(gz, p, (unsigned)(*n * sz)) ==
			    (int)(*n * sz)) {
				gzclose(gz);
				printf("# 28x28: Fashion-MNIST\n");
				return p;
			}
			gzclose(gz);
			free(p);
		}
	}
	*n = sz == 784 ? 2000 : 64;
	p = xmalloc(*n * sz);
	for (i = 0; i < *n; i++)
		fill_image(p + i * sz, h, w, c, i);
	printf("# %ux%ux%u: synthetic images (smooth + noise)\n", h, w, c);
	return p;
}

static void
perf_one(const unsigned char *data, size_t nimg, uint32_t h, uint32_t w,
    uint32_t c, int level, size_t nrec)
{
	char *path = tmppath("perf.rvs");
	size_t sz = (size_t)h * w * c, i;
	struct rv_writer *wr;
	struct rv_reader *r;
	struct rv_rec rec;
	double t0, tw, tr, mb = (double)(sz * nrec) / 1e6;
	uint64_t bytes;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	wr = rv_writer_new(fd, path, level);
	t0 = now();
	for (i = 0; i < nrec; i++) {
		if (i == nrec / 10) {
			/* the first tenth warms caches and buffers */
			t0 = now();
		}
		rv_rec_init(&rec, RV_SAMPLE);
		rec.dtype = RV_DT_U8;
		rec.id = i;
		rec.label = (int32_t)(i % 10);
		rec.height = h;
		rec.width = w;
		rec.channels = c;
		rec.payload_len = sz;
		if (rv_writer_put(wr, &rec, data + (i % nimg) * sz) < 0)
			break;
	}
	EXPECT_EQ(rv_writer_close(wr), 0);
	tw = (now() - t0) / 0.9;
	close(fd);

	r = as_raw(rv_reader_open(path));
	t0 = now();
	i = 0;
	while (rv_reader_next(r, &rec) == 1)
		if (++i == nrec / 10)
			t0 = now();
	tr = (now() - t0) / 0.9;
	bytes = rv_reader_bytes(r);
	rv_reader_close(r);
	EXPECT_EQ(i, nrec);
	printf("# %3ux%-3ux%u level %2d: ratio %5.2f  write %8.0f rec/s "
	    "%6.0f MB/s  read %8.0f rec/s %6.0f MB/s\n", h, w, c, level,
	    (double)(sz * nrec) / (double)bytes, (double)nrec / tw, mb / tw,
	    (double)nrec / tr, mb / tr);
	unlink(path);
	free(path);
}

/*
 * Records/s and MB/s (of raw pixels) per level; not a timed test.  The
 * stream goes through a file in the page cache, as it would through a
 * pipe, so the numbers include the system calls.
 */
static void
t_perf(void)
{
	static const int deflv[] = { -1, 1, 3 };
	int lv[16], nlv = 0;
	const char *s = getenv("RV_PERF"), *ls = getenv("RV_PERF_LEVELS");
	size_t scale = s && atoi(s) > 0 ? (size_t)atoi(s) : 1, n28, n224, i;
	unsigned char *d28 = perf_data("RV_PERF_U8_28", 784, &n28, 28, 28,
	    1);
	unsigned char *d224 = perf_data("RV_PERF_U8_224", 224 * 224 * 3,
	    &n224, 224, 224, 3);

	/* RV_PERF_LEVELS="-3 1 6" measures other levels */
	while (ls && nlv < 16) {
		char *end;
		long v = strtol(ls, &end, 10);
		if (end == ls)
			break;
		lv[nlv++] = (int)v;
		ls = end;
	}
	if (nlv == 0)
		for (nlv = 0; nlv < 3; nlv++)
			lv[nlv] = deflv[nlv];
	for (i = 0; i < (size_t)nlv; i++)
		perf_one(d28, n28, 28, 28, 1, lv[i], 5000 * scale);
	for (i = 0; i < (size_t)nlv; i++)
		perf_one(d224, n224, 224, 224, 3, lv[i], 100 * scale);
	free(d28);
	free(d224);
}

/*
 * Level 0 stores records in raw zstd blocks: libzstd itself must read them
 * back byte for byte (block boundaries at 128 KiB, the header sharing the
 * first block), and so must our reader; the frame is barely larger than
 * its content.
 */
static void
t_stored_frames(void)
{
	static const size_t sizes[] = { 0, 1, 784, (128u << 10) - 64,
	    (128u << 10) - 63, 128u << 10, 3 * (128u << 10) + 5,
	    224 * 224 * 3 };
	struct rv_enc *e = rv_enc_new(RV_LEVEL_STORED);
	struct rv_buf out = { 0 };
	unsigned char *pay = xmalloc(3 * (128u << 10) + 5 + 224 * 224 * 3);
	size_t i, k;

	for (k = 0; k < 3 * (128u << 10) + 5 + 224 * 224 * 3; k++)
		pay[k] = (unsigned char)(k * 7 + (k >> 9));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct rv_rec r, got;
		struct rv_reader *rd;
		unsigned char *raw;
		size_t rawlen, n;

		rv_rec_init(&r, RV_META);
		r.payload_len = sizes[i];
		out.len = 0;
		EXPECT(rv_enc_frame(e, &r, pay, &out) == 0);
		/* framing overhead: 14 bytes + 3 per 128 KiB block */
		EXPECT(out.len <= 64 + sizes[i] + 14 + 3 *
		    ((64 + sizes[i]) / (128u << 10) + 2));
		rawlen = 64 + sizes[i];
		raw = xmalloc(rawlen);
		n = ZSTD_decompress(raw, rawlen, out.data, out.len);
		EXPECT(!ZSTD_isError(n) && n == rawlen);
		if (!ZSTD_isError(n) && n == rawlen)
			EXPECT(memcmp(raw + 64, pay, sizes[i]) == 0);
		EXPECT_EQ(ZSTD_getFrameContentSize(out.data, out.len),
		    rawlen);
		free(raw);
		rd = as_raw(rv_reader_mem(out.data, out.len, "stored"));
		EXPECT(rd != NULL);
		EXPECT_EQ(rv_reader_next(rd, &got), 1);
		EXPECT_EQ(got.payload_len, sizes[i]);
		if (got.payload_len == sizes[i])
			EXPECT(sizes[i] == 0 ||
			    memcmp(got.payload, pay, sizes[i]) == 0);
		EXPECT_EQ(rv_reader_next(rd, &got), 0);
		rv_reader_close(rd);
		/* a flipped content byte fails the checksum */
		if (sizes[i] > 0) {
			out.data[out.len - 5] ^= 0x40;	/* last payload byte */
			rd = as_raw(rv_reader_mem(out.data, out.len, "stored"));
			EXPECT_EQ(rv_reader_next(rd, &got), -1);
			EXPECT(strstr(rv_errmsg(), "checksum") != NULL);
			rv_reader_close(rd);
		}
	}
	rv_buf_release(&out);
	rv_enc_free(e);
	free(pay);
}

/*
 * Frame shells (rv_enc_shell + rv_writer_put_shell): the bytes equal
 * rv_enc_frame()'s for every block layout, written to a non-blocking pipe
 * that a slow reader empties (EAGAIN, short gathered writes); a shell that
 * does not fit its payload is refused; a flipped payload byte in a frame
 * written from a shell fails the checksum with the record and its offset.
 */
static void
t_shells(void)
{
	static const size_t sizes[] = { 0, 1, 784, (128u << 10) - 64,
	    (128u << 10) - 63, 128u << 10, 3 * (128u << 10) + 5,
	    224 * 224 * 3, 500 * 375 * 3, 65535, 65536, (1u << 20) - 1,
	    1u << 20, 3 * (1u << 20) + 7 };
	const size_t ns = sizeof(sizes) / sizeof(sizes[0]);
	const size_t maxp = 3 * (1u << 20) + 7;
	struct rv_enc *e = rv_enc_new(RV_LEVEL_STORED);
	struct rv_buf want = { 0 }, got = { 0 }, sh = { 0 };
	unsigned char *pay = xmalloc(maxp);
	struct rv_writer *w;
	struct rv_reader *rd;
	struct rv_rec r, x;
	size_t i, off2 = 0;
	int p[2], st;
	char msg[200];
	pid_t pid;

	for (i = 0; i < maxp; i++)
		pay[i] = (unsigned char)(i * 13 + (i >> 11));
	/* every size twice: written around its shell, then by
	 * rv_writer_put (which does the same from 1 MiB up) */
	for (i = 0; i < 2 * ns; i++) {
		rv_rec_init(&r, RV_META);
		r.id = i % ns;
		r.payload_len = sizes[i % ns];
		if (i == 2)
			off2 = want.len;
		EXPECT(rv_enc_frame(e, &r, pay, &want) == 0);
	}
	EXPECT(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		int bad = 0;

		close(p[0]);
		fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
		w = rv_writer_new(p[1], "pipe", RV_LEVEL_STORED);
		for (i = 0; i < 2 * ns; i++) {
			rv_rec_init(&r, RV_META);
			r.id = i % ns;
			r.payload_len = sizes[i % ns];
			if (i >= ns) {
				bad |= rv_writer_put(w, &r, pay) < 0;
				continue;
			}
			sh.len = 0;
			bad |= rv_enc_shell(e, &r, pay, &sh) < 0;
			bad |= rv_writer_put_shell(w, sh.data, sh.len, pay,
			    sizes[i]) < 0;
		}
		bad |= rv_writer_records(w) != 2 * ns;
		bad |= rv_writer_close(w) < 0;
		_exit(bad);
	}
	close(p[1]);
	for (i = 0;; i++) {
		ssize_t n;

		rv_buf_reserve(&got, 3000);
		n = read(p[0], got.data + got.len, 3000);
		if (n <= 0)
			break;
		got.len += (size_t)n;
		if (i % 16 == 0)
			usleep(200);
	}
	close(p[0]);
	EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0);
	EXPECT_EQ(got.len, want.len);
	EXPECT(got.len == want.len && memcmp(got.data, want.data,
	    want.len) == 0);
	/* zstd reads it as one frame a record */
	for (i = 0, st = 0; i < got.len; i += ZSTD_findFrameCompressedSize(
	    got.data + i, got.len - i))
		st++;
	EXPECT_EQ(st, (int)(2 * ns));

	/* a shell that does not fit its payload */
	w = rv_writer_new(open("/dev/null", O_WRONLY), "null",
	    RV_LEVEL_STORED);
	rv_rec_init(&r, RV_META);
	r.payload_len = 200000;
	sh.len = 0;
	EXPECT(rv_enc_shell(e, &r, pay, &sh) == 0);
	EXPECT_EQ(rv_writer_put_shell(w, sh.data, sh.len, pay, 300000), -1);
	EXPECT_STR(rv_errmsg(), "'null': record 0: invalid frame shell");
	/* a large record without its payload: refused, as a small one is */
	EXPECT_EQ(rv_writer_put(w, &r, NULL), -1);
	EXPECT_STR(rv_errmsg(), "'null': record 0: invalid record: no payload");
	rv_writer_close(w);
	/* a compressing encoder makes no shell */
	{
		struct rv_enc *c = rv_enc_new(1);

		EXPECT_EQ(rv_enc_shell(c, &r, pay, &sh), -1);
		rv_enc_free(c);
	}

	/* record 2's last payload byte flipped */
	{
		size_t end2 = off2 + ZSTD_findFrameCompressedSize(
		    got.data + off2, got.len - off2);

		got.data[end2 - 5] ^= 0x01;
	}
	rd = as_raw(rv_reader_mem(got.data, got.len, "shells"));
	EXPECT_EQ(rv_reader_next(rd, &x), 1);
	EXPECT_EQ(rv_reader_next(rd, &x), 1);
	EXPECT_EQ(rv_reader_next(rd, &x), -1);
	snprintf(msg, sizeof(msg), "'shells': record 2 at byte %zu: corrupt "
	    "frame: Restored data doesn't match checksum", off2);
	EXPECT_STR(rv_errmsg(), msg);
	rv_reader_close(rd);
	rv_buf_release(&want);
	rv_buf_release(&got);
	rv_buf_release(&sh);
	rv_enc_free(e);
	free(pay);
}

/* Without --level or RV_LEVEL: a pipe gets the stored level, a file -1. */
static void
t_level_auto(void)
{
	int fds[2];
	char path[] = "/tmp/t_stream_lvl.XXXXXX";
	int fd = mkstemp(path);

	EXPECT(pipe(fds) == 0);
	EXPECT_EQ(rv_stream_level_fd(RV_LEVEL_AUTO, fds[1]), RV_LEVEL_STORED);
	EXPECT_EQ(rv_stream_level_fd(RV_LEVEL_AUTO, fd), RV_LEVEL_FILE);
	EXPECT_EQ(rv_stream_level_fd(3, fds[1]), 3);
	EXPECT_EQ(rv_stream_level_fd(0, fd), 0);
	close(fds[0]);
	close(fds[1]);
	close(fd);
	unlink(path);
}

int
main(void)
{
	if (fix_start("t_stream_write") < 0)
		return 1;
	RUN(t_level);
	RUN(t_levels_roundtrip);
	RUN(t_writer);
	RUN(t_out);
	RUN(t_stored_frames);
	RUN(t_shells);
	RUN(t_level_auto);
	RUN(t_perf);
	rmdir(tmpdir);
	return UNIT_DONE();
}

