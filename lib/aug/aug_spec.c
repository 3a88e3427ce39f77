/*
 * The op-spec grammar shared by rv-augment and rv-refurbish (rv-ops(7)):
 * parsing against the registry, the canonical text (every argument
 * spelled out, so metadata says exactly what ran), applying a chain with
 * per-op generators, and the decode hint that lets a JPEG be decoded
 * smaller when the first op would throw the pixels away anyway.
 */
#include "aug/aug.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aug/aug_impl.h"
#include "aug/aug_policy.h"
#include "aug/aug_text.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/near.h"
#include "base/opt.h"
#include "base/xmem.h"

/* Ops in one spec; far above any real chain, it bounds the op index. */
#define MAX_SPEC_OPS	4096

static int
is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The number of arguments a def declares. */
static size_t
nargs(const struct rv_op_def *def)
{
	size_t k = 0;

	while (def->args && def->args[k].name)
		k++;
	return k;
}

/* An argument with a number default outside its range must be given. */
static int
required(const struct rv_arg_def *a)
{
	if (a->type != RV_ARG_INT && a->type != RV_ARG_FLOAT)
		return 0;
	return a->def[0] < a->min || a->def[0] > a->max;
}

/*
 * The shortest text that reads back as v: plain decimals where they are
 * short enough to read ("1000", "1.333333"), else %g's exponent form.
 */
static void
fmt_num(char *buf, size_t n, double v)
{
	int prec;

	if (v == 0)
		v = 0;		/* no "-0" */
	if (fabs(v) < 1e15 && (v == 0 || fabs(v) >= 1e-4)) {
		for (prec = 0; prec <= 17; prec++) {
			snprintf(buf, n, "%.*f", prec, v);
			if (strtod(buf, NULL) == v)
				return;
		}
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* The range of a FILL argument: its own if it declares one. */
static void
fill_range(const struct rv_arg_def *a, double *lo, double *hi)
{
	*lo = 0;
	*hi = 255;
	if (a->min < a->max) {
		*lo = a->min;
		*hi = a->max;
	}
}

/* "nearest|bilinear" as "nearest, bilinear" into buf. */
static void
list_choices(const char *choices, char *buf, size_t n)
{
	size_t j = 0;
	const char *c;

	for (c = choices; *c && j + 3 < n; c++) {
		if (*c == '|') {
			buf[j++] = ',';
			buf[j++] = ' ';
		} else {
			buf[j++] = *c;
		}
	}
	buf[j] = '\0';
}

static int
parse_bool(const char *s, double *out)
{
	static const char *const yes[] = { "1", "yes", "true" };
	static const char *const no[] = { "0", "no", "false" };
	size_t i;

	for (i = 0; i < 3; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return rv_seterr("'%s': not a boolean (yes, no, true, false, 1 "
	    "or 0)", s);
}

static int
parse_enum(const char *s, const char *choices, double *out)
{
	const char *c = choices;
	size_t len = strlen(s);
	int k = 0;
	char list[256];

	while (*c) {
		const char *bar = strchr(c, '|');
		size_t n = bar ? (size_t)(bar - c) : strlen(c);
		if (n == len && strncmp(c, s, n) == 0) {
			*out = k;
			return 0;
		}
		k++;
		c += n;
		if (*c == '|')
			c++;
	}
	list_choices(choices, list, sizeof(list));
	return rv_seterr("'%s': not one of %s", s, list);
}

/* Up to max comma-separated reals in [lo, hi]; returns how many, or -1. */
static int
parse_reals(const char *s, double lo, double hi, double *v, int max)
{
	char buf[128];
	char *p, *comma;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		return rv_seterr("'%.20s...': too long", s);
	memcpy(buf, s, strlen(s) + 1);
	p = buf;
	for (;;) {
		comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		if (n == max)
			return rv_seterr("'%s': more than %d values", s, max);
		if (rv_parse_f64(p, lo, hi, &v[n]) < 0)
			return -1;
		n++;
		if (!comma)
			return n;
		p = comma + 1;
	}
}

/* Parse one value of argument a into v[0..2]. */
static int
parse_value(const struct rv_arg_def *a, const char *s, double v[3])
{
	long long i;
	double lo, hi;
	int n;

	switch (a->type) {
	case RV_ARG_INT:
		if (rv_parse_i64(s, (long long)a->min, (long long)a->max,
		    &i) < 0)
			return -1;
		v[0] = (double)i;
		return 0;
	case RV_ARG_FLOAT:
		return rv_parse_f64(s, a->min, a->max, &v[0]);
	case RV_ARG_BOOL:
		return parse_bool(s, &v[0]);
	case RV_ARG_ENUM:
		return parse_enum(s, a->choices ? a->choices : "", &v[0]);
	case RV_ARG_PAIR:
		if (!strchr(s, ','))
			return rv_seterr("'%s': not a pair a,b", s);
		if ((n = parse_reals(s, a->min, a->max, v, 2)) < 0)
			return -1;
		if (n != 2)
			return rv_seterr("'%s': not a pair a,b", s);
		if (v[0] > v[1])
			return rv_seterr("'%s': the first value is above the "
			    "second", s);
		return 0;
	case RV_ARG_FILL:
		fill_range(a, &lo, &hi);
		if ((n = parse_reals(s, lo, hi, v, 3)) < 0)
			return -1;
		if (n == 2)
			return rv_seterr("'%s': not v or r,g,b", s);
		if (n == 1)
			v[1] = v[2] = v[0];
		return 0;
	}
	return rv_seterr("'%s': argument of unknown type", s);
}

/* Append the canonical text of one argument value. */
static void
put_value(struct rv_buf *b, const struct rv_arg_def *a, const double v[3])
{
	char num[3][40], out[160];
	const char *c;
	int k;

	switch (a->type) {
	case RV_ARG_INT:
		snprintf(out, sizeof(out), "%.0f", v[0]);
		break;
	case RV_ARG_BOOL:
		snprintf(out, sizeof(out), "%d", v[0] != 0);
		break;
	case RV_ARG_ENUM:
		c = a->choices ? a->choices : "";
		for (k = 0; k < (int)v[0] && strchr(c, '|'); k++)
			c = strchr(c, '|') + 1;
		snprintf(out, sizeof(out), "%.*s",
		    (int)(strchr(c, '|') ? strchr(c, '|') - c :
		    (long)strlen(c)), c);
		break;
	case RV_ARG_PAIR:
		fmt_num(num[0], sizeof(num[0]), v[0]);
		fmt_num(num[1], sizeof(num[1]), v[1]);
		snprintf(out, sizeof(out), "%s,%s", num[0], num[1]);
		break;
	case RV_ARG_FILL:
		for (k = 0; k < 3; k++)
			fmt_num(num[k], sizeof(num[k]), v[k]);
		if (v[0] == v[1] && v[1] == v[2])
			snprintf(out, sizeof(out), "%s", num[0]);
		else
			snprintf(out, sizeof(out), "%s,%s,%s", num[0], num[1],
			    num[2]);
		break;
	case RV_ARG_FLOAT:
	default:
		fmt_num(out, sizeof(out), v[0]);
		break;
	}
	rv_buf_append(b, out, strlen(out));
}

/* Append op's canonical text ("name a=1 b=2 p=1"). */
static void
put_op(struct rv_buf *b, const struct rv_op *op)
{
	const struct rv_op_def *def = op->def;
	size_t k, n = nargs(def);
	char num[40];

	rv_buf_append(b, def->name, strlen(def->name));
	for (k = 0; k < n; k++) {
		rv_buf_append(b, " ", 1);
		rv_buf_append(b, def->args[k].name, strlen(def->args[k].name));
		rv_buf_append(b, "=", 1);
		put_value(b, &def->args[k], op->v[k]);
	}
	fmt_num(num, sizeof(num), op->p);
	rv_buf_append(b, " p=", 3);
	rv_buf_append(b, num, strlen(num));
}

/* "deg, interp, fill, p" into buf. */
static void
list_args(const struct rv_op_def *def, char *buf, size_t n)
{
	size_t k, na = nargs(def), j = 0;

	buf[0] = '\0';
	for (k = 0; k < na; k++)
		j += (size_t)snprintf(buf + j, j < n ? n - j : 0, "%s, ",
		    def->args[k].name);
	if (j < n)
		snprintf(buf + j, n - j, "p");
}

/*
 * Parse the tokens of one op (seg is a writable copy of its text) into
 * op.  pos is the op's 1-based position, for messages.
 */
static int
parse_op(char *seg, size_t pos, struct rv_op *op)
{
	const struct rv_op_def *def;
	char *tok, *save = NULL, *eq;
	unsigned char given[RV_AUG_MAXARGS + 1] = { 0 };
	size_t k, n;
	char list[256];

	tok = strtok_r(seg, " \t\n\r", &save);
	if ((def = rv_op_find(tok)) == NULL) {
		const struct rv_op_def *const *d;
		struct rv_nearby nb;

		rv_nearby_init(&nb, tok, strlen(tok));
		for (d = rv_ops(); *d != NULL; d++)
			rv_nearby_offer(&nb, (*d)->name, strlen((*d)->name));
		if (rv_nearby_best(&nb))
			return rv_seterr("op %zu: unknown op '%s' (did you "
			    "mean '%s'? rv-augment --list-ops lists them)",
			    pos, tok, rv_nearby_best(&nb));
		return rv_seterr("op %zu: unknown op '%s' (rv-augment "
		    "--list-ops lists them)", pos, tok);
	}
	n = nargs(def);
	if (n > RV_AUG_MAXARGS)
		return rv_seterr("op %zu '%s': more than %d arguments in "
		    "the registry", pos, def->name, RV_AUG_MAXARGS);
	memset(op, 0, sizeof(*op));
	op->def = def;
	for (k = 0; k < n; k++)
		memcpy(op->v[k], def->args[k].def, sizeof(op->v[k]));
	op->p = def->p_default > 0 ? def->p_default : 1;

	while ((tok = strtok_r(NULL, " \t\n\r", &save)) != NULL) {
		if ((eq = strchr(tok, '=')) == NULL || eq == tok)
			return rv_seterr("op %zu '%s': '%s': expected "
			    "key=value", pos, def->name, tok);
		*eq = '\0';
		if (strcmp(tok, "p") == 0) {
			k = n;
		} else {
			for (k = 0; k < n; k++)
				if (strcmp(def->args[k].name, tok) == 0)
					break;
			if (k == n) {
				struct rv_nearby nb;
				const char *near;

				/* p, listed last, is offered first: a word
				 * as near to it as to an argument names none */
				rv_nearby_init(&nb, tok, strlen(tok));
				rv_nearby_offer(&nb, "p", 1);
				for (k = 0; k < n; k++)
					rv_nearby_offer(&nb, def->args[k].name,
					    strlen(def->args[k].name));
				near = rv_nearby_best(&nb);
				if (near && strcmp(near, "p") == 0)
					near = NULL;
				list_args(def, list, sizeof(list));
				if (near)
					return rv_seterr("op %zu '%s': unknown "
					    "argument '%s' (did you mean '%s'? "
					    "%s takes %s)", pos, def->name, tok,
					    near, def->name, list);
				return rv_seterr("op %zu '%s': unknown "
				    "argument '%s' (%s takes %s)", pos,
				    def->name, tok, def->name, list);
			}
		}
		if (given[k])
			return rv_seterr("op %zu '%s': argument '%s' given "
			    "twice", pos, def->name, tok);
		given[k] = 1;
		if (k == n) {
			if (rv_parse_f64(eq + 1, 0, 1, &op->p) < 0)
				return rv_preferr("op %zu '%s': p", pos,
				    def->name);
		} else if (parse_value(&def->args[k], eq + 1,
		    op->v[k]) < 0) {
			return rv_preferr("op %zu '%s': %s", pos, def->name,
			    tok);
		}
	}
	for (k = 0; k < n; k++)
		if (!given[k] && required(&def->args[k]))
			return rv_seterr("op %zu '%s': missing argument "
			    "'%s'", pos, def->name, def->args[k].name);
	if (rv_policy_check(op) < 0)
		return rv_preferr("op %zu '%s'", pos, def->name);
	return 0;
}

static int
blank_segment(const char *s, const char *end)
{
	for (; s < end; s++)
		if (!is_blank((unsigned char)*s))
			return 0;
	return 1;
}

int
rv_spec_parse(const char *text, uint32_t first_index, struct rv_spec *out)
{
	struct rv_buf canon = { 0 };
	const char *seg = text, *end;
	size_t cap = 0;
	char *copy;
	int rc;

	memset(out, 0, sizeof(*out));
	for (;;) {
		end = strchr(seg, ';');
		if (!end)
			end = seg + strlen(seg);
		if (!blank_segment(seg, end)) {
			if (out->n == MAX_SPEC_OPS ||
			    (uint64_t)first_index + out->n > UINT32_MAX) {
				rv_seterr("more than %d ops", MAX_SPEC_OPS);
				goto fail;
			}
			if (out->n == cap) {
				cap = cap ? cap * 2 : 8;
				out->ops = xreallocarray(out->ops, cap,
				    sizeof(*out->ops));
			}
			copy = xstrndup(seg, (size_t)(end - seg));
			rc = parse_op(copy, out->n + 1, &out->ops[out->n]);
			free(copy);
			if (rc < 0)
				goto fail;
			out->ops[out->n].index = first_index +
			    (uint32_t)out->n;
			if (out->n)
				rv_buf_append(&canon, "; ", 2);
			put_op(&canon, &out->ops[out->n]);
			out->n++;
		}
		if (*end == '\0')
			break;
		seg = end + 1;
	}
	rv_buf_append(&canon, "", 1);
	out->text = (char *)canon.data;
	return 0;
fail:
	rv_buf_release(&canon);
	rv_spec_release(out);
	return -1;
}

void
rv_spec_release(struct rv_spec *s)
{
	free(s->ops);
	free(s->text);
	memset(s, 0, sizeof(*s));
}

int
rv_spec_apply(const struct rv_spec *s, struct rv_img *img,
    struct rv_aug_ctx *ctx, uint64_t seed, uint32_t stage, uint32_t epoch,
    uint64_t id)
{
	return rv_spec_apply_from(s, 0, img, ctx, seed, stage, epoch, id);
}

int
rv_spec_apply_from(const struct rv_spec *s, size_t first,
    struct rv_img *img, struct rv_aug_ctx *ctx, uint64_t seed,
    uint32_t stage, uint32_t epoch, uint64_t id)
{
	size_t k;

	for (k = first; k < s->n; k++) {
		const struct rv_op *op = &s->ops[k];
		struct rv_rng rng;

		/* Always drawn, so p does not shift the op's own numbers. */
		rv_rng_init(&rng, seed, stage, op->index, epoch, id);
		if (!(rv_rng_uniform(&rng) < op->p))
			continue;
		if (op->def->apply(op, img, ctx, &rng) < 0)
			return rv_preferr("op %zu '%s'", k + 1, op->def->name);
	}
	return 0;
}

/* ---- the decode hint ---- */

/* The value of op's argument called name, or NULL. */
static const double *
arg(const struct rv_op *op, const char *name)
{
	size_t k, n = nargs(op->def);

	for (k = 0; k < n; k++)
		if (strcmp(op->def->args[k].name, name) == 0)
			return op->v[k];
	return NULL;
}

/* torchvision's Resize(int) output size: shorter side to s, the longer
 * int(s * long / short). */
static void
resize_out(uint32_t h, uint32_t w, uint32_t s, uint32_t *oh, uint32_t *ow)
{
	uint32_t lo = w <= h ? w : h, hi = w <= h ? h : w;
	uint32_t nl = (uint32_t)((double)((uint64_t)s * hi) / lo);

	*oh = w <= h ? nl : s;
	*ow = w <= h ? s : nl;
}

/*
 * resize: the longer side L' at which the shorter side is still >= size
 * and torchvision's output size is unchanged (so the shape never depends
 * on whether the input was encoded).
 */
static uint32_t
hint_resize(const struct rv_op *op, uint32_t h, uint32_t w)
{
	const double *sz = arg(op, "size");
	uint32_t s, lo = h < w ? h : w, hi = h < w ? w : h, oh, ow, eh, ew;
	uint32_t rh, rw;
	uint64_t l, tries;

	if (!sz || *sz < 1)
		return 0;
	s = (uint32_t)*sz;
	resize_out(h, w, s, &eh, &ew);
	l = ((uint64_t)hi * s + lo - 1) / lo;
	for (tries = 0; tries < 4; tries++, l++) {
		if (2 * l > hi)
			return 0;
		rv_fit_max_side(h, w, (uint32_t)l, &rh, &rw);
		if ((rh < rw ? rh : rw) < s)
			continue;
		resize_out(rh, rw, s, &oh, &ow);
		if (oh == eh && ow == ew)
			return (uint32_t)l;
	}
	return 0;
}

/*
 * rrc: the crop is sampled relative to the image (area fraction in
 * scale, aspect ratio in ratio, position uniform), so a smaller decode
 * gives the same distribution of crops.  Quality stays as long as every
 * possible crop still has more than size pixels each way, so the final
 * resize stays a reduction: the smallest crop side is
 * sqrt(H * W * scale_min * q), q = min over the ratio range of
 * min(r, 1/r).  Ask for one pixel of margin against rounding.
 */
static uint32_t
hint_rrc(const struct rv_op *op, uint32_t h, uint32_t w)
{
	const double *sz = arg(op, "size"), *sc = arg(op, "scale");
	const double *ra = arg(op, "ratio");
	double q, need, k;
	uint32_t hi = h < w ? w : h, rh, rw;
	uint64_t l, tries;

	if (!sz || !sc || !ra || *sz < 1 || sc[0] <= 0 || ra[0] <= 0 ||
	    ra[1] <= 0)
		return 0;
	q = fmin(fmin(ra[0], 1 / ra[0]), fmin(ra[1], 1 / ra[1]));
	need = (*sz + 1) * (*sz + 1);
	k = (*sz + 2) / sqrt((double)h * w * sc[0] * q);
	if (!(k < 0.5))
		return 0;
	l = (uint64_t)ceil(hi * k);
	for (tries = 0; tries < 4; tries++, l++) {
		if (2 * l > hi)
			return 0;
		rv_fit_max_side(h, w, (uint32_t)l, &rh, &rw);
		if ((double)rh * rw * sc[0] * q >= need)
			return (uint32_t)l;
	}
	return 0;
}

uint32_t
rv_spec_decode_hint(const struct rv_spec *s, uint32_t h, uint32_t w)
{
	const struct rv_op *op;

	if (!s || s->n == 0 || h == 0 || w == 0 || s->exact)
		return 0;
	op = &s->ops[0];
	/* An op that may not run leaves the full image to later ops. */
	if (op->p < 1)
		return 0;
	if (strcmp(op->def->name, "resize") == 0)
		return hint_resize(op, h, w);
	if (strcmp(op->def->name, "rrc") == 0)
		return hint_rrc(op, h, w);
	return 0;
}

int
rv_spec_decode_sample(const struct rv_spec *s, struct rv_codec *codec,
    const struct rv_rec *r, const void *p, size_t n, struct rv_img *img)
{
	struct rv_decode_opts d = { r->channels, 0, 0 };
	uint32_t eh = r->height, ew = r->width;

	if (r->dtype == RV_DT_JPEG) {
		d.max_side = rv_spec_decode_hint(s, r->height, r->width);
		rv_fit_max_side(r->height, r->width, d.max_side, &eh, &ew);
	}
	if (rv_codec_decode(codec, p, n, &d, img) < 0)
		return -1;
	if (img->h != eh || img->w != ew || img->c != r->channels)
		return rv_seterr("the %s is %ux%ux%u, the record says "
		    "%ux%ux%u", rv_dtype_name(r->dtype), img->w, img->h,
		    img->c, ew, eh, r->channels);
	return 0;
}

/* ---- the listing ---- */

static const char *
type_word(enum rv_arg_type t)
{
	static const char *const w[] = {
		[RV_ARG_INT] = "INT", [RV_ARG_FLOAT] = "FLOAT",
		[RV_ARG_BOOL] = "BOOL", [RV_ARG_ENUM] = "WORD",
		[RV_ARG_PAIR] = "PAIR", [RV_ARG_FILL] = "FILL",
	};

	return (unsigned)t < sizeof(w) / sizeof(w[0]) && w[t] ? w[t] : "?";
}

/* "default 0.08,1, each in [0, 1]" and the like, into b. */
static void
put_domain(struct rv_buf *b, const struct rv_arg_def *a)
{
	char lo[40], hi[40], lo2[256], line[300];
	double flo, fhi;

	if (required(a)) {
		rv_buf_append(b, "required", 8);
	} else {
		rv_buf_append(b, "default ", 8);
		put_value(b, a, a->def);
	}
	switch (a->type) {
	case RV_ARG_BOOL:
		snprintf(line, sizeof(line), ", 0 or 1");
		break;
	case RV_ARG_ENUM:
		list_choices(a->choices ? a->choices : "", lo2,
		    sizeof(lo2));
		snprintf(line, sizeof(line), ", one of %s", lo2);
		break;
	case RV_ARG_FILL:
		fill_range(a, &flo, &fhi);
		fmt_num(lo, sizeof(lo), flo);
		fmt_num(hi, sizeof(hi), fhi);
		snprintf(line, sizeof(line), ", v or r,g,b in [%s, %s]", lo,
		    hi);
		break;
	case RV_ARG_PAIR:
		fmt_num(lo, sizeof(lo), a->min);
		fmt_num(hi, sizeof(hi), a->max);
		snprintf(line, sizeof(line), ", a,b in [%s, %s], a <= b", lo,
		    hi);
		break;
	default:
		fmt_num(lo, sizeof(lo), a->min);
		fmt_num(hi, sizeof(hi), a->max);
		snprintf(line, sizeof(line), ", in [%s, %s]", lo, hi);
		break;
	}
	rv_buf_append(b, line, strlen(line));
}

static void
put_arg_line(struct rv_buf *b, const char *name, const char *type,
    const struct rv_buf *domain, const char *help)
{
	char head[64];
	int n;

	n = snprintf(head, sizeof(head), "    %s=%s", name, type);
	rv_buf_append(b, head, strlen(head));
	for (; n < 24; n++)
		rv_buf_append(b, " ", 1);
	rv_buf_append(b, " ", 1);
	rv_buf_append(b, domain->data, domain->len);
	if (help && *help) {
		rv_buf_append(b, ": ", 2);
		rv_buf_append(b, help, strlen(help));
	}
	rv_buf_append(b, "\n", 1);
}

void
rv_ops_describe(struct rv_buf *out)
{
	const struct rv_op_def *const *d;
	struct rv_buf dom = { 0 };
	char line[512], num[40];
	size_t k, n;

	for (d = rv_ops(); *d != NULL; d++) {
		const struct rv_op_def *def = *d;
		snprintf(line, sizeof(line), "%s (%s): %s\n", def->name,
		    def->family, def->help);
		rv_buf_append(out, line, strlen(line));
		n = nargs(def);
		for (k = 0; k < n; k++) {
			dom.len = 0;
			put_domain(&dom, &def->args[k]);
			put_arg_line(out, def->args[k].name,
			    type_word(def->args[k].type), &dom,
			    def->args[k].help);
		}
		dom.len = 0;
		fmt_num(num, sizeof(num), def->p_default > 0 ?
		    def->p_default : 1);
		rv_buf_append(&dom, "default ", 8);
		rv_buf_append(&dom, num, strlen(num));
		rv_buf_append(&dom, ", in [0, 1]", 11);
		put_arg_line(out, "p", "FLOAT", &dom,
		    "probability that the op applies");
	}
	rv_buf_release(&dom);
}
