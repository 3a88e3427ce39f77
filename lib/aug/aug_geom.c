/*
 * Geometric augmentation ops (flips, crops, resize, RandomResizedCrop,
 * RandomCrop, rotate, shear, translate) and their kernels, with torchvision
 * semantics on PIL images.  The warps' matrices are built as torchvision
 * and PIL build them, so the bytes match; the warp kernels themselves are
 * in aug_warp.c, resizing in aug_resize.c.  Speed: shifts and crops as
 * row copies, flips in place.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aug/aug.h"
#include "aug/aug_geom.h"
#include "aug/aug_impl.h"
#include "base/err.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_SSE2 1
#endif

#ifdef __clang__
/* PIL's doubles are rounded after every operation: no fused multiply-add. */
#pragma STDC FP_CONTRACT OFF
#endif

/* Python's math.pi and the constants of math.radians / math.degrees. */
#define PY_PI		3.14159265358979323846
#define DEG2RAD		(PY_PI / 180.0)
#define RAD2DEG		(180.0 / PY_PI)

/* Python's float modulo: the result takes the divisor's sign. */
static double
py_fmod(double x, double m)
{
	double r = fmod(x, m);

	if (r != 0.0) {
		if ((m < 0) != (r < 0))
			r += m;
	} else {
		r = copysign(0.0, m);
	}
	return r;
}

/* Python's round(x, 15): correctly rounded through decimal text. */
static double
round15(double x)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.15f", x);
	return strtod(buf, NULL);
}

/*
 * torchvision's _get_inverse_affine_matrix (angles in degrees), operation
 * for operation, so the doubles handed to the warp are Python's.
 */
static void
tv_inverse_affine(double cx, double cy, double angle, double tx, double ty,
    double scale, double shx, double shy, double m[6])
{
	double rot = angle * DEG2RAD, sx = shx * DEG2RAD, sy = shy * DEG2RAD;
	double a, b, c, d;
	int k;

	a = cos(rot - sy) / cos(sy);
	b = -cos(rot - sy) * tan(sx) / cos(sy) - sin(rot);
	c = sin(rot - sy) / cos(sy);
	d = -sin(rot - sy) * tan(sx) / cos(sy) + cos(rot);
	m[0] = d;
	m[1] = -b;
	m[2] = 0.0;
	m[3] = -c;
	m[4] = a;
	m[5] = 0.0;
	for (k = 0; k < 6; k++)
		m[k] /= scale;
	m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
	m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
	m[2] += cx;
	m[5] += cy;
}

int
rv_shear_x(struct rv_img *img, struct rv_aug_ctx *ctx, double v,
    enum rv_interp interp, const double fill[3])
{
	double m[6];

	tv_inverse_affine(0, 0, 0.0, 0, 0, 1.0, atan(v) * RAD2DEG, 0.0, m);
	return rv_warp_affine(img, ctx, m, interp, fill);
}

int
rv_shear_y(struct rv_img *img, struct rv_aug_ctx *ctx, double v,
    enum rv_interp interp, const double fill[3])
{
	double m[6];

	tv_inverse_affine(0, 0, 0.0, 0, 0, 1.0, 0.0, atan(v) * RAD2DEG, m);
	return rv_warp_affine(img, ctx, m, interp, fill);
}

/*
 * F.affine(translate=[dx, dy]) with whole pixels maps every pixel centre
 * onto a pixel centre, so nearest and bilinear both reduce to a shift
 * (PIL's bilinear then has weights 0 and 1): copy row spans.
 */
int
rv_translate(struct rv_img *img, struct rv_aug_ctx *ctx, int dx, int dy,
    enum rv_interp interp, const double fill[3])
{
	uint32_t w = img->w, h = img->h, c = img->c, y;
	size_t stride = (size_t)w * c;
	unsigned char fb[4];
	int64_t xa, xb;

	(void)interp;
	if (c == 0 || c > 4)
		return rv_seterr("translate: %u channels unsupported", c);
	if (dx == 0 && dy == 0)
		return 0;
	rv_fill_bytes(fill, c, fb);
	rv_aug_tmp(ctx, h, w, c);
	/* Output x takes input x - dx. */
	xa = dx > 0 ? dx : 0;
	xb = (int64_t)w + (dx < 0 ? dx : 0);
	if (xa > w)
		xa = w;
	if (xb < xa)
		xb = xa;
	for (y = 0; y < h; y++) {
		unsigned char *d = ctx->tmp.data + y * stride;
		int64_t sy = (int64_t)y - dy;

		if (sy < 0 || sy >= h) {
			rv_put_fill(d, w, c, fb);
			continue;
		}
		rv_put_fill(d, (size_t)xa, c, fb);
		if (xb > xa)
			memcpy(d + xa * c, img->data + sy * stride +
			    (xa - dx) * c, (size_t)(xb - xa) * c);
		rv_put_fill(d + xb * c, (size_t)(w - xb), c, fb);
	}
	rv_aug_swap(img, ctx);
	return 0;
}

/* PIL's ROTATE_180 reverses the pixel order: both flips, in place. */
static int
rotate180(struct rv_img *img)
{
	if (rv_hflip(img) < 0)
		return -1;
	return rv_vflip(img);
}

/*
 * PIL's ROTATE_90 (counter-clockwise) or ROTATE_270 of a square image:
 * output row y is input column n - 1 - y read down (ccw), or column y
 * read up.
 */
static void
rotate90(struct rv_img *img, struct rv_aug_ctx *ctx, int ccw)
{
	uint32_t n = img->w, c = img->c, x, y;
	size_t stride = (size_t)n * c;
	ptrdiff_t step = ccw ? (ptrdiff_t)stride : -(ptrdiff_t)stride;

	rv_aug_tmp(ctx, n, n, c);
	for (y = 0; y < n; y++) {
		unsigned char *d = ctx->tmp.data + y * stride;
		const unsigned char *s = img->data + (ccw ?
		    (size_t)(n - 1 - y) * c : (size_t)(n - 1) * stride +
		    (size_t)y * c);

		if (c == 3) {
			for (x = 0; x < n; x++, d += 3, s += step) {
				d[0] = s[0];
				d[1] = s[1];
				d[2] = s[2];
			}
		} else if (c == 1) {
			for (x = 0; x < n; x++, s += step)
				d[x] = *s;
		} else {
			for (x = 0; x < n; x++, d += c, s += step)
				memcpy(d, s, c);
		}
	}
	rv_aug_swap(img, ctx);
}

/* PIL's Image.rotate(deg, expand=False): its fast paths, its matrix. */
int
rv_rotate(struct rv_img *img, struct rv_aug_ctx *ctx, double deg,
    enum rv_interp interp, const double fill[3])
{
	double ang = py_fmod(deg, 360.0), r, m[6], cx, cy;

	if (ang == 0)
		return 0;
	if (ang == 180)
		return rotate180(img);
	if ((ang == 90 || ang == 270) && img->w == img->h) {
		rotate90(img, ctx, ang == 90);
		return 0;
	}
	r = -(ang * DEG2RAD);
	m[0] = round15(cos(r));
	m[1] = round15(sin(r));
	m[3] = round15(-sin(r));
	m[4] = round15(cos(r));
	cx = img->w / 2.0;
	cy = img->h / 2.0;
	m[2] = m[0] * -cx + m[1] * -cy + 0.0;
	m[5] = m[3] * -cx + m[4] * -cy + 0.0;
	m[2] += cx;
	m[5] += cy;
	return rv_warp_affine(img, ctx, m, interp, fill);
}

/* ---- crops and flips ---- */

/* numpy.pad's index for position i of an n-long axis. */
static int64_t
border_index(int64_t i, int64_t n, enum rv_border mode)
{
	int64_t p;

	switch (mode) {
	case RV_BORDER_EDGE:
		return i < 0 ? 0 : i >= n ? n - 1 : i;
	case RV_BORDER_REFLECT:
		if (n == 1)
			return 0;
		p = 2 * (n - 1);
		i %= p;
		if (i < 0)
			i += p;
		return i < n ? i : p - i;
	case RV_BORDER_SYMMETRIC:
		p = 2 * n;
		i %= p;
		if (i < 0)
			i += p;
		return i < n ? i : p - 1 - i;
	default:
		return i >= 0 && i < n ? i : -1;
	}
}

int
rv_crop_border(struct rv_img *img, struct rv_aug_ctx *ctx, int top,
    int left, uint32_t h, uint32_t w, enum rv_border mode,
    const double fill[3])
{
	uint32_t c = img->c, y;
	int64_t sw = img->w, sh = img->h, xa, xb, x;
	size_t sstride = (size_t)img->w * c, dstride = (size_t)w * c;
	unsigned char fb[4];

	if (c == 0 || c > 4)
		return rv_seterr("crop: %u channels unsupported", c);
	if (h == 0 || w == 0)
		return rv_seterr("crop: empty size %ux%u", w, h);
	if (rv_aug_check_size(img, h, w) < 0)
		return -1;
	if (mode != RV_BORDER_CONSTANT && (img->h == 0 || img->w == 0))
		return rv_seterr("cannot pad an empty image");
	if (top == 0 && left == 0 && h == img->h && w == img->w)
		return 0;
	if (top >= 0 && left >= 0 && (int64_t)top + h <= sh &&
	    (int64_t)left + w <= sw) {
		/* Inside the image: move the rows down in place.  Row y's
		 * destination never lies after its source, so going
		 * forward never overwrites a row still to be read. */
		for (y = 0; y < h; y++)
			memmove(img->data + y * dstride, img->data +
			    ((size_t)top + y) * sstride + (size_t)left * c,
			    dstride);
		img->h = h;
		img->w = w;
		return 0;
	}
	rv_fill_bytes(fill, c, fb);
	rv_aug_tmp(ctx, h, w, c);
	/* Output columns [xa, xb) come straight from the image. */
	xa = -(int64_t)left;
	xb = sw - left;
	if (xa < 0)
		xa = 0;
	if (xb > w)
		xb = w;
	if (xb < xa)
		xa = xb = 0;
	for (y = 0; y < h; y++) {
		unsigned char *d = ctx->tmp.data + y * dstride;
		int64_t sy = border_index((int64_t)top + y, sh, mode);
		const unsigned char *s;

		if (sy < 0) {
			rv_put_fill(d, w, c, fb);
			continue;
		}
		s = img->data + sy * sstride;
		if (xb > xa)
			memcpy(d + xa * c, s + (left + xa) * c,
			    (size_t)(xb - xa) * c);
		if (mode == RV_BORDER_CONSTANT) {
			rv_put_fill(d, (size_t)xa, c, fb);
			rv_put_fill(d + xb * c, (size_t)(w - xb), c, fb);
			continue;
		}
		for (x = 0; x < xa; x++)
			memcpy(d + x * c, s + border_index(left + x, sw, mode) *
			    c, c);
		for (x = xb; x < w; x++)
			memcpy(d + x * c, s + border_index(left + x, sw, mode) *
			    c, c);
	}
	rv_aug_swap(img, ctx);
	return 0;
}

int
rv_crop(struct rv_img *img, struct rv_aug_ctx *ctx, int top, int left,
    uint32_t h, uint32_t w, const double fill[3])
{
	return rv_crop_border(img, ctx, top, left, h, w, RV_BORDER_CONSTANT,
	    fill);
}

/*
 * In place, a row at a time: the row is copied to a stack buffer, then its
 * pixels written back in reverse order with 4-byte moves (the byte written
 * past a pixel is rewritten by the next; the buffer has slack for the
 * byte read past).  Rows too long for the buffer swap pixel by pixel.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <tmmintrin.h>
#define HAVE_SSSE3_FLIP 1

/*
 * One RGB row reversed from src into dst with SSSE3's byte shuffle: five
 * pixels (15 bytes) a step, the 16th byte written being rewritten by the
 * next step; src has 1 byte of slack past its end.  Returns the pixels
 * done; the caller finishes the row.
 */
__attribute__((target("ssse3"))) static uint32_t
flip_row3_ssse3(unsigned char *dst, const unsigned char *src, uint32_t w)
{
	const __m128i rev = _mm_setr_epi8(12, 13, 14, 9, 10, 11, 6, 7, 8,
	    3, 4, 5, 0, 1, 2, 15);
	uint32_t i;

	for (i = 0; i + 6 <= w; i += 5) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)
		    (src + ((size_t)w - 5 - i) * 3));
		_mm_storeu_si128((__m128i *)(void *)(dst + (size_t)i * 3),
		    _mm_shuffle_epi8(v, rev));
	}
	return i;
}
#endif

int
rv_hflip(struct rv_img *img)
{
	uint32_t c = img->c, w = img->w, y, i, j;
	size_t stride = (size_t)w * c;
	unsigned char buf[3 * 2048 + 8];
#ifdef HAVE_SSSE3_FLIP
	int ssse3 = __builtin_cpu_supports("ssse3");
#endif

	if (c == 0 || c > 4)
		return rv_seterr("flip: %u channels unsupported", c);
	if (w < 2)
		return 0;
	for (y = 0; y < img->h; y++) {
		unsigned char *r = img->data + y * stride, t;

		if (c == 3 && stride <= sizeof(buf) - 8) {
			const unsigned char *p;

			memcpy(buf, r, stride);
			i = 0;
#ifdef HAVE_SSSE3_FLIP
			if (ssse3) {
				i = flip_row3_ssse3(r, buf, w);
				r += (size_t)i * 3;
			}
#endif
			p = buf + stride - 3 - (size_t)i * 3;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			/* Two pixels a move: 8 bytes in, swapped, 8 out. */
			for (; i + 3 < w; i += 2, r += 6, p -= 6) {
				uint64_t v, o;

				memcpy(&v, p - 3, 8);
				o = (v >> 24 & 0xffffff) | (v & 0xffffff) << 24;
				memcpy(r, &o, 8);
			}
#endif
			for (; i + 1 < w; i++, r += 3, p -= 3)
				memcpy(r, p, 4);
			memcpy(r, p, 3);
		} else if (c == 1) {
			for (i = 0, j = w - 1; i < j; i++, j--)
				t = r[i], r[i] = r[j], r[j] = t;
		} else {
			unsigned char px[4];

			for (i = 0, j = w - 1; i < j; i++, j--) {
				memcpy(px, r + (size_t)i * c, c);
				memcpy(r + (size_t)i * c, r + (size_t)j * c, c);
				memcpy(r + (size_t)j * c, px, c);
			}
		}
	}
	return 0;
}

/* In place: rows swapped pairwise, 16 bytes at a time where SSE2 is. */
int
rv_vflip(struct rv_img *img)
{
	size_t stride = (size_t)img->w * img->c;
	uint32_t i, j;

	if (img->h == 0)
		return 0;
	for (i = 0, j = img->h - 1; i < j; i++, j--) {
		unsigned char *a = img->data + i * stride;
		unsigned char *b = img->data + j * stride;
		size_t off = 0;

#ifdef HAVE_SSE2
		for (; off + 16 <= stride; off += 16) {
			__m128i va = _mm_loadu_si128((__m128i *)(a + off));
			__m128i vb = _mm_loadu_si128((__m128i *)(b + off));

			_mm_storeu_si128((__m128i *)(a + off), vb);
			_mm_storeu_si128((__m128i *)(b + off), va);
		}
#endif
		for (; off < stride; off++) {
			unsigned char t = a[off];

			a[off] = b[off];
			b[off] = t;
		}
	}
	return 0;
}

/* ---- RandomResizedCrop's sampler ---- */

/* Python's round(): half to even (the default rounding mode). */
static int64_t
py_round(double x)
{
	return (int64_t)nearbyint(x);
}

void
rv_rrc_params(struct rv_rng *rng, uint32_t h, uint32_t w,
    const double scale[2], const double ratio[2], uint32_t box[4])
{
	double area = (double)h * w, lr0 = log(ratio[0]), lr1 = log(ratio[1]);
	double in_r, rmin, rmax;
	int64_t ch, cw;
	int k;

	for (k = 0; k < 10; k++) {
		double u1 = rv_rng_uniform(rng), u2 = rv_rng_uniform(rng);
		double ta = area * (scale[0] + (scale[1] - scale[0]) * u1);
		double ar = exp(lr0 + (lr1 - lr0) * u2);

		cw = py_round(sqrt(ta * ar));
		ch = py_round(sqrt(ta / ar));
		if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
			box[0] = (uint32_t)rv_rng_below(rng, h - ch + 1);
			box[1] = (uint32_t)rv_rng_below(rng, w - cw + 1);
			box[2] = (uint32_t)ch;
			box[3] = (uint32_t)cw;
			return;
		}
	}
	/* Centre crop with the ratio brought into range. */
	in_r = (double)w / h;
	rmin = ratio[0] < ratio[1] ? ratio[0] : ratio[1];
	rmax = ratio[0] < ratio[1] ? ratio[1] : ratio[0];
	if (in_r < rmin) {
		cw = w;
		ch = py_round(cw / rmin);
	} else if (in_r > rmax) {
		ch = h;
		cw = py_round(ch * rmax);
	} else {
		cw = w;
		ch = h;
	}
	/* Rounding can step one past the side (torchvision would crop
	 * outside); keep the box inside. */
	if (ch > h)
		ch = h;
	if (cw > w)
		cw = w;
	if (ch < 1)
		ch = 1;
	if (cw < 1)
		cw = 1;
	box[0] = (uint32_t)((h - ch) / 2);
	box[1] = (uint32_t)((w - cw) / 2);
	box[2] = (uint32_t)ch;
	box[3] = (uint32_t)cw;
}

/* ---- the ops ---- */

/* An INT argument (the parser has checked its range). */
static int64_t
arg_int(const struct rv_op *op, int k)
{
	return (int64_t)op->v[k][0];
}

/* A size argument that has no default (def 0, below its range). */
static int
arg_size(const struct rv_op *op, int k, uint32_t *out)
{
	int64_t v = arg_int(op, k);

	if (v < 1 || v > 65536)
		return rv_seterr("%s: missing or out of range",
		    op->def->args[k].name);
	*out = (uint32_t)v;
	return 0;
}

static int
op_shear_x(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	return rv_shear_x(img, ctx, op->v[0][0], (enum rv_interp)op->v[1][0],
	    op->v[2]);
}

static int
op_shear_y(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	return rv_shear_y(img, ctx, op->v[0][0], (enum rv_interp)op->v[1][0],
	    op->v[2]);
}

static int
op_translate_x(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return rv_translate(img, ctx, (int)arg_int(op, 0), 0,
	    (enum rv_interp)op->v[1][0], op->v[2]);
}

static int
op_translate_y(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return rv_translate(img, ctx, 0, (int)arg_int(op, 0),
	    (enum rv_interp)op->v[1][0], op->v[2]);
}

static int
op_rotate(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	return rv_rotate(img, ctx, op->v[0][0], (enum rv_interp)op->v[1][0],
	    op->v[2]);
}

/*
 * torchvision Resize(int): the shorter side to size, the longer one
 * int(size * long / short), which a thin image makes huge (1 x 16384 to
 * 256 x 4194304): the size is checked against the bound before the long
 * side is even cast to 32 bits.
 */
static int
op_resize(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	uint32_t size = 0, sh, sl, nh, nw;
	uint64_t nl;
	int wide;

	if (arg_size(op, 0, &size) < 0)
		return -1;
	if (img->h == 0 || img->w == 0)
		return rv_seterr("empty image");
	wide = img->w > img->h;
	sh = wide ? img->h : img->w;
	sl = wide ? img->w : img->h;
	/* Below 2^48, so the double holds it whole. */
	nl = (uint64_t)((double)((uint64_t)size * sl) / sh);
	if (rv_aug_check_size(img, wide ? size : nl, wide ? nl : size) < 0)
		return -1;
	nw = wide ? (uint32_t)nl : size;
	nh = wide ? size : (uint32_t)nl;
	if (nh == img->h && nw == img->w)
		return 0;
	return rv_resize_window(img, ctx, 0, 0, img->h, img->w, nh, nw,
	    (enum rv_interp)op->v[1][0], op->v[2][0] != 0);
}

/* torchvision CenterCrop: zero padding when smaller, round() offsets. */
static int
op_center_crop(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	static const double zero[3];
	uint32_t size = 0;
	int64_t top, left;

	if (arg_size(op, 0, &size) < 0)
		return -1;
	if (size > img->h)
		top = -(int64_t)((size - img->h) / 2);
	else
		top = py_round((img->h - size) / 2.0);
	if (size > img->w)
		left = -(int64_t)((size - img->w) / 2);
	else
		left = py_round((img->w - size) / 2.0);
	return rv_crop(img, ctx, (int)top, (int)left, size, size, zero);
}

static int
op_crop(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	static const double zero[3];
	uint32_t h = 0, w = 0;

	if (arg_size(op, 2, &h) < 0 || arg_size(op, 3, &w) < 0)
		return -1;
	return rv_crop(img, ctx, (int)arg_int(op, 0), (int)arg_int(op, 1), h,
	    w, zero);
}

/* F.resized_crop: F.crop (zeros outside), then resize to size x size. */
static int
op_resized_crop(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	static const double zero[3];
	int64_t top = arg_int(op, 0), left = arg_int(op, 1);
	uint32_t h = 0, w = 0, size = 0;
	enum rv_interp interp = (enum rv_interp)op->v[5][0];

	if (arg_size(op, 2, &h) < 0 || arg_size(op, 3, &w) < 0 ||
	    arg_size(op, 4, &size) < 0)
		return -1;
	if (top < 0 || left < 0 || top + h > img->h || left + w > img->w) {
		if (rv_crop(img, ctx, (int)top, (int)left, h, w, zero) < 0)
			return -1;
		top = left = 0;
	}
	return rv_resize_window(img, ctx, (uint32_t)top, (uint32_t)left, h, w,
	    size, size, interp, 1);
}

static int
op_rrc(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	uint32_t size = 0, box[4];

	if (arg_size(op, 0, &size) < 0)
		return -1;
	if (op->v[2][0] <= 0 || op->v[2][1] <= 0)
		return rv_seterr("ratio: must be positive");
	if (img->h == 0 || img->w == 0)
		return rv_seterr("empty image");
	rv_rrc_params(rng, img->h, img->w, op->v[1], op->v[2], box);
	return rv_resize_window(img, ctx, box[0], box[1], box[2], box[3],
	    size, size, (enum rv_interp)op->v[3][0], 1);
}

/* RandomCrop(size, padding, fill, padding_mode): pad, then crop at a
 * random offset; the padding is never built, the crop reads through it. */
static int
op_random_crop(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	uint32_t size = 0;
	int64_t pad = arg_int(op, 1), ph, pw, i = 0, j = 0;

	if (arg_size(op, 0, &size) < 0)
		return -1;
	ph = (int64_t)img->h + 2 * pad;
	pw = (int64_t)img->w + 2 * pad;
	if (ph < size || pw < size)
		return rv_seterr("crop size %ux%u is larger than the padded "
		    "image %lldx%lld", size, size, (long long)pw,
		    (long long)ph);
	if (ph != size || pw != size) {
		i = (int64_t)rv_rng_below(rng, (uint64_t)(ph - size + 1));
		j = (int64_t)rv_rng_below(rng, (uint64_t)(pw - size + 1));
	}
	return rv_crop_border(img, ctx, (int)(i - pad), (int)(j - pad), size,
	    size, (enum rv_border)op->v[3][0], op->v[2]);
}

static int
op_flip(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	return rv_hflip(img);
}

static int
op_vflip(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	return rv_vflip(img);
}

#define INTERP2		"nearest|bilinear"
#define INTERP3		"nearest|bilinear|bicubic"
#define ARG_END		{ NULL, 0, { 0 }, 0, 0, NULL, NULL }
#define ARG_INTERP2(d) { "interp", RV_ARG_ENUM, { d }, 0, 1, INTERP2, \
	"interpolation" }
#define ARG_INTERP3(d) { "interp", RV_ARG_ENUM, { d }, 0, 2, INTERP3, \
	"interpolation (antialiased when shrinking)" }
#define ARG_FILL { "fill", RV_ARG_FILL, { 0, 0, 0 }, 0, 255, NULL, \
	"value for the uncovered area" }
#define ARG_SIZE(help) { "size", RV_ARG_INT, { 0 }, 1, 65536, NULL, help }

static const struct rv_arg_def shear_args[] = {
	{ "v", RV_ARG_FLOAT, { 0 }, -1, 1, NULL,
	    "shear factor: tangent of the shear angle" },
	ARG_INTERP2(RV_NEAREST),
	ARG_FILL,
	ARG_END
};

static const struct rv_arg_def translate_args[] = {
	{ "px", RV_ARG_INT, { 0 }, -65536, 65536, NULL,
	    "shift in pixels (positive: right or down)" },
	ARG_INTERP2(RV_NEAREST),
	ARG_FILL,
	ARG_END
};

static const struct rv_arg_def rotate_args[] = {
	{ "deg", RV_ARG_FLOAT, { 0 }, -360, 360, NULL,
	    "angle in degrees, counter-clockwise" },
	ARG_INTERP2(RV_NEAREST),
	ARG_FILL,
	ARG_END
};

static const struct rv_arg_def resize_args[] = {
	ARG_SIZE("length of the shorter side"),
	ARG_INTERP3(RV_BILINEAR),
	{ "antialias", RV_ARG_BOOL, { 1 }, 0, 1, NULL,
	    "PIL's antialiased filters; 0: the tensor path (torch interpolate)" },
	ARG_END
};

static const struct rv_arg_def center_crop_args[] = {
	ARG_SIZE("side of the square crop; pads with 0 if larger"),
	ARG_END
};

static const struct rv_arg_def crop_args[] = {
	{ "top", RV_ARG_INT, { 0 }, -65536, 65536, NULL,
	    "first row (may lie outside: zeros)" },
	{ "left", RV_ARG_INT, { 0 }, -65536, 65536, NULL,
	    "first column (may lie outside: zeros)" },
	{ "height", RV_ARG_INT, { 0 }, 1, 65536, NULL,
	    "crop height" },
	{ "width", RV_ARG_INT, { 0 }, 1, 65536, NULL,
	    "crop width" },
	ARG_END
};

static const struct rv_arg_def resized_crop_args[] = {
	{ "top", RV_ARG_INT, { 0 }, -65536, 65536, NULL, "first row" },
	{ "left", RV_ARG_INT, { 0 }, -65536, 65536, NULL, "first column" },
	{ "height", RV_ARG_INT, { 0 }, 1, 65536, NULL,
	    "crop height" },
	{ "width", RV_ARG_INT, { 0 }, 1, 65536, NULL,
	    "crop width" },
	ARG_SIZE("side of the square output"),
	ARG_INTERP3(RV_BILINEAR),
	ARG_END
};

static const struct rv_arg_def rrc_args[] = {
	ARG_SIZE("side of the square output"),
	{ "scale", RV_ARG_PAIR, { 0.08, 1 }, 0, 1, NULL,
	    "range of the crop's fraction of the image area" },
	{ "ratio", RV_ARG_PAIR, { 3.0 / 4.0, 4.0 / 3.0 }, 0.001, 1000, NULL,
	    "range of the crop's width/height (log-uniform)" },
	ARG_INTERP3(RV_BILINEAR),
	ARG_END
};

static const struct rv_arg_def random_crop_args[] = {
	ARG_SIZE("side of the square crop"),
	{ "padding", RV_ARG_INT, { 0 }, 0, 65536, NULL,
	    "pixels added on every side first" },
	{ "fill", RV_ARG_FILL, { 0, 0, 0 }, 0, 255, NULL,
	    "padding value for pad_mode=constant" },
	{ "pad_mode", RV_ARG_ENUM, { RV_BORDER_CONSTANT }, 0, 3,
	    "constant|edge|reflect|symmetric", "how the padding is made" },
	ARG_END
};

static const struct rv_arg_def no_args[] = {
	ARG_END
};

static const struct rv_op_def def_shear_x = {
	"shear_x", "shear along x about the top-left corner (F.affine)",
	"geometry", op_shear_x, shear_args, 0
};
static const struct rv_op_def def_shear_y = {
	"shear_y", "shear along y about the top-left corner (F.affine)",
	"geometry", op_shear_y, shear_args, 0
};
static const struct rv_op_def def_translate_x = {
	"translate_x", "shift horizontally by whole pixels (F.affine)",
	"geometry", op_translate_x, translate_args, 0
};
static const struct rv_op_def def_translate_y = {
	"translate_y", "shift vertically by whole pixels (F.affine)",
	"geometry", op_translate_y, translate_args, 0
};
static const struct rv_op_def def_rotate = {
	"rotate", "rotate about the centre, same size (F.rotate)",
	"geometry", op_rotate, rotate_args, 0
};
static const struct rv_op_def def_resize = {
	"resize", "resize the shorter side to size, keep the aspect (Resize)",
	"geometry", op_resize, resize_args, 0
};
static const struct rv_op_def def_center_crop = {
	"center_crop", "crop the central size x size square (CenterCrop)",
	"geometry", op_center_crop, center_crop_args, 0
};
static const struct rv_op_def def_crop = {
	"crop", "crop a fixed rectangle (F.crop)",
	"geometry", op_crop, crop_args, 0
};
static const struct rv_op_def def_resized_crop = {
	"resized_crop", "crop a fixed rectangle, resize to size x size "
	    "(F.resized_crop)",
	"geometry", op_resized_crop, resized_crop_args, 0
};
static const struct rv_op_def def_rrc = {
	"rrc", "random crop of random area and aspect, resized "
	    "(RandomResizedCrop)",
	"geometry", op_rrc, rrc_args, 0
};
static const struct rv_op_def def_random_crop = {
	"random_crop", "pad, then crop size x size at a random place "
	    "(RandomCrop)",
	"geometry", op_random_crop, random_crop_args, 0
};
static const struct rv_op_def def_flip = {
	"flip", "mirror left-right (RandomHorizontalFlip)",
	"geometry", op_flip, no_args, 0.5
};
static const struct rv_op_def def_vflip = {
	"vflip", "mirror top-bottom (RandomVerticalFlip)",
	"geometry", op_vflip, no_args, 0.5
};

const struct rv_op_def *const rv_geom_ops[] = {
	&def_shear_x,
	&def_shear_y,
	&def_translate_x,
	&def_translate_y,
	&def_rotate,
	&def_resize,
	&def_center_crop,
	&def_crop,
	&def_resized_crop,
	&def_rrc,
	&def_random_crop,
	&def_flip,
	&def_vflip,
	NULL
};
