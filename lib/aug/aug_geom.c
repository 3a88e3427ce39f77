/*
 * Geometric augmentation ops (flips, crops, resize, RandomResizedCrop,
 * RandomCrop, rotate, shear, translate) and their kernels, with torchvision
 * semantics on PIL images.  The warps are PIL's Image.transform(AFFINE)
 * arithmetic (16.16 fixed point for nearest, its doubles for bilinear and
 * bicubic) on matrices built as torchvision and PIL build them, so the
 * bytes match.  Speed: per-row spans instead of per-pixel bounds tests,
 * source offsets four at a time (SSE2), 4- and 8-byte pixel moves, shifts
 * and crops as row copies, flips in place.  Resizing is in aug_resize.c.
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

/* PIL's FLOOR() and COORD(). */
static inline int
pil_floor(double v)
{
	return v < 0.0 ? (int)floor(v) : (int)v;
}

static inline int
pil_coord(double v)
{
	return v < 0.0 ? -1 : (int)v;
}

/* torchvision's _parse_fill: int() of each value (a fourth channel, if
 * any, repeats the third). */
static void
fill_bytes(const double fill[3], uint32_t c, unsigned char fb[4])
{
	uint32_t k;

	for (k = 0; k < 4; k++) {
		double v = fill ? fill[c == 1 ? 0 : k < 3 ? k : 2] : 0.0;

		fb[k] = v <= 0.0 ? 0 : v >= 255.0 ? 255 : (unsigned char)v;
	}
}

static void
put_fill(unsigned char *d, size_t npix, uint32_t c, const unsigned char *fb)
{
	size_t i;

	if (c == 1 || (fb[0] == fb[1] && fb[1] == fb[2])) {
		memset(d, fb[0], npix * c);
		return;
	}
	if (c == 3) {
		for (i = 0; i < npix; i++, d += 3) {
			d[0] = fb[0];
			d[1] = fb[1];
			d[2] = fb[2];
		}
		return;
	}
	for (i = 0; i < npix; i++, d += c)
		memcpy(d, fb, c);
}

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

/* floor(a / b) and ceil(a / b) for b > 0. */
static int64_t
floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && a < 0) ? q - 1 : q;
}

static int64_t
ceil_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && a > 0) ? q + 1 : q;
}

/* The x in [0, n) with lo <= v0 + x * dv < hi, as [*x0, *x1). */
static void
lin_span(int64_t v0, int64_t dv, int64_t lo, int64_t hi, int64_t n,
    int64_t *x0, int64_t *x1)
{
	int64_t a, b;

	if (dv == 0) {
		a = 0;
		b = v0 >= lo && v0 < hi ? n : 0;
	} else if (dv > 0) {
		a = ceil_div(lo - v0, dv);
		b = ceil_div(hi - v0, dv);
	} else {
		a = floor_div(v0 - hi, -dv) + 1;
		b = floor_div(v0 - lo, -dv) + 1;
	}
	if (a < 0)
		a = 0;
	if (a > n)
		a = n;
	if (b > n)
		b = n;
	if (b < a)
		b = a;
	*x0 = a;
	*x1 = b;
}

/* ---- affine warps (PIL Geometry.c) ---- */

/* PIL's check_fixed(): the corner maps inside the 16.16 range. */
static int
fits_fixed(const double a[6], double x, double y)
{
	return fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 &&
	    fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

/* PIL's FIX(): 16.16 rounding (in 64 bits: no overflow for odd maps). */
static int64_t
fix16(double v)
{
	return (int64_t)floor(v * 65536.0 + 0.5);
}

#ifdef HAVE_SSE2
/*
 * Source offsets of four pixels, (yy >> 16) * stride + (xx >> 16) * c,
 * with one pmaddwd: the words (yy >> 16, xx >> 16) of each lane times
 * (stride, c).  Needs both indices and stride below 2^15.
 */
static inline __m128i
span_offsets(__m128i xx, __m128i yy, __m128i mul)
{
	__m128i hi = _mm_set1_epi32((int32_t)0xffff0000u);

	return _mm_madd_epi16(_mm_or_si128(_mm_srli_epi32(yy, 16),
	    _mm_and_si128(xx, hi)), mul);
}
#endif

/*
 * PIL's affine_fixed(): nearest in 16.16 fixed point, the coordinates
 * stepped per pixel and per row.  Per row, the pixels that map inside the
 * image form one span (the map is linear), found by integer division, so
 * the inner loop has no test.
 */
static void
warp_nearest_fixed(const struct rv_img *in, unsigned char *dst,
    const double m[6], const unsigned char *fb)
{
	uint32_t c = in->c, w = in->w, h = in->h, y;
	size_t stride = (size_t)w * c;
	int64_t a0 = fix16(m[0]), a1 = fix16(m[1]), a3 = fix16(m[3]);
	int64_t a4 = fix16(m[4]);
	int64_t a2 = fix16(m[2] + m[0] * 0.5 + m[1] * 0.5);
	int64_t a5 = fix16(m[5] + m[3] * 0.5 + m[4] * 0.5);
	int64_t xlim = (int64_t)w << 16, ylim = (int64_t)h << 16;
	size_t last = (size_t)h * stride;
#ifdef HAVE_SSE2
	/* pmaddwd takes 16-bit signed factors. */
	int simd = w < 32768 && h < 32768 && stride < 32768;
	__m128i mul = _mm_set1_epi32((int32_t)(c << 16 | (uint32_t)stride));
	__m128i lim = _mm_set1_epi32((int32_t)last - 4);
#endif

	for (y = 0; y < h; y++, a2 += a1, a5 += a4) {
		unsigned char *d = dst + y * stride;
		const unsigned char *s = in->data;
		int64_t xa, xb, ya, yb, x, xx, yy;

		lin_span(a2, a0, 0, xlim, w, &xa, &xb);
		lin_span(a5, a3, 0, ylim, w, &ya, &yb);
		if (ya > xa)
			xa = ya;
		if (yb < xb)
			xb = yb;
		if (xb < xa)
			xb = xa;
		put_fill(d, (size_t)xa, c, fb);
		xx = a2 + xa * a0;
		yy = a5 + xa * a3;
		d += xa * c;
		x = xa;
#ifdef HAVE_SSE2
		if (simd && (c == 3 || c == 1)) {
			/* Four pixels a step: their offsets in SIMD, then
			 * 4-byte moves (below).  A step stops short of the
			 * span's last pixel and of the image's last bytes. */
			/* Lanes past the span may wrap: unsigned sums. */
			uint32_t ux = (uint32_t)xx, uy = (uint32_t)yy;
			uint32_t u0 = (uint32_t)a0, u3 = (uint32_t)a3;
			int32_t off[4];
			__m128i X = _mm_setr_epi32((int32_t)ux,
			    (int32_t)(ux + u0), (int32_t)(ux + 2 * u0),
			    (int32_t)(ux + 3 * u0));
			__m128i Y = _mm_setr_epi32((int32_t)uy,
			    (int32_t)(uy + u3), (int32_t)(uy + 2 * u3),
			    (int32_t)(uy + 3 * u3));
			__m128i dX = _mm_set1_epi32((int32_t)(4 * u0));
			__m128i dY = _mm_set1_epi32((int32_t)(4 * u3));

			for (; x + 4 < xb; x += 4) {
				__m128i o = span_offsets(X, Y, mul);

				if (_mm_movemask_epi8(_mm_cmpgt_epi32(o, lim)))
					break;
				_mm_storeu_si128((__m128i *)off, o);
				if (c == 3) {
					memcpy(d, s + off[0], 4);
					memcpy(d + 3, s + off[1], 4);
					memcpy(d + 6, s + off[2], 4);
					memcpy(d + 9, s + off[3], 4);
					d += 12;
				} else {
					d[0] = s[off[0]];
					d[1] = s[off[1]];
					d[2] = s[off[2]];
					d[3] = s[off[3]];
					d += 4;
				}
				X = _mm_add_epi32(X, dX);
				Y = _mm_add_epi32(Y, dY);
				xx += 4 * a0;
				yy += 4 * a3;
			}
		}
#endif
		if (c == 3) {
			/* 4-byte moves: the extra byte written is the next
			 * pixel's, rewritten next; the extra byte read must
			 * stay inside the image (slow path for its end). */
			for (; x + 1 < xb; x++, d += 3) {
				size_t o = (size_t)(yy >> 16) * stride +
				    (size_t)(xx >> 16) * 3;

				if (o + 4 <= last)
					memcpy(d, s + o, 4);
				else
					memcpy(d, s + o, 3);
				xx += a0;
				yy += a3;
			}
			if (x < xb) {
				memcpy(d, s + (size_t)(yy >> 16) * stride +
				    (size_t)(xx >> 16) * 3, 3);
				d += 3;
			}
		} else if (c == 1) {
			for (; x < xb; x++) {
				*d++ = s[(size_t)(yy >> 16) * stride +
				    (size_t)(xx >> 16)];
				xx += a0;
				yy += a3;
			}
		} else {
			for (x = xa; x < xb; x++, d += c) {
				memcpy(d, s + (size_t)(yy >> 16) * stride +
				    (size_t)(xx >> 16) * c, c);
				xx += a0;
				yy += a3;
			}
		}
		put_fill(d, (size_t)(w - xb), c, fb);
	}
}

/* PIL's floating-point nearest loop, for maps past the 16.16 range. */
static void
warp_nearest_double(const struct rv_img *in, unsigned char *dst,
    const double a[6], const unsigned char *fb)
{
	uint32_t c = in->c, w = in->w, h = in->h, x, y;
	size_t stride = (size_t)w * c;
	double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
	double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;

	for (y = 0; y < h; y++, xo += a[1], yo += a[4]) {
		double xx = xo, yy = yo;
		unsigned char *d = dst + y * stride;

		for (x = 0; x < w; x++, d += c, xx += a[0], yy += a[3]) {
			int xi = pil_coord(xx), yi = pil_coord(yy);

			if (xi >= 0 && xi < (int)w && yi >= 0 && yi < (int)h)
				memcpy(d, in->data + (size_t)yi * stride +
				    (size_t)xi * c, c);
			else
				memcpy(d, fb, c);
		}
	}
}

/*
 * PIL's bilinear_filter: v = a + (b - a) * d in doubles, along x on two
 * rows then along y, truncated.  Rows and columns past the edge repeat it.
 * dbl[] holds the doubles of 0..255: a load instead of an int-to-double
 * conversion (whose false dependency serialises the loop), same values.
 */
static inline void
bilinear_px(const struct rv_img *in, double xf, double yf, unsigned char *d,
    const double *dbl)
{
	uint32_t c = in->c, ch;
	size_t stride = (size_t)in->w * c;
	int x, y, x0, x1, y0;
	double dx, dy;
	const unsigned char *r0, *r1;

	xf -= 0.5;
	yf -= 0.5;
	x = pil_floor(xf);
	y = pil_floor(yf);
	dx = xf - x;
	dy = yf - y;
	if (c == 3 && x >= 0 && x + 1 < (int)in->w && y >= 0 &&
	    y + 1 < (int)in->h) {
		const unsigned char *a = in->data + (size_t)y * stride +
		    (size_t)x * 3, *b = a + stride;

		/* A zero weight leaves the other sample exactly (x + 0 * d
		 * is x), so a shear along one axis costs half. */
		if (dy == 0.0) {
			for (ch = 0; ch < 3; ch++)
				d[ch] = (unsigned char)(int)(dbl[a[ch]] +
				    (dbl[a[ch + 3]] - dbl[a[ch]]) * dx);
		} else if (dx == 0.0) {
			for (ch = 0; ch < 3; ch++)
				d[ch] = (unsigned char)(int)(dbl[a[ch]] +
				    (dbl[b[ch]] - dbl[a[ch]]) * dy);
		} else {
			for (ch = 0; ch < 3; ch++) {
				double v1 = dbl[a[ch]] + (dbl[a[ch + 3]] -
				    dbl[a[ch]]) * dx;
				double v2 = dbl[b[ch]] + (dbl[b[ch + 3]] -
				    dbl[b[ch]]) * dx;

				d[ch] = (unsigned char)(int)(v1 + (v2 - v1) *
				    dy);
			}
		}
		return;
	}
	x0 = x < 0 ? 0 : x;
	x1 = x + 1 >= (int)in->w ? (int)in->w - 1 : x + 1;
	y0 = y < 0 ? 0 : y;
	r0 = in->data + (size_t)y0 * stride;
	r1 = y + 1 < (int)in->h ? in->data + (size_t)(y + 1) * stride : NULL;
	for (ch = 0; ch < c; ch++) {
		double p0 = dbl[r0[(size_t)x0 * c + ch]];
		double p1 = dbl[r0[(size_t)x1 * c + ch]];
		double v1 = p0 + (p1 - p0) * dx, v2 = v1;

		if (r1 != NULL) {
			p0 = dbl[r1[(size_t)x0 * c + ch]];
			p1 = dbl[r1[(size_t)x1 * c + ch]];
			v2 = p0 + (p1 - p0) * dx;
		}
		d[ch] = (unsigned char)(int)(v1 + (v2 - v1) * dy);
	}
}

/* PIL's BICUBIC(): its cubic convolution (a = -1) on four samples. */
static inline double
pil_cubic(double v1, double v2, double v3, double v4, double d)
{
	double p1 = v2;
	double p2 = -v1 + v3;
	double p3 = 2 * (v1 - v2) + v3 - v4;
	double p4 = -v1 + v2 - v3 + v4;

	return p1 + d * (p2 + d * (p3 + d * p4));
}

/* PIL's bicubic_filter: 4x4, past the last row repeat the previous. */
static inline void
bicubic_px(const struct rv_img *in, double xf, double yf, unsigned char *d)
{
	int w = (int)in->w, h = (int)in->h, x, y, k, xs[4];
	uint32_t c = in->c, ch;
	size_t stride = (size_t)w * c;
	double dx, dy;

	xf -= 0.5;
	yf -= 0.5;
	x = pil_floor(xf);
	y = pil_floor(yf);
	dx = xf - x;
	dy = yf - y;
	x--;
	y--;
	for (k = 0; k < 4; k++) {
		int xi = x + k;

		xs[k] = xi < 0 ? 0 : xi >= w ? w - 1 : xi;
	}
	for (ch = 0; ch < c; ch++) {
		double v[4];
		int y0 = y < 0 ? 0 : y >= h ? h - 1 : y;

		for (k = 0; k < 4; k++) {
			const unsigned char *r;

			if (k > 0 && !(y + k >= 0 && y + k < h)) {
				v[k] = v[k - 1];
				continue;
			}
			r = in->data + (size_t)(k == 0 ? y0 : y + k) * stride +
			    ch;
			v[k] = pil_cubic(r[(size_t)xs[0] * c],
			    r[(size_t)xs[1] * c], r[(size_t)xs[2] * c],
			    r[(size_t)xs[3] * c], dx);
		}
		v[0] = pil_cubic(v[0], v[1], v[2], v[3], dy);
		d[ch] = v[0] <= 0.0 ? 0 : v[0] >= 255.0 ? 255 :
		    (unsigned char)v[0];
	}
}

/*
 * The x in [0, n) with lo <= t[x] + r + k < hi, as [*x0, *x1), found by
 * bisection on the very doubles the pixel loop computes: t[x] = a (x +
 * 0.5) is monotone in x (rounding is monotone), so is the sum, and the
 * in-bounds x form one interval.  dec: a < 0 (the sum does not increase).
 */
static inline double
tsum(const double *t, double r, double k, uint32_t x)
{
	return t[x] + r + k;
}

static uint32_t
lead_count(const double *t, double r, double k, uint32_t n, double v, int dec)
{
	uint32_t lo = 0, hi = n;

	/* The leading x with sum < v (increasing) or sum >= v (not). */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		double f = tsum(t, r, k, mid);

		if (dec ? f >= v : f < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
dbl_span(const double *t, double r, double k, double a, double lim,
    uint32_t n, uint32_t *x0, uint32_t *x1)
{
	int dec = a < 0.0;

	if (!dec) {
		*x0 = lead_count(t, r, k, n, 0.0, 0);
		*x1 = lead_count(t, r, k, n, lim, 0);
	} else {
		*x0 = lead_count(t, r, k, n, lim, 1);
		*x1 = lead_count(t, r, k, n, 0.0, 1);
	}
	if (*x1 < *x0)
		*x1 = *x0;
}

#ifdef HAVE_SSE2
/* The low three bytes of u as doubles, channels 0-1 in *lo, 2 (and a 0)
 * in *hi: exact, as dbl[] is. */
static inline void
px3_pd(uint32_t u, __m128d *lo, __m128d *hi)
{
	__m128i z = _mm_setzero_si128(), v;

	v = _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128((int)(u &
	    0xffffff)), z), z);
	*lo = _mm_cvtepi32_pd(v);
	*hi = _mm_cvtepi32_pd(_mm_shuffle_epi32(v, 0xee));
}

/* bilinear_filter's a + (b - a) * d per channel, two channels a lane
 * pair: the same IEEE operations in the same order. */
static inline void
lerp3_pd(uint32_t p, uint32_t q, __m128d d, __m128d *lo, __m128d *hi)
{
	__m128d p0, p1, q0, q1;

	px3_pd(p, &p0, &p1);
	px3_pd(q, &q0, &q1);
	*lo = _mm_add_pd(p0, _mm_mul_pd(_mm_sub_pd(q0, p0), d));
	*hi = _mm_add_pd(p1, _mm_mul_pd(_mm_sub_pd(q1, p1), d));
}

/* Four bytes at p, three of them a pixel's, whole-word loads: pixel x
 * has pixel x + 1 after it; pixel x + 1 is read from a word one byte
 * earlier (shifted down), so nothing past its own bytes is read. */
static inline uint32_t
ld_px(const unsigned char *p)
{
	uint32_t u;

	memcpy(&u, p, 4);
	return u;
}

static inline uint32_t
ld_next(const unsigned char *p)
{
	uint32_t u;

	memcpy(&u, p + 2, 4);
	return u >> 8;
}

/* (unsigned char)(int)v of each channel (v in [0, 255]): four bytes, the
 * last garbage, written when the next pixel is written after (more), else
 * three. */
static inline void
store3_pd(unsigned char *d, __m128d lo, __m128d hi, int more)
{
	__m128i v = _mm_unpacklo_epi64(_mm_cvttpd_epi32(lo),
	    _mm_cvttpd_epi32(hi));
	uint32_t u;

	v = _mm_packs_epi32(v, v);
	u = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(v, v));
	if (more)
		memcpy(d, &u, 4);
	else
		memcpy(d, &u, 3);
}

/* bilinear_px for three channels inside the image (x, x + 1, y, y + 1
 * all in range). */
static inline void
bilinear3_inner(const unsigned char *a, size_t stride, double dx, double dy,
    unsigned char *d, int more)
{
	const unsigned char *b = a + stride;
	__m128d lo, hi, lo2, hi2;

	if (dy == 0.0) {
		lerp3_pd(ld_px(a), ld_next(a), _mm_set1_pd(dx), &lo, &hi);
	} else if (dx == 0.0) {
		/* b's next pixel exists: a 4-byte load of b is safe. */
		lerp3_pd(ld_px(a), ld_px(b), _mm_set1_pd(dy), &lo, &hi);
	} else {
		__m128d vdx = _mm_set1_pd(dx), vdy = _mm_set1_pd(dy);

		lerp3_pd(ld_px(a), ld_next(a), vdx, &lo, &hi);
		lerp3_pd(ld_px(b), ld_next(b), vdx, &lo2, &hi2);
		lo = _mm_add_pd(lo, _mm_mul_pd(_mm_sub_pd(lo2, lo), vdy));
		hi = _mm_add_pd(hi, _mm_mul_pd(_mm_sub_pd(hi2, hi), vdy));
	}
	store3_pd(d, lo, hi, more);
}
#endif

#if defined(HAVE_SSE2) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_WARP 1

/* The three channels (and a garbage fourth) of u as four double lanes. */
__attribute__((target("avx2"))) static inline __m256d
px3_pd4(uint32_t u)
{
	return _mm256_cvtepi32_pd(_mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)u)));
}

/* bilinear_filter's a + (b - a) * d, every lane (AVX2 has no FMA: the
 * target leaves out "fma", so nothing can be contracted). */
__attribute__((target("avx2"))) static inline __m256d
lerp_pd4(__m256d p, __m256d q, __m256d d)
{
	return _mm256_add_pd(p, _mm256_mul_pd(_mm256_sub_pd(q, p), d));
}

/*
 * The bilinear pixels [xa, xb) of one row of three channels, the span's
 * source points all inside the image: bilinear_px with the channels as
 * the lanes of one __m256d, one conversion per source pixel.  Points
 * whose 2x2 neighbourhood crosses the edge take bilinear_px itself.
 */
__attribute__((target("avx2"))) static void
bilinear3_span_avx2(const struct rv_img *in, unsigned char *d,
    const double *tx, const double *ty, const double r[4], uint32_t xa,
    uint32_t xb, const double *dbl)
{
	size_t stride = (size_t)in->w * 3;
	int w = (int)in->w, h = (int)in->h;
	uint32_t x;

	int32_t xis[4], yis[4];
	double dxs[4], dys[4];
	__m256d rx = _mm256_set1_pd(r[0]), ry = _mm256_set1_pd(r[1]);
	__m256d kx = _mm256_set1_pd(r[2]), ky = _mm256_set1_pd(r[3]);
	__m256d half = _mm256_set1_pd(0.5);

	for (x = xa; x < xb; x++, d += 3) {
		uint32_t k = (x - xa) & 3;
		int xi, yi;
		const unsigned char *a, *b;
		double dx, dy;
		__m256d v;
		__m128i o;
		uint32_t u;

		if (k == 0 && x + 4 <= xb) {
			/* Four source points: (t + r) + k - 0.5 as the scalar
			 * loop adds, floor (pil_floor is floor: (int) of a
			 * non-negative value truncates down), the fractions
			 * xs - floor(xs) as xs - (double)xi. */
			__m256d xs = _mm256_sub_pd(_mm256_add_pd(_mm256_add_pd(
			    _mm256_loadu_pd(tx + x), rx), kx), half);
			__m256d ys = _mm256_sub_pd(_mm256_add_pd(_mm256_add_pd(
			    _mm256_loadu_pd(ty + x), ry), ky), half);
			__m256d fx = _mm256_floor_pd(xs), fy = _mm256_floor_pd(ys);

			_mm256_storeu_pd(dxs, _mm256_sub_pd(xs, fx));
			_mm256_storeu_pd(dys, _mm256_sub_pd(ys, fy));
			_mm_storeu_si128((__m128i *)(void *)xis,
			    _mm256_cvttpd_epi32(fx));
			_mm_storeu_si128((__m128i *)(void *)yis,
			    _mm256_cvttpd_epi32(fy));
		} else if (k == 0 || x + 4 > xb) {
			double xf = tx[x] + r[0] + r[2], yf = ty[x] + r[1] + r[3];
			double xs = xf - 0.5, ys = yf - 0.5;

			k = 0;
			xis[0] = pil_floor(xs);
			yis[0] = pil_floor(ys);
			dxs[0] = xs - xis[0];
			dys[0] = ys - yis[0];
		}
		xi = xis[k];
		yi = yis[k];
		if (!(xi >= 0 && xi + 1 < w && yi >= 0 && yi + 1 < h)) {
			/* Clean upper halves before SSE code: a dirty state
			 * slows every later SSE instruction, nearest warps
			 * included (2x measured). */
			_mm256_zeroupper();
			bilinear_px(in, tx[x] + r[0] + r[2],
			    ty[x] + r[1] + r[3], d, dbl);
			continue;
		}
		a = in->data + (size_t)yi * stride + (size_t)xi * 3;
		b = a + stride;
		dx = dxs[k];
		dy = dys[k];
		if (dy == 0.0) {
			v = lerp_pd4(px3_pd4(ld_px(a)), px3_pd4(ld_next(a)),
			    _mm256_set1_pd(dx));
		} else if (dx == 0.0) {
			v = lerp_pd4(px3_pd4(ld_px(a)), px3_pd4(ld_px(b)),
			    _mm256_set1_pd(dy));
		} else {
			__m256d vdx = _mm256_set1_pd(dx);

			v = lerp_pd4(lerp_pd4(px3_pd4(ld_px(a)),
			    px3_pd4(ld_next(a)), vdx),
			    lerp_pd4(px3_pd4(ld_px(b)), px3_pd4(ld_next(b)),
			    vdx), _mm256_set1_pd(dy));
		}
		o = _mm256_cvttpd_epi32(v);
		o = _mm_packs_epi32(o, o);
		u = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(o, o));
		if (x + 1 < xb)
			memcpy(d, &u, 4);
		else
			memcpy(d, &u, 3);
	}
}
#endif

/*
 * PIL's generic transform with affine_transform(): the source point of
 * every pixel computed afresh as (a0 xin + a1 yin) + a2, the a0 xin and
 * a3 xin terms tabulated once per call (the same doubles).  Per row, the
 * pixels whose source point is inside the image form one span (dbl_span),
 * the rest is fill; bilinear on three channels runs the channels as SIMD
 * lanes with the same double operations.
 */
static void
warp_filtered(const struct rv_img *in, unsigned char *dst, const double a[6],
    enum rv_interp interp, const unsigned char *fb, double *tab)
{
	uint32_t c = in->c, w = in->w, h = in->h, x, y;
	size_t stride = (size_t)w * c;
	double *tx = tab, *ty = tab + w, *dbl = tab + 2 * w;
#ifdef HAVE_AVX2_WARP
	int avx2 = __builtin_cpu_supports("avx2");
#endif

	for (x = 0; x < 256; x++)
		dbl[x] = x;
	for (x = 0; x < w; x++) {
		tx[x] = a[0] * (x + 0.5);
		ty[x] = a[3] * (x + 0.5);
	}
	for (y = 0; y < h; y++) {
		double rx = a[1] * (y + 0.5), ry = a[4] * (y + 0.5);
		unsigned char *d = dst + (size_t)y * stride;
		uint32_t xa, xb, ya, yb;

		dbl_span(tx, rx, a[2], a[0], (double)w, w, &xa, &xb);
		dbl_span(ty, ry, a[5], a[3], (double)h, w, &ya, &yb);
		if (ya > xa)
			xa = ya;
		if (yb < xb)
			xb = yb;
		if (xb < xa)
			xb = xa;
		put_fill(d, xa, c, fb);
		d += (size_t)xa * c;
		if (interp == RV_BICUBIC) {
			for (x = xa; x < xb; x++, d += c)
				bicubic_px(in, tx[x] + rx + a[2],
				    ty[x] + ry + a[5], d);
		} else {
#ifdef HAVE_AVX2_WARP
			if (c == 3 && avx2) {
				double r[4] = { rx, ry, a[2], a[5] };

				bilinear3_span_avx2(in, d, tx, ty, r, xa, xb,
				    dbl);
				d += (size_t)(xb - xa) * 3;
				put_fill(d, (size_t)(w - xb), c, fb);
				continue;
			}
#endif
			for (x = xa; x < xb; x++, d += c) {
				double xf = tx[x] + rx + a[2];
				double yf = ty[x] + ry + a[5];
#ifdef HAVE_SSE2
				if (c == 3) {
					double xs = xf - 0.5, ys = yf - 0.5;
					int xi = pil_floor(xs), yi = pil_floor(ys);

					if (xi >= 0 && xi + 1 < (int)w &&
					    yi >= 0 && yi + 1 < (int)h) {
						bilinear3_inner(in->data +
						    (size_t)yi * stride +
						    (size_t)xi * 3, stride,
						    xs - xi, ys - yi, d,
						    x + 1 < xb);
						continue;
					}
				}
#endif
				bilinear_px(in, xf, yf, d, dbl);
			}
		}
		put_fill(d, (size_t)(w - xb), c, fb);
	}
}

int
rv_warp_affine(struct rv_img *img, struct rv_aug_ctx *ctx,
    const double inv[6], enum rv_interp interp, const double fill[3])
{
	unsigned char fb[4];
	uint32_t w = img->w, h = img->h;

	if (img->c == 0 || img->c > 4)
		return rv_seterr("affine: %u channels unsupported", img->c);
	fill_bytes(fill, img->c, fb);
	if (interp != RV_NEAREST) {
		double *tab = rv_aug_scratch(ctx, ((size_t)w * 2 + 256) *
		    sizeof(double));

		rv_aug_tmp(ctx, h, w, img->c);
		warp_filtered(img, ctx->tmp.data, inv, interp, fb, tab);
	} else if (inv[1] == 0 && inv[3] == 0) {
		int *xtab = rv_aug_scratch(ctx, (size_t)w * sizeof(int));

		rv_aug_tmp(ctx, h, w, img->c);
		rv_scale_nearest(img->data, (size_t)w * img->c, h, w, img->c,
		    ctx->tmp.data, (size_t)w * img->c, h, w, inv, fb, xtab);
	} else if (fits_fixed(inv, 0, 0) && fits_fixed(inv, w, h) &&
	    fits_fixed(inv, 0, h) && fits_fixed(inv, w, 0)) {
		rv_aug_tmp(ctx, h, w, img->c);
		warp_nearest_fixed(img, ctx->tmp.data, inv, fb);
	} else {
		rv_aug_tmp(ctx, h, w, img->c);
		warp_nearest_double(img, ctx->tmp.data, inv, fb);
	}
	rv_aug_swap(img, ctx);
	return 0;
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
	fill_bytes(fill, c, fb);
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
			put_fill(d, w, c, fb);
			continue;
		}
		put_fill(d, (size_t)xa, c, fb);
		if (xb > xa)
			memcpy(d + xa * c, img->data + sy * stride +
			    (xa - dx) * c, (size_t)(xb - xa) * c);
		put_fill(d + xb * c, (size_t)(w - xb), c, fb);
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
	fill_bytes(fill, c, fb);
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
			put_fill(d, w, c, fb);
			continue;
		}
		s = img->data + sy * sstride;
		if (xb > xa)
			memcpy(d + xa * c, s + (left + xa) * c,
			    (size_t)(xb - xa) * c);
		if (mode == RV_BORDER_CONSTANT) {
			put_fill(d, (size_t)xa, c, fb);
			put_fill(d + xb * c, (size_t)(w - xb), c, fb);
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

/* torchvision Resize(int): the shorter side to size, the longer one
 * int(size * long / short). */
static int
op_resize(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	uint32_t size = 0, sh, sl, nh, nw;
	double nl;

	if (arg_size(op, 0, &size) < 0)
		return -1;
	if (img->h == 0 || img->w == 0)
		return rv_seterr("empty image");
	sh = img->w <= img->h ? img->w : img->h;
	sl = img->w <= img->h ? img->h : img->w;
	nl = (double)((uint64_t)size * sl) / sh;
	if (nl > 65536.0 * 64)
		return rv_seterr("size: %u makes a %ux%u image too large", size,
		    img->w, img->h);
	nw = img->w <= img->h ? size : (uint32_t)nl;
	nh = img->w <= img->h ? (uint32_t)nl : size;
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
