/*
 * Augmentation: ops as data (libvips style).  Each op is a registry entry
 * (struct rv_op_def): a name, typed arguments with defaults and ranges,
 * help text and a function.  The spec parser (aug_spec.c), `rv-augment
 * --list-ops` and the man-page check all read the registry, and one spec
 * grammar serves rv-augment and rv-refurbish (see rv-ops(7)):
 *
 *	spec := op { ';' op }        op := name { key '=' value }
 *	e.g.  "rrc size=224; flip; randaugment n=2 m=9"
 *
 * Randomness: an op draws only from the struct rv_rng it is handed, keyed by
 * (seed, stage, op index, epoch, sample id), so output bytes depend on none
 * of thread count, batch of work or process split.  The op index is the
 * op's position in the whole chain of specs applied so far (rv-augment
 * carries the count downstream in the stream metadata key augment.ops).
 *
 * Ops work on struct rv_img (codec.h): u8, interleaved HWC, C = 1 or 3.
 * An op may change the size; it writes its result into ctx->tmp and swaps
 * (rv_aug_swap), so buffers are reused and the hot loop never allocates.
 * Errors return -1 with rv_errmsg() set.
 */
#ifndef RV_AUG_H
#define RV_AUG_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "codec/codec.h"
#include "stream/record.h"

#define RV_AUG_MAXARGS	12

/*
 * The largest image an op makes: rv-decode's default --max-pixels
 * (Pillow's bomb threshold), so what an op writes is what rv-decode would
 * have let in.  An op whose output would hold more pixels than this and
 * more than its input (resize of a thin image: a 1 x 16384 one to a
 * shorter side of 256 is 256 x 4194304, torchvision's answer too), or
 * whose working memory (an intermediate image, resampling tables) would
 * take more than 4 bytes a pixel of the larger of the two (RV_MAX_SAMPLE's
 * default, 715827880 bytes, for a small input), fails with rv_errmsg()
 * set before it allocates anything.  A shrink is never refused for its
 * output.
 */
#define RV_AUG_MAX_PIXELS	RV_MAX_PIXELS_DEFAULT

enum rv_arg_type {
	RV_ARG_INT,	/* integer in [min, max] */
	RV_ARG_FLOAT,	/* real in [min, max] */
	RV_ARG_BOOL,	/* 0 or 1 (also yes/no, true/false) */
	RV_ARG_ENUM,	/* one of the '|'-separated words in choices;
			 * stored as its index */
	RV_ARG_PAIR,	/* "a,b" two reals in [min, max], a <= b */
	RV_ARG_FILL,	/* "v" or "r,g,b", each in [0, 255] */
};

struct rv_arg_def {
	const char *name;
	enum rv_arg_type type;
	double def[3];		/* default value(s): PAIR uses 2, FILL 3 */
	double min, max;
	const char *choices;	/* ENUM only: "nearest|bilinear" */
	const char *help;
};

struct rv_op;
struct rv_aug_ctx;

typedef int (*rv_op_fn)(const struct rv_op *op, struct rv_img *img,
    struct rv_aug_ctx *ctx, struct rv_rng *rng);

struct rv_op_def {
	const char *name;
	const char *help;	/* one line for --list-ops and rv-ops(7) */
	const char *family;	/* "geometry", "colour", "policy" */
	rv_op_fn apply;
	const struct rv_arg_def *args;	/* terminated by a NULL name */
	double p_default;	/* default of the generic p= argument that
				 * every op takes; 0 means 1 */
};

/* A parsed op: its definition and the value of every argument. */
struct rv_op {
	const struct rv_op_def *def;
	double v[RV_AUG_MAXARGS][3];	/* v[k][0] (and [1], [2]) for arg k */
	double p;			/* probability the op applies */
	uint32_t index;			/* op number for the RNG key */
};

/* A parsed spec, owned by its holder. */
struct rv_spec {
	struct rv_op *ops;
	size_t n;
	char *text;		/* the canonical form (all args spelled out) */
	int exact;		/* decode JPEGs at full scale only (set by the
				 * program: --exact), see rv_spec_decode_apply */
};

/* Per-thread working memory, made once per worker and reused. */
struct rv_aug_ctx {
	struct rv_img tmp;	/* ops write here, then rv_aug_swap() */
	void *scratch;		/* resize tables, histograms, ... */
	size_t scratch_cap;
};

/* The registry: every op, in a stable order; NULL-terminated. */
const struct rv_op_def *const *rv_ops(void);
const struct rv_op_def *rv_op_find(const char *name);

/*
 * Parse text into *out.  Every op's index is first_index + its position.
 * Errors name the op and argument: "op 2 'rotate': unknown argument
 * 'angel'", "op 1 'rrc': size: '0': out of range [1, 65536]".
 */
int rv_spec_parse(const char *text, uint32_t first_index, struct rv_spec *out);
void rv_spec_release(struct rv_spec *s);

/*
 * Apply every op of s to img for sample (epoch, id): op k draws from
 * rv_rng_init(seed, stage, op->index, epoch, id).  The p= test uses the
 * same generator, first.
 */
int rv_spec_apply(const struct rv_spec *s, struct rv_img *img,
    struct rv_aug_ctx *ctx, uint64_t seed, uint32_t stage, uint32_t epoch,
    uint64_t id);

/*
 * If the spec's first op only shrinks the image (rrc, resize, centre crop
 * after resize...), the smallest longer side a decoder may deliver for an
 * h x w source without changing the result's quality; 0 if no hint.  Used to
 * decode JPEGs at a reduced DCT scale (DALI's trick).
 */
uint32_t rv_spec_decode_hint(const struct rv_spec *s, uint32_t h, uint32_t w);

/*
 * Decode the encoded (JPEG or PNG) payload p, n bytes, of sample record r
 * into img with the record's channel count, a JPEG at the reduced size
 * s's decode hint allows; the result must have the size the record and
 * the hint imply (no hint when s->exact).
 * 0, or -1 with rv_errmsg() set.
 */
int rv_spec_decode_sample(const struct rv_spec *s, struct rv_codec *codec,
    const struct rv_rec *r, const void *p, size_t n, struct rv_img *img);

/*
 * rv_spec_decode_sample() then rv_spec_apply(), with a leading crop fused
 * into the JPEG decode (rv-augment(1), "Fused crop decoding"): when the
 * first op is rrc or resized_crop and applies, its window is drawn first,
 * from the same numbers and on the record's size, and only that window is
 * decoded, then resized; the other ops follow.  Unless s->exact, the
 * window is decoded at the smallest DCT scale (1/2, 1/4, 1/8) that still
 * leaves it at least the output size, and resampled from there; with
 * s->exact, or when no scale fits, at full scale, and the bytes are those
 * of the unfused path.  Returns the DCT denominator of a fused decode (1,
 * 2, 4, 8), 0 when the sample took the unfused path, -1 on error.
 */
int rv_spec_decode_apply(const struct rv_spec *s, struct rv_codec *codec,
    const struct rv_rec *r, const void *p, size_t n, struct rv_img *img,
    struct rv_aug_ctx *ctx, uint64_t seed, uint32_t stage, uint32_t epoch,
    uint64_t id);

void rv_aug_ctx_init(struct rv_aug_ctx *ctx);
void rv_aug_ctx_release(struct rv_aug_ctx *ctx);
/* Make ctx->tmp h x w x c (reusing its buffer). */
void rv_aug_tmp(struct rv_aug_ctx *ctx, uint32_t h, uint32_t w, uint32_t c);
/* Swap img and ctx->tmp (after an op wrote its result into tmp). */
void rv_aug_swap(struct rv_img *img, struct rv_aug_ctx *ctx);
/* ctx->scratch of at least n bytes (reused). */
void *rv_aug_scratch(struct rv_aug_ctx *ctx, size_t n);

#endif
