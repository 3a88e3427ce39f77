/*
 * The affine warp kernels under rotate, shear and translate: PIL's
 * Image.transform(AFFINE) arithmetic (Geometry.c: 16.16 fixed point for
 * nearest, its doubles for bilinear and bicubic), so the bytes match
 * PIL's.  Speed: per-row spans instead of per-pixel bounds tests, source
 * offsets four at a time (SSE2), 4- and 8-byte pixel moves, AVX2 for the
 * filtered rows where the CPU has it.  Also the fill colour every
 * geometric op paints uncovered pixels with.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
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
void
rv_fill_bytes(const double fill[3], uint32_t c, unsigned char fb[4])
{
	uint32_t k;

	for (k = 0; k < 4; k++) {
		double v = fill ? fill[c == 1 ? 0 : k < 3 ? k : 2] : 0.0;

		fb[k] = v <= 0.0 ? 0 : v >= 255.0 ? 255 : (unsigned char)v;
	}
}

void
rv_put_fill(unsigned char *d, size_t npix, uint32_t c, const unsigned char *fb)
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
		rv_put_fill(d, (size_t)xa, c, fb);
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
		rv_put_fill(d, (size_t)(w - xb), c, fb);
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
		rv_put_fill(d, xa, c, fb);
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
				rv_put_fill(d, (size_t)(w - xb), c, fb);
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
		rv_put_fill(d, (size_t)(w - xb), c, fb);
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
	rv_fill_bytes(fill, img->c, fb);
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

