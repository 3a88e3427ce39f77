/*
 * The CPU backend: trains a whole struct rv_net with the kernels of
 * nn_kern.h over CNHW tensors, convolutions through one plan a layer
 * (nn_conv.h: oneDNN).  Everything a step touches is sized for batch_max
 * and carved out of one arena in create(), so a step allocates nothing
 * (the plans only on the first batch of a new size) and a smaller batch
 * simply uses the first n samples' worth of each tensor (CNHW for n is
 * compact).  Parameters, their gradients and momentum are flat arrays in
 * nn.h's canonical order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "nn/nn.h"
#include "nn/nn_conv.h"
#include "nn/nn_cpu.h"
#include "nn/nn_kern.h"

#define PAR_MIN 65536		/* elementwise loops go parallel past this */

struct cpu_layer {
	float *y;		/* output; aliases the input for RES and
				 * in-place RELU/ADD */
	float *save_mean;	/* BN: batch statistics for backward */
	float *save_invstd;
	int32_t *argmax;	/* MAXPOOL */
	float *mask;		/* DROPOUT: 0 or 1/(1-p) */
	float *xt;		/* LINEAR: its own workspace, the transposed
				 * input, which backward and gradnorm read */
	float *sc_x;		/* ADD proj: the 1x1 conv's output */
	float *sc_mean;		/* ADD proj: its bn's batch statistics */
	float *sc_invstd;
	float *dsc;		/* RES: gradient come through the shortcut */
	struct rv_conv_plan *conv;	/* CONV, ADD proj: the convolution */
	int inplace;		/* y is the input tensor */
	int needg;		/* output depends on parameters */
	int skip;		/* RELU run by the MAXPOOL after it */
	int relu_after;		/* MAXPOOL: then ReLU on its output */
};

struct cpu {
	struct rv_net net;	/* layers copied; spec not kept */
	int batch_max;
	uint64_t seed;
	float mean[4], std[4];
	float ls;		/* label smoothing of eval()'s loss */
	struct cpu_layer *l;
	void *arena;
	float *params, *grads, *mom, *bufs;
	float *x;		/* the input, CNHW */
	float *g[2];		/* gradient ping-pong (and forward scratch) */
	float *pq;		/* ||p - q|| per sample */
	double *hh;		/* ||h||^2 per sample */
	float *dummy;		/* running statistics nobody keeps */
};

enum fwd_mode {
	FWD_TRAIN,		/* batch statistics, dropout, update running */
	FWD_PROBE,		/* as FWD_TRAIN, running statistics untouched */
	FWD_EVAL		/* running statistics, no dropout */
};

/* Bump allocator over one arena: sizes only when base is NULL. */
struct arena {
	char *base;
	size_t off;
	int overflow;
};

static void *
take(struct arena *a, size_t n, size_t size)
{
	size_t bytes;
	void *p;

	if (n != 0 && size > (SIZE_MAX - 64) / n) {
		a->overflow = 1;
		return NULL;
	}
	bytes = (n * size + 63) & ~(size_t)63;
	if (a->off > SIZE_MAX - bytes) {
		a->overflow = 1;
		return NULL;
	}
	p = a->base != NULL ? a->base + a->off : NULL;
	a->off += bytes;
	return p;
}

/* x * y, or 0 with a->overflow set when it is past any real memory. */
static size_t
prod(struct arena *a, size_t x, size_t y)
{
	if (y != 0 && x > ((size_t)1 << 56) / y) {
		a->overflow = 1;
		return 0;
	}
	return x * y;
}

static struct rv_conv_geom
conv_geom(const struct rv_layer *ly, int n)
{
	struct rv_conv_geom g = {
		.n = n, .ci = ly->in.c, .h = ly->in.h, .w = ly->in.w,
		.co = ly->out, .k = ly->k, .stride = ly->stride,
		.pad = ly->pad, .oh = ly->outs.h, .ow = ly->outs.w
	};

	return g;
}

/* The shortcut's 1x1 conv of ADD layer ly, from its RES layer's input. */
static struct rv_conv_geom
proj_geom(const struct rv_net *net, const struct rv_layer *ly, int n)
{
	const struct rv_layer *rl = &net->layers[ly->res];
	struct rv_conv_geom g = {
		.n = n, .ci = rl->in.c, .h = rl->in.h, .w = rl->in.w,
		.co = ly->outs.c, .k = 1, .stride = ly->proj_stride,
		.pad = 0, .oh = ly->outs.h, .ow = ly->outs.w
	};

	return g;
}

static struct rv_pool_geom
pool_geom(const struct rv_layer *ly, int n)
{
	struct rv_pool_geom g = {
		.c = ly->in.c, .n = n, .h = ly->in.h, .w = ly->in.w,
		.k = ly->k, .stride = ly->stride, .pad = ly->pad,
		.oh = ly->outs.h, .ow = ly->outs.w
	};

	return g;
}

/*
 * Which layers run in place and which need gradients.  RELU and ADD may
 * overwrite their input unless someone still needs it: a RELU producer
 * (its backward reads its output) or a RES producer (the shortcut reads
 * it).  Nothing else's backward reads its own output.
 *
 * "relu; maxpool" runs as maxpool, then ReLU on the pooled output, a
 * quarter of the work for 2x2 windows.  ReLU is monotone, so the values
 * are the same, and so is every gradient: a window whose maximum is not
 * positive passes none either way, and otherwise both orders route it to
 * the same (first) maximum.
 */
static void
mark_layers(struct cpu *c)
{
	const struct rv_net *net = &c->net;
	int i;

	for (i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		struct cpu_layer *cl = &c->l[i];
		int din = i > 0 && c->l[i - 1].needg;
		enum rv_layer_kind prev = i > 0 ? net->layers[i - 1].kind :
		    RV_LAYER_CONV;
		int keep = prev == RV_LAYER_RES || (prev == RV_LAYER_RELU &&
		    !c->l[i - 1].skip) || (i > 0 && c->l[i - 1].relu_after);

		cl->skip = ly->kind == RV_LAYER_RELU &&
		    i + 1 < net->nlayers &&
		    net->layers[i + 1].kind == RV_LAYER_MAXPOOL;
		cl->relu_after = ly->kind == RV_LAYER_MAXPOOL && i > 0 &&
		    c->l[i - 1].skip;
		cl->inplace = cl->skip || ((ly->kind == RV_LAYER_RELU ||
		    ly->kind == RV_LAYER_ADD) && !keep);
		cl->needg = rv_layer_needg(ly, din);
	}
}

/* Lay out the arena (sizes only while a->base is NULL). */
static void
plan(struct cpu *c, struct arena *a)
{
	const struct rv_net *net = &c->net;
	size_t bm = (size_t)c->batch_max, gmax = 0, maxc = 0;
	size_t t;
	int i;

	c->params = take(a, net->nparams, sizeof(float));
	c->grads = take(a, net->nparams, sizeof(float));
	c->mom = take(a, net->nparams, sizeof(float));
	c->bufs = take(a, net->nbufs, sizeof(float));
	c->x = take(a, prod(a, rv_shape_len(net->in), bm), sizeof(float));
	for (i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		struct cpu_layer *cl = &c->l[i];
		size_t out = prod(a, rv_shape_len(ly->outs), bm);

		if (out > gmax)
			gmax = out;
		cl->y = NULL;
		if (!cl->inplace && ly->kind != RV_LAYER_RES)
			cl->y = take(a, out, sizeof(float));
		switch (ly->kind) {
		case RV_LAYER_CONV:
			/* Bound the im2col size a plan may need. */
			(void)prod(a, prod(a, (size_t)ly->in.c * ly->k * ly->k,
			    rv_shape_hw(ly->outs)), bm);
			break;
		case RV_LAYER_BN:
			cl->save_mean = take(a, ly->in.c, sizeof(float));
			cl->save_invstd = take(a, ly->in.c, sizeof(float));
			if ((size_t)ly->in.c > maxc)
				maxc = ly->in.c;
			break;
		case RV_LAYER_MAXPOOL:
			cl->argmax = take(a, out, sizeof(int32_t));
			break;
		case RV_LAYER_DROPOUT:
			cl->mask = take(a, out, sizeof(float));
			break;
		case RV_LAYER_LINEAR:
			if (prod(a, rv_shape_len(ly->in), bm) == 0)
				break;
			cl->xt = take(a, rv_k_linear_ws(ly->in.c,
			    c->batch_max, (int)rv_shape_hw(ly->in)),
			    sizeof(float));
			break;
		case RV_LAYER_RES:
			if (i > 0 && c->l[i - 1].needg)
				cl->dsc = take(a, prod(a,
				    rv_shape_len(ly->in), bm), sizeof(float));
			break;
		case RV_LAYER_ADD:
			t = (size_t)net->layers[ly->res].in.c;
			if (!ly->proj ||
			    prod(a, prod(a, t, rv_shape_hw(ly->outs)), bm) == 0)
				break;
			cl->sc_x = take(a, out, sizeof(float));
			cl->sc_mean = take(a, ly->outs.c, sizeof(float));
			cl->sc_invstd = take(a, ly->outs.c, sizeof(float));
			if ((size_t)ly->outs.c > maxc)
				maxc = ly->outs.c;
			break;
		default:
			break;
		}
	}
	c->g[0] = take(a, gmax, sizeof(float));
	c->g[1] = take(a, gmax, sizeof(float));
	c->pq = take(a, bm, sizeof(float));
	c->hh = take(a, bm, sizeof(double));
	c->dummy = take(a, 2 * maxc, sizeof(float));
}

static void
cpu_destroy(void *be)
{
	struct cpu *c = be;
	int i;

	if (c == NULL)
		return;
	if (c->l != NULL)
		for (i = 0; i < c->net.nlayers; i++)
			rv_conv_plan_free(c->l[i].conv);
	free(c->arena);
	free(c->l);
	free(c->net.layers);
	free(c);
}

static void *
cpu_create(const struct rv_nn_config *cfg)
{
	const struct rv_net *net = cfg->net;
	struct arena a = { NULL, 0, 0 };
	struct cpu *c;
	int i;

	if (net == NULL || cfg->batch_max < 1 || cfg->threads < 1) {
		rv_seterr("cpu: bad configuration: need a model, "
		    "batch_max >= 1 and threads >= 1");
		return NULL;
	}
	if (rv_nn_check_net(net, "cpu") == -1 ||
	    rv_nn_check_norm(cfg, "cpu") == -1)
		return NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->l = calloc(net->nlayers, sizeof(*c->l))) == NULL ||
	    rv_net_copy(&c->net, net) == -1) {
		rv_seterr("cpu: out of memory");
		cpu_destroy(c);
		return NULL;
	}
	c->batch_max = cfg->batch_max;
	c->seed = cfg->seed;
	c->ls = cfg->label_smoothing;
	memcpy(c->mean, cfg->mean, sizeof(c->mean));
	memcpy(c->std, cfg->std, sizeof(c->std));
	mark_layers(c);
	plan(c, &a);
	if (a.overflow) {
		rv_seterr("cpu: the model at batch %d: too big for any "
		    "memory", c->batch_max);
		cpu_destroy(c);
		return NULL;
	}
	if (posix_memalign(&c->arena, 64, a.off ? a.off : 64) != 0) {
		c->arena = NULL;
		rv_seterr("cpu: %.0f MiB for the model at batch %d: out of "
		    "memory", a.off / 1048576.0, c->batch_max);
		cpu_destroy(c);
		return NULL;
	}
	a.base = c->arena;
	a.off = 0;
	plan(c, &a);
	for (i = 0; i < net->nlayers; i++)
		if (c->l[i].y == NULL)
			c->l[i].y = i > 0 ? c->l[i - 1].y : c->x;
	for (i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		struct rv_conv_geom cg;

		if (ly->kind == RV_LAYER_CONV)
			cg = conv_geom(ly, c->batch_max);
		else if (ly->kind == RV_LAYER_ADD && ly->proj)
			cg = proj_geom(net, ly, c->batch_max);
		else
			continue;
		if ((c->l[i].conv = rv_conv_plan_new(&cg)) == NULL) {
			rv_preferr("cpu: layer %d", i + 1);
			cpu_destroy(c);
			return NULL;
		}
	}
	rv_net_init(net, cfg->seed, c->params, c->bufs);
	memset(c->mom, 0, net->nparams * sizeof(float));
	rv_k_threads(cfg->threads);
	return c;
}

static int
check_batch(const struct cpu *c, const struct rv_nn_batch *b, int train)
{
	return rv_nn_check_batch(&c->net, c->batch_max, b, train, "cpu");
}

static void
bn_fwd(struct cpu *c, enum fwd_mode mode, int ch, size_t m, const float *x,
    const float *p, float *run, float *y, float *sm, float *si)
{
	if (mode == FWD_EVAL)
		rv_k_bn_fwd_eval(ch, m, x, p, p + ch, run, run + ch, y);
	else if (mode == FWD_TRAIN)
		rv_k_bn_fwd_train(ch, m, x, p, p + ch, y, sm, si, run,
		    run + ch, RV_BN_MOMENTUM);
	else
		rv_k_bn_fwd_train(ch, m, x, p, p + ch, y, sm, si, c->dummy,
		    c->dummy + ch, 0.0f);
}

static void
vadd(size_t len, const float *a, const float *b, float *y)
{
	size_t j;

	#pragma omp parallel for schedule(static) if (len >= PAR_MIN)
	for (j = 0; j < len; j++)
		y[j] = a[j] + b[j];
}

/* ADD: y = body + shortcut, the shortcut projected when shapes differ. */
static int
add_fwd(struct cpu *c, int i, int n, enum fwd_mode mode, const float *x)
{
	const struct rv_layer *ly = &c->net.layers[i];
	struct cpu_layer *cl = &c->l[i];
	const float *s = c->l[ly->res].y;

	if (ly->proj) {
		struct rv_conv_geom g = proj_geom(&c->net, ly, n);
		const float *w = c->params + ly->param_off;
		size_t wl = (size_t)ly->outs.c * g.ci;

		if (rv_conv_fwd(cl->conv, n, s, w, NULL, cl->sc_x) == -1)
			return -1;
		/* The gradient buffers are free during forward. */
		bn_fwd(c, mode, ly->outs.c, (size_t)n * rv_shape_hw(ly->outs),
		    cl->sc_x, w + wl, c->bufs + ly->buf_off, c->g[0],
		    cl->sc_mean, cl->sc_invstd);
		s = c->g[0];
	}
	vadd(rv_shape_len(ly->outs) * n, x, s, cl->y);
	return 0;
}

static int
forward(struct cpu *c, const struct rv_nn_batch *b, enum fwd_mode mode)
{
	const struct rv_net *net = &c->net;
	int n = b->n, i;

	rv_k_input(n, net->in.h, net->in.w, net->in.c, b->pixels, c->mean,
	    c->std, c->x);
	for (i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		struct cpu_layer *cl = &c->l[i];
		const float *x = i > 0 ? c->l[i - 1].y : c->x;
		const float *p = c->params + ly->param_off;
		int hw = (int)rv_shape_hw(ly->in);
		size_t olen = rv_shape_len(ly->outs) * n;
		struct rv_pool_geom pg;

		switch (ly->kind) {
		case RV_LAYER_CONV:
			if (rv_conv_fwd(cl->conv, n, x, p, ly->bias ?
			    p + rv_layer_wlen(ly) : NULL, cl->y) == -1)
				return -1;
			break;
		case RV_LAYER_BN:
			bn_fwd(c, mode, ly->in.c, (size_t)n * hw, x, p,
			    c->bufs + ly->buf_off, cl->y, cl->save_mean,
			    cl->save_invstd);
			break;
		case RV_LAYER_RELU:
			if (!cl->skip)
				rv_k_relu_fwd(olen, x, cl->y);
			break;
		case RV_LAYER_MAXPOOL:
			pg = pool_geom(ly, n);
			rv_k_maxpool_fwd(&pg, x, cl->y, cl->argmax);
			if (cl->relu_after)
				rv_k_relu_fwd(olen, cl->y, cl->y);
			break;
		case RV_LAYER_AVGPOOL:
			pg = pool_geom(ly, n);
			rv_k_avgpool_fwd(&pg, x, cl->y);
			break;
		case RV_LAYER_GAP:
			rv_k_gap_fwd(ly->in.c, n, hw, x, cl->y);
			break;
		case RV_LAYER_LINEAR:
			rv_k_linear_fwd(ly->in.c, n, hw, ly->out, x, p,
			    ly->bias ? p + rv_layer_wlen(ly) : NULL, cl->y,
			    cl->xt);
			break;
		case RV_LAYER_DROPOUT:
			if (mode == FWD_EVAL)
				memcpy(cl->y, x, olen * sizeof(float));
			else
				rv_k_dropout_fwd(ly->in.c, n, hw, ly->p,
				    c->seed, (uint32_t)i, b->step, b->ids, x,
				    cl->y, cl->mask);
			break;
		case RV_LAYER_RES:
			break;
		case RV_LAYER_ADD:
			if (add_fwd(c, i, n, mode, x) == -1)
				return -1;
			break;
		}
	}
	return 0;
}

/* ADD backward, shortcut side: into the RES layer's accumulator. */
static int
add_bwd(struct cpu *c, int i, int n, const float *gy, float *tmp)
{
	const struct rv_layer *ly = &c->net.layers[i];
	struct cpu_layer *cl = &c->l[i];
	int r = ly->res;
	float *dsc = r > 0 && c->l[r - 1].needg ? c->l[r].dsc : NULL;

	if (ly->proj) {
		struct rv_conv_geom g = proj_geom(&c->net, ly, n);
		const float *w = c->params + ly->param_off;
		float *gw = c->grads + ly->param_off;
		size_t wl = (size_t)ly->outs.c * g.ci;
		int co = ly->outs.c;

		rv_k_bn_bwd(co, (size_t)n * rv_shape_hw(ly->outs), cl->sc_x, gy,
		    w + wl, cl->sc_mean, cl->sc_invstd, tmp, gw + wl,
		    gw + wl + co);
		return rv_conv_bwd(cl->conv, n, c->l[r].y, w, tmp, dsc, gw,
		    NULL);
	}
	if (dsc != NULL)
		memcpy(dsc, gy, rv_shape_len(ly->outs) * n * sizeof(float));
	return 0;
}

/*
 * From dz in g[0] down to the first layer with parameters.  gy holds the
 * gradient of layer i's output; a layer writes its input's gradient into
 * gx and the two swap, except where it works in place.
 */
static int
backward(struct cpu *c, int n)
{
	const struct rv_net *net = &c->net;
	float *gy = c->g[0], *gx = c->g[1], *t;
	int i;

	for (i = net->nlayers - 1; i >= 0 && c->l[i].needg; i--) {
		const struct rv_layer *ly = &net->layers[i];
		struct cpu_layer *cl = &c->l[i];
		const float *x = i > 0 ? c->l[i - 1].y : c->x;
		const float *p = c->params + ly->param_off;
		float *gp = c->grads + ly->param_off;
		int din = i > 0 && c->l[i - 1].needg;
		float *dx = din ? gx : NULL;
		int hw = (int)rv_shape_hw(ly->in);
		size_t olen = rv_shape_len(ly->outs) * n;
		struct rv_pool_geom pg;

		switch (ly->kind) {
		case RV_LAYER_CONV:
			if (rv_conv_bwd(cl->conv, n, x, p, gy, dx, gp,
			    ly->bias ? gp + rv_layer_wlen(ly) : NULL) == -1)
				return -1;
			break;
		case RV_LAYER_BN:
			rv_k_bn_bwd(ly->in.c, (size_t)n * hw, x, gy, p,
			    cl->save_mean, cl->save_invstd, gx, gp,
			    gp + ly->in.c);
			break;
		case RV_LAYER_RELU:
			if (!cl->skip)
				rv_k_relu_bwd(olen, cl->y, gy, gy);
			din = 0;
			break;
		case RV_LAYER_MAXPOOL:
			if (cl->relu_after)
				rv_k_relu_bwd(olen, cl->y, gy, gy);
			pg = pool_geom(ly, n);
			rv_k_maxpool_bwd(&pg, gy, cl->argmax, gx);
			break;
		case RV_LAYER_AVGPOOL:
			pg = pool_geom(ly, n);
			rv_k_avgpool_bwd(&pg, gy, gx);
			break;
		case RV_LAYER_GAP:
			rv_k_gap_bwd(ly->in.c, n, hw, gy, gx);
			break;
		case RV_LAYER_LINEAR:
			rv_k_linear_bwd(ly->in.c, n, hw, ly->out, p, gy, dx,
			    gp, ly->bias ? gp + rv_layer_wlen(ly) : NULL,
			    cl->xt);
			break;
		case RV_LAYER_DROPOUT:
			rv_k_dropout_bwd(olen, cl->mask, gy, gx);
			break;
		case RV_LAYER_RES:
			if (din)
				vadd(olen, gy, cl->dsc, gy);
			din = 0;
			break;
		case RV_LAYER_ADD:
			if (add_bwd(c, i, n, gy, gx) == -1)
				return -1;
			din = 0;
			break;
		}
		if (din) {
			t = gy;
			gy = gx;
			gx = t;
		}
	}
	return 0;
}

/* gradnorm_i = ||p_i - q_i|| sqrt(||h_i||^2 + 1), h = the last input. */
static void
gradnorm(struct cpu *c, int n, float *out)
{
	const struct rv_layer *ly = &c->net.layers[c->net.nlayers - 1];
	const float *xt = c->l[c->net.nlayers - 1].xt;
	size_t f, nf = rv_shape_len(ly->in);
	int i;

	for (i = 0; i < n; i++)
		c->hh[i] = ly->bias ? 1.0 : 0.0;
	for (f = 0; f < nf; f++) {
		const float *row = xt + f * n;

		for (i = 0; i < n; i++)
			c->hh[i] += (double)row[i] * row[i];
	}
	for (i = 0; i < n; i++)
		out[i] = (float)(c->pq[i] * sqrt(c->hh[i]));
}

static int
cpu_train(void *be, const struct rv_nn_batch *b, const struct rv_nn_hyper *h,
    struct rv_nn_out *out)
{
	struct cpu *c = be;
	const struct rv_net *net = &c->net;
	int last = net->nlayers - 1;

	if (check_batch(c, b, 1) == -1)
		return -1;
	if (!(h->label_smoothing >= 0 && h->label_smoothing < 1))
		return rv_seterr("cpu: label smoothing %g: not in [0, 1)",
		    h->label_smoothing);
	if (forward(c, b, FWD_TRAIN) == -1)
		return -1;
	rv_k_softmax_ce(net->classes, b->n, c->l[last].y, b->labels,
	    b->weights, h->label_smoothing, out ? out->loss : NULL, c->g[0],
	    c->pq, out ? out->pred : NULL);
	if (out != NULL && out->gradnorm != NULL)
		gradnorm(c, b->n, out->gradnorm);
	if (backward(c, b->n) == -1)
		return -1;
	rv_k_sgd(net->nparams, c->params, c->grads, c->mom, h->lr,
	    h->momentum, h->weight_decay, h->nesterov);
	return 0;
}

/* The loss is computed as in training, smoothed as the config says. */
static int
cpu_eval(void *be, const struct rv_nn_batch *b, struct rv_nn_out *out)
{
	struct cpu *c = be;
	const struct rv_net *net = &c->net;

	if (check_batch(c, b, 0) == -1)
		return -1;
	if (forward(c, b, FWD_EVAL) == -1)
		return -1;
	rv_k_softmax_ce(net->classes, b->n, c->l[net->nlayers - 1].y,
	    b->labels, b->weights, c->ls, out ? out->loss : NULL, NULL, NULL,
	    out ? out->pred : NULL);
	return 0;
}

double
rv_nn_cpu_objective(void *be, const struct rv_nn_batch *b, float ls)
{
	struct cpu *c = be;
	const struct rv_net *net = &c->net;

	if (check_batch(c, b, 1) == -1)
		return NAN;
	if (forward(c, b, FWD_PROBE) == -1)
		return NAN;
	return rv_k_softmax_ce(net->classes, b->n, c->l[net->nlayers - 1].y,
	    b->labels, b->weights, ls, NULL, NULL, NULL, NULL);
}

/* A NULL pointer skips that part of the state. */
static int
cpu_get_state(void *be, float *params, float *momentum, float *bufs)
{
	struct cpu *c = be;

	if (params != NULL)
		memcpy(params, c->params, c->net.nparams * sizeof(float));
	if (momentum != NULL)
		memcpy(momentum, c->mom, c->net.nparams * sizeof(float));
	if (bufs != NULL)
		memcpy(bufs, c->bufs, c->net.nbufs * sizeof(float));
	return 0;
}

static int
cpu_set_state(void *be, const float *params, const float *momentum,
    const float *bufs)
{
	struct cpu *c = be;

	if (params != NULL)
		memcpy(c->params, params, c->net.nparams * sizeof(float));
	if (momentum != NULL)
		memcpy(c->mom, momentum, c->net.nparams * sizeof(float));
	if (bufs != NULL)
		memcpy(c->bufs, bufs, c->net.nbufs * sizeof(float));
	return 0;
}

const struct rv_nn_ops rv_nn_cpu = {
	.name = "cpu",
	.create = cpu_create,
	.destroy = cpu_destroy,
	.train = cpu_train,
	.eval = cpu_eval,
	.get_state = cpu_get_state,
	.set_state = cpu_set_state,
};
