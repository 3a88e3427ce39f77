/*
 * Private to the codec files (codec.c, codec_*.c, img.c):
 * the layout of struct rv_codec, grow-only scratch buffers and the helpers
 * every format file shares (codec_common.c: the pixel limit, library
 * messages, delivering the pixels; img.c: the conversions, shared with
 * rv_img_from_pixels() so that decoded images and raw pixels go through
 * exactly the same steps).  Format files call these, never codec.c, which
 * calls them only through their struct rv_format.
 */
#ifndef RV_CODEC_IMPL_H
#define RV_CODEC_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"

/* A buffer that only grows; its contents are not kept when it does. */
struct rv_scratch {
	void *p;
	size_t cap;
};
void *rv_scratch_get(struct rv_scratch *s, size_t n);
void rv_scratch_release(struct rv_scratch *s);

/*
 * libpng's input and error state for one decode.  It lives in the codec,
 * not on the stack, so that it is well defined after libpng's longjmp.
 */
struct rv_pngio {
	const unsigned char *p;
	size_t n, off;
	int truncated;			/* the error was running out of data */
	char msg[160];			/* libpng's error message */
};

/* One thread's decoder state: everything a decode needs, made once. */
struct rv_codec {
	void *tj;			/* tjhandle, made by the first JPEG */
	struct rv_scratch pix;		/* decoded pixels before the last step */
	struct rv_scratch rows;		/* one row (PNG, BMP, GIF) */
	struct rv_scratch rs;		/* resize weight tables, accumulators */
	struct rv_scratch jpg;		/* a JPEG without its header junk */
	void *jroi;			/* libjpeg decompressor for windows */
	struct rv_pngio png;
	int strict;			/* rv_codec_set_strict() */
};

/* rv_seterr("PREFIX: MSG") for a library's message, its first letter
 * lowercased when it begins a word ("Bogus marker" but "IDAT: ..."). */
int rv_codec_err(const char *prefix, const char *msg);

/* -1 with the "over the N-pixel limit" message if w * h > max_pixels
 * (0 means RV_MAX_PIXELS_DEFAULT). */
int rv_check_pixels(uint32_t h, uint32_t w, uint64_t max_pixels);

/*
 * The last step of every decode: src (h x w x cin, cin 1 or 3) to
 * dh x dw x cout in out, resizing by area average when the size differs
 * and converting channels (replicate grey; Pillow luma for RGB -> grey).
 * src must not overlap out's buffer.  rs is the resize scratch.
 */
void rv_img_finish(const unsigned char *src, uint32_t h, uint32_t w,
    uint32_t cin, uint32_t cout, uint32_t dh, uint32_t dw,
    struct rv_img *out, struct rv_scratch *rs);

/* rv_img_resize_area() with its tables in rs. */
void rv_resize_area(const unsigned char *src, uint32_t h, uint32_t w,
    uint32_t c, unsigned char *dst, uint32_t dh, uint32_t dw,
    struct rv_scratch *rs);

/* RGB -> luma for n pixels; dst may equal src (it runs forwards). */
void rv_rgb_to_grey(unsigned char *dst, const unsigned char *src, size_t n);

/*
 * Decoding straight into out, so that no image has a second full-size
 * copy: when no resize follows, out's buffer reserved for h x w pixels of
 * c bytes (c may exceed the output's channels: the decode is narrowed in
 * place afterwards); when one does, NULL, and the decode goes to scratch
 * and then rv_img_deliver().
 */
unsigned char *rv_img_direct(struct rv_img *out, uint32_t h, uint32_t w,
    uint32_t c, const struct rv_decode_opts *o);
/* RGB in out to grey in place when channels is 1 (Pillow's luma). */
void rv_img_narrow(struct rv_img *out, uint32_t channels);

/*
 * What the two JPEG files (codec_jpeg.c, codec_jroi.c) share.  Like every
 * function here: 0 (or a pointer) on success, -1 with rv_errmsg() set.
 */
extern const struct rv_format rv_format_jpeg;
/* libjpeg's message m as our error (lowercase, truncation named): -1. */
int rv_jpeg_msg_error(const char *m);
/* The bytes to decode: p itself, or (not strict, junk in the header) a
 * copy without the junk in c->jpg; *n updated. */
const unsigned char *rv_jpeg_drop_junk(struct rv_codec *c,
    const unsigned char *p, size_t *n);
/* The window decoder's libjpeg state (codec_jroi.c), freed with c. */
void rv_jroi_free(struct rv_codec *c);

/*
 * The end of a decode that produced src (h x w x cin, cin 1 or 3, in a
 * scratch buffer, not out's): straight into out when no resize or channel
 * change is wanted, else through rv_img_finish() to max_side and the
 * output channels.
 */
void rv_img_deliver(struct rv_codec *c, const unsigned char *src,
    uint32_t h, uint32_t w, uint32_t cin, const struct rv_decode_opts *o,
    struct rv_img *out);

#endif
