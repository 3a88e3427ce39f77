/*
 * Private to the augmentation modules: the pixel kernels that ops and
 * policies (RandAugment, TrivialAugment) share.  Deterministic: the random
 * parts live in the ops, never here.  All kernels take u8 HWC images with
 * c = 1 or 3, reuse ctx buffers, and return 0 or -1 with rv_errmsg() set.
 * Reference semantics: torchvision on PIL images (../shared/AUGMENT-SPEC.md).
 */
#ifndef RV_AUG_IMPL_H
#define RV_AUG_IMPL_H

#include "aug/aug.h"

enum rv_interp { RV_NEAREST = 0, RV_BILINEAR = 1, RV_BICUBIC = 2 };

/* The op families' entries, NULL-terminated (aug_ops.c joins them). */
extern const struct rv_op_def *const rv_geom_ops[];
extern const struct rv_op_def *const rv_colour_ops[];
extern const struct rv_op_def *const rv_policy_ops[];

/*
 * The bound of aug.h's RV_AUG_MAX_PIXELS, asked by every kernel that
 * makes a new size, before it allocates: 0 when an h x w image from img
 * stays within max(RV_AUG_MAX_PIXELS, img's pixels), else -1 with "makes
 * a WxH image, over the N-pixel limit".
 */
int rv_aug_check_size(const struct rv_img *img, uint64_t h, uint64_t w);
/* 0 when n bytes of working memory (a double, so that no sum of sizes
 * wraps) stay within 4 bytes a pixel of that bound (RV_MAX_SAMPLE's
 * default for a small input), else -1 with "needs N bytes to work in,
 * over the M-byte limit". */
int rv_aug_check_work(const struct rv_img *img, double n);

/* rv_spec_apply() from op first on (the ops before it are not run). */
int rv_spec_apply_from(const struct rv_spec *s, size_t first,
    struct rv_img *img, struct rv_aug_ctx *ctx, uint64_t seed,
    uint32_t stage, uint32_t epoch, uint64_t id);

/* ---- geometry (aug_geom.c; the warp itself: aug_warp.c) ---- */

/*
 * Affine warp, output the same size as the input: output pixel (x, y) takes
 * the input at inv * (x + 0.5, y + 0.5, 1) - 0.5 as PIL's Image.transform
 * (AFFINE) does; inv is the 2x3 inverse matrix.  Uncovered area gets fill.
 */
int rv_warp_affine(struct rv_img *img, struct rv_aug_ctx *ctx,
    const double inv[6], enum rv_interp interp, const double fill[3]);
/* torchvision F.affine(shear=...) with center [0, 0] (RandAugment). */
int rv_shear_x(struct rv_img *img, struct rv_aug_ctx *ctx, double v,
    enum rv_interp interp, const double fill[3]);
int rv_shear_y(struct rv_img *img, struct rv_aug_ctx *ctx, double v,
    enum rv_interp interp, const double fill[3]);
/* Translate by whole pixels (torchvision truncates v toward 0). */
int rv_translate(struct rv_img *img, struct rv_aug_ctx *ctx, int dx, int dy,
    enum rv_interp interp, const double fill[3]);
/* F.rotate(img, deg): about the centre, counter-clockwise, no expand. */
int rv_rotate(struct rv_img *img, struct rv_aug_ctx *ctx, double deg,
    enum rv_interp interp, const double fill[3]);
/* Resize to h x w; antialiased when shrinking (PIL's resample filters). */
int rv_resize(struct rv_img *img, struct rv_aug_ctx *ctx, uint32_t h,
    uint32_t w, enum rv_interp interp);
/* Crop (top, left, h, w); parts outside the image get fill
 * (torchvision F.crop pads with 0 outside). */
int rv_crop(struct rv_img *img, struct rv_aug_ctx *ctx, int top, int left,
    uint32_t h, uint32_t w, const double fill[3]);
int rv_hflip(struct rv_img *img);
int rv_vflip(struct rv_img *img);

/* ---- colour (aug_color.c) ---- */

/* PIL ImageEnhance semantics: blend(degenerate, img, f), clipped. */
int rv_brightness(struct rv_img *img, double f);
int rv_saturation(struct rv_img *img, double f);	/* "Color" */
int rv_contrast(struct rv_img *img, double f);
int rv_sharpness(struct rv_img *img, struct rv_aug_ctx *ctx, double f);
int rv_posterize(struct rv_img *img, int bits);
int rv_solarize(struct rv_img *img, double threshold);
int rv_autocontrast(struct rv_img *img);
int rv_equalize(struct rv_img *img);
/* torchvision F.adjust_hue, f in [-0.5, 0.5]. */
int rv_hue(struct rv_img *img, double f);
int rv_invert(struct rv_img *img);
/* To grey (Pillow "L" weights), keeping c channels (replicated). */
int rv_grayscale(struct rv_img *img);

#endif
