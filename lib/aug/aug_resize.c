/*
 * Resizing exactly as PIL's Image.resize does it (torchvision's reference
 * on PIL images): separable convolution, horizontal pass into a u8 buffer
 * then vertical, the filter support widened by the shrink factor
 * (antialiasing), integer taps with 22 fractional bits, round-half-up;
 * nearest goes through PIL's affine scaling.  Same integer sums, so the
 * same bytes, computed 16 bytes at a time with SSE2, 32 with AVX2 where
 * the CPU has it (taps split in 16-bit halves for pmaddwd; plain C
 * elsewhere, same results).  Tables, rows
 * between the passes and transposed columns live in ctx scratch.
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

/* PIL's PRECISION_BITS: 8 bits of result, 2 of headroom in an int32. */
#define PREC	22
#define HALF	(1 << (PREC - 1))

struct filter {
	double (*fn)(double);
	double support;
};

static double
bilinear_fn(double x)
{
	if (x < 0.0)
		x = -x;
	if (x < 1.0)
		return 1.0 - x;
	return 0.0;
}

/* Keys' cubic with a = -0.5, as PIL's Resample.c. */
static double
bicubic_fn(double x)
{
	const double a = -0.5;

	if (x < 0.0)
		x = -x;
	if (x < 1.0)
		return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
	if (x < 2.0)
		return (((x - 5) * x + 8) * x - 4) * a;
	return 0.0;
}

static const struct filter filt_bilinear = { bilinear_fn, 1.0 };
static const struct filter filt_bicubic = { bicubic_fn, 2.0 };

static inline unsigned char
clip8(int32_t v)
{
	v >>= PREC;
	return v < 0 ? 0 : v > 255 ? 255 : (unsigned char)v;
}

/* PIL's COORD(): truncation, but every negative value maps to -1. */
static inline int
coord(double v)
{
	return v < 0.0 ? -1 : (int)v;
}

/* Coefficients per output index: at most ksize of them. */
/* One axis's input: in pixels, of which the box [lo, hi) is resampled
 * (PIL's box argument; lo = 0, hi = in for a plain resize). */
struct span {
	uint32_t in;
	double lo, hi;
};

static int
axis_ksize(const struct span *s, uint32_t out, const struct filter *f,
    int antialias)
{
	double fscale = (s->hi - s->lo) / out;

	if (fscale < 1.0 || !antialias)
		fscale = 1.0;
	return (int)ceil(f->support * fscale) * 2 + 1;
}

/* Round n up to a multiple of 64, so carved scratch stays aligned. */
static size_t
align64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* The input span of output i: PIL's xmin and tap count. */
static void
axis_span(uint32_t in, double lo0, double scale, double support, uint32_t i,
    int *xmin, int *n)
{
	double center = lo0 + (i + 0.5) * scale;
	int lo, hi;

	lo = (int)(center - support + 0.5);
	if (lo < 0)
		lo = 0;
	hi = (int)(center + support + 0.5);
	if (hi > (int)in)
		hi = (int)in;
	*xmin = lo;
	*n = hi - lo;
}

/*
 * PIL's precompute_coeffs() then normalize_coeffs_8bpc(), for the box
 * [s->lo, s->hi) of s->in pixels: b[2 * i] is the first input index of output i, b[2 * i + 1]
 * the number of taps, kk[i * ksize ...] the taps.  The weights are
 * recomputed rather than stored for the normalisation: the same function
 * of the same doubles gives the same values.
 */
static void
axis_coeffs(const struct span *s, uint32_t out, const struct filter *f,
    int antialias, int ksize, int *b, int32_t *kk)
{
	double scale, fscale, support, ss;
	uint32_t i;

	fscale = scale = (s->hi - s->lo) / out;
	if (fscale < 1.0 || !antialias)
		fscale = 1.0;
	support = f->support * fscale;
	ss = 1.0 / fscale;
	for (i = 0; i < out; i++) {
		double center = s->lo + (i + 0.5) * scale, ww = 0.0;
		int32_t *k = kk + (size_t)i * ksize;
		int xmin, n, x;

		axis_span(s->in, s->lo, scale, support, i, &xmin, &n);
		for (x = 0; x < n; x++)
			ww += f->fn(((double)(x + xmin) - center + 0.5) * ss);
		for (x = 0; x < n; x++) {
			double w = f->fn(((double)(x + xmin) - center + 0.5) *
			    ss);

			if (ww != 0.0)
				w /= ww;
			k[x] = w < 0 ? (int32_t)(-0.5 + w * (1 << PREC)) :
			    (int32_t)(0.5 + w * (1 << PREC));
		}
		for (; x < ksize; x++)
			k[x] = 0;
		b[2 * i] = xmin;
		b[2 * i + 1] = n;
	}
}

/* One axis of a resize: PIL's coefficient table, and its pair form. */
struct axis {
	uint32_t in, out;
	int ksize;	/* taps per output, zero-padded */
	int npair;	/* (ksize + 1) / 2 */
	int *b;		/* b[2 i]: first input index; b[2 i + 1]: taps */
	int32_t *k;	/* out * ksize taps, 22 fractional bits */
	int32_t *plo;	/* out * npair: two taps' low 11 bits, as 16-bit */
	int32_t *phi;	/* ...and their high bits (pmaddwd operands) */
};

/*
 * The SSE2 passes multiply 16-bit pixels by 16-bit halves of the taps
 * (k = hi * 2048 + lo) with pmaddwd and recombine: integer arithmetic, so
 * the sums are PIL's exactly.  The low halves' sum is bounded by the tap
 * count, hence the limit.
 */
#define SIMD_MAXTAPS	4096

static size_t
axis_bytes(uint32_t out, int ksize)
{
	size_t np = (size_t)(ksize + 1) / 2;

	return align64((size_t)out * 2 * sizeof(int)) +
	    align64((size_t)out * ksize * sizeof(int32_t)) +
	    2 * align64((size_t)out * np * sizeof(int32_t));
}

/*
 * axis_bytes() of an axis, as a double so that nothing wraps on the way:
 * the tables grow with the longer of the axis's input and output (about
 * 50 bytes an output pixel enlarging, 24 to 48 an input pixel
 * shrinking), so a thin image's would outgrow its pixels.
 */
static double
axis_cost(const struct span *s, uint32_t out, const struct filter *f,
    int antialias)
{
	double fscale = (s->hi - s->lo) / out, k;

	if (fscale < 1.0 || !antialias)
		fscale = 1.0;
	k = ceil(f->support * fscale) * 2 + 1;
	return 64.0 * 5 + (double)out * (2 * sizeof(int) + k *
	    sizeof(int32_t) + 2 * floor((k + 1) / 2) * sizeof(int32_t));
}

/* Lay the tables out in p (axis_bytes() of them) and fill them. */
static void
axis_init(struct axis *ax, unsigned char *p, const struct span *s,
    uint32_t out, const struct filter *f, int antialias)
{
	size_t np;
	uint32_t i;
	int t;

	ax->in = s->in;
	ax->out = out;
	ax->ksize = axis_ksize(s, out, f, antialias);
	ax->npair = (ax->ksize + 1) / 2;
	np = (size_t)ax->npair;
	ax->b = (int *)p;
	p += align64((size_t)out * 2 * sizeof(int));
	ax->k = (int32_t *)p;
	p += align64((size_t)out * ax->ksize * sizeof(int32_t));
	ax->plo = (int32_t *)p;
	p += align64((size_t)out * np * sizeof(int32_t));
	ax->phi = (int32_t *)p;
	axis_coeffs(s, out, f, antialias, ax->ksize, ax->b, ax->k);
	for (i = 0; i < out; i++) {
		const int32_t *k = ax->k + (size_t)i * ax->ksize;

		for (t = 0; t < ax->npair; t++) {
			int32_t k0 = k[2 * t];
			int32_t k1 = 2 * t + 1 < ax->ksize ? k[2 * t + 1] : 0;
			int32_t l0 = k0 & 2047, l1 = k1 & 2047;
			int32_t h0 = (k0 - l0) / 2048, h1 = (k1 - l1) / 2048;

			ax->plo[i * np + t] = (int32_t)((uint32_t)l0 |
			    (uint32_t)l1 << 16);
			ax->phi[i * np + t] = (int32_t)((uint16_t)h0 |
			    (uint32_t)(uint16_t)h1 << 16);
		}
	}
}

/* Horizontal pass, plain C: rows rows of src into dst. */
static void
hpass_c(const unsigned char *src, size_t sstride, uint32_t rows, uint32_t c,
    unsigned char *dst, size_t dstride, const struct axis *ax)
{
	uint32_t r, x, ow = ax->out;
	const int *b = ax->b;
	int t, ksize = ax->ksize;

	for (r = 0; r < rows; r++) {
		const unsigned char *s = src + r * sstride;
		unsigned char *d = dst + r * dstride;

		if (c == 3) {
			for (x = 0; x < ow; x++, d += 3) {
				const unsigned char *p = s +
				    (size_t)b[2 * x] * 3;
				const int32_t *k = ax->k + (size_t)x * ksize;
				int n = b[2 * x + 1];
				int32_t s0 = HALF, s1 = HALF, s2 = HALF;

				for (t = 0; t < n; t++, p += 3) {
					s0 += p[0] * k[t];
					s1 += p[1] * k[t];
					s2 += p[2] * k[t];
				}
				d[0] = clip8(s0);
				d[1] = clip8(s1);
				d[2] = clip8(s2);
			}
		} else {
			for (x = 0; x < ow; x++) {
				const int32_t *k = ax->k + (size_t)x * ksize;
				int n = b[2 * x + 1];
				uint32_t ch;

				for (ch = 0; ch < c; ch++) {
					const unsigned char *p = s +
					    (size_t)b[2 * x] * c + ch;
					int32_t s0 = HALF;

					for (t = 0; t < n; t++, p += c)
						s0 += *p * k[t];
					*d++ = clip8(s0);
				}
			}
		}
	}
}

/* Vertical pass, plain C, for output rows [y0, y1) and bytes [i0, n). */
static void
vpass_c(const unsigned char *src, size_t sstride, size_t i0, size_t nbytes,
    unsigned char *dst, size_t dstride, const struct axis *ax)
{
	uint32_t y;

	for (y = 0; y < ax->out; y++) {
		const unsigned char *s0 = src + (size_t)ax->b[2 * y] * sstride;
		const int32_t *k = ax->k + (size_t)y * ax->ksize;
		unsigned char *d = dst + y * dstride;
		int n = ax->b[2 * y + 1], t;
		size_t i;

		for (i = i0; i < nbytes; i++) {
			const unsigned char *s = s0 + i;
			int32_t acc = HALF;

			for (t = 0; t < n; t++, s += sstride)
				acc += *s * k[t];
			d[i] = clip8(acc);
		}
	}
}

#ifdef HAVE_SSE2
/*
 * 16 bytes of output: sum over the n taps of p[t * stride + j] * k_t,
 * rounded and clipped as PIL does.  Taps go two at a time: the bytes of
 * both rows interleaved, widened to 16 bits, pmaddwd with both halves.
 */
static inline __m128i
blend16(const unsigned char *p, size_t stride, int n, const int32_t *plo,
    const int32_t *phi)
{
	const __m128i z = _mm_setzero_si128();
	__m128i l0 = z, l1 = z, l2 = z, l3 = z, h0 = z, h1 = z, h2 = z, h3 = z;
	__m128i half = _mm_set1_epi32(HALF);
	int t;

	for (t = 0; t < n; t += 2, p += 2 * stride) {
		__m128i a = _mm_loadu_si128((const __m128i *)p);
		__m128i b = t + 1 < n ?
		    _mm_loadu_si128((const __m128i *)(p + stride)) : a;
		__m128i kl = _mm_set1_epi32(plo[t / 2]);
		__m128i kh = _mm_set1_epi32(phi[t / 2]);
		__m128i ab = _mm_unpacklo_epi8(a, b), w;

		w = _mm_unpacklo_epi8(ab, z);
		l0 = _mm_add_epi32(l0, _mm_madd_epi16(w, kl));
		h0 = _mm_add_epi32(h0, _mm_madd_epi16(w, kh));
		w = _mm_unpackhi_epi8(ab, z);
		l1 = _mm_add_epi32(l1, _mm_madd_epi16(w, kl));
		h1 = _mm_add_epi32(h1, _mm_madd_epi16(w, kh));
		ab = _mm_unpackhi_epi8(a, b);
		w = _mm_unpacklo_epi8(ab, z);
		l2 = _mm_add_epi32(l2, _mm_madd_epi16(w, kl));
		h2 = _mm_add_epi32(h2, _mm_madd_epi16(w, kh));
		w = _mm_unpackhi_epi8(ab, z);
		l3 = _mm_add_epi32(l3, _mm_madd_epi16(w, kl));
		h3 = _mm_add_epi32(h3, _mm_madd_epi16(w, kh));
	}
	l0 = _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(h0, 11), l0), half);
	l1 = _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(h1, 11), l1), half);
	l2 = _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(h2, 11), l2), half);
	l3 = _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(h3, 11), l3), half);
	l0 = _mm_packs_epi32(_mm_srai_epi32(l0, PREC),
	    _mm_srai_epi32(l1, PREC));
	l2 = _mm_packs_epi32(_mm_srai_epi32(l2, PREC),
	    _mm_srai_epi32(l3, PREC));
	return _mm_packus_epi16(l0, l2);
}

#if defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2 1

/*
 * 32 bytes of output, blend16 on each 16-byte half at once: every AVX2
 * unpack and pack works within a 128-bit lane, so each lane computes
 * exactly what blend16 computes on its 16 bytes.
 */
__attribute__((target("avx2"))) static inline __m256i
blend32(const unsigned char *p, size_t stride, int n, const int32_t *plo,
    const int32_t *phi)
{
	const __m256i z = _mm256_setzero_si256();
	__m256i l0 = z, l1 = z, l2 = z, l3 = z, h0 = z, h1 = z, h2 = z, h3 = z;
	__m256i half = _mm256_set1_epi32(HALF);
	int t;

	for (t = 0; t < n; t += 2, p += 2 * stride) {
		__m256i a = _mm256_loadu_si256((const __m256i *)p);
		__m256i b = t + 1 < n ?
		    _mm256_loadu_si256((const __m256i *)(p + stride)) : a;
		__m256i kl = _mm256_set1_epi32(plo[t / 2]);
		__m256i kh = _mm256_set1_epi32(phi[t / 2]);
		__m256i ab = _mm256_unpacklo_epi8(a, b), w;

		w = _mm256_unpacklo_epi8(ab, z);
		l0 = _mm256_add_epi32(l0, _mm256_madd_epi16(w, kl));
		h0 = _mm256_add_epi32(h0, _mm256_madd_epi16(w, kh));
		w = _mm256_unpackhi_epi8(ab, z);
		l1 = _mm256_add_epi32(l1, _mm256_madd_epi16(w, kl));
		h1 = _mm256_add_epi32(h1, _mm256_madd_epi16(w, kh));
		ab = _mm256_unpackhi_epi8(a, b);
		w = _mm256_unpacklo_epi8(ab, z);
		l2 = _mm256_add_epi32(l2, _mm256_madd_epi16(w, kl));
		h2 = _mm256_add_epi32(h2, _mm256_madd_epi16(w, kh));
		w = _mm256_unpackhi_epi8(ab, z);
		l3 = _mm256_add_epi32(l3, _mm256_madd_epi16(w, kl));
		h3 = _mm256_add_epi32(h3, _mm256_madd_epi16(w, kh));
	}
	l0 = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h0, 11), l0),
	    half);
	l1 = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h1, 11), l1),
	    half);
	l2 = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h2, 11), l2),
	    half);
	l3 = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h3, 11), l3),
	    half);
	l0 = _mm256_packs_epi32(_mm256_srai_epi32(l0, PREC),
	    _mm256_srai_epi32(l1, PREC));
	l2 = _mm256_packs_epi32(_mm256_srai_epi32(l2, PREC),
	    _mm256_srai_epi32(l3, PREC));
	return _mm256_packus_epi16(l0, l2);
}

/* Vertical pass, output rows of 32 bytes at a time, up to nb32. */
__attribute__((target("avx2"))) static void
vpass_avx2(const unsigned char *src, size_t sstride, size_t nb32,
    unsigned char *dst, size_t dstride, const struct axis *ax)
{
	size_t np = (size_t)ax->npair, i;
	uint32_t y;

	for (y = 0; y < ax->out; y++) {
		const unsigned char *s0 = src + (size_t)ax->b[2 * y] * sstride;
		unsigned char *d = dst + y * dstride;
		int n = ax->b[2 * y + 1];

		for (i = 0; i < nb32; i += 32)
			_mm256_storeu_si256((__m256i *)(d + i), blend32(s0 + i,
			    sstride, n, ax->plo + y * np, ax->phi + y * np));
	}
}

/* One output pixel of 16 transposed RGB rows: 48 bytes into out. */
__attribute__((target("avx2"))) static void
hcol3_avx2(const unsigned char *p, size_t L, int n, const int32_t *lo,
    const int32_t *hi, unsigned char *out)
{
	_mm256_storeu_si256((__m256i *)out, blend32(p, L, n, lo, hi));
	_mm_storeu_si128((__m128i *)(out + 32), blend16(p + 32, L, n, lo, hi));
}
#endif

/* Vertical pass: 32 or 16 bytes at a time, the tail in plain C. */
static void
vpass_sse2(const unsigned char *src, size_t sstride, size_t nbytes,
    unsigned char *dst, size_t dstride, const struct axis *ax)
{
	size_t np = (size_t)ax->npair, nb = nbytes & ~(size_t)15, i0 = 0, i;
	uint32_t y;

#ifdef HAVE_AVX2
	if (__builtin_cpu_supports("avx2")) {
		i0 = nbytes & ~(size_t)31;
		vpass_avx2(src, sstride, i0, dst, dstride, ax);
	}
#endif
	for (y = 0; y < ax->out && i0 < nb; y++) {
		const unsigned char *s0 = src + (size_t)ax->b[2 * y] * sstride;
		unsigned char *d = dst + y * dstride;
		int n = ax->b[2 * y + 1];

		for (i = i0; i < nb; i += 16)
			_mm_storeu_si128((__m128i *)(d + i), blend16(s0 + i,
			    sstride, n, ax->plo + y * np, ax->phi + y * np));
	}
	if (nb < nbytes)
		vpass_c(src, sstride, nb, nbytes, dst, dstride, ax);
}

/*
 * Horizontal pass as a vertical one: 16 rows at a time are transposed
 * into columns of 16 pixels (64 bytes apart for RGB, the slack letting
 * the copy move 4 bytes a pixel), blended with blend16 as rows are, and
 * scattered back.  Rows past the last group of 16 go through plain C.
 */
static void
hpass_sse2(const unsigned char *src, size_t sstride, uint32_t rows,
    uint32_t c, unsigned char *dst, size_t dstride, const struct axis *ax,
    unsigned char *col)
{
	size_t L = c == 3 ? 64 : 16, np = (size_t)ax->npair;
	uint32_t r0, r, x, win = ax->in;
	unsigned char out[48];
#ifdef HAVE_AVX2
	int avx2 = __builtin_cpu_supports("avx2");
#endif

	for (r0 = 0; r0 + 16 <= rows; r0 += 16) {
		for (r = 0; r < 16; r++) {
			const unsigned char *s = src + (r0 + r) * sstride;
			unsigned char *d = col + r * c;

			if (c == 3) {
				for (x = 0; x + 1 < win; x++, s += 3, d += 64)
					memcpy(d, s, 4);
				memcpy(d, s, 3);
			} else {
				for (x = 0; x < win; x++)
					d[x * 16] = s[x];
			}
		}
		for (x = 0; x < ax->out; x++) {
			const unsigned char *p = col + (size_t)ax->b[2 * x] * L;
			const int32_t *lo = ax->plo + x * np;
			const int32_t *hi = ax->phi + x * np;
			int n = ax->b[2 * x + 1];
			unsigned char *d = dst + r0 * dstride;

			if (c == 3) {
#ifdef HAVE_AVX2
				if (avx2)
					hcol3_avx2(p, L, n, lo, hi, out);
				else
#endif
				{
					_mm_storeu_si128((__m128i *)out,
					    blend16(p, L, n, lo, hi));
					_mm_storeu_si128((__m128i *)(out + 16),
					    blend16(p + 16, L, n, lo, hi));
					_mm_storeu_si128((__m128i *)(out + 32),
					    blend16(p + 32, L, n, lo, hi));
				}
				for (r = 0; r < 16; r++, d += dstride)
					memcpy(d + (size_t)x * 3, out + r * 3,
					    3);
			} else {
				_mm_storeu_si128((__m128i *)out,
				    blend16(p, L, n, lo, hi));
				for (r = 0; r < 16; r++, d += dstride)
					d[x] = out[r];
			}
		}
	}
	if (r0 < rows)
		hpass_c(src + r0 * sstride, sstride, rows - r0, c,
		    dst + r0 * dstride, dstride, ax);
}
#endif

static void
hpass(const unsigned char *src, size_t sstride, uint32_t rows, uint32_t c,
    unsigned char *dst, size_t dstride, const struct axis *ax,
    unsigned char *col)
{
#ifdef HAVE_SSE2
	if (col != NULL) {
		hpass_sse2(src, sstride, rows, c, dst, dstride, ax, col);
		return;
	}
#endif
	hpass_c(src, sstride, rows, c, dst, dstride, ax);
}

static void
vpass(const unsigned char *src, size_t sstride, size_t nbytes,
    unsigned char *dst, size_t dstride, const struct axis *ax)
{
#ifdef HAVE_SSE2
	if (ax->ksize <= SIMD_MAXTAPS) {
		vpass_sse2(src, sstride, nbytes, dst, dstride, ax);
		return;
	}
#endif
	vpass_c(src, sstride, 0, nbytes, dst, dstride, ax);
}

void
rv_scale_nearest(const unsigned char *src, size_t sstride, uint32_t sh,
    uint32_t sw, uint32_t c, unsigned char *dst, size_t dstride, uint32_t dh,
    uint32_t dw, const double a[6], const unsigned char *fill, int *xtab)
{
	double xo = a[2] + a[0] * 0.5, yo = a[5] + a[4] * 0.5;
	uint32_t x, y, ch, xa = dw, xb = 0;
	int dense = 1;

	/* Incremental, as PIL does: the rounding of the sums matters.  The
	 * table holds byte offsets, -1 for columns that map outside. */
	for (x = 0; x < dw; x++) {
		int xin = coord(xo);

		if (xin >= 0 && xin < (int)sw) {
			xtab[x] = xin * (int)c;
			if (x < xa)
				xa = x;
			xb = x + 1;
		} else {
			xtab[x] = -1;
		}
		xo += a[0];
	}
	for (x = xa; x < xb; x++)
		if (xtab[x] < 0)
			dense = 0;
	for (y = 0; y < dh; y++, yo += a[4]) {
		int yi = coord(yo);
		unsigned char *d = dst + y * dstride;
		const unsigned char *s;

		if (yi < 0 || yi >= (int)sh) {
			for (x = 0; x < dw; x++)
				for (ch = 0; ch < c; ch++)
					*d++ = fill[ch];
			continue;
		}
		s = src + (size_t)yi * sstride;
		if (c == 3 && dense && xa < xb && yi + 1 < (int)sh) {
			/* 4-byte moves: the byte read past a pixel is in
			 * the next row at worst, the byte written past it
			 * is rewritten next; the last pixel moves 3. */
			for (x = 0; x < xa; x++)
				memcpy(d + 3 * x, fill, 3);
			for (x = xa; x + 1 < xb; x++)
				memcpy(d + 3 * x, s + xtab[x], 4);
			memcpy(d + 3 * x, s + xtab[x], 3);
			for (x = xb; x < dw; x++)
				memcpy(d + 3 * x, fill, 3);
		} else if (c == 1) {
			for (x = 0; x < dw; x++)
				d[x] = xtab[x] < 0 ? fill[0] : s[xtab[x]];
		} else {
			for (x = 0; x < dw; x++)
				for (ch = 0; ch < c; ch++)
					*d++ = xtab[x] < 0 ? fill[ch] :
					    s[xtab[x] + ch];
		}
	}
}

/*
 * antialias=0: torchvision's only meaning of it, the tensor path, which
 * is torch's interpolate (align_corners=False) in float32, then rounded
 * half to even.  Bilinear clamps the source position at 0 and the second
 * tap at the edge; bicubic is Keys' cubic with a = -0.75, its taps'
 * indices clamped to the image and the result to [0, 255].  Taps per axis
 * in t (index, weight); sums in torch's order, rows of columns.
 */
struct ftap {
	int32_t i[4];
	float w[4];
};

static float
cubic1(float x, float a)
{
	return ((a + 2) * x - (a + 3)) * x * x + 1;
}

static float
cubic2(float x, float a)
{
	return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

static void
ftaps(uint32_t in, uint32_t out, int cubic, struct ftap *t)
{
	float scale = (float)in / (float)out;
	uint32_t o;
	int k;

	for (o = 0; o < out; o++) {
		float src = (float)(scale * (o + 0.5) - 0.5), lam;
		int i0;

		if (!cubic) {
			if (src < 0)
				src = 0;
			i0 = (int)floorf(src);
			if (i0 > (int)in - 1)
				i0 = (int)in - 1;
			lam = src - (float)i0;
			lam = lam < 0 ? 0 : lam > 1 ? 1 : lam;
			t[o].i[0] = i0;
			t[o].i[1] = i0 + (i0 < (int)in - 1);
			t[o].w[0] = 1 - lam;
			t[o].w[1] = lam;
			continue;
		}
		i0 = (int)floorf(src);
		lam = src - (float)i0;
		t[o].w[0] = cubic2(lam + 1.0f, -0.75f);
		t[o].w[1] = cubic1(lam, -0.75f);
		t[o].w[2] = cubic1(1.0f - lam, -0.75f);
		t[o].w[3] = cubic2(2.0f - lam, -0.75f);
		for (k = 0; k < 4; k++) {
			int j = i0 - 1 + k;

			t[o].i[k] = j < 0 ? 0 : j > (int)in - 1 ? (int)in - 1 :
			    j;
		}
	}
}

static void
resize_tensor(const unsigned char *src, size_t stride, uint32_t wh,
    uint32_t ww, uint32_t c, unsigned char *dst, uint32_t h, uint32_t w,
    int cubic, struct ftap *ty, struct ftap *tx)
{
	int n = cubic ? 4 : 2, a, b;
	uint32_t y, x, ch;

	ftaps(wh, h, cubic, ty);
	ftaps(ww, w, cubic, tx);
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++)
			for (ch = 0; ch < c; ch++) {
				float v = 0;

				for (a = 0; a < n; a++) {
					const unsigned char *r = src +
					    (size_t)ty[y].i[a] * stride + ch;
					float t = 0;

					for (b = 0; b < n; b++)
						t += (float)r[(size_t)tx[x].i[b] *
						    c] * tx[x].w[b];
					v += t * ty[y].w[a];
				}
				v = v < 0 ? 0 : v > 255 ? 255 : v;
				*dst++ = (unsigned char)nearbyintf(v);
			}
}

/*
 * The antialiased filters on the window (top, left, wh, ww) of img, the
 * boxes sy, sx inside it (window coordinates), to h x w.
 */
static int
resize_filtered(struct rv_img *img, struct rv_aug_ctx *ctx, uint32_t top,
    uint32_t left, const struct span *sy, const struct span *sx, uint32_t h,
    uint32_t w, enum rv_interp interp, int antialias)
{
	const struct filter *f;
	uint32_t c = img->c, yfirst = 0, ylast = 0, wh = sy->in, ww = sx->in;
	size_t stride = (size_t)img->w * c, nax, nay, ntmp = 0, ncol = 0;
	const unsigned char *src = img->data + top * stride + (size_t)left * c;
	struct axis ax, ay;
	int need_h, need_v;
	unsigned char *p, *tmp, *col = NULL;

	f = interp == RV_BICUBIC ? &filt_bicubic : &filt_bilinear;
	need_h = ww != w || sx->lo != 0 || sx->hi != ww;
	need_v = wh != h || sy->lo != 0 || sy->hi != wh;
	/*
	 * What the block below will take, at most (the rows between the
	 * passes counted whole, the columns as for the SIMD pass), bounded
	 * before any of it is computed in ints and size_t.
	 */
	if (rv_aug_check_work(img, axis_cost(sy, h, f, antialias) +
	    (need_h ? axis_cost(sx, w, f, antialias) + (double)wh * w * c +
	    (double)ww * (c == 3 ? 64 : 16) : 0)) < 0)
		return -1;

	/* One scratch block: y tables, x tables, rows between passes,
	 * columns for the SIMD horizontal pass. */
	nay = align64(axis_bytes(h, axis_ksize(sy, h, f, antialias)));
	nax = need_h ? align64(axis_bytes(w, axis_ksize(sx, w, f,
	    antialias))) : 0;
	if (need_h && need_v) {
		/* Only the rows the vertical pass reads (PIL's ybox). */
		double sc = (sy->hi - sy->lo) / h;
		double fs = sc < 1.0 || !antialias ? 1.0 : sc;
		int lo, n;

		axis_span(wh, sy->lo, sc, f->support * fs, 0, &lo, &n);
		yfirst = (uint32_t)lo;
		axis_span(wh, sy->lo, sc, f->support * fs, h - 1, &lo, &n);
		ylast = (uint32_t)(lo + n);
		ntmp = align64((size_t)(ylast - yfirst) * w * c);
	}
#ifdef HAVE_SSE2
	if (need_h && (c == 3 || c == 1) &&
	    axis_ksize(sx, w, f, antialias) <= SIMD_MAXTAPS)
		ncol = (size_t)ww * (c == 3 ? 64 : 16);
#endif
	p = rv_aug_scratch(ctx, nay + nax + ntmp + ncol);
	axis_init(&ay, p, sy, h, f, antialias);
	if (need_h)
		axis_init(&ax, p + nay, sx, w, f, antialias);
	tmp = p + nay + nax;
	if (ncol > 0)
		col = tmp + ntmp;

	rv_aug_tmp(ctx, h, w, c);
	if (need_h && need_v) {
		for (uint32_t y = 0; y < h; y++)
			ay.b[2 * y] -= (int)yfirst;
		hpass(src + yfirst * stride, stride, ylast - yfirst, c, tmp,
		    (size_t)w * c, &ax, col);
		vpass(tmp, (size_t)w * c, (size_t)w * c, ctx->tmp.data,
		    (size_t)w * c, &ay);
	} else if (need_h) {
		hpass(src, stride, h, c, ctx->tmp.data, (size_t)w * c, &ax,
		    col);
	} else {
		vpass(src, stride, (size_t)w * c, ctx->tmp.data,
		    (size_t)w * c, &ay);
	}
	rv_aug_swap(img, ctx);
	return 0;
}

/* The checks every windowed resize makes. */
static int
check_window(const struct rv_img *img, uint32_t top, uint32_t left,
    uint32_t wh, uint32_t ww, uint32_t h, uint32_t w)
{
	if (img->c == 0 || img->c > 4)
		return rv_seterr("resize: %u channels unsupported", img->c);
	if (h == 0 || w == 0 || wh == 0 || ww == 0)
		return rv_seterr("cannot resize %ux%u to %ux%u", ww, wh, w, h);
	if ((uint64_t)top + wh > img->h || (uint64_t)left + ww > img->w)
		return rv_seterr("resize window %ux%u at (%u, %u) outside "
		    "the %ux%u image", ww, wh, left, top, img->w, img->h);
	return 0;
}

int
rv_resize_window(struct rv_img *img, struct rv_aug_ctx *ctx, uint32_t top,
    uint32_t left, uint32_t wh, uint32_t ww, uint32_t h, uint32_t w,
    enum rv_interp interp, int antialias)
{
	uint32_t c = img->c;
	size_t stride = (size_t)img->w * c;
	const unsigned char *src;
	struct span sy = { wh, 0, wh }, sx = { ww, 0, ww };

	if (check_window(img, top, left, wh, ww, h, w) < 0 ||
	    rv_aug_check_size(img, h, w) < 0)
		return -1;
	src = img->data + top * stride + (size_t)left * c;
	if (wh == h && ww == w) {
		/* PIL copies: only the window is left to take. */
		if (wh == img->h && ww == img->w)
			return 0;
		rv_aug_tmp(ctx, h, w, c);
		for (uint32_t y = 0; y < h; y++)
			memcpy(ctx->tmp.data + (size_t)y * w * c,
			    src + y * stride, (size_t)w * c);
		rv_aug_swap(img, ctx);
		return 0;
	}
	if (interp == RV_NEAREST) {
		double a[6] = { (double)ww / w, 0, 0, 0, (double)wh / h, 0 };
		static const unsigned char zero[4];
		int *xtab;

		if (rv_aug_check_work(img, (double)w * sizeof(int)) < 0)
			return -1;
		xtab = rv_aug_scratch(ctx, (size_t)w * sizeof(int));

		rv_aug_tmp(ctx, h, w, c);
		rv_scale_nearest(src, stride, wh, ww, c, ctx->tmp.data,
		    (size_t)w * c, h, w, a, zero, xtab);
		rv_aug_swap(img, ctx);
		return 0;
	}
	if (!antialias) {
		struct ftap *t;

		if (rv_aug_check_work(img, ((double)h + w) * sizeof(*t)) < 0)
			return -1;
		t = rv_aug_scratch(ctx, ((size_t)h + w) * sizeof(*t));

		rv_aug_tmp(ctx, h, w, c);
		resize_tensor(src, stride, wh, ww, c, ctx->tmp.data, h, w,
		    interp == RV_BICUBIC, t, t + h);
		rv_aug_swap(img, ctx);
		return 0;
	}
	return resize_filtered(img, ctx, top, left, &sy, &sx, h, w, interp,
	    1);
}

int
rv_resize_box(struct rv_img *img, struct rv_aug_ctx *ctx, uint32_t top,
    uint32_t left, uint32_t wh, uint32_t ww, const double box[4],
    uint32_t h, uint32_t w, enum rv_interp interp)
{
	struct span sy = { wh, box[0], box[2] }, sx = { ww, box[1], box[3] };

	if (check_window(img, top, left, wh, ww, h, w) < 0 ||
	    rv_aug_check_size(img, h, w) < 0)
		return -1;
	if (interp == RV_NEAREST)
		return rv_seterr("resize: a box needs bilinear or bicubic");
	if (!(box[0] >= 0 && box[0] < box[2] && box[2] <= wh &&
	    box[1] >= 0 && box[1] < box[3] && box[3] <= ww))
		return rv_seterr("resize box [%g, %g) x [%g, %g) outside "
		    "the %ux%u window", box[1], box[3], box[0], box[2], ww,
		    wh);
	return resize_filtered(img, ctx, top, left, &sy, &sx, h, w, interp,
	    1);
}

int
rv_resize(struct rv_img *img, struct rv_aug_ctx *ctx, uint32_t h,
    uint32_t w, enum rv_interp interp)
{
	return rv_resize_window(img, ctx, 0, 0, img->h, img->w, h, w, interp,
	    1);
}
