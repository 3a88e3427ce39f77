/*
 * The model spec (rv-train-gpu(1), MODEL SPEC): parsing a spec or a
 * preset's name into the flat layer list of nn.h, with every shape
 * inferred and every parameter placed in the canonical order; the
 * normalised text (every argument explicit, so a checkpoint says exactly
 * what it holds), the presets, MAC counts and the layer table for -v.
 */
#include "nn/nn.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/near.h"
#include "base/xmem.h"

#define MAX_LAYERS	1024
#define MAX_PARAMS	((uint64_t)1 << 31)
#define MAX_OUT		65536
#define MAX_K		15
#define MAX_STRIDE	8	/* conv */
#define MAX_POOL_STRIDE	15	/* pools: up to k, their default */
#define MAX_DIM		65536	/* input c, h, w */
#define NEAR_MAX	40	/* characters of a token in a message */

/* ---- presets ---------------------------------------------------------- */

static const char preset_mlp[] =
    "# a multilayer perceptron on the flattened input\n"
    "linear 512; relu; dropout 0.2;\n"
    "linear 256; relu;\n"
    "linear\n";

static const char preset_cnn_small[] =
    "# two conv stages, then a small classifier\n"
    "conv 32 k=3 pad=1; bn; relu; maxpool 2;\n"
    "conv 64 k=3 pad=1; bn; relu; maxpool 2;\n"
    "linear 128; relu; dropout 0.25;\n"
    "linear\n";

/* He et al. 2016, sec. 4.2, with projection shortcuts (option B). */
#define R20_ID(c) \
    "res; conv " c " k=3 pad=1; bn; relu; conv " c " k=3 pad=1; bn; " \
    "add; relu;\n"
#define R20_DOWN(c) \
    "res; conv " c " k=3 stride=2 pad=1; bn; relu; conv " c " k=3 pad=1; " \
    "bn; add; relu;\n"
static const char preset_resnet20[] =
    "# CIFAR ResNet-20 (He et al. 2016, sec. 4.2), projection shortcuts\n"
    "conv 16 k=3 pad=1; bn; relu;\n"
    "# stage 1: 3 basic blocks, 16 channels\n"
    R20_ID("16") R20_ID("16") R20_ID("16")
    "# stage 2: 32 channels, the first block strided\n"
    R20_DOWN("32") R20_ID("32") R20_ID("32")
    "# stage 3: 64 channels, the first block strided\n"
    R20_DOWN("64") R20_ID("64") R20_ID("64")
    "gap; linear\n";

/* torchvision's BasicBlock and Bottleneck (v1.5: stride on the 3x3). */
#define BASIC(c, s) \
    "res; conv " c " k=3 stride=" s " pad=1; bn; relu; " \
    "conv " c " k=3 pad=1; bn; add; relu;\n"
#define BOTTLE(w, c, s) \
    "res; conv " w " k=1; bn; relu; conv " w " k=3 stride=" s " pad=1; " \
    "bn; relu; conv " c " k=1; bn; add; relu;\n"
#define STEM \
    "conv 64 k=7 stride=2 pad=3; bn; relu; maxpool 3 stride=2 pad=1;\n"
static const char preset_resnet18[] =
    "# torchvision resnet18: basic blocks [2, 2, 2, 2]\n"
    STEM
    "# layer1\n" BASIC("64", "1") BASIC("64", "1")
    "# layer2\n" BASIC("128", "2") BASIC("128", "1")
    "# layer3\n" BASIC("256", "2") BASIC("256", "1")
    "# layer4\n" BASIC("512", "2") BASIC("512", "1")
    "gap; linear\n";

static const char preset_resnet50[] =
    "# torchvision resnet50: bottlenecks [3, 4, 6, 3], expansion 4\n"
    STEM
    "# layer1\n"
    BOTTLE("64", "256", "1") BOTTLE("64", "256", "1")
    BOTTLE("64", "256", "1")
    "# layer2\n"
    BOTTLE("128", "512", "2") BOTTLE("128", "512", "1")
    BOTTLE("128", "512", "1") BOTTLE("128", "512", "1")
    "# layer3\n"
    BOTTLE("256", "1024", "2") BOTTLE("256", "1024", "1")
    BOTTLE("256", "1024", "1") BOTTLE("256", "1024", "1")
    BOTTLE("256", "1024", "1") BOTTLE("256", "1024", "1")
    "# layer4\n"
    BOTTLE("512", "2048", "2") BOTTLE("512", "2048", "1")
    BOTTLE("512", "2048", "1")
    "gap; linear\n";

static const char *const preset_names[] = {
	"mlp", "cnn-small", "resnet20", "resnet18", "resnet50", NULL,
};
static const char *const preset_texts[] = {
	preset_mlp, preset_cnn_small, preset_resnet20, preset_resnet18,
	preset_resnet50,
};

const char *
rv_net_preset(const char *name)
{
	size_t i;

	for (i = 0; preset_names[i]; i++)
		if (strcmp(name, preset_names[i]) == 0)
			return preset_texts[i];
	return NULL;
}

const char *const *
rv_net_presets(void)
{
	return preset_names;
}

/* ---- layers and their keys -------------------------------------------- */

enum key { KEY_OUT, KEY_K, KEY_STRIDE, KEY_PAD, KEY_BIAS, KEY_P, NKEYS };

static const char *const key_names[NKEYS] = {
	"out", "k", "stride", "pad", "bias", "p",
};

#define B(k)	(1u << (k))

static const struct layer_def {
	const char *name;
	enum rv_layer_kind kind;
	unsigned keys;		/* B(key) for each key it takes */
	int primary;		/* the key a bare value fills, or -1 */
} layer_defs[] = {
	{ "conv", RV_LAYER_CONV,
	    B(KEY_OUT) | B(KEY_K) | B(KEY_STRIDE) | B(KEY_PAD) | B(KEY_BIAS),
	    KEY_OUT },
	{ "bn", RV_LAYER_BN, 0, -1 },
	{ "relu", RV_LAYER_RELU, 0, -1 },
	{ "maxpool", RV_LAYER_MAXPOOL, B(KEY_K) | B(KEY_STRIDE) | B(KEY_PAD),
	    KEY_K },
	{ "avgpool", RV_LAYER_AVGPOOL, B(KEY_K) | B(KEY_STRIDE) | B(KEY_PAD),
	    KEY_K },
	{ "gap", RV_LAYER_GAP, 0, -1 },
	{ "linear", RV_LAYER_LINEAR, B(KEY_OUT) | B(KEY_BIAS), KEY_OUT },
	{ "dropout", RV_LAYER_DROPOUT, B(KEY_P), KEY_P },
	{ "res", RV_LAYER_RES, 0, -1 },
	{ "add", RV_LAYER_ADD, 0, -1 },
};
#define NDEFS	(sizeof(layer_defs) / sizeof(layer_defs[0]))

static const struct layer_def *
def_of(enum rv_layer_kind kind)
{
	size_t i;

	for (i = 0; i < NDEFS; i++)
		if (layer_defs[i].kind == kind)
			return &layer_defs[i];
	return NULL;
}

static const char *
kind_name(enum rv_layer_kind kind)
{
	const struct layer_def *d = def_of(kind);

	return d ? d->name : "?";
}

static int
is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	    c == '\v' || c == '\f';
}

/*
 * The error for token tok ("model spec: near 'TOK': reason"): a long
 * token is cut, and control characters show as '?', so that the message
 * stays one readable line.
 */
static int
near_err(const char *tok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
near_err(const char *tok, const char *fmt, ...)
{
	char reason[512], shown[NEAR_MAX + 4];
	size_t i;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	for (i = 0; tok[i] && i < NEAR_MAX; i++)
		shown[i] = (unsigned char)tok[i] < 0x20 || tok[i] == 0x7f ?
		    '?' : tok[i];
	if (tok[i]) {
		memcpy(shown + i, "...", 3);
		i += 3;
	}
	shown[i] = '\0';
	return rv_seterr("model spec: near '%s': %s", shown, reason);
}

/* An optional '-' and decimal digits; saturates far out of every range. */
static int
parse_int(const char *s, long *out)
{
	int neg = 0;
	long v = 0;

	if (*s == '-') {
		neg = 1;
		s++;
	}
	if (*s == '\0')
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (v < 100000000L)
			v = v * 10 + (*s - '0');
	}
	*out = neg ? -v : v;
	return 0;
}

/* The shortest decimal that reads back as the float v. */
static void
fmt_float(char *buf, size_t n, float v)
{
	int prec;

	if (v == 0)
		v = 0;		/* no "-0" */
	for (prec = 1; prec < 9; prec++) {
		snprintf(buf, n, "%.*g", prec, (double)v);
		if ((float)strtod(buf, NULL) == v)
			return;
	}
	snprintf(buf, n, "%.9g", (double)v);
}

/* A layer's normalised text ("conv out=32 k=3 stride=1 pad=1 bias=0"). */
static void
layer_text(const struct rv_layer *L, char *buf, size_t n)
{
	const char *name = kind_name(L->kind);
	char num[32];

	switch (L->kind) {
	case RV_LAYER_CONV:
		snprintf(buf, n, "%s out=%d k=%d stride=%d pad=%d bias=%d",
		    name, L->out, L->k, L->stride, L->pad, L->bias);
		break;
	case RV_LAYER_MAXPOOL:
	case RV_LAYER_AVGPOOL:
		snprintf(buf, n, "%s k=%d stride=%d pad=%d", name, L->k,
		    L->stride, L->pad);
		break;
	case RV_LAYER_LINEAR:
		snprintf(buf, n, "%s out=%d bias=%d", name, L->out, L->bias);
		break;
	case RV_LAYER_DROPOUT:
		fmt_float(num, sizeof(num), L->p);
		snprintf(buf, n, "%s p=%s", name, num);
		break;
	default:
		snprintf(buf, n, "%s", name);
		break;
	}
}

/* ---- the parser ------------------------------------------------------- */

struct parser {
	struct rv_layer *v;
	int n, cap;
	int *open;		/* indices of the open RES layers */
	int depth;
	struct rv_shape cur;	/* the last layer's output shape */
	uint64_t nparams, nbufs;
	int classes;		/* 1..MAX_OUT, or 0 if unknown */
	struct rv_buf canon;
};

/* Set the value of key from text val; tok is the whole argument. */
static int
set_key(struct rv_layer *L, int key, const char *tok, const char *val)
{
	static const long lo[NKEYS] = { 1, 1, 1, 0, 0, 0 };
	long hi[NKEYS] = { MAX_OUT, MAX_K, MAX_STRIDE, MAX_K / 2, 1, 0 };
	char *end;
	double d;
	float f;
	long v;

	if (key == KEY_P) {
		d = strtod(val, &end);
		if (*val == '\0' || is_blank((unsigned char)*val) ||
		    *end != '\0')
			return near_err(tok, "bad number");
		f = (float)d;
		if (!(f >= 0 && f < 1))
			return near_err(tok, "p out of range (0 <= p < 1)");
		L->p = f == 0 ? 0 : f;
		return 0;
	}
	if (L->kind == RV_LAYER_MAXPOOL || L->kind == RV_LAYER_AVGPOOL)
		hi[KEY_STRIDE] = MAX_POOL_STRIDE;
	if (parse_int(val, &v) < 0)
		return near_err(tok, "bad number");
	if (v < lo[key] || v > hi[key])
		return near_err(tok, "%s out of range %ld..%ld",
		    key_names[key], lo[key], hi[key]);
	switch (key) {
	case KEY_OUT:
		L->out = (int)v;
		break;
	case KEY_K:
		L->k = (int)v;
		break;
	case KEY_STRIDE:
		L->stride = (int)v;
		break;
	case KEY_PAD:
		L->pad = (int)v;
		break;
	case KEY_BIAS:
		L->bias = (int)v;
		break;
	}
	return 0;
}

/* The next blank-separated token of *pos (writable), or NULL. */
static char *
next_token(char **pos)
{
	char *s = *pos, *tok;

	while (is_blank((unsigned char)*s))
		s++;
	if (*s == '\0')
		return NULL;
	tok = s;
	while (*s && !is_blank((unsigned char)*s))
		s++;
	if (*s)
		*s++ = '\0';
	*pos = s;
	return tok;
}

/* "out, k, stride" for a message. */
static void
list_keys(const struct layer_def *d, char *buf, size_t n)
{
	size_t j = 0;
	int k;

	buf[0] = '\0';
	for (k = 0; k < NKEYS; k++)
		if (d->keys & B(k))
			j += (size_t)snprintf(buf + j, j < n ? n - j : 0,
			    "%s%s", j ? ", " : "", key_names[k]);
}

/*
 * Parse one layer, its name and the rest of its text (writable), into
 * L: arguments only; shapes and offsets come after.
 */
static int
parse_args(struct parser *ps, const char *name, char *rest,
    struct rv_layer *L)
{
	const struct layer_def *d = NULL;
	const char *given[NKEYS] = { NULL };
	const char *eq, *val;
	char list[64], *tok;
	size_t i, klen;
	int key;

	for (i = 0; i < NDEFS; i++)
		if (strcmp(name, layer_defs[i].name) == 0)
			d = &layer_defs[i];
	if (!d) {
		struct rv_nearby nb;
		const char *near;

		rv_nearby_init(&nb, name, strlen(name));
		for (i = 0; i < NDEFS; i++)
			rv_nearby_offer(&nb, layer_defs[i].name,
			    strlen(layer_defs[i].name));
		if ((near = rv_nearby_best(&nb)) != NULL)
			return near_err(name, "unknown layer (did you mean "
			    "'%s'? conv, bn, relu, maxpool, avgpool, gap, "
			    "linear, dropout, res, add; or a preset's name "
			    "alone)", near);
		return near_err(name, "unknown layer (conv, bn, relu, "
		    "maxpool, avgpool, gap, linear, dropout, res, add; or a "
		    "preset's name alone)");
	}
	memset(L, 0, sizeof(*L));
	L->kind = d->kind;
	switch (d->kind) {
	case RV_LAYER_CONV:
		L->k = 3;
		L->stride = 1;
		break;
	case RV_LAYER_MAXPOOL:
	case RV_LAYER_AVGPOOL:
		L->k = 2;
		L->stride = 0;	/* k unless given */
		break;
	case RV_LAYER_LINEAR:
		L->bias = 1;
		break;
	case RV_LAYER_DROPOUT:
		L->p = 0.5f;
		break;
	default:
		break;
	}
	while ((tok = next_token(&rest)) != NULL) {
		eq = strchr(tok, '=');
		if (eq) {
			klen = (size_t)(eq - tok);
			for (key = 0; key < NKEYS; key++)
				if (strlen(key_names[key]) == klen &&
				    strncmp(tok, key_names[key], klen) == 0)
					break;
			if (key == NKEYS || !(d->keys & B(key))) {
				if (!d->keys)
					return near_err(tok, "%s takes no "
					    "arguments", d->name);
				list_keys(d, list, sizeof(list));
				return near_err(tok, "unknown key (%s takes "
				    "%s)", d->name, list);
			}
			val = eq + 1;
		} else {
			if (d->primary < 0)
				return near_err(tok, "%s takes no "
				    "arguments", d->name);
			key = d->primary;
			val = tok;
		}
		if (given[key])
			return near_err(tok, "%s given twice",
			    key_names[key]);
		given[key] = tok;
		if (set_key(L, key, tok, val) < 0)
			return -1;
	}
	if (given[KEY_PAD] && L->pad > L->k / 2)
		return near_err(given[KEY_PAD], "pad above k/2 (k=%d)", L->k);
	if (L->stride == 0)
		L->stride = L->k;
	if (d->kind == RV_LAYER_CONV && !given[KEY_OUT])
		return near_err(name, "conv needs out (conv OUT or "
		    "conv out=OUT)");
	if (d->kind == RV_LAYER_LINEAR && !given[KEY_OUT]) {
		if (ps->classes < 1)
			return near_err(name, "linear without out, and no "
			    "class count to give it");
		L->out = ps->classes;
	}
	return 0;
}

/* floor((in + 2 pad - k) / stride) + 1, or 0 for an empty output. */
static int
spatial(int in, int k, int stride, int pad)
{
	int span = in + 2 * pad - k;

	return span < 0 ? 0 : span / stride + 1;
}

/*
 * The strides s with (in - 1) / s + 1 == out (a 1x1 conv without pad):
 * [*lo, *hi], empty when *lo > *hi.
 */
static void
stride_range(int in, int out, long *lo, long *hi)
{
	long q = out - 1, m = in - 1;

	if (q <= 0) {
		*lo = in > 1 ? in : 1;
		*hi = q == 0 ? MAX_DIM * 2L : 0;
		return;
	}
	*lo = m / (q + 1) + 1;
	*hi = m / q;
}

static int
shape_eq(struct rv_shape a, struct rv_shape b)
{
	return a.c == b.c && a.h == b.h && a.w == b.w;
}

/* Add n trainable floats and nb buffer floats to L, within the limit. */
static int
place(struct parser *ps, struct rv_layer *L, const char *tok, uint64_t n,
    uint64_t nb)
{
	if (n > MAX_PARAMS || ps->nparams + n > MAX_PARAMS)
		return near_err(tok, "layer %d: more than 2^31 parameters",
		    ps->n);
	L->param_off = (size_t)ps->nparams;
	L->nparam = (size_t)n;
	L->buf_off = (size_t)ps->nbufs;
	L->nbuf = (size_t)nb;
	ps->nparams += n;
	ps->nbufs += nb;
	return 0;
}

/* Infer L's shapes and place its parameters; L becomes layer ps->n. */
static int
add_layer(struct parser *ps, struct rv_layer *L, const char *tok)
{
	struct rv_shape in = ps->cur, o = ps->cur;
	const struct rv_layer *r;
	uint64_t n = 0, nb = 0, feat;
	long lo, hi, lo2, hi2;

	switch (L->kind) {
	case RV_LAYER_CONV:
		o.c = L->out;
		/* fall through */
	case RV_LAYER_MAXPOOL:
	case RV_LAYER_AVGPOOL:
		o.h = spatial(in.h, L->k, L->stride, L->pad);
		o.w = spatial(in.w, L->k, L->stride, L->pad);
		if (o.h < 1 || o.w < 1)
			return near_err(tok, "layer %d: input %dx%dx%d "
			    "becomes empty", ps->n, in.c, in.h, in.w);
		if (L->kind == RV_LAYER_CONV)
			n = (uint64_t)L->out * (uint64_t)in.c *
			    (uint64_t)(L->k * L->k) +
			    (L->bias ? (uint64_t)L->out : 0);
		break;
	case RV_LAYER_BN:
		n = nb = 2 * (uint64_t)in.c;
		break;
	case RV_LAYER_GAP:
		o.h = o.w = 1;
		break;
	case RV_LAYER_LINEAR:
		feat = (uint64_t)in.c * (uint64_t)in.h * (uint64_t)in.w;
		if (feat > MAX_PARAMS)
			return near_err(tok, "layer %d: more than 2^31 "
			    "parameters", ps->n);
		o.c = L->out;
		o.h = o.w = 1;
		n = (uint64_t)L->out * feat + (L->bias ? (uint64_t)L->out :
		    0);
		break;
	case RV_LAYER_RES:
		ps->open[ps->depth++] = ps->n;
		break;
	case RV_LAYER_ADD:
		if (ps->depth == 0)
			return near_err(tok, "layer %d: add without an open "
			    "res", ps->n);
		L->res = ps->open[--ps->depth];
		r = &ps->v[L->res];
		if (shape_eq(r->in, in))
			break;
		stride_range(r->in.h, in.h, &lo, &hi);
		stride_range(r->in.w, in.w, &lo2, &hi2);
		if (lo2 > lo)
			lo = lo2;
		if (hi2 < hi)
			hi = hi2;
		if (lo > hi)
			return near_err(tok, "layer %d: no 1x1 strided "
			    "shortcut maps the block's input %dx%dx%d (layer "
			    "%d) onto its output %dx%dx%d", ps->n, r->in.c,
			    r->in.h, r->in.w, L->res, in.c, in.h, in.w);
		L->proj = 1;
		L->proj_stride = (int)lo;
		n = (uint64_t)in.c * (uint64_t)r->in.c + 2 * (uint64_t)in.c;
		nb = 2 * (uint64_t)in.c;
		break;
	default:
		break;
	}
	L->in = in;
	L->outs = o;
	if (place(ps, L, tok, n, nb) < 0)
		return -1;
	ps->cur = o;
	return 0;
}

/* One layer's text (writable); blank text is no layer. */
static int
parse_segment(struct parser *ps, char *seg)
{
	char text[128];
	struct rv_layer L;
	char *name;

	if ((name = next_token(&seg)) == NULL)
		return 0;
	if (ps->n == MAX_LAYERS)
		return near_err(name, "more than %d layers", MAX_LAYERS);
	if (parse_args(ps, name, seg, &L) < 0 || add_layer(ps, &L,
	    name) < 0)
		return -1;
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 32;
		ps->v = xreallocarray(ps->v, (size_t)ps->cap, sizeof(*ps->v));
	}
	ps->v[ps->n++] = L;
	layer_text(&L, text, sizeof(text));
	if (ps->canon.len)
		rv_buf_append(&ps->canon, "; ", 2);
	rv_buf_append(&ps->canon, text, strlen(text));
	return 0;
}

/* The preset text if spec is a preset's name alone (blanks around). */
static const char *
resolve_preset(const char *spec)
{
	const char *s = spec, *e;
	char name[16];
	size_t n;

	while (is_blank((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && is_blank((unsigned char)e[-1]))
		e--;
	n = (size_t)(e - s);
	if (n == 0 || n >= sizeof(name))
		return NULL;
	memcpy(name, s, n);
	name[n] = '\0';
	return rv_net_preset(name);
}

/*
 * A spec of one word that is neither a preset nor a layer ("resnet-20",
 * "cnn_small") was meant as a preset: say so, with the presets and the
 * nearest, rather than "unknown layer".  0 where spec is something else.
 */
static int
not_a_spec(const char *spec)
{
	const char *s = spec, *e, *near;
	char name[64], list[128];
	size_t n, i, j = 0;

	while (is_blank((unsigned char)*s))
		s++;
	for (e = s; *e && !is_blank((unsigned char)*e) && *e != ';' &&
	    *e != '#' && *e != '='; e++)
		continue;
	n = (size_t)(e - s);
	while (is_blank((unsigned char)*e))
		e++;
	if (n == 0 || *e != '\0' || n >= sizeof(name))
		return 0;
	memcpy(name, s, n);
	name[n] = '\0';
	for (i = 0; i < NDEFS; i++)
		if (strcmp(name, layer_defs[i].name) == 0)
			return 0;
	list[0] = '\0';
	for (i = 0; preset_names[i]; i++)
		j += (size_t)snprintf(list + j, j < sizeof(list) ?
		    sizeof(list) - j : 0, "%s%s", i ? ", " : "",
		    preset_names[i]);
	near = rv_nearest(name, preset_names);
	if (near)
		return near_err(name, "not a preset (did you mean '%s'? "
		    "the presets are %s; rv-train-gpu --list-models) nor a "
		    "layer spec", near, list);
	return near_err(name, "not a preset (%s; rv-train-gpu "
	    "--list-models) nor a layer spec", list);
}

int
rv_net_parse(struct rv_net *net, const char *spec, struct rv_shape in,
    int classes)
{
	struct parser ps = { 0 };
	const char *preset;
	char *text, *p, *seg;
	int rc = -1;

	memset(net, 0, sizeof(*net));
	if (in.c < 1 || in.c > MAX_DIM || in.h < 1 || in.h > MAX_DIM ||
	    in.w < 1 || in.w > MAX_DIM)
		return rv_seterr("model spec: input shape %dx%dx%d out of "
		    "range (1..%d each)", in.c, in.h, in.w, MAX_DIM);
	if (classes > MAX_OUT)
		return rv_seterr("model spec: %d classes: out of range "
		    "1..%d", classes, MAX_OUT);
	if ((preset = resolve_preset(spec)) != NULL)
		spec = preset;
	else if (not_a_spec(spec) < 0)
		return -1;
	ps.classes = classes > 0 ? classes : 0;
	ps.cur = in;
	text = xstrdup(spec);
	for (p = text; *p; p++) {	/* comments to blanks */
		if (*p != '#')
			continue;
		while (*p != '\0' && *p != '\n')
			*p++ = ' ';
		if (*p == '\0')
			break;
	}
	ps.open = xreallocarray(NULL, MAX_LAYERS, sizeof(*ps.open));
	for (seg = text;; seg = p + 1) {
		p = strchr(seg, ';');
		if (p)
			*p = '\0';
		if (parse_segment(&ps, seg) < 0)
			goto out;
		if (!p)
			break;
	}
	if (ps.n == 0) {
		rv_seterr("model spec: near '': no layers");
		goto out;
	}
	if (ps.depth > 0) {
		near_err("res", "layer %d: res not closed by an add",
		    ps.open[ps.depth - 1]);
		goto out;
	}
	if (ps.v[ps.n - 1].kind != RV_LAYER_LINEAR) {
		near_err(kind_name(ps.v[ps.n - 1].kind), "layer %d: the last "
		    "layer must be linear", ps.n - 1);
		goto out;
	}
	if (ps.classes && ps.v[ps.n - 1].out != ps.classes) {
		near_err("linear", "layer %d: %d outputs for %d classes",
		    ps.n - 1, ps.v[ps.n - 1].out, ps.classes);
		goto out;
	}
	rv_buf_append(&ps.canon, "", 1);
	net->nlayers = ps.n;
	net->layers = ps.v;
	net->in = in;
	net->classes = ps.v[ps.n - 1].out;
	net->nparams = (size_t)ps.nparams;
	net->nbufs = (size_t)ps.nbufs;
	net->spec = (char *)ps.canon.data;
	ps.v = NULL;
	ps.canon.data = NULL;
	rc = 0;
out:
	free(ps.v);
	free(ps.open);
	rv_buf_release(&ps.canon);
	free(text);
	return rc;
}

void
rv_net_release(struct rv_net *net)
{
	free(net->layers);
	free(net->spec);
	memset(net, 0, sizeof(*net));
}

/* ---- counts and the table --------------------------------------------- */

static uint64_t
mul_sat(uint64_t a, uint64_t b)
{
	if (a && b > UINT64_MAX / a)
		return UINT64_MAX;
	return a * b;
}

static uint64_t
add_sat(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* Output elements of shape s. */
static uint64_t
elems(struct rv_shape s)
{
	return (uint64_t)s.c * (uint64_t)s.h * (uint64_t)s.w;
}

/* Convolutions and linear layers only, as torchvision and fvcore count. */
uint64_t
rv_net_macs(const struct rv_net *net)
{
	const struct rv_layer *L;
	uint64_t m = 0, per;
	int i;

	for (i = 0; i < net->nlayers; i++) {
		L = &net->layers[i];
		switch (L->kind) {
		case RV_LAYER_CONV:
			per = (uint64_t)L->in.c * (uint64_t)(L->k * L->k);
			m = add_sat(m, mul_sat(elems(L->outs), per));
			break;
		case RV_LAYER_LINEAR:
			m = add_sat(m, mul_sat(elems(L->in),
			    (uint64_t)L->out));
			break;
		case RV_LAYER_ADD:
			if (L->proj)
				m = add_sat(m, mul_sat(elems(L->outs),
				    (uint64_t)net->layers[L->res].in.c));
			break;
		default:
			break;
		}
	}
	return m;
}

/* Layer i's line of the table; depth is the res nesting, kept here. */
static void
describe_layer(const struct rv_net *net, int i, int *depth, char *line,
    size_t n)
{
	const struct rv_layer *L = &net->layers[i];
	char text[128], shape[48];
	int ind;

	layer_text(L, text, sizeof(text));
	if (L->kind == RV_LAYER_ADD) {
		if (L->proj)
			snprintf(text, sizeof(text), "add proj stride=%d",
			    L->proj_stride);
		else
			snprintf(text, sizeof(text), "add identity");
		if (*depth > 0)
			(*depth)--;
	}
	ind = *depth < 8 ? *depth : 8;
	snprintf(shape, sizeof(shape), "%dx%dx%d", L->outs.c, L->outs.h,
	    L->outs.w);
	snprintf(line, n, "%4d  %*s%-*s %-14s %10zu\n", i, 2 * ind, "",
	    44 - 2 * ind, text, shape, L->nparam);
	if (L->kind == RV_LAYER_RES)
		(*depth)++;
}

/* Whole lines only: one that does not fit ends the table with "...". */
void
rv_net_describe(const struct rv_net *net, char *buf, size_t len)
{
	char line[256];
	size_t used = 0, n;
	int i, depth = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (i = 0; i <= net->nlayers; i++) {
		if (i < net->nlayers)
			describe_layer(net, i, &depth, line, sizeof(line));
		else
			snprintf(line, sizeof(line), "total: %zu parameters, "
			    "%zu buffers, %llu MACs\n", net->nparams,
			    net->nbufs, (unsigned long long)rv_net_macs(net));
		n = strlen(line);
		if (used + n >= len) {
			if (used + 4 < len)
				memcpy(buf + used, "...\n", 5);
			return;
		}
		memcpy(buf + used, line, n + 1);
		used += n;
	}
}
