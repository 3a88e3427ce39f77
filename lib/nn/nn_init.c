/*
 * PyTorch's default initialisation of a parsed model, drawn from rv_rng
 * keyed by (seed, RV_STAGE_TRAIN, op = layer index), one generator per
 * layer: the same seed gives the same bytes on every backend and thread
 * count, and a layer's numbers do not depend on the layers before it.
 * And the checks every backend makes of its model, normalisation and
 * batches, and the model copy each keeps.
 */
#include "nn/nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/rng.h"

/* n draws uniform in [-bound, bound). */
static void
fill_uniform(struct rv_rng *r, float *p, size_t n, double bound)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (float)((2 * rv_rng_uniform(r) - 1) * bound);
}

static void
fill(float *p, size_t n, float v)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = v;
}

/* gamma 1, beta 0; running mean 0, var 1. */
static void
init_bn(float *p, float *b, size_t c)
{
	fill(p, c, 1);
	fill(p + c, c, 0);
	fill(b, c, 0);
	fill(b + c, c, 1);
}

/*
 * kaiming_uniform(a = sqrt 5) on the weight is uniform in
 * +-sqrt(6 / (6 fan_in)) = +-1/sqrt(fan_in), the bias's bound too.
 */
static void
init_affine(struct rv_rng *r, float *p, size_t out, size_t fan_in,
    int bias)
{
	double bound = 1 / sqrt((double)fan_in);

	fill_uniform(r, p, out * fan_in, bound);
	if (bias)
		fill_uniform(r, p + out * fan_in, out, bound);
}

void
rv_net_init(const struct rv_net *net, uint64_t seed, float *params,
    float *bufs)
{
	int i;

	/* Layers draw from their own generators: any order, any thread. */
	#pragma omp parallel for schedule(dynamic, 1)
	for (i = 0; i < net->nlayers; i++) {
		const struct rv_layer *L = &net->layers[i];
		struct rv_rng r;
		size_t fan, c;

		rv_rng_init(&r, seed, RV_STAGE_TRAIN, (uint32_t)i, 0, 0);
		switch (L->kind) {
		case RV_LAYER_CONV:
			fan = (size_t)L->in.c * (size_t)L->k * (size_t)L->k;
			init_affine(&r, params + L->param_off,
			    (size_t)L->out, fan, L->bias);
			break;
		case RV_LAYER_LINEAR:
			fan = (size_t)L->in.c * (size_t)L->in.h *
			    (size_t)L->in.w;
			init_affine(&r, params + L->param_off,
			    (size_t)L->out, fan, L->bias);
			break;
		case RV_LAYER_BN:
			init_bn(params + L->param_off, bufs + L->buf_off,
			    (size_t)L->in.c);
			break;
		case RV_LAYER_ADD:
			if (!L->proj)
				break;
			c = (size_t)L->outs.c;
			fan = (size_t)net->layers[L->res].in.c;
			init_affine(&r, params + L->param_off, c, fan, 0);
			init_bn(params + L->param_off + c * fan,
			    bufs + L->buf_off, c);
			break;
		default:
			break;
		}
	}
}

int
rv_nn_check_batch(const struct rv_net *net, int batch_max,
    const struct rv_nn_batch *b, int train, const char *who)
{
	int i;

	if (b->n < 1 || b->n > batch_max)
		return rv_seterr("%s: batch of %d samples: expected 1 to %d",
		    who, b->n, batch_max);
	if (b->pixels == NULL || b->labels == NULL)
		return rv_seterr("%s: batch without pixels or labels", who);
	for (i = 0; i < b->n; i++)
		if (b->labels[i] < 0 || b->labels[i] >= net->classes)
			return rv_seterr("%s: sample %d of the batch: label %d "
			    "out of range [0, %d)", who, i, (int)b->labels[i],
			    net->classes);
	if (!train)
		return 0;
	for (i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];

		if (ly->kind == RV_LAYER_DROPOUT && b->ids == NULL)
			return rv_seterr("%s: batch without ids: dropout "
			    "needs them", who);
		if ((ly->kind == RV_LAYER_BN || (ly->kind == RV_LAYER_ADD &&
		    ly->proj)) && (size_t)b->n * ly->outs.h * ly->outs.w < 2)
			return rv_seterr("%s: layer %d: batch norm needs 2 "
			    "values a channel, the batch has 1", who, i + 1);
	}
	return 0;
}

int
rv_nn_check_norm(const struct rv_nn_config *cfg, const char *who)
{
	for (int i = 0; i < cfg->net->in.c && i < 4; i++)
		if (!(cfg->std[i] > 0) || !isfinite(cfg->mean[i]))
			return rv_seterr("%s: channel %d: bad mean %g or std "
			    "%g", who, i, cfg->mean[i], cfg->std[i]);
	return 0;
}

int
rv_net_copy(struct rv_net *dst, const struct rv_net *src)
{
	memset(dst, 0, sizeof(*dst));
	if ((dst->layers = malloc(src->nlayers * sizeof(*src->layers))) ==
	    NULL)
		return -1;
	memcpy(dst->layers, src->layers, src->nlayers * sizeof(*src->layers));
	dst->nlayers = src->nlayers;
	dst->in = src->in;
	dst->classes = src->classes;
	dst->nparams = src->nparams;
	dst->nbufs = src->nbufs;
	return 0;
}

static int
same_shape(struct rv_shape a, struct rv_shape b)
{
	return a.c == b.c && a.h == b.h && a.w == b.w;
}

static int
pool_dim(int in, int k, int stride, int pad)
{
	return (in + 2 * pad - k) / stride + 1;
}

int
rv_nn_check_net(const struct rv_net *net, const char *who)
{
	int i;

	if (net->nlayers < 1 ||
	    net->layers[net->nlayers - 1].kind != RV_LAYER_LINEAR ||
	    net->layers[net->nlayers - 1].out != net->classes ||
	    net->classes < 1)
		return rv_seterr("%s: model: the last layer must be a "
		    "linear layer with one output a class", who);
	if (net->in.c < 1 || net->in.c > 4)
		return rv_seterr("%s: model: %d input channels: 1 to 4 "
		    "supported", who, net->in.c);
	for (i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		struct rv_shape in = i > 0 ? net->layers[i - 1].outs : net->in;
		size_t np = 0, nb = 0;
		int ok = same_shape(ly->in, in) && rv_shape_len(ly->outs) > 0;

		switch (ly->kind) {
		case RV_LAYER_CONV:
			np = rv_layer_wlen(ly) +
			    (ly->bias ? (size_t)ly->out : 0);
			ok = ok && ly->stride > 0 && ly->outs.c == ly->out &&
			    ly->outs.h == pool_dim(in.h, ly->k, ly->stride,
			    ly->pad) && ly->outs.w == pool_dim(in.w, ly->k,
			    ly->stride, ly->pad);
			break;
		case RV_LAYER_BN:
			np = nb = 2 * (size_t)in.c;
			/* FALLTHROUGH */
		case RV_LAYER_RELU:
		case RV_LAYER_DROPOUT:
		case RV_LAYER_RES:
			ok = ok && same_shape(ly->outs, in);
			break;
		case RV_LAYER_MAXPOOL:
		case RV_LAYER_AVGPOOL:
			ok = ok && ly->stride > 0 && ly->outs.c == in.c &&
			    ly->outs.h == pool_dim(in.h, ly->k, ly->stride,
			    ly->pad) && ly->outs.w == pool_dim(in.w, ly->k,
			    ly->stride, ly->pad);
			break;
		case RV_LAYER_GAP:
			ok = ok && ly->outs.c == in.c &&
			    rv_shape_hw(ly->outs) == 1;
			break;
		case RV_LAYER_LINEAR:
			np = rv_layer_wlen(ly) +
			    (ly->bias ? (size_t)ly->out : 0);
			ok = ok && ly->outs.c == ly->out &&
			    rv_shape_hw(ly->outs) == 1;
			break;
		case RV_LAYER_ADD: {
			const struct rv_layer *rl;

			ok = ok && ly->res >= 0 && ly->res < i &&
			    net->layers[ly->res].kind == RV_LAYER_RES &&
			    same_shape(ly->outs, in);
			if (!ok)
				break;
			rl = &net->layers[ly->res];
			if (ly->proj) {
				np = (size_t)ly->outs.c * rl->in.c +
				    2 * (size_t)ly->outs.c;
				nb = 2 * (size_t)ly->outs.c;
				ok = ly->proj_stride > 0 &&
				    ly->outs.h == pool_dim(rl->in.h, 1,
				    ly->proj_stride, 0) &&
				    ly->outs.w == pool_dim(rl->in.w, 1,
				    ly->proj_stride, 0);
			} else
				ok = same_shape(rl->in, ly->outs);
			break;
		}
		default:
			ok = 0;
		}
		if (!ok || ly->nparam != np || ly->nbuf != nb ||
		    ly->param_off > net->nparams ||
		    np > net->nparams - ly->param_off ||
		    ly->buf_off > net->nbufs || nb > net->nbufs - ly->buf_off)
			return rv_seterr("%s: model: layer %d: inconsistent "
			    "shapes or parameter counts", who, i + 1);
	}
	return 0;
}
