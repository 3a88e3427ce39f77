/*
 * The CUDA backend.  Without a GPU: its per-element arithmetic (the very
 * functions its kernels run, through nn_cuda_host.h) against the CPU
 * backend's kernels: dropout masks, the loss and its gradient in fp32 and
 * bf16, SGD, the KRSC weight layout; and the clean refusal when there is
 * no device.  With a GPU: whole models on both backends from the same
 * seed and batch agree on losses, gradient norms, predictions, the
 * updated parameters and running statistics, within the tolerances of
 * each precision; the asynchronous mode gives the same results; partial
 * batches work; a tiny model learns.  Skips what it cannot run.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_kern.h"
#include "unit.h"

#ifndef RV_HAVE_CUDA

int
main(void)
{
	unit_st.n = 1;
	printf("ok 1 - cuda # SKIP the CUDA backend is not built\n");
	return UNIT_DONE();
}

#else

#include "nn/nn_cuda_host.h"

static int ndev;

#define SKIP_NO_DEVICE(fn) do { \
	if (ndev == 0) { \
		unit_st.n++; \
		printf("ok %d - %s # SKIP no CUDA device\n", unit_st.n, #fn); \
		break; \
	} \
	RUN(fn); \
} while (0)

/* ---- Host: the kernels' arithmetic ------------------------------------ */

static void
test_dropout_masks(void)
{
	enum { C = 3, N = 5, HW = 7 };
	uint64_t ids[N];
	float x[C * N * HW], y[C * N * HW], cpu[C * N * HW];
	float nchw[C * N * HW], nhwc[C * N * HW];
	int i, ch, j, zeros = 0;

	for (i = 0; i < N; i++)
		ids[i] = 0x123456789ull * (i + 1);
	for (i = 0; i < C * N * HW; i++)
		x[i] = 1.0f;
	rv_k_dropout_fwd(C, N, HW, 0.3f, 42, 7, 1000, ids, x, y, cpu);
	rv_cuda_host_dropout(C, N, HW, 0, 0.3f, 42, 7, 1000, ids, nchw);
	rv_cuda_host_dropout(C, N, HW, 1, 0.3f, 42, 7, 1000, ids, nhwc);
	for (ch = 0; ch < C; ch++)
		for (i = 0; i < N; i++)
			for (j = 0; j < HW; j++) {
				float v = cpu[(ch * N + i) * HW + j];

				EXPECT(v == nchw[(i * C + ch) * HW + j]);
				EXPECT(v == nhwc[(i * HW + j) * C + ch]);
				zeros += v == 0.0f;
			}
	/* Some of each, as p = 0.3 should give. */
	EXPECT(zeros > 10 && zeros < 60);
	/* Another step, another mask. */
	rv_cuda_host_dropout(C, N, HW, 0, 0.3f, 42, 7, 1001, ids, nhwc);
	EXPECT(memcmp(nchw, nhwc, sizeof(nchw)) != 0);
}

static double
rel(double a, double b)
{
	return fabs(a - b) / fmax(fabs(b), 1e-12);
}

static void
test_softmax(void)
{
	enum { K = 7, N = 9 };
	float zt[K * N], zd[N * K], wt[N];
	float lc[N], pc[N], dzc[K * N], lg[N], pg[N], dzg[N * K];
	int32_t lab[N], prc[N], prg[N];
	struct rv_rng g;
	double oc, og;
	int i, j, b16;

	rv_rng_init(&g, 5, RV_STAGE_TRAIN, 1, 0, 0);
	for (b16 = 0; b16 < 2; b16++) {
		for (i = 0; i < N; i++) {
			lab[i] = (int32_t)rv_rng_below(&g, K);
			wt[i] = 0.5f + (float)rv_rng_uniform(&g);
			for (j = 0; j < K; j++) {
				float v = (float)(8 * rv_rng_uniform(&g) - 4);

				/* bf16: the CPU sees the rounded logits */
				if (b16) {
					uint32_t u;

					memcpy(&u, &v, 4);
					u = (u + 0x7fff + ((u >> 16) & 1)) &
					    0xffff0000u;
					memcpy(&v, &u, 4);
				}
				zt[j * N + i] = v;
				zd[i * K + j] = v;
			}
		}
		oc = rv_k_softmax_ce(K, N, zt, lab, wt, 0.1f, lc, dzc, pc,
		    prc);
		og = (b16 ? rv_cuda_host_softmax_ce_bf16 :
		    rv_cuda_host_softmax_ce)(K, N, zd, lab, wt, 0.1f, lg, dzg,
		    pg, prg);
		EXPECT(rel(og, oc) < 1e-6);
		for (i = 0; i < N; i++) {
			EXPECT(rel(lg[i], lc[i]) < 1e-6);
			EXPECT(rel(pg[i], pc[i]) < 1e-6);
			EXPECT_EQ(prg[i], prc[i]);
			for (j = 0; j < K; j++)
				/* bf16 gradients: 8 bits of mantissa */
				EXPECT(fabs(dzg[i * K + j] - dzc[j * N + i]) <=
				    (b16 ? 4e-3 : 1e-7) *
				    fabs(dzc[j * N + i]) + 1e-9);
		}
	}
}

static void
test_sgd(void)
{
	enum { L = 100 };
	float p0[L], g[L], v0[L], pc[L], vc[L], pg[L], vg[L];
	int i, nest;

	for (i = 0; i < L; i++) {
		p0[i] = sinf((float)i);
		g[i] = cosf(0.3f * (float)i);
		v0[i] = 0.01f * (float)(i % 7);
	}
	for (nest = 0; nest < 2; nest++) {
		memcpy(pc, p0, sizeof(pc));
		memcpy(vc, v0, sizeof(vc));
		memcpy(pg, p0, sizeof(pg));
		memcpy(vg, v0, sizeof(vg));
		rv_k_sgd(L, pc, g, vc, 0.1f, 0.9f, 5e-4f, nest);
		rv_cuda_host_sgd(L, pg, g, vg, 0.1f, 0.9f, 5e-4f, nest);
		EXPECT(memcmp(pc, pg, sizeof(pc)) == 0);
		EXPECT(memcmp(vc, vg, sizeof(vc)) == 0);
	}
}

static void
test_krsc(void)
{
	enum { K = 2, C = 3, RS = 4 };
	float kcrs[K * C * RS], krsc[K * C * RS];
	int k, c, s;

	for (k = 0; k < K * C * RS; k++)
		kcrs[k] = (float)k;
	rv_cuda_host_krsc(K, C, RS, kcrs, krsc);
	for (k = 0; k < K; k++)
		for (c = 0; c < C; c++)
			for (s = 0; s < RS; s++)
				EXPECT(krsc[(k * RS + s) * C + c] ==
				    kcrs[(k * C + c) * RS + s]);
}

/* The bf16 path's own batch norm (NHWC, chunked sums) against the CPU's
 * ([c][m]), on channels that are not a multiple of the block's 32 and
 * rows that do not split evenly into chunks, far from zero mean. */
static void
test_bn_nhwc(void)
{
	enum { C = 37, M = 5003 };
	float *xc = malloc(4 * C * M), *xn = malloc(4 * C * M);
	float *yc = malloc(4 * C * M), *yn = malloc(4 * C * M);
	float *gc = malloc(4 * C * M), *gn = malloc(4 * C * M);
	float gamma[C], beta[C], smc[C], sic[C], smn[C], sin_[C];
	float rmc[C], rvc[C], rmn[C], rvn[C], dgc[C], dbc[C], dgn[C], dbn[C];
	double e = 0, ex = 0, eg = 0, ey = 0;
	struct rv_rng g;
	int ch;
	size_t j;

	rv_rng_init(&g, 17, RV_STAGE_TRAIN, 2, 0, 0);
	for (ch = 0; ch < C; ch++) {
		gamma[ch] = 0.5f + (float)rv_rng_uniform(&g);
		beta[ch] = (float)rv_rng_uniform(&g) - 0.5f;
		rmc[ch] = rmn[ch] = 0.1f * ch;
		rvc[ch] = rvn[ch] = 1.0f + 0.01f * ch;
		for (j = 0; j < M; j++) {
			float v = 3.0f + ch + 2.0f * (float)rv_rng_uniform(&g);
			float d = (float)rv_rng_uniform(&g) - 0.3f;

			xc[(size_t)ch * M + j] = xn[j * C + ch] = v;
			gc[(size_t)ch * M + j] = gn[j * C + ch] = d;
		}
	}
	rv_k_bn_fwd_train(C, M, xc, gamma, beta, yc, smc, sic, rmc, rvc, 0.1f);
	rv_cuda_host_bn_train(C, M, xn, gamma, beta, yn, smn, sin_, rmn, rvn,
	    0.1f);
	for (ch = 0; ch < C; ch++) {
		e = fmax(e, rel(smn[ch], smc[ch]));
		e = fmax(e, rel(sin_[ch], sic[ch]));
		e = fmax(e, rel(rmn[ch], rmc[ch]));
		e = fmax(e, rel(rvn[ch], rvc[ch]));
		for (j = 0; j < M; j++)
			ey = fmax(ey, fabs(yn[j * C + ch] -
			    yc[(size_t)ch * M + j]));
	}
	printf("# forward: statistics rel %.2g, y abs %.2g\n", e, ey);
	EXPECT(e < 1e-5);
	EXPECT(ey < 1e-4);
	rv_k_bn_bwd(C, M, xc, gc, gamma, smc, sic, yc, dgc, dbc);
	rv_cuda_host_bn_bwd(C, M, xn, gn, gamma, smn, sin_, yn, dgn, dbn);
	for (ch = 0; ch < C; ch++) {
		eg = fmax(eg, fabs(dgn[ch] - dgc[ch]) / (1 + fabs(dgc[ch])));
		eg = fmax(eg, fabs(dbn[ch] - dbc[ch]) / (1 + fabs(dbc[ch])));
		for (j = 0; j < M; j++)
			ex = fmax(ex, fabs(yn[j * C + ch] -
			    yc[(size_t)ch * M + j]));
	}
	printf("# backward: dgamma/dbeta %.2g, dx abs %.2g\n", eg, ex);
	EXPECT(eg < 1e-4);
	EXPECT(ex < 1e-5);
	rv_k_bn_fwd_eval(C, M, xc, gamma, beta, rmc, rvc, yc);
	rv_cuda_host_bn_eval(C, M, xn, gamma, beta, rmc, rvc, yn);
	ey = 0;
	for (ch = 0; ch < C; ch++)
		for (j = 0; j < M; j++)
			ey = fmax(ey, fabs(yn[j * C + ch] -
			    yc[(size_t)ch * M + j]));
	EXPECT(ey < 1e-5);
	free(xc);
	free(xn);
	free(yc);
	free(yn);
	free(gc);
	free(gn);
}

/*
 * An [n][c][h][w] tensor of `size`-byte elements between the CPU's CNHW
 * layout and the device's (NCHW, or NHWC when nhwc): into the device's
 * layout, or back to CNHW when back.
 */
static void
relayout(int back, int nhwc, int n, int c, int h, int w, size_t size,
    const void *src, void *dst)
{
	for (int i = 0; i < n; i++)
		for (int ch = 0; ch < c; ch++)
			for (int j = 0; j < h * w; j++) {
				size_t a = ((size_t)ch * n + i) * h * w + j;
				size_t d = nhwc ? ((size_t)i * h * w + j) * c +
				    ch : ((size_t)i * c + ch) * h * w + j;

				memcpy((char *)dst + (back ? a : d) * size,
				    (const char *)src + (back ? d : a) * size,
				    size);
			}
}

/* Elements of a and b that differ (!=), of len. */
static int
ndiff(const float *a, const float *b, size_t len)
{
	int k = 0;

	for (size_t i = 0; i < len; i++)
		k += a[i] != b[i];
	return k;
}

/*
 * The device's pools (max, average, global average; forward and the
 * gathering backward) against the CPU's scattering kernels, in NCHW and
 * NHWC, on small integers (ties everywhere, negatives next to the
 * padding): outputs, winners and gradients are the same bits.
 */
static void
test_pools(void)
{
	static const int cases[][4] = {	/* max, k, stride, pad */
		{ 1, 3, 2, 1 }, { 1, 2, 2, 0 }, { 1, 2, 1, 1 }, { 1, 3, 1, 0 },
		{ 0, 2, 1, 1 }, { 0, 3, 2, 1 }, { 0, 2, 2, 0 },
	};
	/* OUT: the largest output, padding 1 and stride 1 */
	enum { N = 3, C = 4, H = 7, W = 6, IN = N * C * H * W,
	    OUT = N * C * (H + 2) * (W + 2) };
	float x[IN], xd[IN], y[OUT], yd[OUT], yb[OUT];
	float dy[OUT], dyd[OUT], dx[IN], dxd[IN], dxb[IN];
	int32_t am[OUT], amd[OUT], amb[OUT];
	struct rv_rng g;
	int i, q, nhwc, bad = 0;

	rv_rng_init(&g, 23, RV_STAGE_TRAIN, 3, 0, 0);
	for (i = 0; i < IN; i++)
		x[i] = (float)rv_rng_below(&g, 7) - 3.0f;
	for (q = 0; q < (int)(sizeof(cases) / sizeof(cases[0])); q++)
		for (nhwc = 0; nhwc < 2; nhwc++) {
			int mx = cases[q][0], k = cases[q][1];
			int st = cases[q][2], pd = cases[q][3];
			int oh = (H + 2 * pd - k) / st + 1, bad0 = bad;
			int ow = (W + 2 * pd - k) / st + 1, no = N * C * oh * ow;
			struct rv_pool_geom pg = { C, N, H, W, k, st, pd, oh,
			    ow };

			for (i = 0; i < no; i++)
				dy[i] = (float)rv_rng_uniform(&g) - 0.5f;
			relayout(0, nhwc, N, C, H, W, 4, x, xd);
			relayout(0, nhwc, N, C, oh, ow, 4, dy, dyd);
			if (mx) {
				rv_k_maxpool_fwd(&pg, x, y, am);
				rv_k_maxpool_bwd(&pg, dy, am, dx);
			} else {
				rv_k_avgpool_fwd(&pg, x, y);
				rv_k_avgpool_bwd(&pg, dy, dx);
			}
			rv_cuda_host_pool(mx, N, C, H, W, k, k, st, pd, nhwc,
			    xd, yd, amd, dyd, dxd);
			relayout(1, nhwc, N, C, oh, ow, 4, yd, yb);
			relayout(1, nhwc, N, C, oh, ow, 4, amd, amb);
			relayout(1, nhwc, N, C, H, W, 4, dxd, dxb);
			bad += ndiff(y, yb, no) + ndiff(dx, dxb, IN);
			for (i = 0; mx && i < no; i++)
				bad += am[i] != amb[i];
			if (bad > bad0)
				printf("# case %d nhwc %d: %d differ\n", q,
				    nhwc, bad - bad0);
		}
	EXPECT_EQ(bad, 0);
	/* Global average: one h x w window; y and dy are [c][n] on the
	 * CPU, [n][c] on the device (h = w = 1). */
	for (nhwc = 0; nhwc < 2; nhwc++) {
		double e = 0;

		for (i = 0; i < N * C; i++)
			dy[i] = (float)i - 5.0f;
		rv_k_gap_fwd(C, N, H * W, x, y);
		rv_k_gap_bwd(C, N, H * W, dy, dx);
		relayout(0, nhwc, N, C, H, W, 4, x, xd);
		relayout(0, nhwc, N, C, 1, 1, 4, dy, dyd);
		rv_cuda_host_pool(0, N, C, H, W, H, W, 1, 0, nhwc, xd, yd,
		    amd, dyd, dxd);
		relayout(1, nhwc, N, C, 1, 1, 4, yd, yb);
		relayout(1, nhwc, N, C, H, W, 4, dxd, dxb);
		for (i = 0; i < N * C; i++)
			e = fmax(e, fabs(yb[i] - y[i]));
		for (i = 0; i < IN; i++)
			e = fmax(e, fabs(dxb[i] - dx[i]));
		EXPECT(e < 1e-6);
	}
}

/* The input kernel's layouts against rv_k_input (CNHW), and the NHWC
 * linear layer's flatten: NHWC to NCHW is PyTorch's (c, h, w) order. */
static void
test_input_permute(void)
{
	enum { N = 2, H = 3, W = 5, C = 3, L = N * H * W * C };
	uint8_t px[L];
	float mean[4] = { 0.4f, 0.5f, 0.6f, 0 }, std[4] = { 0.2f, 0.3f, 0.25f,
	    1 };
	float cpu[L], dev[L], back[L];
	int i, ch, j, nhwc;

	for (i = 0; i < L; i++)
		px[i] = (uint8_t)(i * 37 + 11);
	rv_k_input(N, H, W, C, px, mean, std, cpu);
	for (nhwc = 0; nhwc < 2; nhwc++) {
		rv_cuda_host_input(N, H, W, C, nhwc, px, mean, std, dev);
		for (i = 0; i < N; i++)
			for (ch = 0; ch < C; ch++)
				for (j = 0; j < H * W; j++)
					EXPECT(cpu[(ch * N + i) * H * W + j] ==
					    dev[nhwc ? (i * H * W + j) * C + ch :
					    (i * C + ch) * H * W + j]);
	}
	/* dev is NHWC now: to NCHW equals the NCHW input, and back. */
	rv_cuda_host_permute(N, C, H * W, 1, dev, back);
	rv_cuda_host_input(N, H, W, C, 0, px, mean, std, cpu);
	EXPECT(memcmp(back, cpu, sizeof(cpu)) == 0);
	rv_cuda_host_permute(N, C, H * W, 0, back, cpu);
	EXPECT(memcmp(cpu, dev, sizeof(cpu)) == 0);
}

/* The linear layer's GEMM shapes against rv_k_linear_* (x CNHW there,
 * [n][c][hw] on the device; y and dy [out][n] there, [n][out] here). */
static void
test_linear(void)
{
	enum { CI = 3, HW = 4, F = CI * HW, OUT = 5, N = 7 };
	float x[N * F], xc[F * N], w[OUT * F], b[OUT], dy[N * OUT];
	float dyc[OUT * N], y[N * OUT], yc[OUT * N], dx[N * F], dxc[F * N];
	float dw[OUT * F], dwc[OUT * F], db[OUT], dbc[OUT];
	float *ws = malloc(rv_k_linear_ws(CI, N, HW) * sizeof(float));
	double e = 0;
	int i, ch, j, o;

	for (i = 0; i < N * F; i++)
		x[i] = sinf(0.7f * (float)i);
	for (i = 0; i < N; i++)
		for (ch = 0; ch < CI; ch++)
			for (j = 0; j < HW; j++)
				xc[(ch * N + i) * HW + j] =
				    x[(i * CI + ch) * HW + j];
	for (i = 0; i < OUT * F; i++)
		w[i] = cosf(0.3f * (float)i);
	for (o = 0; o < OUT; o++)
		b[o] = 0.1f * (float)o;
	for (i = 0; i < N; i++)
		for (o = 0; o < OUT; o++)
			dyc[o * N + i] = dy[i * OUT + o] =
			    sinf((float)(i * OUT + o));
	rv_k_linear_fwd(CI, N, HW, OUT, xc, w, b, yc, ws);
	rv_k_linear_bwd(CI, N, HW, OUT, w, dyc, dxc, dwc, dbc, ws);
	rv_cuda_host_linear(F, OUT, N, x, w, b, dy, y, dx, dw, db);
	for (i = 0; i < N; i++)
		for (o = 0; o < OUT; o++)
			e = fmax(e, fabs(y[i * OUT + o] - yc[o * N + i]));
	for (i = 0; i < N; i++)
		for (ch = 0; ch < CI; ch++)
			for (j = 0; j < HW; j++)
				e = fmax(e, fabs(dx[(i * CI + ch) * HW + j] -
				    dxc[(ch * N + i) * HW + j]));
	for (i = 0; i < OUT * F; i++)
		e = fmax(e, fabs(dw[i] - dwc[i]));
	for (o = 0; o < OUT; o++)
		e = fmax(e, fabs(db[o] - dbc[o]));
	printf("# linear: largest difference %.2g\n", e);
	EXPECT(e < 1e-5);
	free(ws);
}

static void
test_no_device(void)
{
	struct rv_nn_config cfg;
	struct rv_net net;
	struct rv_shape in = { 1, 8, 8 };
	void *be;

	EXPECT(rv_nn_cuda() != NULL);
	EXPECT(strcmp(rv_nn_cuda()->name, "cuda") == 0);
	EXPECT(rv_nn_cuda()->wait != NULL);
	if (ndev > 0)
		return;
	EXPECT(rv_net_parse(&net, "mlp", in, 10) == 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.net = &net;
	cfg.batch_max = 4;
	cfg.threads = 1;
	cfg.mean[0] = 0.5f;
	cfg.std[0] = 0.5f;
	be = rv_nn_cuda()->create(&cfg);
	EXPECT(be == NULL);
	EXPECT_STR(rv_errmsg(), "cuda: no CUDA device found");
	rv_net_release(&net);
}

/* ---- Device: both backends on whole models ---------------------------- */

/* Every layer kind, both shortcuts, dropout, bn on features, and a
 * linear layer on a 2x2 map (the NHWC flatten). */
static const char spec_all[] =
    "conv 8 k=3 pad=1 bias=1; bn; relu;"
    "res; conv 8 k=3 pad=1; bn; relu; conv 16 k=3 stride=2 pad=1; bn;"
    "add; relu;"
    "res; conv 16 k=3 pad=1 bias=1; bn; add; relu;"
    "maxpool 2 stride=1; avgpool 2 stride=1 pad=1; dropout 0.3;"
    "maxpool 2; linear 12; bn; relu; linear";

#define NB 16
#define CLASSES 5

struct tb {
	struct rv_nn_batch b;
	uint8_t px[NB * 3 * 12 * 12];
	uint64_t ids[NB];
	int32_t labels[NB];
	float wt[NB];
};

static void
tb_make(struct tb *t, int n, uint64_t seed)
{
	struct rv_rng g;
	size_t i;

	rv_rng_init(&g, seed, RV_STAGE_TRAIN, 999, 0, 0);
	for (i = 0; i < sizeof(t->px); i++)
		t->px[i] = (uint8_t)rv_rng_below(&g, 256);
	for (i = 0; i < NB; i++) {
		t->ids[i] = 1000 + seed * 100 + i;
		t->labels[i] = (int32_t)(i % CLASSES);
		t->wt[i] = 0.5f + (float)rv_rng_uniform(&g);
	}
	t->b.n = n;
	t->b.pixels = t->px;
	t->b.ids = t->ids;
	t->b.labels = t->labels;
	t->b.weights = t->wt;
	t->b.step = seed;
}

#define MK_ASYNC 1	/* make()'s flags: config.async */
#define MK_TUNE 2	/* config.tune */

static void *
make(const struct rv_nn_ops *ops, const struct rv_net *net,
    enum rv_precision prec, int flags)
{
	struct rv_nn_config cfg;
	void *be;

	memset(&cfg, 0, sizeof(cfg));
	cfg.net = net;
	cfg.batch_max = NB;
	cfg.threads = 1;
	cfg.seed = 11;
	cfg.precision = prec;
	cfg.async = (flags & MK_ASYNC) != 0;
	cfg.tune = (flags & MK_TUNE) != 0;
	for (int i = 0; i < 4; i++) {
		cfg.mean[i] = 0.45f;
		cfg.std[i] = 0.25f;
	}
	if ((be = ops->create(&cfg)) == NULL)
		printf("# %s create: %s\n", ops->name, rv_errmsg());
	return be;
}

/* sqrt(sum (a-b)^2) / sqrt(sum b^2) over n values */
static double
rel_l2(const float *a, const float *b, size_t n)
{
	double d = 0, s = 0;

	for (size_t i = 0; i < n; i++) {
		d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		s += (double)b[i] * b[i];
	}
	return sqrt(d) / fmax(sqrt(s), 1e-30);
}

/*
 * Three steps on each backend from the same state; per-sample results of
 * every step, then the parameter change (against the initial state),
 * momentum and running statistics, then an evaluation, within `tol`
 * (relative L2).
 */
static void
agree_one(enum rv_precision prec, double tol, int tune)
{
	const struct rv_nn_ops *cu = rv_nn_cuda();
	struct rv_shape in = { 3, 12, 12 };
	struct rv_nn_hyper h = { 0.05f, 0.9f, 5e-4f, 0.1f, 1 };
	struct rv_net net;
	struct tb t;
	void *a, *b;
	float la[NB], lb[NB], ga[NB], gb[NB];
	int32_t pa[NB], pb[NB];
	struct rv_nn_out oa = { la, ga, pa }, ob = { lb, gb, pb };
	float *s0, *sa, *sb;
	size_t np, tot;
	int step, same = 0;

	if (rv_net_parse(&net, spec_all, in, CLASSES) < 0) {
		EXPECT(0);
		return;
	}
	np = net.nparams;
	tot = 2 * np + net.nbufs;
	s0 = calloc(tot + 1, 4);
	sa = calloc(tot + 1, 4);
	sb = calloc(tot + 1, 4);
	a = make(&rv_nn_cpu, &net, RV_PREC_FP32, 0);
	b = make(cu, &net, prec, tune ? MK_TUNE : 0);
	EXPECT(a != NULL && b != NULL);
	if (a == NULL || b == NULL)
		goto end;
	printf("# %s:\n", tune ? "autotuned" : "cuDNN's heuristics");
	/* The same initial state on both. */
	rv_nn_cpu.get_state(a, s0, s0 + np, s0 + 2 * np);
	EXPECT(cu->get_state(b, sb, sb + np, sb + 2 * np) == 0);
	EXPECT(memcmp(s0, sb, tot * 4) == 0);
	for (step = 0; step < 3; step++) {
		tb_make(&t, NB - step, (uint64_t)step + 1);
		EXPECT(rv_nn_cpu.train(a, &t.b, &h, &oa) == 0);
		EXPECT(cu->train(b, &t.b, &h, &ob) == 0);
		EXPECT(rel_l2(lb, la, t.b.n) < tol);
		EXPECT(rel_l2(gb, ga, t.b.n) < tol);
		for (int i = 0; i < t.b.n; i++)
			same += pa[i] == pb[i];
		if (rel_l2(lb, la, t.b.n) >= tol)
			printf("# step %d: loss rel %g\n", step,
			    rel_l2(lb, la, t.b.n));
	}
	/* fp32 predictions: nearly all the same (near-ties may flip; an
	 * untrained model's logits are close, so not in tf32 or bf16). */
	printf("# predictions: %d of %d the same\n", same, 3 * NB - 3);
	if (prec == RV_PREC_FP32)
		EXPECT(same >= (3 * NB - 3) * 9 / 10);
	rv_nn_cpu.get_state(a, sa, sa + np, sa + 2 * np);
	EXPECT(cu->get_state(b, sb, sb + np, sb + 2 * np) == 0);
	for (size_t i = 0; i < np; i++) {
		sa[i] -= s0[i];
		sb[i] -= s0[i];
	}
	printf("# update rel %.3g, momentum rel %.3g, buffers rel %.3g\n",
	    rel_l2(sb, sa, np), rel_l2(sb + np, sa + np, np),
	    rel_l2(sb + 2 * np, sa + 2 * np, net.nbufs));
	EXPECT(rel_l2(sb, sa, np) < tol * 5);
	EXPECT(rel_l2(sb + np, sa + np, np) < tol * 5);
	EXPECT(rel_l2(sb + 2 * np, sa + 2 * np, net.nbufs) < tol);
	tb_make(&t, NB, 9);
	EXPECT(rv_nn_cpu.eval(a, &t.b, &oa) == 0);
	EXPECT(cu->eval(b, &t.b, &ob) == 0);
	EXPECT(rel_l2(lb, la, NB) < tol * 5);
end:
	if (a != NULL)
		rv_nn_cpu.destroy(a);
	if (b != NULL)
		cu->destroy(b);
	free(s0);
	free(sa);
	free(sb);
	rv_net_release(&net);
}

/* With the algorithms cuDNN's heuristics choose, and the timed ones. */
static void
agree(enum rv_precision prec, double tol)
{
	agree_one(prec, tol, 0);
	agree_one(prec, tol, 1);
}

static void
test_agree_fp32(void)
{
	agree(RV_PREC_FP32, 2e-4);
}

static void
test_agree_tf32(void)
{
	agree(RV_PREC_TF32, 2e-2);
}

static void
test_agree_bf16(void)
{
	agree(RV_PREC_BF16, 6e-2);
}

/* Asynchronous steps give the bytes synchronous ones give (both take
 * cuDNN's heuristic algorithms: the same in every instance). */
static void
test_async_same(void)
{
	const struct rv_nn_ops *cu = rv_nn_cuda();
	struct rv_shape in = { 3, 12, 12 };
	struct rv_nn_hyper h = { 0.05f, 0.9f, 5e-4f, 0.0f, 0 };
	struct rv_net net;
	struct tb t[4];
	float ls[4][NB], la[4][NB], gs[4][NB], ga[4][NB];
	int32_t ps[4][NB], pa[4][NB];
	void *s, *a;
	size_t tot;
	float *ss, *sa;

	if (rv_net_parse(&net, spec_all, in, CLASSES) < 0) {
		EXPECT(0);
		return;
	}
	tot = 2 * net.nparams + net.nbufs;
	ss = calloc(tot + 1, 4);
	sa = calloc(tot + 1, 4);
	/* The last batch fills 7 of NB: the rest must compare equal. */
	memset(ls, 0, sizeof(ls));
	memset(la, 0, sizeof(la));
	memset(gs, 0, sizeof(gs));
	memset(ga, 0, sizeof(ga));
	memset(ps, 0, sizeof(ps));
	memset(pa, 0, sizeof(pa));
	s = make(cu, &net, RV_PREC_FP32, 0);
	a = make(cu, &net, RV_PREC_FP32, MK_ASYNC);
	EXPECT(s != NULL && a != NULL);
	if (s != NULL && a != NULL) {
		for (int k = 0; k < 4; k++) {
			struct rv_nn_out os = { ls[k], gs[k], ps[k] };
			struct rv_nn_out oa = { la[k], ga[k], pa[k] };

			tb_make(&t[k], k == 3 ? 7 : NB, (uint64_t)k + 20);
			EXPECT(cu->train(s, &t[k].b, &h, &os) == 0);
			EXPECT(cu->train(a, &t[k].b, &h, &oa) == 0);
			EXPECT(cu->wait(a, 1) == 0);
		}
		EXPECT(cu->wait(a, 0) == 0);
		EXPECT(memcmp(ls, la, sizeof(ls)) == 0);
		EXPECT(memcmp(gs, ga, sizeof(gs)) == 0);
		EXPECT(memcmp(ps, pa, sizeof(ps)) == 0);
		cu->get_state(s, ss, ss + net.nparams,
		    ss + 2 * net.nparams);
		cu->get_state(a, sa, sa + net.nparams,
		    sa + 2 * net.nparams);
		EXPECT(memcmp(ss, sa, tot * 4) == 0);
	}
	if (s != NULL)
		cu->destroy(s);
	if (a != NULL)
		cu->destroy(a);
	free(ss);
	free(sa);
	rv_net_release(&net);
}

/* One batch, 60 steps: the loss falls well below its start; bad batches
 * are refused with a message and leave the backend usable. */
static void
test_learns(void)
{
	const struct rv_nn_ops *cu = rv_nn_cuda();
	struct rv_shape in = { 3, 12, 12 };
	struct rv_nn_hyper h = { 0.05f, 0.9f, 0.0f, 0.0f, 0 };
	struct rv_net net;
	struct tb t;
	float l[NB], first = 0, last = 0;
	struct rv_nn_out o = { l, NULL, NULL };
	void *b;

	if (rv_net_parse(&net, "cnn-small", in, CLASSES) < 0) {
		EXPECT(0);
		return;
	}
	b = make(cu, &net, RV_PREC_BF16, 0);
	EXPECT(b != NULL);
	if (b != NULL) {
		tb_make(&t, NB, 3);
		for (int k = 0; k < 60; k++) {
			double s = 0;

			t.b.step = (uint64_t)k;
			EXPECT(cu->train(b, &t.b, &h, &o) == 0);
			for (int i = 0; i < NB; i++)
				s += l[i];
			if (k == 0)
				first = (float)(s / NB);
			last = (float)(s / NB);
		}
		printf("# loss %.4f -> %.4f\n", first, last);
		EXPECT(last < 0.3f * first);
		t.labels[0] = CLASSES;
		EXPECT(cu->train(b, &t.b, &h, &o) == -1);
		EXPECT(strstr(rv_errmsg(), "out of range") != NULL);
		t.labels[0] = 0;
		t.b.n = NB + 1;
		EXPECT(cu->eval(b, &t.b, &o) == -1);
		t.b.n = NB;
		EXPECT(cu->eval(b, &t.b, &o) == 0);
		cu->destroy(b);
	}
	rv_net_release(&net);
}

int
main(void)
{
	ndev = rv_nn_cuda_devices();
	printf("# %d CUDA device%s\n", ndev, ndev == 1 ? "" : "s");
	rv_k_threads(1);
	RUN(test_dropout_masks);
	RUN(test_softmax);
	RUN(test_sgd);
	RUN(test_krsc);
	RUN(test_bn_nhwc);
	RUN(test_pools);
	RUN(test_input_permute);
	RUN(test_linear);
	RUN(test_no_device);
	SKIP_NO_DEVICE(test_agree_fp32);
	SKIP_NO_DEVICE(test_agree_tf32);
	SKIP_NO_DEVICE(test_agree_bf16);
	SKIP_NO_DEVICE(test_async_same);
	SKIP_NO_DEVICE(test_learns);
	return UNIT_DONE();
}

#endif
