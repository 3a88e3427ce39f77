/*
 * CPU kernels (nn_kern.h): every forward against a naive NCHW reference
 * with double sums, every backward against central finite differences of
 * L = sum(r .* y) (so dL/dy = r), softmax cross-entropy and SGD against
 * numbers from PyTorch 1.13, dropout masks keyed by sample id, and the
 * same bits for the same thread count (and across 1 and 2 threads).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "nn/nn_kern.h"
#include "unit.h"

/* ---- Helpers ----------------------------------------------------------- */

static float *
falloc(size_t n)
{
	float *p = calloc(n ? n : 1, sizeof(*p));

	if (p == NULL)
		abort();
	return p;
}

static double *
dalloc(size_t n)
{
	double *p = calloc(n ? n : 1, sizeof(*p));

	if (p == NULL)
		abort();
	return p;
}

static void
fill(struct rv_rng *r, float *v, size_t n, float lo, float hi)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = lo + (hi - lo) * (float)rv_rng_uniform(r);
}

/*
 * Distinct values start + gap * perm(i): no two closer than gap, so a
 * finite-difference step below gap / 2 never crosses a kink of max or,
 * with start chosen off the ladder's zero, of ReLU.
 */
static void
fill_ladder(struct rv_rng *r, float *v, size_t n, float start, float gap)
{
	uint64_t *perm = calloc(n ? n : 1, sizeof(*perm));
	size_t i;

	if (perm == NULL)
		abort();
	for (i = 0; i < n; i++)
		perm[i] = i;
	rv_rng_shuffle_u64(r, perm, n);
	for (i = 0; i < n; i++)
		v[i] = start + gap * (float)perm[i];
	free(perm);
}

static double
dot(const float *r, const float *y, size_t n)
{
	double s = 0.0;
	size_t i;

	for (i = 0; i < n; i++)
		s += (double)r[i] * y[i];
	return s;
}

/* CNHW [c][n][hw] -> NCHW [n][c][hw] and back. */
static void
to_nchw(int c, int n, int hw, const float *src, float *dst)
{
	int ch, i, p;

	for (ch = 0; ch < c; ch++)
		for (i = 0; i < n; i++)
			for (p = 0; p < hw; p++)
				dst[((size_t)i * c + ch) * hw + p] =
				    src[((size_t)ch * n + i) * hw + p];
}

static void
to_cnhw_d(int c, int n, int hw, const double *src, double *dst)
{
	int ch, i, p;

	for (ch = 0; ch < c; ch++)
		for (i = 0; i < n; i++)
			for (p = 0; p < hw; p++)
				dst[((size_t)ch * n + i) * hw + p] =
				    src[((size_t)i * c + ch) * hw + p];
}

/* |got - want| <= rel |want| + atol everywhere; reports the first miss. */
static int
near(const char *what, const float *got, const double *want, size_t n,
    double rel, double atol)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!(fabs(got[i] - want[i]) <= rel * fabs(want[i]) + atol)) {
			printf("# %s[%zu]: got %.9g want %.9g\n", what, i,
			    got[i], want[i]);
			return 0;
		}
	return 1;
}

typedef double (*loss_fn)(void *ctx);

/*
 * Central differences of f with respect to v[0..n), against the
 * analytic gradient g.  The step actually taken is measured in float, so
 * rounding of v +- eps does not bias the quotient.
 */
static int
fd_check(const char *what, float *v, size_t n, const float *g, loss_fn f,
    void *ctx, float eps)
{
	size_t i;
	int bad = 0;

	for (i = 0; i < n; i++) {
		float save = v[i], hi = save + eps, lo = save - eps;
		double lp, lm, num;

		v[i] = hi;
		lp = f(ctx);
		v[i] = lo;
		lm = f(ctx);
		v[i] = save;
		num = (lp - lm) / ((double)hi - lo);
		if (!(fabs(g[i] - num) <= 1e-2 * fabs(num) + 2e-3)) {
			if (bad++ < 3)
				printf("# %s[%zu]: analytic %.7g numeric "
				    "%.7g\n", what, i, g[i], num);
		}
	}
	return bad == 0;
}

/* ---- Input ------------------------------------------------------------- */

static void
test_input(void)
{
	enum { N = 2, H = 3, W = 4, C = 3 };
	const float mean[4] = { 0.5f, 0.25f, 0.125f, 0 };
	const float std[4] = { 0.25f, 0.5f, 2.0f, 1 };
	uint8_t px[N * H * W * C];
	float x[C * N * H * W];
	double want[C * N * H * W];
	int i, p, ch;

	for (i = 0; i < N * H * W * C; i++)
		px[i] = (uint8_t)(i * 37 + 11);
	px[0] = 0;
	px[1] = 255;
	rv_k_input(N, H, W, C, px, mean, std, x);
	for (ch = 0; ch < C; ch++)
		for (i = 0; i < N; i++)
			for (p = 0; p < H * W; p++)
				want[(ch * N + i) * H * W + p] =
				    (px[(i * H * W + p) * C + ch] / 255.0 -
				    mean[ch]) / std[ch];
	EXPECT(near("x", x, want, C * N * H * W, 1e-6, 1e-6));
}

/* ---- Convolution ------------------------------------------------------- */

static void
conv_geom(struct rv_conv_geom *g, int n, int ci, int h, int w, int co, int k,
    int s, int p)
{
	g->n = n;
	g->ci = ci;
	g->h = h;
	g->w = w;
	g->co = co;
	g->k = k;
	g->stride = s;
	g->pad = p;
	g->oh = (h + 2 * p - k) / s + 1;
	g->ow = (w + 2 * p - k) / s + 1;
}

/* One output of the convolution, NCHW x, in double. */
static double
ref_conv_at(const struct rv_conv_geom *g, const float *x, const float *w,
    int i, int o, int oy, int ox)
{
	int c, ki, kj, k = g->k;
	double s = 0.0;

	for (c = 0; c < g->ci; c++)
		for (ki = 0; ki < k; ki++)
			for (kj = 0; kj < k; kj++) {
				int iy = oy * g->stride - g->pad + ki;
				int ix = ox * g->stride - g->pad + kj;
				size_t xi = (((size_t)i * g->ci + c) * g->h +
				    iy) * g->w + ix;
				size_t wi = (((size_t)o * g->ci + c) * k +
				    ki) * k + kj;

				if (iy >= 0 && iy < g->h && ix >= 0 &&
				    ix < g->w)
					s += (double)x[xi] * w[wi];
			}
	return s;
}

/* NCHW in, NCHW out. */
static void
ref_conv(const struct rv_conv_geom *g, const float *x, const float *w,
    const float *b, double *y)
{
	int i, o, oy, ox;

	for (i = 0; i < g->n; i++)
		for (o = 0; o < g->co; o++)
			for (oy = 0; oy < g->oh; oy++)
				for (ox = 0; ox < g->ow; ox++)
					*y++ = ref_conv_at(g, x, w, i, o, oy,
					    ox) + (b != NULL ? b[o] : 0.0);
}

struct conv_ctx {
	const struct rv_conv_geom *g;
	float *x, *w, *b, *y, *ws;
	const float *r;
	size_t ny;
};

static double
conv_loss(void *arg)
{
	struct conv_ctx *c = arg;

	rv_k_conv_fwd(c->g, c->x, c->w, c->b, c->y, c->ws);
	return dot(c->r, c->y, c->ny);
}

static void
conv_case(struct rv_rng *r, int k, int s, int p, int bias)
{
	struct rv_conv_geom g;
	size_t nx, nw, ny, nws;
	float *x, *xn, *w, *b, *y, *ws, *dy, *dx, *dw, *db, *dw2;
	double *yn, *want;
	struct conv_ctx c;
	char what[64];

	conv_geom(&g, 2, 2, 6, 5, 3, k, s, p);
	nx = (size_t)g.ci * g.n * g.h * g.w;
	nw = (size_t)g.co * g.ci * k * k;
	ny = (size_t)g.co * g.n * g.oh * g.ow;
	nws = rv_k_conv_ws(&g);
	x = falloc(nx);
	xn = falloc(nx);
	w = falloc(nw);
	b = bias ? falloc(g.co) : NULL;
	y = falloc(ny);
	ws = falloc(nws);
	dy = falloc(ny);
	dx = falloc(nx);
	dw = falloc(nw);
	db = falloc(g.co);
	dw2 = falloc(nw);
	yn = dalloc(ny);
	want = dalloc(ny);
	fill(r, x, nx, -1, 1);
	fill(r, w, nw, -1, 1);
	if (b != NULL)
		fill(r, b, g.co, -1, 1);
	fill(r, dy, ny, -1, 1);
	snprintf(what, sizeof(what), "conv k%d s%d p%d b%d", k, s, p, bias);

	rv_k_conv_fwd(&g, x, w, b, y, ws);
	to_nchw(g.ci, g.n, g.h * g.w, x, xn);
	ref_conv(&g, xn, w, b, yn);
	to_cnhw_d(g.co, g.n, g.oh * g.ow, yn, want);
	EXPECT(near(what, y, want, ny, 1e-5, 1e-5));

	/* dx must be overwritten, not accumulated into. */
	fill(r, dx, nx, 5, 6);
	rv_k_conv_bwd(&g, x, w, dy, dx, dw, b != NULL ? db : NULL, ws);
	c.g = &g;
	c.x = x;
	c.w = w;
	c.b = b;
	c.y = y;
	c.ws = ws;
	c.r = dy;
	c.ny = ny;
	EXPECT(fd_check("conv dx", x, nx, dx, conv_loss, &c, 1e-2f));
	EXPECT(fd_check("conv dw", w, nw, dw, conv_loss, &c, 1e-2f));
	if (b != NULL)
		EXPECT(fd_check("conv db", b, g.co, db, conv_loss, &c, 1e-2f));

	/* Without dx and db, dw alone is the same. */
	rv_k_conv_bwd(&g, x, w, dy, NULL, dw2, NULL, ws);
	EXPECT(memcmp(dw, dw2, nw * sizeof(*dw)) == 0);

	free(x);
	free(xn);
	free(w);
	free(b);
	free(y);
	free(ws);
	free(dy);
	free(dx);
	free(dw);
	free(db);
	free(dw2);
	free(yn);
	free(want);
}

static void
test_conv(void)
{
	struct rv_rng r;
	int k, s, p, bias;

	rv_rng_init(&r, 1, 0, 0, 0, 0);
	for (k = 1; k <= 3; k += 2)
		for (s = 1; s <= 2; s++)
			for (p = 0; p <= 1; p++)
				for (bias = 0; bias <= 1; bias++)
					conv_case(&r, k, s, p, bias);
}

/* At least the column matrix; nothing for a small pointwise one. */
static void
test_conv_ws(void)
{
	struct rv_conv_geom g;

	conv_geom(&g, 2, 3, 7, 6, 4, 1, 1, 0);
	EXPECT_EQ(rv_k_conv_ws(&g), 0);
	conv_geom(&g, 2, 3, 7, 6, 4, 3, 1, 1);
	EXPECT(rv_k_conv_ws(&g) >= 3 * 9 * 2 * 7 * 6);
	conv_geom(&g, 2, 3, 7, 6, 4, 1, 2, 0);
	EXPECT(rv_k_conv_ws(&g) >= 3 * 2 * 4 * 3);
	conv_geom(&g, 128, 1, 28, 28, 32, 3, 1, 1);
	EXPECT(rv_k_conv_ws(&g) >= (size_t)9 * 128 * 28 * 28);
}

/* ---- Batch norm -------------------------------------------------------- */

enum { BN_C = 3, BN_N = 3, BN_HW = 25, BN_M = BN_N * BN_HW };

struct bn_ctx {
	float *x, *g, *b, *y, *mean, *invstd, *rm, *rv;
	const float *r;
};

static double
bn_loss(void *arg)
{
	struct bn_ctx *c = arg;

	rv_k_bn_fwd_train(BN_C, BN_M, c->x, c->g, c->b, c->y, c->mean,
	    c->invstd, c->rm, c->rv, 0.1f);
	return dot(c->r, c->y, BN_C * BN_M);
}

static void
test_bn_train(void)
{
	struct rv_rng r;
	float x[BN_C * BN_M], xn[BN_C * BN_M], y[BN_C * BN_M];
	float g[BN_C], b[BN_C], mean[BN_C], invstd[BN_C], rm[BN_C], rv[BN_C];
	double want[BN_C * BN_M], yn[BN_C * BN_M];
	double wm[BN_C], wis[BN_C], wrm[BN_C], wrv[BN_C];
	int ch, i, p;

	rv_rng_init(&r, 2, 0, 0, 0, 0);
	fill(&r, x, BN_C * BN_M, -1, 1);
	for (ch = 0; ch < BN_C; ch++) {
		for (i = 0; i < BN_M; i++)
			x[ch * BN_M + i] = x[ch * BN_M + i] * (ch + 1) +
			    3.0f * ch;
		g[ch] = 0.5f + ch;
		b[ch] = -0.25f * ch;
		rm[ch] = 0.1f * ch;
		rv[ch] = 1.0f + ch;
	}
	rv_k_bn_fwd_train(BN_C, BN_M, x, g, b, y, mean, invstd, rm, rv, 0.1f);

	/* The reference, per channel over (n, h, w) of NCHW. */
	to_nchw(BN_C, BN_N, BN_HW, x, xn);
	for (ch = 0; ch < BN_C; ch++) {
		double s = 0, v = 0;

		for (i = 0; i < BN_N; i++)
			for (p = 0; p < BN_HW; p++)
				s += xn[(i * BN_C + ch) * BN_HW + p];
		s /= BN_M;
		for (i = 0; i < BN_N; i++)
			for (p = 0; p < BN_HW; p++) {
				double d = xn[(i * BN_C + ch) * BN_HW + p] - s;

				v += d * d;
			}
		v /= BN_M;
		wm[ch] = s;
		wis[ch] = 1 / sqrt(v + 1e-5);
		wrm[ch] = 0.9 * 0.1 * ch + 0.1 * s;
		wrv[ch] = 0.9 * (1.0 + ch) + 0.1 * v * BN_M / (BN_M - 1);
		for (i = 0; i < BN_N; i++)
			for (p = 0; p < BN_HW; p++) {
				size_t o = (i * BN_C + ch) * BN_HW + p;

				yn[o] = (xn[o] - s) * wis[ch] * g[ch] + b[ch];
			}
	}
	to_cnhw_d(BN_C, BN_N, BN_HW, yn, want);
	EXPECT(near("bn y", y, want, BN_C * BN_M, 1e-5, 1e-5));
	EXPECT(near("bn mean", mean, wm, BN_C, 1e-6, 1e-6));
	EXPECT(near("bn invstd", invstd, wis, BN_C, 1e-6, 0));
	EXPECT(near("bn run_mean", rm, wrm, BN_C, 1e-6, 1e-7));
	EXPECT(near("bn run_var", rv, wrv, BN_C, 1e-6, 0));
}

static void
test_bn_eval(void)
{
	enum { C = 2, M = 10 };
	struct rv_rng r;
	float x[C * M], y[C * M];
	const float g[C] = { 1.5f, -0.5f }, b[C] = { 0.25f, 2 };
	const float rm[C] = { 0.3f, -1 }, rv[C] = { 2, 0.04f };
	double want[C * M];
	int ch, j;

	rv_rng_init(&r, 3, 0, 0, 0, 0);
	fill(&r, x, C * M, -2, 2);
	rv_k_bn_fwd_eval(C, M, x, g, b, rm, rv, y);
	for (ch = 0; ch < C; ch++)
		for (j = 0; j < M; j++)
			want[ch * M + j] = (x[ch * M + j] - rm[ch]) /
			    sqrt(rv[ch] + 1e-5) * g[ch] + b[ch];
	EXPECT(near("bn eval", y, want, C * M, 1e-5, 1e-6));
}

/* The gradient through the batch statistics. */
static void
test_bn_bwd(void)
{
	struct rv_rng r;
	float x[BN_C * BN_M], y[BN_C * BN_M], dy[BN_C * BN_M];
	float dx[BN_C * BN_M], t[BN_C * BN_M];
	float g[BN_C], b[BN_C], mean[BN_C], invstd[BN_C], rm[BN_C], rv[BN_C];
	float dg[BN_C], db[BN_C];
	struct bn_ctx c = { x, g, b, y, mean, invstd, rm, rv, dy };

	rv_rng_init(&r, 4, 0, 0, 0, 0);
	fill(&r, x, BN_C * BN_M, -1, 2);
	fill(&r, dy, BN_C * BN_M, -1, 1);
	fill(&r, g, BN_C, 0.5f, 1.5f);
	fill(&r, b, BN_C, -1, 1);
	memset(rm, 0, sizeof(rm));
	memset(rv, 0, sizeof(rv));
	bn_loss(&c);
	rv_k_bn_bwd(BN_C, BN_M, x, dy, g, mean, invstd, dx, dg, db);
	EXPECT(fd_check("bn dx", x, BN_C * BN_M, dx, bn_loss, &c, 5e-3f));
	EXPECT(fd_check("bn dgamma", g, BN_C, dg, bn_loss, &c, 5e-3f));
	EXPECT(fd_check("bn dbeta", b, BN_C, db, bn_loss, &c, 5e-3f));

	/* In place, y over x and dx over dy, the same bits. */
	bn_loss(&c);
	rv_k_bn_bwd(BN_C, BN_M, x, dy, g, mean, invstd, dx, dg, db);
	memcpy(t, dy, sizeof(t));
	rv_k_bn_bwd(BN_C, BN_M, x, t, g, mean, invstd, t, dg, db);
	EXPECT(memcmp(t, dx, sizeof(t)) == 0);
	memcpy(t, x, sizeof(t));
	rv_k_bn_fwd_train(BN_C, BN_M, t, g, b, t, mean, invstd, rm, rv, 0.1f);
	EXPECT(memcmp(t, y, sizeof(t)) == 0);
}

/* m == 1: no unbiased variance exists; the update stays finite. */
static void
test_bn_one(void)
{
	float x[2] = { 3, -1 }, y[2], g[2] = { 1, 1 }, b[2] = { 0, 0 };
	float mean[2], invstd[2], rm[2] = { 0, 0 }, rv[2] = { 1, 1 };

	rv_k_bn_fwd_train(2, 1, x, g, b, y, mean, invstd, rm, rv, 0.1f);
	EXPECT(y[0] == 0 && y[1] == 0);
	EXPECT(mean[0] == 3 && mean[1] == -1);
	EXPECT(fabsf(rv[0] - 0.9f) < 1e-6f && fabsf(rv[1] - 0.9f) < 1e-6f);
	EXPECT(fabsf(rm[0] - 0.3f) < 1e-6f);
}

/* ---- ReLU -------------------------------------------------------------- */

struct relu_ctx {
	float *x, *y;
	const float *r;
	size_t n;
};

static double
relu_loss(void *arg)
{
	struct relu_ctx *c = arg;

	rv_k_relu_fwd(c->n, c->x, c->y);
	return dot(c->r, c->y, c->n);
}

static void
test_relu(void)
{
	enum { N = 60 };
	struct rv_rng r;
	float x[N], y[N], dy[N], dx[N], t[N];
	double want[N];
	struct relu_ctx c = { x, y, dy, N };
	int i;

	rv_rng_init(&r, 5, 0, 0, 0, 0);
	fill_ladder(&r, x, N, -0.295f, 0.01f);
	fill(&r, dy, N, -1, 1);
	rv_k_relu_fwd(N, x, y);
	for (i = 0; i < N; i++)
		want[i] = x[i] > 0 ? x[i] : 0;
	EXPECT(near("relu", y, want, N, 0, 0));
	rv_k_relu_bwd(N, y, dy, dx);
	EXPECT(fd_check("relu dx", x, N, dx, relu_loss, &c, 1e-3f));

	/* In place, both ways. */
	memcpy(t, x, sizeof(t));
	rv_k_relu_fwd(N, t, t);
	EXPECT(memcmp(t, y, sizeof(t)) == 0);
	memcpy(t, dy, sizeof(t));
	rv_k_relu_bwd(N, y, t, t);
	EXPECT(memcmp(t, dx, sizeof(t)) == 0);
}

/* ---- Pools ------------------------------------------------------------- */

static void
pool_geom(struct rv_pool_geom *g, int c, int n, int h, int w, int k, int s,
    int p)
{
	g->c = c;
	g->n = n;
	g->h = h;
	g->w = w;
	g->k = k;
	g->stride = s;
	g->pad = p;
	g->oh = (h + 2 * p - k) / s + 1;
	g->ow = (w + 2 * p - k) / s + 1;
}

/* NCHW; avg != 0: mean over k*k with padding as zeros, else max. */
static void
ref_pool(const struct rv_pool_geom *g, int avg, const float *x, double *y)
{
	int i, ch, oy, ox, ki, kj;

	for (i = 0; i < g->n; i++)
		for (ch = 0; ch < g->c; ch++)
			for (oy = 0; oy < g->oh; oy++)
				for (ox = 0; ox < g->ow; ox++) {
					double s = avg ? 0 : -INFINITY;

					for (ki = 0; ki < g->k; ki++)
						for (kj = 0; kj < g->k; kj++) {
							int iy = oy * g->stride
							    - g->pad + ki;
							int ix = ox * g->stride
							    - g->pad + kj;
							double v;

							if (iy < 0 ||
							    iy >= g->h ||
							    ix < 0 ||
							    ix >= g->w)
								continue;
							v = x[((i * g->c + ch) *
							    g->h + iy) * g->w +
							    ix];
							if (avg)
								s += v;
							else if (v > s)
								s = v;
						}
					if (avg)
						s /= g->k * g->k;
					y[((i * g->c + ch) * g->oh + oy) *
					    g->ow + ox] = s;
				}
}

struct pool_ctx {
	const struct rv_pool_geom *g;
	int avg;
	float *x, *y;
	int32_t *am;
	const float *r;
	size_t ny;
};

static double
pool_loss(void *arg)
{
	struct pool_ctx *c = arg;

	if (c->avg)
		rv_k_avgpool_fwd(c->g, c->x, c->y);
	else
		rv_k_maxpool_fwd(c->g, c->x, c->y, c->am);
	return dot(c->r, c->y, c->ny);
}

static void
pool_case(struct rv_rng *r, int avg, int h, int w, int k, int s, int p)
{
	struct rv_pool_geom g;
	size_t nx, ny, hw, ohw, q, o;
	float *x, *xn, *y, *dy, *dx;
	int32_t *am;
	double *yn, *want;
	struct pool_ctx c;
	char what[64];

	pool_geom(&g, 2, 3, h, w, k, s, p);
	hw = (size_t)h * w;
	ohw = (size_t)g.oh * g.ow;
	nx = g.c * g.n * hw;
	ny = g.c * g.n * ohw;
	x = falloc(nx);
	xn = falloc(nx);
	y = falloc(ny);
	dy = falloc(ny);
	dx = falloc(nx);
	am = calloc(ny, sizeof(*am));
	yn = dalloc(ny);
	want = dalloc(ny);
	fill_ladder(r, x, nx, -1, 0.01f);
	fill(r, dy, ny, -1, 1);
	snprintf(what, sizeof(what), "%s %dx%d k%d s%d p%d",
	    avg ? "avgpool" : "maxpool", h, w, k, s, p);

	c.g = &g;
	c.avg = avg;
	c.x = x;
	c.y = y;
	c.am = am;
	c.r = dy;
	c.ny = ny;
	pool_loss(&c);
	to_nchw(g.c, g.n, h * w, x, xn);
	ref_pool(&g, avg, xn, yn);
	to_cnhw_d(g.c, g.n, g.oh * g.ow, yn, want);
	EXPECT(near(what, y, want, ny, 1e-6, 1e-6));
	fill(r, dx, nx, 5, 6);
	if (avg)
		rv_k_avgpool_bwd(&g, dy, dx);
	else {
		for (q = 0; q < (size_t)g.c * g.n; q++)
			for (o = 0; o < ohw; o++) {
				int32_t a = am[q * ohw + o];

				EXPECT(a >= 0 && (size_t)a < hw);
				if (a >= 0 && (size_t)a < hw)
					EXPECT(x[q * hw + a] ==
					    y[q * ohw + o]);
			}
		rv_k_maxpool_bwd(&g, dy, am, dx);
	}
	EXPECT(fd_check(what, x, nx, dx, pool_loss, &c, 2e-3f));

	free(x);
	free(xn);
	free(y);
	free(dy);
	free(dx);
	free(am);
	free(yn);
	free(want);
}

static void
test_pools(void)
{
	struct rv_rng r;
	int avg;

	rv_rng_init(&r, 6, 0, 0, 0, 0);
	for (avg = 0; avg <= 1; avg++) {
		pool_case(&r, avg, 6, 6, 2, 2, 0);
		pool_case(&r, avg, 7, 5, 2, 2, 0);
		pool_case(&r, avg, 7, 7, 3, 2, 1);
		pool_case(&r, avg, 5, 6, 3, 1, 1);
		pool_case(&r, avg, 5, 5, 2, 1, 1);
		pool_case(&r, avg, 6, 7, 3, 3, 0);
	}
}

/* NaN wins the window, as in torch; an all -inf window still has an
 * argmax inside it. */
static void
test_maxpool_special(void)
{
	struct rv_pool_geom g;
	float x[9], y[9];
	int32_t am[9];
	int q;

	/* The 2x2 fast path: one plane 2x4, two windows. */
	pool_geom(&g, 1, 1, 2, 4, 2, 2, 0);
	for (q = 0; q < 8; q++)
		x[q] = (float)q;
	x[1] = NAN;
	x[2] = x[3] = x[6] = x[7] = -INFINITY;
	rv_k_maxpool_fwd(&g, x, y, am);
	EXPECT(isnan(y[0]) && am[0] == 1);
	EXPECT(y[1] == -INFINITY && am[1] >= 0 && am[1] < 8);
	EXPECT(am[1] == 2 || am[1] == 3 || am[1] == 6 || am[1] == 7);

	/* The general path: 3x3, k3 s1 p1. */
	pool_geom(&g, 1, 1, 3, 3, 3, 1, 1);
	for (q = 0; q < 9; q++)
		x[q] = -INFINITY;
	x[8] = NAN;
	rv_k_maxpool_fwd(&g, x, y, am);
	EXPECT(y[0] == -INFINITY && am[0] >= 0 && am[0] <= 4);
	EXPECT(isnan(y[4]) && am[4] == 8);
	EXPECT(isnan(y[8]) && am[8] == 8);
}

struct gap_ctx {
	float *x, *y;
	const float *r;
};

enum { GAP_C = 3, GAP_N = 2, GAP_HW = 20 };

static double
gap_loss(void *arg)
{
	struct gap_ctx *c = arg;

	rv_k_gap_fwd(GAP_C, GAP_N, GAP_HW, c->x, c->y);
	return dot(c->r, c->y, GAP_C * GAP_N);
}

static void
test_gap(void)
{
	struct rv_rng r;
	float x[GAP_C * GAP_N * GAP_HW], xn[GAP_C * GAP_N * GAP_HW];
	float dx[GAP_C * GAP_N * GAP_HW], y[GAP_C * GAP_N], dy[GAP_C * GAP_N];
	double yn[GAP_C * GAP_N], want[GAP_C * GAP_N];
	struct gap_ctx c = { x, y, dy };
	int i, ch, p;

	rv_rng_init(&r, 7, 0, 0, 0, 0);
	fill(&r, x, GAP_C * GAP_N * GAP_HW, -1, 1);
	fill(&r, dy, GAP_C * GAP_N, -1, 1);
	rv_k_gap_fwd(GAP_C, GAP_N, GAP_HW, x, y);
	to_nchw(GAP_C, GAP_N, GAP_HW, x, xn);
	for (i = 0; i < GAP_N; i++)
		for (ch = 0; ch < GAP_C; ch++) {
			double s = 0;

			for (p = 0; p < GAP_HW; p++)
				s += xn[(i * GAP_C + ch) * GAP_HW + p];
			yn[i * GAP_C + ch] = s / GAP_HW;
		}
	to_cnhw_d(GAP_C, GAP_N, 1, yn, want);
	EXPECT(near("gap", y, want, GAP_C * GAP_N, 1e-6, 1e-7));
	rv_k_gap_bwd(GAP_C, GAP_N, GAP_HW, dy, dx);
	EXPECT(fd_check("gap dx", x, GAP_C * GAP_N * GAP_HW, dx, gap_loss, &c,
	    1e-2f));
}

/* ---- Linear ------------------------------------------------------------ */

struct lin_ctx {
	int ci, n, hw, out;
	float *x, *w, *b, *y, *ws;
	const float *r;
};

static double
lin_loss(void *arg)
{
	struct lin_ctx *c = arg;

	rv_k_linear_fwd(c->ci, c->n, c->hw, c->out, c->x, c->w, c->b, c->y,
	    c->ws);
	return dot(c->r, c->y, (size_t)c->out * c->n);
}

static void
linear_case(struct rv_rng *r, int ci, int n, int hw, int out, int bias)
{
	size_t f = (size_t)ci * hw, nx = f * n, nw = f * out, ny = out * n;
	float *x = falloc(nx), *xn = falloc(nx), *w = falloc(nw);
	float *b = bias ? falloc(out) : NULL, *y = falloc(ny);
	float *ws = falloc(rv_k_linear_ws(ci, n, hw)), *dy = falloc(ny);
	float *dx = falloc(nx), *dw = falloc(nw), *db = falloc(out);
	float *dw2 = falloc(nw);
	double *want = dalloc(ny);
	struct lin_ctx c = { ci, n, hw, out, x, w, b, y, ws, dy };
	char what[64];
	int i, o;
	size_t j;

	EXPECT_EQ(rv_k_linear_ws(ci, n, hw), nx);
	fill(r, x, nx, -1, 1);
	fill(r, w, nw, -1, 1);
	if (b != NULL)
		fill(r, b, out, -1, 1);
	fill(r, dy, ny, -1, 1);
	snprintf(what, sizeof(what), "linear ci%d hw%d b%d", ci, hw, bias);

	lin_loss(&c);
	/* NCHW flattened per sample in (c, h, w) order, as torch. */
	to_nchw(ci, n, hw, x, xn);
	for (o = 0; o < out; o++)
		for (i = 0; i < n; i++) {
			double s = b != NULL ? b[o] : 0;

			for (j = 0; j < f; j++)
				s += (double)w[o * f + j] * xn[i * f + j];
			want[(size_t)o * n + i] = s;
		}
	EXPECT(near(what, y, want, ny, 1e-5, 1e-5));

	fill(r, dx, nx, 5, 6);
	rv_k_linear_bwd(ci, n, hw, out, w, dy, dx, dw, b != NULL ? db : NULL,
	    ws);
	rv_k_linear_bwd(ci, n, hw, out, w, dy, NULL, dw2, NULL, ws);
	EXPECT(memcmp(dw, dw2, nw * sizeof(*dw)) == 0);
	EXPECT(fd_check("linear dx", x, nx, dx, lin_loss, &c, 1e-2f));
	EXPECT(fd_check("linear dw", w, nw, dw, lin_loss, &c, 1e-2f));
	if (b != NULL)
		EXPECT(fd_check("linear db", b, out, db, lin_loss, &c, 1e-2f));

	free(x);
	free(xn);
	free(w);
	free(b);
	free(y);
	free(ws);
	free(dy);
	free(dx);
	free(dw);
	free(db);
	free(dw2);
	free(want);
}

static void
test_linear(void)
{
	struct rv_rng r;

	rv_rng_init(&r, 8, 0, 0, 0, 0);
	linear_case(&r, 3, 3, 6, 4, 1);
	linear_case(&r, 2, 2, 9, 5, 0);
	linear_case(&r, 5, 3, 1, 4, 1);
	linear_case(&r, 7, 2, 1, 3, 0);
}

/* ---- Dropout ----------------------------------------------------------- */

enum { DR_C = 4, DR_N = 3, DR_HW = 5, DR_LEN = DR_C * DR_N * DR_HW };

/* The mask follows the sample's id, not its place in the batch. */
static void
test_dropout_ids(void)
{
	const uint64_t ida[DR_N] = { 11, 22, 1ull << 40 };
	const uint64_t idb[DR_N] = { 1ull << 40, 11, 22 };
	const int pos[DR_N] = { 1, 2, 0 };	/* ida[i] == idb[pos[i]] */
	struct rv_rng r;
	float x[DR_LEN], ya[DR_LEN], yb[DR_LEN], ma[DR_LEN], mb[DR_LEN];
	float p = 0.4f, scale = 1.0f / (1.0f - p);
	int ch, i, j, ok = 1;

	rv_rng_init(&r, 9, 0, 0, 0, 0);
	fill(&r, x, DR_LEN, -1, 1);
	rv_k_dropout_fwd(DR_C, DR_N, DR_HW, p, 42, 7, 1000, ida, x, ya, ma);
	rv_k_dropout_fwd(DR_C, DR_N, DR_HW, p, 42, 7, 1000, idb, x, yb, mb);
	for (ch = 0; ch < DR_C; ch++)
		for (i = 0; i < DR_N; i++) {
			struct rv_rng d;

			/* The documented draw order. */
			rv_rng_init(&d, 42, RV_STAGE_TRAIN, 7, 1000, ida[i]);
			for (j = 0; j < ch * DR_HW; j++)
				rv_rng_uniform(&d);
			for (j = 0; j < DR_HW; j++) {
				size_t a = (ch * DR_N + i) * DR_HW + j;
				size_t b = (ch * DR_N + pos[i]) * DR_HW + j;
				float want = rv_rng_uniform(&d) < p ? 0 : scale;

				ok &= ma[a] == want && mb[b] == want;
				ok &= ya[a] == x[a] * want;
			}
		}
	EXPECT(ok);

	/* Another step, op or seed: another mask. */
	rv_k_dropout_fwd(DR_C, DR_N, DR_HW, p, 42, 7, 1001, ida, x, yb, mb);
	EXPECT(memcmp(mb, ma, sizeof(mb)) != 0);
	rv_k_dropout_fwd(DR_C, DR_N, DR_HW, p, 42, 8, 1000, ida, x, yb, mb);
	EXPECT(memcmp(mb, ma, sizeof(mb)) != 0);
	rv_k_dropout_fwd(DR_C, DR_N, DR_HW, p, 43, 7, 1000, ida, x, yb, mb);
	EXPECT(memcmp(mb, ma, sizeof(mb)) != 0);
}

static void
test_dropout_rate(void)
{
	enum { C = 16, N = 8, HW = 64, LEN = C * N * HW };
	uint64_t ids[N];
	float *x = falloc(LEN), *y = falloc(LEN), *m = falloc(LEN);
	float *dy = falloc(LEN), *dx = falloc(LEN);
	float *y1 = falloc(LEN), *m1 = falloc(LEN);
	struct rv_rng r;
	size_t zero = 0, j;
	int i, ok = 1;

	for (i = 0; i < N; i++)
		ids[i] = 1000 + 17 * i;
	rv_rng_init(&r, 10, 0, 0, 0, 0);
	fill(&r, x, LEN, -1, 1);
	fill(&r, dy, LEN, -1, 1);
	rv_k_dropout_fwd(C, N, HW, 0.3f, 5, 1, 3, ids, x, y, m);
	for (j = 0; j < LEN; j++) {
		zero += m[j] == 0;
		ok &= m[j] == 0 || m[j] == 1.0f / (1.0f - 0.3f);
	}
	EXPECT(ok);
	/* sd of the fraction is sqrt(0.21 / 8192) = 0.005. */
	EXPECT(fabs((double)zero / LEN - 0.3) < 0.025);

	/* Big enough for threads: the same bits with one. */
	rv_k_threads(1);
	rv_k_dropout_fwd(C, N, HW, 0.3f, 5, 1, 3, ids, x, y1, m1);
	rv_k_threads(2);
	EXPECT(memcmp(m1, m, LEN * sizeof(*m)) == 0);
	EXPECT(memcmp(y1, y, LEN * sizeof(*y)) == 0);

	rv_k_dropout_bwd(LEN, m, dy, dx);
	for (j = 0; j < LEN; j++)
		ok &= dx[j] == m[j] * dy[j];
	EXPECT(ok);

	/* p = 0 is the identity. */
	rv_k_dropout_fwd(C, N, HW, 0, 5, 1, 3, ids, x, y, m);
	EXPECT(memcmp(x, y, LEN * sizeof(*x)) == 0);

	free(x);
	free(y);
	free(m);
	free(dy);
	free(dx);
	free(y1);
	free(m1);
}

/* ---- Softmax cross-entropy --------------------------------------------- */

/*
 * Expected values from torch 1.13, printed (loss, obj, pq, dz per ls) by
 *
 * /usr/bin/python3 -c '
 * import torch, torch.nn.functional as F
 * Z = [[2, -1, .5, 3], [.1, .2, .3, .4], [-2, 1.5, 1.5, -.5]]
 * y = torch.tensor([3, 0, 2]); w = torch.tensor([1, .5, 2])
 * for ls in 0.0, 0.1:
 *     z = torch.tensor(Z, requires_grad=True)
 *     loss = F.cross_entropy(z, y, label_smoothing=ls, reduction="none")
 *     obj = (w * loss).mean(); obj.backward()
 *     q = ls / 4 + (1 - ls) * F.one_hot(y, 4)
 *     pq = (z.softmax(1) - q).norm(dim=1)
 *     for v in loss, obj.reshape(1), pq, z.grad.t().reshape(-1):
 *         print(", ".join("%.9g" % e for e in v.tolist()))
 * '
 */
static const float ce_z_nk[3][4] = {
	{ 2.0f, -1.0f, 0.5f, 3.0f },
	{ 0.1f, 0.2f, 0.3f, 0.4f },
	{ -2.0f, 1.5f, 1.5f, -0.5f },
};
static const int32_t ce_y[3] = { 3, 0, 2 };
static const float ce_w[3] = { 1.0f, 0.5f, 2.0f };
static const struct {
	float ls;
	double loss[3], obj, pq[3], dz[12];
} ce_want[2] = {
	{ 0.0f,
	  { 0.384091705, 1.54253554, 0.772666335 }, 0.900230706,
	  { 0.409602225, 0.908535719, 0.712054491 },
	  { 0.0835170895, -0.131026968, 0.00929636788, 0.00415807031,
	    0.03938796, 0.30785346, 0.0186351836, 0.0435304306,
	    -0.358813226, -0.106310353, 0.0481085628, 0.0416634306 } },
	{ 0.1f,
	  { 0.571591675, 1.52753544, 0.910166383 }, 1.05189741,
	  { 0.333897829, 0.822012603, 0.637869537 },
	  { 0.0751837566, -0.118526965, -0.00737029966, -0.00417526346,
	    0.0352212898, 0.29118678, 0.0103018507, 0.0393637605,
	    -0.308813214, -0.0813103467, 0.0439418927, 0.0249967612 } },
};

static void
test_softmax_torch(void)
{
	float z[12], loss[3], dz[12], pq[3], loss1[3];
	int32_t pred[3];
	double obj;
	int t, i, j;

	for (j = 0; j < 4; j++)
		for (i = 0; i < 3; i++)
			z[j * 3 + i] = ce_z_nk[i][j];
	for (t = 0; t < 2; t++) {
		obj = rv_k_softmax_ce(4, 3, z, ce_y, ce_w, ce_want[t].ls, loss,
		    dz, pq, pred);
		EXPECT(fabs(obj - ce_want[t].obj) < 1e-6);
		EXPECT(near("ce loss", loss, ce_want[t].loss, 3, 1e-6, 1e-7));
		EXPECT(near("ce pq", pq, ce_want[t].pq, 3, 1e-6, 1e-7));
		EXPECT(near("ce dz", dz, ce_want[t].dz, 12, 1e-5, 1e-7));
		/* Ties go to the first: sample 2 has 1.5 twice. */
		EXPECT(pred[0] == 3 && pred[1] == 3 && pred[2] == 1);

		/* Weights 1 without wt, and every output optional. */
		obj = rv_k_softmax_ce(4, 3, z, ce_y, NULL, ce_want[t].ls,
		    loss1, NULL, NULL, NULL);
		EXPECT(fabs(obj - (ce_want[t].loss[0] + ce_want[t].loss[1] +
		    ce_want[t].loss[2]) / 3) < 1e-6);
		EXPECT(memcmp(loss, loss1, sizeof(loss)) == 0);
	}
}

/* Huge logits stay finite: the max is taken out before exp. */
static void
test_softmax_stable(void)
{
	/* [k][n]: both samples have logits (1000, -1000, 0). */
	const float z[3 * 2] = { 1000, 1000, -1000, -1000, 0, 0 };
	const int32_t y[2] = { 0, 1 };
	float loss[2], dz[6], pq[2];
	double obj;

	obj = rv_k_softmax_ce(3, 2, z, y, NULL, 0, loss, dz, pq, NULL);
	EXPECT(isfinite(obj));
	EXPECT(fabsf(loss[0]) < 1e-6f);
	EXPECT(fabsf(loss[1] - 2000) < 1e-3f);
	EXPECT(fabsf(dz[1] - 0.5f) < 1e-6f && fabsf(dz[3] + 0.5f) < 1e-6f);
	EXPECT(fabsf(pq[1] - sqrtf(2)) < 1e-6f);
}

struct ce_ctx {
	int k, n;
	float *z;
	const int32_t *y;
	const float *w;
	float ls;
};

static double
ce_loss(void *arg)
{
	struct ce_ctx *c = arg;

	return rv_k_softmax_ce(c->k, c->n, c->z, c->y, c->w, c->ls, NULL,
	    NULL, NULL, NULL);
}

static void
test_softmax_fd(void)
{
	enum { K = 5, N = 4 };
	const int32_t y[N] = { 0, 4, 2, 2 };
	float z[K * N], w[N], dz[K * N];
	struct ce_ctx c = { K, N, z, y, w, 0.2f };
	struct rv_rng r;

	rv_rng_init(&r, 11, 0, 0, 0, 0);
	fill(&r, z, K * N, -3, 3);
	fill(&r, w, N, 0.2f, 3);
	rv_k_softmax_ce(K, N, z, y, w, 0.2f, NULL, dz, NULL, NULL);
	EXPECT(fd_check("ce dz", z, K * N, dz, ce_loss, &c, 1e-2f));
}

/* ---- SGD --------------------------------------------------------------- */

/*
 * Expected values from torch 1.13, one line a case, printed by
 *
 * /usr/bin/python3 -c '
 * import torch
 * G = [[.1, -.2, .3, -.4], [-.05, .15, .25, .35], [.2, .2, -.1, 0]]
 * for kw in [dict(lr=.1), dict(lr=.1, momentum=.9),
 *     dict(lr=.1, momentum=.9, nesterov=True),
 *     dict(lr=.1, momentum=.9, weight_decay=.01),
 *     dict(lr=.05, momentum=.8, weight_decay=.1, nesterov=True),
 *     dict(lr=.1, weight_decay=.05)]:
 *     p = torch.nn.Parameter(torch.tensor([.5, -1.25, 2, 0]))
 *     opt = torch.optim.SGD([p], **kw)
 *     for g in G:
 *         p.grad = torch.tensor(g); opt.step()
 *     print(", ".join("%.9g" % e for e in p.tolist()))
 * '
 */
static void
test_sgd(void)
{
	static const float p0[4] = { 0.5f, -1.25f, 2.0f, 0.0f };
	static const float gr[3][4] = {
		{ 0.1f, -0.2f, 0.3f, -0.4f },
		{ -0.05f, 0.15f, 0.25f, 0.35f },
		{ 0.2f, 0.2f, -0.1f, 0.0f },
	};
	static const struct {
		float lr, mom, wd;
		int nesterov;
		double want[4];
	} cases[] = {
		{ 0.1f, 0, 0, 0,
		  { 0.474999994, -1.26499999, 1.95500004, 0.00500000268 } },
		{ 0.1f, 0.9f, 0, 0,
		  { 0.462399989, -1.24430001, 1.88119996, 0.0419000015 } },
		{ 0.1f, 0.9f, 0, 1,
		  { 0.441159993, -1.25987005, 1.84807992, 0.0427099988 } },
		{ 0.1f, 0.9f, 0.01f, 0,
		  { 0.45963037, -1.2373544, 1.87012863, 0.0417830423 } },
		{ 0.05f, 0.8f, 0.1f, 1,
		  { 0.455688298, -1.21252108, 1.86375892, 0.0157480221 } },
		{ 0.1f, 0, 0.05f, 0,
		  { 0.467612177, -1.24646807, 1.92557395, 0.00477600237 } },
	};
	size_t t;
	int s;

	for (t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
		float p[4], v[4] = { 0 };

		memcpy(p, p0, sizeof(p));
		for (s = 0; s < 3; s++)
			rv_k_sgd(4, p, gr[s], v, cases[t].lr, cases[t].mom,
			    cases[t].wd, cases[t].nesterov);
		EXPECT(near("sgd", p, cases[t].want, 4, 1e-6, 1e-7));
	}
}

/* ---- Determinism ------------------------------------------------------- */

struct conv_run {
	float *y, *dx, *dw, *db;
};

static void
conv_run(const struct rv_conv_geom *g, const float *x, const float *w,
    const float *b, const float *dy, float *ws, struct conv_run *o)
{
	rv_k_conv_fwd(g, x, w, b, o->y, ws);
	rv_k_conv_bwd(g, x, w, dy, o->dx, o->dw, o->db, ws);
}

/* One weight's gradient by its definition, NCHW x and dy, in double. */
static double
ref_conv_dw_at(const struct rv_conv_geom *g, const float *x,
    const float *dy, int o, int c, int ki, int kj)
{
	int i, oy, ox;
	double s = 0.0;

	for (i = 0; i < g->n; i++)
		for (oy = 0; oy < g->oh; oy++)
			for (ox = 0; ox < g->ow; ox++) {
				int iy = oy * g->stride - g->pad + ki;
				int ix = ox * g->stride - g->pad + kj;
				size_t xi = (((size_t)i * g->ci + c) * g->h +
				    iy) * g->w + ix;
				size_t yi = (((size_t)i * g->co + o) * g->oh +
				    oy) * g->ow + ox;

				if (iy >= 0 && iy < g->h && ix >= 0 &&
				    ix < g->w)
					s += (double)dy[yi] * x[xi];
			}
	return s;
}

static void
ref_conv_dw(const struct rv_conv_geom *g, const float *x, const float *dy,
    double *dw)
{
	int o, c, ki, kj;

	for (o = 0; o < g->co; o++)
		for (c = 0; c < g->ci; c++)
			for (ki = 0; ki < g->k; ki++)
				for (kj = 0; kj < g->k; kj++)
					*dw++ = ref_conv_dw_at(g, x, dy, o, c,
					    ki, kj);
}

/* One input's gradient by its definition, NCHW dy, in double. */
static double
ref_conv_dx_at(const struct rv_conv_geom *g, const float *w,
    const float *dy, int i, int c, int iy, int ix)
{
	int o, ki, kj, k = g->k;
	double s = 0.0;

	for (o = 0; o < g->co; o++)
		for (ki = 0; ki < k; ki++)
			for (kj = 0; kj < k; kj++) {
				int ty = iy + g->pad - ki, tx = ix + g->pad - kj;
				int oy = ty / g->stride, ox = tx / g->stride;

				if (ty < 0 || tx < 0 || ty % g->stride != 0 ||
				    tx % g->stride != 0 || oy >= g->oh ||
				    ox >= g->ow)
					continue;
				s += (double)dy[(((size_t)i * g->co + o) *
				    g->oh + oy) * g->ow + ox] *
				    w[(((size_t)o * g->ci + c) * k + ki) * k + kj];
			}
	return s;
}

/* NCHW dy in, NCHW dx out. */
static void
ref_conv_dx(const struct rv_conv_geom *g, const float *w, const float *dy,
    double *dx)
{
	int i, c, iy, ix;

	for (i = 0; i < g->n; i++)
		for (c = 0; c < g->ci; c++)
			for (iy = 0; iy < g->h; iy++)
				for (ix = 0; ix < g->w; ix++)
					*dx++ = ref_conv_dx_at(g, w, dy, i, c,
					    iy, ix);
}

/*
 * What the CPU kernels promise about threads (rv-train-gpu(1),
 * DETERMINISM): the same thread count gives the same bits, run after run,
 * whatever OpenBLAS kernel the machine or OPENBLAS_CORETYPE selects.
 * Another thread count may change the last bits where a GEMM is
 * OpenBLAS's to partition (which OpenBLAS does by thread count and core
 * type: with OPENBLAS_CORETYPE=Haswell on an AVX-512 machine one and two
 * threads differ), so across counts every result is only held to its
 * definition.  dw's split over the batch is rv's own partition, fixed by
 * the shape (`split`): that one is the same bits for any count.
 * The runs: 1, 2, 2, 1 threads.
 */
static void
conv_threads_case(int n, int ci, int hw, int co, int k, int pad, int split)
{
	struct rv_conv_geom g;
	struct rv_rng r;
	size_t nx, nw, ny;
	float *x, *xn, *w, *b, *dy, *dyn, *ws;
	double *wy, *wdx, *wdw, *tmp;
	struct conv_run o[4];
	int t;

	conv_geom(&g, n, ci, hw, hw, co, k, 1, pad);
	nx = (size_t)g.ci * g.n * g.h * g.w;
	nw = (size_t)g.co * g.ci * k * k;
	ny = (size_t)g.co * g.n * g.oh * g.ow;
	x = falloc(nx);
	xn = falloc(nx);
	w = falloc(nw);
	b = falloc(g.co);
	dy = falloc(ny);
	dyn = falloc(ny);
	ws = falloc(rv_k_conv_ws(&g));
	wy = dalloc(ny);
	wdx = dalloc(nx);
	wdw = dalloc(nw);
	tmp = dalloc(nx > ny ? nx : ny);
	rv_rng_init(&r, 12, 0, 0, 0, 0);
	fill(&r, x, nx, -1, 1);
	fill(&r, w, nw, -1, 1);
	fill(&r, b, g.co, -1, 1);
	fill(&r, dy, ny, -1, 1);
	for (t = 0; t < 4; t++) {
		o[t].y = falloc(ny);
		o[t].dx = falloc(nx);
		o[t].dw = falloc(nw);
		o[t].db = falloc(g.co);
		rv_k_threads(t == 0 || t == 3 ? 1 : 2);
		conv_run(&g, x, w, b, dy, ws, &o[t]);
	}
	rv_k_threads(2);
	/* The same count, the same bits. */
	for (t = 0; t < 2; t++) {
		const struct conv_run *a = &o[t], *c = &o[3 - t];

		EXPECT(memcmp(a->y, c->y, ny * sizeof(float)) == 0);
		EXPECT(memcmp(a->dx, c->dx, nx * sizeof(float)) == 0);
		EXPECT(memcmp(a->dw, c->dw, nw * sizeof(float)) == 0);
		EXPECT(memcmp(a->db, c->db, g.co * sizeof(float)) == 0);
	}
	/* rv's own partitions: the same bits for any count. */
	EXPECT(memcmp(o[0].db, o[1].db, g.co * sizeof(float)) == 0);
	if (split)
		EXPECT(memcmp(o[0].dw, o[1].dw, nw * sizeof(float)) == 0);
	/* Every count: the definition. */
	to_nchw(g.ci, g.n, g.h * g.w, x, xn);
	to_nchw(g.co, g.n, g.oh * g.ow, dy, dyn);
	ref_conv(&g, xn, w, b, tmp);
	to_cnhw_d(g.co, g.n, g.oh * g.ow, tmp, wy);
	ref_conv_dx(&g, w, dyn, tmp);
	to_cnhw_d(g.ci, g.n, g.h * g.w, tmp, wdx);
	ref_conv_dw(&g, xn, dyn, wdw);
	for (t = 0; t < 2; t++) {
		EXPECT(near("conv y", o[t].y, wy, ny, 1e-4, 1e-4));
		EXPECT(near("conv dx", o[t].dx, wdx, nx, 1e-4, 1e-4));
		EXPECT(near("conv dw", o[t].dw, wdw, nw, 1e-4, 1e-4));
	}
	for (t = 0; t < 4; t++) {
		free(o[t].y);
		free(o[t].dx);
		free(o[t].dw);
		free(o[t].db);
	}
	free(x);
	free(xn);
	free(w);
	free(b);
	free(dy);
	free(dyn);
	free(ws);
	free(wy);
	free(wdx);
	free(wdw);
	free(tmp);
}

/*
 * A 3x3 layer with few positions (OpenBLAS partitions every GEMM), then
 * the two shapes whose dw is split over the batch (a first layer's few
 * weights over many positions; a pointwise one).
 */
static void
test_conv_threads(void)
{
	conv_threads_case(4, 8, 12, 16, 3, 1, 0);
	conv_threads_case(4, 2, 48, 8, 3, 1, 1);
	conv_threads_case(4, 4, 48, 8, 1, 0, 1);
}

static void
test_bn_threads(void)
{
	enum { C = 6, M = 8009 };	/* parallel, and a ragged tail */
	float *x = falloc(C * M), *dy = falloc(C * M), *y[2], *dx[2];
	float g[C], b[C], mean[2][C], is[2][C], rm[2][C], rv[2][C];
	float dg[2][C], db[2][C];
	struct rv_rng r;
	int t;

	rv_rng_init(&r, 13, 0, 0, 0, 0);
	fill(&r, x, C * M, -3, 5);
	fill(&r, dy, C * M, -1, 1);
	fill(&r, g, C, 0.5f, 2);
	fill(&r, b, C, -1, 1);
	for (t = 0; t < 2; t++) {
		y[t] = falloc(C * M);
		dx[t] = falloc(C * M);
		memset(rm[t], 0, sizeof(rm[t]));
		memset(rv[t], 0, sizeof(rv[t]));
		rv_k_threads(t + 1);
		rv_k_bn_fwd_train(C, M, x, g, b, y[t], mean[t], is[t], rm[t],
		    rv[t], 0.1f);
		rv_k_bn_bwd(C, M, x, dy, g, mean[t], is[t], dx[t], dg[t],
		    db[t]);
	}
	EXPECT(memcmp(y[0], y[1], C * M * sizeof(float)) == 0);
	EXPECT(memcmp(dx[0], dx[1], C * M * sizeof(float)) == 0);
	EXPECT(memcmp(mean[0], mean[1], sizeof(mean[0])) == 0);
	EXPECT(memcmp(is[0], is[1], sizeof(is[0])) == 0);
	EXPECT(memcmp(rv[0], rv[1], sizeof(rv[0])) == 0);
	EXPECT(memcmp(dg[0], dg[1], sizeof(dg[0])) == 0);
	EXPECT(memcmp(db[0], db[1], sizeof(db[0])) == 0);
	for (t = 0; t < 2; t++) {
		free(y[t]);
		free(dx[t]);
	}
	free(x);
	free(dy);
}

int
main(void)
{
	rv_k_threads(2);
	RUN(test_input);
	RUN(test_conv);
	RUN(test_conv_ws);
	RUN(test_bn_train);
	RUN(test_bn_eval);
	RUN(test_bn_bwd);
	RUN(test_bn_one);
	RUN(test_relu);
	RUN(test_pools);
	RUN(test_maxpool_special);
	RUN(test_gap);
	RUN(test_linear);
	RUN(test_dropout_ids);
	RUN(test_dropout_rate);
	RUN(test_softmax_torch);
	RUN(test_softmax_stable);
	RUN(test_softmax_fd);
	RUN(test_sgd);
	RUN(test_conv_threads);
	RUN(test_bn_threads);
	return UNIT_DONE();
}
