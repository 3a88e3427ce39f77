/*
 * WebP decoding through libwebp: lossy and lossless, with or without
 * alpha (dropped, not composited: the stored colours, as for PNG), and
 * the first frame of an animation through libwebpdemux's animation
 * decoder.  The size comes from the headers (the VP8X canvas for an
 * extended file) and is checked against max_pixels before libwebp
 * allocates anything.
 */
#include "codec.h"

#include <string.h>
#include <webp/decode.h>
#include <webp/demux.h>

#include "codec_impl.h"
#include "err.h"

/* libwebp's status in our words. */
static int
webp_err(VP8StatusCode st)
{
	switch (st) {
	case VP8_STATUS_NOT_ENOUGH_DATA:
		return rv_seterr("truncated WebP data");
	case VP8_STATUS_UNSUPPORTED_FEATURE:
		return rv_seterr("unsupported WebP feature");
	case VP8_STATUS_OUT_OF_MEMORY:
		return rv_seterr("corrupt WebP: out of memory");
	case VP8_STATUS_BITSTREAM_ERROR:
		return rv_seterr("corrupt WebP: bitstream error");
	case VP8_STATUS_INVALID_PARAM:
		return rv_seterr("corrupt WebP: invalid parameter");
	default:
		return rv_seterr("corrupt WebP data (status %d)", (int)st);
	}
}

static int
features(const unsigned char *p, size_t n, WebPBitstreamFeatures *f)
{
	VP8StatusCode st = WebPGetFeatures(p, n, f);

	if (st != VP8_STATUS_OK)
		return webp_err(st);
	if (f->width <= 0 || f->height <= 0)
		return rv_seterr("corrupt WebP: bad image size %dx%d",
		    f->width, f->height);
	return 0;
}

int
rv_webp_info(const unsigned char *p, size_t n, uint32_t *h, uint32_t *w,
    uint32_t *ch)
{
	WebPBitstreamFeatures f;

	if (features(p, n, &f) != 0)
		return -1;
	*w = (uint32_t)f.width;
	*h = (uint32_t)f.height;
	*ch = 3;
	return 0;
}

/* An animation's first frame, composed on its canvas, as RGB in dst. */
static int
first_frame(const unsigned char *p, size_t n, uint32_t h, uint32_t w,
    unsigned char *dst)
{
	WebPAnimDecoderOptions ao;
	WebPAnimDecoder *dec;
	WebPAnimInfo info;
	WebPData data = { p, n };
	uint8_t *rgba;
	size_t i, px = (size_t)h * w;
	int ts;

	if (!WebPAnimDecoderOptionsInit(&ao))
		return rv_seterr("cannot start libwebp");
	ao.color_mode = MODE_RGBA;
	ao.use_threads = 0;
	if ((dec = WebPAnimDecoderNew(&data, &ao)) == NULL)
		return rv_seterr("corrupt WebP: bad animation");
	if (!WebPAnimDecoderGetInfo(dec, &info) || info.canvas_width != w ||
	    info.canvas_height != h || info.frame_count < 1) {
		WebPAnimDecoderDelete(dec);
		return rv_seterr("corrupt WebP: bad animation");
	}
	if (!WebPAnimDecoderGetNext(dec, &rgba, &ts)) {
		WebPAnimDecoderDelete(dec);
		/* The demuxer took the file whole, so what fails here is
		 * the frame's own data. */
		return rv_seterr("corrupt WebP: bad animation frame");
	}
	for (i = 0; i < px; i++) {
		dst[3 * i] = rgba[4 * i];
		dst[3 * i + 1] = rgba[4 * i + 1];
		dst[3 * i + 2] = rgba[4 * i + 2];
	}
	WebPAnimDecoderDelete(dec);
	return 0;
}

int
rv_webp_decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out)
{
	WebPBitstreamFeatures f;
	WebPDecoderConfig cfg;
	VP8StatusCode st;
	uint32_t h, w, th, tw;
	unsigned char *buf;
	size_t bytes;
	int direct;

	if (features(p, n, &f) != 0)
		return -1;
	w = (uint32_t)f.width;
	h = (uint32_t)f.height;
	if (rv_check_pixels(h, w, o->max_pixels) != 0)
		return -1;
	rv_fit_max_side(h, w, o->max_side, &th, &tw);
	bytes = (size_t)h * w * 3;
	direct = o->channels == 3 && th == h && tw == w;
	if (direct) {
		rv_img_reserve(out, h, w, 3);
		buf = out->data;
	} else {
		buf = rv_scratch_get(&c->pix, bytes);
	}
	if (f.has_animation) {
		if (first_frame(p, n, h, w, buf) != 0)
			return -1;
	} else {
		if (!WebPInitDecoderConfig(&cfg))
			return rv_seterr("cannot start libwebp");
		cfg.options.use_threads = 0;
		cfg.output.colorspace = MODE_RGB;
		cfg.output.is_external_memory = 1;
		cfg.output.u.RGBA.rgba = buf;
		cfg.output.u.RGBA.stride = (int)w * 3;
		cfg.output.u.RGBA.size = bytes;
		st = WebPDecode(p, n, &cfg);
		WebPFreeDecBuffer(&cfg.output);
		if (st != VP8_STATUS_OK)
			return webp_err(st);
		if (cfg.output.width != (int)w || cfg.output.height != (int)h)
			return rv_seterr("corrupt WebP: frame size differs "
			    "from the header's");
	}
	if (!direct)
		rv_img_deliver(c, buf, h, w, 3, o, out);
	return 0;
}
