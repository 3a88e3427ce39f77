/*
 * What t_stream_read.c and t_stream_write.c share: a small stream of every
 * record kind and dtype with every header field set to something unusual
 * (small_fixture), encoding it with the library's encoder, and checking a
 * reader against it.  Each file uses the functions it needs (FIX marks
 * them unused where it does not); they report through unit.h's EXPECT, so
 * they live here, in each file's own unit state.
 */
#ifndef RV_STREAM_FIX_H
#define RV_STREAM_FIX_H

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/rng.h"
#include "base/xmem.h"
#include "stream/batch.h"
#include "stream/meta.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "unit.h"

#define FIX static __attribute__((unused))

#define NAME "t"

/*
 * The framing tests read records as they lie, epoch-ends unjoined and
 * epochs unchecked: their fixtures mix epochs on purpose (every header
 * field unusual).  t_epochs tests the epochs every reader sees.
 */
FIX struct rv_reader *
as_raw(struct rv_reader *r)
{
	if (r != NULL)
		rv_reader_set_raw(r, 1);
	return r;
}

/* One item of a test stream: a record or a skippable frame. */
struct item {
	int skip;		/* 1: skippable frame of skiplen bytes */
	size_t skiplen;
	struct rv_rec rec;
	unsigned char *payload;	/* owned */
	size_t start, end;	/* where it lies in the stream */
};

struct fixture {
	struct item it[16];
	int n;
	struct rv_buf s;	/* the stream */
};

FIX void
fill_bytes(unsigned char *p, size_t n, uint64_t seed)
{
	struct rv_rng g;
	size_t i;

	rv_rng_init(&g, seed, 99, 0, 0, 0);
	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(rv_rng_u32(&g) >> 24);
}

/* A smooth image with a little noise: compresses like a photograph. */
FIX void
fill_image(unsigned char *p, uint32_t h, uint32_t w, uint32_t c,
    uint64_t seed)
{
	struct rv_rng g;
	uint32_t y, x, k;
	double a = 0.02 + 0.01 * (double)(seed % 7), b = 0.03;

	rv_rng_init(&g, seed, 98, 0, 0, 0);
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++)
			for (k = 0; k < c; k++) {
				double v = 128 + 60 * sin(a * x + k) +
				    50 * cos(b * y * (k + 1) + (double)seed);
				v += (double)(rv_rng_u32(&g) % 5) - 2;
				p[((size_t)y * w + x) * c + k] =
				    (unsigned char)(v < 0 ? 0 : v > 255 ?
				    255 : v);
			}
}

FIX struct item *
add_rec(struct fixture *f, enum rv_kind kind, enum rv_dtype dt)
{
	struct item *it = &f->it[f->n++];

	memset(it, 0, sizeof(*it));
	rv_rec_init(&it->rec, kind);
	it->rec.dtype = (uint8_t)dt;
	return it;
}

FIX void
set_payload(struct item *it, size_t n, uint64_t seed)
{
	it->payload = xmalloc(n ? n : 1);
	fill_bytes(it->payload, n, seed);
	it->rec.payload_len = n;
}

FIX void
add_skip(struct fixture *f, size_t n)
{
	struct item *it = &f->it[f->n++];

	memset(it, 0, sizeof(*it));
	it->skip = 1;
	it->skiplen = n;
}

/* Encode every item into f->s with the library encoder. */
FIX void
encode(struct fixture *f, int level)
{
	struct rv_enc *e = rv_enc_new(level);
	int i;

	f->s.len = 0;
	for (i = 0; i < f->n; i++) {
		struct item *it = &f->it[i];
		it->start = f->s.len;
		if (it->skip) {
			unsigned char h[8];
			unsigned char *body = xcalloc(1, it->skiplen + 1);
			rv_put32(h, 0x184D2A50u + (uint32_t)(i % 16));
			rv_put32(h + 4, (uint32_t)it->skiplen);
			fill_bytes(body, it->skiplen, (uint64_t)i);
			/* make the body look like frames, to be sure it is
			 * skipped and not parsed */
			if (it->skiplen >= 4)
				rv_put32(body, 0xFD2FB528u);
			rv_buf_append(&f->s, h, 8);
			rv_buf_append(&f->s, body, it->skiplen);
			free(body);
		} else {
			EXPECT(rv_enc_frame(e, &it->rec, it->payload,
			    &f->s) == 0);
		}
		it->end = f->s.len;
	}
	rv_enc_free(e);
}

FIX void
fixture_release(struct fixture *f)
{
	int i;

	for (i = 0; i < f->n; i++)
		free(f->it[i].payload);
	rv_buf_release(&f->s);
	f->n = 0;
}

/*
 * The standard small stream: metadata, every kind and dtype, every header
 * field set to something unusual, and skippable frames at the start, in
 * the middle and at the end.
 */
FIX void
small_fixture(struct fixture *f, int level)
{
	struct item *it;
	struct rv_meta m;
	struct rv_buf b = { 0 };
	unsigned char *p;
	uint32_t k;

	memset(f, 0, sizeof(*f));
	add_skip(f, 5);
	it = add_rec(f, RV_META, RV_DT_NONE);
	rv_meta_init(&m);
	rv_meta_set(&m, "producer", "t_stream 0.1.0");
	rv_meta_set(&m, "classes", "2");
	rv_meta_set(&m, "class.0", "cat");
	rv_meta_set(&m, "class.1", "dog");
	rv_meta_encode(&m, &b);
	rv_meta_release(&m);
	it->payload = xmalloc(b.len);
	memcpy(it->payload, b.data, b.len);
	it->rec.payload_len = b.len;
	rv_buf_release(&b);

	it = add_rec(f, RV_SAMPLE, RV_DT_U8);
	it->rec.height = 28;
	it->rec.width = 28;
	it->rec.channels = 1;
	it->rec.epoch = 3;
	it->rec.id = 12345678901234ull;
	it->rec.label = 7;
	it->rec.flags = RV_F_PARTIAL | RV_F_CACHED;
	it->rec.uses = 2;
	it->rec.weight = 0.5f;
	it->rec.score = 0.125f;
	it->payload = xmalloc(784);
	fill_image(it->payload, 28, 28, 1, 1);
	it->rec.payload_len = 784;

	it = add_rec(f, RV_SAMPLE, RV_DT_JPEG);
	it->rec.id = UINT64_MAX;
	it->rec.epoch = UINT32_MAX;
	it->rec.label = INT32_MIN;
	it->rec.height = 10;
	it->rec.width = 20;
	it->rec.channels = 3;
	it->rec.flags = RV_F_FINAL | RV_F_SCORED | RV_F_REWEIGHTED;
	it->rec.uses = UINT32_MAX;
	it->rec.weight = -0.0f;
	set_payload(it, 300, 2);

	add_skip(f, 0);

	it = add_rec(f, RV_BATCH, RV_DT_U8);
	it->rec.count = 3;
	it->rec.height = 4;
	it->rec.width = 5;
	it->rec.channels = 3;
	it->rec.epoch = 1;
	it->rec.payload_len = rv_batch_pixels_off(3) + 3 * 4 * 5 * 3;
	it->payload = xcalloc(1, (size_t)it->rec.payload_len);
	p = it->payload;
	for (k = 0; k < 3; k++) {
		rv_put64(p + 8 * k, 100 + k);
		rv_put32(p + 24 + 4 * k, k);
		rv_put32(p + 36 + 4 * k, 0x3f800000u);
	}
	fill_bytes(p + rv_batch_pixels_off(3), 180, 3);

	it = add_rec(f, RV_EPOCH_END, RV_DT_NONE);
	it->rec.epoch = 1;
	it->rec.count = 4;

	add_skip(f, 40);

	it = add_rec(f, RV_SAMPLE, RV_DT_U8);
	it->rec.height = 2;
	it->rec.width = 3;
	it->rec.channels = 4;
	it->rec.id = 0;
	it->rec.label = -1;
	it->rec.weight = 3.0e38f;
	set_payload(it, 24, 4);

	it = add_rec(f, RV_SAMPLE, RV_DT_PNG);
	it->rec.id = 1;
	set_payload(it, 1, 5);

	add_skip(f, 9);
	encode(f, level);
}

/* Compare a record read back with the item written, field by field. */
FIX int
same_rec(const struct rv_rec *a, const struct item *it)
{
	const struct rv_rec *b = &it->rec;

	return a->version == RV_VERSION && a->hdr_len == RV_HDR_LEN &&
	    a->kind == b->kind && a->dtype == b->dtype &&
	    a->flags == b->flags && a->epoch == b->epoch && a->id == b->id &&
	    a->label == b->label && a->height == b->height &&
	    a->width == b->width && a->channels == b->channels &&
	    a->count == b->count && a->uses == b->uses &&
	    memcmp(&a->weight, &b->weight, 4) == 0 &&
	    memcmp(&a->score, &b->score, 4) == 0 &&
	    a->payload_len == b->payload_len &&
	    (a->payload_len == 0 || memcmp(a->payload, it->payload,
	    (size_t)a->payload_len) == 0);
}

/*
 * Read every record of r and check it against the fixture's records in
 * order, offsets included.  Returns the reader's final result (0 or -1)
 * and the number of records matched in *nok.
 */
FIX int
check_reader(struct rv_reader *r, const struct fixture *f, int *nok,
    uint64_t base)
{
	struct rv_rec rec;
	int i = 0, rc;

	*nok = 0;
	while ((rc = rv_reader_next(r, &rec)) == 1) {
		while (i < f->n && f->it[i].skip)
			i++;
		if (i >= f->n || !same_rec(&rec, &f->it[i]) ||
		    rv_reader_offset(r) != base + f->it[i].start ||
		    rv_reader_bytes(r) < base + f->it[i].end)
			return 2;
		i++;
		(*nok)++;
		if (rv_reader_records(r) != (uint64_t)*nok)
			return 3;
	}
	return rc;
}

FIX int
nrecords(const struct fixture *f)
{
	int i, n = 0;

	for (i = 0; i < f->n; i++)
		n += !f->it[i].skip;
	return n;
}

static char tmpdir[64];	/* fix_start() makes it */

/*
 * What each main() does first: the program name for messages, no
 * environment that changes the stream (RV_LEVEL, the size limits), and
 * a fresh temporary directory /tmp/NAME.XXXXXX.  0, or -1 (said).
 */
FIX int
fix_start(const char *name)
{
	char tmpl[64];

	rv_setprogname(name);
	unsetenv("RV_LEVEL");
	unsetenv("RV_MAX_RECORD");
	unsetenv("RV_MAX_SAMPLE");
	snprintf(tmpl, sizeof(tmpl), "/tmp/%s.XXXXXX", name);
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return -1;
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s", tmpl);
	return 0;
}

FIX char *
tmppath(const char *leaf)
{
	return xasprintf("%s/%s", tmpdir, leaf);
}

FIX void
write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	EXPECT(fd >= 0);
	EXPECT(rv_write_full(fd, p, n) == 0);
	close(fd);
}

#endif
