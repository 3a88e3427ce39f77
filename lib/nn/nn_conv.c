/*
 * Convolution plans (nn_conv.h) on oneDNN 2.x (the C API, operation
 * descriptors): per batch size a forward, a backward-weights and a
 * backward-data primitive in layouts of oneDNN's choosing, with reorders
 * from and to our CNHW tensors.  bench/README.md, "Convolution backends":
 * 1.55x (cnn-small) and 2.4x (resnet20) over im2col + OpenBLAS even
 * paying those reorders at every layer, and the same bits run to run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>
#include <dnnl_debug.h>

#include "base/err.h"
#include "nn/nn_conv.h"
#include "nn/nn_kern.h"
#include "nn/nn_kern_impl.h"

/* Batch sizes whose primitives are kept: training, its short last
 * batch, evaluation. */
#define CONV_CACHE	3

/* One primitive and the memory object for its scratchpad (NULL: none). */
struct prim {
	dnnl_primitive_t p;
	dnnl_memory_t scr;
};

/*
 * One tensor a primitive reads or writes: the caller's memory in our
 * layout and, when the primitive wants another, its own (backed by the
 * plan buffer `buf`) with the reorder between them: user to work for an
 * input, work to user for an output.
 */
struct opnd {
	dnnl_memory_t user;
	dnnl_memory_t work;	/* NULL: the primitive takes user as is */
	struct prim re;
	int buf;
};

/* The plan's buffers behind work memories and scratchpads. */
enum { B_X, B_Y, B_WF, B_WD, B_DW, B_SCR, NBUF };

/* The primitives for one batch size; bwd is built on first need. */
struct entry {
	int n;			/* 0: empty */
	unsigned long used;
	int has_bwd;
	dnnl_primitive_desc_t fpd;	/* kept: the backward ones' hint */
	struct prim fwd, bwdw, bwdd;
	struct opnd f_src, f_wei, f_dst, bias;
	struct opnd w_src, w_ddst, w_dwei;
	struct opnd d_ddst, d_wei, d_dsrc;
	int ddst_shared;	/* bwdd reads bwdw's diff_dst as it is */
};

struct rv_conv_plan {
	struct rv_conv_geom g;
	int fallback;		/* run on rv_k_conv_* */
	float *ws;		/* fallback: their workspace */
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	dnnl_primitive_attr_t attr;	/* user scratchpad */
	float *zero;		/* co zeros: the bias of a bias-less call */
	void *buf[NBUF];
	size_t cap[NBUF];	/* bytes */
	unsigned long clock;
	struct entry e[CONV_CACHE];
};

static int
dn_err(const char *what, dnnl_status_t st)
{
	return rv_seterr("conv: oneDNN: %s: %s", what, dnnl_status2str(st));
}

#define DN(call, what) do { \
	dnnl_status_t st_ = (call); \
	if (st_ != dnnl_success) \
		return dn_err((what), st_); \
} while (0)

/*
 * Which convolutions stay on im2col + OpenBLAS.  1x1 unpadded ones (the
 * projection shortcuts): their im2col is a copy or none, and with the
 * reorders oneDNN loses there (bench/README.md: r20.p2 step 0.81x, r20.p3
 * 0.61x of ours, x+r column).
 */
static int
use_fallback(const struct rv_conv_geom *g)
{
	return g->k == 1 && g->pad == 0;
}

static int
geom_ok(const struct rv_conv_geom *g)
{
	long long eh, ew;

	if (g->n < 1 || g->ci < 1 || g->h < 1 || g->w < 1 || g->co < 1 ||
	    g->k < 1 || g->stride < 1 || g->pad < 0 ||
	    g->h + 2LL * g->pad < g->k || g->w + 2LL * g->pad < g->k)
		return 0;
	eh = (g->h + 2LL * g->pad - g->k) / g->stride + 1;
	ew = (g->w + 2LL * g->pad - g->k) / g->stride + 1;
	return g->oh == eh && g->ow == ew &&
	    (unsigned long long)g->n * g->ci * g->h * g->w < (1ULL << 40) &&
	    (unsigned long long)g->n * g->co * g->oh * g->ow < (1ULL << 40);
}

static void
prim_release(struct prim *pr)
{
	if (pr->p != NULL)
		dnnl_primitive_destroy(pr->p);
	if (pr->scr != NULL)
		dnnl_memory_destroy(pr->scr);
	pr->p = NULL;
	pr->scr = NULL;
}

static void
opnd_release(struct opnd *o)
{
	if (o->user != NULL)
		dnnl_memory_destroy(o->user);
	if (o->work != NULL)
		dnnl_memory_destroy(o->work);
	prim_release(&o->re);
	o->user = o->work = NULL;
}

static void
entry_release(struct entry *e)
{
	struct opnd *o[] = { &e->f_src, &e->f_wei, &e->f_dst, &e->bias,
	    &e->w_src, &e->w_ddst, &e->w_dwei, &e->d_ddst, &e->d_wei,
	    &e->d_dsrc };
	size_t i;

	for (i = 0; i < sizeof(o) / sizeof(o[0]); i++)
		opnd_release(o[i]);
	prim_release(&e->fwd);
	prim_release(&e->bwdw);
	prim_release(&e->bwdd);
	if (e->fpd != NULL)
		dnnl_primitive_desc_destroy(e->fpd);
	memset(e, 0, sizeof(*e));
}

/* Buffer b of at least len bytes (contents not kept: all are scratch). */
static int
grow(struct rv_conv_plan *p, int b, size_t len)
{
	void *q;

	if (len <= p->cap[b])
		return 0;
	len = (len + 63) & ~(size_t)63;
	if (posix_memalign(&q, 64, len) != 0)
		return rv_seterr("conv: %zu bytes of scratch: out of memory",
		    len);
	free(p->buf[b]);
	p->buf[b] = q;
	p->cap[b] = len;
	return 0;
}

/* The primitive of pd, its scratchpad sized into B_SCR. */
static int
prim_init(struct rv_conv_plan *p, struct prim *pr,
    const_dnnl_primitive_desc_t pd)
{
	const dnnl_memory_desc_t *md;
	size_t len;

	md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	len = md != NULL ? dnnl_memory_desc_get_size(md) : 0;
	if (len > 0) {
		if (grow(p, B_SCR, len) == -1)
			return -1;
		DN(dnnl_memory_create(&pr->scr, md, p->eng, DNNL_MEMORY_NONE),
		    "scratchpad memory");
	}
	DN(dnnl_primitive_create(&pr->p, pd), "primitive");
	return 0;
}

/*
 * Operand o: user memory of user_md, and when the primitive wants
 * work_md instead, work memory over buffer b and the reorder (to work
 * for an input, to user for an output).
 */
static int
opnd_init(struct rv_conv_plan *p, struct opnd *o,
    const dnnl_memory_desc_t *user_md, const dnnl_memory_desc_t *work_md,
    int b, int input)
{
	dnnl_primitive_desc_t rpd;
	int r;

	DN(dnnl_memory_create(&o->user, user_md, p->eng, DNNL_MEMORY_NONE),
	    "memory");
	o->buf = b;
	if (work_md == NULL || dnnl_memory_desc_equal(user_md, work_md))
		return 0;
	if (grow(p, b, dnnl_memory_desc_get_size(work_md)) == -1)
		return -1;
	DN(dnnl_memory_create(&o->work, work_md, p->eng, DNNL_MEMORY_NONE),
	    "memory");
	DN(dnnl_reorder_primitive_desc_create(&rpd,
	    input ? user_md : work_md, p->eng, input ? work_md : user_md,
	    p->eng, p->attr), "reorder");
	r = prim_init(p, &o->re, rpd);
	dnnl_primitive_desc_destroy(rpd);
	return r;
}

/* Our CNHW tensor [c][n][h][w] as oneDNN's (n, c, h, w) dims: bacd. */
static int
act_md(dnnl_memory_desc_t *md, int n, int c, int h, int w, int any)
{
	dnnl_dims_t d = { n, c, h, w };

	DN(dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32,
	    any ? dnnl_format_tag_any : dnnl_bacd), "memory descriptor");
	return 0;
}

static int
wei_md(dnnl_memory_desc_t *md, const struct rv_conv_geom *g, int any)
{
	dnnl_dims_t d = { g->co, g->ci, g->k, g->k };

	DN(dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32,
	    any ? dnnl_format_tag_any : dnnl_oihw), "memory descriptor");
	return 0;
}

/* Strides and paddings; the right padding as PyTorch (ideep) has it. */
static void
conv_dims(const struct rv_conv_geom *g, dnnl_dims_t st, dnnl_dims_t pl,
    dnnl_dims_t pr)
{
	st[0] = st[1] = g->stride;
	pl[0] = pl[1] = g->pad;
	pr[0] = (g->oh - 1) * (dnnl_dim_t)g->stride + g->k - g->h - g->pad;
	pr[1] = (g->ow - 1) * (dnnl_dim_t)g->stride + g->k - g->w - g->pad;
}

static const dnnl_memory_desc_t *
qmd(const_dnnl_primitive_desc_t pd, dnnl_query_t what)
{
	return dnnl_primitive_desc_query_md(pd, what, 0);
}

/* Forward primitive for e->n, always with a bias (zeros when none). */
static int
build_fwd(struct rv_conv_plan *p, struct entry *e)
{
	const struct rv_conv_geom *g = &p->g;
	dnnl_memory_desc_t x, y, w, xa, ya, wa, b;
	dnnl_dims_t bd = { g->co }, st, pl, pr;
	dnnl_convolution_desc_t cd;

	if (act_md(&x, e->n, g->ci, g->h, g->w, 0) == -1 ||
	    act_md(&xa, e->n, g->ci, g->h, g->w, 1) == -1 ||
	    act_md(&y, e->n, g->co, g->oh, g->ow, 0) == -1 ||
	    act_md(&ya, e->n, g->co, g->oh, g->ow, 1) == -1 ||
	    wei_md(&w, g, 0) == -1 || wei_md(&wa, g, 1) == -1)
		return -1;
	DN(dnnl_memory_desc_init_by_tag(&b, 1, bd, dnnl_f32, dnnl_x),
	    "memory descriptor");
	conv_dims(g, st, pl, pr);
	DN(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training,
	    dnnl_convolution_direct, &xa, &wa, &b, &ya, st, pl, pr),
	    "forward convolution");
	DN(dnnl_primitive_desc_create(&e->fpd, &cd, p->attr, p->eng, NULL),
	    "forward convolution");
	if (prim_init(p, &e->fwd, e->fpd) == -1 ||
	    opnd_init(p, &e->f_src, &x, qmd(e->fpd, dnnl_query_src_md), B_X,
	    1) == -1 ||
	    opnd_init(p, &e->f_wei, &w, qmd(e->fpd, dnnl_query_weights_md),
	    B_WF, 1) == -1 ||
	    opnd_init(p, &e->f_dst, &y, qmd(e->fpd, dnnl_query_dst_md), B_Y,
	    0) == -1 ||
	    opnd_init(p, &e->bias, &b, NULL, 0, 1) == -1)
		return -1;
	return 0;
}

/*
 * Backward primitives for e->n.  Backward runs weights first, then data:
 * by then the source in B_X is dead, so diff_src reuses B_X, and
 * diff_dst is reused as it is if both want the same layout (else
 * reordered again into B_Y).  db is ours (rv_k_sum_rows): no bias here.
 */
static int
build_bwd(struct rv_conv_plan *p, struct entry *e)
{
	const struct rv_conv_geom *g = &p->g;
	dnnl_memory_desc_t x, y, w, xa, ya, wa;
	dnnl_dims_t st, pl, pr;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t wpd = NULL, dpd = NULL;
	int r = -1;

	if (act_md(&x, e->n, g->ci, g->h, g->w, 0) == -1 ||
	    act_md(&xa, e->n, g->ci, g->h, g->w, 1) == -1 ||
	    act_md(&y, e->n, g->co, g->oh, g->ow, 0) == -1 ||
	    act_md(&ya, e->n, g->co, g->oh, g->ow, 1) == -1 ||
	    wei_md(&w, g, 0) == -1 || wei_md(&wa, g, 1) == -1)
		return -1;
	conv_dims(g, st, pl, pr);
	DN(dnnl_convolution_backward_weights_desc_init(&cd,
	    dnnl_convolution_direct, &xa, &wa, NULL, &ya, st, pl, pr),
	    "backward-weights convolution");
	DN(dnnl_primitive_desc_create(&wpd, &cd, p->attr, p->eng, e->fpd),
	    "backward-weights convolution");
	if (dnnl_convolution_backward_data_desc_init(&cd,
	    dnnl_convolution_direct, &xa, &wa, &ya, st, pl, pr) !=
	    dnnl_success ||
	    dnnl_primitive_desc_create(&dpd, &cd, p->attr, p->eng,
	    e->fpd) != dnnl_success) {
		rv_seterr("conv: oneDNN: backward-data convolution: no "
		    "implementation");
		goto out;
	}
	if (prim_init(p, &e->bwdw, wpd) == -1 ||
	    prim_init(p, &e->bwdd, dpd) == -1 ||
	    opnd_init(p, &e->w_src, &x, qmd(wpd, dnnl_query_src_md), B_X,
	    1) == -1 ||
	    opnd_init(p, &e->w_ddst, &y, qmd(wpd, dnnl_query_diff_dst_md),
	    B_Y, 1) == -1 ||
	    opnd_init(p, &e->w_dwei, &w,
	    qmd(wpd, dnnl_query_diff_weights_md), B_DW, 0) == -1 ||
	    opnd_init(p, &e->d_wei, &w, qmd(dpd, dnnl_query_weights_md),
	    B_WD, 1) == -1 ||
	    opnd_init(p, &e->d_dsrc, &x, qmd(dpd, dnnl_query_diff_src_md),
	    B_X, 0) == -1)
		goto out;
	e->ddst_shared = dnnl_memory_desc_equal(
	    qmd(wpd, dnnl_query_diff_dst_md), qmd(dpd, dnnl_query_diff_dst_md));
	if (!e->ddst_shared && opnd_init(p, &e->d_ddst, &y,
	    qmd(dpd, dnnl_query_diff_dst_md), B_Y, 1) == -1)
		goto out;
	e->has_bwd = 1;
	r = 0;
out:
	if (wpd != NULL)
		dnnl_primitive_desc_destroy(wpd);
	if (dpd != NULL)
		dnnl_primitive_desc_destroy(dpd);
	return r;
}

/* The cache entry for n, built (forward; backward too if bwd). */
static struct entry *
entry_get(struct rv_conv_plan *p, int n, int bwd)
{
	struct entry *e = NULL;
	int i;

	if (n < 1 || n > p->g.n) {
		rv_seterr("conv: batch of %d samples: expected 1 to %d", n,
		    p->g.n);
		return NULL;
	}
	for (i = 0; i < CONV_CACHE && e == NULL; i++)
		if (p->e[i].n == n)
			e = &p->e[i];
	if (e == NULL) {
		/* An empty slot, else the least recently used. */
		e = &p->e[0];
		for (i = 1; i < CONV_CACHE; i++)
			if (p->e[i].used < e->used)
				e = &p->e[i];
		entry_release(e);
		e->n = n;
		if (build_fwd(p, e) == -1) {
			entry_release(e);
			return NULL;
		}
	}
	if (bwd && !e->has_bwd && build_bwd(p, e) == -1) {
		entry_release(e);
		return NULL;
	}
	e->used = ++p->clock;
	return e;
}

/* Runs pr with nargs arguments, plus its scratchpad. */
static int
run(struct rv_conv_plan *p, struct prim *pr, int nargs,
    const dnnl_exec_arg_t *args)
{
	dnnl_exec_arg_t a[8];

	memcpy(a, args, (size_t)nargs * sizeof(*a));
	if (pr->scr != NULL) {
		DN(dnnl_memory_set_data_handle(pr->scr, p->buf[B_SCR]),
		    "scratchpad");
		a[nargs].arg = DNNL_ARG_SCRATCHPAD;
		a[nargs++].memory = pr->scr;
	}
	DN(dnnl_primitive_execute(pr->p, p->strm, nargs, a), "execute");
	DN(dnnl_stream_wait(p->strm), "stream");
	return 0;
}

static int
reorder(struct rv_conv_plan *p, struct prim *pr, dnnl_memory_t from,
    dnnl_memory_t to)
{
	dnnl_exec_arg_t a[2] = {
		{ DNNL_ARG_FROM, from }, { DNNL_ARG_TO, to },
	};

	return run(p, pr, 2, a);
}

/*
 * Points o at the caller's ptr and the plan's buffer; *m gets the memory
 * the primitive uses.  An input is reordered into it now.
 */
static int
bind(struct rv_conv_plan *p, struct opnd *o, const float *ptr, int input,
    dnnl_memory_t *m)
{
	DN(dnnl_memory_set_data_handle(o->user, (void *)(uintptr_t)ptr),
	    "memory");
	*m = o->user;
	if (o->work == NULL)
		return 0;
	DN(dnnl_memory_set_data_handle(o->work, p->buf[o->buf]), "memory");
	*m = o->work;
	return input ? reorder(p, &o->re, o->user, o->work) : 0;
}

/* An output back into the caller's layout. */
static int
unbind(struct rv_conv_plan *p, struct opnd *o)
{
	return o->work == NULL ? 0 : reorder(p, &o->re, o->work, o->user);
}

struct rv_conv_plan *
rv_conv_plan_new(const struct rv_conv_geom *g)
{
	struct rv_conv_plan *p;
	dnnl_status_t st;

	if (g == NULL || !geom_ok(g)) {
		rv_seterr("conv: bad geometry");
		return NULL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		rv_seterr("conv: out of memory");
		return NULL;
	}
	p->g = *g;
	p->fallback = use_fallback(g);
	if (p->fallback) {
		size_t len = rv_k_conv_ws(g);

		if ((p->ws = malloc((len ? len : 1) * sizeof(float))) ==
		    NULL) {
			rv_seterr("conv: %zu floats of workspace: out of "
			    "memory", len);
			goto fail;
		}
		return p;
	}
	if ((p->zero = calloc((size_t)g->co, sizeof(float))) == NULL) {
		rv_seterr("conv: out of memory");
		goto fail;
	}
	if ((st = dnnl_engine_create(&p->eng, dnnl_cpu, 0)) != dnnl_success ||
	    (st = dnnl_stream_create(&p->strm, p->eng,
	    dnnl_stream_default_flags)) != dnnl_success ||
	    (st = dnnl_primitive_attr_create(&p->attr)) != dnnl_success ||
	    (st = dnnl_primitive_attr_set_scratchpad_mode(p->attr,
	    dnnl_scratchpad_mode_user)) != dnnl_success) {
		dn_err("cpu engine", st);
		goto fail;
	}
	return p;
fail:
	rv_conv_plan_free(p);
	return NULL;
}

void
rv_conv_plan_free(struct rv_conv_plan *p)
{
	int i;

	if (p == NULL)
		return;
	for (i = 0; i < CONV_CACHE; i++)
		entry_release(&p->e[i]);
	for (i = 0; i < NBUF; i++)
		free(p->buf[i]);
	if (p->attr != NULL)
		dnnl_primitive_attr_destroy(p->attr);
	if (p->strm != NULL)
		dnnl_stream_destroy(p->strm);
	if (p->eng != NULL)
		dnnl_engine_destroy(p->eng);
	free(p->zero);
	free(p->ws);
	free(p);
}

int
rv_conv_fwd(struct rv_conv_plan *p, int n, const float *x, const float *w,
    const float *b, float *y)
{
	struct rv_conv_geom g = p->g;
	struct entry *e;
	dnnl_exec_arg_t a[4];

	if (p->fallback) {
		if (n < 1 || n > p->g.n)
			return rv_seterr("conv: batch of %d samples: expected "
			    "1 to %d", n, p->g.n);
		g.n = n;
		rv_k_conv_fwd(&g, x, w, b, y, p->ws);
		return 0;
	}
	if ((e = entry_get(p, n, 0)) == NULL)
		return -1;
	a[0].arg = DNNL_ARG_SRC;
	a[1].arg = DNNL_ARG_WEIGHTS;
	a[2].arg = DNNL_ARG_BIAS;
	a[3].arg = DNNL_ARG_DST;
	if (bind(p, &e->f_src, x, 1, &a[0].memory) == -1 ||
	    bind(p, &e->f_wei, w, 1, &a[1].memory) == -1 ||
	    bind(p, &e->bias, b != NULL ? b : p->zero, 1,
	    &a[2].memory) == -1 ||
	    bind(p, &e->f_dst, y, 0, &a[3].memory) == -1 ||
	    run(p, &e->fwd, 4, a) == -1)
		return -1;
	return unbind(p, &e->f_dst);
}

int
rv_conv_bwd(struct rv_conv_plan *p, int n, const float *x, const float *w,
    const float *dy, float *dx, float *dw, float *db)
{
	struct rv_conv_geom g = p->g;
	struct entry *e;
	dnnl_exec_arg_t a[3];
	dnnl_memory_t ddst;

	if (p->fallback) {
		if (n < 1 || n > p->g.n)
			return rv_seterr("conv: batch of %d samples: expected "
			    "1 to %d", n, p->g.n);
		g.n = n;
		rv_k_conv_bwd(&g, x, w, dy, dx, dw, db, p->ws);
		return 0;
	}
	if ((e = entry_get(p, n, 1)) == NULL)
		return -1;
	if (db != NULL)
		rv_k_sum_rows(g.co, (size_t)n * g.oh * g.ow, dy, db);
	a[0].arg = DNNL_ARG_SRC;
	a[1].arg = DNNL_ARG_DIFF_DST;
	a[2].arg = DNNL_ARG_DIFF_WEIGHTS;
	if (bind(p, &e->w_src, x, 1, &a[0].memory) == -1 ||
	    bind(p, &e->w_ddst, dy, 1, &a[1].memory) == -1 ||
	    bind(p, &e->w_dwei, dw, 0, &a[2].memory) == -1 ||
	    run(p, &e->bwdw, 3, a) == -1 ||
	    unbind(p, &e->w_dwei) == -1)
		return -1;
	if (dx == NULL)
		return 0;
	ddst = a[1].memory;
	a[0].arg = DNNL_ARG_DIFF_DST;
	a[1].arg = DNNL_ARG_WEIGHTS;
	a[2].arg = DNNL_ARG_DIFF_SRC;
	a[0].memory = ddst;
	if ((!e->ddst_shared &&
	    bind(p, &e->d_ddst, dy, 1, &a[0].memory) == -1) ||
	    bind(p, &e->d_wei, w, 1, &a[1].memory) == -1 ||
	    bind(p, &e->d_dsrc, dx, 0, &a[2].memory) == -1 ||
	    run(p, &e->bwdd, 3, a) == -1)
		return -1;
	return unbind(p, &e->d_dsrc);
}
