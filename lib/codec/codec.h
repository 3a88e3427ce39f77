/*
 * Image codecs: JPEG through the TurboJPEG API, PNG through libpng, WebP
 * through libwebp, GIF through giflib, TIFF through libtiff, BMP by a
 * small parser of our own, and the pixel conversions every decoded image
 * goes through (channel count, reduction to --max-side).  A struct rv_codec is one thread's decoder
 * state (TurboJPEG handle, scratch buffers): make one per worker, reuse it
 * for every image, never share it between threads.
 * Errors return -1 with rv_errmsg() set to a short reason ("truncated JPEG
 * data", "image is 70000x70000, over the 178956970-pixel limit", ...),
 * without any file name: callers add the context.
 */
#ifndef RV_CODEC_H
#define RV_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Pillow's decompression-bomb threshold (2 x 89478485 pixels). */
#define RV_MAX_PIXELS_DEFAULT	178956970ull

/*
 * The longest side of a PNG read or written: libpng's own default limit
 * (PNG_USER_WIDTH_MAX, PNG_USER_HEIGHT_MAX), which its writer keeps.
 * libpng's cost grows with the rows, not only the pixels, so a thin image
 * under the pixel limit would cost seconds; no other format rv reads has
 * a cost per row (JPEG, GIF and WebP cannot exceed 65535 rows).
 */
#define RV_PNG_MAX_SIDE		1000000u

/* An interleaved u8 image.  data is owned and reused: rv_img_reserve()
 * grows it only when needed, so a worker's image buffer is allocated once. */
struct rv_img {
	unsigned char *data;
	size_t cap;
	uint32_t h, w, c;
};
void rv_img_reserve(struct rv_img *im, uint32_t h, uint32_t w, uint32_t c);
void rv_img_release(struct rv_img *im);

struct rv_decode_opts {
	uint32_t channels;	/* 1 (grey) or 3 (RGB): the output */
	uint32_t max_side;	/* 0: full size; else longer side <= max_side */
	uint64_t max_pixels;	/* header area above this is refused;
				 * 0 means RV_MAX_PIXELS_DEFAULT */
};

struct rv_codec;

/*
 * One image format, all rv knows of it in one place: each codec_<name>.c
 * exports one const struct rv_format (rv_format_<name>), and codec.c's
 * list joins them.  A new format is one new file and one line in that
 * list; every other place (the sniff, rv_codec_info(), rv_codec_decode(),
 * the file extensions rv-decode takes from a folder, the "not a ... image"
 * message) reads the list.
 *
 * sniff: 1 when the first n bytes are this format's magic, else 0 (n may
 *   be short: then 0 unless enough is there).  The formats' magics are
 *   disjoint, so the order of the list does not change which one claims
 *   a file.
 * info: the header only, as rv_codec_info(); decode: as
 *   rv_codec_decode(), with o->channels already checked.  Both return 0,
 *   or -1 with rv_errmsg() set to a reason without a file name.
 * release: frees the state the format keeps in a struct rv_codec (made on
 *   its first use), or NULL when it keeps none.
 */
struct rv_format {
	const char *name;		/* "JPEG", "WebP": for messages */
	const char *const *ext;		/* lowercase extensions, NULL-ended */
	int dtype;			/* the stream dtype that carries it
					 * encoded (RV_DT_JPEG, RV_DT_PNG),
					 * else RV_DT_NONE */
	int (*sniff)(const unsigned char *p, size_t n);
	int (*info)(struct rv_codec *c, const unsigned char *p, size_t n,
	    uint32_t *h, uint32_t *w, uint32_t *ch);
	int (*decode)(struct rv_codec *c, const unsigned char *p, size_t n,
	    const struct rv_decode_opts *o, struct rv_img *out);
	void (*release)(struct rv_codec *c);
};

/* The format whose magic the first n bytes hold, or NULL. */
const struct rv_format *rv_codec_format(const unsigned char *p, size_t n);
/* The format a file extension ("JPG", "tiff"; without the dot, any case)
 * names, or NULL. */
const struct rv_format *rv_format_by_ext(const char *ext);

/* The stream dtype of the first bytes (the format's dtype: RV_DT_JPEG or
 * RV_DT_PNG), or RV_DT_NONE, for the other formats too. */
int rv_sniff(const unsigned char *p, size_t n);

struct rv_codec *rv_codec_new(void);
void rv_codec_free(struct rv_codec *c);

/*
 * Strictness of every later decode with c (0 when made).  0: harmless
 * damage that Pillow reads through is decoded; for now that is JPEG bytes
 * that are no marker between header segments (libjpeg's "N extraneous
 * bytes before marker"), see codec_jpeg.c.  1 (rv-decode --strict): that
 * is an error too.  Truncation and damaged pixel data are errors always.
 */
void rv_codec_set_strict(struct rv_codec *c, int strict);

/* Read only the header: the stream dtype (RV_DT_JPEG, RV_DT_PNG, or
 * RV_DT_NONE for a WebP, GIF, BMP or TIFF, which the stream cannot carry
 * encoded: rv_codec_format() tells them apart), size, and the channels a
 * decode keeps (1 for grey or grey+alpha, 3 otherwise, CMYK included).
 * For a GIF the size is the canvas the first frame is drawn on. */
int rv_codec_info(struct rv_codec *c, const unsigned char *p, size_t n,
    int *dtype, uint32_t *h, uint32_t *w, uint32_t *ch);

/*
 * Decode an image of any format above into out (reusing its buffer).  The
 * header is checked against max_pixels before any pixel buffer is touched
 * (and a PNG against RV_PNG_MAX_SIDE, in rv_codec_info() too).  JPEG:
 * grey, RGB, YCbCr, CMYK/YCCK (converted), baseline and progressive; when
 * max_side asks for a smaller image, TurboJPEG's DCT scaling picks the
 * smallest of 1/2, 1/4 and 1/8 still >= max_side (the other M/8 scales have
 * no fast path in libjpeg-turbo and measure slower than a full decode), and
 * an area-average resize does the rest.  PNG: palette, grey, grey+alpha, RGB, RGBA, 16-bit, interlaced;
 * alpha is dropped (composited on black is NOT done: alpha is ignored, as
 * torchvision's read_image(mode=RGB) does).  WebP: lossy, lossless,
 * alpha dropped; an animation gives its first frame.  GIF: the first
 * frame, on a canvas of the logical screen (grown to hold the frame)
 * filled with the background colour; transparency ignored.  BMP: 1, 4, 8
 * bits with a palette, RLE4, RLE8, 16, 24, 32 bits (bit fields too),
 * bottom-up or top-down.  TIFF: the first image, anything libtiff's RGBA
 * interface reads (strips, tiles, 8 or 16 bits, palette, grey, YCbCr,
 * CMYK, JPEG/LZW/Deflate/PackBits compressed), alpha dropped.
 *
 * Memory: without max_side, the image is decoded into out itself, never
 * into a second full-size copy: out's h x w x channels bytes, times 1 for
 * PNG, GIF and BMP, 3 for a grey output from a colour JPEG or a WebP
 * (decoded as RGB, narrowed in place), 4/3 (RGB) or 4 (grey) for TIFF
 * (libtiff's RGBA raster), 4/3 or 4 for CMYK JPEG.  With max_side, one
 * full-size decode of at most 4 bytes a pixel, then the small output.
 * max_pixels bounds both.
 */
int rv_codec_decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out);

/*
 * Decode only the part of a JPEG that holds a window, at DCT scale
 * 1/denom (1, 2, 4 or 8): the decode half of a fused crop (rv-augment(1),
 * "Fused crop decoding").  win = { top, left, height, width } in the full
 * image's pixels, inside it.  out gets a region of the scaled image that
 * covers the scaled window (rounded outwards) and a margin of a few pixels
 * where the image has them; org = { top, left } of that region in the
 * scaled image; full = { height, width } of the whole image at full
 * scale.  With denom 1 its pixels are the full decode's, byte for
 * byte; with denom > 1, those of TurboJPEG's decode at that scale.
 * Returns 1 when done; 0 when the file is not one this path takes (not a
 * JPEG, CMYK or YCCK, or no EOI marker as its last bytes, so that a cut
 * file is left to the full decode to report); -1 on error.  Unlike the
 * full decode it never reads the entropy data after the window's last
 * row, so damage there goes unseen.
 */
int rv_codec_decode_window(struct rv_codec *c, const unsigned char *p,
    size_t n, const struct rv_decode_opts *o, unsigned denom,
    const uint32_t win[4], struct rv_img *out, uint32_t org[2],
    uint32_t full[2]);

/*
 * Convert raw pixels (h x w x cin, from IDX/CIFAR) into out with the
 * options' channel count and max_side.  1 -> 3 replicates; 3 -> 1 uses
 * ITU-R 601 luma (299 R + 587 G + 114 B) / 1000 in Pillow's own fixed-point
 * form, so it equals Pillow's convert("L") exactly.  Same rules apply after
 * decoding.
 */
int rv_img_from_pixels(const unsigned char *px, uint32_t h, uint32_t w,
    uint32_t cin, const struct rv_decode_opts *o, struct rv_img *out);

/* Area-average resize of src (h x w x c) to dh x dw x c into dst. */
void rv_img_resize_area(const unsigned char *src, uint32_t h, uint32_t w,
    uint32_t c, unsigned char *dst, uint32_t dh, uint32_t dw);

/* The size max_side gives for an h x w image (longer side <= max_side,
 * aspect kept, shorter side rounded, at least 1). */
void rv_fit_max_side(uint32_t h, uint32_t w, uint32_t max_side,
    uint32_t *oh, uint32_t *ow);

/* Encode pixels (c = 1, 2, 3 or 4) as an 8-bit PNG, appended to out. */
int rv_png_encode(const unsigned char *px, uint32_t h, uint32_t w,
    uint32_t c, struct rv_buf *out);
/* rv_png_encode to a file, atomically (temp + rename). */
int rv_png_write(const char *path, const unsigned char *px, uint32_t h,
    uint32_t w, uint32_t c);

#endif
