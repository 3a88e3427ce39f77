/*
 * Convolution plans (nn_conv.h) against the im2col + OpenBLAS kernels
 * they replace (rv_k_conv_fwd/bwd): the same values within 1e-4 of the
 * largest for a spread of geometries (both the oneDNN and the fallback
 * paths), batch sizes changing between calls, the same bits on a repeat,
 * NULL dx and db, and a clean failure on bad geometries and batch sizes.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/rng.h"
#include "nn/nn_conv.h"
#include "nn/nn_kern.h"
#include "unit.h"

#define TOL	1e-4

static float *
falloc(size_t n)
{
	float *p = calloc(n ? n : 1, sizeof(*p));

	if (p == NULL)
		abort();
	return p;
}

static void
fill(struct rv_rng *r, float *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = (float)(2 * rv_rng_uniform(r) - 1);
}

/* Garbage in an output, so a plan that skips writing it is caught. */
static void
poison(float *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = NAN;
}

/* max |a - b| <= TOL max |b|, printing the figures when not. */
static int
close_to(const char *what, const float *a, const float *b, size_t n)
{
	double m = 0, r = 0, e;
	size_t i;

	for (i = 0; i < n; i++) {
		e = fabs((double)a[i] - b[i]);
		if (!(e <= m))
			m = e;
		if (fabs(b[i]) > r)
			r = fabs(b[i]);
	}
	if (m <= TOL * (r > 1e-30 ? r : 1e-30))
		return 1;
	printf("# %s: max |diff| %g, max |ref| %g\n", what, m, r);
	return 0;
}

static struct rv_conv_geom
geom(int n, int ci, int h, int w, int co, int k, int s, int p)
{
	struct rv_conv_geom g = {
		.n = n, .ci = ci, .h = h, .w = w, .co = co, .k = k,
		.stride = s, .pad = p,
		.oh = (h + 2 * p - k) / s + 1, .ow = (w + 2 * p - k) / s + 1
	};

	return g;
}

/*
 * One geometry with batches of the sizes in ns (the largest first, as
 * the plan's g->n), against the kernels at each size.
 */
static void
check_geom(struct rv_conv_geom g, int bias, const int *ns, int nn)
{
	size_t xl = (size_t)g.ci * g.n * g.h * g.w;
	size_t yl = (size_t)g.co * g.n * g.oh * g.ow;
	size_t wl = (size_t)g.co * g.ci * g.k * g.k;
	float *x = falloc(xl), *w = falloc(wl), *b = falloc(g.co);
	float *dy = falloc(yl), *ws = falloc(rv_k_conv_ws(&g));
	float *y0 = falloc(yl), *dx0 = falloc(xl), *dw0 = falloc(wl);
	float *db0 = falloc(g.co), *y1 = falloc(yl), *dx1 = falloc(xl);
	float *dw1 = falloc(wl), *db1 = falloc(g.co), *y2 = falloc(yl);
	float *dx2 = falloc(xl), *dw2 = falloc(wl), *db2 = falloc(g.co);
	struct rv_conv_plan *p;
	struct rv_rng r;
	int i;

	rv_rng_init(&r, 7, 0, (uint32_t)(g.k * 100 + g.ci), 0, (uint64_t)g.co);
	fill(&r, x, xl);
	fill(&r, w, wl);
	fill(&r, b, g.co);
	fill(&r, dy, yl);
	p = rv_conv_plan_new(&g);
	EXPECT(p != NULL);
	if (p == NULL) {
		printf("# %s\n", rv_errmsg());
		goto out;
	}
	for (i = 0; i < nn; i++) {
		struct rv_conv_geom gn = g;
		int n = ns[i];
		size_t xn, yn;

		gn.n = n;
		xn = (size_t)g.ci * n * g.h * g.w;
		yn = (size_t)g.co * n * g.oh * g.ow;
		rv_k_conv_fwd(&gn, x, w, bias ? b : NULL, y0, ws);
		rv_k_conv_bwd(&gn, x, w, dy, dx0, dw0, bias ? db0 : NULL, ws);
		poison(y1, yn);
		poison(dx1, xn);
		poison(dw1, wl);
		poison(db1, g.co);
		EXPECT(rv_conv_fwd(p, n, x, w, bias ? b : NULL, y1) == 0);
		EXPECT(rv_conv_bwd(p, n, x, w, dy, dx1, dw1,
		    bias ? db1 : NULL) == 0);
		if (unit_st.cur_failed)
			printf("# %s\n", rv_errmsg());
		EXPECT(close_to("y", y1, y0, yn));
		EXPECT(close_to("dx", dx1, dx0, xn));
		EXPECT(close_to("dw", dw1, dw0, wl));
		if (bias)
			EXPECT(close_to("db", db1, db0, g.co));
		if (unit_st.cur_failed)
			printf("# k %d s %d p %d ci %d co %d %dx%d bias %d "
			    "n %d\n", g.k, g.stride, g.pad, g.ci, g.co, g.h,
			    g.w, bias, n);
		/* Again: the same bits. */
		EXPECT(rv_conv_fwd(p, n, x, w, bias ? b : NULL, y2) == 0);
		EXPECT(rv_conv_bwd(p, n, x, w, dy, dx2, dw2,
		    bias ? db2 : NULL) == 0);
		EXPECT(memcmp(y1, y2, yn * sizeof(float)) == 0);
		EXPECT(memcmp(dx1, dx2, xn * sizeof(float)) == 0);
		EXPECT(memcmp(dw1, dw2, wl * sizeof(float)) == 0);
		if (bias)
			EXPECT(memcmp(db1, db2, g.co * sizeof(float)) == 0);
		/* Without dx and db: dw alone, the same bits. */
		poison(dw2, wl);
		EXPECT(rv_conv_bwd(p, n, x, w, dy, NULL, dw2, NULL) == 0);
		EXPECT(memcmp(dw1, dw2, wl * sizeof(float)) == 0);
	}
	rv_conv_plan_free(p);
out:
	free(x);
	free(w);
	free(b);
	free(dy);
	free(ws);
	free(y0);
	free(dx0);
	free(dw0);
	free(db0);
	free(y1);
	free(dx1);
	free(dw1);
	free(db1);
	free(y2);
	free(dx2);
	free(dw2);
	free(db2);
}

/* Batch sizes: more distinct ones than the plan keeps, and returns. */
static const int ns[] = { 5, 3, 5, 1, 2, 4, 5, 3 };
#define NNS	((int)(sizeof(ns) / sizeof(ns[0])))

static void
test_conv_3x3(void)
{
	check_geom(geom(5, 1, 9, 9, 4, 3, 1, 1), 1, ns, NNS);
	check_geom(geom(5, 16, 8, 8, 32, 3, 1, 1), 0, ns, NNS);
	check_geom(geom(5, 16, 10, 10, 32, 3, 2, 1), 0, ns, NNS);
	check_geom(geom(5, 3, 12, 12, 32, 3, 1, 1), 1, ns, NNS);
}

static void
test_conv_odd(void)
{
	/* 7x7 stride 2 pad 3 (resnet18's stem), non-square, a negative
	 * right padding (6 + 0 - 3 not a multiple of 2), pad 0. */
	check_geom(geom(5, 3, 15, 13, 32, 7, 2, 3), 1, ns, NNS);
	check_geom(geom(5, 3, 6, 6, 4, 3, 2, 0), 1, ns, NNS);
	check_geom(geom(5, 16, 7, 9, 4, 3, 1, 0), 0, ns, NNS);
	check_geom(geom(5, 1, 4, 4, 32, 3, 1, 1), 0, ns, NNS);
}

/* 1x1: the fallback path (and k 1 padded: oneDNN). */
static void
test_conv_1x1(void)
{
	check_geom(geom(5, 16, 8, 8, 32, 1, 2, 0), 0, ns, NNS);
	check_geom(geom(5, 3, 6, 6, 4, 1, 1, 0), 1, ns, NNS);
	check_geom(geom(5, 16, 5, 5, 4, 1, 1, 1), 1, ns, NNS);
}

/* One plan, one thread count changed before it was first used. */
static void
test_conv_threads(void)
{
	rv_k_threads(1);
	check_geom(geom(5, 16, 8, 8, 32, 3, 1, 1), 1, ns + 5, 3);
	rv_k_threads(2);
}

static void
test_bad(void)
{
	struct rv_conv_geom g = geom(4, 3, 8, 8, 16, 3, 1, 1);
	struct rv_conv_geom b;
	struct rv_conv_plan *p;
	float v[4] = { 0 };

	EXPECT(rv_conv_plan_new(NULL) == NULL);
	b = g;
	b.oh = 7;
	EXPECT(rv_conv_plan_new(&b) == NULL);
	EXPECT(strstr(rv_errmsg(), "conv: bad geometry") != NULL);
	b = g;
	b.k = 0;
	EXPECT(rv_conv_plan_new(&b) == NULL);
	b = g;
	b.stride = 0;
	EXPECT(rv_conv_plan_new(&b) == NULL);
	b = geom(4, 3, 2, 2, 16, 5, 1, 1);	/* kernel past the padded input */
	EXPECT(rv_conv_plan_new(&b) == NULL);
	b = g;
	b.n = 0;
	EXPECT(rv_conv_plan_new(&b) == NULL);
	b = g;
	b.pad = -1;
	EXPECT(rv_conv_plan_new(&b) == NULL);
	rv_conv_plan_free(NULL);

	/* Batch sizes outside 1 .. g.n fail before touching memory. */
	p = rv_conv_plan_new(&g);
	EXPECT(p != NULL);
	if (p == NULL)
		return;
	EXPECT(rv_conv_fwd(p, 5, v, v, NULL, v) == -1);
	EXPECT_STR(rv_errmsg(), "conv: batch of 5 samples: expected 1 to 4");
	EXPECT(rv_conv_fwd(p, 0, v, v, NULL, v) == -1);
	EXPECT(rv_conv_bwd(p, 5, v, v, v, v, v, v) == -1);
	rv_conv_plan_free(p);
	b = geom(4, 3, 8, 8, 16, 1, 1, 0);
	p = rv_conv_plan_new(&b);
	EXPECT(p != NULL);
	EXPECT(rv_conv_fwd(p, 5, v, v, NULL, v) == -1);
	EXPECT(rv_conv_bwd(p, 0, v, v, v, v, v, v) == -1);
	rv_conv_plan_free(p);
}

int
main(void)
{
	rv_k_threads(2);
	RUN(test_conv_3x3);
	RUN(test_conv_odd);
	RUN(test_conv_1x1);
	RUN(test_conv_threads);
	RUN(test_bad);
	return UNIT_DONE();
}
