/*
 * Fused crop decoding (rv-augment(1)): a spec that starts with a crop
 * (rrc, resized_crop) on a JPEG sample decodes only the crop's window,
 * at the DCT scale the output size allows, as DALI's and FFCV's decoders
 * do.  The window is drawn before the decode from the op's own generator,
 * on the record's size, so it is the window the unfused path draws on the
 * decoded image: at full scale the output is the same bytes.
 */
#include "aug/aug.h"

#include <string.h>

#include "aug/aug_geom.h"
#include "aug/aug_impl.h"
#include "base/err.h"

/* The unfused path: the whole image (at the decode hint's size), then
 * every op from first on. */
static int
unfused(const struct rv_spec *s, size_t first, struct rv_codec *codec,
    const struct rv_rec *r, const void *p, size_t n, struct rv_img *img,
    struct rv_aug_ctx *ctx, uint64_t seed, uint32_t stage, uint32_t epoch,
    uint64_t id)
{
	if (rv_spec_decode_sample(s, codec, r, p, n, img) < 0 ||
	    rv_spec_apply_from(s, first, img, ctx, seed, stage, epoch, id) < 0)
		return -1;
	return 0;
}

/*
 * The largest DCT denominator (8, 4, 2) at which the window is still at
 * least size x size, or 1.  Nearest sampling keeps full scale: it would
 * pick different pixels, not resample the same picture.
 */
static unsigned
pick_denom(const struct rv_spec *s, const uint32_t box[4], uint32_t size,
    enum rv_interp interp)
{
	unsigned d;

	if (s->exact || interp == RV_NEAREST)
		return 1;
	for (d = 8; d > 1; d /= 2)
		if ((double)box[2] / d >= size && (double)box[3] / d >= size)
			return d;
	return 1;
}

/*
 * Resize the window box (full-scale pixels) of the region img, decoded at
 * 1/d with its top-left at org in the scaled image, to size x size.  At
 * 1/1 the window falls on pixels; below, its edges fall between them and
 * the resize takes the fractional box inside the window's cover.
 */
static int
resize_region(struct rv_img *img, struct rv_aug_ctx *ctx, unsigned d,
    const uint32_t org[2], const uint32_t box[4], uint32_t size,
    enum rv_interp interp)
{
	uint32_t y0, y1, x0, x1;
	double fb[4];

	if (d == 1)
		return rv_resize_window(img, ctx, box[0] - org[0],
		    box[1] - org[1], box[2], box[3], size, size, interp, 1);
	y0 = box[0] / d;
	x0 = box[1] / d;
	y1 = (uint32_t)(((uint64_t)box[0] + box[2] + d - 1) / d);
	x1 = (uint32_t)(((uint64_t)box[1] + box[3] + d - 1) / d);
	fb[0] = (double)box[0] / d - y0;
	fb[1] = (double)box[1] / d - x0;
	fb[2] = (double)(box[0] + box[2]) / d - y0;
	fb[3] = (double)(box[1] + box[3]) / d - x0;
	return rv_resize_box(img, ctx, y0 - org[0], x0 - org[1], y1 - y0,
	    x1 - x0, fb, size, size, interp);
}

int
rv_spec_decode_apply(const struct rv_spec *s, struct rv_codec *codec,
    const struct rv_rec *r, const void *p, size_t n, struct rv_img *img,
    struct rv_aug_ctx *ctx, uint64_t seed, uint32_t stage, uint32_t epoch,
    uint64_t id)
{
	const struct rv_op *op;
	struct rv_decode_opts o = { r->channels, 0, 0 };
	struct rv_rng rng;
	enum rv_interp interp;
	uint32_t box[4], org[2], full[2], size;
	unsigned d;
	int rc, rrc;

	if (r->dtype != RV_DT_JPEG || s->n == 0 || r->height == 0 ||
	    r->width == 0)
		return unfused(s, 0, codec, r, p, n, img, ctx, seed, stage,
		    epoch, id);
	op = &s->ops[0];
	rrc = strcmp(op->def->name, "rrc") == 0;
	if (!rrc && strcmp(op->def->name, "resized_crop") != 0)
		return unfused(s, 0, codec, r, p, n, img, ctx, seed, stage,
		    epoch, id);
	/* The op's generator as rv_spec_apply() makes it, p= test first. */
	rv_rng_init(&rng, seed, stage, op->index, epoch, id);
	if (!(rv_rng_uniform(&rng) < op->p))
		return unfused(s, 1, codec, r, p, n, img, ctx, seed, stage,
		    epoch, id);
	if (rrc) {
		size = (uint32_t)op->v[0][0];
		interp = (enum rv_interp)op->v[3][0];
		if (size < 1 || op->v[2][0] <= 0 || op->v[2][1] <= 0)
			return unfused(s, 0, codec, r, p, n, img, ctx, seed,
			    stage, epoch, id);	/* its error */
		rv_rrc_params(&rng, r->height, r->width, op->v[1], op->v[2],
		    box);
	} else {
		int64_t t = (int64_t)op->v[0][0], l = (int64_t)op->v[1][0];
		int64_t bh = (int64_t)op->v[2][0], bw = (int64_t)op->v[3][0];

		size = (uint32_t)op->v[4][0];
		interp = (enum rv_interp)op->v[5][0];
		/* A window reaching outside is padded: the op's job. */
		if (size < 1 || bh < 1 || bw < 1 || t < 0 || l < 0 ||
		    t + bh > r->height || l + bw > r->width)
			return unfused(s, 0, codec, r, p, n, img, ctx, seed,
			    stage, epoch, id);
		box[0] = (uint32_t)t;
		box[1] = (uint32_t)l;
		box[2] = (uint32_t)bh;
		box[3] = (uint32_t)bw;
	}
	d = pick_denom(s, box, size, interp);
	rc = rv_codec_decode_window(codec, p, n, &o, d, box, img, org, full);
	if (rc == 0)
		return unfused(s, 0, codec, r, p, n, img, ctx, seed, stage,
		    epoch, id);
	if (rc < 0)
		return -1;
	if (full[0] != r->height || full[1] != r->width ||
	    img->c != r->channels)
		return rv_seterr("the jpeg is %ux%ux%u, the record says "
		    "%ux%ux%u", full[1], full[0], img->c, r->width,
		    r->height, r->channels);
	if (resize_region(img, ctx, d, org, box, size, interp) < 0)
		return rv_preferr("op 1 '%s'", op->def->name);
	if (rv_spec_apply_from(s, 1, img, ctx, seed, stage, epoch, id) < 0)
		return -1;
	return (int)d;
}
