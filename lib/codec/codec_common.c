/*
 * What every format file shares: the pixel-count limit (so that every
 * format refuses a decompression bomb with the same words), a library's
 * error message in rv's form, and the last step of a decode (straight into
 * the output, or through the resize and channel conversion of img.c).
 */
#include "codec/codec.h"

#include <ctype.h>

#include "base/err.h"
#include "codec/codec_impl.h"

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
