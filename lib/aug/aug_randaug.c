/*
 * The policy ops: identity, RandAugment and TrivialAugmentWide, as
 * torchvision 0.14 defines them (transforms/autoaugment.py): the same 14
 * ops, the same magnitude tables computed the way torch computes them in
 * float32, the same sign rule.  Only the generator differs (Philox keyed
 * per sample instead of torch's global state), so distributions match,
 * not individual draws.  The pixel work is the shared kernels'.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "aug/aug.h"
#include "aug/aug_impl.h"
#include "aug/aug_policy.h"
#include "base/err.h"

static const char *const op_names[RA_NOPS] = {
	"Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate",
	"Brightness", "Color", "Contrast", "Sharpness", "Posterize",
	"Solarize", "AutoContrast", "Equalize"
};

/* Argument positions (the order of the tables below). */
enum { RA_N, RA_M, RA_BINS, RA_INTERP, RA_FILL };
enum { TA_BINS, TA_INTERP, TA_FILL };

/*
 * torch.linspace(start, end, steps)[i] in float32, as the x86-64 CPU
 * kernel of torch 1.13 computes it (checked against torch for every
 * steps in 2..299 on the ranges used here): the first half counts up
 * from start and the second down from end, each as one fused
 * multiply-add; runs of 16 go through AVX2 vectors of 8, whose first
 * element is computed that way and the rest as base + k * step with two
 * roundings.
 */
static float
torch_linspace(float start, float end, uint32_t steps, uint32_t i)
{
	float step, base;
	uint32_t half = steps / 2, vbase, k;

	if (steps < 2)
		return start;
	step = (end - start) / (float)(steps - 1);
	if (i < steps - steps % 16) {
		vbase = i - i % 8;
		k = i - vbase;
	} else {
		vbase = i;
		k = 0;
	}
	if (vbase < half)
		base = (float)((double)start + (double)step * vbase);
	else
		base = (float)((double)end - (double)step *
		    (steps - vbase - 1));
	if (k == 0)
		return base;
	return base + (float)(step * (float)k);
}

/* 8 - round(i / ((bins - 1) / div)) in float32, ties to even (torch). */
static int
posterize_bits(uint32_t bins, uint32_t i, double div)
{
	float q = (float)i / (float)((double)(bins - 1) / div);

	return 8 - (int)nearbyintf(q);
}

int
rv_policy_signed(enum ra_op o)
{
	return o >= RA_SHEAR_X && o <= RA_SHARPNESS;
}

/* Does the op have a magnitude table (TrivialAugment draws a bin)? */
static int
has_magnitude(enum ra_op o)
{
	return o != RA_IDENTITY && o != RA_AUTOCONTRAST && o != RA_EQUALIZE;
}

const char *
rv_policy_op_name(enum ra_op o)
{
	return (unsigned)o < RA_NOPS ? op_names[o] : "?";
}

double
rv_policy_magnitude(enum ra_op o, uint32_t bins, uint32_t i, uint32_t h,
    uint32_t w, int wide)
{
	switch (o) {
	case RA_SHEAR_X:
	case RA_SHEAR_Y:
		return torch_linspace(0, wide ? 0.99f : 0.3f, bins, i);
	case RA_TRANSLATE_X:
		return torch_linspace(0, wide ? 32.0f :
		    (float)(150.0 / 331.0 * w), bins, i);
	case RA_TRANSLATE_Y:
		return torch_linspace(0, wide ? 32.0f :
		    (float)(150.0 / 331.0 * h), bins, i);
	case RA_ROTATE:
		return torch_linspace(0, wide ? 135.0f : 30.0f, bins, i);
	case RA_BRIGHTNESS:
	case RA_COLOR:
	case RA_CONTRAST:
	case RA_SHARPNESS:
		return torch_linspace(0, wide ? 0.99f : 0.9f, bins, i);
	case RA_POSTERIZE:
		return posterize_bits(bins, i, wide ? 6 : 4);
	case RA_SOLARIZE:
		return torch_linspace(255.0f, 0, bins, i);
	default:
		return 0;
	}
}

/* torchvision's _apply_op. */
static int
apply_one(enum ra_op o, double mag, struct rv_img *img,
    struct rv_aug_ctx *ctx, enum rv_interp interp, const double fill[3])
{
	switch (o) {
	case RA_IDENTITY:
		return 0;
	case RA_SHEAR_X:
		return rv_shear_x(img, ctx, mag, interp, fill);
	case RA_SHEAR_Y:
		return rv_shear_y(img, ctx, mag, interp, fill);
	case RA_TRANSLATE_X:
		return rv_translate(img, ctx, (int)mag, 0, interp, fill);
	case RA_TRANSLATE_Y:
		return rv_translate(img, ctx, 0, (int)mag, interp, fill);
	case RA_ROTATE:
		return rv_rotate(img, ctx, mag, interp, fill);
	case RA_BRIGHTNESS:
		return rv_brightness(img, 1.0 + mag);
	case RA_COLOR:
		return rv_saturation(img, 1.0 + mag);
	case RA_CONTRAST:
		return rv_contrast(img, 1.0 + mag);
	case RA_SHARPNESS:
		return rv_sharpness(img, ctx, 1.0 + mag);
	case RA_POSTERIZE:
		return rv_posterize(img, (int)mag);
	case RA_SOLARIZE:
		return rv_solarize(img, mag);
	case RA_AUTOCONTRAST:
		return rv_autocontrast(img);
	case RA_EQUALIZE:
		return rv_equalize(img);
	default:
		return rv_seterr("policy op %d out of range", (int)o);
	}
}

static int
identity_apply(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	return 0;
}

void
rv_randaugment_draw(struct rv_rng *rng, uint32_t bins, uint32_t m,
    uint32_t h, uint32_t w, struct rv_policy_draw *d)
{
	d->op = (enum ra_op)rv_rng_below(rng, RA_NOPS);
	d->bin = m;
	d->mag = rv_policy_magnitude(d->op, bins, m, h, w, 0);
	if (rv_policy_signed(d->op) && rv_rng_below(rng, 2))
		d->mag = -d->mag;
}

void
rv_trivialaugment_draw(struct rv_rng *rng, uint32_t bins, uint32_t h,
    uint32_t w, struct rv_policy_draw *d)
{
	d->op = (enum ra_op)rv_rng_below(rng, RA_NOPS);
	d->bin = 0;
	d->mag = 0;
	if (has_magnitude(d->op)) {
		d->bin = (uint32_t)rv_rng_below(rng, bins);
		d->mag = rv_policy_magnitude(d->op, bins, d->bin, h, w, 1);
	}
	if (rv_policy_signed(d->op) && rv_rng_below(rng, 2))
		d->mag = -d->mag;
}

/* RandAugment.forward: n ops with replacement, the same bin for all. */
static int
randaugment_apply(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	uint32_t n = (uint32_t)op->v[RA_N][0];
	uint32_t m = (uint32_t)op->v[RA_M][0];
	uint32_t bins = (uint32_t)op->v[RA_BINS][0];
	enum rv_interp interp = (enum rv_interp)(int)op->v[RA_INTERP][0];
	struct rv_policy_draw d;
	uint32_t k;

	for (k = 0; k < n; k++) {
		rv_randaugment_draw(rng, bins, m, img->h, img->w, &d);
		if (apply_one(d.op, d.mag, img, ctx, interp,
		    op->v[RA_FILL]) < 0)
			return -1;
	}
	return 0;
}

/* TrivialAugmentWide.forward: one op, a uniform bin, wide ranges. */
static int
trivialaugment_apply(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng)
{
	uint32_t bins = (uint32_t)op->v[TA_BINS][0];
	enum rv_interp interp = (enum rv_interp)(int)op->v[TA_INTERP][0];
	struct rv_policy_draw d;

	rv_trivialaugment_draw(rng, bins, img->h, img->w, &d);
	return apply_one(d.op, d.mag, img, ctx, interp, op->v[TA_FILL]);
}

static const struct rv_arg_def randaugment_args[] = {
	[RA_N] = { "n", RV_ARG_INT, { 2 }, 0, 16, NULL,
	    "ops applied per image, chosen with replacement" },
	[RA_M] = { "m", RV_ARG_INT, { 9 }, 0, 999, NULL,
	    "magnitude bin, 0 to bins-1 (9 of 31 bins is 30% of the "
	    "maximum)" },
	[RA_BINS] = { "bins", RV_ARG_INT, { 31 }, 2, 1000, NULL,
	    "number of magnitude bins" },
	[RA_INTERP] = { "interp", RV_ARG_ENUM, { RV_NEAREST }, 0, 0,
	    "nearest|bilinear", "interpolation of the geometric ops" },
	[RA_FILL] = { "fill", RV_ARG_FILL, { 0, 0, 0 }, 0, 255, NULL,
	    "value of the area the geometric ops uncover" },
	{ NULL, 0, { 0 }, 0, 0, NULL, NULL }
};

static const struct rv_arg_def trivialaugment_args[] = {
	[TA_BINS] = { "bins", RV_ARG_INT, { 31 }, 2, 1000, NULL,
	    "number of magnitude bins" },
	[TA_INTERP] = { "interp", RV_ARG_ENUM, { RV_NEAREST }, 0, 0,
	    "nearest|bilinear", "interpolation of the geometric ops" },
	[TA_FILL] = { "fill", RV_ARG_FILL, { 0, 0, 0 }, 0, 255, NULL,
	    "value of the area the geometric ops uncover" },
	{ NULL, 0, { 0 }, 0, 0, NULL, NULL }
};

static const struct rv_arg_def no_args[] = {
	{ NULL, 0, { 0 }, 0, 0, NULL, NULL }
};

static const struct rv_op_def identity_def = {
	"identity", "leave the image as it is (torchvision Identity)",
	"policy", identity_apply, no_args, 0
};

static const struct rv_op_def randaugment_def = {
	"randaugment", "n ops drawn from 14 at magnitude bin m "
	"(torchvision RandAugment)",
	"policy", randaugment_apply, randaugment_args, 0
};

static const struct rv_op_def trivialaugment_def = {
	"trivialaugment", "one op drawn from 14 at a random bin, wide ranges "
	"(torchvision TrivialAugmentWide)",
	"policy", trivialaugment_apply, trivialaugment_args, 0
};

const struct rv_op_def *const rv_policy_ops[] = {
	&identity_def,
	&randaugment_def,
	&trivialaugment_def,
	NULL
};

int
rv_policy_check(const struct rv_op *op)
{
	double m, bins;

	if (op->def != &randaugment_def)
		return 0;
	m = op->v[RA_M][0];
	bins = op->v[RA_BINS][0];
	if (m > bins - 1)
		return rv_seterr("m: '%.0f': out of range [0, %.0f] for "
		    "bins=%.0f", m, bins - 1, bins);
	return 0;
}
