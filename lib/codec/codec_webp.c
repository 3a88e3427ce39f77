/*
 * WebP decoding through libwebp: lossy and lossless, with or without
 * alpha (dropped, not composited: the stored colours, as for PNG), and
 * the first frame of an animation through libwebpdemux's animation
 * decoder.  The size comes from the headers (the VP8X canvas for an
 * extended file) and is checked against max_pixels before libwebp
 * allocates anything.
 */
#include "codec/codec.h"

#include <string.h>
#include <webp/decode.h>
#include <webp/demux.h>

#include "base/err.h"
#include "codec/codec_impl.h"
#include "stream/record.h"

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

static int
sniff(const unsigned char *p, size_t n)
{
	return n >= 12 && memcmp(p, "RIFF", 4) == 0 &&
	    memcmp(p + 8, "WEBP", 4) == 0;
}

static int
info(struct rv_codec *c, const unsigned char *p, size_t n, uint32_t *h,
    uint32_t *w, uint32_t *ch)
{
	WebPBitstreamFeatures f;

	if (features(p, n, &f) != 0)
		return -1;
	*w = (uint32_t)f.width;
	*h = (uint32_t)f.height;
	*ch = 3;
	return 0;
}

/*
 * libwebp's reading of rgb into the size bytes at dst, stride bytes a
 * row; the frame's size must be h x w.
 */
static int
decode_rgb(const uint8_t *p, size_t n, uint32_t h, uint32_t w,
    unsigned char *dst, size_t stride, size_t size)
{
	WebPDecoderConfig cfg;
	VP8StatusCode st;

	if (!WebPInitDecoderConfig(&cfg))
		return rv_seterr("cannot start libwebp");
	cfg.options.use_threads = 0;
	cfg.output.colorspace = MODE_RGB;
	cfg.output.is_external_memory = 1;
	cfg.output.u.RGBA.rgba = dst;
	cfg.output.u.RGBA.stride = (int)stride;
	cfg.output.u.RGBA.size = size;
	st = WebPDecode(p, n, &cfg);
	WebPFreeDecBuffer(&cfg.output);
	if (st != VP8_STATUS_OK)
		return webp_err(st);
	if (cfg.output.width != (int)w || cfg.output.height != (int)h)
		return rv_seterr("corrupt WebP: frame size differs from the "
		    "header's");
	return 0;
}

/*
 * An animation's first frame, on its canvas, as RGB in dst.  This is what
 * libwebp's WebPAnimDecoder gives for it (a key frame: a canvas of
 * transparent black, the frame decoded into its rectangle, no blending),
 * alpha dropped; but that decoder holds two RGBA canvases, 8 bytes a
 * pixel, which a 94-byte file can make 1.4 GB.  Here the frame is decoded
 * straight into dst, at its offset, through the demuxer.
 */
static int
first_frame(const unsigned char *p, size_t n, uint32_t h, uint32_t w,
    unsigned char *dst)
{
	WebPData data = { p, n };
	WebPDemuxer *dmx;
	WebPIterator it;
	uint32_t fx, fy, fw, fh;
	size_t at;
	int rc;

	if ((dmx = WebPDemux(&data)) == NULL)
		return rv_seterr("corrupt WebP: bad animation");
	if (WebPDemuxGetI(dmx, WEBP_FF_CANVAS_WIDTH) != w ||
	    WebPDemuxGetI(dmx, WEBP_FF_CANVAS_HEIGHT) != h ||
	    !WebPDemuxGetFrame(dmx, 1, &it)) {
		WebPDemuxDelete(dmx);
		return rv_seterr("corrupt WebP: bad animation");
	}
	fx = (uint32_t)it.x_offset;
	fy = (uint32_t)it.y_offset;
	fw = (uint32_t)it.width;
	fh = (uint32_t)it.height;
	if (it.width <= 0 || it.height <= 0 || it.x_offset < 0 ||
	    it.y_offset < 0 || fx > w || fw > w - fx || fy > h ||
	    fh > h - fy) {
		WebPDemuxReleaseIterator(&it);
		WebPDemuxDelete(dmx);
		return rv_seterr("corrupt WebP: bad animation frame");
	}
	memset(dst, 0, (size_t)h * w * 3);
	at = ((size_t)fy * w + fx) * 3;
	rc = decode_rgb(it.fragment.bytes, it.fragment.size, fh, fw,
	    dst + at, (size_t)w * 3, (size_t)h * w * 3 - at);
	WebPDemuxReleaseIterator(&it);
	WebPDemuxDelete(dmx);
	/* The demuxer took the file whole, so what fails here is the
	 * frame's own data. */
	if (rc != 0 && strncmp(rv_errmsg(), "cannot", 6) != 0)
		return rv_seterr("corrupt WebP: bad animation frame");
	return rc;
}

static int
decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out)
{
	WebPBitstreamFeatures f;
	uint32_t h, w;
	unsigned char *buf;
	size_t bytes;
	int direct;

	if (features(p, n, &f) != 0)
		return -1;
	w = (uint32_t)f.width;
	h = (uint32_t)f.height;
	if (rv_check_pixels(h, w, o->max_pixels) != 0)
		return -1;
	bytes = (size_t)h * w * 3;
	/* RGB into out for a grey output too, narrowed in place after:
	 * 3 bytes a pixel, never a second copy. */
	buf = rv_img_direct(out, h, w, 3, o);
	direct = buf != NULL;
	if (!direct)
		buf = rv_scratch_get(&c->pix, bytes);
	if (f.has_animation) {
		if (first_frame(p, n, h, w, buf) != 0)
			return -1;
	} else if (decode_rgb(p, n, h, w, buf, (size_t)w * 3, bytes) != 0) {
		return -1;
	}
	if (direct)
		rv_img_narrow(out, o->channels);
	else
		rv_img_deliver(c, buf, h, w, 3, o, out);
	return 0;
}

static const char *const exts[] = { "webp", NULL };

const struct rv_format rv_format_webp = {
	.name = "WebP", .ext = exts, .dtype = RV_DT_NONE, .sniff = sniff, .info = info,
	.decode = decode, .release = NULL,
};
