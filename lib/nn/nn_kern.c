/*
 * CPU kernels, the GEMM half (nn_kern.h): input normalisation,
 * convolution by im2col and one OpenBLAS sgemm over the whole CNHW batch,
 * linear layers, and the thread setting.  The elementwise and reduction
 * kernels are in nn_kern_misc.c.
 */
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "nn/nn_kern.h"
#include "nn/nn_kern_impl.h"

/*
 * The CBLAS calls used, declared here: OpenBLAS's cblas.h wants
 * cpu_set_t, which needs _GNU_SOURCE (STYLE.md keeps that to io.c).  The
 * enum values are fixed by the CBLAS standard; OpenBLAS here is LP64.
 */
enum { CblasRowMajor = 101 };
enum { CblasNoTrans = 111, CblasTrans = 112 };
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc);
void openblas_set_num_threads(int);

void
rv_k_threads(int n)
{
	if (n < 1)
		n = 1;
#ifdef _OPENMP
	omp_set_num_threads(n);
#endif
	openblas_set_num_threads(n);
}

void
rv_k_input(int n, int h, int w, int c, const uint8_t *px,
    const float *mean, const float *std, float *x)
{
	float lut[4][256];
	size_t hw = (size_t)h * w;
	int ch, i;

	/* c <= 4 (nn.h); a table per channel gives the formula's exact
	 * rounding at the cost of a load. */
	for (ch = 0; ch < c && ch < 4; ch++) {
		int v;

		for (v = 0; v < 256; v++)
			lut[ch][v] = ((float)v / 255.0f - mean[ch]) / std[ch];
	}
	#pragma omp parallel for collapse(2) schedule(static) \
	    if (c * n * hw > RV_K_PAR_MIN)
	for (ch = 0; ch < c; ch++)
		for (i = 0; i < n; i++) {
			const uint8_t *restrict s = px + i * hw * c + ch;
			float *restrict d = x + (ch * (size_t)n + i) * hw;
			const float *restrict t = lut[ch < 4 ? ch : 3];
			size_t p;

			for (p = 0; p < hw; p++)
				d[p] = t[s[p * c]];
		}
}

/* ---- Convolution ------------------------------------------------------- */

/* A 1x1, stride-1, unpadded convolution: x is already the column matrix. */
static int
conv_is_pointwise(const struct rv_conv_geom *g)
{
	return g->k == 1 && g->stride == 1 && g->pad == 0 &&
	    g->oh == g->h && g->ow == g->w;
}

/*
 * dw = dy col^T has only co x kk outputs but sums over m = n oh ow: when
 * the outputs are few (a first layer: 32 x 9), OpenBLAS finds too few
 * blocks to thread, so m is cut into DW_SPLIT slices fixed by the shape,
 * one GEMM each into workspace, summed in slice order: parallel, and the
 * same bits for any thread count.
 */
#define DW_SPLIT	8
#define DW_SPLIT_MAX	4096	/* co kk at most */
#define DW_SPLIT_MIN	8192	/* m at least */

static int
conv_dw_split(const struct rv_conv_geom *g)
{
	return (size_t)g->co * g->ci * g->k * g->k <= DW_SPLIT_MAX &&
	    (size_t)g->n * g->oh * g->ow >= DW_SPLIT_MIN;
}

/* Floats of the column matrix (none for a pointwise convolution). */
static size_t
conv_col_len(const struct rv_conv_geom *g)
{
	if (conv_is_pointwise(g))
		return 0;
	return (size_t)g->ci * g->k * g->k * g->n * g->oh * g->ow;
}

size_t
rv_k_conv_ws(const struct rv_conv_geom *g)
{
	size_t n = conv_col_len(g);

	if (conv_dw_split(g))
		n += (size_t)DW_SPLIT * g->co * g->ci * g->k * g->k;
	return n;
}

/*
 * The output columns [lo, hi) whose input column ox*stride - pad + kj lies
 * inside [0, w); the others read padding.
 */
static void
conv_span(int kj, int stride, int pad, int w, int ow, int *lo, int *hi)
{
	int a = 0, b;

	if (pad > kj)
		a = (pad - kj + stride - 1) / stride;
	if (w - 1 + pad - kj < 0)
		b = 0;
	else
		b = (w - 1 + pad - kj) / stride + 1;
	if (b > ow)
		b = ow;
	if (a > b)
		a = b;
	*lo = a;
	*hi = b;
}

/*
 * One kernel tap (ki, kj) of one sample's plane into its column rows.
 * Rows are short (ow floats): plain loops beat memcpy's call overhead.
 */
static void
im2col_tap(const struct rv_conv_geom *g, int ki, int kj,
    const float *restrict src, float *restrict dst)
{
	int s = g->stride, p = g->pad, ow = g->ow, oy, ox, lo, hi;

	conv_span(kj, s, p, g->w, ow, &lo, &hi);
	for (oy = 0; oy < g->oh; oy++, dst += ow) {
		int iy = oy * s - p + ki;
		const float *restrict sr;

		if (iy < 0 || iy >= g->h) {
			#pragma omp simd
			for (ox = 0; ox < ow; ox++)
				dst[ox] = 0;
			continue;
		}
		sr = src + (size_t)iy * g->w - p + kj;
		for (ox = 0; ox < lo; ox++)
			dst[ox] = 0;
		if (s == 1) {
			#pragma omp simd
			for (ox = lo; ox < hi; ox++)
				dst[ox] = sr[ox];
		} else
			for (ox = lo; ox < hi; ox++)
				dst[ox] = sr[ox * s];
		for (ox = hi; ox < ow; ox++)
			dst[ox] = 0;
	}
}

/*
 * col[(c k + ki) k + kj][i][oy][ox] = x[c][i][oy s - p + ki][ox s - p + kj],
 * zero outside.  Every (row, sample) pair writes its own run of col.
 */
static void
im2col(const struct rv_conv_geom *g, const float *x, float *col)
{
	int k = g->k, rows = g->ci * k * k, n = g->n, r, i;
	size_t hw = (size_t)g->h * g->w, ohw = (size_t)g->oh * g->ow;

	#pragma omp parallel for collapse(2) schedule(static) \
	    if (rows * n * ohw > RV_K_PAR_MIN)
	for (r = 0; r < rows; r++)
		for (i = 0; i < n; i++)
			im2col_tap(g, r / k % k, r % k,
			    x + ((size_t)(r / (k * k)) * n + i) * hw,
			    col + ((size_t)r * n + i) * ohw);
}

/* One kernel tap (ki, kj) of one sample's column rows, added into its
 * input plane. */
static void
col2im_tap(const struct rv_conv_geom *g, int ki, int kj,
    const float *restrict src, float *restrict dst)
{
	int s = g->stride, p = g->pad, oy, ox, lo, hi;

	conv_span(kj, s, p, g->w, g->ow, &lo, &hi);
	for (oy = 0; oy < g->oh; oy++, src += g->ow) {
		int iy = oy * s - p + ki;
		float *restrict d;

		if (iy < 0 || iy >= g->h)
			continue;
		d = dst + (size_t)iy * g->w - p + kj;
		if (s == 1) {
			#pragma omp simd
			for (ox = lo; ox < hi; ox++)
				d[ox] += src[ox];
		} else
			for (ox = lo; ox < hi; ox++)
				d[ox * s] += src[ox];
	}
}

/*
 * The adjoint of im2col: dx = sum over the rows of each input channel.
 * Each (channel, sample) plane of dx is owned by one thread and summed in
 * the fixed order ki, kj, oy, ox.
 */
static void
col2im(const struct rv_conv_geom *g, const float *col, float *dx)
{
	int k = g->k, ci = g->ci, n = g->n, c, i;
	size_t hw = (size_t)g->h * g->w, ohw = (size_t)g->oh * g->ow;

	#pragma omp parallel for collapse(2) schedule(static) \
	    if (ci * n * ohw * k * k > RV_K_PAR_MIN)
	for (c = 0; c < ci; c++)
		for (i = 0; i < n; i++) {
			float *dst = dx + ((size_t)c * n + i) * hw;
			int ki, kj;

			memset(dst, 0, hw * sizeof(*dst));
			for (ki = 0; ki < k; ki++)
				for (kj = 0; kj < k; kj++) {
					size_t r = ((size_t)c * k + ki) * k +
					    kj;

					col2im_tap(g, ki, kj,
					    col + (r * n + i) * ohw, dst);
				}
		}
}

/* y[c][j] += b[c] over rows of m. */
static void
add_bias(int c, size_t m, const float *b, float *y)
{
	int ch;

	#pragma omp parallel for schedule(static) \
	    if ((size_t)c * m > RV_K_PAR_MIN)
	for (ch = 0; ch < c; ch++) {
		float *restrict r = y + (size_t)ch * m;
		float v = b[ch];
		size_t j;

		#pragma omp simd
		for (j = 0; j < m; j++)
			r[j] += v;
	}
}

/* db[c] = sum_j dy[c][j], one row a thread, in double. */
void
rv_k_sum_rows(int c, size_t m, const float *dy, float *db)
{
	int ch;

	#pragma omp parallel for schedule(static) \
	    if ((size_t)c * m > RV_K_PAR_MIN)
	for (ch = 0; ch < c; ch++)
		db[ch] = (float)rv_k_sum(dy + (size_t)ch * m, m);
}

void
rv_k_conv_fwd(const struct rv_conv_geom *g, const float *x, const float *w,
    const float *b, float *y, float *ws)
{
	int kk = g->ci * g->k * g->k;
	int m = g->n * g->oh * g->ow;
	const float *col = x;

	if (!conv_is_pointwise(g)) {
		im2col(g, x, ws);
		col = ws;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->co, m, kk,
	    1.0f, w, kk, col, m, 0.0f, y, m);
	if (b != NULL)
		add_bias(g->co, (size_t)m, b, y);
}

/* dw[co][kk] = dy[co][m] col[kk][m]^T, split as conv_dw_split says. */
static void
conv_dw(const struct rv_conv_geom *g, const float *dy, const float *col,
    float *dw, float *part)
{
	int kk = g->ci * g->k * g->k, m = g->n * g->oh * g->ow, co = g->co;
	size_t len = (size_t)co * kk, e;
	int sl;

	if (!conv_dw_split(g)) {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, co, kk, m,
		    1.0f, dy, m, col, m, 0.0f, dw, kk);
		return;
	}
	/* Inside the parallel loop OpenBLAS runs on one thread. */
	#pragma omp parallel for schedule(static)
	for (sl = 0; sl < DW_SPLIT; sl++) {
		int j0 = (int)((long long)m * sl / DW_SPLIT);
		int j1 = (int)((long long)m * (sl + 1) / DW_SPLIT);

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, co, kk,
		    j1 - j0, 1.0f, dy + j0, m, col + j0, m, 0.0f,
		    part + sl * len, kk);
	}
	for (e = 0; e < len; e++) {
		float acc = part[e];

		for (sl = 1; sl < DW_SPLIT; sl++)
			acc += part[sl * len + e];
		dw[e] = acc;
	}
}

void
rv_k_conv_bwd(const struct rv_conv_geom *g, const float *x, const float *w,
    const float *dy, float *dx, float *dw, float *db, float *ws)
{
	int kk = g->ci * g->k * g->k;
	int m = g->n * g->oh * g->ow;
	int pw = conv_is_pointwise(g);
	const float *col = x;

	if (db != NULL)
		rv_k_sum_rows(g->co, (size_t)m, dy, db);
	if (!pw) {
		im2col(g, x, ws);
		col = ws;
	}
	conv_dw(g, dy, col, dw, ws + conv_col_len(g));
	if (dx == NULL)
		return;
	/* dcol[kk][m] = w[co][kk]^T dy[co][m]; pointwise: dcol is dx. */
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kk, m, g->co,
	    1.0f, w, kk, dy, m, 0.0f, pw ? dx : ws, m);
	if (!pw)
		col2im(g, ws, dx);
}

/* ---- Linear ------------------------------------------------------------ */

size_t
rv_k_linear_ws(int ci, int n, int hw)
{
	return (size_t)ci * hw * n;
}

/*
 * xt[ch hw + p][i] = x[ch][i][p].  With hw == 1 this is a plain copy, kept
 * so that backward always finds its input in ws.
 */
static void
linear_transpose(int ci, int n, int hw, const float *x, float *xt)
{
	int ch;

	if (hw == 1) {
		memcpy(xt, x, (size_t)ci * n * sizeof(*xt));
		return;
	}
	#pragma omp parallel for schedule(static) \
	    if ((size_t)ci * n * hw > RV_K_PAR_MIN)
	for (ch = 0; ch < ci; ch++) {
		const float *restrict s = x + (size_t)ch * n * hw;
		float *restrict d = xt + (size_t)ch * hw * n;
		int i, p;

		for (p = 0; p < hw; p++)
			for (i = 0; i < n; i++)
				d[(size_t)p * n + i] = s[(size_t)i * hw + p];
	}
}

void
rv_k_linear_fwd(int ci, int n, int hw, int out, const float *x,
    const float *w, const float *b, float *y, float *ws)
{
	int f = ci * hw;

	linear_transpose(ci, n, hw, x, ws);
	/* y[out][n] = w[out][f] xt[f][n] */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, out, n, f,
	    1.0f, w, f, ws, n, 0.0f, y, n);
	if (b != NULL)
		add_bias(out, (size_t)n, b, y);
}

void
rv_k_linear_bwd(int ci, int n, int hw, int out, const float *w,
    const float *dy, float *dx, float *dw, float *db, const float *ws)
{
	int f = ci * hw, ch;

	if (db != NULL)
		rv_k_sum_rows(out, (size_t)n, dy, db);
	/* dw[out][f] = dy[out][n] xt[f][n]^T */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, out, f, n,
	    1.0f, dy, n, ws, n, 0.0f, dw, f);
	if (dx == NULL)
		return;
	if (hw == 1) {
		/* dx[ci][n] = w[out][ci]^T dy[out][n] */
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, f, n,
		    out, 1.0f, w, f, dy, n, 0.0f, dx, n);
		return;
	}
	/*
	 * dx[ch] as [n][hw] = dy[out][n]^T w[out][ch hw .. ch hw + hw): one
	 * small GEMM a channel lands each in CNHW order without a scratch
	 * transpose.  Inside the parallel loop OpenBLAS runs on one thread.
	 */
	#pragma omp parallel for schedule(static) \
	    if ((size_t)ci * n * hw * out > RV_K_PAR_MIN)
	for (ch = 0; ch < ci; ch++)
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, hw,
		    out, 1.0f, dy, n, w + (size_t)ch * hw, f, 0.0f,
		    dx + (size_t)ch * n * hw, hw);
}
