/*
 * The window decoder (lib/codec/codec_jroi.c) against the full decode: every
 * pixel of the window, for JPEGs of every chroma subsampling, grey,
 * progressive and with restart markers, odd sizes, windows at the edges
 * and anywhere; at DCT scale 1/1 against rv_codec_decode(), at 1/2, 1/4
 * and 1/8 against TurboJPEG's own scaled decode.  The test JPEGs are
 * encoded here with libjpeg, from a noisy image whose chroma changes
 * every few pixels, so that an edge the upsampler treats wrongly shows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <turbojpeg.h>

#include "base/err.h"
#include "codec/codec.h"
#include "unit.h"

struct flavour {
	const char *name;
	int grey;		/* one-component file */
	int hs, vs;		/* luma sampling factors (chroma 1x1) */
	int progressive;
	int restart;		/* restart interval in MCU rows, 0: none */
};

static const struct flavour flavours[] = {
	{ "420", 0, 2, 2, 0, 0 },
	{ "422", 0, 2, 1, 0, 0 },
	{ "440", 0, 1, 2, 0, 0 },
	{ "444", 0, 1, 1, 0, 0 },
	{ "411", 0, 4, 1, 0, 0 },
	{ "grey", 1, 1, 1, 0, 0 },
	{ "420 progressive", 0, 2, 2, 1, 0 },
	{ "422 restart", 0, 2, 1, 0, 1 },
};
#define NFLAV	(sizeof(flavours) / sizeof(flavours[0]))

static const uint32_t sizes[][2] = {	/* h, w */
	{ 61, 97 }, { 217, 333 }, { 9, 17 }, { 480, 640 }, { 1, 1 },
	{ 300, 31 },
};
#define NSIZES	(sizeof(sizes) / sizeof(sizes[0]))

static uint64_t
next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint32_t
below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(next(s) % n);
}

/* Noise in 3x3 blocks over a gradient: chroma that changes every few
 * pixels, so the upsampler's edge handling shows. */
static unsigned char *
picture(uint32_t h, uint32_t w, int c, uint64_t seed)
{
	unsigned char *p = malloc((size_t)h * w * c);
	uint32_t y, x;
	int k;

	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++)
			for (k = 0; k < c; k++) {
				uint64_t s = seed ^ ((uint64_t)(y / 3) << 40) ^
				    ((uint64_t)(x / 3) << 20) ^ (uint64_t)k;
				int v;

				next(&s);
				next(&s);
				v = (int)(x * 255 / (w + 1)) / 2 +
				    (int)(next(&s) % 128);
				p[((size_t)y * w + x) * c + k] =
				    (unsigned char)v;
			}
	return p;
}

static unsigned char *
encode(const struct flavour *f, uint32_t h, uint32_t w, uint64_t seed,
    size_t *n)
{
	struct jpeg_compress_struct cj;
	struct jpeg_error_mgr em;
	unsigned char *px, *out = NULL;
	unsigned long len = 0;
	int c = f->grey ? 1 : 3;

	px = picture(h, w, c, seed);
	cj.err = jpeg_std_error(&em);
	jpeg_create_compress(&cj);
	jpeg_mem_dest(&cj, &out, &len);
	cj.image_width = w;
	cj.image_height = h;
	cj.input_components = c;
	cj.in_color_space = f->grey ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(&cj);
	jpeg_set_quality(&cj, 90, TRUE);
	if (!f->grey) {
		cj.comp_info[0].h_samp_factor = f->hs;
		cj.comp_info[0].v_samp_factor = f->vs;
		cj.comp_info[1].h_samp_factor = cj.comp_info[1].v_samp_factor = 1;
		cj.comp_info[2].h_samp_factor = cj.comp_info[2].v_samp_factor = 1;
	}
	if (f->progressive)
		jpeg_simple_progression(&cj);
	cj.restart_in_rows = f->restart;
	jpeg_start_compress(&cj, TRUE);
	while (cj.next_scanline < h) {
		JSAMPROW r = px + (size_t)cj.next_scanline * w * c;

		jpeg_write_scanlines(&cj, &r, 1);
	}
	jpeg_finish_compress(&cj);
	jpeg_destroy_compress(&cj);
	free(px);
	*n = len;
	return out;
}

/* TurboJPEG's decode at scale 1/d (RGB, or grey for a grey output). */
static unsigned char *
tj_scaled(const unsigned char *p, size_t n, unsigned d, int grey,
    uint32_t *sh, uint32_t *sw)
{
	tjhandle tj = tjInitDecompress();
	tjscalingfactor sf = { 1, (int)d };
	int w = 0, h = 0, samp, cs;
	unsigned char *out;

	tjDecompressHeader3(tj, p, (unsigned long)n, &w, &h, &samp, &cs);
	*sw = (uint32_t)TJSCALED(w, sf);
	*sh = (uint32_t)TJSCALED(h, sf);
	out = malloc((size_t)*sh * *sw * 3);
	if (tjDecompress2(tj, p, (unsigned long)n, out, (int)*sw, 0,
	    (int)*sh, grey ? TJPF_GRAY : TJPF_RGB, 0) != 0)
		printf("# tjDecompress2: %s\n", tjGetErrorStr2(tj));
	tjDestroy(tj);
	return out;
}

/*
 * One window at scale 1/d: the region must cover the window's scaled
 * cover, and every pixel of that cover must equal the reference's.
 */
static int
check_window(struct rv_codec *c, const unsigned char *p, size_t n,
    uint32_t ch, unsigned d, const uint32_t win[4],
    const unsigned char *ref, uint32_t rw, struct rv_img *im)
{
	struct rv_decode_opts o = { ch, 0, 0 };
	uint32_t org[2], full[2], y0, y1, x0, x1, y;
	int r;

	r = rv_codec_decode_window(c, p, n, &o, d, win, im, org, full);
	if (r != 1) {
		printf("# decode_window: %d %s\n", r, rv_errmsg());
		return 0;
	}
	y0 = win[0] / d;
	x0 = win[1] / d;
	y1 = (win[0] + win[2] + d - 1) / d;
	x1 = (win[1] + win[3] + d - 1) / d;
	if (im->c != ch || org[0] > y0 || org[1] > x0 ||
	    org[0] + im->h < y1 || org[1] + im->w < x1) {
		printf("# region %ux%ux%u at (%u, %u) misses the cover "
		    "[%u, %u) x [%u, %u)\n", im->w, im->h, im->c, org[1],
		    org[0], x0, x1, y0, y1);
		return 0;
	}
	for (y = y0; y < y1; y++) {
		const unsigned char *a = im->data +
		    ((size_t)(y - org[0]) * im->w + (x0 - org[1])) * ch;
		const unsigned char *b = ref + ((size_t)y * rw + x0) * ch;

		if (memcmp(a, b, (size_t)(x1 - x0) * ch) != 0) {
			printf("# 1/%u window %ux%u at (%u, %u): row %u "
			    "differs\n", d, win[3], win[2], win[1], win[0], y);
			return 0;
		}
	}
	return 1;
}

/* Windows: the corners, the whole image, a pixel, then random ones. */
static void
make_window(uint64_t *s, int k, uint32_t h, uint32_t w, uint32_t win[4])
{
	switch (k) {
	case 0:
		win[0] = win[1] = 0;
		win[2] = h;
		win[3] = w;
		return;
	case 1:
		win[0] = win[1] = 0;
		win[2] = 1 + h / 3;
		win[3] = 1 + w / 3;
		return;
	case 2:
		win[2] = 1 + h / 3;
		win[3] = 1 + w / 3;
		win[0] = h - win[2];
		win[1] = w - win[3];
		return;
	case 3:
		win[0] = h / 2;
		win[1] = w / 2;
		win[2] = win[3] = 1;
		return;
	}
	win[2] = 1 + below(s, h);
	win[3] = 1 + below(s, w);
	win[0] = below(s, h - win[2] + 1);
	win[1] = below(s, w - win[3] + 1);
}

static void
test_windows_exact(void)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img full = { 0 }, im = { 0 };
	uint64_t s = 0x9e3779b97f4a7c15ull;
	size_t fi, si, n;
	int k, bad = 0, tried = 0;
	uint32_t ch, win[4];

	for (fi = 0; fi < NFLAV; fi++)
		for (si = 0; si < NSIZES; si++)
			for (ch = 1; ch <= 3; ch += 2) {
				const struct flavour *f = &flavours[fi];
				struct rv_decode_opts o = { ch, 0, 0 };
				unsigned char *p = encode(f, sizes[si][0],
				    sizes[si][1], s + fi * 31 + si, &n);

				if (rv_codec_decode(c, p, n, &o, &full) != 0) {
					printf("# %s: %s\n", f->name,
					    rv_errmsg());
					bad++;
				}
				for (k = 0; k < 40 && bad < 5; k++) {
					make_window(&s, k, full.h, full.w,
					    win);
					tried++;
					if (!check_window(c, p, n, ch, 1, win,
					    full.data, full.w, &im)) {
						printf("# flavour %s, %ux%u, "
						    "%u channel(s)\n", f->name,
						    full.w, full.h, ch);
						bad++;
					}
				}
				free(p);
			}
	EXPECT_EQ(bad, 0);
	EXPECT(tried > 3000);
	rv_img_release(&full);
	rv_img_release(&im);
	rv_codec_free(c);
}

static void
test_windows_scaled(void)
{
	static const unsigned ds[] = { 2, 4, 8 };
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	uint64_t s = 0x2545f4914f6cdd1dull;
	size_t fi, si, di, n;
	int k, bad = 0;
	uint32_t win[4], sh, sw;

	for (fi = 0; fi < NFLAV; fi++)
		for (si = 0; si < NSIZES; si++)
			for (di = 0; di < 3; di++) {
				const struct flavour *f = &flavours[fi];
				uint32_t ch = f->grey ? 1 : 3;
				unsigned char *p = encode(f, sizes[si][0],
				    sizes[si][1], s + fi * 17 + si, &n);
				unsigned char *ref = tj_scaled(p, n, ds[di],
				    f->grey, &sh, &sw);

				for (k = 0; k < 25 && bad < 5; k++) {
					make_window(&s, k, sizes[si][0],
					    sizes[si][1], win);
					if (!check_window(c, p, n, ch, ds[di],
					    win, ref, sw, &im)) {
						printf("# flavour %s, %ux%u\n",
						    f->name, sizes[si][1],
						    sizes[si][0]);
						bad++;
					}
				}
				free(ref);
				free(p);
			}
	EXPECT_EQ(bad, 0);
	rv_img_release(&im);
	rv_codec_free(c);
}

/* What the path declines (0) and what it refuses (-1). */
static void
test_declines_and_errors(void)
{
	static const struct flavour f420 = { "420", 0, 2, 2, 0, 0 };
	struct rv_codec *c = rv_codec_new();
	struct rv_decode_opts o = { 3, 0, 0 };
	struct rv_img im = { 0 };
	uint32_t win[4] = { 10, 10, 50, 50 }, org[2], full[2];
	unsigned char *p, *q;
	size_t n;

	p = encode(&f420, 200, 300, 7, &n);
	/* cut short: no EOI, left to the full decode */
	EXPECT_EQ(rv_codec_decode_window(c, p, n / 2, &o, 1, win, &im, org, full),
	    0);
	/* bytes after the EOI: declined too */
	q = malloc(n + 3);
	memcpy(q, p, n);
	memcpy(q + n, "abc", 3);
	EXPECT_EQ(rv_codec_decode_window(c, q, n + 3, &o, 1, win, &im, org, full),
	    0);
	free(q);
	/* not a JPEG */
	EXPECT_EQ(rv_codec_decode_window(c, (const unsigned char *)
	    "\x89PNG\r\n\x1a\n....", 12, &o, 1, win, &im, org, full), 0);
	/* a window outside the image */
	win[0] = 190;
	EXPECT_EQ(rv_codec_decode_window(c, p, n, &o, 1, win, &im, org, full), -1);
	EXPECT(strstr(rv_errmsg(), "outside the 300x200 JPEG") != NULL);
	win[0] = 10;
	EXPECT_EQ(rv_codec_decode_window(c, p, n, &o, 3, win, &im, org, full), -1);
	/* damaged entropy data above the window's last row: an error, and
	 * the decoder is fine for the next file */
	q = malloc(n);
	memcpy(q, p, n);
	memset(q + n / 3, 0xff, 64);
	win[0] = 150;
	EXPECT_EQ(rv_codec_decode_window(c, q, n, &o, 1, win, &im, org, full), -1);
	EXPECT(strstr(rv_errmsg(), "JPEG") != NULL);
	free(q);
	EXPECT_EQ(rv_codec_decode_window(c, p, n, &o, 1, win, &im, org, full), 1);
	/* the pixel limit holds */
	o.max_pixels = 1000;
	EXPECT_EQ(rv_codec_decode_window(c, p, n, &o, 1, win, &im, org, full), -1);
	EXPECT(strstr(rv_errmsg(), "limit") != NULL);
	free(p);
	rv_img_release(&im);
	rv_codec_free(c);
}

int
main(void)
{
	RUN(test_windows_exact);
	RUN(test_windows_scaled);
	RUN(test_declines_and_errors);
	return UNIT_DONE();
}
