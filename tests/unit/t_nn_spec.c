/*
 * The model spec (lib/nn/nn_spec.c) and initialisation (lib/nn/nn_init.c): the
 * grammar and every error with its exact message, shapes and shortcuts,
 * the presets against torch/torchvision's parameter counts, order and
 * MACs, the normalised text's round trip, the layer table, and the
 * initialiser's determinism and ranges.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "nn/nn.h"
#include "unit.h"

static const struct rv_shape rgb224 = { 3, 224, 224 };
static const struct rv_shape rgb32 = { 3, 32, 32 };
static const struct rv_shape grey28 = { 1, 28, 28 };

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

static int
net_eq(const struct rv_net *a, const struct rv_net *b)
{
	int i;

	if (a->nlayers != b->nlayers || !shape_eq(a->in, b->in) ||
	    a->classes != b->classes || a->nparams != b->nparams ||
	    a->nbufs != b->nbufs || strcmp(a->spec, b->spec) != 0)
		return 0;
	for (i = 0; i < a->nlayers; i++)
		if (!layer_eq(&a->layers[i], &b->layers[i]))
			return 0;
	return 1;
}

/* Offsets tile [0, nparams) and [0, nbufs) in layer order. */
static int
offsets_tile(const struct rv_net *n)
{
	size_t p = 0, b = 0;
	int i;

	for (i = 0; i < n->nlayers; i++) {
		if (n->layers[i].param_off != p || n->layers[i].buf_off != b)
			return 0;
		p += n->layers[i].nparam;
		b += n->layers[i].nbuf;
	}
	return p == n->nparams && b == n->nbufs;
}

/* Parse, check the invariants, reparse the normalised text: same net. */
static int
parse_ok(struct rv_net *n, const char *spec, struct rv_shape in,
    int classes)
{
	struct rv_net again;
	int ok;

	if (rv_net_parse(n, spec, in, classes) < 0) {
		printf("# '%s': %s\n", spec, rv_errmsg());
		return 0;
	}
	ok = offsets_tile(n);
	if (rv_net_parse(&again, n->spec, in, classes) < 0) {
		printf("# reparse '%s': %s\n", n->spec, rv_errmsg());
		return 0;
	}
	ok = ok && net_eq(n, &again);
	rv_net_release(&again);
	return ok;
}

/* Parse or fail the test and leave it (nothing to check without a net). */
#define PARSE(n, spec, in, classes) do { \
	if (!parse_ok(n, spec, in, classes)) { \
		unit_st.cur_failed = 1; \
		fflush(stdout); \
		return; \
	} \
} while (0)

static void
expect_err(const char *spec, struct rv_shape in, int classes,
    const char *msg)
{
	struct rv_net n;

	n.nlayers = 12345;
	if (rv_net_parse(&n, spec, in, classes) == 0) {
		printf("# '%s' parsed\n", spec);
		unit_st.cur_failed = 1;
		rv_net_release(&n);
		return;
	}
	EXPECT_STR(rv_errmsg(), msg);
	EXPECT(n.nlayers == 0 && n.layers == NULL && n.spec == NULL);
}

static void
test_grammar(void)
{
	struct rv_net n;

	PARSE(&n, " # a comment; with ; semicolons\n"
	    "conv 8;;bn ;\n\t relu;maxpool;  # pool\n"
	    "dropout; linear ;", grey28, 10);
	EXPECT_STR(n.spec, "conv out=8 k=3 stride=1 pad=0 bias=0; bn; "
	    "relu; maxpool k=2 stride=2 pad=0; dropout p=0.5; "
	    "linear out=10 bias=1");
	EXPECT_EQ(n.nlayers, 6);
	EXPECT_EQ(n.classes, 10);
	EXPECT(shape_eq(n.layers[0].outs, (struct rv_shape){ 8, 26, 26 }));
	EXPECT(shape_eq(n.layers[3].outs, (struct rv_shape){ 8, 13, 13 }));
	EXPECT(shape_eq(n.layers[5].in, (struct rv_shape){ 8, 13, 13 }));
	EXPECT_EQ(n.layers[5].nparam, 10 * 8 * 13 * 13 + 10);
	rv_net_release(&n);

	/* keys in any order, the bare value anywhere */
	PARSE(&n, "conv pad=2 stride=2 5 k=5 bias=1; avgpool "
	    "stride=1 3 pad=1; maxpool k=3; linear bias=0 out=7", rgb32, 0);
	EXPECT_STR(n.spec, "conv out=5 k=5 stride=2 pad=2 bias=1; "
	    "avgpool k=3 stride=1 pad=1; maxpool k=3 stride=3 pad=0; "
	    "linear out=7 bias=0");
	EXPECT(shape_eq(n.layers[0].outs, (struct rv_shape){ 5, 16, 16 }));
	EXPECT(shape_eq(n.layers[1].outs, (struct rv_shape){ 5, 16, 16 }));
	EXPECT(shape_eq(n.layers[2].outs, (struct rv_shape){ 5, 5, 5 }));
	EXPECT_EQ(n.layers[0].nparam, 5 * 3 * 25 + 5);
	EXPECT_EQ(n.classes, 7);	/* classes 0: the last out */
	rv_net_release(&n);

	/* p keeps its float exactly; 0 is allowed */
	PARSE(&n, "dropout 0.1; dropout p=0; dropout "
	    "p=0.99999; dropout 1e-3; linear 3", grey28, 3);
	EXPECT_STR(n.spec, "dropout p=0.1; dropout p=0; dropout p=0.99999; "
	    "dropout p=0.001; linear out=3 bias=1");
	EXPECT(n.layers[0].p == 0.1f && n.layers[2].p == 0.99999f);
	rv_net_release(&n);

	/* an even kernel with pad = k/2 grows the map by one */
	PARSE(&n, "conv 4 k=2 pad=1; maxpool 2 stride=1 pad=1; "
	    "gap; bn; linear", grey28, 2);
	EXPECT(shape_eq(n.layers[0].outs, (struct rv_shape){ 4, 29, 29 }));
	EXPECT(shape_eq(n.layers[1].outs, (struct rv_shape){ 4, 30, 30 }));
	EXPECT(shape_eq(n.layers[2].outs, (struct rv_shape){ 4, 1, 1 }));
	EXPECT_EQ(n.layers[3].nparam, 8);	/* BatchNorm1d */
	EXPECT_EQ(n.layers[3].nbuf, 8);
	rv_net_release(&n);

	/* a preset's name, blanks around it, is the preset */
	PARSE(&n, "\n cnn-small\t", grey28, 10);
	EXPECT_EQ(n.nlayers, 12);
	rv_net_release(&n);
}

static void
test_residual(void)
{
	struct rv_net n;
	const struct rv_layer *a;

	/* identity: the shapes match */
	PARSE(&n, "conv 8 pad=1; res; conv 8 pad=1; bn; relu; "
	    "add; linear", rgb32, 10);
	a = &n.layers[5];
	EXPECT(a->kind == RV_LAYER_ADD && a->res == 1 && !a->proj);
	EXPECT_EQ(a->nparam, 0);
	EXPECT(shape_eq(n.layers[1].in, n.layers[1].outs));
	EXPECT(shape_eq(a->in, (struct rv_shape){ 8, 32, 32 }));
	EXPECT(shape_eq(a->outs, a->in));
	rv_net_release(&n);

	/* nested blocks; the inner one changes channels, the outer
	 * halves the map and channels change too */
	PARSE(&n, "res; res; conv 6 k=1; add; maxpool; add; "
	    "res; avgpool 3 stride=3 pad=1; add; linear", rgb32, 10);
	a = &n.layers[3];
	EXPECT(a->res == 1 && a->proj && a->proj_stride == 1);
	EXPECT_EQ(a->nparam, 6 * 3 + 12);
	EXPECT_EQ(a->nbuf, 12);
	a = &n.layers[5];
	EXPECT(a->res == 0 && a->proj && a->proj_stride == 2);
	EXPECT(shape_eq(a->outs, (struct rv_shape){ 6, 16, 16 }));
	/* 16 -> 6 with k3 s3 p1; a 1x1 conv needs (16-1)/s+1 = 6: s = 3 */
	a = &n.layers[8];
	EXPECT(a->res == 6 && a->proj && a->proj_stride == 3);
	EXPECT_EQ(a->param_off, n.layers[5].param_off + n.layers[5].nparam);
	rv_net_release(&n);

	/* a body that ends 1x1 from 32x32: any stride >= 32 works; the
	 * smallest is taken */
	PARSE(&n, "res; gap; add; linear", rgb32, 10);
	EXPECT(n.layers[2].proj && n.layers[2].proj_stride == 32);
	rv_net_release(&n);
	/* a body that only changes channels on a 1x1 map */
	PARSE(&n, "gap; res; linear 5; add; linear", rgb32, 10);
	EXPECT(n.layers[3].proj && n.layers[3].proj_stride == 1);
	rv_net_release(&n);
}

static void
test_errors(void)
{
	static const struct {
		const char *spec;
		const char *msg;
	} t[] = {
		{ "", "near '': no layers" },
		{ " ; ;\n# nothing\n", "near '': no layers" },
		{ "conv 8; bogus 3; linear", "near 'bogus': unknown layer "
		    "(conv, bn, relu, maxpool, avgpool, gap, linear, dropout, "
		    "res, add; or a preset's name alone)" },
		{ "conv 8; rleu; linear", "near 'rleu': unknown layer (did "
		    "you mean 'relu'? conv, bn, relu, maxpool, avgpool, gap, "
		    "linear, dropout, res, add; or a preset's name alone)" },
		{ " resnet-20 ", "near 'resnet-20': not a preset (did you mean "
		    "'resnet20'? the presets are mlp, cnn-small, resnet20, "
		    "resnet18, resnet50; rv-train-gpu --list-models) nor a "
		    "layer spec" },
		{ "CNN_small", "near 'CNN_small': not a preset (did you mean "
		    "'cnn-small'? the presets are mlp, cnn-small, resnet20, "
		    "resnet18, resnet50; rv-train-gpu --list-models) nor a "
		    "layer spec" },
		{ "bogus", "near 'bogus': not a preset (mlp, cnn-small, "
		    "resnet20, resnet18, resnet50; rv-train-gpu --list-models) "
		    "nor a layer spec" },
		{ "resnet18 # a preset in a longer spec is no preset",
		    "near 'resnet18': unknown layer (conv, bn, relu, maxpool, "
		    "avgpool, gap, linear, dropout, res, add; or a preset's "
		    "name alone)" },
		{ "conv 8 kk=3; linear", "near 'kk=3': unknown key "
		    "(conv takes out, k, stride, pad, bias)" },
		{ "linear k=3", "near 'k=3': unknown key (linear takes "
		    "out, bias)" },
		{ "conv 8 =3; linear", "near '=3': unknown key (conv "
		    "takes out, k, stride, pad, bias)" },
		{ "relu 2; linear", "near '2': relu takes no arguments" },
		{ "bn x=1; linear", "near 'x=1': bn takes no arguments" },
		{ "conv 8 9; linear", "near '9': out given twice" },
		{ "conv 8 out=9; linear", "near 'out=9': out given twice" },
		{ "conv k=3; linear", "near 'conv': conv needs out (conv OUT "
		    "or conv out=OUT)" },
		{ "conv 8x; linear", "near '8x': bad number" },
		{ "conv 8\x01\x7f\x1b[2J; linear", "near '8???[2J': bad "
		    "number" },
		{ "conv 8 k=; linear", "near 'k=': bad number" },
		{ "conv 8 k=3.0; linear", "near 'k=3.0': bad number" },
		{ "dropout p=half; linear", "near 'p=half': bad number" },
		{ "dropout 0.5x; linear", "near '0.5x': bad number" },
		{ "conv 0; linear", "near '0': out out of range 1..65536" },
		{ "linear 65537", "near '65537': out out of range 1..65536" },
		{ "conv 8 k=16; linear", "near 'k=16': k out of range 1..15" },
		{ "conv 8 k=0; linear", "near 'k=0': k out of range 1..15" },
		{ "conv 8 stride=9; linear", "near 'stride=9': stride out of "
		    "range 1..8" },
		{ "maxpool 2 stride=16; linear", "near 'stride=16': stride "
		    "out of range 1..15" },
		{ "conv 8 pad=-1; linear", "near 'pad=-1': pad out of range "
		    "0..7" },
		{ "conv 8 pad=2; linear", "near 'pad=2': pad above k/2 "
		    "(k=3)" },
		{ "avgpool pad=1 k=1; linear", "near 'pad=1': pad above k/2 "
		    "(k=1)" },
		{ "conv 8 bias=2; linear", "near 'bias=2': bias out of range "
		    "0..1" },
		{ "linear 99999999999999999999", "near "
		    "'99999999999999999999': out out of range 1..65536" },
		{ "dropout 1; linear", "near '1': p out of range "
		    "(0 <= p < 1)" },
		{ "dropout 0.999999999; linear", "near '0.999999999': p out "
		    "of range (0 <= p < 1)" },
		{ "dropout -0.1; linear", "near '-0.1': p out of range "
		    "(0 <= p < 1)" },
		{ "dropout nan; linear", "near 'nan': p out of range "
		    "(0 <= p < 1)" },
		{ "conv 8 k=3 stride=1 pad=1 bias=0 out=8 k=3; linear",
		    "near 'out=8': out given twice" },
		{ "conv 8 k=15; conv 8 k=15; conv 8 k=15; linear", "near "
		    "'conv': layer 2: input 8x4x4 becomes empty" },
		{ "maxpool 8; maxpool 8; linear", "near 'maxpool': layer 1: "
		    "input 3x4x4 becomes empty" },
		{ "res; conv 8; linear", "near 'res': layer 0: res not "
		    "closed by an add" },
		{ "res; res; add; linear", "near 'res': layer 0: res not "
		    "closed by an add" },
		{ "conv 8; add; linear", "near 'add': layer 1: add without "
		    "an open res" },
		{ "res; conv 8 k=2 pad=1; add; linear", "near 'add': layer 2: "
		    "no 1x1 strided shortcut maps the block's input 3x32x32 "
		    "(layer 0) onto its output 8x33x33" },
		/* (32 - 1) / s + 1 is 22 for s = 1, 16 for s = 2: never 21 */
		{ "res; conv 8 k=12; add; linear", "near 'add': layer 2: "
		    "no 1x1 strided shortcut maps the block's input 3x32x32 "
		    "(layer 0) onto its output 8x21x21" },
		{ "linear; relu", "near 'relu': layer 1: the last layer must "
		    "be linear" },
		{ "linear 5", "near 'linear': layer 0: 5 outputs for 10 "
		    "classes" },
		{ "linear 65536; linear 65536", "near 'linear': layer 1: "
		    "more than 2^31 parameters" },
		{ "conv 65536 k=15 pad=7; conv 65536 k=15 pad=7; linear",
		    "near 'conv': layer 1: more than 2^31 parameters" },
		{ "conv 8 a_very_long_argument_that_goes_on_and_on_and_on=1; "
		    "linear", "near 'a_very_long_argument_that_goes_on_and_on"
		    "...': unknown key (conv takes out, "
		    "k, stride, pad, bias)" },
	};
	char msg[512];
	char *big;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(msg, sizeof(msg), "model spec: %s", t[i].msg);
		expect_err(t[i].spec, rgb32, 10, msg);
	}
	expect_err("linear", rgb32, 0, "model spec: near 'linear': linear "
	    "without out, and no class count to give it");
	expect_err("linear", rgb32, 65537, "model spec: 65537 classes: out "
	    "of range 1..65536");
	expect_err("linear", (struct rv_shape){ 0, 1, 1 }, 2, "model spec: "
	    "input shape 0x1x1 out of range (1..65536 each)");
	expect_err("linear", (struct rv_shape){ 1, 65537, 1 }, 2, "model "
	    "spec: input shape 1x65537x1 out of range (1..65536 each)");
	/* a linear over a big input: 3 x 65536 x 65536 features */
	expect_err("linear", (struct rv_shape){ 3, 65536, 65536 }, 2,
	    "model spec: near 'linear': layer 0: more than 2^31 parameters");

	/* 1024 layers parse; one more does not */
	big = malloc(1025 * 5 + 16);
	for (i = 0; i < 1023; i++)
		memcpy(big + 5 * i, "relu;", 5);
	memcpy(big + 5 * i, "linear", 7);
	{
		struct rv_net n;

		PARSE(&n, big, grey28, 10);
		EXPECT_EQ(n.nlayers, 1024);
		rv_net_release(&n);
	}
	memmove(big + 5, big, strlen(big) + 1);
	memcpy(big, "gap; ", 5);
	expect_err(big, grey28, 10, "model spec: near 'linear': more than "
	    "1024 layers");
	free(big);
}

/* torchvision-style list of parameter tensor sizes, in canonical order */
static size_t
tensor_sizes(const struct rv_net *n, size_t *v)
{
	size_t k = 0, c, f;
	int i;

	for (i = 0; i < n->nlayers; i++) {
		const struct rv_layer *L = &n->layers[i];

		switch (L->kind) {
		case RV_LAYER_CONV:
			v[k++] = (size_t)L->out * L->in.c * L->k * L->k;
			if (L->bias)
				v[k++] = (size_t)L->out;
			break;
		case RV_LAYER_BN:
			v[k++] = (size_t)L->in.c;
			v[k++] = (size_t)L->in.c;
			break;
		case RV_LAYER_LINEAR:
			f = (size_t)L->in.c * L->in.h * L->in.w;
			v[k++] = (size_t)L->out * f;
			if (L->bias)
				v[k++] = (size_t)L->out;
			break;
		case RV_LAYER_ADD:
			if (!L->proj)
				break;
			c = (size_t)L->outs.c;
			v[k++] = c * (size_t)n->layers[L->res].in.c;
			v[k++] = c;
			v[k++] = c;
			break;
		default:
			break;
		}
	}
	return k;
}

/*
 * Reference numbers from torch 1.13 / torchvision 0.14 (/usr/bin/python3):
 *   m = torchvision.models.resnet18()       # and resnet50()
 *   sum(p.numel() for p in m.parameters())   # parameters
 *   sum(b.numel() for n, b in m.named_buffers()
 *       if 'num_batches' not in n)           # buffers
 *   [p.numel() for p in m.parameters()]      # tensor sizes, in order
 * MACs: a forward hook summing, for every Conv2d, out.numel() *
 * in_channels * kh * kw, and for every Linear in_features * out_features.
 * resnet20: nn.Sequential(Conv2d(3, 16, 3, 1, 1, bias=False),
 * BatchNorm2d(16), ReLU(), 9 BasicBlocks (conv3x3 stride s, bn, relu,
 * conv3x3, bn; shortcut Conv2d(cin, cout, 1, s, bias=False) +
 * BatchNorm2d when s != 1 or cin != cout; relu after the sum) at 16, 32,
 * 64 channels with s = 2 first in stages 2 and 3, AdaptiveAvgPool2d(1),
 * Flatten(), Linear(64, 10)).  cnn-small: nn.Sequential(Conv2d(1, 32, 3,
 * padding=1, bias=False), BatchNorm2d(32), ReLU(), MaxPool2d(2),
 * Conv2d(32, 64, 3, padding=1, bias=False), BatchNorm2d(64), ReLU(),
 * MaxPool2d(2), Flatten(), Linear(3136, 128), ReLU(), Dropout(0.25),
 * Linear(128, 10)).  mlp: Flatten(), Linear(784, 512), ReLU(),
 * Dropout(0.2), Linear(512, 256), ReLU(), Linear(256, 10).
 */
static const size_t r18_sizes[] = {
	9408, 64, 64, 36864, 64, 64, 36864, 64, 64, 36864, 64, 64, 36864,
	64, 64, 73728, 128, 128, 147456, 128, 128, 8192, 128, 128, 147456,
	128, 128, 147456, 128, 128, 294912, 256, 256, 589824, 256, 256,
	32768, 256, 256, 589824, 256, 256, 589824, 256, 256, 1179648, 512,
	512, 2359296, 512, 512, 131072, 512, 512, 2359296, 512, 512,
	2359296, 512, 512, 512000, 1000,
};

static void
test_presets(void)
{
	static const struct {
		const char *name;
		struct rv_shape in;
		int classes;
		size_t params, bufs;
		uint64_t macs;
		int ntensors;
		uint64_t isum;	/* sum of i * size_i over tensors */
	} t[] = {
		{ "resnet18", { 3, 224, 224 }, 1000, 11689512, 9600,
		    1814073344, 62, 555901576 },
		{ "resnet50", { 3, 224, 224 }, 1000, 25557032, 53120,
		    4089184256, 161, 3232433344 },
		{ "resnet20", { 3, 32, 32 }, 10, 272474, 1568, 40813184, 0,
		    0 },
		{ "cnn-small", { 1, 28, 28 }, 10, 421738, 192, 4241152, 0, 0 },
		{ "mlp", { 1, 28, 28 }, 10, 535818, 0, 535040, 0, 0 },
	};
	static const struct rv_shape other[] = {
		{ 1, 28, 28 }, { 3, 32, 32 }, { 4, 7, 9 }, { 3, 224, 224 },
		{ 1, 1, 1 },
	};
	const char *const *names = rv_net_presets();
	size_t *sizes, nsz, i, j;
	uint64_t isum;
	struct rv_net n, m;
	double r;

	for (i = 0; names[i] && i < 5; i++)
		EXPECT(rv_net_preset(names[i]) != NULL);
	EXPECT_EQ(i, 5);
	EXPECT(names[i] == NULL);
	EXPECT(rv_net_preset("resnet") == NULL);
	EXPECT(rv_net_preset("") == NULL);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		EXPECT(rv_net_preset(t[i].name) != NULL);
		if (!parse_ok(&n, t[i].name, t[i].in, t[i].classes)) {
			unit_st.cur_failed = 1;
			continue;
		}
		EXPECT_EQ(n.nparams, t[i].params);
		EXPECT_EQ(n.nbufs, t[i].bufs);
		EXPECT_EQ(rv_net_macs(&n), t[i].macs);
		EXPECT_EQ(n.classes, t[i].classes);
		/* the preset's text parses to the same net as its name */
		PARSE(&m, rv_net_preset(t[i].name), t[i].in,
		    t[i].classes);
		EXPECT(net_eq(&n, &m));
		rv_net_release(&m);
		if (t[i].ntensors) {
			sizes = malloc(n.nlayers * 3 * sizeof(*sizes));
			nsz = tensor_sizes(&n, sizes);
			EXPECT_EQ(nsz, t[i].ntensors);
			isum = 0;
			for (j = 0; j < nsz; j++)
				isum += j * sizes[j];
			EXPECT_EQ(isum, t[i].isum);
			free(sizes);
		}
		rv_net_release(&n);
		/* every preset on other inputs, with the round trip */
		for (j = 0; j < sizeof(other) / sizeof(other[0]); j++) {
			if (strcmp(t[i].name, "mlp") != 0 && other[j].h < 2)
				continue;
			PARSE(&n, t[i].name, other[j], 7);
			rv_net_release(&n);
		}
	}

	/* resnet18: the tensor sizes one by one, as torchvision orders */
	PARSE(&n, "resnet18", rgb224, 1000);
	sizes = malloc(n.nlayers * 3 * sizeof(*sizes));
	nsz = tensor_sizes(&n, sizes);
	EXPECT_EQ(nsz, sizeof(r18_sizes) / sizeof(r18_sizes[0]));
	for (j = 0; j < nsz && j < sizeof(r18_sizes) / sizeof(r18_sizes[0]);
	    j++)
		EXPECT_EQ(sizes[j], r18_sizes[j]);
	free(sizes);
	rv_net_release(&n);

	/* torchvision's "4.09 GFLOPS" for resnet50, within 1% */
	PARSE(&n, "resnet50", rgb224, 1000);
	r = (double)rv_net_macs(&n) / 4.09e9;
	EXPECT(r > 0.99 && r < 1.01);
	/* the stride sits on the 3x3 (v1.5): layer2's first block */
	for (j = 0; j < (size_t)n.nlayers; j++)
		if (n.layers[j].kind == RV_LAYER_CONV &&
		    n.layers[j].stride == 2 && n.layers[j].out == 128)
			break;
	EXPECT(j < (size_t)n.nlayers && n.layers[j].k == 3);
	EXPECT_EQ(n.layers[n.nlayers - 1].in.c, 2048);
	rv_net_release(&n);

	/* resnet20: 16x32x32 -> 32x16x16 -> 64x8x8, two projections */
	PARSE(&n, "resnet20", rgb32, 10);
	for (i = j = 0; i < (size_t)n.nlayers; i++)
		if (n.layers[i].kind == RV_LAYER_ADD && n.layers[i].proj) {
			EXPECT_EQ(n.layers[i].proj_stride, 2);
			j++;
		}
	EXPECT_EQ(j, 2);
	EXPECT(shape_eq(n.layers[n.nlayers - 2].in,
	    (struct rv_shape){ 64, 8, 8 }));
	rv_net_release(&n);
}

static void
test_describe(void)
{
	struct rv_net n;
	char buf[8192], small[100];
	size_t len;
	char *nl;

	PARSE(&n, "resnet20", rgb32, 10);
	rv_net_describe(&n, buf, sizeof(buf));
	EXPECT(strncmp(buf, "   0  conv out=16 k=3 stride=1 pad=1 bias=0",
	    43) == 0);
	EXPECT(strstr(buf, "16x32x32") != NULL);
	EXPECT(strstr(buf, "add proj stride=2") != NULL);
	EXPECT(strstr(buf, "add identity") != NULL);
	EXPECT(strstr(buf, "\n  76  linear out=10 bias=1") != NULL);
	EXPECT(strstr(buf, "total: 272474 parameters, 1568 buffers, "
	    "40813184 MACs\n") != NULL);
	/* one line a layer and the total */
	len = 0;
	for (nl = buf; (nl = strchr(nl, '\n')) != NULL; nl++)
		len++;
	EXPECT_EQ(len, (size_t)n.nlayers + 1);

	/* a short buffer gets whole lines and "...", NUL-terminated */
	memset(small, 'x', sizeof(small));
	rv_net_describe(&n, small, sizeof(small));
	len = strlen(small);
	EXPECT(len < sizeof(small));
	EXPECT(len >= 4 && strcmp(small + len - 4, "...\n") == 0);
	EXPECT(strncmp(small, buf, len - 4) == 0);
	memset(small, 'x', sizeof(small));
	rv_net_describe(&n, small, 3);
	EXPECT_EQ(small[0], '\0');
	EXPECT_EQ(small[3], 'x');
	rv_net_describe(&n, small, 0);
	EXPECT_EQ(small[0], '\0');
	rv_net_release(&n);
}

static void
test_init(void)
{
	struct rv_net n;
	float *p1, *p2, *b1, *b2;
	double sum, bound;
	size_t i, j, cnt;
	int l, bad;

	PARSE(&n, "conv 16 pad=1 bias=1; bn; relu; res; conv 32 "
	    "stride=2 pad=1; bn; add; linear 64; dropout; linear", rgb32,
	    10);
	p1 = malloc(n.nparams * sizeof(float));
	p2 = malloc(n.nparams * sizeof(float));
	b1 = malloc(n.nbufs * sizeof(float));
	b2 = malloc(n.nbufs * sizeof(float));
	memset(p2, 0xa5, n.nparams * sizeof(float));
	rv_net_init(&n, 42, p1, b1);
	rv_net_init(&n, 42, p2, b2);
	EXPECT(memcmp(p1, p2, n.nparams * sizeof(float)) == 0);
	EXPECT(memcmp(b1, b2, n.nbufs * sizeof(float)) == 0);
	rv_net_init(&n, 43, p2, b2);
	EXPECT(memcmp(b1, b2, n.nbufs * sizeof(float)) == 0);
	for (i = cnt = 0; i < n.nparams; i++)
		cnt += p1[i] == p2[i];
	/* only BN's constants agree */
	EXPECT_EQ(cnt, 2 * 16 + 2 * 32 + 2 * 32);

	for (l = 0; l < n.nlayers; l++) {
		const struct rv_layer *L = &n.layers[l];
		const float *p = p1 + L->param_off;
		const float *b = b1 + L->buf_off;
		size_t c, fan = 0, nw = 0;

		switch (L->kind) {
		case RV_LAYER_CONV:
			fan = (size_t)L->in.c * L->k * L->k;
			nw = L->nparam;
			break;
		case RV_LAYER_LINEAR:
			fan = (size_t)L->in.c * L->in.h * L->in.w;
			nw = L->nparam;
			break;
		case RV_LAYER_ADD:
			c = (size_t)L->outs.c;
			fan = (size_t)n.layers[L->res].in.c;
			nw = c * fan;
			/* the shortcut's bn */
			for (j = bad = 0; j < c; j++)
				bad += p[nw + j] != 1 || p[nw + c + j] != 0 ||
				    b[j] != 0 || b[c + j] != 1;
			EXPECT_EQ(bad, 0);
			break;
		case RV_LAYER_BN:
			c = (size_t)L->in.c;
			for (j = bad = 0; j < c; j++)
				bad += p[j] != 1 || p[c + j] != 0 ||
				    b[j] != 0 || b[c + j] != 1;
			EXPECT_EQ(bad, 0);
			break;
		default:
			break;
		}
		if (!nw)
			continue;
		/* uniform in +-1/sqrt(fan_in): inside, filling it, mean 0 */
		bound = 1 / sqrt((double)fan);
		sum = 0;
		for (j = bad = 0; j < nw; j++) {
			bad += !(fabs(p[j]) <= bound);
			sum += p[j];
		}
		EXPECT_EQ(bad, 0);
		/* mean within 5 standard errors (sd = bound / sqrt 3) */
		EXPECT(fabs(sum / nw) < 5 * bound / sqrt(3.0 * nw));
		for (j = bad = 0; j < nw; j++)
			bad += fabs(p[j]) > 0.9 * bound;
		EXPECT(bad > 0);
	}
	/* each layer draws from its own generator: a model that differs
	 * in a later layer starts with the same numbers */
	{
		struct rv_net m;
		float *q, *qb;

		PARSE(&m, "conv 16 pad=1 bias=1; bn; relu; linear",
		    rgb32, 10);
		q = malloc(m.nparams * sizeof(float));
		qb = malloc(m.nbufs * sizeof(float));
		rv_net_init(&m, 42, q, qb);
		EXPECT(memcmp(q, p1, (16 * 27 + 16 + 32) * sizeof(float)) ==
		    0);
		free(q);
		free(qb);
		rv_net_release(&m);
	}
	free(p1);
	free(p2);
	free(b1);
	free(b2);
	rv_net_release(&n);
}

int
main(void)
{
	rv_setprogname("t_nn_spec");
	RUN(test_grammar);
	RUN(test_residual);
	RUN(test_errors);
	RUN(test_presets);
	RUN(test_describe);
	RUN(test_init);
	return UNIT_DONE();
}
