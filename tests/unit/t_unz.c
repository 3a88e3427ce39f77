/*
 * An archive input read through its compression (lib/src/unz.c): magics
 * are known by their bytes alone; a run of gzip, zstd, xz and bzip2
 * streams with zeros between reads as the concatenation of what they
 * hold and ends exactly where data that is not compressed starts, from a
 * pipe as from a file; a pipe can go back within its tail, not further;
 * a stream cut short and one corrupt say which they are.
 */
#include <bzlib.h>
#include <fcntl.h>
#include <lzma.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/io.h"
#include "src/unz.h"
#include "unit.h"

/* Bytes that compress, but not to nothing. */
static void
pattern(unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)("abcdefgh"[(i * seed + i / 7) % 8] ^
		    (i % 251 == 0 ? seed : 0));
}

static void
add_gzip(struct rv_buf *b, const unsigned char *p, size_t n)
{
	z_stream z;
	size_t at = b->len;

	memset(&z, 0, sizeof(z));
	EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8,
	    Z_DEFAULT_STRATEGY), Z_OK);
	rv_buf_reserve(b, deflateBound(&z, n) + 64);
	z.next_in = (Bytef *)(uintptr_t)p;
	z.avail_in = (uInt)n;
	z.next_out = b->data + at;
	z.avail_out = (uInt)(b->cap - at);
	EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
	b->len = at + z.total_out;
	deflateEnd(&z);
}

static void
add_zstd(struct rv_buf *b, const unsigned char *p, size_t n)
{
	size_t k;

	rv_buf_reserve(b, ZSTD_compressBound(n));
	k = ZSTD_compress(b->data + b->len, b->cap - b->len, p, n, 3);
	EXPECT(!ZSTD_isError(k));
	b->len += k;
}

static void
add_xz(struct rv_buf *b, const unsigned char *p, size_t n)
{
	size_t pos = b->len;

	rv_buf_reserve(b, lzma_stream_buffer_bound(n));
	EXPECT_EQ(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, NULL, p, n,
	    b->data, &pos, b->cap), LZMA_OK);
	b->len = pos;
}

static void
add_bzip2(struct rv_buf *b, const unsigned char *p, size_t n)
{
	unsigned k;

	rv_buf_reserve(b, n + n / 100 + 600);
	k = (unsigned)(b->cap - b->len);
	EXPECT_EQ(BZ2_bzBuffToBuffCompress((char *)b->data + b->len, &k,
	    (char *)(uintptr_t)p, (unsigned)n, 1, 0, 0), BZ_OK);
	b->len += k;
}

/* The input as a file (fd at 0) or a pipe a thread writes. */
struct feeder {
	int fd;
	const unsigned char *p;
	size_t n;
	pthread_t t;
};

static void *
feed(void *arg)
{
	struct feeder *f = arg;

	/* A reader that stops early closes the pipe: the write fails. */
	(void)rv_write_full(f->fd, f->p, f->n);
	close(f->fd);
	return NULL;
}

static int
input(const struct rv_buf *b, int pipe_, struct feeder *f)
{
	char path[] = "/tmp/t_unz.XXXXXX";
	int fd, p[2];

	if (!pipe_) {
		fd = mkstemp(path);
		EXPECT(fd >= 0);
		unlink(path);
		EXPECT_EQ(write(fd, b->data, b->len), (long)b->len);
		EXPECT_EQ(lseek(fd, 0, SEEK_SET), 0);
		f->fd = -1;
		return fd;
	}
	EXPECT_EQ(pipe(p), 0);
	f->fd = p[1];
	f->p = b->data;
	f->n = b->len;
	EXPECT_EQ(pthread_create(&f->t, NULL, feed, f), 0);
	return p[0];
}

static void
done(int fd, struct feeder *f)
{
	close(fd);
	if (f->fd >= 0)
		pthread_join(f->t, NULL);
}

/* Read the current archive to its end into out.  Returns unz_read's
 * last answer (0, or -1). */
static ssize_t
drain(struct unz *u, struct rv_buf *out)
{
	const void *p;
	ssize_t k;

	out->len = 0;
	while ((k = unz_read(u, &p)) > 0)
		rv_buf_append(out, p, (size_t)k);
	return k;
}

static void
t_detect(void)
{
	static const unsigned char skippable[] = { 0x5e, 0x2a, 0x4d, 0x18 };
	static const unsigned char bz[] = "BZh91AY&SY";

	EXPECT_EQ(unz_detect((const unsigned char *)"\x1f\x8b\x08", 3),
	    UNZ_GZIP);
	EXPECT_EQ(unz_detect((const unsigned char *)"\x1f\x8b", 2), UNZ_NONE);
	EXPECT_EQ(unz_detect((const unsigned char *)"\x28\xb5\x2f\xfd", 4),
	    UNZ_ZSTD);
	EXPECT_EQ(unz_detect(skippable, sizeof(skippable)), UNZ_ZSTD);
	EXPECT_EQ(unz_detect((const unsigned char *)"\xfd" "7zXZ\0", 6),
	    UNZ_XZ);
	EXPECT_EQ(unz_detect(bz, 10), UNZ_BZIP2);
	/* "BZh" alone is text, not a bzip2 stream */
	EXPECT_EQ(unz_detect((const unsigned char *)"BZh9 and so", 10),
	    UNZ_NONE);
	EXPECT_EQ(unz_detect((const unsigned char *)"ustar", 5), UNZ_NONE);
	EXPECT_STR(unz_name(UNZ_BZIP2), "bzip2");
}

/*
 * gzip, zeros, zstd, xz, bzip2, then data that is none of them: one run
 * of the four decoded, ending at the plain data's first byte; the plain
 * data is given as it is; then the end.
 */
static void
run_once(int pipe_)
{
	static unsigned char a[70000], b[3000], c[5000], d[9000];
	static const char plain[] = "plain tar bytes, say";
	struct rv_buf in = { 0 }, want = { 0 }, out = { 0 };
	struct feeder f;
	struct unz *u;
	size_t end;
	int fd;

	pattern(a, sizeof(a), 3);
	pattern(b, sizeof(b), 5);
	pattern(c, sizeof(c), 7);
	pattern(d, sizeof(d), 11);
	add_gzip(&in, a, sizeof(a));
	rv_buf_reserve(&in, 100);
	memset(in.data + in.len, 0, 100);
	in.len += 100;
	add_zstd(&in, b, sizeof(b));
	add_xz(&in, c, sizeof(c));
	add_bzip2(&in, d, sizeof(d));
	end = in.len;
	rv_buf_append(&in, plain, sizeof(plain) - 1);
	rv_buf_append(&want, a, sizeof(a));
	rv_buf_append(&want, b, sizeof(b));
	rv_buf_append(&want, c, sizeof(c));
	rv_buf_append(&want, d, sizeof(d));

	fd = input(&in, pipe_, &f);
	u = unz_new(fd, !pipe_);
	EXPECT_EQ(unz_start(u, 0), 1);
	EXPECT_EQ(unz_kind(u), UNZ_GZIP);
	EXPECT_EQ(unz_base(u), 0);
	EXPECT_EQ(drain(u, &out), 0);
	EXPECT_EQ(out.len, want.len);
	EXPECT(out.len == want.len && memcmp(out.data, want.data,
	    want.len) == 0);
	EXPECT_EQ(unz_end(u), end);
	EXPECT_EQ(unz_state(u), UNZ_OK);
	/* the next archive: given as it is */
	EXPECT_EQ(unz_start(u, unz_end(u)), 1);
	EXPECT_EQ(unz_kind(u), UNZ_NONE);
	EXPECT_EQ(unz_base(u), end);
	EXPECT_EQ(drain(u, &out), 0);
	EXPECT(out.len == sizeof(plain) - 1 && memcmp(out.data, plain,
	    out.len) == 0);
	EXPECT_EQ(unz_start(u, unz_pos(u)), 0);
	unz_free(u);
	done(fd, &f);
	rv_buf_release(&in);
	rv_buf_release(&want);
	rv_buf_release(&out);
}

static void
t_run(void)
{
	run_once(0);
	run_once(1);
}

/* A pipe goes back within UNZ_TAIL of what was read, not further. */
static void
t_back(void)
{
	size_t n = 24 * UNZ_TAIL;	/* more than the window holds */
	struct rv_buf in = { 0 }, out = { 0 };
	unsigned char q[16];
	struct feeder f;
	struct unz *u;
	int fd;

	rv_buf_reserve(&in, n);
	pattern(in.data, n, 13);
	in.data[0] = 'x';	/* no magic */
	in.len = n;
	fd = input(&in, 1, &f);
	u = unz_new(fd, 0);
	EXPECT_EQ(unz_start(u, 0), 1);
	EXPECT_EQ(drain(u, &out), 0);
	EXPECT_EQ(out.len, n);
	EXPECT_EQ(unz_peek(u, n - UNZ_TAIL / 2, q, sizeof(q)),
	    (long)sizeof(q));
	EXPECT(memcmp(q, in.data + n - UNZ_TAIL / 2, sizeof(q)) == 0);
	EXPECT_EQ(unz_peek(u, 0, q, sizeof(q)), -1);
	EXPECT_EQ(unz_start(u, 0), -1);
	EXPECT(strstr(rv_errmsg(), "no longer held") != NULL);
	/* within the tail: read again from there */
	EXPECT_EQ(unz_start(u, n - 100), 1);
	EXPECT_EQ(drain(u, &out), 0);
	EXPECT_EQ(out.len, 100);
	unz_free(u);
	done(fd, &f);
	rv_buf_release(&in);
	rv_buf_release(&out);
}

/* Cut short, and corrupt: told apart, with what was decoded given first. */
static void
t_bad(void)
{
	static unsigned char a[200000];
	struct rv_buf in = { 0 }, out = { 0 };
	struct feeder f;
	struct unz *u;
	size_t k;
	int fd;

	for (k = 0; k < sizeof(a); k++)	/* a little less compressible */
		a[k] = (unsigned char)((k * 2654435761u) >> 13);
	add_gzip(&in, a, sizeof(a));
	in.len = in.len * 2 / 3;
	fd = input(&in, 1, &f);
	u = unz_new(fd, 0);
	EXPECT_EQ(unz_start(u, 0), 1);
	EXPECT_EQ(drain(u, &out), -1);
	EXPECT_EQ(unz_state(u), UNZ_TRUNCATED);
	EXPECT_STR(unz_error(u), "truncated gzip input");
	EXPECT(out.len > 0 && out.len < sizeof(a));
	EXPECT(memcmp(out.data, a, out.len) == 0);
	unz_free(u);
	done(fd, &f);

	/* xz checks what it decodes (zstd frames need not) */
	in.len = 0;
	add_xz(&in, a, sizeof(a));
	for (k = in.len / 2; k < in.len / 2 + 32; k++)
		in.data[k] ^= 0x5a;
	fd = input(&in, 0, &f);
	u = unz_new(fd, 1);
	EXPECT_EQ(unz_start(u, 0), 1);
	EXPECT_EQ(unz_kind(u), UNZ_XZ);
	EXPECT_EQ(drain(u, &out), -1);
	EXPECT_EQ(unz_state(u), UNZ_CORRUPT);
	EXPECT_STR(unz_error(u), "xz data corrupt: compressed data is "
	    "corrupt");
	unz_free(u);
	done(fd, &f);
	rv_buf_release(&in);
	rv_buf_release(&out);
}

int
main(void)
{
	rv_setprogname("t_unz");
	RUN(t_detect);
	RUN(t_run);
	RUN(t_back);
	RUN(t_bad);
	return UNIT_DONE();
}
