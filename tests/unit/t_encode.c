/*
 * Samples encoded for storage (lib/codec/encode.c): PNG gives the pixels
 * back byte for byte, JPEG near them and fewer bytes at a lower quality,
 * grey stays one channel, a sample in the format asked passes, the other
 * format is converted (by the thread's decoder, into its image), and what
 * cannot be encoded fails with its reason.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "codec/codec.h"
#include "codec/coder.h"
#include "codec/encode.h"
#include "stream/record.h"
#include "unit.h"

/* A smooth image with an edge: h x w x c. */
static unsigned char *
picture(uint32_t h, uint32_t w, uint32_t c)
{
	unsigned char *p = malloc((size_t)h * w * c);
	uint32_t y, x, k;

	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++)
			for (k = 0; k < c; k++)
				p[((size_t)y * w + x) * c + k] = (unsigned char)
				    ((x * 3 + y * 2 + k * 40 + (x > w / 2 ?
				    90 : 0)) & 255);
	return p;
}

static void
sample(struct rv_rec *r, int dtype, uint32_t h, uint32_t w, uint32_t c,
    uint64_t len)
{
	rv_rec_init(r, RV_SAMPLE);
	r->dtype = (uint8_t)dtype;
	r->height = h;
	r->width = w;
	r->channels = c;
	r->payload_len = len;
	r->id = 7;
	r->label = 3;
}

static void
t_format(void)
{
	int dt = 0;

	EXPECT_EQ(rv_encode_format("jpeg", &dt), 0);
	EXPECT_EQ(dt, RV_DT_JPEG);
	EXPECT_EQ(rv_encode_format("jpg", &dt), 0);
	EXPECT_EQ(rv_encode_format("png", &dt), 0);
	EXPECT_EQ(dt, RV_DT_PNG);
	EXPECT_EQ(rv_encode_format("webp", &dt), -1);
	EXPECT_STR(rv_errmsg(), "'webp': not a format rv-encode writes "
	    "(jpeg, png)");
}

/* PNG: the pixels back, byte for byte; header fields kept. */
static void
t_png(void)
{
	struct rv_encoder e;
	struct rv_encode_conf c = { RV_DT_PNG, 90, 0 };
	struct rv_decode_opts o = { 3, 0, 0 };
	struct rv_codec *dec = rv_codec_new();
	struct rv_img img = { 0 };
	struct rv_buf out = { 0 };
	struct rv_rec r, h;
	struct rv_coder k;
	unsigned char *px = picture(37, 53, 3);

	EXPECT_EQ(rv_coder_init(&k, 0, 1), 0);
	EXPECT_EQ(rv_encoder_init(&e, &c), 0);
	sample(&r, RV_DT_U8, 37, 53, 3, 37 * 53 * 3);
	EXPECT_EQ(rv_encode_sample(&e, &k, &r, px, &h, &out), 0);
	EXPECT_EQ(h.dtype, RV_DT_PNG);
	EXPECT_EQ(h.payload_len, out.len);
	EXPECT(h.id == 7 && h.label == 3 && h.height == 37 && h.width == 53);
	EXPECT_EQ(rv_codec_decode(dec, out.data, out.len, &o, &img), 0);
	EXPECT(img.h == 37 && img.w == 53 && img.c == 3 &&
	    memcmp(img.data, px, 37 * 53 * 3) == 0);
	/* a PNG sample passes as it came */
	sample(&r, RV_DT_PNG, 37, 53, 3, out.len);
	EXPECT_EQ(rv_encode_sample(&e, &k, &r, out.data, &h, &out), 1);
	rv_encoder_release(&e);
	rv_coder_release(&k);
	rv_img_release(&img);
	rv_buf_release(&out);
	rv_codec_free(dec);
	free(px);
}

/* JPEG: near the pixels, smaller at a lower quality; grey one channel;
 * a PNG sample converted; what a JPEG cannot hold refused. */
static void
t_jpeg(void)
{
	struct rv_encoder e50, e95, ep;
	struct rv_encode_conf c50 = { RV_DT_JPEG, 50, 0 };
	struct rv_encode_conf c95 = { RV_DT_JPEG, 95, 420 };
	struct rv_encode_conf cp = { RV_DT_PNG, 90, 0 };
	struct rv_decode_opts o = { 1, 0, 0 };
	struct rv_codec *dec = rv_codec_new();
	struct rv_img img = { 0 };
	struct rv_buf a = { 0 }, b = { 0 }, p = { 0 };
	struct rv_rec r, h;
	unsigned char *grey = picture(64, 64, 1), *rgba = picture(8, 8, 4);
	struct rv_coder k;
	double err = 0;
	size_t i;

	EXPECT_EQ(rv_coder_init(&k, 0, 1), 0);
	EXPECT_EQ(rv_encoder_init(&e50, &c50), 0);
	EXPECT_EQ(rv_encoder_init(&e95, &c95), 0);
	EXPECT_EQ(rv_encoder_init(&ep, &cp), 0);
	sample(&r, RV_DT_U8, 64, 64, 1, 64 * 64);
	EXPECT_EQ(rv_encode_sample(&e50, &k, &r, grey, &h, &a), 0);
	EXPECT_EQ(rv_encode_sample(&e95, &k, &r, grey, &h, &b), 0);
	EXPECT(a.len < b.len);
	EXPECT_EQ(h.channels, 1);
	EXPECT_EQ(rv_codec_decode(dec, b.data, b.len, &o, &img), 0);
	for (i = 0; i < 64 * 64; i++)
		err += abs((int)img.data[i] - (int)grey[i]);
	EXPECT(err / (64 * 64) < 3);
	/* the same bytes again: no state carried between samples */
	EXPECT_EQ(rv_encode_sample(&e95, &k, &r, grey, &h, &a), 0);
	EXPECT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
	/* a PNG sample becomes a JPEG of its pixels, grey kept grey */
	EXPECT_EQ(rv_encode_sample(&ep, &k, &r, grey, &h, &p), 0);
	sample(&r, RV_DT_PNG, 0, 0, 0, p.len);
	EXPECT_EQ(rv_encode_sample(&e95, &k, &r, p.data, &h, &a), 0);
	EXPECT(h.dtype == RV_DT_JPEG && h.channels == 1 && h.height == 64);
	EXPECT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
	/* four channels, a short payload, a PNG that is none */
	sample(&r, RV_DT_U8, 8, 8, 4, 8 * 8 * 4);
	EXPECT_EQ(rv_encode_sample(&e95, &k, &r, rgba, &h, &a), -1);
	EXPECT_STR(rv_errmsg(), "4 channels: a JPEG holds 1 or 3 (use "
	    "--format png)");
	EXPECT_EQ(rv_encode_sample(&ep, &k, &r, rgba, &h, &a), 0);
	sample(&r, RV_DT_U8, 8, 8, 3, 100);
	EXPECT_EQ(rv_encode_sample(&e95, &k, &r, rgba, &h, &a), -1);
	EXPECT_STR(rv_errmsg(), "payload of 100 bytes for 8x8x3 pixels");
	sample(&r, RV_DT_PNG, 8, 8, 3, 16);
	EXPECT_EQ(rv_encode_sample(&e95, &k, &r, rgba, &h, &a), -1);
	rv_encoder_release(&e50);
	rv_encoder_release(&e95);
	rv_encoder_release(&ep);
	rv_coder_release(&k);
	rv_img_release(&img);
	rv_buf_release(&a);
	rv_buf_release(&b);
	rv_buf_release(&p);
	rv_codec_free(dec);
	free(grey);
	free(rgba);
}

/* 4:4:4 against 4:2:0 on colour: more bytes, nearer the pixels; grey
 * the same either way (it has no chroma). */
static void
t_subsample(void)
{
	struct rv_encoder e420, e444;
	struct rv_encode_conf c420 = { RV_DT_JPEG, 90, 0 };
	struct rv_encode_conf c444 = { RV_DT_JPEG, 90, 444 };
	struct rv_decode_opts o = { 3, 0, 0 };
	struct rv_codec *dec = rv_codec_new();
	struct rv_img img = { 0 };
	struct rv_buf a = { 0 }, b = { 0 };
	struct rv_rec r, h;
	struct rv_coder k;
	unsigned char *rgb = picture(48, 40, 3), *grey = picture(32, 32, 1);
	double err[2] = { 0, 0 };
	size_t i;
	int s;

	EXPECT_EQ(rv_encode_subsample("444", &s), 0);
	EXPECT_EQ(s, 444);
	EXPECT_EQ(rv_encode_subsample("420", &s), 0);
	EXPECT_EQ(s, 420);
	EXPECT_EQ(rv_encode_subsample("422", &s), -1);
	EXPECT_STR(rv_errmsg(), "'422': not a chroma subsampling (420 or 444)");
	EXPECT_EQ(rv_coder_init(&k, 0, 1), 0);
	EXPECT_EQ(rv_encoder_init(&e420, &c420), 0);
	EXPECT_EQ(rv_encoder_init(&e444, &c444), 0);
	sample(&r, RV_DT_U8, 48, 40, 3, 48 * 40 * 3);
	EXPECT_EQ(rv_encode_sample(&e420, &k, &r, rgb, &h, &a), 0);
	EXPECT_EQ(rv_encode_sample(&e444, &k, &r, rgb, &h, &b), 0);
	EXPECT(a.len < b.len);
	EXPECT_EQ(rv_codec_decode(dec, a.data, a.len, &o, &img), 0);
	for (i = 0; i < 48 * 40 * 3; i++)
		err[0] += abs((int)img.data[i] - (int)rgb[i]);
	EXPECT_EQ(rv_codec_decode(dec, b.data, b.len, &o, &img), 0);
	for (i = 0; i < 48 * 40 * 3; i++)
		err[1] += abs((int)img.data[i] - (int)rgb[i]);
	EXPECT(err[1] < err[0]);
	sample(&r, RV_DT_U8, 32, 32, 1, 32 * 32);
	EXPECT_EQ(rv_encode_sample(&e420, &k, &r, grey, &h, &a), 0);
	EXPECT_EQ(rv_encode_sample(&e444, &k, &r, grey, &h, &b), 0);
	EXPECT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
	rv_encoder_release(&e420);
	rv_encoder_release(&e444);
	rv_coder_release(&k);
	rv_img_release(&img);
	rv_buf_release(&a);
	rv_buf_release(&b);
	rv_codec_free(dec);
	free(rgb);
	free(grey);
}

static void
t_conf(void)
{
	struct rv_encoder e;
	struct rv_encode_conf c = { RV_DT_JPEG, 0, 0 };

	EXPECT_EQ(rv_encoder_init(&e, &c), -1);
	c.quality = 101;
	EXPECT_EQ(rv_encoder_init(&e, &c), -1);
	c.quality = 90;
	c.subsample = 422;
	EXPECT_EQ(rv_encoder_init(&e, &c), -1);
	EXPECT_STR(rv_errmsg(), "encode: subsampling 422: not 420 or 444");
	c.subsample = 0;
	c.quality = 1;
	c.dtype = RV_DT_U8;
	EXPECT_EQ(rv_encoder_init(&e, &c), -1);
	rv_encoder_release(&e);
}

int
main(void)
{
	rv_setprogname("t_encode");
	RUN(t_format);
	RUN(t_png);
	RUN(t_jpeg);
	RUN(t_subsample);
	RUN(t_conf);
	return UNIT_DONE();
}
