/*
 * CPU kernels, the elementwise and reduction half (nn_kern.h): batch
 * norm, ReLU, pools, dropout, softmax cross-entropy and SGD.  Loops run
 * over contiguous CNHW rows so they vectorise, threads split channels or
 * planes so no two write one element, and every sum has a fixed order.
 */
#include <math.h>
#include <string.h>

#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_kern.h"
#include "nn/nn_kern_impl.h"

/* Dropout draws random numbers: worth threads from fewer elements. */
#define DROP_PAR_MIN	4096

/* ---- Batch norm -------------------------------------------------------- */

/*
 * No restrict on the rows: y may be x (dx may be dy), since every pass
 * reads and writes one index at a time; omp simd still vectorises.
 */

void
rv_k_bn_fwd_train(int c, size_t m, const float *x, const float *gamma,
    const float *beta, float *y, float *save_mean, float *save_invstd,
    float *run_mean, float *run_var, float momentum)
{
	int ch;

	#pragma omp parallel for schedule(static) \
	    if ((size_t)c * m > RV_K_PAR_MIN)
	for (ch = 0; ch < c; ch++) {
		const float *xr = x + (size_t)ch * m;
		float *yr = y + (size_t)ch * m;
		double mean, var, invstd, unbiased;
		float mf, a, b = beta[ch];
		size_t j;

		mean = rv_k_sum(xr, m) / (double)m;
		var = rv_k_sumsq_dev(xr, m, mean) / (double)m;
		invstd = 1.0 / sqrt(var + RV_BN_EPS);
		mf = (float)mean;
		a = (float)(gamma[ch] * invstd);
		/* Centre first: x a - mean a cancels when |mean| >> std. */
		#pragma omp simd
		for (j = 0; j < m; j++)
			yr[j] = (xr[j] - mf) * a + b;
		save_mean[ch] = (float)mean;
		save_invstd[ch] = (float)invstd;
		/* torch refuses m == 1; the biased variance (0) is kept. */
		unbiased = m > 1 ? var * (double)m / (double)(m - 1) : var;
		run_mean[ch] = (float)((1.0 - momentum) * run_mean[ch] +
		    momentum * mean);
		run_var[ch] = (float)((1.0 - momentum) * run_var[ch] +
		    momentum * unbiased);
	}
}

void
rv_k_bn_fwd_eval(int c, size_t m, const float *x, const float *gamma,
    const float *beta, const float *run_mean, const float *run_var,
    float *y)
{
	int ch;

	#pragma omp parallel for schedule(static) \
	    if ((size_t)c * m > RV_K_PAR_MIN)
	for (ch = 0; ch < c; ch++) {
		const float *xr = x + (size_t)ch * m;
		float *yr = y + (size_t)ch * m;
		double invstd = 1.0 / sqrt((double)run_var[ch] + RV_BN_EPS);
		float mf = run_mean[ch], a = (float)(gamma[ch] * invstd);
		float b = beta[ch];
		size_t j;

		#pragma omp simd
		for (j = 0; j < m; j++)
			yr[j] = (xr[j] - mf) * a + b;
	}
}

/*
 * With xh = (x - mean) invstd: dbeta = sum dy, dgamma = sum dy xh,
 * dx = gamma invstd (dy - dbeta/m - xh dgamma/m), folded to
 * dx = a dy + b (x - mean) + c per channel.
 */
void
rv_k_bn_bwd(int c, size_t m, const float *x, const float *dy,
    const float *gamma, const float *save_mean, const float *save_invstd,
    float *dx, float *dgamma, float *dbeta)
{
	int ch;

	#pragma omp parallel for schedule(static) \
	    if ((size_t)c * m > RV_K_PAR_MIN)
	for (ch = 0; ch < c; ch++) {
		const float *xr = x + (size_t)ch * m;
		const float *dyr = dy + (size_t)ch * m;
		float *dxr = dx + (size_t)ch * m;
		float mf = save_mean[ch], a, b, cc;
		double is = save_invstd[ch], sdy, sdyx, dg, gi;
		size_t j;

		rv_k_sum_dot_dev(dyr, xr, m, mf, &sdy, &sdyx);
		dg = sdyx * is;
		dgamma[ch] = (float)dg;
		dbeta[ch] = (float)sdy;
		gi = gamma[ch] * is;
		a = (float)gi;
		b = (float)(-gi * is * dg / (double)m);
		cc = (float)(-gi * sdy / (double)m);
		#pragma omp simd
		for (j = 0; j < m; j++)
			dxr[j] = a * dyr[j] + b * (xr[j] - mf) + cc;
	}
}

/* ---- ReLU -------------------------------------------------------------- */

void
rv_k_relu_fwd(size_t len, const float *x, float *y)
{
	size_t j;

	#pragma omp parallel for simd schedule(static) if (len > RV_K_PAR_MIN)
	for (j = 0; j < len; j++)
		y[j] = x[j] > 0.0f ? x[j] : 0.0f;
}

void
rv_k_relu_bwd(size_t len, const float *y, const float *dy, float *dx)
{
	size_t j;

	/* dy is loaded unconditionally, or the loop would not vectorise. */
	#pragma omp parallel for simd schedule(static) if (len > RV_K_PAR_MIN)
	for (j = 0; j < len; j++) {
		float d = dy[j];

		dx[j] = y[j] > 0.0f ? d : 0.0f;
	}
}

/* ---- Pools ------------------------------------------------------------- */

/* The window of output o along one axis, clipped to [0, n). */
static void
pool_span(int o, int k, int stride, int pad, int n, int *lo, int *hi)
{
	int a = o * stride - pad, b = a + k;

	*lo = a < 0 ? 0 : a;
	*hi = b > n ? n : b;
}

/* Fold v at plane offset o into the running max (NaN wins, as torch). */
#define MAX_STEP(v, o) do { \
	int take_ = ((v) > best) | ((v) != (v)); \
	best = take_ ? (v) : best; \
	at = take_ ? (o) : at; \
} while (0)

/*
 * The common 2x2 stride-2 unpadded window without the general loops, and
 * without branches: on real activations the winner is unpredictable.
 */
static void
maxpool_plane_2x2(const struct rv_pool_geom *g, const float *restrict x,
    float *restrict y, int32_t *restrict am)
{
	int oy, ox, w = g->w;

	for (oy = 0; oy < g->oh; oy++) {
		const float *r0 = x + (size_t)2 * oy * w, *r1 = r0 + w;
		float *restrict yr = y + (size_t)oy * g->ow;
		int32_t *restrict ar = am + (size_t)oy * g->ow;
		int base = 2 * oy * w;

		for (ox = 0; ox < g->ow; ox++) {
			float best = r0[2 * ox];
			int32_t at = base + 2 * ox;

			MAX_STEP(r0[2 * ox + 1], at + 1);
			MAX_STEP(r1[2 * ox], base + w + 2 * ox);
			MAX_STEP(r1[2 * ox + 1], base + w + 2 * ox + 1);
			yr[ox] = best;
			ar[ox] = at;
		}
	}
}

void
rv_k_maxpool_fwd(const struct rv_pool_geom *g, const float *x, float *y,
    int32_t *argmax)
{
	size_t hw = (size_t)g->h * g->w, ohw = (size_t)g->oh * g->ow;
	int planes = g->c * g->n, q;
	int fast = g->k == 2 && g->stride == 2 && g->pad == 0 &&
	    2 * g->oh <= g->h && 2 * g->ow <= g->w;

	#pragma omp parallel for schedule(static) \
	    if (planes * hw > RV_K_PAR_MIN)
	for (q = 0; q < planes; q++) {
		const float *restrict xp = x + (size_t)q * hw;
		float *restrict yp = y + (size_t)q * ohw;
		int32_t *restrict ap = argmax + (size_t)q * ohw;
		int oy, ox, y0, y1, x0, x1, iy, ix;

		if (fast) {
			maxpool_plane_2x2(g, xp, yp, ap);
			continue;
		}
		for (oy = 0; oy < g->oh; oy++) {
			pool_span(oy, g->k, g->stride, g->pad, g->h, &y0, &y1);
			for (ox = 0; ox < g->ow; ox++) {
				float best = -INFINITY;
				int32_t at = -1;

				pool_span(ox, g->k, g->stride, g->pad, g->w,
				    &x0, &x1);
				/* Start at the window's first element, so
				 * argmax is valid even if all are -inf. */
				if (y0 < y1 && x0 < x1) {
					at = y0 * g->w + x0;
					best = xp[at];
				}
				for (iy = y0; iy < y1; iy++)
					for (ix = x0; ix < x1; ix++)
						MAX_STEP(xp[iy * g->w + ix],
						    iy * g->w + ix);
				yp[oy * g->ow + ox] = best;
				ap[oy * g->ow + ox] = at;
			}
		}
	}
}

void
rv_k_maxpool_bwd(const struct rv_pool_geom *g, const float *dy,
    const int32_t *argmax, float *dx)
{
	size_t hw = (size_t)g->h * g->w, ohw = (size_t)g->oh * g->ow;
	int planes = g->c * g->n, q;

	#pragma omp parallel for schedule(static) \
	    if (planes * hw > RV_K_PAR_MIN)
	for (q = 0; q < planes; q++) {
		const float *restrict dyp = dy + (size_t)q * ohw;
		const int32_t *restrict ap = argmax + (size_t)q * ohw;
		float *restrict dxp = dx + (size_t)q * hw;
		size_t o;

		memset(dxp, 0, hw * sizeof(*dxp));
		for (o = 0; o < ohw; o++)
			if (ap[o] >= 0)
				dxp[ap[o]] += dyp[o];
	}
}

void
rv_k_avgpool_fwd(const struct rv_pool_geom *g, const float *x, float *y)
{
	size_t hw = (size_t)g->h * g->w, ohw = (size_t)g->oh * g->ow;
	int planes = g->c * g->n, q;
	float inv = 1.0f / (float)(g->k * g->k);

	#pragma omp parallel for schedule(static) \
	    if (planes * hw > RV_K_PAR_MIN)
	for (q = 0; q < planes; q++) {
		const float *restrict xp = x + (size_t)q * hw;
		float *restrict yp = y + (size_t)q * ohw;
		int oy, ox, y0, y1, x0, x1, iy, ix;

		for (oy = 0; oy < g->oh; oy++) {
			pool_span(oy, g->k, g->stride, g->pad, g->h, &y0, &y1);
			for (ox = 0; ox < g->ow; ox++) {
				float s = 0.0f;

				pool_span(ox, g->k, g->stride, g->pad, g->w,
				    &x0, &x1);
				for (iy = y0; iy < y1; iy++)
					for (ix = x0; ix < x1; ix++)
						s += xp[iy * g->w + ix];
				yp[oy * g->ow + ox] = s * inv;
			}
		}
	}
}

void
rv_k_avgpool_bwd(const struct rv_pool_geom *g, const float *dy, float *dx)
{
	size_t hw = (size_t)g->h * g->w, ohw = (size_t)g->oh * g->ow;
	int planes = g->c * g->n, q;
	float inv = 1.0f / (float)(g->k * g->k);

	#pragma omp parallel for schedule(static) \
	    if (planes * hw > RV_K_PAR_MIN)
	for (q = 0; q < planes; q++) {
		const float *restrict dyp = dy + (size_t)q * ohw;
		float *restrict dxp = dx + (size_t)q * hw;
		int oy, ox, y0, y1, x0, x1, iy, ix;

		memset(dxp, 0, hw * sizeof(*dxp));
		for (oy = 0; oy < g->oh; oy++) {
			pool_span(oy, g->k, g->stride, g->pad, g->h, &y0, &y1);
			for (ox = 0; ox < g->ow; ox++) {
				float d = dyp[oy * g->ow + ox] * inv;

				pool_span(ox, g->k, g->stride, g->pad, g->w,
				    &x0, &x1);
				for (iy = y0; iy < y1; iy++)
					for (ix = x0; ix < x1; ix++)
						dxp[iy * g->w + ix] += d;
			}
		}
	}
}

void
rv_k_gap_fwd(int c, int n, int hw, const float *x, float *y)
{
	size_t rows = (size_t)c * n, r;

	#pragma omp parallel for schedule(static) if (rows * hw > RV_K_PAR_MIN)
	for (r = 0; r < rows; r++)
		y[r] = (float)(rv_k_sum(x + r * hw, hw) / hw);
}

void
rv_k_gap_bwd(int c, int n, int hw, const float *dy, float *dx)
{
	size_t rows = (size_t)c * n, r;
	float inv = 1.0f / (float)hw;

	#pragma omp parallel for schedule(static) if (rows * hw > RV_K_PAR_MIN)
	for (r = 0; r < rows; r++) {
		float *restrict d = dx + r * hw;
		float v = dy[r] * inv;
		int j;

		for (j = 0; j < hw; j++)
			d[j] = v;
	}
}

/* ---- Dropout ----------------------------------------------------------- */

void
rv_k_dropout_fwd(int c, int n, int hw, float p, uint64_t seed, uint32_t op,
    uint64_t step, const uint64_t *ids, const float *x, float *y,
    float *mask)
{
	float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
	size_t plane = (size_t)n * hw;
	int i;

	/* Samples in contiguous chunks: neighbours share cache lines only at
	 * a chunk's ends. */
	#pragma omp parallel for schedule(static) if (plane * c > DROP_PAR_MIN)
	for (i = 0; i < n; i++) {
		struct rv_rng r;
		size_t off = (size_t)i * hw;
		int ch, j;

		rv_rng_init(&r, seed, RV_STAGE_TRAIN, op, (uint32_t)step,
		    ids[i]);
		for (ch = 0; ch < c; ch++, off += plane)
			for (j = 0; j < hw; j++) {
				float v = rv_rng_uniform(&r) < p ? 0.0f : scale;

				mask[off + j] = v;
				y[off + j] = x[off + j] * v;
			}
	}
}

void
rv_k_dropout_bwd(size_t len, const float *mask, const float *dy, float *dx)
{
	size_t j;

	#pragma omp parallel for simd schedule(static) if (len > RV_K_PAR_MIN)
	for (j = 0; j < len; j++)
		dx[j] = dy[j] * mask[j];
}

/* ---- Softmax cross-entropy --------------------------------------------- */

double
rv_k_softmax_ce(int k, int n, const float *z, const int32_t *label,
    const float *wt, float ls, float *loss, float *dz, float *pq,
    int32_t *pred)
{
	double obj = 0.0, on = 1.0 - ls, off = (double)ls / k;
	int i, j;

	for (i = 0; i < n; i++) {
		double mx = z[i], se = 0.0, lse, l = 0.0, d2 = 0.0;
		double w = wt != NULL ? wt[i] : 1.0;
		int am = 0;

		for (j = 1; j < k; j++)
			if (z[(size_t)j * n + i] > mx) {
				mx = z[(size_t)j * n + i];
				am = j;
			}
		for (j = 0; j < k; j++)
			se += exp(z[(size_t)j * n + i] - mx);
		lse = mx + log(se);
		for (j = 0; j < k; j++) {
			double zj = z[(size_t)j * n + i];
			double q = off + (j == label[i] ? on : 0.0);
			double pr = exp(zj - lse), d = pr - q;

			l -= q * (zj - lse);
			d2 += d * d;
			if (dz != NULL)
				dz[(size_t)j * n + i] = (float)(d * w / n);
		}
		if (loss != NULL)
			loss[i] = (float)l;
		if (pq != NULL)
			pq[i] = (float)sqrt(d2);
		if (pred != NULL)
			pred[i] = am;
		obj += w * l;
	}
	return n > 0 ? obj / n : 0.0;
}

/* ---- SGD --------------------------------------------------------------- */

void
rv_k_sgd(size_t len, float *p, const float *grad, float *v, float lr,
    float mom, float wd, int nesterov)
{
	size_t j;

	/* Two loops, so neither carries a branch and both vectorise. */
	if (nesterov) {
		#pragma omp parallel for simd schedule(static) \
		    if (len > RV_K_PAR_MIN)
		for (j = 0; j < len; j++) {
			float g = grad[j] + wd * p[j];
			float vj = mom * v[j] + g;

			v[j] = vj;
			p[j] -= lr * (g + mom * vj);
		}
		return;
	}
	#pragma omp parallel for simd schedule(static) if (len > RV_K_PAR_MIN)
	for (j = 0; j < len; j++) {
		float g = grad[j] + wd * p[j];
		float vj = mom * v[j] + g;

		v[j] = vj;
		p[j] -= lr * vj;
	}
}
