/*
 * Pixel buffers and the pixel steps every image goes through after
 * decoding: reduction to --max-side by an exact area average, grey -> RGB
 * by replication and RGB -> grey by Pillow's luma.  Buffers only grow, so a
 * worker touches fresh pages once (first touch costs ~10 us a page here).
 */
#include "codec/codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xmem.h"
#include "codec/codec_impl.h"

void *
rv_scratch_get(struct rv_scratch *s, size_t n)
{
	if (n > s->cap) {
		/* Nothing to keep: free first, so no copy and no peak of two. */
		free(s->p);
		s->p = xmalloc(n);
		s->cap = n;
	}
	return s->p;
}

void
rv_scratch_release(struct rv_scratch *s)
{
	free(s->p);
	s->p = NULL;
	s->cap = 0;
}

/* h * w * c, or SIZE_MAX on overflow (xrealloc then reports no memory). */
static size_t
img_bytes(uint32_t h, uint32_t w, uint32_t c)
{
	size_t n;

	if (__builtin_mul_overflow((size_t)h, (size_t)w, &n) ||
	    __builtin_mul_overflow(n, (size_t)c, &n))
		return SIZE_MAX;
	return n;
}

/* Grows only; the old pixels are kept (realloc), as callers may expect. */
void
rv_img_reserve(struct rv_img *im, uint32_t h, uint32_t w, uint32_t c)
{
	size_t n = img_bytes(h, w, c);

	if (n > im->cap) {
		im->data = xrealloc(im->data, n);
		im->cap = n;
	}
	im->h = h;
	im->w = w;
	im->c = c;
}

void
rv_img_release(struct rv_img *im)
{
	free(im->data);
	memset(im, 0, sizeof(*im));
}

void
rv_fit_max_side(uint32_t h, uint32_t w, uint32_t max_side, uint32_t *oh,
    uint32_t *ow)
{
	uint64_t lo, hi, s;

	*oh = h;
	*ow = w;
	if (max_side == 0 || (h <= max_side && w <= max_side))
		return;
	hi = h > w ? h : w;
	lo = h > w ? w : h;
	/* The shorter side scaled by max_side / hi, rounded half up. */
	s = (2 * lo * max_side + hi) / (2 * hi);
	if (s == 0)
		s = 1;
	if (h > w) {
		*oh = max_side;
		*ow = (uint32_t)s;
	} else {
		*ow = max_side;
		*oh = (uint32_t)s;
	}
}

/*
 * ITU-R 601 luma with the weights 299/587/114 in 16-bit fixed point and
 * rounding: bit for bit Pillow's convert("L").  (299R+587G+114B+500)/1000
 * differs from Pillow by one for 0.05% of colours, so Pillow's form is
 * used.
 */
void
rv_rgb_to_grey(unsigned char *dst, const unsigned char *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++, src += 3)
		dst[i] = (unsigned char)((src[0] * 19595u + src[1] * 38470u +
		    src[2] * 7471u + 0x8000u) >> 16);
}

/* Grey -> RGB for n pixels; runs backwards so dst may equal src. */
static void
grey_to_rgb(unsigned char *dst, const unsigned char *src, size_t n)
{
	while (n-- > 0) {
		unsigned char v = src[n];

		dst[3 * n] = v;
		dst[3 * n + 1] = v;
		dst[3 * n + 2] = v;
	}
}

/* ---- area-average resize ---- */

/*
 * Exact box filter.  Along an axis of s source pixels to d output pixels,
 * output x covers [x*s, (x+1)*s) and source i covers [i*d, (i+1)*d) on a
 * common integer grid, so every overlap is an integer; divided by
 * gcd(s, d), an output's weights sum to s / gcd.  A pixel is the weighted
 * sum over both axes divided by the product of the two sums, rounded half
 * up: the true area average, with no floating point.
 */
struct axis {
	uint32_t *start;	/* first source pixel of each output */
	uint32_t *cnt;		/* source pixels it overlaps */
	uint32_t *wt;		/* their weights, all outputs in turn */
	uint64_t sum;		/* weights of one output add up to this */
};

static uint64_t
gcd64(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static void
axis_weights(struct axis *ax, uint32_t s, uint32_t d)
{
	uint64_t g = gcd64(s, d);
	size_t k = 0;
	uint32_t x, i;

	for (x = 0; x < d; x++) {
		uint64_t lo = (uint64_t)x * s, hi = lo + s;
		uint32_t i0 = (uint32_t)(lo / d), i1 = (uint32_t)((hi - 1) / d);

		ax->start[x] = i0;
		ax->cnt[x] = i1 - i0 + 1;
		for (i = i0; i <= i1; i++) {
			uint64_t a = (uint64_t)i * d, b = a + d;

			if (a < lo)
				a = lo;
			if (b > hi)
				b = hi;
			ax->wt[k++] = (uint32_t)((b - a) / g);
		}
	}
	ax->sum = s / g;
}

/*
 * Rounded division by a constant D as a multiply and a shift
 * (Granlund and Montgomery, 1994, theorem 4.2): with l = ceil(log2 D),
 * N = 8 + l bits cover every numerator (< 256 D), and m = 2^(N+l)/D + 1
 * makes floor(u * m / 2^(N+l)) = floor(u / D) exactly.  u * m stays under
 * 2^63 while l <= 23; larger D divides.
 */
struct divider {
	uint64_t d, half, m;
	unsigned shift;
};

static void
divider_init(struct divider *dv, uint64_t d)
{
	unsigned l = 0;

	while (l < 64 && ((uint64_t)1 << l) < d)
		l++;
	dv->d = d;
	dv->half = d / 2;
	dv->m = 0;
	if (l <= 23) {
		dv->shift = 8 + 2 * l;
		dv->m = ((uint64_t)1 << dv->shift) / d + 1;
	}
}

static inline unsigned char
divide(const struct divider *dv, uint64_t v)
{
	v += dv->half;
	if (dv->m != 0)
		return (unsigned char)((v * dv->m) >> dv->shift);
	return (unsigned char)(v / dv->d);
}

/*
 * The vertical step: rows 0..n-1 of src (stride apart) weighted by wt into
 * v, len values.  Sums stay under 255 * (h / gcd) < 2^32 (checked by the
 * caller).  The work is done in blocks of a fixed size, a loop that GCC
 * vectorises at -O2 (restrict: the u8 rows cannot alias v); the tail is
 * plain.
 */
#define VBLOCK	32

static void
vpass(const unsigned char *restrict src, size_t stride, uint32_t n,
    const uint32_t *restrict wt, size_t len, uint32_t *restrict v)
{
	size_t k;
	uint32_t j, t;

	for (j = 0; j < n; j++) {
		const unsigned char *restrict row = src + j * stride;
		uint32_t w = wt[j];

		if (j == 0) {
			for (k = 0; k + VBLOCK <= len; k += VBLOCK)
				for (t = 0; t < VBLOCK; t++)
					v[k + t] = w * row[k + t];
			for (; k < len; k++)
				v[k] = w * row[k];
		} else {
			for (k = 0; k + VBLOCK <= len; k += VBLOCK)
				for (t = 0; t < VBLOCK; t++)
					v[k + t] += w * row[k + t];
			for (; k < len; k++)
				v[k] += w * row[k];
		}
	}
}

/* Only for sources over 16 million rows: the same in 64 bits. */
static void
vpass_wide(const unsigned char *src, size_t stride, uint32_t n,
    const uint32_t *wt, size_t len, uint64_t *v)
{
	size_t k;
	uint32_t j;

	memset(v, 0, len * sizeof(*v));
	for (j = 0; j < n; j++)
		for (k = 0; k < len; k++)
			v[k] += (uint64_t)wt[j] * src[j * stride + k];
}

/*
 * The horizontal step: one row of vertical sums (v, w * c) to one output
 * row, each sum divided by the weight total and rounded.  The one- and
 * three-channel cases keep their sums in registers.
 */
#define HPASS(T) \
static void \
hpass_##T(const T *v, const struct axis *ax, uint32_t dw, uint32_t c, \
    const struct divider *dv, unsigned char *dst) \
{ \
	const uint32_t *wt = ax->wt; \
	uint32_t x, j, k, n; \
 \
	if (c == 1) { \
		for (x = 0; x < dw; x++) { \
			const T *p = v + ax->start[x]; \
			uint64_t s0 = 0; \
 \
			for (n = ax->cnt[x]; n > 0; n--) \
				s0 += (uint64_t)*wt++ * *p++; \
			*dst++ = divide(dv, s0); \
		} \
	} else if (c == 3) { \
		for (x = 0; x < dw; x++) { \
			const T *p = v + (size_t)ax->start[x] * 3; \
			uint64_t s0 = 0, s1 = 0, s2 = 0; \
 \
			for (n = ax->cnt[x]; n > 0; n--, p += 3) { \
				uint64_t w = *wt++; \
 \
				s0 += w * p[0]; \
				s1 += w * p[1]; \
				s2 += w * p[2]; \
			} \
			dst[0] = divide(dv, s0); \
			dst[1] = divide(dv, s1); \
			dst[2] = divide(dv, s2); \
			dst += 3; \
		} \
	} else { \
		for (x = 0; x < dw; x++) { \
			for (k = 0; k < c; k++) { \
				const T *p = v + (size_t)ax->start[x] * c + k; \
				uint64_t s0 = 0; \
 \
				for (j = 0; j < ax->cnt[x]; j++, p += c) \
					s0 += (uint64_t)wt[j] * *p; \
				*dst++ = divide(dv, s0); \
			} \
			wt += ax->cnt[x]; \
		} \
	} \
}

HPASS(uint32_t)
HPASS(uint64_t)

/*
 * Separable, vertical first: each output row sums its source rows into
 * one row of vertical sums (vectorised), then sums those horizontally
 * (scalar, on output rows only, so the scalar work is the smaller part).
 * The sums, at most 255 * w * h, are exact in 64 bits for any image that
 * fits in memory.
 */
void
rv_resize_area(const unsigned char *src, uint32_t h, uint32_t w, uint32_t c,
    unsigned char *dst, uint32_t dh, uint32_t dw, struct rv_scratch *rs)
{
	struct axis ax, ay;
	struct divider dv;
	size_t len = (size_t)w * c, stride = len, need;
	const uint32_t *ywt;
	void *v;
	uint32_t y;
	int wide;
	unsigned char *p;

	if (h == 0 || w == 0 || dh == 0 || dw == 0 || c == 0)
		return;
	wide = (uint64_t)255 * (h / gcd64(h, dh)) > UINT32_MAX;
	need = len * (wide ? sizeof(uint64_t) : sizeof(uint32_t)) +
	    (3 * (size_t)dw + w + 3 * (size_t)dh + h) * sizeof(uint32_t);
	p = rv_scratch_get(rs, need);
	v = p;
	ax.start = (uint32_t *)(p + len * (wide ? sizeof(uint64_t) :
	    sizeof(uint32_t)));
	ax.cnt = ax.start + dw;
	ax.wt = ax.cnt + dw;
	ay.start = ax.wt + w + dw;
	ay.cnt = ay.start + dh;
	ay.wt = ay.cnt + dh;
	axis_weights(&ax, w, dw);
	axis_weights(&ay, h, dh);
	divider_init(&dv, ax.sum * ay.sum);

	ywt = ay.wt;
	for (y = 0; y < dh; y++) {
		const unsigned char *rows = src + ay.start[y] * stride;

		if (wide) {
			vpass_wide(rows, stride, ay.cnt[y], ywt, len, v);
			hpass_uint64_t(v, &ax, dw, c, &dv, dst);
		} else {
			vpass(rows, stride, ay.cnt[y], ywt, len, v);
			hpass_uint32_t(v, &ax, dw, c, &dv, dst);
		}
		ywt += ay.cnt[y];
		dst += (size_t)dw * c;
	}
}

void
rv_img_resize_area(const unsigned char *src, uint32_t h, uint32_t w,
    uint32_t c, unsigned char *dst, uint32_t dh, uint32_t dw)
{
	struct rv_scratch rs = { NULL, 0 };

	rv_resize_area(src, h, w, c, dst, dh, dw, &rs);
	rv_scratch_release(&rs);
}

/*
 * Resizing before converting keeps both orders to one rule and needs no
 * second buffer: grey is resized at one channel, then replicated in place;
 * RGB is resized, then reduced to luma in place (forwards, so safe).
 */
void
rv_img_finish(const unsigned char *src, uint32_t h, uint32_t w, uint32_t cin,
    uint32_t cout, uint32_t dh, uint32_t dw, struct rv_img *out,
    struct rv_scratch *rs)
{
	int resize = dh != h || dw != w;
	size_t n = (size_t)dh * dw;

	if (cin == cout) {
		rv_img_reserve(out, dh, dw, cout);
		if (resize)
			rv_resize_area(src, h, w, cin, out->data, dh, dw, rs);
		else
			memcpy(out->data, src, n * cin);
	} else if (cin == 1) {
		rv_img_reserve(out, dh, dw, 3);
		if (resize) {
			rv_resize_area(src, h, w, 1, out->data, dh, dw, rs);
			grey_to_rgb(out->data, out->data, n);
		} else {
			grey_to_rgb(out->data, src, n);
		}
	} else {
		rv_img_reserve(out, dh, dw, resize ? 3 : 1);
		if (resize) {
			rv_resize_area(src, h, w, 3, out->data, dh, dw, rs);
			rv_rgb_to_grey(out->data, out->data, n);
		} else {
			rv_rgb_to_grey(out->data, src, n);
		}
		out->c = 1;
	}
}

int
rv_img_from_pixels(const unsigned char *px, uint32_t h, uint32_t w,
    uint32_t cin, const struct rv_decode_opts *o, struct rv_img *out)
{
	struct rv_scratch rs = { NULL, 0 };
	uint32_t dh, dw;

	if (cin != 1 && cin != 3)
		return rv_seterr("unsupported input channel count %u", cin);
	if (o->channels != 1 && o->channels != 3)
		return rv_seterr("unsupported output channel count %u",
		    o->channels);
	if (h == 0 || w == 0)
		return rv_seterr("empty image (%ux%u)", w, h);
	rv_fit_max_side(h, w, o->max_side, &dh, &dw);
	rv_img_finish(px, h, w, cin, o->channels, dh, dw, out, &rs);
	rv_scratch_release(&rs);
	return 0;
}
