/*
 * Geometry kernels and ops: exact small cases (identity warps, quarter
 * turns, shifts, flips, crops with fill and border modes), resize against
 * values and hashes taken from torchvision 0.14 / Pillow 9.4, and
 * RandomResizedCrop / RandomCrop sampling (inside the image, fallback,
 * determinism).  Tolerance: none; the warps, resizes and crops are
 * bit-exact against torchvision on PIL images (resize antialias=0, the
 * tensor path, is within 1 of torch and only checked on flat images).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aug/aug.h"
#include "aug/aug_geom.h"
#include "aug/aug_impl.h"
#include "base/err.h"
#include "base/rng.h"
#include "unit.h"

static const double zero3[3] = { 0, 0, 0 };

/* The test pattern, also computed in Python for the reference values:
 * ((x * 7 + y * 13 + ch * 5) ^ (x * y)) & 255. */
static void
pattern(struct rv_img *im, uint32_t h, uint32_t w, uint32_t c)
{
	uint32_t x, y, ch;

	rv_img_reserve(im, h, w, c);
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++)
			for (ch = 0; ch < c; ch++)
				im->data[((size_t)y * w + x) * c + ch] =
				    (unsigned char)(((x * 7 + y * 13 + ch * 5) ^
				    (x * y)) & 255);
}

static void
set_pixels(struct rv_img *im, uint32_t h, uint32_t w, uint32_t c,
    const unsigned char *px)
{
	rv_img_reserve(im, h, w, c);
	memcpy(im->data, px, (size_t)h * w * c);
}

/* 64-bit FNV-1a of the pixels (the Python side hashes the same way). */
static uint64_t
fnv(const struct rv_img *im)
{
	size_t n = (size_t)im->h * im->w * im->c, i;
	uint64_t hsh = 0xcbf29ce484222325ull;

	for (i = 0; i < n; i++) {
		hsh ^= im->data[i];
		hsh *= 0x100000001b3ull;
	}
	return hsh;
}

static int
same_pixels(const struct rv_img *im, const unsigned char *px, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (im->data[i] != px[i]) {
			printf("# byte %zu: %u != %u\n", i, im->data[i], px[i]);
			return 0;
		}
	return 1;
}

static void
t_identity_warp(void)
{
	static const double id[6] = { 1, 0, 0, 0, 1, 0 };
	struct rv_img im = { 0 }, ref = { 0 };
	struct rv_aug_ctx ctx;
	int interp;

	rv_aug_ctx_init(&ctx);
	for (interp = RV_NEAREST; interp <= RV_BICUBIC; interp++) {
		pattern(&im, 9, 13, 3);
		pattern(&ref, 9, 13, 3);
		EXPECT_EQ(rv_warp_affine(&im, &ctx, id, interp, zero3), 0);
		EXPECT_EQ(im.h, 9);
		EXPECT_EQ(im.w, 13);
		EXPECT(same_pixels(&im, ref.data, 9 * 13 * 3));
	}
	rv_img_release(&im);
	rv_img_release(&ref);
	rv_aug_ctx_release(&ctx);
}

static void
t_quarter_turns(void)
{
	struct rv_img im = { 0 };
	struct rv_aug_ctx ctx;
	unsigned char px[16], exp90[16], exp270[16], exp180[16];
	/* PIL, Image.rotate(90) of a 3x4 (h x w): about the centre, the
	 * column that falls outside filled. */
	static const unsigned char rot90_3x4[12] = {
		21, 33, 41, 0, 14, 25, 44, 0, 7, 21, 35, 0
	};
	/* F.rotate(30, BILINEAR, fill=9) of the same image. */
	static const unsigned char rot30b_3x4[12] = {
		9, 10, 21, 31, 4, 17, 29, 39, 14, 25, 38, 9
	};
	int x, y;

	rv_aug_ctx_init(&ctx);
	for (y = 0; y < 4; y++)
		for (x = 0; x < 4; x++) {
			px[y * 4 + x] = (unsigned char)(y * 4 + x);
			/* counter-clockwise: out(y, x) = in(x, 3 - y) */
			exp90[y * 4 + x] = (unsigned char)(x * 4 + 3 - y);
			exp270[y * 4 + x] = (unsigned char)((3 - x) * 4 + y);
			exp180[y * 4 + x] = (unsigned char)(15 - (y * 4 + x));
		}
	set_pixels(&im, 4, 4, 1, px);
	EXPECT_EQ(rv_rotate(&im, &ctx, 90, RV_NEAREST, zero3), 0);
	EXPECT(same_pixels(&im, exp90, 16));
	set_pixels(&im, 4, 4, 1, px);
	EXPECT_EQ(rv_rotate(&im, &ctx, -90, RV_BILINEAR, zero3), 0);
	EXPECT(same_pixels(&im, exp270, 16));
	set_pixels(&im, 4, 4, 1, px);
	EXPECT_EQ(rv_rotate(&im, &ctx, 180, RV_NEAREST, zero3), 0);
	EXPECT(same_pixels(&im, exp180, 16));
	set_pixels(&im, 4, 4, 1, px);
	EXPECT_EQ(rv_rotate(&im, &ctx, 360, RV_NEAREST, zero3), 0);
	EXPECT(same_pixels(&im, px, 16));

	pattern(&im, 3, 4, 1);
	EXPECT_EQ(rv_rotate(&im, &ctx, 90, RV_NEAREST, zero3), 0);
	EXPECT(same_pixels(&im, rot90_3x4, 12));
	pattern(&im, 3, 4, 1);
	{
		static const double nine[3] = { 9, 9, 9 };

		EXPECT_EQ(rv_rotate(&im, &ctx, 30, RV_BILINEAR, nine), 0);
		EXPECT(same_pixels(&im, rot30b_3x4, 12));
	}
	rv_img_release(&im);
	rv_aug_ctx_release(&ctx);
}

/* Whole-image hashes of torchvision's output on the 224x224 pattern. */
static void
t_warp_hashes(void)
{
	static const double fill[3] = { 1, 2, 3 };
	struct rv_img im = { 0 };
	struct rv_aug_ctx ctx;

	rv_aug_ctx_init(&ctx);
	pattern(&im, 224, 224, 3);
	EXPECT_EQ(rv_shear_x(&im, &ctx, 0.3, RV_BILINEAR, fill), 0);
	EXPECT(fnv(&im) == 0xe1e5ab039c14a01dull);
	pattern(&im, 224, 224, 3);
	EXPECT_EQ(rv_rotate(&im, &ctx, -17, RV_NEAREST, fill), 0);
	EXPECT(fnv(&im) == 0x6fa1874996fb1014ull);
	rv_img_release(&im);
	rv_aug_ctx_release(&ctx);
}

static void
t_translate(void)
{
	static const unsigned char px[6] = { 1, 2, 3, 4, 5, 6 };
	static const unsigned char right[6] = { 7, 1, 2, 7, 4, 5 };
	static const unsigned char up[6] = { 4, 5, 6, 7, 7, 7 };
	static const double seven[3] = { 7, 7, 7 };
	static const double rgb[3] = { 10, 20, 30 };
	struct rv_img im = { 0 };
	struct rv_aug_ctx ctx;
	int interp;

	rv_aug_ctx_init(&ctx);
	for (interp = RV_NEAREST; interp <= RV_BILINEAR; interp++) {
		set_pixels(&im, 2, 3, 1, px);
		EXPECT_EQ(rv_translate(&im, &ctx, 1, 0, interp, seven), 0);
		EXPECT(same_pixels(&im, right, 6));
		set_pixels(&im, 2, 3, 1, px);
		EXPECT_EQ(rv_translate(&im, &ctx, 0, -1, interp, seven), 0);
		EXPECT(same_pixels(&im, up, 6));
	}
	/* Far away: all fill, per channel. */
	pattern(&im, 5, 6, 3);
	EXPECT_EQ(rv_translate(&im, &ctx, 0, 500, RV_NEAREST, rgb), 0);
	EXPECT(im.data[0] == 10 && im.data[1] == 20 && im.data[2] == 30);
	EXPECT(im.data[89] == 30);
	rv_img_release(&im);
	rv_aug_ctx_release(&ctx);
}

static void
t_flips(void)
{
	struct rv_img im = { 0 }, ref = { 0 };
	uint32_t w, c, x, y, ch;

	/* Widths around the two-pixel step, and one past the row buffer. */
	for (c = 1; c <= 3; c += 2) {
		for (w = 1; w <= 2100; w += w < 9 ? 1 : 2089) {
			int ok = 1;

			pattern(&im, 3, w, c);
			pattern(&ref, 3, w, c);
			EXPECT_EQ(rv_hflip(&im), 0);
			for (y = 0; y < 3; y++)
				for (x = 0; x < w; x++)
					for (ch = 0; ch < c; ch++)
						if (im.data[(y * w + x) * c +
						    ch] != ref.data[(y * w + w -
						    1 - x) * c + ch])
							ok = 0;
			if (!ok)
				printf("# hflip w %u c %u\n", w, c);
			EXPECT(ok);
			EXPECT_EQ(rv_hflip(&im), 0);
			EXPECT(same_pixels(&im, ref.data, (size_t)3 * w * c));
		}
	}
	for (y = 1; y <= 4; y++) {
		int ok = 1;

		pattern(&im, y, 700, 3);
		pattern(&ref, y, 700, 3);
		EXPECT_EQ(rv_vflip(&im), 0);
		for (x = 0; x < y; x++)
			if (memcmp(im.data + x * 2100, ref.data +
			    (y - 1 - x) * 2100, 2100) != 0)
				ok = 0;
		EXPECT(ok);
	}
	rv_img_release(&im);
	rv_img_release(&ref);
}

static void
t_crop(void)
{
	static const unsigned char px[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	/* (-1, -1) 2 x 4: one row and column of fill, one beyond. */
	static const unsigned char outside[8] = { 0, 0, 0, 0, 0, 1, 2, 3 };
	static const unsigned char edge[16] = {
		1, 1, 2, 3, 1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9
	};
	static const unsigned char reflect[16] = {
		5, 4, 5, 6, 2, 1, 2, 3, 5, 4, 5, 6, 8, 7, 8, 9
	};
	static const unsigned char symmetric[16] = {
		1, 1, 2, 3, 1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9
	};
	struct rv_img im = { 0 };
	struct rv_aug_ctx ctx;

	rv_aug_ctx_init(&ctx);
	set_pixels(&im, 3, 3, 1, px);
	EXPECT_EQ(rv_crop(&im, &ctx, -1, -1, 2, 4, zero3), 0);
	EXPECT_EQ(im.h, 2);
	EXPECT_EQ(im.w, 4);
	EXPECT(same_pixels(&im, outside, 8));
	set_pixels(&im, 3, 3, 1, px);
	EXPECT_EQ(rv_crop(&im, &ctx, 10, 10, 1, 2, zero3), 0);
	EXPECT(im.data[0] == 0 && im.data[1] == 0);
	set_pixels(&im, 3, 3, 1, px);
	EXPECT_EQ(rv_crop_border(&im, &ctx, -1, -1, 4, 4, RV_BORDER_EDGE,
	    zero3), 0);
	EXPECT(same_pixels(&im, edge, 16));
	set_pixels(&im, 3, 3, 1, px);
	EXPECT_EQ(rv_crop_border(&im, &ctx, -1, -1, 4, 4, RV_BORDER_REFLECT,
	    zero3), 0);
	EXPECT(same_pixels(&im, reflect, 16));
	set_pixels(&im, 3, 3, 1, px);
	EXPECT_EQ(rv_crop_border(&im, &ctx, -1, -1, 4, 4,
	    RV_BORDER_SYMMETRIC, zero3), 0);
	EXPECT(same_pixels(&im, symmetric, 16));
	/* Far reflections stay periodic (numpy.pad). */
	set_pixels(&im, 3, 3, 1, px);
	EXPECT_EQ(rv_crop_border(&im, &ctx, 0, -9, 1, 1, RV_BORDER_REFLECT,
	    zero3), 0);
	EXPECT_EQ(im.data[0], 2);
	rv_img_release(&im);
	rv_aug_ctx_release(&ctx);
}

static void
t_resize_constant(void)
{
	struct rv_img im = { 0 };
	struct rv_aug_ctx ctx;
	static const uint32_t sizes[][2] = {
		{ 1, 1 }, { 7, 3 }, { 40, 17 }, { 300, 310 }, { 23, 64 }
	};
	size_t k, i, n;
	int interp, aa;

	rv_aug_ctx_init(&ctx);
	/* Every filter, PIL's (aa 1) and torch's (aa 0), keeps a flat image. */
	for (k = 0; k < 2 * 3 * 5; k++) {
		const uint32_t *sz = sizes[k % 5];
		int ok = 1;

		aa = (int)(k / 15);
		interp = (int)(k / 5 % 3);
		rv_img_reserve(&im, 37, 50, 3);
		memset(im.data, 173, 37 * 50 * 3);
		EXPECT_EQ(rv_resize_window(&im, &ctx, 0, 0, 37, 50, sz[0],
		    sz[1], interp, aa), 0);
		EXPECT_EQ(im.h, sz[0]);
		EXPECT_EQ(im.w, sz[1]);
		n = (size_t)im.h * im.w * 3;
		for (i = 0; i < n; i++)
			if (im.data[i] != 173)
				ok = 0;
		EXPECT(ok);
	}
	rv_img_release(&im);
	rv_aug_ctx_release(&ctx);
}

/* Values from torchvision F.resize on PIL images. */
static void
t_resize_pil(void)
{
	static const unsigned char px[16] = {
		10, 20, 30, 40, 50, 60, 70, 80,
		90, 100, 110, 120, 130, 140, 150, 160
	};
	static const unsigned char bil22[4] = { 46, 62, 108, 124 };
	static const unsigned char bic22[4] = { 39, 57, 113, 131 };
	static const unsigned char bil35[15] = {
		22, 29, 37, 45, 52, 70, 77, 85, 93, 100, 118, 125, 133, 141, 148
	};
	static const struct {
		uint32_t h, w, c, oh, ow;
		enum rv_interp interp;
		uint64_t hash;
	} big[] = {
		{ 40, 37, 3, 17, 23, RV_BILINEAR, 0xb4cee38ea83fb5c6ull },
		{ 40, 37, 3, 61, 50, RV_BICUBIC, 0xadf0623a09b43544ull },
		{ 33, 20, 1, 16, 7, RV_BILINEAR, 0x16d210df8fb302e7ull },
		{ 300, 200, 3, 224, 224, RV_BILINEAR, 0xfb6abbde68246749ull },
	};
	struct rv_img im = { 0 };
	struct rv_aug_ctx ctx;
	size_t k;

	rv_aug_ctx_init(&ctx);
	set_pixels(&im, 4, 4, 1, px);
	EXPECT_EQ(rv_resize(&im, &ctx, 2, 2, RV_BILINEAR), 0);
	EXPECT(same_pixels(&im, bil22, 4));
	set_pixels(&im, 4, 4, 1, px);
	EXPECT_EQ(rv_resize(&im, &ctx, 2, 2, RV_BICUBIC), 0);
	EXPECT(same_pixels(&im, bic22, 4));
	set_pixels(&im, 4, 4, 1, px);
	EXPECT_EQ(rv_resize(&im, &ctx, 3, 5, RV_BILINEAR), 0);
	EXPECT(same_pixels(&im, bil35, 15));
	for (k = 0; k < sizeof(big) / sizeof(big[0]); k++) {
		pattern(&im, big[k].h, big[k].w, big[k].c);
		EXPECT_EQ(rv_resize(&im, &ctx, big[k].oh, big[k].ow,
		    big[k].interp), 0);
		if (fnv(&im) != big[k].hash)
			printf("# case %zu: hash %016llx\n", k,
			    (unsigned long long)fnv(&im));
		EXPECT(fnv(&im) == big[k].hash);
	}
	/* A window outside the image is refused. */
	pattern(&im, 10, 10, 3);
	EXPECT_EQ(rv_resize_window(&im, &ctx, 5, 5, 6, 5, 3, 3, RV_BILINEAR,
	    1), -1);
	EXPECT_STR(rv_errmsg(),
	    "resize window 5x6 at (5, 5) outside the 10x10 image");
	rv_img_release(&im);
	rv_aug_ctx_release(&ctx);
}

static void
t_rrc_sampler(void)
{
	static const double scale[2] = { 0.08, 1.0 };
	static const double ratio[2] = { 3.0 / 4.0, 4.0 / 3.0 };
	static const double big[2] = { 0.9, 1.0 };
	static const double wide[2] = { 3.0, 4.0 };
	struct rv_rng r, r2;
	uint32_t box[4], box2[4], id, ndiff = 0;
	int ok = 1;

	for (id = 0; id < 2000; id++) {
		uint32_t h = 1 + id % 97, w = 1 + (id * 7) % 131;

		rv_rng_init(&r, 5, RV_STAGE_AUGMENT, 3, 0, id);
		rv_rrc_params(&r, h, w, scale, ratio, box);
		if (box[2] < 1 || box[3] < 1 || box[0] + box[2] > h ||
		    box[1] + box[3] > w)
			ok = 0;
		rv_rng_init(&r2, 5, RV_STAGE_AUGMENT, 3, 0, id);
		rv_rrc_params(&r2, h, w, scale, ratio, box2);
		if (memcmp(box, box2, sizeof(box)) != 0)
			ok = 0;
	}
	EXPECT(ok);
	/* Other samples, other boxes. */
	for (id = 0; id < 200; id++) {
		rv_rng_init(&r, 5, RV_STAGE_AUGMENT, 3, 0, id);
		rv_rrc_params(&r, 375, 500, scale, ratio, box);
		rv_rng_init(&r2, 5, RV_STAGE_AUGMENT, 3, 0, id + 100000);
		rv_rrc_params(&r2, 375, 500, scale, ratio, box2);
		if (memcmp(box, box2, sizeof(box)) != 0)
			ndiff++;
	}
	EXPECT(ndiff > 195);
	/* No box of that ratio fits a square: centre crop, ratio clamped
	 * to 3 (w = 300, h = round(300 / 3)). */
	rv_rng_init(&r, 1, RV_STAGE_AUGMENT, 0, 0, 0);
	rv_rrc_params(&r, 300, 300, big, wide, box);
	EXPECT_EQ(box[0], 100);
	EXPECT_EQ(box[1], 0);
	EXPECT_EQ(box[2], 100);
	EXPECT_EQ(box[3], 300);
	/* A ratio within range: the whole image. */
	rv_rng_init(&r, 1, RV_STAGE_AUGMENT, 0, 0, 0);
	rv_rrc_params(&r, 10, 10, (const double[2]){ 2.0, 3.0 }, ratio, box);
	EXPECT(box[0] == 0 && box[1] == 0 && box[2] == 10 && box[3] == 10);
}

/* Run one op of text on im with the generator rv_spec_apply would use. */
static int
run_op(const char *text, struct rv_img *im, struct rv_aug_ctx *ctx,
    uint64_t id, struct rv_rng *used)
{
	struct rv_spec s;
	struct rv_rng r;
	int rc;

	if (rv_spec_parse(text, 0, &s) < 0) {
		printf("# parse '%s': %s\n", text, rv_errmsg());
		return -1;
	}
	rv_rng_init(&r, 1, RV_STAGE_AUGMENT, s.ops[0].index, 0, id);
	if (used)
		*used = r;
	rc = s.ops[0].def->apply(&s.ops[0], im, ctx, &r);
	rv_spec_release(&s);
	return rc;
}

static void
t_random_crop(void)
{
	struct rv_img im = { 0 };
	struct rv_aug_ctx ctx;
	struct rv_rng r;
	uint64_t id;
	int bordered = 0, ok = 1;

	rv_aug_ctx_init(&ctx);
	for (id = 0; id < 50; id++) {
		uint32_t i, j, x, y;

		rv_img_reserve(&im, 32, 32, 3);
		memset(im.data, 255, 32 * 32 * 3);
		EXPECT_EQ(run_op("random_crop size=32 padding=4", &im, &ctx,
		    id, &r), 0);
		EXPECT(im.h == 32 && im.w == 32 && im.c == 3);
		/* The op's draws: top, then left, in [0, 8]. */
		i = (uint32_t)rv_rng_below(&r, 9);
		j = (uint32_t)rv_rng_below(&r, 9);
		for (y = 0; y < 32; y++)
			for (x = 0; x < 32; x++) {
				int in = y + i >= 4 && y + i < 36 &&
				    x + j >= 4 && x + j < 36;
				unsigned char v = im.data[(y * 32 + x) * 3];

				if (v != (in ? 255 : 0))
					ok = 0;
				if (!in)
					bordered = 1;
			}
	}
	EXPECT(ok);
	EXPECT(bordered);
	rv_img_reserve(&im, 32, 32, 3);
	EXPECT_EQ(run_op("random_crop size=41 padding=4", &im, &ctx, 0, NULL),
	    -1);
	EXPECT_STR(rv_errmsg(),
	    "crop size 41x41 is larger than the padded image 40x40");
	rv_img_release(&im);
	rv_aug_ctx_release(&ctx);
}

static void
t_ops(void)
{
	struct rv_img im = { 0 };
	struct rv_aug_ctx ctx;
	size_t k;

	rv_aug_ctx_init(&ctx);
	for (k = 0; rv_geom_ops[k] != NULL; k++) {
		const struct rv_op_def *d = rv_geom_ops[k];

		EXPECT_STR(d->family, "geometry");
		EXPECT(d->help != NULL && d->help[0] != '\0');
		EXPECT(rv_op_find(d->name) == d);
	}
	EXPECT_EQ(k, 13);
	/* Resize(256) of 300x400: shorter side 256, longer int(341.33). */
	pattern(&im, 300, 400, 3);
	EXPECT_EQ(run_op("resize size=256", &im, &ctx, 0, NULL), 0);
	EXPECT(im.h == 256 && im.w == 341);
	/* CenterCrop: round((5 - 2) / 2) = 2 (half to even). */
	pattern(&im, 5, 5, 1);
	EXPECT_EQ(run_op("center_crop size=2", &im, &ctx, 0, NULL), 0);
	EXPECT(im.h == 2 && im.w == 2 && im.data[0] == ((2 * 7 + 2 * 13) ^ 4));
	/* Larger than the image: zero padding around it. */
	pattern(&im, 2, 2, 1);
	EXPECT_EQ(run_op("center_crop size=4", &im, &ctx, 0, NULL), 0);
	EXPECT(im.h == 4 && im.data[3] == 0 && im.data[5] == 0 &&
	    im.data[6] == 7 && im.data[15] == 0);
	pattern(&im, 50, 60, 3);
	EXPECT_EQ(run_op("rrc size=24", &im, &ctx, 7, NULL), 0);
	EXPECT(im.h == 24 && im.w == 24 && im.c == 3);
	pattern(&im, 50, 60, 3);
	EXPECT_EQ(run_op("resized_crop top=-5 left=-5 height=20 width=30 "
	    "size=8", &im, &ctx, 0, NULL), 0);
	EXPECT(im.h == 8 && im.w == 8 && im.data[0] == 0);
	rv_img_release(&im);
	rv_aug_ctx_release(&ctx);
}

/*
 * Issue 47 item 13: an op whose output grows with its input's shape, or
 * with its arguments, refuses an image over RV_AUG_MAX_PIXELS (unless
 * its input was larger) before it allocates anything: no tmp image, no
 * scratch.  Resize(256) of a 1 x 16384 banner is 256 x 4194304, as in
 * torchvision, and took 3.3 GB; a thin image's resampling tables would
 * outgrow its pixels.
 */
static void
t_size_bound(void)
{
	static const struct {
		const char *spec, *msg;
		uint32_t h, w, c;
	} t[] = {
		{ "resize size=256", "makes a 4194304x256 image, over the "
		    "178956970-pixel limit", 1, 16384, 3 },
		{ "resize size=256", "makes a 256x4194304 image, over the "
		    "178956970-pixel limit", 16384, 1, 1 },
		{ "resize size=65536 interp=nearest", "makes a "
		    "281474976645120x65536 image, over the 4294967295-pixel "
		    "limit", 1, 4294967295u, 0 },
		{ "resize size=13000 antialias=0", "makes a 13000x130000 "
		    "image, over the 178956970-pixel limit", 100, 10, 1 },
		{ "center_crop size=65536", "makes a 65536x65536 image, over "
		    "the 178956970-pixel limit", 2, 2, 3 },
		{ "crop top=0 left=0 height=20000 width=9000", "makes a "
		    "9000x20000 image, over the 178956970-pixel limit",
		    2, 2, 1 },
		{ "random_crop size=40000 padding=20000", "makes a "
		    "40000x40000 image, over the 178956970-pixel limit",
		    2, 2, 3 },
		{ "resized_crop top=0 left=0 height=65536 width=65536 size=8",
		    "makes a 65536x65536 image, over the 178956970-pixel "
		    "limit", 50, 60, 3 },
		{ "resized_crop top=0 left=0 height=50 width=60 size=20000",
		    "makes a 20000x20000 image, over the 178956970-pixel "
		    "limit", 50, 60, 3 },
		{ "rrc size=65536", "makes a 65536x65536 image, over the "
		    "178956970-pixel limit", 50, 60, 1 },
	};
	struct rv_img im = { 0 }, big;
	struct rv_aug_ctx ctx;
	size_t k;

	for (k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		/* c 0: a header only; the op must not look at the pixels */
		if (t[k].c == 0) {
			memset(&big, 0, sizeof(big));
			big.h = t[k].h;
			big.w = t[k].w;
			big.c = 1;
		} else {
			pattern(&im, t[k].h, t[k].w, t[k].c);
		}
		rv_aug_ctx_init(&ctx);
		EXPECT_EQ(run_op(t[k].spec, t[k].c ? &im : &big, &ctx, 0,
		    NULL), -1);
		EXPECT_STR(rv_errmsg(), t[k].msg);
		EXPECT(ctx.tmp.cap == 0 && ctx.scratch_cap == 0);
		if (t[k].c)
			EXPECT(im.h == t[k].h && im.w == t[k].w);
		rv_aug_ctx_release(&ctx);
	}

	/*
	 * A thin image's resize within the bound: 2 x 1000 to a shorter
	 * side of 4 is 4 x 2000 (torchvision's int(4 * 1000 / 2)); its
	 * own size leaves it as it is.
	 */
	rv_aug_ctx_init(&ctx);
	pattern(&im, 2, 1000, 3);
	EXPECT_EQ(run_op("resize size=4", &im, &ctx, 0, NULL), 0);
	EXPECT(im.h == 4 && im.w == 2000);
	pattern(&im, 1, 16384, 1);
	EXPECT_EQ(run_op("resize size=1", &im, &ctx, 0, NULL), 0);
	EXPECT(im.h == 1 && im.w == 16384);

	/*
	 * Shrinking 2 x 20000000 (grey, 40 MB) to 1 x 10000000 is a small
	 * image, but its tables and the columns of the SIMD pass would
	 * take 860 MB: refused, nothing allocated.
	 */
	rv_aug_ctx_release(&ctx);
	rv_aug_ctx_init(&ctx);
	rv_img_reserve(&im, 2, 20000000, 1);
	memset(im.data, 0, (size_t)2 * 20000000);
	EXPECT_EQ(run_op("resize size=1", &im, &ctx, 0, NULL), -1);
	EXPECT(strncmp(rv_errmsg(), "needs ", 6) == 0 && strstr(rv_errmsg(),
	    " bytes to work in, over the 715827880-byte limit") != NULL);
	EXPECT(ctx.tmp.cap == 0 && ctx.scratch_cap == 0);
	rv_img_release(&im);

	/* The bound itself: the sides of an rv_img, the pixels, and an
	 * input already over the limit may shrink but not grow. */
	memset(&big, 0, sizeof(big));
	big.h = 100;
	big.w = 100;
	big.c = 3;
	EXPECT_EQ(rv_aug_check_size(&big, 13377, 13377), 0);
	EXPECT_EQ(rv_aug_check_size(&big, 13377, 13378), -1);
	EXPECT_EQ(rv_aug_check_size(&big, 1, RV_AUG_MAX_PIXELS), 0);
	EXPECT_EQ(rv_aug_check_size(&big, 1, (uint64_t)1 << 32), -1);
	EXPECT_EQ(rv_aug_check_size(&big, (uint64_t)1 << 33,
	    (uint64_t)1 << 33), -1);
	EXPECT_EQ(rv_aug_check_work(&big, 4.0 * RV_AUG_MAX_PIXELS), 0);
	EXPECT_EQ(rv_aug_check_work(&big, 4.0 * RV_AUG_MAX_PIXELS + 1), -1);
	EXPECT_STR(rv_errmsg(), "needs 715827881 bytes to work in, over the "
	    "715827880-byte limit");
	big.h = 20000;
	big.w = 20000;
	EXPECT_EQ(rv_aug_check_size(&big, 15000, 15000), 0);
	EXPECT_EQ(rv_aug_check_size(&big, 20000, 20000), 0);
	EXPECT_EQ(rv_aug_check_size(&big, 20000, 20001), -1);
	EXPECT_STR(rv_errmsg(), "makes a 20001x20000 image, over the "
	    "400000000-pixel limit");
	EXPECT_EQ(rv_aug_check_work(&big, 1.6e9), 0);
	rv_aug_ctx_release(&ctx);
}

/*
 * hflip (SIMD five pixels a step, then two, then one) and the in-place
 * crop against plain reference loops, for every width up to 300 so each
 * path and each tail length is met, grey and RGB.
 */
static void
t_flip_crop_widths(void)
{
	struct rv_aug_ctx ctx;
	const double zero[3] = { 0, 0, 0 };
	struct rv_rng rng;
	uint32_t w, c, y, x, k;

	rv_aug_ctx_init(&ctx);
	rv_rng_init(&rng, 1, 0, 0, 0, 0);
	for (w = 1; w <= 300; w++) {
		for (c = 1; c <= 3; c += 2) {
			struct rv_img im = { 0 };
			uint32_t n = 3 * w * c;
			unsigned char *ref = malloc(n);

			rv_img_reserve(&im, 3, w, c);
			for (k = 0; k < n; k++)
				im.data[k] = (unsigned char)rv_rng_u32(&rng);
			for (y = 0; y < 3; y++)
				for (x = 0; x < w; x++)
					memcpy(ref + (y * w + x) * c, im.data +
					    (y * w + (w - 1 - x)) * c, c);
			EXPECT(rv_hflip(&im) == 0);
			EXPECT(memcmp(ref, im.data, n) == 0);
			if (w > 2) {
				memcpy(ref, im.data, n);
				EXPECT(rv_crop(&im, &ctx, 1, 1, 2, w - 2,
				    zero) == 0);
				EXPECT(im.h == 2 && im.w == w - 2);
				for (y = 0; y < 2; y++)
					EXPECT(memcmp(im.data + y * (w - 2) * c,
					    ref + ((1 + y) * w + 1) * c,
					    (w - 2) * c) == 0);
			}
			rv_img_release(&im);
			free(ref);
		}
	}
	rv_aug_ctx_release(&ctx);
}

/*
 * Pillow's ImagingGenericTransform with affine_transform and
 * bilinear_filter (Geometry.c), written out plainly: the reference the
 * bilinear warp must match byte for byte.
 */
static int
ref_floor(double v)
{
	return v < 0.0 ? (int)floor(v) : (int)v;
}

static void
ref_bilinear(const unsigned char *src, uint32_t h, uint32_t w, uint32_t c,
    const double a[6], const unsigned char *fb, unsigned char *out)
{
	uint32_t x, y, ch;

	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			double xin = x + 0.5, yin = y + 0.5;
			double xf = a[0] * xin + a[1] * yin + a[2];
			double yf = a[3] * xin + a[4] * yin + a[5];
			unsigned char *d = out + ((size_t)y * w + x) * c;
			int xi, yi, x0, x1, y0;
			double dx, dy;

			if (xf < 0.0 || xf >= w || yf < 0.0 || yf >= h) {
				memcpy(d, fb, c);
				continue;
			}
			xf -= 0.5;
			yf -= 0.5;
			xi = ref_floor(xf);
			yi = ref_floor(yf);
			dx = xf - xi;
			dy = yf - yi;
			x0 = xi < 0 ? 0 : xi >= (int)w ? (int)w - 1 : xi;
			x1 = xi + 1 < 0 ? 0 : xi + 1 >= (int)w ? (int)w - 1 :
			    xi + 1;
			y0 = yi < 0 ? 0 : yi >= (int)h ? (int)h - 1 : yi;
			for (ch = 0; ch < c; ch++) {
				const unsigned char *r = src +
				    (size_t)y0 * w * c + ch;
				double v1, v2;

				v1 = r[(size_t)x0 * c] + ((double)r[(size_t)x1 *
				    c] - r[(size_t)x0 * c]) * dx;
				if (yi + 1 >= 0 && yi + 1 < (int)h) {
					r = src + (size_t)(yi + 1) * w * c + ch;
					v2 = r[(size_t)x0 * c] +
					    ((double)r[(size_t)x1 * c] -
					    r[(size_t)x0 * c]) * dx;
				} else {
					v2 = v1;
				}
				d[ch] = (unsigned char)(v1 + (v2 - v1) * dy);
			}
		}
}

static double
unif(uint64_t *s, double lo, double hi)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return lo + (hi - lo) * (double)(*s >> 11) * 0x1p-53;
}

/* The bilinear warp against ref_bilinear: shears, rotations about the
 * centre (torchvision's matrices), general maps and maps that miss the
 * image (empty spans), on random images of odd sizes. */
static void
t_bilinear_reference(void)
{
	static const uint32_t sz[][2] = { { 1, 1 }, { 5, 7 }, { 2, 9 },
	    { 224, 224 }, { 217, 333 }, { 64, 3 } };
	struct rv_img im = { 0 };
	struct rv_aug_ctx ctx;
	unsigned char *src = NULL, *ref = NULL, fb[3];
	uint64_t s = 18;
	int i, bad = 0, n = 0;

	rv_aug_ctx_init(&ctx);
	for (i = 0; i < 600; i++) {
		uint32_t h = sz[i % 6][0], w = sz[i % 6][1];
		uint32_t c = (i / 6) % 2 ? 3 : 1, k;
		size_t nb = (size_t)h * w * c;
		double m[6], fill[3], t, cs, sn, cx = w * 0.5, cy = h * 0.5;
		int kind = (i / 12) % 5;

		src = realloc(src, nb);
		ref = realloc(ref, nb);
		for (k = 0; k < nb; k++)
			src[k] = (unsigned char)unif(&s, 0, 256);
		for (k = 0; k < 3; k++) {
			fill[k] = (double)(int)unif(&s, 0, 256);
			fb[k] = (unsigned char)fill[k];
		}
		if (c == 1)
			fb[0] = (unsigned char)fill[0];
		t = unif(&s, -1, 1);
		if (kind == 0) {		/* shear_x */
			double mm[6] = { 1, t, -t * cy * (i % 2), 0, 1, 0 };
			memcpy(m, mm, sizeof(m));
		} else if (kind == 1) {		/* shear_y */
			double mm[6] = { 1, 0, 0, t, 1, -t * cx * (i % 2) };
			memcpy(m, mm, sizeof(m));
		} else if (kind == 2 || kind == 4) {	/* rotate */
			double deg = unif(&s, -360, 360);

			if (kind == 4 && i % 3 == 0)
				deg = 90.0 * (int)unif(&s, -4, 5);
			cs = cos(deg * 3.14159265358979323846 / 180.0);
			sn = sin(deg * 3.14159265358979323846 / 180.0);
			m[0] = cs;
			m[1] = sn;
			m[2] = cx - cs * cx - sn * cy;
			m[3] = -sn;
			m[4] = cs;
			m[5] = cy + sn * cx - cs * cy;
		} else {			/* general, sometimes missing */
			for (k = 0; k < 6; k++)
				m[k] = unif(&s, -2, 2);
			m[2] *= w;
			m[5] *= h;
			if (i % 2)
				m[2] += (i % 4 ? 1 : -1) * 3.0 * (w + h);
		}
		ref_bilinear(src, h, w, c, m, fb, ref);
		set_pixels(&im, h, w, c, src);
		EXPECT_EQ(rv_warp_affine(&im, &ctx, m, RV_BILINEAR, fill), 0);
		n++;
		if (!same_pixels(&im, ref, nb)) {
			printf("# case %d: %ux%ux%u kind %d\n", i, h, w, c,
			    kind);
			bad++;
		}
	}
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(n, 600);
	free(src);
	free(ref);
	rv_img_release(&im);
	rv_aug_ctx_release(&ctx);
}

int
main(void)
{
	RUN(t_identity_warp);
	RUN(t_quarter_turns);
	RUN(t_warp_hashes);
	RUN(t_translate);
	RUN(t_flips);
	RUN(t_crop);
	RUN(t_resize_constant);
	RUN(t_resize_pil);
	RUN(t_rrc_sampler);
	RUN(t_random_crop);
	RUN(t_ops);
	RUN(t_size_bound);
	RUN(t_flip_crop_widths);
	RUN(t_bilinear_reference);
	return UNIT_DONE();
}
