/*
 * JPEG decoding through TurboJPEG.  A smaller --max-side is mostly done by
 * the decoder itself: libjpeg's DCT scaling (1/2, 1/4, 1/8) skips most of
 * the IDCT and colour work, and only the remainder goes through the area
 * resize.  Any libjpeg warning is an error, so truncated or damaged data
 * never yields an image padded with grey.
 */
#include "codec.h"

#include <string.h>
#include <turbojpeg.h>

#include "codec_impl.h"
#include "err.h"

/*
 * STOPONWARNING: "Premature end of JPEG file" and friends fail the decode.
 * LIMITSCANS: a progressive file with hundreds of scans is a known way to
 * burn CPU, so it is refused as libjpeg-turbo's tools do.
 */
#define DECODE_FLAGS	(TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS)

static tjhandle
handle(struct rv_codec *c)
{
	if (c->tj == NULL) {
		c->tj = tjInitDecompress();
		if (c->tj == NULL)
			rv_seterr("cannot start TurboJPEG: %s",
			    tjGetErrorStr2(NULL));
	}
	return c->tj;
}

/* libjpeg's message, reworded to our conventions (lowercase, no API
 * function names), with truncation called what it is. */
static int
jpeg_error(tjhandle tj)
{
	const char *m = tjGetErrorStr2(tj), *q;

	if (strncmp(m, "tj", 2) == 0 && (q = strstr(m, "(): ")) != NULL)
		m = q + 4;
	if (strstr(m, "Premature end of JPEG file") != NULL)
		return rv_seterr("truncated JPEG data");
	if (strncmp(m, "Corrupt JPEG data: ", 19) == 0)
		return rv_codec_err("corrupt JPEG data", m + 19);
	if (strncmp(m, "Unsupported", 11) == 0)
		return rv_codec_err("unsupported JPEG", m);
	return rv_codec_err("corrupt JPEG data", m);
}

/*
 * TurboJPEG 2.1's tjDecompressHeader3() returns from an error without
 * aborting the decompressor, which then stays mid-header and fails every
 * later call on the handle; so a failed header read costs the handle, and
 * the next JPEG makes a fresh one.
 */
static int
header(struct rv_codec *c, const unsigned char *p, size_t n, uint32_t *h,
    uint32_t *w, int *cs)
{
	int iw, ih, samp;

	if (tjDecompressHeader3(c->tj, p, n, &iw, &ih, &samp, cs) != 0) {
		jpeg_error(c->tj);
		tjDestroy(c->tj);
		c->tj = NULL;
		return -1;
	}
	if (iw <= 0 || ih <= 0)
		return rv_seterr("corrupt JPEG data: empty image");
	*w = (uint32_t)iw;
	*h = (uint32_t)ih;
	return 0;
}

int
rv_jpeg_info(struct rv_codec *c, const unsigned char *p, size_t n,
    uint32_t *h, uint32_t *w, uint32_t *ch)
{
	int cs;

	if (handle(c) == NULL || header(c, p, n, h, w, &cs) != 0)
		return -1;
	*ch = cs == TJCS_GRAY ? 1 : 3;
	return 0;
}

/*
 * The smallest DCT scale whose output still covers the target in both
 * directions, so the resize after it only shrinks.  Only 1/1, 1/2, 1/4
 * and 1/8 are used: libjpeg-turbo has SIMD code for those, and its other
 * M/8 scales are plain C and slower than a full decode.  Measured on
 * big.jpg (640x480): 1/1 0.90 ms, 7/8 1.94, 3/4 1.37, 5/8 1.22, 1/2 0.66,
 * 3/8 0.80, 1/4 0.58, 1/8 0.49 (CPU time, 2-core VM); so for 200x150,
 * 1/2 plus the resize is no slower than 3/8 plus a smaller one, and
 * 7/8..5/8 always lose to 1/1.
 */
static void
pick_scale(uint32_t h, uint32_t w, uint32_t th, uint32_t tw, uint32_t *sh,
    uint32_t *sw)
{
	tjscalingfactor *sf;
	int nsf, i;

	*sh = h;
	*sw = w;
	if (th == h && tw == w)
		return;
	sf = tjGetScalingFactors(&nsf);
	for (i = 0; sf != NULL && i < nsf; i++) {
		uint32_t a, b;

		if (sf[i].num != 1)
			continue;
		a = (uint32_t)TJSCALED((int)h, sf[i]);
		b = (uint32_t)TJSCALED((int)w, sf[i]);
		if (a >= th && b >= tw && (uint64_t)a * b < (uint64_t)*sh * *sw) {
			*sh = a;
			*sw = b;
		}
	}
}

/*
 * CMYK and YCCK files are read as Adobe writes them, inverted (stored
 * 255 - C), and converted as Pillow's Image.convert("RGB") does after
 * its "CMYK;I" unpacking: R = (255 - K) - (C (255 - K) / 255), with
 * Pillow's rounded division by 255, and so for G and B (bit-exact against
 * Pillow 9.4 and ImageMagick on the fixtures).  With s the stored bytes:
 * nk = s[3], C = 255 - s[0].  Runs forwards, so dst may equal src.
 */
static void
cmyk_to_rgb(unsigned char *dst, const unsigned char *src, size_t n)
{
	size_t i;
	int k;

	for (i = 0; i < n; i++, src += 4, dst += 3) {
		unsigned nk = src[3];

		for (k = 0; k < 3; k++) {
			unsigned t = (255u - src[k]) * nk + 128;

			dst[k] = (unsigned char)(nk - (((t >> 8) + t) >> 8));
		}
	}
}

int
rv_jpeg_decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out)
{
	uint32_t h, w, th, tw, sh, sw, dc;
	unsigned char *dst;
	int cs, pf, cmyk, direct;

	if (handle(c) == NULL || header(c, p, n, &h, &w, &cs) != 0 ||
	    rv_check_pixels(h, w, o->max_pixels) != 0)
		return -1;
	rv_fit_max_side(h, w, o->max_side, &th, &tw);
	pick_scale(h, w, th, tw, &sh, &sw);

	/*
	 * libjpeg converts to the output directly: RGB, or grey.  For colour
	 * files grey is the file's own Y channel (the encoder's 601 luma),
	 * and the chroma is not even decoded; against Pillow's luma of the
	 * decoded RGB that is a mean 0.04 apart, up to 6 in a few saturated
	 * pixels.  CMYK has no such path and is converted here.
	 */
	cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
	if (cmyk) {
		pf = TJPF_CMYK;
		dc = 4;
	} else {
		pf = o->channels == 1 ? TJPF_GRAY : TJPF_RGB;
		dc = o->channels;
	}
	direct = !cmyk && sh == th && sw == tw;
	if (direct) {
		rv_img_reserve(out, th, tw, o->channels);
		dst = out->data;
	} else {
		dst = rv_scratch_get(&c->pix, (size_t)sh * sw * dc);
	}
	if (tjDecompress2(c->tj, p, n, dst, (int)sw, 0, (int)sh, pf,
	    DECODE_FLAGS) != 0)
		return jpeg_error(c->tj);
	if (direct)
		return 0;
	if (cmyk) {
		cmyk_to_rgb(dst, dst, (size_t)sh * sw);
		dc = 3;
	}
	rv_img_finish(dst, sh, sw, dc, o->channels, th, tw, out, &c->rs);
	return 0;
}
