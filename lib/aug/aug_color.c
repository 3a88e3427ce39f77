/*
 * Colour augmentation: the photometric kernels of aug_impl.h and the colour
 * ops of the registry.  Each kernel is bit for bit torchvision 0.14 on a
 * PIL image (Pillow 9.4's ImageEnhance, ImageOps and HSV conversions); the
 * comments give the Pillow code each one follows.  Per-pixel maps are
 * 256-entry tables; blends use Pillow's own float32 formula, 16 bytes at a
 * time with SSE2, because any fixed-point form differs from it by one.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "aug/aug_impl.h"
#include "base/err.h"

/*
 * Bit-exactness needs every a * b + c rounded twice, as Pillow does: no
 * fused multiply-add.  GCC contracts none in ISO mode (-std=c17); clang
 * would by default, where the target has FMA.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* Pillow's convert("L"): ITU-R 601 luma in 16-bit fixed point. */
static inline unsigned
luma(const unsigned char *p)
{
	return (p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16;
}

static int
check(const struct rv_img *img)
{
	if (img->c != 1 && img->c != 3)
		return rv_seterr("image has %u channels, not 1 or 3", img->c);
	return 0;
}

static size_t
nbytes(const struct rv_img *img)
{
	return (size_t)img->h * img->w * img->c;
}

/*
 * Pillow's ImagingBlend(deg, img, f): deg + f * (img - deg) in float32
 * (f is a C float there), clipped to [0, 255], truncated.  Within [0, 1]
 * Pillow skips the clip, which never changes the result.
 */
static inline unsigned char
blend1(int deg, int x, float f)
{
	float t = (float)deg + f * (float)(x - deg);

	if (t <= 0.0f)
		return 0;
	if (t >= 255.0f)
		return 255;
	return (unsigned char)t;
}

#if defined(__SSE2__)
static inline __m128i
blend4(__m128i d32, __m128i e32, __m128 vf)
{
	__m128 t = _mm_add_ps(_mm_cvtepi32_ps(d32),
	    _mm_mul_ps(vf, _mm_cvtepi32_ps(e32)));

	t = _mm_min_ps(_mm_max_ps(t, _mm_setzero_ps()), _mm_set1_ps(255.0f));
	return _mm_cvttps_epi32(t);
}

/* Sign-extend the low or high four 16-bit lanes to 32 bits. */
#define LO32(v)	_mm_srai_epi32(_mm_unpacklo_epi16((v), (v)), 16)
#define HI32(v)	_mm_srai_epi32(_mm_unpackhi_epi16((v), (v)), 16)
#endif

/* x[i] = blend1(deg[i], x[i], f) for n bytes. */
static void
blend_row(unsigned char *x, const unsigned char *deg, size_t n, float f)
{
	size_t i = 0;

#if defined(__SSE2__)
	__m128 vf = _mm_set1_ps(f);
	__m128i z = _mm_setzero_si128();

	for (; i + 16 <= n; i += 16) {
		__m128i xv = _mm_loadu_si128((const __m128i *)(x + i));
		__m128i dv = _mm_loadu_si128((const __m128i *)(deg + i));
		__m128i dl = _mm_unpacklo_epi8(dv, z);
		__m128i dh = _mm_unpackhi_epi8(dv, z);
		__m128i el = _mm_sub_epi16(_mm_unpacklo_epi8(xv, z), dl);
		__m128i eh = _mm_sub_epi16(_mm_unpackhi_epi8(xv, z), dh);
		__m128i r0 = blend4(_mm_unpacklo_epi16(dl, z), LO32(el), vf);
		__m128i r1 = blend4(_mm_unpackhi_epi16(dl, z), HI32(el), vf);
		__m128i r2 = blend4(_mm_unpacklo_epi16(dh, z), LO32(eh), vf);
		__m128i r3 = blend4(_mm_unpackhi_epi16(dh, z), HI32(eh), vf);

		_mm_storeu_si128((__m128i *)(x + i), _mm_packus_epi16(
		    _mm_packs_epi32(r0, r1), _mm_packs_epi32(r2, r3)));
	}
#endif
	for (; i < n; i++)
		x[i] = blend1(deg[i], x[i], f);
}

static void
apply_lut(unsigned char *p, size_t n, const unsigned char *lut)
{
	size_t i = 0;

	for (; i + 4 <= n; i += 4) {
		unsigned char a = lut[p[i]], b = lut[p[i + 1]];
		unsigned char c = lut[p[i + 2]], d = lut[p[i + 3]];

		p[i] = a;
		p[i + 1] = b;
		p[i + 2] = c;
		p[i + 3] = d;
	}
	for (; i < n; i++)
		p[i] = lut[p[i]];
}

/* One table per channel of an RGB image (lut is 3 x 256). */
static void
apply_lut3(unsigned char *p, size_t npix, const unsigned char *lut)
{
	const unsigned char *l0 = lut, *l1 = lut + 256, *l2 = lut + 512;
	size_t i;

	for (i = 0; i < npix; i++, p += 3) {
		unsigned char a = l0[p[0]], b = l1[p[1]], c = l2[p[2]];

		p[0] = a;
		p[1] = b;
		p[2] = c;
	}
}

/* Blend every byte against a constant degenerate value, by table. */
static void
blend_const(struct rv_img *img, int deg, double f)
{
	unsigned char lut[256];
	int i;

	for (i = 0; i < 256; i++)
		lut[i] = blend1(deg, i, (float)f);
	apply_lut(img->data, nbytes(img), lut);
}

/* ImageEnhance.Brightness: blend with black. */
int
rv_brightness(struct rv_img *img, double f)
{
	if (check(img) < 0)
		return -1;
	if (f != 1.0)
		blend_const(img, 0, f);
	return 0;
}

/*
 * ImageEnhance.Color: blend with img.convert("L").convert(mode), so grey
 * images are unchanged.  The grey row is built, replicated, then blended.
 */
int
rv_saturation(struct rv_img *img, double f)
{
	unsigned char deg[3 * 64];
	size_t npix, i, k, m;
	unsigned char *p;

	if (check(img) < 0)
		return -1;
	if (img->c == 1 || f == 1.0)
		return 0;
	npix = (size_t)img->h * img->w;
	p = img->data;
	for (i = 0; i < npix; i += m, p += 3 * m) {
		m = npix - i < 64 ? npix - i : 64;
		for (k = 0; k < m; k++) {
			unsigned char g = (unsigned char)luma(p + 3 * k);

			deg[3 * k] = deg[3 * k + 1] = deg[3 * k + 2] = g;
		}
		blend_row(p, deg, 3 * m, (float)f);
	}
	return 0;
}

/*
 * ImageEnhance.Contrast: blend with the constant int(mean(L) + 0.5), the
 * mean of the grey image as ImageStat computes it (exact sum / count).
 */
int
rv_contrast(struct rv_img *img, double f)
{
	size_t npix, i;
	uint64_t sum = 0;
	const unsigned char *p = img->data;

	if (check(img) < 0)
		return -1;
	npix = (size_t)img->h * img->w;
	if (f == 1.0 || npix == 0)
		return 0;
	if (img->c == 3) {
		for (i = 0; i < npix; i++, p += 3)
			sum += luma(p);
	} else {
		for (i = 0; i < npix; i++)
			sum += p[i];
	}
	blend_const(img, (int)((double)sum / (double)npix + 0.5), f);
	return 0;
}

/*
 * ImageEnhance.Sharpness: blend with ImageFilter.SMOOTH, Pillow's 3x3
 * filter [1 1 1; 1 5 1; 1 1 1] / 13 in float32 plus 0.5, truncated; that
 * equals (sum + 6) / 13 in integers, since sum / 13 + 0.5 always lies at
 * least 0.5/13 from an integer, far above float32's error.  Border pixels
 * and images under 3x3 are copied by the filter, so blend keeps them.  The
 * image is rewritten row by row from saved copies of the rows above.
 */
int
rv_sharpness(struct rv_img *img, struct rv_aug_ctx *ctx, double f)
{
	size_t wc, i;
	uint32_t y, c;
	uint16_t *col;
	unsigned char *prev, *cur, *sm, *t;

	if (check(img) < 0)
		return -1;
	if (f == 1.0 || img->h < 3 || img->w < 3)
		return 0;
	c = img->c;
	wc = (size_t)img->w * c;
	col = rv_aug_scratch(ctx, 5 * wc);
	prev = (unsigned char *)(col + wc);
	cur = prev + wc;
	sm = cur + wc;
	memcpy(prev, img->data, wc);
	for (y = 1; y + 1 < img->h; y++) {
		unsigned char *row = img->data + y * wc;
		const unsigned char *next = row + wc;

		memcpy(cur, row, wc);
		for (i = 0; i < wc; i++)
			col[i] = (uint16_t)(prev[i] + cur[i] + next[i]);
		memcpy(sm, cur, c);
		for (i = c; i < wc - c; i++)
			sm[i] = (unsigned char)((col[i - c] + col[i] +
			    col[i + c] + 4u * cur[i] + 6u) / 13u);
		memcpy(sm + wc - c, cur + wc - c, c);
		blend_row(row, sm, wc, (float)f);
		t = prev;
		prev = cur;
		cur = t;
	}
	return 0;
}

/* ImageOps.posterize: keep the top bits of every byte. */
int
rv_posterize(struct rv_img *img, int bits)
{
	unsigned char m;
	unsigned char *p = img->data;
	size_t n, i = 0;

	if (check(img) < 0)
		return -1;
	if (bits >= 8)
		return 0;
	m = bits <= 0 ? 0 : (unsigned char)(0xff00u >> bits);
	n = nbytes(img);
#if defined(__SSE2__)
	{
		__m128i vm = _mm_set1_epi8((char)m);

		for (; i + 16 <= n; i += 16)
			_mm_storeu_si128((__m128i *)(p + i), _mm_and_si128(
			    _mm_loadu_si128((const __m128i *)(p + i)), vm));
	}
#endif
	for (; i < n; i++)
		p[i] &= m;
	return 0;
}

/* ImageOps.solarize: x < threshold ? x : 255 - x (threshold may be real). */
int
rv_solarize(struct rv_img *img, double threshold)
{
	unsigned char *p = img->data;
	size_t n, i = 0;
	unsigned char t;

	if (check(img) < 0)
		return -1;
	if (threshold > 255.0)
		return 0;
	/* x >= threshold  <=>  x >= t, the smallest byte not below it */
	t = threshold <= 0.0 ? 0 : (unsigned char)ceil(threshold);
	n = nbytes(img);
#if defined(__SSE2__)
	{
		__m128i vt = _mm_set1_epi8((char)t);

		for (; i + 16 <= n; i += 16) {
			__m128i x = _mm_loadu_si128((const __m128i *)(p + i));
			__m128i ge = _mm_cmpeq_epi8(_mm_max_epu8(x, vt), x);

			_mm_storeu_si128((__m128i *)(p + i),
			    _mm_xor_si128(x, ge));
		}
	}
#endif
	for (; i < n; i++)
		if (p[i] >= t)
			p[i] = (unsigned char)(255 - p[i]);
	return 0;
}

/* ImageOps.invert. */
int
rv_invert(struct rv_img *img)
{
	unsigned char *p = img->data;
	size_t n, i = 0;

	if (check(img) < 0)
		return -1;
	n = nbytes(img);
#if defined(__SSE2__)
	{
		__m128i ones = _mm_set1_epi8((char)0xff);

		for (; i + 16 <= n; i += 16)
			_mm_storeu_si128((__m128i *)(p + i), _mm_xor_si128(
			    _mm_loadu_si128((const __m128i *)(p + i)), ones));
	}
#endif
	for (; i < n; i++)
		p[i] = (unsigned char)~p[i];
	return 0;
}

/* Per-channel histograms (hist is c x 256, zeroed here). */
static void
histogram(const struct rv_img *img, uint64_t *hist)
{
	size_t npix = (size_t)img->h * img->w, i;
	const unsigned char *p = img->data;

	memset(hist, 0, img->c * 256 * sizeof(*hist));
	if (img->c == 3) {
		uint64_t *h1 = hist + 256, *h2 = hist + 512;

		for (i = 0; i < npix; i++, p += 3) {
			hist[p[0]]++;
			h1[p[1]]++;
			h2[p[2]]++;
		}
	} else {
		uint32_t h[4][256];

		/* four tables, so equal neighbours do not serialise */
		memset(h, 0, sizeof(h));
		for (i = 0; i + 4 <= npix; i += 4) {
			h[0][p[i]]++;
			h[1][p[i + 1]]++;
			h[2][p[i + 2]]++;
			h[3][p[i + 3]]++;
		}
		for (; i < npix; i++)
			hist[p[i]]++;
		for (i = 0; i < 256; i++)
			hist[i] += (uint64_t)h[0][i] + h[1][i] + h[2][i] +
			    h[3][i];
	}
}

static void
apply_luts(struct rv_img *img, const unsigned char *lut)
{
	if (img->c == 3)
		apply_lut3(img->data, (size_t)img->h * img->w, lut);
	else
		apply_lut(img->data, nbytes(img), lut);
}

/*
 * ImageOps.autocontrast (cutoff 0), per channel: lo, hi = first and last
 * used values; if hi > lo, lut[i] = int(i * scale - lo * scale) clipped,
 * scale = 255.0 / (hi - lo), in doubles as Python does; else identity.
 */
int
rv_autocontrast(struct rv_img *img)
{
	uint64_t hist[3 * 256];
	unsigned char lut[3 * 256];
	uint32_t k;
	int i, lo, hi;

	if (check(img) < 0)
		return -1;
	histogram(img, hist);
	for (k = 0; k < img->c; k++) {
		const uint64_t *h = hist + 256 * k;
		unsigned char *l = lut + 256 * k;

		for (lo = 0; lo < 255 && h[lo] == 0; lo++)
			;
		for (hi = 255; hi > 0 && h[hi] == 0; hi--)
			;
		if (hi <= lo) {
			for (i = 0; i < 256; i++)
				l[i] = (unsigned char)i;
		} else {
			double scale = 255.0 / (hi - lo);
			double offset = -lo * scale;

			for (i = 0; i < 256; i++) {
				int v = (int)(i * scale + offset);

				l[i] = (unsigned char)(v < 0 ? 0 :
				    v > 255 ? 255 : v);
			}
		}
	}
	apply_luts(img, lut);
	return 0;
}

/*
 * ImageOps.equalize, per channel: with at most one used value, or
 * step = (total - count of the last used value) / 255 == 0, identity;
 * else lut[i] = n / step with n = step / 2 + (count below i).  Pillow
 * clips the table to 255 (a value of 256 occurs, at the last used value).
 */
int
rv_equalize(struct rv_img *img)
{
	uint64_t hist[3 * 256];
	unsigned char lut[3 * 256];
	uint32_t k;
	int i;

	if (check(img) < 0)
		return -1;
	histogram(img, hist);
	for (k = 0; k < img->c; k++) {
		const uint64_t *h = hist + 256 * k;
		unsigned char *l = lut + 256 * k;
		uint64_t total = 0, last = 0, step, n;
		int used = 0;

		for (i = 0; i < 256; i++) {
			if (h[i] != 0) {
				total += h[i];
				last = h[i];
				used++;
			}
		}
		step = used <= 1 ? 0 : (total - last) / 255;
		if (step == 0) {
			for (i = 0; i < 256; i++)
				l[i] = (unsigned char)i;
			continue;
		}
		n = step / 2;
		for (i = 0; i < 256; i++) {
			uint64_t v = n / step;

			l[i] = (unsigned char)(v > 255 ? 255 : v);
			n += h[i];
		}
	}
	apply_luts(img, lut);
	return 0;
}

/*
 * Pillow's rgb2hsv (Convert.c), with its mix of float and double kept:
 * rc, gc, bc and s are float quotients, the hue sum is double when it has
 * a constant term, and fmod(h / 6 + 1, 1) is a subtraction because the
 * argument lies in [5/6, 11/6).
 */
static inline void
rgb2hsv(const unsigned char *in, unsigned *uh, unsigned *us)
{
	unsigned r = in[0], g = in[1], b = in[2];
	unsigned maxc = r > g ? r : g, minc = r < g ? r : g;
	float cr, s, rc, gc, bc, h;
	double hh;
	int v;

	maxc = maxc > b ? maxc : b;
	minc = minc < b ? minc : b;
	if (minc == maxc) {
		*uh = 0;
		*us = 0;
		return;
	}
	cr = (float)(maxc - minc);
	s = cr / (float)maxc;
	rc = (float)(maxc - r) / cr;
	gc = (float)(maxc - g) / cr;
	bc = (float)(maxc - b) / cr;
	if (r == maxc)
		h = bc - gc;
	else if (g == maxc)
		h = (float)(2.0 + rc - bc);
	else
		h = (float)(4.0 + gc - rc);
	hh = h / 6.0 + 1.0;
	h = (float)(hh >= 1.0 ? hh - 1.0 : hh);
	v = (int)(h * 255.0);
	*uh = v < 0 ? 0 : v > 255 ? 255 : (unsigned)v;
	v = (int)(s * 255.0);
	*us = v < 0 ? 0 : v > 255 ? 255 : (unsigned)v;
}

/* Per-hue and per-saturation terms of Pillow's hsv2rgb. */
struct hsv_tab {
	float f[256];		/* h * 6 / 255 - i, as float */
	float fs[256];		/* s / 255, as float */
	unsigned char i[256];	/* floor(h * 6 / 255) % 6 */
};

static void
hsv_tab_init(struct hsv_tab *t)
{
	int k;

	for (k = 0; k < 256; k++) {
		double x = (float)k * 6.0 / 255.0;
		int i = (int)floor(x);

		t->f[k] = (float)(x - (float)i);
		t->fs[k] = (float)((float)k / 255.0);
		t->i[k] = (unsigned char)(i % 6);
	}
}

/*
 * Pillow's round() of a non-negative double below 256: floor(x + 0.5)
 * differs from it only within 2^-45 of a half, which the exhaustive check
 * against Pillow showed never happens here.
 */
static inline unsigned char
round8(double x)
{
	int v = (int)(x + 0.5);

	return (unsigned char)(v > 255 ? 255 : v);
}

/* Pillow's hsv2rgb (Convert.c), terms in the same precisions. */
static inline void
hsv2rgb(unsigned char *out, unsigned h, unsigned s, unsigned v,
    const struct hsv_tab *t)
{
	float f, fs;
	unsigned char p, q, u, vv = (unsigned char)v;

	if (s == 0) {
		out[0] = out[1] = out[2] = vv;
		return;
	}
	f = t->f[h];
	fs = t->fs[s];
	p = round8((float)v * (1.0 - fs));
	q = round8((float)v * (1.0 - fs * f));
	u = round8((float)v * (1.0 - fs * (1.0 - f)));
	switch (t->i[h]) {
	case 0:
		out[0] = vv; out[1] = u; out[2] = p;
		break;
	case 1:
		out[0] = q; out[1] = vv; out[2] = p;
		break;
	case 2:
		out[0] = p; out[1] = vv; out[2] = u;
		break;
	case 3:
		out[0] = p; out[1] = q; out[2] = vv;
		break;
	case 4:
		out[0] = u; out[1] = p; out[2] = vv;
		break;
	default:
		out[0] = vv; out[1] = p; out[2] = q;
		break;
	}
}

/*
 * torchvision F.adjust_hue on PIL: convert("HSV"), add
 * np.uint8(f * 255) to H with wrap-around (the cast truncates toward 0,
 * so -0.1 adds 231), convert back.  Grey images are returned as they are.
 * As in torchvision, f = 0 still makes the round trip, which is lossy
 * (it changes 82% of all colours, by up to 7); ColorJitter skips hue 0.
 */
int
rv_hue(struct rv_img *img, double f)
{
	struct hsv_tab t;
	size_t npix, i;
	unsigned char *p = img->data;
	unsigned shift;

	if (check(img) < 0)
		return -1;
	if (img->c == 1)
		return 0;
	shift = (unsigned)(int)(f * 255.0) & 0xff;
	hsv_tab_init(&t);
	npix = (size_t)img->h * img->w;
	for (i = 0; i < npix; i++, p += 3) {
		unsigned h, s, v;

		v = p[0] > p[1] ? p[0] : p[1];
		v = v > p[2] ? v : p[2];
		rgb2hsv(p, &h, &s);
		hsv2rgb(p, (h + shift) & 0xff, s, v, &t);
	}
	return 0;
}

/*
 * torchvision Grayscale(c): convert("L"), replicated to c channels.  The
 * luma products come from tables and four pixels are stored as three
 * words (little-endian): 1.7 times as fast as the plain loop.
 */
int
rv_grayscale(struct rv_img *img)
{
	uint32_t t[3][256];
	size_t npix, i = 0;
	unsigned char *p = img->data;
	uint32_t k;

	if (check(img) < 0)
		return -1;
	if (img->c == 1)
		return 0;
	for (k = 0; k < 256; k++) {
		t[0][k] = k * 19595u + 0x8000u;
		t[1][k] = k * 38470u;
		t[2][k] = k * 7471u;
	}
	npix = (size_t)img->h * img->w;
	for (; i + 4 <= npix; i += 4, p += 12) {
		uint32_t a = (t[0][p[0]] + t[1][p[1]] + t[2][p[2]]) >> 16;
		uint32_t b = (t[0][p[3]] + t[1][p[4]] + t[2][p[5]]) >> 16;
		uint32_t c = (t[0][p[6]] + t[1][p[7]] + t[2][p[8]]) >> 16;
		uint32_t d = (t[0][p[9]] + t[1][p[10]] + t[2][p[11]]) >> 16;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		uint32_t q0 = a * 0x10101u | b << 24;
		uint32_t q1 = b * 0x101u | c * 0x1010000u;
		uint32_t q2 = c | d * 0x1010100u;

		/* three stores: one 12-byte copy would defeat forwarding */
		memcpy(p, &q0, 4);
		memcpy(p + 4, &q1, 4);
		memcpy(p + 8, &q2, 4);
#else
		p[0] = p[1] = p[2] = (unsigned char)a;
		p[3] = p[4] = p[5] = (unsigned char)b;
		p[6] = p[7] = p[8] = (unsigned char)c;
		p[9] = p[10] = p[11] = (unsigned char)d;
#endif
	}
	for (; i < npix; i++, p += 3)
		p[0] = p[1] = p[2] = (unsigned char)luma(p);
	return 0;
}

/* ---- the ops ---- */

static int
op_brightness(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return rv_brightness(img, op->v[0][0]);
}

static int
op_color(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	return rv_saturation(img, op->v[0][0]);
}

static int
op_contrast(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return rv_contrast(img, op->v[0][0]);
}

static int
op_sharpness(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return rv_sharpness(img, ctx, op->v[0][0]);
}

static int
op_posterize(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return rv_posterize(img, (int)op->v[0][0]);
}

static int
op_solarize(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return rv_solarize(img, op->v[0][0]);
}

static int
op_autocontrast(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return rv_autocontrast(img);
}

static int
op_equalize(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return rv_equalize(img);
}

static int
op_invert(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	return rv_invert(img);
}

static int
op_hue(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	return rv_hue(img, op->v[0][0]);
}

static int
op_grayscale(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return rv_grayscale(img);
}

/*
 * ColorJitter: a random order of the four adjustments (a Fisher-Yates
 * shuffle, where torchvision calls torch.randperm(4)), then one factor per
 * non-zero argument, drawn in the order brightness, contrast, saturation,
 * hue: uniform in [max(0, 1 - b), 1 + b] (hue: [-h, h]).  The draws come
 * from rv's generator, so the factors are not torch's for any seed.
 */
static int
op_jitter(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	uint64_t order[4] = { 0, 1, 2, 3 };
	double fac[4];
	int k, r = 0;

	if (check(img) < 0)
		return -1;
	rv_rng_shuffle_u64(rng, order, 4);
	for (k = 0; k < 4; k++) {
		double a = op->v[k][0], lo = k == 3 ? -a : fmax(0.0, 1.0 - a);
		double hi = k == 3 ? a : 1.0 + a;

		fac[k] = a == 0.0 ? NAN : lo + (hi - lo) * rv_rng_uniform(rng);
	}
	for (k = 0; k < 4 && r == 0; k++) {
		double f = fac[order[k]];

		if (isnan(f))
			continue;
		switch (order[k]) {
		case 0:
			r = rv_brightness(img, f);
			break;
		case 1:
			r = rv_contrast(img, f);
			break;
		case 2:
			r = rv_saturation(img, f);
			break;
		default:
			r = rv_hue(img, f);
			break;
		}
	}
	return r;
}

/*
 * Fill h x w at (top, left) with value (bytes, truncated; the first
 * component for grey) or, if rnd, uniform random bytes, four per draw and
 * a new draw at each row.
 */
static void
erase_fill(struct rv_img *img, uint32_t top, uint32_t left, uint32_t h,
    uint32_t w, const double value[3], int rnd, struct rv_rng *rng)
{
	uint32_t c = img->c, y, x, bits = 0;
	size_t wc = (size_t)w * c, i;
	unsigned char v[3];

	for (x = 0; x < 3; x++)
		v[x] = (unsigned char)value[x];
	for (y = top; y < top + h; y++) {
		unsigned char *p = img->data + ((size_t)y * img->w + left) * c;

		if (rnd) {
			for (i = 0; i < wc; i++) {
				if (i % 4 == 0)
					bits = rv_rng_u32(rng);
				p[i] = (unsigned char)(bits >> 8 * (i % 4));
			}
		} else if (c == 1) {
			memset(p, v[0], wc);
		} else {
			for (i = 0; i < wc; i += 3)
				memcpy(p + i, v, 3);
		}
	}
}

/*
 * RandomErasing on the u8 image: up to 10 tries of area * U(scale) and
 * exp(U(log ratio)); h = round(sqrt(area * r)), w = round(sqrt(area / r))
 * (half to even, as Python), kept if h < H and w < W; then the top-left
 * corner uniformly, then the random bytes if any.  None fitting leaves the
 * image as it is.
 */
static int
op_erase(const struct rv_op *op, struct rv_img *img, struct rv_aug_ctx *ctx,
    struct rv_rng *rng)
{
	double area = (double)img->h * img->w;
	double lr0 = log(op->v[1][0]), lr1 = log(op->v[1][1]);
	int tries;

	if (check(img) < 0)
		return -1;
	for (tries = 0; tries < 10; tries++) {
		double a = area * (op->v[0][0] + (op->v[0][1] - op->v[0][0]) *
		    rv_rng_uniform(rng));
		double r = exp(lr0 + (lr1 - lr0) * rv_rng_uniform(rng));
		double hd = nearbyint(sqrt(a * r)), wd = nearbyint(sqrt(a / r));
		uint32_t h, w, top, left;

		if (!(hd < img->h && wd < img->w))
			continue;
		h = (uint32_t)hd;
		w = (uint32_t)wd;
		top = (uint32_t)rv_rng_below(rng, img->h - h + 1);
		left = (uint32_t)rv_rng_below(rng, img->w - w + 1);
		erase_fill(img, top, left, h, w, op->v[2], op->v[3][0] != 0,
		    rng);
		break;
	}
	return 0;
}

/* ---- the registry entries ---- */

#define ARG_END	{ NULL, 0, { 0 }, 0, 0, NULL, NULL }

#define FACTOR(help) \
	{ { "f", RV_ARG_FLOAT, { 1 }, 0, 100, NULL, help }, ARG_END }

static const struct rv_arg_def brightness_args[] =
    FACTOR("factor: 0 gives black, 1 the image, 2 twice as bright");
static const struct rv_arg_def color_args[] =
    FACTOR("factor: 0 gives grey, 1 the image, 2 twice as saturated");
static const struct rv_arg_def contrast_args[] =
    FACTOR("factor: 0 gives the mean grey, 1 the image");
static const struct rv_arg_def sharpness_args[] =
    FACTOR("factor: 0 gives the smoothed image, 1 the image, 2 sharper");

static const struct rv_arg_def posterize_args[] = {
	{ "bits", RV_ARG_INT, { 8 }, 0, 8, NULL,
	  "high bits kept of each channel (8: unchanged, 0: black)" },
	ARG_END
};

static const struct rv_arg_def solarize_args[] = {
	{ "threshold", RV_ARG_FLOAT, { 128 }, 0, 256, NULL,
	  "values at or above it are inverted (256: none)" },
	ARG_END
};

static const struct rv_arg_def hue_args[] = {
	{ "f", RV_ARG_FLOAT, { 0 }, -0.5, 0.5, NULL,
	  "hue shift in turns of the colour wheel (0.5: opposite hue)" },
	ARG_END
};

static const struct rv_arg_def no_args[] = { ARG_END };

static const struct rv_arg_def jitter_args[] = {
	{ "brightness", RV_ARG_FLOAT, { 0 }, 0, 100, NULL,
	  "brightness factor drawn from [max(0, 1-b), 1+b]; 0: not changed" },
	{ "contrast", RV_ARG_FLOAT, { 0 }, 0, 100, NULL,
	  "contrast factor drawn from [max(0, 1-c), 1+c]; 0: not changed" },
	{ "saturation", RV_ARG_FLOAT, { 0 }, 0, 100, NULL,
	  "saturation factor drawn from [max(0, 1-s), 1+s]; 0: not changed" },
	{ "hue", RV_ARG_FLOAT, { 0 }, 0, 0.5, NULL,
	  "hue shift drawn from [-h, h]; 0: not changed" },
	ARG_END
};

static const struct rv_arg_def erase_args[] = {
	{ "scale", RV_ARG_PAIR, { 0.02, 0.33 }, 0, 1, NULL,
	  "range of the erased fraction of the area" },
	{ "ratio", RV_ARG_PAIR, { 0.3, 3.3 }, 0.001, 1000, NULL,
	  "range of the rectangle's height / width, drawn log-uniformly" },
	{ "value", RV_ARG_FILL, { 0, 0, 0 }, 0, 255, NULL,
	  "value of the erased rectangle's pixels" },
	{ "random", RV_ARG_BOOL, { 0 }, 0, 1, NULL,
	  "fill with uniform random bytes instead of value" },
	ARG_END
};

#define OP(var, name, help, fn, args, p) \
	static const struct rv_op_def var = { name, help, "colour", fn, \
	    args, p }

OP(def_brightness, "brightness",
    "scale brightness (ImageEnhance.Brightness, F.adjust_brightness)",
    op_brightness, brightness_args, 0);
OP(def_color, "color",
    "scale saturation (ImageEnhance.Color, F.adjust_saturation)",
    op_color, color_args, 0);
OP(def_contrast, "contrast",
    "scale contrast about the mean grey (ImageEnhance.Contrast)",
    op_contrast, contrast_args, 0);
OP(def_sharpness, "sharpness",
    "sharpen or blur (ImageEnhance.Sharpness, F.adjust_sharpness)",
    op_sharpness, sharpness_args, 0);
OP(def_posterize, "posterize",
    "keep the high bits of each channel (F.posterize)",
    op_posterize, posterize_args, 0);
OP(def_solarize, "solarize",
    "invert the values at or above a threshold (F.solarize)",
    op_solarize, solarize_args, 0);
OP(def_autocontrast, "autocontrast",
    "stretch each channel to [0, 255] (F.autocontrast)",
    op_autocontrast, no_args, 0);
OP(def_equalize, "equalize",
    "equalize each channel's histogram (F.equalize, ImageOps.equalize)",
    op_equalize, no_args, 0);
OP(def_invert, "invert", "invert every value (F.invert)",
    op_invert, no_args, 0);
OP(def_hue, "hue",
    "rotate the hue through PIL's HSV (F.adjust_hue); grey: unchanged",
    op_hue, hue_args, 0);
OP(def_grayscale, "grayscale",
    "convert to grey, keeping the channel count (Grayscale)",
    op_grayscale, no_args, 0);
OP(def_jitter, "jitter",
    "random brightness, contrast, saturation and hue in random order "
    "(ColorJitter)", op_jitter, jitter_args, 0);
OP(def_erase, "erase",
    "erase a random rectangle (RandomErasing)", op_erase, erase_args, 0.5);

const struct rv_op_def *const rv_colour_ops[] = {
	&def_brightness,
	&def_color,
	&def_contrast,
	&def_sharpness,
	&def_posterize,
	&def_solarize,
	&def_autocontrast,
	&def_equalize,
	&def_invert,
	&def_hue,
	&def_grayscale,
	&def_jitter,
	&def_erase,
	NULL
};
