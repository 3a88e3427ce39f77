/*
 * The CUDA backend's own kernels (everything cuDNN and cuBLAS do not do),
 * private to nn_cuda.cu.  The per-element arithmetic lives in RV_HD
 * functions, compiled for the host too, so that tests/unit/t_nn_cuda.c
 * checks it against the CPU backend's kernels on machines without a GPU
 * (through the host entry points of nn_cuda_host.h).
 *
 * Included after nn.h (RV_BN_EPS).  Activations are T (float or
 * __nv_bfloat16) in NCHW or NHWC; per-sample results, batch-norm
 * statistics, parameters, their gradients and momentum are float.
 */
#ifndef RV_NN_CUDA_KERN_CUH
#define RV_NN_CUDA_KERN_CUH

#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include "base/rng_philox.h"

#define RV_HD __host__ __device__ inline

/* Float conversions for both activation types. */
RV_HD float
to_f(float v)
{
	return v;
}

RV_HD float
to_f(__nv_bfloat16 v)
{
	return __bfloat162float(v);
}

template <typename T> RV_HD T from_f(float v);

template <> RV_HD float
from_f<float>(float v)
{
	return v;
}

template <> RV_HD __nv_bfloat16
from_f<__nv_bfloat16>(float v)
{
	return __float2bfloat16_rn(v);
}

/*
 * The scale dropout gives element e = ch * hw + j of sample `id`: draw e
 * of the stream rv_rng_init(seed, RV_STAGE_TRAIN, op, step, id) makes,
 * whose key is (k0, k1).  Each Philox block holds two uniforms (a u64 is
 * two u32 words, high first), so draw e is half of block e / 2.
 */
RV_HD float
drop_scale(uint32_t k0, uint32_t k1, uint32_t step, uint64_t id, uint64_t e,
    float p, float scale)
{
	uint32_t o[4];
	uint64_t u;

	rv_philox_block(k0, k1, (uint32_t)(e >> 1), step, (uint32_t)id,
	    (uint32_t)(id >> 32), o);
	u = (e & 1) ? (uint64_t)o[2] << 32 | o[3] : (uint64_t)o[0] << 32 | o[1];
	return (double)(u >> 11) * 0x1.0p-53 < (double)p ? 0.0f : scale;
}

/* Sample, channel and plane offset of element idx of an [n][c][hw]
 * tensor in NCHW (nhwc 0) or NHWC order. */
RV_HD void
unindex(uint64_t idx, int c, int hw, int nhwc, int *i, int *ch, int *j)
{
	if (nhwc) {
		*ch = (int)(idx % (uint64_t)c);
		idx /= (uint64_t)c;
		*j = (int)(idx % (uint64_t)hw);
		*i = (int)(idx / (uint64_t)hw);
	} else {
		*j = (int)(idx % (uint64_t)hw);
		idx /= (uint64_t)hw;
		*ch = (int)(idx % (uint64_t)c);
		*i = (int)(idx / (uint64_t)c);
	}
}

/* Input element idx (NCHW or NHWC): the offset of its u8 pixel in the
 * batch's [n][h][w][c] samples, and its channel. */
RV_HD uint64_t
input_src(uint64_t idx, int c, int hw, int nhwc, int *ch)
{
	int i, j;

	unindex(idx, c, hw, nhwc, &i, ch, &j);
	return ((uint64_t)i * hw + j) * c + *ch;
}

/* Element idx of the destination of an [n][c][hw] layout change (to
 * NCHW when to_nchw, else to NHWC): the source offset. */
RV_HD uint64_t
permute_src(uint64_t idx, int c, int hw, int to_nchw)
{
	int i, ch, j;

	unindex(idx, c, hw, !to_nchw, &i, &ch, &j);
	return to_nchw ? ((uint64_t)i * hw + j) * c + ch :
	    ((uint64_t)i * c + ch) * hw + j;
}

/*
 * Softmax cross-entropy of one sample, as rv_k_softmax_ce: z[j * zs] for
 * class j; target (1 - ls) onehot + ls / k; dz[j * zs] = (p - q) w / n
 * when dz is not NULL.  Returns the loss; *pq = ||p - q||, *pred the
 * first argmax.
 */
template <typename T>
RV_HD double
softmax_ce1(int k, int n, const T *z, long zs, int label, double w,
    double ls, T *dz, float *pq, int32_t *pred)
{
	double mx = to_f(z[0]), se = 0.0, lse, l = 0.0, d2 = 0.0;
	double on = 1.0 - ls, off = ls / k;
	int am = 0, j;

	for (j = 1; j < k; j++)
		if (to_f(z[j * zs]) > mx) {
			mx = to_f(z[j * zs]);
			am = j;
		}
	for (j = 0; j < k; j++)
		se += exp(to_f(z[j * zs]) - mx);
	lse = mx + log(se);
	for (j = 0; j < k; j++) {
		double zj = to_f(z[j * zs]);
		double q = off + (j == label ? on : 0.0);
		double d = exp(zj - lse) - q;

		l -= q * (zj - lse);
		d2 += d * d;
		if (dz != NULL)
			dz[j * zs] = from_f<T>((float)(d * w / n));
	}
	*pq = (float)sqrt(d2);
	*pred = am;
	return l;
}

/* SGD as rv_k_sgd, one element. */
RV_HD void
sgd1(float *p, float grad, float *v, float lr, float mom, float wd,
    int nesterov)
{
	float g = grad + wd * *p;
	float vj = mom * *v + g;

	*v = vj;
	*p -= lr * (nesterov ? g + mom * vj : vj);
}

/* Where element (ko, ci, r, s) of a KCRS weight goes in KRSC order. */
RV_HD uint64_t
krsc_index(uint64_t kcrs, int c, int rs)
{
	int s = (int)(kcrs % (uint64_t)rs);
	uint64_t t = kcrs / (uint64_t)rs;
	int ci = (int)(t % (uint64_t)c);
	uint64_t ko = t / (uint64_t)c;

	return (ko * rs + s) * c + ci;
}

/* ---- Batch norm on NHWC tensors (bf16) ---------------------------------
 *
 * cuDNN's batch norm is not used for bf16 (PyTorch does not send bf16 to
 * it either): x is [m][C], m = n*h*w rows.  Statistics in three steps,
 * every sum in an order fixed by the shapes: blocks of BN_TC channels by
 * BN_TR row threads add up one of `chunks` slices of the rows (thread row
 * ty takes rows lo + ty, lo + ty + BN_TR, ...; then the BN_TR partials in
 * order), a thread a channel adds the chunks in order.  The mean first,
 * then the squared deviations from it, as the CPU does.
 */
#define BN_TC 32
#define BN_TR 8

/* Chunks of at least 512 rows, at most 1024 of them. */
RV_HD int
bn_chunks(uint64_t m)
{
	uint64_t k = m / 512;

	return k < 1 ? 1 : k > 1024 ? 1024 : (int)k;
}

RV_HD void
bn_chunk(uint64_t m, int chunks, int k, uint64_t *lo, uint64_t *hi)
{
	*lo = m * (uint64_t)k / (uint64_t)chunks;
	*hi = m * (uint64_t)(k + 1) / (uint64_t)chunks;
}

enum bn_sum { BN_SUM_X, BN_SUM_DEV2, BN_SUM_DY };

/* Thread row ty's sums for channel ch over rows [lo, hi): x; or
 * (x - mean)^2; or dy into *a and dy (x - mean) invstd into *b. */
template <typename T>
RV_HD void
bn_acc(enum bn_sum what, int C, int ch, uint64_t lo, uint64_t hi, int ty,
    const T *x, const T *dy, float mean, float invstd, double *a, double *b)
{
	double sa = 0.0, sb = 0.0;

	for (uint64_t r = lo + (uint64_t)ty; r < hi; r += BN_TR) {
		double v = to_f(x[r * C + ch]);

		if (what == BN_SUM_X)
			sa += v;
		else if (what == BN_SUM_DEV2)
			sa += (v - mean) * (v - mean);
		else {
			double g = to_f(dy[r * C + ch]);

			sa += g;
			sb += g * ((v - mean) * invstd);
		}
	}
	*a = sa;
	*b = sb;
}

/* y for one element in training: (x - mean) gamma invstd + beta. */
RV_HD float
bn_y(float x, float mean, float invstd, float gamma, float beta)
{
	return (x - mean) * (gamma * invstd) + beta;
}

/* dx for one element: gamma invstd (dy - dbeta/m - xh dgamma/m). */
RV_HD float
bn_dx(float x, float dy, float mean, float invstd, float gamma,
    float dgamma, float dbeta, double m)
{
	float xh = (x - mean) * invstd;

	return gamma * invstd * (dy - (float)(dbeta / m) -
	    xh * (float)(dgamma / m));
}

/* Evaluation: the running statistics, as rv_k_bn_fwd_eval. */
RV_HD float
bn_eval(float x, float rmean, float rvar, float gamma, float beta)
{
	float a = (float)(gamma * (1.0 / sqrt((double)rvar + RV_BN_EPS)));

	return (x - rmean) * a + beta;
}

/* One channel's statistics from the chunks' sums (part [chunks][2][C]):
 * the mean (var 0), or 1/sqrt(var + eps) and, rmean not NULL, the
 * running statistics moved by mom toward the mean and unbiased var. */
RV_HD void
bn_stats1(int ch, int C, uint64_t m, int chunks, const double *part,
    int var, float *mean, float *invstd, float *rmean, float *rvar,
    float mom)
{
	double s = 0.0, v, unb;

	for (int k = 0; k < chunks; k++)
		s += part[(uint64_t)k * 2 * C + ch];
	if (!var) {
		mean[ch] = (float)(s / (double)m);
		return;
	}
	v = s / (double)m;
	invstd[ch] = (float)(1.0 / sqrt(v + RV_BN_EPS));
	if (rmean == NULL)
		return;
	unb = m > 1 ? v * (double)m / (double)(m - 1) : v;
	rmean[ch] = (float)((1.0 - mom) * rmean[ch] + mom * (double)mean[ch]);
	rvar[ch] = (float)((1.0 - mom) * rvar[ch] + mom * unb);
}

/* dbeta = sum dy, dgamma = sum dy xh for one channel. */
RV_HD void
bn_gsum1(int ch, int C, int chunks, const double *part, float *dgamma,
    float *dbeta)
{
	double a = 0.0, b = 0.0;

	for (int k = 0; k < chunks; k++) {
		a += part[(uint64_t)k * 2 * C + ch];
		b += part[((uint64_t)k * 2 + 1) * C + ch];
	}
	dbeta[ch] = (float)a;
	dgamma[ch] = (float)b;
}

/* ---- Pools --------------------------------------------------------------
 *
 * Max and average pools over [n][c][h][w] in NCHW or NHWC, as the CPU's
 * kernels: max pads with minus infinity, takes the first maximum of the
 * window in row order (NaN wins) and keeps its plane offset for
 * backward; average divides by kh*kw, padding counted.  A global average
 * is an average over one h x w window.  Backward gathers, for each input
 * element, the windows that cover it in the order the CPU scatters them,
 * so the sums are the CPU's.
 */
struct pool_g {
	int n, c, h, w;		/* input */
	int oh, ow;		/* output */
	int kh, kw, stride, pad;
	int nhwc;
	int max;		/* 1 max, 0 average */
};

RV_HD void
pool_span(int o, int k, int stride, int pad, int n, int *lo, int *hi)
{
	int a = o * stride - pad, b = a + k;

	*lo = a < 0 ? 0 : a;
	*hi = b > n ? n : b;
}

/* Offset of (i, ch, y, x) in a tensor of c channels and h x w planes. */
RV_HD uint64_t
pool_at(int nhwc, int c, int h, int w, int i, int ch, int y, int x)
{
	if (nhwc)
		return (((uint64_t)i * h + y) * w + x) * c + ch;
	return (((uint64_t)i * c + ch) * h + y) * w + x;
}

/* Output element idx: its value, and for max the plane offset of the
 * winner (-1 for an empty window). */
template <typename T>
RV_HD float
pool_fwd1(const struct pool_g *g, const T *x, uint64_t idx, int32_t *at)
{
	int i, ch, j, oy, ox, y0, y1, x0, x1;
	float best = -INFINITY, s = 0.0f;
	int32_t a = -1;

	unindex(idx, g->c, g->oh * g->ow, g->nhwc, &i, &ch, &j);
	oy = j / g->ow;
	ox = j % g->ow;
	pool_span(oy, g->kh, g->stride, g->pad, g->h, &y0, &y1);
	pool_span(ox, g->kw, g->stride, g->pad, g->w, &x0, &x1);
	if (g->max && y0 < y1 && x0 < x1) {
		a = y0 * g->w + x0;
		best = to_f(x[pool_at(g->nhwc, g->c, g->h, g->w, i, ch, y0,
		    x0)]);
	}
	for (int iy = y0; iy < y1; iy++)
		for (int ix = x0; ix < x1; ix++) {
			float v = to_f(x[pool_at(g->nhwc, g->c, g->h, g->w, i,
			    ch, iy, ix)]);

			if (!g->max)
				s += v;
			else if (v > best || v != v) {
				best = v;
				a = iy * g->w + ix;
			}
		}
	*at = a;
	return g->max ? best : s * (1.0f / (float)(g->kh * g->kw));
}

/* Input element idx's gradient from dy (and, for max, argmax). */
template <typename T>
RV_HD float
pool_bwd1(const struct pool_g *g, const T *dy, const int32_t *argmax,
    uint64_t idx)
{
	int i, ch, j, iy, ix, oy0, oy1, ox0, ox1, a;
	float inv = 1.0f / (float)(g->kh * g->kw), d = 0.0f;

	unindex(idx, g->c, g->h * g->w, g->nhwc, &i, &ch, &j);
	iy = j / g->w;
	ix = j % g->w;
	/* Windows oy with oy s - pad <= iy < oy s - pad + kh. */
	a = iy + g->pad - g->kh + 1;
	oy0 = a > 0 ? (a + g->stride - 1) / g->stride : 0;
	oy1 = (iy + g->pad) / g->stride;
	oy1 = oy1 < g->oh - 1 ? oy1 : g->oh - 1;
	a = ix + g->pad - g->kw + 1;
	ox0 = a > 0 ? (a + g->stride - 1) / g->stride : 0;
	ox1 = (ix + g->pad) / g->stride;
	ox1 = ox1 < g->ow - 1 ? ox1 : g->ow - 1;
	for (int oy = oy0; oy <= oy1; oy++)
		for (int ox = ox0; ox <= ox1; ox++) {
			uint64_t o = pool_at(g->nhwc, g->c, g->oh, g->ow, i, ch,
			    oy, ox);

			if (!g->max)
				d += to_f(dy[o]) * inv;
			else if (argmax[o] == j)
				d += to_f(dy[o]);
		}
	return d;
}

#endif
