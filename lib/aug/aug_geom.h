/*
 * Private to the geometry modules (aug_geom.c, aug_warp.c, aug_resize.c)
 * and their unit test: the kernels the ops build on beyond aug_impl.h's
 * shared ones (the fill colour, windowed resize, crop with a border mode,
 * PIL's nearest scaling) and the RandomResizedCrop sampler, exposed so
 * that it can be tested alone.
 */
#ifndef RV_AUG_GEOM_H
#define RV_AUG_GEOM_H

#include <stddef.h>
#include <stdint.h>

#include "aug/aug_impl.h"

/* Modes for the area outside the image (torchvision F.pad padding_mode). */
enum rv_border {
	RV_BORDER_CONSTANT = 0,	/* fill */
	RV_BORDER_EDGE = 1,	/* repeat the edge pixel */
	RV_BORDER_REFLECT = 2,	/* mirror without repeating the edge */
	RV_BORDER_SYMMETRIC = 3	/* mirror repeating the edge */
};

/* torchvision's _parse_fill as c bytes (aug_warp.c): int() of each value,
 * clamped to 0..255; a fourth channel, if any, repeats the third; fill
 * NULL is black. */
void rv_fill_bytes(const double fill[3], uint32_t c, unsigned char fb[4]);
/* npix pixels of c bytes at d, each fb. */
void rv_put_fill(unsigned char *d, size_t npix, uint32_t c,
    const unsigned char *fb);

/*
 * Crop (top, left, h, w) of img; pixels outside the image follow mode
 * (numpy.pad semantics, any distance from the image).  fill is used by
 * RV_BORDER_CONSTANT only.
 */
int rv_crop_border(struct rv_img *img, struct rv_aug_ctx *ctx, int top,
    int left, uint32_t h, uint32_t w, enum rv_border mode,
    const double fill[3]);

/*
 * Resize the window (top, left, wh, ww) of img, which must lie inside it,
 * to h x w, as PIL resizes img.crop(window): Image.resize's resample
 * filters (nearest through its affine scaling, bilinear and bicubic
 * through ImagingResample, in its fixed point, so bit-exact).  antialias 0
 * (bilinear, bicubic) is torchvision's tensor path instead: torch's
 * interpolate without antialiasing, in float32 (within 1 of it).
 */
int rv_resize_window(struct rv_img *img, struct rv_aug_ctx *ctx,
    uint32_t top, uint32_t left, uint32_t wh, uint32_t ww, uint32_t h,
    uint32_t w, enum rv_interp interp, int antialias);

/*
 * The antialiased resize of the box { y0, x0, y1, x1 } (real numbers,
 * window coordinates) of the window (top, left, wh, ww) of img to h x w,
 * as PIL's Image.resize(box=...) of img.crop(window): taps outside the
 * window are dropped, the box need not fall on pixel edges.  Bilinear or
 * bicubic.  The fused crop decode uses it to resample a crop decoded at a
 * reduced DCT scale, whose edges fall between the scaled pixels.
 */
int rv_resize_box(struct rv_img *img, struct rv_aug_ctx *ctx, uint32_t top,
    uint32_t left, uint32_t wh, uint32_t ww, const double box[4],
    uint32_t h, uint32_t w, enum rv_interp interp);

/*
 * PIL's ImagingScaleAffine (nearest, a[1] == a[3] == 0): dst (dh x dw x c,
 * rows dstride bytes apart) from src (sh x sw x c, sstride) with the
 * inverse matrix a; pixels mapped outside src get fill (c bytes).
 * xtab is scratch for dw ints.
 */
void rv_scale_nearest(const unsigned char *src, size_t sstride, uint32_t sh,
    uint32_t sw, uint32_t c, unsigned char *dst, size_t dstride, uint32_t dh,
    uint32_t dw, const double a[6], const unsigned char *fill, int *xtab);

/*
 * torchvision RandomResizedCrop.get_params on an h x w image: box =
 * { top, left, height, width }.  Draws, per attempt: area fraction
 * U[scale) then log-ratio U[log ratio) (U[a, b) = a + (b - a) * u with
 * u = rv_rng_uniform), and when the box fits, top then left, each
 * randint[0, n] = rv_rng_below(n + 1).  After 10 misses, the centre crop
 * with the ratio clamped to [ratio[0], ratio[1]].
 */
void rv_rrc_params(struct rv_rng *rng, uint32_t h, uint32_t w,
    const double scale[2], const double ratio[2], uint32_t box[4]);

#endif
