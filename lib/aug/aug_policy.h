/*
 * Private to aug_spec.c, aug_randaug.c and the unit test: the policies'
 * op space and draws (exposed so a test can check their distributions
 * without decoding pixels), and the cross-argument check the registry's
 * per-argument ranges cannot express (RandAugment's m names a bin).
 */
#ifndef RV_AUG_POLICY_H
#define RV_AUG_POLICY_H

#include <stdint.h>

#include "aug/aug.h"

/* The op space of RandAugment and TrivialAugmentWide, torchvision's
 * order. */
enum ra_op {
	RA_IDENTITY,
	RA_SHEAR_X,
	RA_SHEAR_Y,
	RA_TRANSLATE_X,
	RA_TRANSLATE_Y,
	RA_ROTATE,
	RA_BRIGHTNESS,
	RA_COLOR,
	RA_CONTRAST,
	RA_SHARPNESS,
	RA_POSTERIZE,
	RA_SOLARIZE,
	RA_AUTOCONTRAST,
	RA_EQUALIZE,
	RA_NOPS
};

/* One draw: the op, its bin and its signed magnitude as torchvision
 * passes it to _apply_op (float32 table values, as doubles). */
struct rv_policy_draw {
	enum ra_op op;
	uint32_t bin;
	double mag;
};

/* torchvision's name of op o ("ShearX"). */
const char *rv_policy_op_name(enum ra_op o);
/* 1 if o's magnitude is negated with probability 1/2. */
int rv_policy_signed(enum ra_op o);
/* The unsigned magnitude of o at bin i of bins for an h x w image:
 * RandAugment's table, or TrivialAugmentWide's when wide. */
double rv_policy_magnitude(enum ra_op o, uint32_t bins, uint32_t i,
    uint32_t h, uint32_t w, int wide);
/* One op of RandAugment at bin m: draws the op, then the sign if signed. */
void rv_randaugment_draw(struct rv_rng *rng, uint32_t bins, uint32_t m,
    uint32_t h, uint32_t w, struct rv_policy_draw *d);
/* TrivialAugmentWide: the op, a bin if it has a table, then the sign. */
void rv_trivialaugment_draw(struct rv_rng *rng, uint32_t bins, uint32_t h,
    uint32_t w, struct rv_policy_draw *d);

/* 0 if op's arguments agree with each other, else -1 with rv_errmsg()
 * set to "m: '31': out of range [0, 30] for bins=31"; 0 for every op
 * that is not a policy. */
int rv_policy_check(const struct rv_op *op);

#endif
