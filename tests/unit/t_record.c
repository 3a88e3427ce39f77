/*
 * Record headers: the byte layout documented in rv-stream(5) (pinned here
 * byte by byte, so the page and the code cannot drift apart), defaults,
 * and every validation rule a reader applies before it allocates.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "stream/record.h"
#include "unit.h"

#define NOLIMIT ((uint64_t)1 << 62)

static void
t_init(void)
{
	struct rv_rec r;

	rv_rec_init(&r, RV_SAMPLE);
	EXPECT_EQ(r.version, RV_VERSION);
	EXPECT_EQ(r.hdr_len, RV_HDR_LEN);
	EXPECT_EQ(r.kind, RV_SAMPLE);
	EXPECT_EQ(r.dtype, RV_DT_NONE);
	EXPECT_EQ(r.label, -1);
	EXPECT_EQ(r.count, 1);
	EXPECT(r.weight == 1.0f);
	EXPECT(isnan(r.score));
	EXPECT_EQ(r.flags, 0);
	EXPECT_EQ(r.payload_len, 0);
	rv_rec_init(&r, RV_BATCH);
	EXPECT_EQ(r.count, 0);
	rv_rec_init(&r, RV_EPOCH_END);
	EXPECT_EQ(r.count, 0);
	EXPECT_EQ(r.kind, RV_EPOCH_END);
}

/* The numbers are part of the format: never renumber. */
static void
t_numbers(void)
{
	EXPECT_EQ(RV_MAGIC, 0x31525652u);
	EXPECT(memcmp("RVR1", "\x52\x56\x52\x31", 4) == 0);
	EXPECT_EQ(RV_VERSION, 1);
	EXPECT_EQ(RV_HDR_LEN, 64);
	EXPECT_EQ(RV_SAMPLE, 1);
	EXPECT_EQ(RV_BATCH, 2);
	EXPECT_EQ(RV_EPOCH_END, 3);
	EXPECT_EQ(RV_META, 4);
	EXPECT_EQ(RV_DT_NONE, 0);
	EXPECT_EQ(RV_DT_U8, 1);
	EXPECT_EQ(RV_DT_JPEG, 2);
	EXPECT_EQ(RV_DT_PNG, 3);
	EXPECT_EQ(RV_F_PARTIAL, 1);
	EXPECT_EQ(RV_F_FINAL, 2);
	EXPECT_EQ(RV_F_CACHED, 4);
	EXPECT_EQ(RV_F_SCORED, 8);
	EXPECT_EQ(RV_F_REWEIGHTED, 16);
	EXPECT_EQ(RV_F_ALL, 31);
	EXPECT_STR(rv_kind_name(RV_SAMPLE), "sample");
	EXPECT_STR(rv_kind_name(RV_BATCH), "batch");
	EXPECT_STR(rv_kind_name(RV_EPOCH_END), "epoch-end");
	EXPECT_STR(rv_kind_name(RV_META), "meta");
	EXPECT_STR(rv_kind_name(0), "?");
	EXPECT_STR(rv_kind_name(99), "?");
	EXPECT_STR(rv_dtype_name(RV_DT_NONE), "none");
	EXPECT_STR(rv_dtype_name(RV_DT_U8), "u8");
	EXPECT_STR(rv_dtype_name(RV_DT_JPEG), "jpeg");
	EXPECT_STR(rv_dtype_name(RV_DT_PNG), "png");
	EXPECT_STR(rv_dtype_name(4), "?");
}

/* The layout table of rv-stream(5), byte by byte. */
static void
t_layout(void)
{
	static const unsigned char want[RV_HDR_LEN] = {
		'R', 'V', 'R', '1',		/*  0 magic */
		0x01, 0x00,			/*  4 version */
		0x40, 0x00,			/*  6 hdr_len */
		0x01,				/*  8 kind */
		0x01,				/*  9 dtype */
		0x05, 0x00,			/* 10 flags */
		0x07, 0x00, 0x00, 0x00,		/* 12 epoch */
		0x08, 0x07, 0x06, 0x05,		/* 16 id */
		0x04, 0x03, 0x02, 0x01,
		0xfe, 0xff, 0xff, 0xff,		/* 24 label -2 */
		0x1c, 0x00, 0x00, 0x00,		/* 28 height 28 */
		0x1e, 0x00, 0x00, 0x00,		/* 32 width 30 */
		0x03, 0x00, 0x00, 0x00,		/* 36 channels */
		0x01, 0x00, 0x00, 0x00,		/* 40 count */
		0x09, 0x00, 0x00, 0x00,		/* 44 uses */
		0x00, 0x00, 0x00, 0x3f,		/* 48 weight 0.5 */
		0x00, 0x00, 0xc0, 0x7f,		/* 52 score NaN */
		0xd8, 0x09, 0x00, 0x00,		/* 56 payload_len 2520 */
		0x00, 0x00, 0x00, 0x00,
	};
	unsigned char b[RV_HDR_LEN];
	struct rv_rec r, d;
	size_t i;
	int diff = -1;

	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_U8;
	r.flags = RV_F_PARTIAL | RV_F_CACHED;
	r.epoch = 7;
	r.id = 0x0102030405060708ull;
	r.label = -2;
	r.height = 28;
	r.width = 30;
	r.channels = 3;
	r.uses = 9;
	r.weight = 0.5f;
	r.payload_len = 28 * 30 * 3;
	rv_rec_encode(&r, b);
	for (i = 0; i < sizeof(b); i++)
		if (b[i] != want[i] && diff < 0)
			diff = (int)i;
	EXPECT_EQ(diff, -1);

	memset(&d, 0xaa, sizeof(d));
	EXPECT_EQ(rv_rec_decode(&d, b, sizeof(b), NOLIMIT), 0);
	EXPECT_EQ(d.version, 1);
	EXPECT_EQ(d.hdr_len, 64);
	EXPECT_EQ(d.kind, RV_SAMPLE);
	EXPECT_EQ(d.dtype, RV_DT_U8);
	EXPECT_EQ(d.flags, 5);
	EXPECT_EQ(d.epoch, 7);
	EXPECT(d.id == 0x0102030405060708ull);
	EXPECT_EQ(d.label, -2);
	EXPECT_EQ(d.height, 28);
	EXPECT_EQ(d.width, 30);
	EXPECT_EQ(d.channels, 3);
	EXPECT_EQ(d.count, 1);
	EXPECT_EQ(d.uses, 9);
	EXPECT(d.weight == 0.5f);
	EXPECT(isnan(d.score));
	EXPECT_EQ(d.payload_len, 2520);
	EXPECT(d.payload == NULL);
}

/* Extreme values survive a round trip bit for bit. */
static void
t_roundtrip_extremes(void)
{
	unsigned char b[RV_HDR_LEN];
	struct rv_rec r, d;

	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_PNG;
	r.flags = 0xffff;	/* unknown flags are carried, not refused */
	r.epoch = UINT32_MAX;
	r.id = UINT64_MAX;
	r.label = INT32_MIN;
	r.height = r.width = UINT32_MAX;
	r.channels = 99;	/* shape is a hint for encoded samples */
	r.uses = UINT32_MAX;
	r.weight = -INFINITY;
	r.score = -0.0f;
	r.payload_len = 1;
	rv_rec_encode(&r, b);
	EXPECT_EQ(rv_rec_decode(&d, b, sizeof(b), NOLIMIT), 0);
	EXPECT_EQ(d.flags, 0xffff);
	EXPECT(d.epoch == UINT32_MAX);
	EXPECT(d.id == UINT64_MAX);
	EXPECT(d.label == INT32_MIN);
	EXPECT(d.height == UINT32_MAX && d.width == UINT32_MAX);
	EXPECT_EQ(d.channels, 99);
	EXPECT(d.uses == UINT32_MAX);
	EXPECT(isinf(d.weight) && d.weight < 0);
	EXPECT(d.score == 0.0f && signbit(d.score));
}

static void
t_pixels_len(void)
{
	struct rv_rec r;

	rv_rec_init(&r, RV_SAMPLE);
	r.height = 224;
	r.width = 224;
	r.channels = 3;
	EXPECT_EQ(rv_rec_pixels_len(&r), 150528);
	r.kind = RV_BATCH;
	r.count = 256;
	EXPECT_EQ(rv_rec_pixels_len(&r), 150528 * 256);
	r.height = r.width = UINT32_MAX;
	r.channels = 4;
	r.count = UINT32_MAX;
	EXPECT_EQ(rv_rec_pixels_len(&r), 0);
	r.kind = RV_SAMPLE;
	EXPECT_EQ(rv_rec_pixels_len(&r), 0);	/* 2^66 */
	/* products from 2^62 up are refused, below are exact */
	r.height = 1u << 31;
	r.width = 1u << 30;
	r.channels = 2;
	EXPECT_EQ(rv_rec_pixels_len(&r), 0);
	r.channels = 1;
	EXPECT(rv_rec_pixels_len(&r) == (uint64_t)1 << 61);
	r.channels = 3;
	r.width = 1u << 29;
	EXPECT(rv_rec_pixels_len(&r) == (uint64_t)3 << 60);
	EXPECT_EQ(rv_batch_pixels_off(0), 0);
	EXPECT_EQ(rv_batch_pixels_off(3), 48);
	EXPECT(rv_batch_pixels_off(UINT32_MAX) == (size_t)UINT32_MAX * 16);
}

/* Decode a header built from r (then patched at off with v) and return
 * the message, or "" if it was accepted. */
static const char *
verdict(const struct rv_rec *r, size_t avail, uint64_t max)
{
	unsigned char b[RV_HDR_LEN + 16];
	struct rv_rec d;

	memset(b, 0, sizeof(b));
	rv_rec_encode(r, b);
	if (rv_rec_decode(&d, b, avail, max) == 0)
		return "";
	return rv_errmsg();
}

static void
t_validation(void)
{
	struct rv_rec r;
	unsigned char b[RV_HDR_LEN];
	struct rv_rec d;

	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_U8;
	r.height = r.width = 28;
	r.channels = 1;
	r.payload_len = 784;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "");
	EXPECT_STR(verdict(&r, 64, 784), "");
	EXPECT_STR(verdict(&r, 64, 783), "record declares a 784-byte payload, "
	    "over the 783-byte limit");
	EXPECT_STR(verdict(&r, 7, NOLIMIT), "short record header (7 bytes)");
	EXPECT_STR(verdict(&r, 63, NOLIMIT), "short record header (63 of 64 "
	    "bytes)");
	r.payload_len = 785;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "payload is 785 bytes, shape "
	    "needs 784");
	r.payload_len = 784;
	r.count = 0;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "sample record with count 0");
	r.count = 1;
	r.height = 0;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "sample record with empty "
	    "shape 0x28x1");
	r.height = 28;
	r.channels = 5;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "5 channels (at most 4)");
	r.channels = 4;
	r.height = r.width = UINT32_MAX;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "shape 4294967295x4294967295x4 "
	    "overflows");
	r.dtype = RV_DT_NONE;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "unknown dtype 0");
	r.dtype = 200;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "unknown dtype 200");
	r.dtype = RV_DT_JPEG;
	r.payload_len = 0;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "empty encoded sample");
	r.payload_len = 5;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "");

	/* batches: N ids, labels, weights, then N*H*W*C pixels */
	rv_rec_init(&r, RV_BATCH);
	r.dtype = RV_DT_U8;
	r.count = 4;
	r.height = r.width = 2;
	r.channels = 3;
	r.payload_len = 4 * 16 + 4 * 12;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "");
	r.payload_len = 4 * 12;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "payload is 48 bytes, shape "
	    "needs 112");
	r.count = 0;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "empty batch record");
	r.count = 4;
	r.dtype = RV_DT_PNG;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "batch record with dtype png");
	r.dtype = RV_DT_U8;
	r.count = UINT32_MAX;
	r.height = r.width = 1u << 16;
	r.channels = 1;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "shape 65536x65536x1 overflows");

	rv_rec_init(&r, RV_EPOCH_END);
	r.epoch = 3;
	r.count = 60000;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "");
	r.payload_len = 1;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "epoch-end record with a "
	    "payload");
	r.payload_len = 0;
	r.dtype = RV_DT_JPEG;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "epoch-end record with dtype "
	    "jpeg");

	rv_rec_init(&r, RV_META);
	r.payload_len = 1000;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "");
	EXPECT_STR(verdict(&r, 64, 999), "record declares a 1000-byte "
	    "payload, over the 999-byte limit");
	r.dtype = RV_DT_U8;
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "meta record with dtype u8");
	rv_rec_init(&r, 0);
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "unknown record kind 0");
	rv_rec_init(&r, 5);
	EXPECT_STR(verdict(&r, 64, NOLIMIT), "unknown record kind 5");

	/* fields patched by hand */
	rv_rec_init(&r, RV_META);
	rv_rec_encode(&r, b);
	b[0] = 'X';
	EXPECT_EQ(rv_rec_decode(&d, b, 64, NOLIMIT), -1);
	EXPECT_STR(rv_errmsg(), "not an rv record (bad magic 0x31525658)");
	rv_rec_encode(&r, b);
	b[4] = 0;
	EXPECT_EQ(rv_rec_decode(&d, b, 64, NOLIMIT), -1);
	EXPECT_STR(rv_errmsg(), "unsupported record version 0");
	rv_rec_encode(&r, b);
	b[5] = 1;
	EXPECT_EQ(rv_rec_decode(&d, b, 64, NOLIMIT), -1);
	EXPECT_STR(rv_errmsg(), "unsupported record version 257");
	rv_rec_encode(&r, b);
	b[6] = 63;
	EXPECT_EQ(rv_rec_decode(&d, b, 64, NOLIMIT), -1);
	EXPECT_STR(rv_errmsg(), "record header length 63 below 64");
	/* longer headers (later versions) are fine when present */
	{
		unsigned char l[80];
		memset(l, 0x55, sizeof(l));
		rv_rec_encode(&r, l);
		l[6] = 80;
		EXPECT_EQ(rv_rec_decode(&d, l, 80, NOLIMIT), 0);
		EXPECT_EQ(d.hdr_len, 80);
		EXPECT_EQ(rv_rec_decode(&d, l, 79, NOLIMIT), -1);
		EXPECT_STR(rv_errmsg(), "short record header (79 of 80 "
		    "bytes)");
	}
}

static void
t_le(void)
{
	unsigned char b[8];

	rv_put32(b, 0xdeadbeefu);
	EXPECT(b[0] == 0xef && b[1] == 0xbe && b[2] == 0xad && b[3] == 0xde);
	EXPECT(rv_le32(b) == 0xdeadbeefu);
	rv_put64(b, 0x0123456789abcdefull);
	EXPECT(b[0] == 0xef && b[7] == 0x01);
	EXPECT(rv_le64(b) == 0x0123456789abcdefull);
}

int
main(void)
{
	rv_setprogname("t_record");
	RUN(t_init);
	RUN(t_numbers);
	RUN(t_layout);
	RUN(t_roundtrip_extremes);
	RUN(t_pixels_len);
	RUN(t_validation);
	RUN(t_le);
	return UNIT_DONE();
}
