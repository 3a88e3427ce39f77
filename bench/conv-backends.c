/*
 * conv-backends: the compute-library side of bench/conv-backends.sh.
 * Times the convolution layers of rv's models with oneDNN (the C API,
 * formats of its own choosing) and with rv's im2col + OpenBLAS kernels
 * (nn_kern.h), forward, backward-data and backward-weights, at one
 * thread count, and checks that both compute the same thing.
 *
 * usage: conv-backends [-r REPS] [-w WARMUP] [-t THREADS] LAYERS
 *   LAYERS  the table: NAME N CI H W CO K STRIDE PAD BIAS DX per line
 *           ('#' comments); DX 1 if a training step needs the input
 *           gradient (0 for a first layer fed by the image)
 *   -r      timed repetitions (default 25, at least 1)
 *   -w      untimed warm-up repetitions first (default 3)
 *   -t      threads for both libraries (default 2)
 * Prints, tab-separated, per layer:
 *   info NAME PASS IMPL FORMATS    oneDNN's implementation and layouts
 *   check NAME TENSOR MAXABS MAXREF  ours against oneDNN
 *   repro NAME OURS DNNL       1 if one more call gave the same bits
 *   time NAME PASS OURS_MS DNNL_MS REORDER_MS   medians
 * PASS: fwd, bwd_data, bwd_weights, bwd (both gradients).  Ours computes
 * dw in every backward call (nn_kern.h), so its bwd_weights is a call
 * with dx = NULL, its bwd one call with dx, and its bwd_data the
 * difference of the two medians.  oneDNN's bwd is the sum of its two
 * primitives.  REORDER_MS: the reorders that pass needs when its tensors
 * come and go in plain NCHW / OIHW (0 where oneDNN keeps that layout).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dnnl.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "nn/nn_kern.h"

#define MAXLAYERS	32

char *openblas_get_corename(void);	/* OpenBLAS, not in its cblas.h */

struct layer {
	char name[32];
	struct rv_conv_geom g;
	int bias, dx;
};

/* A tensor as the user holds it (plain) and as a primitive wants it. */
struct tensor {
	dnnl_memory_t user, work;	/* work == user when layouts agree */
	dnnl_primitive_t to_work, to_user;	/* NULL when they agree */
};

/* One layer's oneDNN state. */
struct dn {
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	dnnl_primitive_desc_t fpd, dpd, wpd;
	dnnl_primitive_t fwd, bwdd, bwdw;
	/* fwd: src, wei, dst; bwd-data: ddst, wei, dsrc; bwd-weights:
	 * src, ddst, dwei; bias and its gradient stay plain. */
	struct tensor f_src, f_wei, f_dst, d_ddst, d_wei, d_dsrc;
	struct tensor w_src, w_ddst, w_dwei;
	dnnl_memory_t bias, dbias;
};

/* Host buffers of one layer. */
struct bufs {
	float *x, *w, *b, *dy;		/* NCHW, OIHW: oneDNN inputs */
	float *xc, *dyc;		/* the same in CNHW, for ours */
	float *y, *dx, *dw, *db;	/* oneDNN's outputs, plain */
	float *yc, *dxc, *dwc, *dbc;	/* ours */
	float *ws;
	float *tmp;			/* ours transposed, for the checks */
};

static void __attribute__((format(printf, 1, 2), noreturn))
die(const char *fmt, ...)
{
	va_list ap;

	fputs("conv-backends: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void
dn_check(dnnl_status_t st, const char *what)
{
	if (st != dnnl_success)
		die("oneDNN: '%s': status %d", what, (int)st);
}
#define DN(call)	dn_check((call), #call)

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* len floats, 64-byte aligned, touched (first touch is slow here). */
static float *
falloc(size_t len)
{
	size_t sz = (len * sizeof(float) + 63) / 64 * 64;
	float *p;

	if (sz == 0)
		sz = 64;
	if ((p = aligned_alloc(64, sz)) == NULL)
		die("out of memory (%zu bytes)", sz);
	memset(p, 0, sz);
	return p;
}

/* Uniform in [-a, a) from a splitmix64 counter. */
static void
fill(float *p, size_t len, float a, uint64_t *s)
{
	size_t i;
	uint64_t z;

	for (i = 0; i < len; i++) {
		z = (*s += 0x9e3779b97f4a7c15u);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
		z ^= z >> 31;
		p[i] = a * (float)((double)(z >> 40) * 0x1.0p-23 - 1.0);
	}
}

/* [n][c][hw] <-> [c][n][hw] */
static void
swap_nc(const float *src, float *dst, int a, int b, size_t hw)
{
	int i, j;

	for (i = 0; i < a; i++)
		for (j = 0; j < b; j++)
			memcpy(dst + ((size_t)j * a + i) * hw,
			    src + ((size_t)i * b + j) * hw, hw * sizeof(float));
}

static int
cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* oneDNN's name for a blocked layout, e.g. aBcd16b (abcd: plain NCHW). */
static void
fmt_str(const dnnl_memory_desc_t *md, char *buf, size_t len)
{
	const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
	int blocked[DNNL_MAX_NDIMS] = { 0 }, order[DNNL_MAX_NDIMS];
	int i, j, t, nd = md->ndims;
	size_t off = 0;

	if (md->format_kind != dnnl_blocked) {
		snprintf(buf, len, "kind%d", (int)md->format_kind);
		return;
	}
	for (i = 0; i < bd->inner_nblks; i++)
		blocked[bd->inner_idxs[i]] = 1;
	for (i = 0; i < nd; i++)
		order[i] = i;
	/* Outer dimensions by falling stride; stable for equal ones. */
	for (i = 1; i < nd; i++)
		for (j = i; j > 0 && bd->strides[order[j - 1]] <
		    bd->strides[order[j]]; j--) {
			t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (i = 0; i < nd && off + 1 < len; i++)
		buf[off++] = (char)((blocked[order[i]] ? 'A' : 'a') + order[i]);
	buf[off] = '\0';
	for (i = 0; i < bd->inner_nblks && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%d%c",
		    (int)bd->inner_blks[i], 'a' + (int)bd->inner_idxs[i]);
}

static void
tensor_init(struct tensor *t, const struct dn *d,
    const dnnl_memory_desc_t *user_md, void *buf,
    const dnnl_memory_desc_t *work_md)
{
	dnnl_primitive_desc_t pd;

	memset(t, 0, sizeof(*t));
	DN(dnnl_memory_create(&t->user, user_md, d->eng, buf));
	if (dnnl_memory_desc_equal(user_md, work_md)) {
		t->work = t->user;
		return;
	}
	DN(dnnl_memory_create(&t->work, work_md, d->eng,
	    DNNL_MEMORY_ALLOCATE));
	DN(dnnl_reorder_primitive_desc_create(&pd, user_md, d->eng, work_md,
	    d->eng, NULL));
	DN(dnnl_primitive_create(&t->to_work, pd));
	DN(dnnl_primitive_desc_destroy(pd));
	DN(dnnl_reorder_primitive_desc_create(&pd, work_md, d->eng, user_md,
	    d->eng, NULL));
	DN(dnnl_primitive_create(&t->to_user, pd));
	DN(dnnl_primitive_desc_destroy(pd));
}

static void
tensor_release(struct tensor *t)
{
	if (t->work != t->user)
		DN(dnnl_memory_destroy(t->work));
	DN(dnnl_memory_destroy(t->user));
	if (t->to_work != NULL)
		DN(dnnl_primitive_destroy(t->to_work));
	if (t->to_user != NULL)
		DN(dnnl_primitive_destroy(t->to_user));
}

static void
reorder(const struct dn *d, dnnl_primitive_t r, dnnl_memory_t from,
    dnnl_memory_t to)
{
	dnnl_exec_arg_t a[2] = {
		{ DNNL_ARG_FROM, from }, { DNNL_ARG_TO, to },
	};

	if (r == NULL)
		return;
	DN(dnnl_primitive_execute(r, d->strm, 2, a));
	DN(dnnl_stream_wait(d->strm));
}

/* User layout to the primitive's (inputs), and back (outputs). */
static void
to_work(const struct dn *d, const struct tensor *t)
{
	reorder(d, t->to_work, t->user, t->work);
}

static void
to_user(const struct dn *d, const struct tensor *t)
{
	reorder(d, t->to_user, t->work, t->user);
}

static const char *
impl(const_dnnl_primitive_desc_t pd)
{
	const char *s = NULL;

	DN(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s));
	return s != NULL ? s : "?";
}

static const dnnl_memory_desc_t *
qmd(const_dnnl_primitive_desc_t pd, dnnl_query_t what)
{
	return dnnl_primitive_desc_query_md(pd, what, 0);
}

static void
dn_init(struct dn *d, const struct layer *l, struct bufs *b)
{
	const struct rv_conv_geom *g = &l->g;
	dnnl_memory_desc_t x_md, w_md, y_md, b_md, xa, wa, ya;
	dnnl_dims_t xd = { g->n, g->ci, g->h, g->w };
	dnnl_dims_t wd = { g->co, g->ci, g->k, g->k };
	dnnl_dims_t yd = { g->n, g->co, g->oh, g->ow };
	dnnl_dims_t bd = { g->co };
	dnnl_dims_t st = { g->stride, g->stride };
	dnnl_dims_t pl = { g->pad, g->pad };
	/* Right padding as ideep (PyTorch) computes it. */
	dnnl_dims_t pr = {
		(g->oh - 1) * g->stride + g->k - g->h - g->pad,
		(g->ow - 1) * g->stride + g->k - g->w - g->pad,
	};
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t pd;
	char f1[64], f2[64], f3[64];

	DN(dnnl_memory_desc_init_by_tag(&x_md, 4, xd, dnnl_f32, dnnl_nchw));
	DN(dnnl_memory_desc_init_by_tag(&w_md, 4, wd, dnnl_f32, dnnl_oihw));
	DN(dnnl_memory_desc_init_by_tag(&y_md, 4, yd, dnnl_f32, dnnl_nchw));
	DN(dnnl_memory_desc_init_by_tag(&b_md, 1, bd, dnnl_f32, dnnl_x));
	DN(dnnl_memory_desc_init_by_tag(&xa, 4, xd, dnnl_f32,
	    dnnl_format_tag_any));
	DN(dnnl_memory_desc_init_by_tag(&wa, 4, wd, dnnl_f32,
	    dnnl_format_tag_any));
	DN(dnnl_memory_desc_init_by_tag(&ya, 4, yd, dnnl_f32,
	    dnnl_format_tag_any));

	/* Direct convolution, as PyTorch's ideep asks for. */
	DN(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training,
	    dnnl_convolution_direct, &xa, &wa, l->bias ? &b_md : NULL, &ya,
	    st, pl, pr));
	DN(dnnl_primitive_desc_create(&d->fpd, &cd, NULL, d->eng, NULL));
	DN(dnnl_convolution_backward_data_desc_init(&cd,
	    dnnl_convolution_direct, &xa, &wa, &ya, st, pl, pr));
	DN(dnnl_primitive_desc_create(&d->dpd, &cd, NULL, d->eng, d->fpd));
	DN(dnnl_convolution_backward_weights_desc_init(&cd,
	    dnnl_convolution_direct, &xa, &wa, l->bias ? &b_md : NULL, &ya,
	    st, pl, pr));
	DN(dnnl_primitive_desc_create(&d->wpd, &cd, NULL, d->eng, d->fpd));
	DN(dnnl_primitive_create(&d->fwd, d->fpd));
	DN(dnnl_primitive_create(&d->bwdd, d->dpd));
	DN(dnnl_primitive_create(&d->bwdw, d->wpd));

	pd = d->fpd;
	tensor_init(&d->f_src, d, &x_md, b->x, qmd(pd, dnnl_query_src_md));
	tensor_init(&d->f_wei, d, &w_md, b->w,
	    qmd(pd, dnnl_query_weights_md));
	tensor_init(&d->f_dst, d, &y_md, b->y, qmd(pd, dnnl_query_dst_md));
	fmt_str(qmd(pd, dnnl_query_src_md), f1, sizeof(f1));
	fmt_str(qmd(pd, dnnl_query_weights_md), f2, sizeof(f2));
	fmt_str(qmd(pd, dnnl_query_dst_md), f3, sizeof(f3));
	printf("info\t%s\tfwd\t%s\tsrc %s, wei %s, dst %s\n", l->name,
	    impl(pd), f1, f2, f3);
	pd = d->dpd;
	tensor_init(&d->d_ddst, d, &y_md, b->dy,
	    qmd(pd, dnnl_query_diff_dst_md));
	tensor_init(&d->d_wei, d, &w_md, b->w,
	    qmd(pd, dnnl_query_weights_md));
	tensor_init(&d->d_dsrc, d, &x_md, b->dx,
	    qmd(pd, dnnl_query_diff_src_md));
	fmt_str(qmd(pd, dnnl_query_diff_dst_md), f1, sizeof(f1));
	fmt_str(qmd(pd, dnnl_query_weights_md), f2, sizeof(f2));
	fmt_str(qmd(pd, dnnl_query_diff_src_md), f3, sizeof(f3));
	printf("info\t%s\tbwd_data\t%s\tddst %s, wei %s, dsrc %s\n",
	    l->name, impl(pd), f1, f2, f3);
	pd = d->wpd;
	tensor_init(&d->w_src, d, &x_md, b->x, qmd(pd, dnnl_query_src_md));
	tensor_init(&d->w_ddst, d, &y_md, b->dy,
	    qmd(pd, dnnl_query_diff_dst_md));
	tensor_init(&d->w_dwei, d, &w_md, b->dw,
	    qmd(pd, dnnl_query_diff_weights_md));
	fmt_str(qmd(pd, dnnl_query_src_md), f1, sizeof(f1));
	fmt_str(qmd(pd, dnnl_query_diff_dst_md), f2, sizeof(f2));
	fmt_str(qmd(pd, dnnl_query_diff_weights_md), f3, sizeof(f3));
	printf("info\t%s\tbwd_weights\t%s\tsrc %s, ddst %s, dwei %s\n",
	    l->name, impl(pd), f1, f2, f3);
	d->bias = d->dbias = NULL;
	if (l->bias) {
		DN(dnnl_memory_create(&d->bias, &b_md, d->eng, b->b));
		DN(dnnl_memory_create(&d->dbias, &b_md, d->eng, b->db));
	}

	/* Inputs into the primitives' layouts once; the timed primitives
	 * then run on them (a real backend would keep them so). */
	to_work(d, &d->f_src);
	to_work(d, &d->f_wei);
	to_work(d, &d->d_ddst);
	to_work(d, &d->d_wei);
	to_work(d, &d->w_src);
	to_work(d, &d->w_ddst);
}

static void
dn_release(struct dn *d)
{
	struct tensor *t[] = { &d->f_src, &d->f_wei, &d->f_dst, &d->d_ddst,
	    &d->d_wei, &d->d_dsrc, &d->w_src, &d->w_ddst, &d->w_dwei };
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		tensor_release(t[i]);
	if (d->bias != NULL) {
		DN(dnnl_memory_destroy(d->bias));
		DN(dnnl_memory_destroy(d->dbias));
	}
	DN(dnnl_primitive_destroy(d->fwd));
	DN(dnnl_primitive_destroy(d->bwdd));
	DN(dnnl_primitive_destroy(d->bwdw));
	DN(dnnl_primitive_desc_destroy(d->fpd));
	DN(dnnl_primitive_desc_destroy(d->dpd));
	DN(dnnl_primitive_desc_destroy(d->wpd));
}

static void
dn_fwd(const struct dn *d)
{
	dnnl_exec_arg_t a[4] = {
		{ DNNL_ARG_SRC, d->f_src.work },
		{ DNNL_ARG_WEIGHTS, d->f_wei.work },
		{ DNNL_ARG_DST, d->f_dst.work },
		{ DNNL_ARG_BIAS, d->bias },
	};

	DN(dnnl_primitive_execute(d->fwd, d->strm, d->bias ? 4 : 3, a));
	DN(dnnl_stream_wait(d->strm));
}

static void
dn_bwd_data(const struct dn *d)
{
	dnnl_exec_arg_t a[3] = {
		{ DNNL_ARG_DIFF_DST, d->d_ddst.work },
		{ DNNL_ARG_WEIGHTS, d->d_wei.work },
		{ DNNL_ARG_DIFF_SRC, d->d_dsrc.work },
	};

	DN(dnnl_primitive_execute(d->bwdd, d->strm, 3, a));
	DN(dnnl_stream_wait(d->strm));
}

static void
dn_bwd_weights(const struct dn *d)
{
	dnnl_exec_arg_t a[4] = {
		{ DNNL_ARG_SRC, d->w_src.work },
		{ DNNL_ARG_DIFF_DST, d->w_ddst.work },
		{ DNNL_ARG_DIFF_WEIGHTS, d->w_dwei.work },
		{ DNNL_ARG_DIFF_BIAS, d->dbias },
	};

	DN(dnnl_primitive_execute(d->bwdw, d->strm, d->dbias ? 4 : 3, a));
	DN(dnnl_stream_wait(d->strm));
}

/* The reorders each pass needs when its tensors are plain. */
static void
dn_reorders(const struct dn *d, int pass)
{
	switch (pass) {
	case 0:
		to_work(d, &d->f_src);
		to_work(d, &d->f_wei);
		to_user(d, &d->f_dst);
		break;
	case 1:
		to_work(d, &d->d_ddst);
		to_work(d, &d->d_wei);
		to_user(d, &d->d_dsrc);
		break;
	default:
		to_work(d, &d->w_src);
		to_work(d, &d->w_ddst);
		to_user(d, &d->w_dwei);
		break;
	}
}

/* Largest |a - b| and |b| over len floats. */
static void
diff(const char *name, const char *what, const float *a, const float *b,
    size_t len)
{
	double m = 0, r = 0, e;
	size_t i;

	for (i = 0; i < len; i++) {
		e = fabs((double)a[i] - b[i]);
		if (e > m || isnan(e))
			m = e;
		if (fabs(b[i]) > r)
			r = fabs(b[i]);
	}
	printf("check\t%s\t%s\t%.3g\t%.3g\n", name, what, m, r);
}

/*
 * Run to run: one more call of every pass must give the same bits (the
 * contract of nn_kern.h for a given thread count).
 */
static void
repro(const struct layer *l, const struct dn *d, const struct bufs *b)
{
	const struct rv_conv_geom *g = &l->g;
	size_t xn = (size_t)g->n * g->ci * g->h * g->w;
	size_t yn = (size_t)g->n * g->co * g->oh * g->ow;
	size_t wn = (size_t)g->co * g->ci * g->k * g->k;
	float *s = falloc(yn + xn + wn);
	int ours, dnnl;

	memcpy(s, b->yc, yn * sizeof(*s));
	memcpy(s + yn, b->dxc, xn * sizeof(*s));
	memcpy(s + yn + xn, b->dwc, wn * sizeof(*s));
	rv_k_conv_fwd(g, b->xc, b->w, l->bias ? b->b : NULL, b->yc, b->ws);
	rv_k_conv_bwd(g, b->xc, b->w, b->dyc, b->dxc, b->dwc,
	    l->bias ? b->dbc : NULL, b->ws);
	ours = memcmp(s, b->yc, yn * sizeof(*s)) == 0 &&
	    memcmp(s + yn, b->dxc, xn * sizeof(*s)) == 0 &&
	    memcmp(s + yn + xn, b->dwc, wn * sizeof(*s)) == 0;
	/* oneDNN's outputs are in the plain buffers (the checks). */
	memcpy(s, b->y, yn * sizeof(*s));
	memcpy(s + yn, b->dx, xn * sizeof(*s));
	memcpy(s + yn + xn, b->dw, wn * sizeof(*s));
	dn_fwd(d);
	dn_bwd_data(d);
	dn_bwd_weights(d);
	to_user(d, &d->f_dst);
	to_user(d, &d->d_dsrc);
	to_user(d, &d->w_dwei);
	dnnl = memcmp(s, b->y, yn * sizeof(*s)) == 0 &&
	    memcmp(s + yn, b->dx, xn * sizeof(*s)) == 0 &&
	    memcmp(s + yn + xn, b->dw, wn * sizeof(*s)) == 0;
	printf("repro\t%s\t%d\t%d\n", l->name, ours, dnnl);
	free(s);
}

enum {
	T_OFWD, T_OBWDW, T_OBWD,
	T_DFWD, T_DBWDD, T_DBWDW,
	T_RFWD, T_RBWDD, T_RBWDW,
	NT
};

static void
run_layer(const struct layer *l, dnnl_engine_t eng, dnnl_stream_t strm,
    int reps, int warm)
{
	const struct rv_conv_geom *g = &l->g;
	size_t xn = (size_t)g->n * g->ci * g->h * g->w;
	size_t yn = (size_t)g->n * g->co * g->oh * g->ow;
	size_t wn = (size_t)g->co * g->ci * g->k * g->k;
	size_t hw = (size_t)g->h * g->w, ohw = (size_t)g->oh * g->ow;
	uint64_t seed = 0x5eed;
	struct bufs b;
	struct dn d;
	double *t[NT], t0, m[NT];
	int i, r, side;

	memset(&b, 0, sizeof(b));
	b.x = falloc(xn);
	b.w = falloc(wn);
	b.b = falloc((size_t)g->co);
	b.dy = falloc(yn);
	b.xc = falloc(xn);
	b.dyc = falloc(yn);
	b.y = falloc(yn);
	b.dx = falloc(xn);
	b.dw = falloc(wn);
	b.db = falloc((size_t)g->co);
	b.yc = falloc(yn);
	b.dxc = falloc(xn);
	b.dwc = falloc(wn);
	b.dbc = falloc((size_t)g->co);
	b.ws = falloc(rv_k_conv_ws(g));
	b.tmp = falloc(xn > yn ? xn : yn);
	/* torch's default initialisation range; inputs and gradients in
	 * [-1, 1), so results are O(sqrt(fan_in)) at most. */
	fill(b.x, xn, 1.0f, &seed);
	fill(b.dy, yn, 1.0f, &seed);
	fill(b.w, wn, 1.0f / sqrtf((float)(g->ci * g->k * g->k)), &seed);
	fill(b.b, (size_t)g->co, 1.0f / sqrtf((float)(g->ci * g->k * g->k)),
	    &seed);
	swap_nc(b.x, b.xc, g->n, g->ci, hw);
	swap_nc(b.dy, b.dyc, g->n, g->co, ohw);

	memset(&d, 0, sizeof(d));
	d.eng = eng;
	d.strm = strm;
	dn_init(&d, l, &b);

	for (i = 0; i < NT; i++) {
		t[i] = malloc((size_t)reps * sizeof(double));
		if (t[i] == NULL)
			die("out of memory");
	}
	/* Calls alternate between the libraries, which of them goes first
	 * too, so both see the same load from the rest of the machine. */
	for (r = -warm; r < reps; r++) {
		for (side = 0; side < 2; side++) {
			if ((side ^ (r & 1)) == 0) {
				t0 = now_ms();
				rv_k_conv_fwd(g, b.xc, b.w,
				    l->bias ? b.b : NULL, b.yc, b.ws);
				m[T_OFWD] = now_ms() - t0;
				t0 = now_ms();
				rv_k_conv_bwd(g, b.xc, b.w, b.dyc, NULL,
				    b.dwc, l->bias ? b.dbc : NULL, b.ws);
				m[T_OBWDW] = now_ms() - t0;
				t0 = now_ms();
				rv_k_conv_bwd(g, b.xc, b.w, b.dyc, b.dxc,
				    b.dwc, l->bias ? b.dbc : NULL, b.ws);
				m[T_OBWD] = now_ms() - t0;
			} else {
				t0 = now_ms();
				dn_fwd(&d);
				m[T_DFWD] = now_ms() - t0;
				t0 = now_ms();
				dn_bwd_data(&d);
				m[T_DBWDD] = now_ms() - t0;
				t0 = now_ms();
				dn_bwd_weights(&d);
				m[T_DBWDW] = now_ms() - t0;
				for (i = 0; i < 3; i++) {
					t0 = now_ms();
					dn_reorders(&d, i);
					m[T_RFWD + i] = now_ms() - t0;
				}
			}
		}
		if (r >= 0)
			for (i = 0; i < NT; i++)
				t[i][r] = m[i];
	}

	/* Outputs of the last calls, in plain layouts, compared. */
	to_user(&d, &d.f_dst);
	to_user(&d, &d.d_dsrc);
	to_user(&d, &d.w_dwei);
	swap_nc(b.yc, b.tmp, g->co, g->n, ohw);
	diff(l->name, "y", b.tmp, b.y, yn);
	swap_nc(b.dxc, b.tmp, g->ci, g->n, hw);
	diff(l->name, "dx", b.tmp, b.dx, xn);
	diff(l->name, "dw", b.dwc, b.dw, wn);
	if (l->bias)
		diff(l->name, "db", b.dbc, b.db, (size_t)g->co);
	repro(l, &d, &b);

	for (i = 0; i < NT; i++)
		m[i] = median(t[i], reps);
	printf("time\t%s\tfwd\t%.4f\t%.4f\t%.4f\n", l->name, m[T_OFWD],
	    m[T_DFWD], m[T_RFWD]);
	printf("time\t%s\tbwd_data\t%.4f\t%.4f\t%.4f\n", l->name,
	    m[T_OBWD] - m[T_OBWDW], m[T_DBWDD], m[T_RBWDD]);
	printf("time\t%s\tbwd_weights\t%.4f\t%.4f\t%.4f\n", l->name,
	    m[T_OBWDW], m[T_DBWDW], m[T_RBWDW]);
	printf("time\t%s\tbwd\t%.4f\t%.4f\t%.4f\n", l->name, m[T_OBWD],
	    m[T_DBWDD] + m[T_DBWDW], m[T_RBWDD] + m[T_RBWDW]);
	fflush(stdout);

	for (i = 0; i < NT; i++)
		free(t[i]);
	dn_release(&d);
	free(b.x);
	free(b.w);
	free(b.b);
	free(b.dy);
	free(b.xc);
	free(b.dyc);
	free(b.y);
	free(b.dx);
	free(b.dw);
	free(b.db);
	free(b.yc);
	free(b.dxc);
	free(b.dwc);
	free(b.dbc);
	free(b.ws);
	free(b.tmp);
}

static int
read_layers(const char *path, struct layer *l)
{
	char line[256];
	FILE *f;
	int n = 0, lineno = 0, got;
	struct rv_conv_geom *g;

	if ((f = fopen(path, "r")) == NULL)
		die("'%s': cannot open", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		if (line[strspn(line, " \t\n")] == '\0' ||
		    line[strspn(line, " \t")] == '#')
			continue;
		if (n == MAXLAYERS)
			die("'%s': more than %d layers", path, MAXLAYERS);
		g = &l[n].g;
		got = sscanf(line, "%31s %d %d %d %d %d %d %d %d %d %d",
		    l[n].name, &g->n, &g->ci, &g->h, &g->w, &g->co, &g->k,
		    &g->stride, &g->pad, &l[n].bias, &l[n].dx);
		if (got != 11 || g->n < 1 || g->ci < 1 || g->h < 1 ||
		    g->w < 1 || g->co < 1 || g->k < 1 || g->stride < 1 ||
		    g->pad < 0 || g->h + 2 * g->pad < g->k ||
		    g->w + 2 * g->pad < g->k)
			die("'%s': line %d: bad layer", path, lineno);
		g->oh = (g->h + 2 * g->pad - g->k) / g->stride + 1;
		g->ow = (g->w + 2 * g->pad - g->k) / g->stride + 1;
		n++;
	}
	if (ferror(f))
		die("'%s': read error", path);
	fclose(f);
	return n;
}

/* Times every layer of the table with both libraries. */
int
main(int argc, char **argv)
{
	static struct layer layers[MAXLAYERS];
	int reps = 25, warm = 3, threads = 2, nl, i, c;
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	const dnnl_version_t *v;

	while ((c = getopt(argc, argv, "r:t:w:")) != -1) {
		switch (c) {
		case 'r':
			reps = atoi(optarg);
			break;
		case 't':
			threads = atoi(optarg);
			break;
		case 'w':
			warm = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || reps < 1 || warm < 0 || threads < 1)
		goto usage;
	nl = read_layers(argv[optind], layers);

	rv_k_threads(threads);
#ifdef _OPENMP
	omp_set_num_threads(threads);
#endif
	DN(dnnl_engine_create(&eng, dnnl_cpu, 0));
	DN(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
	v = dnnl_version();
	printf("# oneDNN %d.%d.%d (%s runtime), OpenBLAS core %s; "
	    "%d threads, %d reps after %d warm-up\n", v->major, v->minor,
	    v->patch, v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other",
	    openblas_get_corename(), threads, reps, warm);
	for (i = 0; i < nl; i++)
		run_layer(&layers[i], eng, strm, reps, warm);
	DN(dnnl_stream_destroy(strm));
	DN(dnnl_engine_destroy(eng));
	if (fflush(stdout) != 0 || ferror(stdout))
		die("write error");
	return 0;
usage:
	fprintf(stderr, "usage: conv-backends [-r REPS] [-w WARMUP] "
	    "[-t THREADS] LAYERS\n");
	return 2;
}
