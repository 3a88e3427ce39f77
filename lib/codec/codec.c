/*
 * The codec front: recognise each format by its first bytes, hold one
 * thread's decoder state, and send each image to its format's decoder
 * (codec_jpeg.c, codec_png.c, codec_webp.c, codec_gif.c, codec_bmp.c,
 * codec_tiff.c).  The pixel-count limit lives here so that every format
 * refuses a decompression bomb with the same words.
 */
#include "codec/codec.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "base/err.h"
#include "base/xmem.h"
#include "codec/codec_impl.h"
#include "stream/record.h"
#include "stream/stream.h"

_Static_assert(RV_MAX_SAMPLE == RV_MAX_PIXELS_DEFAULT * 4,
    "RV_MAX_SAMPLE is rv-decode's default pixel limit of 4 channels");

static const unsigned char png_sig[8] = {
	0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'
};

int
rv_sniff(const unsigned char *p, size_t n)
{
	if (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff)
		return RV_DT_JPEG;
	if (n >= sizeof(png_sig) && memcmp(p, png_sig, sizeof(png_sig)) == 0)
		return RV_DT_PNG;
	return RV_DT_NONE;
}

static uint32_t
le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

int
rv_codec_format(const unsigned char *p, size_t n)
{
	switch (rv_sniff(p, n)) {
	case RV_DT_JPEG:
		return RV_FMT_JPEG;
	case RV_DT_PNG:
		return RV_FMT_PNG;
	}
	if (n >= 12 && memcmp(p, "RIFF", 4) == 0 &&
	    memcmp(p + 8, "WEBP", 4) == 0)
		return RV_FMT_WEBP;
	if (n >= 6 && (memcmp(p, "GIF87a", 6) == 0 ||
	    memcmp(p, "GIF89a", 6) == 0))
		return RV_FMT_GIF;
	/* "BM" alone is two letters of text: the DIB header's size must be
	 * one of the known ones too, when it is there. */
	if (n >= 2 && p[0] == 'B' && p[1] == 'M') {
		uint32_t k = n >= 18 ? le32(p + 14) : 40;

		if (k == 12 || k == 16 || k == 40 || k == 52 || k == 56 ||
		    k == 64 || k == 108 || k == 124)
			return RV_FMT_BMP;
	}
	/* Classic TIFF (42) and BigTIFF (43), either byte order. */
	if (n >= 4 && ((p[0] == 'I' && p[1] == 'I' && (p[2] == 42 ||
	    p[2] == 43) && p[3] == 0) || (p[0] == 'M' && p[1] == 'M' &&
	    p[2] == 0 && (p[3] == 42 || p[3] == 43))))
		return RV_FMT_TIFF;
	return RV_FMT_NONE;
}

const char *
rv_format_name(int fmt)
{
	switch (fmt) {
	case RV_FMT_JPEG: return "JPEG";
	case RV_FMT_PNG: return "PNG";
	case RV_FMT_WEBP: return "WebP";
	case RV_FMT_GIF: return "GIF";
	case RV_FMT_BMP: return "BMP";
	case RV_FMT_TIFF: return "TIFF";
	default: return "unknown";
	}
}

struct rv_codec *
rv_codec_new(void)
{
	/* The TurboJPEG handle waits for the first JPEG: PNG-only and
	 * raw-pixel workers never pay for it. */
	return xcalloc(1, sizeof(struct rv_codec));
}

void
rv_codec_set_strict(struct rv_codec *c, int strict)
{
	c->strict = strict != 0;
}

void
rv_codec_free(struct rv_codec *c)
{
	if (c == NULL)
		return;
	if (c->tj != NULL)
		tjDestroy(c->tj);
	rv_jroi_free(c);
	rv_scratch_release(&c->pix);
	rv_scratch_release(&c->rows);
	rv_scratch_release(&c->rs);
	rv_scratch_release(&c->jpg);
	free(c);
}

int
rv_check_pixels(uint32_t h, uint32_t w, uint64_t max_pixels)
{
	if (max_pixels == 0)
		max_pixels = RV_MAX_PIXELS_DEFAULT;
	if ((uint64_t)h * w > max_pixels)
		return rv_seterr("image is %ux%u, over the %llu-pixel limit",
		    w, h, (unsigned long long)max_pixels);
	return 0;
}

int
rv_codec_err(const char *prefix, const char *msg)
{
	if (msg == NULL || msg[0] == '\0')
		return rv_seterr("%s", prefix);
	if (isupper((unsigned char)msg[0]) &&
	    islower((unsigned char)msg[1]))
		return rv_seterr("%s: %c%s", prefix,
		    tolower((unsigned char)msg[0]), msg + 1);
	return rv_seterr("%s: %s", prefix, msg);
}

static int
not_image(size_t n)
{
	if (n == 0)
		return rv_seterr("empty image data");
	return rv_seterr("not a JPEG, PNG, WebP, GIF, BMP or TIFF image");
}

void
rv_img_deliver(struct rv_codec *c, const unsigned char *src, uint32_t h,
    uint32_t w, uint32_t cin, const struct rv_decode_opts *o,
    struct rv_img *out)
{
	uint32_t th, tw;

	rv_fit_max_side(h, w, o->max_side, &th, &tw);
	rv_img_finish(src, h, w, cin, o->channels, th, tw, out, &c->rs);
}

unsigned char *
rv_img_direct(struct rv_img *out, uint32_t h, uint32_t w, uint32_t c,
    const struct rv_decode_opts *o)
{
	uint32_t th, tw;

	rv_fit_max_side(h, w, o->max_side, &th, &tw);
	if (th != h || tw != w)
		return NULL;
	rv_img_reserve(out, h, w, c);
	return out->data;
}

void
rv_img_narrow(struct rv_img *out, uint32_t channels)
{
	if (out->c == 3 && channels == 1) {
		rv_rgb_to_grey(out->data, out->data, (size_t)out->h * out->w);
		out->c = 1;
	}
}

int
rv_codec_info(struct rv_codec *c, const unsigned char *p, size_t n,
    int *dtype, uint32_t *h, uint32_t *w, uint32_t *ch)
{
	*dtype = rv_sniff(p, n);
	switch (rv_codec_format(p, n)) {
	case RV_FMT_JPEG:
		return rv_jpeg_info(c, p, n, h, w, ch);
	case RV_FMT_PNG:
		return rv_png_info(p, n, h, w, ch);
	case RV_FMT_WEBP:
		return rv_webp_info(p, n, h, w, ch);
	case RV_FMT_GIF:
		return rv_gif_info(p, n, h, w, ch);
	case RV_FMT_BMP:
		return rv_bmp_info(p, n, h, w, ch);
	case RV_FMT_TIFF:
		return rv_tiff_info(p, n, h, w, ch);
	default:
		return not_image(n);
	}
}

int
rv_codec_decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out)
{
	if (o->channels != 1 && o->channels != 3)
		return rv_seterr("unsupported output channel count %u",
		    o->channels);
	switch (rv_codec_format(p, n)) {
	case RV_FMT_JPEG:
		return rv_jpeg_decode(c, p, n, o, out);
	case RV_FMT_PNG:
		return rv_png_decode(c, p, n, o, out);
	case RV_FMT_WEBP:
		return rv_webp_decode(c, p, n, o, out);
	case RV_FMT_GIF:
		return rv_gif_decode(c, p, n, o, out);
	case RV_FMT_BMP:
		return rv_bmp_decode(c, p, n, o, out);
	case RV_FMT_TIFF:
		return rv_tiff_decode(c, p, n, o, out);
	default:
		return not_image(n);
	}
}
