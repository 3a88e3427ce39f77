/*
 * The codec front: recognise JPEG and PNG by their first bytes, hold one
 * thread's decoder state, and send each image to its format's decoder
 * (codec_jpeg.c, codec_png.c).  The pixel-count limit lives here so that
 * both formats refuse a decompression bomb with the same words.
 */
#include "codec.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "codec_impl.h"
#include "err.h"
#include "record.h"
#include "xmem.h"

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

struct rv_codec *
rv_codec_new(void)
{
	/* The TurboJPEG handle waits for the first JPEG: PNG-only and
	 * raw-pixel workers never pay for it. */
	return xcalloc(1, sizeof(struct rv_codec));
}

void
rv_codec_free(struct rv_codec *c)
{
	if (c == NULL)
		return;
	if (c->tj != NULL)
		tjDestroy(c->tj);
	rv_scratch_release(&c->pix);
	rv_scratch_release(&c->rows);
	rv_scratch_release(&c->rs);
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
	return rv_seterr("not a JPEG or PNG image");
}

int
rv_codec_info(struct rv_codec *c, const unsigned char *p, size_t n,
    int *dtype, uint32_t *h, uint32_t *w, uint32_t *ch)
{
	int dt = rv_sniff(p, n);

	*dtype = dt;
	switch (dt) {
	case RV_DT_JPEG:
		return rv_jpeg_info(c, p, n, h, w, ch);
	case RV_DT_PNG:
		return rv_png_info(p, n, h, w, ch);
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
	switch (rv_sniff(p, n)) {
	case RV_DT_JPEG:
		return rv_jpeg_decode(c, p, n, o, out);
	case RV_DT_PNG:
		return rv_png_decode(c, p, n, o, out);
	default:
		return not_image(n);
	}
}
