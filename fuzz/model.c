/*
 * libFuzzer harness for the model spec parser (lib/nn/nn_spec.c): arbitrary
 * text parsed as a model for one of a few input shapes.  A spec that
 * parses must describe a consistent net (shapes chained, offsets tiling
 * the parameters, the last layer linear), its normalised text must parse
 * to the identical net (checkpoints rely on it), and the layer table,
 * MAC count and initialiser must cope with whatever it holds.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "nn/nn.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Models up to this many floats are initialised and checked. */
#define INIT_MAX	((size_t)1 << 20)

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rv_setprogname("fuzz-model");
	return 0;
}

static int
shape_eq(struct rv_shape a, struct rv_shape b)
{
	return a.c == b.c && a.h == b.h && a.w == b.w;
}

static int
layer_eq(const struct rv_layer *a, const struct rv_layer *b)
{
	return a->kind == b->kind && a->out == b->out && a->k == b->k &&
	    a->stride == b->stride && a->pad == b->pad &&
	    a->bias == b->bias && a->p == b->p && a->res == b->res &&
	    a->proj == b->proj && a->proj_stride == b->proj_stride &&
	    shape_eq(a->in, b->in) && shape_eq(a->outs, b->outs) &&
	    a->param_off == b->param_off && a->nparam == b->nparam &&
	    a->buf_off == b->buf_off && a->nbuf == b->nbuf;
}

/* What every parsed net promises; abort() on a broken promise. */
static void
check_net(const struct rv_net *n, struct rv_shape in, int classes)
{
	struct rv_shape cur = in;
	size_t p = 0, b = 0;
	int i, depth = 0;

	if (n->nlayers < 1 || n->nlayers > 1024 || !n->layers || !n->spec ||
	    !shape_eq(n->in, in))
		abort();
	if (n->layers[n->nlayers - 1].kind != RV_LAYER_LINEAR ||
	    n->layers[n->nlayers - 1].out != n->classes ||
	    (classes > 0 && n->classes != classes))
		abort();
	for (i = 0; i < n->nlayers; i++) {
		const struct rv_layer *L = &n->layers[i];

		if (!shape_eq(L->in, cur) || L->outs.c < 1 || L->outs.h < 1 ||
		    L->outs.w < 1 || L->param_off != p || L->buf_off != b)
			abort();
		if (L->kind == RV_LAYER_RES)
			depth++;
		if (L->kind == RV_LAYER_ADD) {
			if (depth-- < 1 || L->res < 0 || L->res >= i ||
			    n->layers[L->res].kind != RV_LAYER_RES ||
			    L->proj != !shape_eq(n->layers[L->res].in, L->in) ||
			    (L->proj && L->proj_stride < 1))
				abort();
			if (L->proj && ((n->layers[L->res].in.h - 1) /
			    L->proj_stride + 1 != L->in.h ||
			    (n->layers[L->res].in.w - 1) / L->proj_stride +
			    1 != L->in.w))
				abort();
		}
		if (L->kind == RV_LAYER_DROPOUT && !(L->p >= 0 && L->p < 1))
			abort();
		p += L->nparam;
		b += L->nbuf;
		cur = L->outs;
	}
	if (depth != 0 || p != n->nparams || b != n->nbufs ||
	    p > ((size_t)1 << 31))
		abort();
}

/* Initialise a small enough net and check the values' ranges. */
static void
check_init(const struct rv_net *n)
{
	float *params, *bufs;
	size_t i;

	if (n->nparams > INIT_MAX)
		return;
	params = malloc((n->nparams + 1) * sizeof(float));
	bufs = malloc((n->nbufs + 1) * sizeof(float));
	if (!params || !bufs)
		abort();
	rv_net_init(n, 7, params, bufs);
	for (i = 0; i < n->nparams; i++)
		if (!(fabsf(params[i]) <= 1))
			abort();
	for (i = 0; i < n->nbufs; i++)
		if (bufs[i] != 0 && bufs[i] != 1)
			abort();
	free(params);
	free(bufs);
}

static void
check_describe(const struct rv_net *n)
{
	static char big[1 << 17];
	char small[61];
	size_t len, lines = 0;
	char *s;

	rv_net_describe(n, small, sizeof(small));
	if (strlen(small) >= sizeof(small))
		abort();
	rv_net_describe(n, big, sizeof(big));
	len = strlen(big);
	if (len == 0 || len >= sizeof(big) || big[len - 1] != '\n')
		abort();
	for (s = big; (s = strchr(s, '\n')) != NULL; s++)
		lines++;
	/* every layer and the total, unless cut short with "..." */
	if (lines != (size_t)n->nlayers + 1 &&
	    strcmp(big + len - 4, "...\n") != 0)
		abort();
	(void)rv_net_macs(n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct rv_shape shapes[8] = {
		{ 1, 28, 28 }, { 3, 32, 32 }, { 3, 224, 224 }, { 4, 7, 9 },
		{ 1, 1, 1 }, { 2, 3, 65536 }, { 65536, 1, 2 }, { 3, 64, 48 },
	};
	static const int classes[4] = { 10, 0, 1, 1000 };
	struct rv_shape in;
	struct rv_net n, again;
	int cl, i;
	char *text;

	if (size < 1)
		return 0;
	/* byte 0: bits 0-2 the input shape, bits 3-4 the class count */
	in = shapes[data[0] & 7];
	cl = classes[data[0] >> 3 & 3];
	text = malloc(size);
	if (!text)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	n.nlayers = -1;
	if (rv_net_parse(&n, text, in, cl) < 0) {
		if (strncmp(rv_errmsg(), "model spec: ", 12) != 0 ||
		    n.nlayers != 0 || n.layers || n.spec)
			abort();
		free(text);
		return 0;
	}
	check_net(&n, in, cl);
	if (rv_net_parse(&again, n.spec, in, cl) < 0) {
		fprintf(stderr, "reparse '%s': %s\n", n.spec, rv_errmsg());
		abort();
	}
	if (again.nlayers != n.nlayers || again.nparams != n.nparams ||
	    again.nbufs != n.nbufs || again.classes != n.classes ||
	    strcmp(again.spec, n.spec) != 0)
		abort();
	for (i = 0; i < n.nlayers; i++)
		if (!layer_eq(&n.layers[i], &again.layers[i]))
			abort();
	check_describe(&n);
	check_init(&n);
	rv_net_release(&again);
	rv_net_release(&n);
	free(text);
	return 0;
}
