/*
 * Unit tests for the image codecs and pixel steps (lib/codec*.c, img.c):
 * every JPEG, PNG, WebP, GIF, BMP and TIFF flavour against ImageMagick's
 * pixels, --max-side
 * sizes and DCT scaling, channel conversions, the area resize against a
 * floating-point reference, broken files failing with the right words,
 * and JPEG header junk read through unless strict.
 * Fixtures: $RV_FIXTURES, else tests/fixtures/img (tests/setup/fixtures-images.sh).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <zlib.h>

#include "base/buf.h"
#include "base/err.h"
#include "codec/codec.h"
#include "codec/codec_impl.h"
#include "stream/record.h"
#include "unit.h"

static const char *fixdir;

/* The whole file, or NULL (and a failure) if it cannot be read. */
static unsigned char *
slurp(const char *name, size_t *len)
{
	char path[4096];
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0, r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fixdir, name);
	f = fopen(path, "rb");
	if (f == NULL) {
		printf("# cannot open '%s'\n", path);
		unit_st.cur_failed = 1;
		return NULL;
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap);
			if (buf == NULL)
				abort();
		}
		r = fread(buf + n, 1, cap - n, f);
		if (r == 0)
			break;
		n += r;
	}
	fclose(f);
	*len = n;
	return buf;
}

/* Decode fixture name; returns the codec's result. */
static int
decode(struct rv_codec *c, const char *name, uint32_t channels,
    uint32_t max_side, uint64_t max_pixels, struct rv_img *im)
{
	struct rv_decode_opts o = { channels, max_side, max_pixels };
	unsigned char *p;
	size_t n = 0;
	int rc;

	p = slurp(name, &n);
	if (p == NULL)
		return -2;
	rc = rv_codec_decode(c, p, n, &o, im);
	free(p);
	return rc;
}

/* Largest and mean absolute difference of two byte arrays. */
static int
maxdiff(const unsigned char *a, const unsigned char *b, size_t n,
    double *mean)
{
	size_t i;
	long sum = 0;
	int m = 0;

	for (i = 0; i < n; i++) {
		int d = abs((int)a[i] - (int)b[i]);

		sum += d;
		if (d > m)
			m = d;
	}
	if (mean != NULL)
		*mean = n ? (double)sum / (double)n : 0;
	return m;
}

/* ---- pure functions ---- */

static void
test_sniff(void)
{
	static const unsigned char jpg[] = { 0xff, 0xd8, 0xff, 0xe0 };
	static const unsigned char png[] = { 0x89, 'P', 'N', 'G', '\r', '\n',
	    0x1a, '\n' };

	EXPECT_EQ(rv_sniff(jpg, sizeof(jpg)), RV_DT_JPEG);
	EXPECT_EQ(rv_sniff(png, sizeof(png)), RV_DT_PNG);
	EXPECT_EQ(rv_sniff(png, sizeof(png) - 1), RV_DT_NONE);
	EXPECT_EQ(rv_sniff(jpg, 2), RV_DT_NONE);
	EXPECT_EQ(rv_sniff((const unsigned char *)"GIF89a", 6), RV_DT_NONE);
	EXPECT_EQ(rv_sniff(jpg, 0), RV_DT_NONE);
}

/* The format list: extensions in any case name their format, each
 * format's extensions lead back to it, and its dtype is its sniff's. */
static void
test_format_list(void)
{
	static const unsigned char jpg[] = { 0xff, 0xd8, 0xff, 0xe0 };
	static const char *const ext[][2] = {
		{ "jpg", "JPEG" }, { "JPEG", "JPEG" }, { "Jfif", "JPEG" },
		{ "png", "PNG" }, { "webp", "WebP" }, { "GIF", "GIF" },
		{ "bmp", "BMP" }, { "tif", "TIFF" }, { "TIFF", "TIFF" },
	};
	const struct rv_format *f;

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		f = rv_format_by_ext(ext[i][0]);
		EXPECT_EQ(f != NULL && strcmp(f->name, ext[i][1]) == 0, 1);
		for (const char *const *e = f ? f->ext : NULL; e && *e; e++)
			EXPECT_EQ(rv_format_by_ext(*e) == f, 1);
	}
	EXPECT_EQ(rv_format_by_ext("heic") == NULL, 1);
	EXPECT_EQ(rv_format_by_ext("jp") == NULL, 1);
	EXPECT_EQ(rv_format_by_ext("jpgx") == NULL, 1);
	EXPECT_EQ(rv_format_by_ext("") == NULL, 1);
	f = rv_codec_format(jpg, sizeof(jpg));
	EXPECT_EQ(f != NULL && f->dtype == RV_DT_JPEG &&
	    f == rv_format_by_ext("jpg"), 1);
	EXPECT_EQ(rv_codec_format(jpg, 2) == NULL, 1);
	EXPECT_EQ(rv_codec_format((const unsigned char *)"BM", 2) ==
	    rv_format_by_ext("bmp"), 1);
	EXPECT_EQ(rv_codec_format((const unsigned char *)
	    "BMxxxxxxxxxxxx\x07\0\0", 18) == NULL, 1);
}

static void
test_fit_max_side(void)
{
	static const uint32_t t[][5] = {
		/* h, w, max_side, expected h, w */
		{ 480, 640, 320, 240, 320 },
		{ 480, 640, 200, 150, 200 },
		{ 480, 640, 0, 480, 640 },
		{ 480, 640, 640, 480, 640 },
		{ 480, 640, 1000, 480, 640 },
		{ 640, 480, 320, 320, 240 },
		{ 64, 96, 48, 32, 48 },
		{ 75, 100, 10, 8, 10 },		/* 7.5 rounds up */
		{ 1, 1000, 10, 1, 10 },		/* never below 1 */
		{ 333, 333, 100, 100, 100 },
		{ 99, 100, 13, 13, 13 },	/* 12.87 */
	};
	size_t i;
	uint32_t oh, ow;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		rv_fit_max_side(t[i][0], t[i][1], t[i][2], &oh, &ow);
		EXPECT_EQ(oh, t[i][3]);
		EXPECT_EQ(ow, t[i][4]);
	}
}

static void
test_resize_constant(void)
{
	static const uint32_t sz[][4] = {
		{ 64, 96, 32, 48 }, { 97, 13, 5, 3 }, { 7, 7, 7, 7 },
		{ 3, 5, 11, 17 }, { 480, 640, 150, 200 }, { 1, 100, 1, 7 },
	};
	unsigned char *src, *dst;
	size_t i, k, n, dn;
	uint32_t c;

	for (i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		for (c = 1; c <= 5; c++) {
			n = (size_t)sz[i][0] * sz[i][1] * c;
			dn = (size_t)sz[i][2] * sz[i][3] * c;
			src = malloc(n);
			dst = malloc(dn);
			for (k = 0; k < n; k++)
				src[k] = (unsigned char)(17 + 50 * (k % c));
			rv_img_resize_area(src, sz[i][0], sz[i][1], c, dst,
			    sz[i][2], sz[i][3]);
			for (k = 0; k < dn; k++)
				if (dst[k] != 17 + 50 * (k % c))
					break;
			EXPECT_EQ(k, dn);
			free(src);
			free(dst);
		}
	}
}

static void
test_resize_exact(void)
{
	/* 2x2 blocks averaged, halves rounded up: (1+2+3+5)/4 = 2.75 -> 3,
	 * (10+11+12+13)/4 = 11.5 -> 12, (0+0+0+1)/4 -> 0, 255s stay. */
	static const unsigned char src[16] = {
		1, 2, 10, 11,
		3, 5, 12, 13,
		0, 0, 255, 255,
		0, 1, 255, 255,
	};
	static const unsigned char want[4] = { 3, 12, 0, 255 };
	/* 1x3 -> 1x2: thirds, (2a + b) / 3 and (b + 2c) / 3. */
	static const unsigned char row[3] = { 0, 90, 255 };
	static const unsigned char rowwant[2] = { 30, 200 };
	/* 2x1 RGB -> 1x1: per channel. */
	static const unsigned char rgb[6] = { 0, 100, 255, 1, 101, 255 };
	static const unsigned char rgbwant[3] = { 1, 101, 255 };
	unsigned char dst[4];

	rv_img_resize_area(src, 4, 4, 1, dst, 2, 2);
	EXPECT(memcmp(dst, want, 4) == 0);
	rv_img_resize_area(row, 1, 3, 1, dst, 1, 2);
	EXPECT(memcmp(dst, rowwant, 2) == 0);
	rv_img_resize_area(rgb, 1, 2, 3, dst, 1, 1);
	EXPECT(memcmp(dst, rgbwant, 3) == 0);
}

/* The exact area average in double precision, as a reference. */
static void
resize_ref(const unsigned char *src, uint32_t h, uint32_t w, uint32_t c,
    unsigned char *dst, uint32_t dh, uint32_t dw)
{
	uint32_t y, x, i, j, k;

	for (y = 0; y < dh; y++)
		for (x = 0; x < dw; x++)
			for (k = 0; k < c; k++) {
				double y0 = (double)y * h / dh;
				double y1 = (double)(y + 1) * h / dh;
				double x0 = (double)x * w / dw;
				double x1 = (double)(x + 1) * w / dw;
				double s = 0, v;

				for (i = (uint32_t)y0; i < h && i < y1; i++) {
					double fy = (i + 1 < y1 ? i + 1 : y1) -
					    (i > y0 ? i : y0);

					for (j = (uint32_t)x0; j < w && j < x1;
					    j++) {
						double fx = (j + 1 < x1 ?
						    j + 1 : x1) - (j > x0 ?
						    j : x0);

						s += fx * fy * src[((size_t)i *
						    w + j) * c + k];
					}
				}
				v = s / ((y1 - y0) * (x1 - x0));
				dst[((size_t)y * dw + x) * c + k] =
				    (unsigned char)(v + 0.5 + 1e-9);
			}
}

static void
test_resize_reference(void)
{
	/* Down, up and mixed, small and large divisors: 3001 * 2999 is past
	 * the multiply-shift division, and 16843010 rows (a 1-pixel column)
	 * past 32-bit vertical sums. */
	static const uint32_t sz[][5] = {
		{ 64, 96, 32, 48, 3 }, { 97, 13, 5, 3, 1 },
		{ 10, 10, 7, 3, 3 }, { 3, 5, 11, 17, 1 },
		{ 180, 240, 150, 200, 3 }, { 53, 71, 29, 31, 4 },
		{ 2999, 3001, 2, 2, 1 }, { 1, 1, 3, 2, 2 },
		{ 16843010, 1, 3, 1, 1 }, { 7, 5, 3, 2, 6 },
	};
	unsigned char *src, *dst, *ref;
	size_t i, k, n, dn;
	uint32_t seed = 12345;
	int bad;

	for (i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		n = (size_t)sz[i][0] * sz[i][1] * sz[i][4];
		dn = (size_t)sz[i][2] * sz[i][3] * sz[i][4];
		src = malloc(n);
		dst = malloc(dn);
		ref = malloc(dn);
		for (k = 0; k < n; k++) {
			seed = seed * 1103515245u + 12345u;
			src[k] = (unsigned char)(seed >> 24);
		}
		rv_img_resize_area(src, sz[i][0], sz[i][1], sz[i][4], dst,
		    sz[i][2], sz[i][3]);
		resize_ref(src, sz[i][0], sz[i][1], sz[i][4], ref, sz[i][2],
		    sz[i][3]);
		bad = maxdiff(dst, ref, dn, NULL);
		if (bad != 0)
			printf("# %ux%u -> %ux%u: off by %d\n", sz[i][1],
			    sz[i][0], sz[i][3], sz[i][2], bad);
		EXPECT_EQ(bad, 0);
		free(src);
		free(dst);
		free(ref);
	}
}

static void
test_from_pixels(void)
{
	/* Pillow's convert("L") of these colours; the last three are where
	 * (299R+587G+114B+500)/1000 would differ from Pillow. */
	static const unsigned char rgb[] = {
		255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 10, 20, 30,
		200, 100, 50, 0, 28, 176, 5, 252, 220, 7, 21, 220,
	};
	static const unsigned char grey[] = {
		76, 150, 29, 255, 18, 124, 36, 175, 39
	};
	struct rv_decode_opts o = { 1, 0, 0 };
	struct rv_img im = { 0 };
	unsigned char px[8 * 6];
	size_t i;

	EXPECT_EQ(rv_img_from_pixels(rgb, 1, 9, 3, &o, &im), 0);
	EXPECT_EQ(im.h, 1);
	EXPECT_EQ(im.w, 9);
	EXPECT_EQ(im.c, 1);
	EXPECT(memcmp(im.data, grey, 9) == 0);

	/* Grey -> RGB replicates, with and without max_side. */
	for (i = 0; i < sizeof(px); i++)
		px[i] = (unsigned char)(i * 5);
	o.channels = 3;
	EXPECT_EQ(rv_img_from_pixels(px, 6, 8, 1, &o, &im), 0);
	EXPECT_EQ(im.c, 3);
	for (i = 0; i < sizeof(px); i++)
		EXPECT(im.data[3 * i] == px[i] && im.data[3 * i + 1] ==
		    px[i] && im.data[3 * i + 2] == px[i]);
	o.max_side = 4;
	EXPECT_EQ(rv_img_from_pixels(px, 6, 8, 1, &o, &im), 0);
	EXPECT_EQ(im.h, 3);
	EXPECT_EQ(im.w, 4);
	EXPECT_EQ(im.c, 3);
	/* Top-left 2x2 block: (0 + 5 + 40 + 45) / 4 = 22.5 -> 23. */
	EXPECT_EQ(im.data[0], 23);
	EXPECT_EQ(im.data[2], 23);

	EXPECT_EQ(rv_img_from_pixels(px, 6, 8, 2, &o, &im), -1);
	EXPECT_STR(rv_errmsg(), "unsupported input channel count 2");
	rv_img_release(&im);
	EXPECT(im.data == NULL && im.cap == 0);
}

/* ---- decoding fixtures ---- */

struct flavour {
	const char *name;
	uint32_t h, w, c;	/* natural channels after alpha is dropped */
};

static const struct flavour pngs[] = {
	{ "rgb.png", 64, 96, 3 },
	{ "rgba.png", 64, 96, 3 },
	{ "grey.png", 64, 96, 1 },
	{ "greya.png", 64, 96, 1 },
	{ "grey1.png", 64, 96, 1 },
	{ "palette.png", 64, 96, 3 },
	{ "palette-trns.png", 64, 96, 3 },
	{ "rgb16.png", 64, 96, 3 },
	{ "interlaced.png", 64, 96, 3 },
};

static const struct flavour jpegs[] = {
	{ "rgb.jpg", 64, 96, 3 },
	{ "rgb444.jpg", 64, 96, 3 },
	{ "grey.jpg", 64, 96, 1 },
	{ "cmyk.jpg", 64, 96, 3 },
	{ "progressive.jpg", 64, 96, 3 },
	{ "big.jpg", 480, 640, 3 },
};

/*
 * WebP, GIF, BMP and TIFF, each against ImageMagick's RGB dump (NAME.rgb,
 * the first frame of an animation), within tol levels.  rv reads the
 * stored pixels as Pillow 9.4 does (checked bit for bit when these were
 * written); ImageMagick rounds where Pillow truncates 5- and 6-bit BMP
 * fields and 16-bit TIFF palettes, hence the 1s.  (Pillow itself misreads
 * rle4.bmp: it drops the last pixel of odd-length absolute runs.)  c is
 * what the header says a decode keeps: 1 for a grey TIFF or an all-grey
 * BMP palette.
 */
static const struct {
	struct flavour f;
	const char *fmt;
	int tol;
} others[] = {
	{ { "rgb.webp", 64, 96, 3 }, "WebP", 0 },
	{ { "lossless.webp", 64, 96, 3 }, "WebP", 0 },
	{ { "rgba.webp", 64, 96, 3 }, "WebP", 0 },
	{ { "anim.webp", 64, 96, 3 }, "WebP", 0 },
	{ { "rgb.gif", 64, 96, 3 }, "GIF", 0 },
	{ { "interlaced.gif", 64, 96, 3 }, "GIF", 0 },
	{ { "anim.gif", 64, 96, 3 }, "GIF", 0 },
	{ { "rgb.bmp", 64, 96, 3 }, "BMP", 0 },
	{ { "os2.bmp", 64, 96, 3 }, "BMP", 0 },
	{ { "palette8.bmp", 64, 96, 3 }, "BMP", 0 },
	{ { "palette4.bmp", 64, 96, 3 }, "BMP", 0 },
	{ { "grey8.bmp", 64, 96, 1 }, "BMP", 0 },
	{ { "mono.bmp", 64, 96, 1 }, "BMP", 0 },
	{ { "rle8.bmp", 64, 96, 3 }, "BMP", 0 },
	{ { "rle4.bmp", 64, 96, 3 }, "BMP", 0 },
	{ { "rgb565.bmp", 64, 96, 3 }, "BMP", 1 },
	{ { "rgba.bmp", 64, 96, 3 }, "BMP", 0 },
	{ { "rgb.tif", 64, 96, 3 }, "TIFF", 0 },
	{ { "grey.tif", 64, 96, 1 }, "TIFF", 0 },
	{ { "rgb16.tif", 64, 96, 3 }, "TIFF", 0 },
	{ { "jpeg.tif", 64, 96, 3 }, "TIFF", 0 },
	{ { "palette.tif", 64, 96, 3 }, "TIFF", 1 },
	{ { "tiled.tif", 64, 96, 3 }, "TIFF", 0 },
	{ { "rgba.tif", 64, 96, 3 }, "TIFF", 0 },
};
#define NOTHERS	(sizeof(others) / sizeof(others[0]))

/* ImageMagick's pixels for a fixture: NAME.rgb or NAME.gray. */
static unsigned char *
reference(const struct flavour *f, size_t *n)
{
	char name[256];

	snprintf(name, sizeof(name), "%s.%s", f->name, f->c == 1 ? "gray" :
	    "rgb");
	return slurp(name, n);
}

static void
test_info(void)
{
	struct rv_codec *c = rv_codec_new();
	uint32_t h, w, ch;
	size_t i, n;
	int dt;

	for (i = 0; i < sizeof(pngs) / sizeof(pngs[0]) +
	    sizeof(jpegs) / sizeof(jpegs[0]); i++) {
		const struct flavour *f = i < sizeof(pngs) / sizeof(pngs[0]) ?
		    &pngs[i] : &jpegs[i - sizeof(pngs) / sizeof(pngs[0])];
		unsigned char *p = slurp(f->name, &n);

		if (p == NULL)
			continue;
		EXPECT_EQ(rv_codec_info(c, p, n, &dt, &h, &w, &ch), 0);
		EXPECT_EQ(dt, strstr(f->name, ".png") ? RV_DT_PNG :
		    RV_DT_JPEG);
		EXPECT_EQ(h, f->h);
		EXPECT_EQ(w, f->w);
		EXPECT_EQ(ch, f->c);
		free(p);
	}
	rv_codec_free(c);
}

/* PNG pixels are the file's own: ImageMagick's dump exactly. */
static void
test_png_exact(void)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	unsigned char *ref;
	size_t i, n;

	for (i = 0; i < sizeof(pngs) / sizeof(pngs[0]); i++) {
		const struct flavour *f = &pngs[i];

		EXPECT_EQ(decode(c, f->name, f->c, 0, 0, &im), 0);
		EXPECT_EQ(im.h, f->h);
		EXPECT_EQ(im.w, f->w);
		EXPECT_EQ(im.c, f->c);
		ref = reference(f, &n);
		if (ref == NULL)
			continue;
		EXPECT_EQ(n, (size_t)f->h * f->w * f->c);
		if (n == (size_t)im.h * im.w * im.c &&
		    memcmp(ref, im.data, n) != 0) {
			printf("# %s: pixels differ from ImageMagick's\n",
			    f->name);
			unit_st.cur_failed = 1;
		}
		free(ref);
	}
	rv_img_release(&im);
	rv_codec_free(c);
}

/*
 * The other formats: sniffed, sized by the header read, decoded to RGB
 * against ImageMagick, and to grey as the luma of that RGB (for grey
 * sources, the grey itself).
 */
static void
test_other_formats(void)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	unsigned char *p, *ref, *luma;
	uint32_t h, w, ch;
	size_t i, n, rn;
	int dt, m;

	for (i = 0; i < NOTHERS; i++) {
		const struct flavour *f = &others[i].f;
		struct flavour rgb = *f;

		if ((p = slurp(f->name, &n)) == NULL)
			continue;
		EXPECT_EQ(rv_codec_format(p, n) != NULL &&
		    strcmp(rv_codec_format(p, n)->name, others[i].fmt) == 0, 1);
		EXPECT_EQ(rv_sniff(p, n), RV_DT_NONE);
		EXPECT_EQ(rv_codec_info(c, p, n, &dt, &h, &w, &ch), 0);
		EXPECT_EQ(dt, RV_DT_NONE);
		EXPECT_EQ(h, f->h);
		EXPECT_EQ(w, f->w);
		if (ch != f->c)
			printf("# %s: %u channels, want %u\n", f->name, ch,
			    f->c);
		EXPECT_EQ(ch, f->c);
		free(p);
		EXPECT_EQ(decode(c, f->name, 3, 0, 0, &im), 0);
		EXPECT_EQ(im.h, f->h);
		EXPECT_EQ(im.w, f->w);
		EXPECT_EQ(im.c, 3);
		rgb.c = 3;
		if ((ref = reference(&rgb, &rn)) == NULL)
			continue;
		EXPECT_EQ(rn, (size_t)im.h * im.w * 3);
		if (rn == (size_t)im.h * im.w * 3 &&
		    (m = maxdiff(ref, im.data, rn, NULL)) > others[i].tol) {
			printf("# %s: max diff %d from ImageMagick's\n",
			    f->name, m);
			unit_st.cur_failed = 1;
		}
		/* Grey: Pillow's luma of the RGB, exactly. */
		luma = malloc(rn / 3 + 1);
		if (luma == NULL)
			abort();
		{
			struct rv_decode_opts o = { 1, 0, 0 };
			struct rv_img g = { 0 };

			EXPECT_EQ(rv_img_from_pixels(im.data, im.h, im.w, 3, &o,
			    &g), 0);
			memcpy(luma, g.data, rn / 3);
			rv_img_release(&g);
		}
		EXPECT_EQ(decode(c, f->name, 1, 0, 0, &im), 0);
		EXPECT_EQ(im.c, 1);
		EXPECT(im.h * im.w == rn / 3 && memcmp(im.data, luma,
		    rn / 3) == 0);
		/* --max-side as for PNG: the size rv_fit_max_side says. */
		EXPECT_EQ(decode(c, f->name, 3, 48, 0, &im), 0);
		EXPECT(im.h == 32 && im.w == 48 && im.c == 3);
		free(luma);
		free(ref);
	}
	rv_img_release(&im);
	rv_codec_free(c);
}

/*
 * JPEG pixels against ImageMagick's within 3 levels, mean under 0.25.
 * Here they are bit-exact (the same libjpeg-turbo, its integer IDCT and
 * fancy upsampling on both sides; Pillow too, CMYK included), but an
 * ImageMagick on another libjpeg or with the float IDCT (its
 * jpeg:dct-method) differs by a rounding or two per pixel, which is no
 * bug; a wrong colour conversion or upsampling is off by tens.
 */
static void
test_jpeg_close(void)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	unsigned char *ref;
	size_t i, n;
	double mean;
	int m;

	for (i = 0; i < sizeof(jpegs) / sizeof(jpegs[0]); i++) {
		const struct flavour *f = &jpegs[i];

		EXPECT_EQ(decode(c, f->name, f->c, 0, 0, &im), 0);
		EXPECT_EQ(im.h, f->h);
		EXPECT_EQ(im.w, f->w);
		EXPECT_EQ(im.c, f->c);
		ref = reference(f, &n);
		if (ref == NULL)
			continue;
		EXPECT_EQ(n, (size_t)im.h * im.w * im.c);
		if (n == (size_t)im.h * im.w * im.c) {
			m = maxdiff(ref, im.data, n, &mean);
			if (m > 3 || mean > 0.25) {
				printf("# %s: max diff %d, mean %.3f\n",
				    f->name, m, mean);
				unit_st.cur_failed = 1;
			}
		}
		free(ref);
	}
	rv_img_release(&im);
	rv_codec_free(c);
}

/*
 * Every flavour to both channel counts.  Grey is replicated.  Colour goes
 * to Pillow's luma of the RGB decode: exactly for PNG and CMYK JPEG; other
 * JPEGs give libjpeg's own Y channel (no chroma decoded, much faster),
 * which is the encoder's 601 luma before chroma subsampling and clipping:
 * measured against Pillow's convert("L"), a mean of 0.04 and a few pixels
 * of saturated colour off by up to 6.
 */
static void
test_channels(void)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 }, g = { 0 };
	size_t i, k, np = sizeof(pngs) / sizeof(pngs[0]);
	unsigned char *luma;
	size_t npx;
	double mean;
	int m;

	for (i = 0; i < np + sizeof(jpegs) / sizeof(jpegs[0]); i++) {
		const struct flavour *f = i < np ? &pngs[i] : &jpegs[i - np];

		npx = (size_t)f->h * f->w;
		EXPECT_EQ(decode(c, f->name, 3, 0, 0, &im), 0);
		EXPECT_EQ(decode(c, f->name, 1, 0, 0, &g), 0);
		EXPECT(im.c == 3 && g.c == 1);
		EXPECT(im.h == f->h && im.w == f->w && g.h == f->h &&
		    g.w == f->w);
		if (unit_st.cur_failed)
			break;
		if (f->c == 1) {
			for (k = 0; k < npx; k++)
				if (im.data[3 * k] != g.data[k] ||
				    im.data[3 * k + 1] != g.data[k] ||
				    im.data[3 * k + 2] != g.data[k])
					break;
			EXPECT_EQ(k, npx);
			continue;
		}
		luma = malloc(npx);
		for (k = 0; k < npx; k++)
			luma[k] = (unsigned char)((im.data[3 * k] * 19595u +
			    im.data[3 * k + 1] * 38470u +
			    im.data[3 * k + 2] * 7471u + 0x8000u) >> 16);
		/* Exact for JPEG too: the luma of the decoded RGB, as
		 * Pillow's convert("L"), not libjpeg's Y plane. */
		m = maxdiff(luma, g.data, npx, &mean);
		if (m != 0) {
			printf("# %s: grey differs from luma by %d "
			    "(mean %.3f)\n", f->name, m, mean);
			unit_st.cur_failed = 1;
		}
		free(luma);
	}
	rv_img_release(&im);
	rv_img_release(&g);
	rv_codec_free(c);
}

/* big.jpg (640x480) decoded by TurboJPEG at a scale, directly. */
static unsigned char *
tj_scaled(int num, int denom, int *sw, int *sh)
{
	tjscalingfactor sf = { num, denom };
	unsigned char *p, *px;
	tjhandle tj;
	size_t n;

	p = slurp("big.jpg", &n);
	if (p == NULL)
		return NULL;
	*sw = TJSCALED(640, sf);
	*sh = TJSCALED(480, sf);
	px = malloc((size_t)*sw * *sh * 3);
	tj = tjInitDecompress();
	if (tjDecompress2(tj, p, n, px, *sw, 0, *sh, TJPF_RGB, 0) != 0) {
		printf("# tjDecompress2: %s\n", tjGetErrorStr2(tj));
		unit_st.cur_failed = 1;
	}
	tjDestroy(tj);
	free(p);
	return px;
}

static void
test_max_side_jpeg(void)
{
	static const struct {
		uint32_t side, h, w;
		int num, denom;		/* the DCT scale that must be used */
	} t[] = {
		{ 320, 240, 320, 1, 2 },	/* exact: pure DCT */
		{ 160, 120, 160, 1, 4 },
		{ 80, 60, 80, 1, 8 },
		{ 200, 150, 200, 1, 2 },	/* 320x240, then resized */
		{ 500, 375, 500, 1, 1 },	/* 7/8 is slower than 1/1 */
		{ 100, 75, 100, 1, 4 },		/* 160x120, then resized */
		{ 640, 480, 640, 1, 1 },
	};
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	unsigned char *px, *want;
	size_t i, n;
	int sw, sh;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		EXPECT_EQ(decode(c, "big.jpg", 3, t[i].side, 0, &im), 0);
		EXPECT_EQ(im.h, t[i].h);
		EXPECT_EQ(im.w, t[i].w);
		EXPECT_EQ(im.c, 3);
		px = tj_scaled(t[i].num, t[i].denom, &sw, &sh);
		if (px == NULL || unit_st.cur_failed) {
			free(px);
			continue;
		}
		/* Exactly the DCT-scaled decode, area-resized if needed. */
		n = (size_t)t[i].h * t[i].w * 3;
		want = malloc(n);
		rv_img_resize_area(px, (uint32_t)sh, (uint32_t)sw, 3, want,
		    t[i].h, t[i].w);
		if (memcmp(want, im.data, n) != 0) {
			printf("# max_side %u: not the %d/%d DCT scale\n",
			    t[i].side, t[i].num, t[i].denom);
			unit_st.cur_failed = 1;
		}
		free(want);
		free(px);
	}
	rv_img_release(&im);
	rv_codec_free(c);
}

/* The DCT-scaled result is close to a full decode area-reduced. */
static void
test_max_side_quality(void)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	unsigned char *ref, *want;
	static const uint32_t sides[] = { 320, 200, 160, 100 };
	uint32_t dh, dw;
	size_t i, n;
	double mean;
	int m;

	ref = slurp("big.jpg.rgb", &n);
	if (ref == NULL || n != 640 * 480 * 3) {
		unit_st.cur_failed = 1;
		free(ref);
		rv_codec_free(c);
		return;
	}
	for (i = 0; i < sizeof(sides) / sizeof(sides[0]); i++) {
		EXPECT_EQ(decode(c, "big.jpg", 3, sides[i], 0, &im), 0);
		rv_fit_max_side(480, 640, sides[i], &dh, &dw);
		want = malloc((size_t)dh * dw * 3);
		rv_img_resize_area(ref, 480, 640, 3, want, dh, dw);
		m = maxdiff(want, im.data, (size_t)dh * dw * 3, &mean);
		/* The DCT's reduction filters differently from a box:
		 * measured max 9, mean 0.6-0.75 for these sizes. */
		if (m > 16 || mean > 1.0) {
			printf("# max_side %u: max diff %d, mean %.3f\n",
			    sides[i], m, mean);
			unit_st.cur_failed = 1;
		}
		free(want);
	}
	free(ref);
	rv_img_release(&im);
	rv_codec_free(c);
}

static void
test_max_side_png(void)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	unsigned char *ref, *want, *luma;
	size_t n, k;

	ref = slurp("rgb.png.rgb", &n);
	if (ref == NULL)
		goto out;
	want = malloc(48 * 32 * 3);
	rv_img_resize_area(ref, 64, 96, 3, want, 32, 48);
	EXPECT_EQ(decode(c, "rgb.png", 3, 48, 0, &im), 0);
	EXPECT(im.h == 32 && im.w == 48 && im.c == 3);
	EXPECT(memcmp(want, im.data, 48 * 32 * 3) == 0);
	/* Colour to grey with a resize: resized, then luma. */
	luma = malloc(48 * 32);
	for (k = 0; k < 48 * 32; k++)
		luma[k] = (unsigned char)((want[3 * k] * 19595u +
		    want[3 * k + 1] * 38470u + want[3 * k + 2] * 7471u +
		    0x8000u) >> 16);
	EXPECT_EQ(decode(c, "rgb.png", 1, 48, 0, &im), 0);
	EXPECT(im.h == 32 && im.w == 48 && im.c == 1);
	EXPECT(memcmp(luma, im.data, 48 * 32) == 0);
	free(luma);
	free(want);
	free(ref);

	/* Grey to RGB with a resize; interlaced, odd target. */
	EXPECT_EQ(decode(c, "grey.png", 3, 50, 0, &im), 0);
	EXPECT(im.h == 33 && im.w == 50 && im.c == 3);
	EXPECT_EQ(decode(c, "interlaced.png", 3, 37, 0, &im), 0);
	EXPECT(im.h == 25 && im.w == 37 && im.c == 3);
out:
	rv_img_release(&im);
	rv_codec_free(c);
}

/* Buffers are reused: a smaller image after a larger one moves nothing. */
static void
test_reuse(void)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	unsigned char *data;
	size_t cap;

	EXPECT_EQ(decode(c, "big.jpg", 3, 0, 0, &im), 0);
	data = im.data;
	cap = im.cap;
	EXPECT_EQ(cap, 640 * 480 * 3);
	EXPECT_EQ(decode(c, "rgb.png", 3, 0, 0, &im), 0);
	EXPECT_EQ(decode(c, "big.jpg", 3, 200, 0, &im), 0);
	EXPECT_EQ(decode(c, "cmyk.jpg", 1, 50, 0, &im), 0);
	EXPECT_EQ(decode(c, "big.jpg", 1, 0, 0, &im), 0);
	EXPECT(im.data == data);
	EXPECT_EQ(im.cap, cap);
	rv_img_release(&im);
	rv_codec_free(c);
}

static void
test_max_pixels(void)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };

	EXPECT_EQ(decode(c, "rgb.jpg", 3, 0, 96 * 64 - 1, &im), -1);
	EXPECT_STR(rv_errmsg(), "image is 96x64, over the 6143-pixel limit");
	EXPECT_EQ(decode(c, "rgb.png", 3, 0, 96 * 64 - 1, &im), -1);
	EXPECT_STR(rv_errmsg(), "image is 96x64, over the 6143-pixel limit");
	EXPECT(im.data == NULL);
	EXPECT_EQ(decode(c, "rgb.jpg", 3, 0, 96 * 64, &im), 0);
	EXPECT_EQ(decode(c, "rgb.png", 3, 0, 96 * 64, &im), 0);
	/* Every other format refuses it the same way, before decoding. */
	{
		static const char *const names[] = { "rgb.webp", "anim.webp",
		    "rgb.gif", "rgb.bmp", "rle8.bmp", "rgb.tif" };
		size_t i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			EXPECT_EQ(decode(c, names[i], 3, 0, 96 * 64 - 1, &im),
			    -1);
			EXPECT_STR(rv_errmsg(),
			    "image is 96x64, over the 6143-pixel limit");
			EXPECT_EQ(decode(c, names[i], 3, 0, 96 * 64, &im), 0);
		}
	}
	/* Refused whatever max_side would make of them. */
	EXPECT_EQ(decode(c, "huge.jpg", 3, 100, RV_MAX_PIXELS_DEFAULT, &im),
	    -1);
	EXPECT_STR(rv_errmsg(),
	    "image is 65000x65000, over the 178956970-pixel limit");
	rv_img_release(&im);
	rv_codec_free(c);
}

static void
put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/*
 * A grey 8-bit PNG of w x h, pixel (x, y) = (x + 3 y) & 255, every row
 * filter 0, in one IDAT: *n bytes, malloc'd (abort on failure).
 */
static unsigned char *
mkpng(uint32_t w, uint32_t h, size_t *n)
{
	size_t raw = ((size_t)w + 1) * h, i = 0, at;
	uLongf zn = compressBound(raw);
	unsigned char *r = malloc(raw), *p = malloc(zn + 57);
	uint32_t x, y;

	if (r == NULL || p == NULL)
		abort();
	for (y = 0; y < h; y++) {
		r[i++] = 0;
		for (x = 0; x < w; x++)
			r[i++] = (unsigned char)(x + 3 * y);
	}
	if (compress2(p + 41, &zn, r, raw, 1) != Z_OK)
		abort();
	free(r);
	memcpy(p, "\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16);
	put32(p + 16, w);
	put32(p + 20, h);
	memcpy(p + 24, "\x08\0\0\0\0", 5);
	put32(p + 29, (uint32_t)crc32(0, p + 12, 17));
	put32(p + 33, (uint32_t)zn);
	memcpy(p + 37, "IDAT", 4);
	at = 41 + zn;
	put32(p + at, (uint32_t)crc32(0, p + 37, (uInt)zn + 4));
	memcpy(p + at + 4, "\0\0\0\0IEND\xae\x42\x60\x82", 12);
	*n = at + 16;
	return p;
}

/* Every pixel of im (c channels) is mkpng's (x + 3 y) & 255. */
static int
mkpng_pixels(const struct rv_img *im, uint32_t c)
{
	uint32_t x, y, k;

	for (y = 0; y < im->h; y++)
		for (x = 0; x < im->w; x++)
			for (k = 0; k < c; k++)
				if (im->data[((size_t)y * im->w + x) * c + k] !=
				    (unsigned char)(x + 3 * y))
					return 0;
	return 1;
}

/*
 * Issue 47 item 14: libpng costs about 60 ns a row whatever the width,
 * and png_read_image wanted a pointer a row, so a 346 KB PNG of
 * 1 x 178000000 grey pixels, under the pixel limit, took 1.9 GB and
 * 15 s.  Rows are now read into the image one by one, and a side over
 * RV_PNG_MAX_SIDE (libpng's default limit, which its writer keeps) is
 * refused from the header, by info too.
 */
static void
test_png_thin(void)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	struct rv_buf b = { 0 };
	struct rv_decode_opts o = { 1, 0, 0 };
	unsigned char *p, *px;
	uint32_t h, w, ch, k;
	size_t n;
	int dt;

	/* At the limit, tall and wide: read whole, grey and RGB, with no
	 * row scratch beyond one row (the array of pointers was 8 MB). */
	for (k = 0; k < 2; k++) {
		w = k ? RV_PNG_MAX_SIDE : 1;
		h = k ? 1 : RV_PNG_MAX_SIDE;
		p = mkpng(w, h, &n);
		o.channels = 1;
		EXPECT_EQ(rv_codec_decode(c, p, n, &o, &im), 0);
		EXPECT(im.h == h && im.w == w && im.c == 1);
		EXPECT(mkpng_pixels(&im, 1));
		o.channels = 3;
		EXPECT_EQ(rv_codec_decode(c, p, n, &o, &im), 0);
		EXPECT(im.h == h && im.w == w && im.c == 3);
		EXPECT(mkpng_pixels(&im, 3));
		EXPECT(c->rows.cap <= (size_t)w * 3);
		free(p);
	}
	/* One pixel over, either way: refused before libpng starts. */
	for (k = 0; k < 2; k++) {
		w = k ? RV_PNG_MAX_SIDE + 1 : 1;
		h = k ? 1 : RV_PNG_MAX_SIDE + 1;
		p = mkpng(w, h, &n);
		EXPECT_EQ(rv_codec_decode(c, p, n, &o, &im), -1);
		EXPECT_STR(rv_errmsg(), k ? "image is 1000001x1, over the "
		    "PNG side limit of 1000000 pixels" : "image is 1x1000001, "
		    "over the PNG side limit of 1000000 pixels");
		EXPECT_EQ(rv_codec_info(c, p, n, &dt, &h, &w, &ch), -1);
		EXPECT(strstr(rv_errmsg(), "over the PNG side limit") != NULL);
		free(p);
	}
	/* The writer keeps the same limit, said in the same words. */
	px = calloc(RV_PNG_MAX_SIDE + 1, 1);
	if (px == NULL)
		abort();
	EXPECT_EQ(rv_png_encode(px, RV_PNG_MAX_SIDE + 1, 1, 1, &b), -1);
	EXPECT_STR(rv_errmsg(), "png: image is 1x1000001, over the PNG side "
	    "limit of 1000000 pixels");
	EXPECT_EQ(b.len, 0);
	EXPECT_EQ(rv_png_encode(px, 1, RV_PNG_MAX_SIDE, 1, &b), 0);
	o.channels = 1;
	EXPECT_EQ(rv_codec_decode(c, b.data, b.len, &o, &im), 0);
	EXPECT(im.h == 1 && im.w == RV_PNG_MAX_SIDE && im.data[0] == 0 &&
	    im.data[RV_PNG_MAX_SIDE - 1] == 0);
	free(px);
	rv_buf_release(&b);
	rv_img_release(&im);
	rv_codec_free(c);
}

static void
test_broken(void)
{
	static const struct {
		const char *name, *msg;
	} t[] = {
		{ "truncated.jpg", "truncated JPEG data" },
		{ "truncated.png", "truncated PNG data" },
		{ "corrupt.jpg",
		    "corrupt JPEG data: premature end of data segment" },
		{ "crc.png", "corrupt PNG: CRC error" },
		{ "empty.jpg", "empty image data" },
		{ "text.jpg", "not a JPEG, PNG, WebP, GIF, BMP or TIFF image" },
		{ "truncated.webp", "truncated WebP data" },
		{ "truncated.gif", "truncated GIF data" },
		{ "truncated.bmp", "truncated BMP data" },
		{ "truncated.tif", "truncated TIFF data" },
		{ "huge.png",
		    "image is 100000x100000, over the 178956970-pixel limit" },
		{ "huge.jpg",
		    "image is 65000x65000, over the 178956970-pixel limit" },
	};
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	size_t i;
	uint32_t ch;

	/* Twice over, both channel counts, and a good decode in between:
	 * a failure leaves the codec usable. */
	for (i = 0; i < 2 * sizeof(t) / sizeof(t[0]); i++) {
		ch = i < sizeof(t) / sizeof(t[0]) ? 3 : 1;
		EXPECT_EQ(decode(c, t[i % (sizeof(t) / sizeof(t[0]))].name, ch,
		    0, RV_MAX_PIXELS_DEFAULT, &im), -1);
		EXPECT_STR(rv_errmsg(), t[i % (sizeof(t) / sizeof(t[0]))].msg);
		EXPECT_EQ(decode(c, "rgb.jpg", 3, 0, 0, &im), 0);
		EXPECT_EQ(decode(c, "rgb.png", 3, 0, 0, &im), 0);
	}
	/* Truncated at every length up to the first scan / IDAT and a
	 * sample beyond: always an error, never a crash.  JPEG and PNG are
	 * read to their end marker; the others only as far as the first
	 * image's pixels go (a GIF's trailer, an RLE end-of-bitmap are not
	 * needed), so for them the cuts go to the middle of the file. */
	{
		static const char *names[] = { "rgb.jpg", "progressive.jpg",
		    "rgb.png", "interlaced.png", "rgb.webp", "lossless.webp",
		    "anim.webp", "rgb.gif", "interlaced.gif", "rgb.bmp",
		    "rle8.bmp", "rle4.bmp", "rgb.tif", "tiled.tif",
		    "jpeg.tif" };
		struct rv_decode_opts o = { 3, 0, 0 };
		unsigned char *p;
		size_t n, k, j;

		for (j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
			size_t end;

			p = slurp(names[j], &n);
			if (p == NULL)
				continue;
			end = j < 4 ? n : n / 2;

			for (k = 0; k < end; k += k < 700 ? 1 : 97) {
				if (rv_codec_decode(c, p, k, &o, &im) != -1) {
					printf("# %s cut at %zu decoded\n",
					    names[j], k);
					unit_st.cur_failed = 1;
					break;
				}
				/* The failure left the codec usable. */
				if (rv_codec_decode(c, p, n, &o, &im) != 0) {
					printf("# %s after a cut at %zu: %s\n",
					    names[j], k, rv_errmsg());
					unit_st.cur_failed = 1;
					break;
				}
			}
			free(p);
		}
	}
	/* Damage behind valid CRCs reaches libpng's longjmp; the words after
	 * the chunk name are zlib's. */
	EXPECT_EQ(decode(c, "zlib.png", 3, 0, 0, &im), -1);
	EXPECT(strncmp(rv_errmsg(), "corrupt PNG: IDAT: ", 19) == 0);
	EXPECT_EQ(decode(c, "rgb.png", 1, 0, 0, &im), 0);

	EXPECT_EQ(decode(c, "rgb.jpg", 2, 0, 0, &im), -1);
	EXPECT_STR(rv_errmsg(), "unsupported output channel count 2");
	rv_img_release(&im);
	rv_codec_free(c);
	rv_codec_free(NULL);
}

/*
 * rgb.jpg with bytes that are no marker put into its header, as in
 * Pillow's junk_jpeg_header.jpg, jpeg_ff00_header.jpg and
 * truncated_app14.jpg: decoded exactly as the clean file unless the codec
 * is strict, which gives libjpeg's warning; a cut scan behind the junk is
 * still the truncation.
 */
static void
test_jpeg_junk(void)
{
	static const struct {
		size_t at;		/* after SOI (2) or after APP0 (0) */
		const char *bytes;
		size_t len;
		const char *msg;
	} t[] = {
		{ 0, "junk\0\x13\x37", 7, "7 extraneous bytes before marker" },
		{ 2, "\xff\x00", 2, "2 extraneous bytes before marker" },
		{ 2, "\xff\xff\xff\x00\xff\xff", 6,
		    "2 extraneous bytes before marker" },
		/* APP14 "Adobe" whose length says 11 where 14 are there */
		{ 0, "\xff\xee\x00\x0b" "Adobe\x00\x64\x00\x00\x00\x00\x01",
		    16, "3 extraneous bytes before marker" },
	};
	struct rv_decode_opts o = { 3, 0, 0 };
	struct rv_codec *c = rv_codec_new();
	struct rv_img ref = { 0 }, im = { 0 };
	unsigned char *p, *q;
	uint32_t h, w, ch;
	size_t n, i, at, k;
	int dt;

	if ((p = slurp("rgb.jpg", &n)) == NULL)
		return;
	EXPECT_EQ(rv_codec_decode(c, p, n, &o, &ref), 0);
	/* rgb.jpg starts with SOI and APP0 */
	EXPECT(p[2] == 0xff && p[3] == 0xe0);
	q = malloc(n + 64);
	if (q == NULL)
		abort();
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		at = t[i].at ? t[i].at : 4 + ((size_t)p[4] << 8 | p[5]);
		memcpy(q, p, at);
		memcpy(q + at, t[i].bytes, t[i].len);
		memcpy(q + at + t[i].len, p + at, n - at);
		rv_codec_set_strict(c, 0);
		EXPECT_EQ(rv_codec_decode(c, q, n + t[i].len, &o, &im), 0);
		EXPECT(im.h == ref.h && im.w == ref.w && im.c == 3 &&
		    memcmp(im.data, ref.data, (size_t)im.h * im.w * 3) == 0);
		EXPECT_EQ(rv_codec_info(c, q, n + t[i].len, &dt, &h, &w, &ch),
		    0);
		EXPECT(h == ref.h && w == ref.w && ch == 3);
		/* Cut anywhere: never an image, and the codec stays usable. */
		for (k = 0; k < n + t[i].len; k += k < 400 ? 1 : 53) {
			if (rv_codec_decode(c, q, k, &o, &im) != -1) {
				printf("# junk %zu cut at %zu decoded\n", i, k);
				unit_st.cur_failed = 1;
				break;
			}
		}
		/* A cut in the scan is the truncation, not the junk. */
		EXPECT_EQ(rv_codec_decode(c, q, n + t[i].len - 100, &o, &im),
		    -1);
		EXPECT_STR(rv_errmsg(), "truncated JPEG data");
		rv_codec_set_strict(c, 1);
		EXPECT_EQ(rv_codec_decode(c, q, n + t[i].len, &o, &im), -1);
		EXPECT(strncmp(rv_errmsg(), "corrupt JPEG data: ", 19) == 0 &&
		    strstr(rv_errmsg(), t[i].msg) != NULL);
		EXPECT_EQ(rv_codec_info(c, q, n + t[i].len, &dt, &h, &w, &ch),
		    -1);
		EXPECT(strstr(rv_errmsg(), t[i].msg) != NULL);
		/* The clean file is fine when strict. */
		EXPECT_EQ(rv_codec_decode(c, p, n, &o, &im), 0);
	}
	free(q);
	free(p);
	rv_img_release(&ref);
	rv_img_release(&im);
	rv_codec_free(c);
}

int
main(void)
{
	char probe[4096];
	FILE *f;

	fixdir = getenv("RV_FIXTURES");
	if (fixdir == NULL || *fixdir == '\0')
		fixdir = "tests/fixtures/img";
	snprintf(probe, sizeof(probe), "%s/big.jpg.rgb", fixdir);
	f = fopen(probe, "rb");
	if (f == NULL) {
		printf("# fixtures missing: no '%s'; run "
		    "'bash tests/setup/make-fixtures.sh tests/fixtures' or set "
		    "RV_FIXTURES\n", probe);
		printf("not ok 1 - fixtures\n1..1\n");
		return 1;
	}
	fclose(f);

	RUN(test_sniff);
	RUN(test_format_list);
	RUN(test_fit_max_side);
	RUN(test_resize_constant);
	RUN(test_resize_exact);
	RUN(test_resize_reference);
	RUN(test_from_pixels);
	RUN(test_info);
	RUN(test_png_exact);
	RUN(test_jpeg_close);
	RUN(test_other_formats);
	RUN(test_channels);
	RUN(test_max_side_jpeg);
	RUN(test_max_side_quality);
	RUN(test_max_side_png);
	RUN(test_reuse);
	RUN(test_max_pixels);
	RUN(test_png_thin);
	RUN(test_broken);
	RUN(test_jpeg_junk);
	return UNIT_DONE();
}
