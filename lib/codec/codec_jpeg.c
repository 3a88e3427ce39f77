/*
 * JPEG decoding through TurboJPEG.  A smaller --max-side is mostly done by
 * the decoder itself: libjpeg's DCT scaling (1/2, 1/4, 1/8) skips most of
 * the IDCT and colour work, and only the remainder goes through the area
 * resize.  libjpeg's warnings are errors, so truncated or damaged data
 * never yields an image padded with grey; the one exception is stray
 * bytes between header segments, which touch no pixel (see
 * rv_jpeg_drop_junk()).
 */
#include "codec/codec.h"

#include <string.h>
#include <turbojpeg.h>

#include "base/err.h"
#include "codec/codec_impl.h"
#include "stream/record.h"

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

int
rv_jpeg_msg_error(const char *m)
{
	if (strstr(m, "Premature end of JPEG file") != NULL)
		return rv_seterr("truncated JPEG data");
	if (strncmp(m, "Corrupt JPEG data: ", 19) == 0)
		return rv_codec_err("corrupt JPEG data", m + 19);
	if (strncmp(m, "Unsupported", 11) == 0)
		return rv_codec_err("unsupported JPEG", m);
	return rv_codec_err("corrupt JPEG data", m);
}

/* TurboJPEG's message without its API function's name. */
static int
jpeg_error(tjhandle tj)
{
	const char *m = tjGetErrorStr2(tj), *q;

	if (strncmp(m, "tj", 2) == 0 && (q = strstr(m, "(): ")) != NULL)
		m = q + 4;
	return rv_jpeg_msg_error(m);
}

/*
 * libjpeg's next_marker() skips bytes that are no marker between two
 * header segments (junk, an FF 00, or the tail of an APPn or COM segment
 * whose length was edited short) with the warning "N extraneous bytes
 * before marker", which STOPONWARNING makes fatal.  Pillow ignores
 * libjpeg's warnings and so decodes such files (its test images
 * junk_jpeg_header.jpg, jpeg_ff00_header.jpg, truncated_app14.jpg,
 * photoshop-200dpi-broken.jpg, hopper_bad_exif.jpg).  TurboJPEG reports
 * only the first warning, so decoding through it would also pass a later,
 * real one (a cut file with junk in its header).  Instead the header,
 * SOI to SOS, is walked here as next_marker() walks it, and when it holds
 * such bytes a copy without them is decoded: the very segments libjpeg
 * would read, with every other warning still fatal.  Fill bytes (FF FF)
 * are legal and dropped alike.  Anything the walk does not understand (an
 * unknown marker, a length past the end) ends it, and the rest is copied
 * as is for libjpeg to judge.
 *
 * Returns the number of bytes dropped; with dst (n bytes) the cleaned
 * file is written there and its length put in *dn.
 */
static size_t
walk_header(const unsigned char *p, size_t n, unsigned char *dst,
    size_t *dn)
{
	size_t i = 2, o = 2, junk = 0, len;
	unsigned m;

	for (;;) {
		while (i < n && p[i] != 0xff) {
			i++;
			junk++;
		}
		while (i < n && p[i] == 0xff)
			i++;
		if (i >= n)
			break;
		if (p[i] == 0x00) {
			i++;
			junk += 2;
			continue;
		}
		m = p[i++];
		if (dst != NULL) {
			dst[o] = 0xff;
			dst[o + 1] = (unsigned char)m;
		}
		o += 2;
		if (m == 0x01 || (m >= 0xd0 && m <= 0xd7))
			continue;	/* TEM, RSTn: no length */
		/* SOS: the scans follow; SOI, EOI or an unknown marker:
		 * libjpeg's to judge. */
		if (m == 0xda || m == 0xd8 || m == 0xd9 || m < 0xc0 ||
		    n - i < 2)
			break;
		len = (size_t)p[i] << 8 | p[i + 1];
		if (len < 2 || len > n - i)
			break;
		if (dst != NULL)
			memcpy(dst + o, p + i, len);
		o += len;
		i += len;
	}
	if (dst != NULL) {
		memcpy(dst, p, 2);
		memcpy(dst + o, p + i, n - i);
		*dn = o + (n - i);
	}
	return junk;
}

const unsigned char *
rv_jpeg_drop_junk(struct rv_codec *c, const unsigned char *p, size_t *n)
{
	unsigned char *q;

	if (c->strict || *n < 2 || walk_header(p, *n, NULL, NULL) == 0)
		return p;
	q = rv_scratch_get(&c->jpg, *n);
	walk_header(p, *n, q, n);
	return q;
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
	int iw = 0, ih = 0, samp = -1;

	/* TurboJPEG 2.1 can return success on a header it could not finish
	 * (an APPn of length 0, then nothing), leaving the outputs unset:
	 * start them empty so that reads as an empty image, every time. */
	*cs = -1;
	if (tjDecompressHeader3(c->tj, p, n, &iw, &ih, &samp, cs) != 0) {
		jpeg_error(c->tj);
		tjDestroy(c->tj);
		c->tj = NULL;
		return -1;
	}
	if (iw <= 0 || ih <= 0) {
		tjDestroy(c->tj);	/* it may be mid-header too */
		c->tj = NULL;
		return rv_seterr("corrupt JPEG data: empty image");
	}
	*w = (uint32_t)iw;
	*h = (uint32_t)ih;
	return 0;
}

/* SOI and the first byte of the next marker. */
static int
sniff(const unsigned char *p, size_t n)
{
	return n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff;
}

static int
info(struct rv_codec *c, const unsigned char *p, size_t n,
    uint32_t *h, uint32_t *w, uint32_t *ch)
{
	int cs;

	p = rv_jpeg_drop_junk(c, p, &n);
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

static int
decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out)
{
	uint32_t h, w, th, tw, sh, sw, dc;
	unsigned char *dst;
	int cs, pf, direct;

	p = rv_jpeg_drop_junk(c, p, &n);
	if (handle(c) == NULL || header(c, p, n, &h, &w, &cs) != 0 ||
	    rv_check_pixels(h, w, o->max_pixels) != 0)
		return -1;
	rv_fit_max_side(h, w, o->max_side, &th, &tw);
	pick_scale(h, w, th, tw, &sh, &sw);

	/*
	 * libjpeg gives grey files as grey, or replicated to RGB, exactly.
	 * A colour file is always decoded to RGB, even for a grey output:
	 * libjpeg's own grey of it is the file's Y plane, which differs from
	 * Pillow's convert("L") of the decoded RGB by up to 14 levels (Y is
	 * taken before chroma upsampling and rounding to RGB), so the luma
	 * is computed from the RGB as everywhere else.  CMYK is converted
	 * here.  Without a resize, the decode lands in out's own buffer and
	 * is narrowed there (CMYK -> RGB -> grey run forwards): no second
	 * full-size copy, at most 4 bytes a pixel.
	 */
	if (cs == TJCS_CMYK || cs == TJCS_YCCK) {
		pf = TJPF_CMYK;
		dc = 4;
	} else if (cs == TJCS_GRAY) {
		pf = o->channels == 1 ? TJPF_GRAY : TJPF_RGB;
		dc = o->channels;
	} else {
		pf = TJPF_RGB;
		dc = 3;
	}
	direct = sh == th && sw == tw;
	if (direct) {
		rv_img_reserve(out, th, tw, dc);
		dst = out->data;
	} else {
		dst = rv_scratch_get(&c->pix, (size_t)sh * sw * dc);
	}
	if (tjDecompress2(c->tj, p, n, dst, (int)sw, 0, (int)sh, pf,
	    DECODE_FLAGS) != 0)
		return jpeg_error(c->tj);
	if (dc == 4) {
		cmyk_to_rgb(dst, dst, (size_t)sh * sw);
		dc = 3;
	}
	if (!direct) {
		rv_img_finish(dst, sh, sw, dc, o->channels, th, tw, out,
		    &c->rs);
		return 0;
	}
	out->c = dc;
	rv_img_narrow(out, o->channels);
	return 0;
}

static void
release(struct rv_codec *c)
{
	if (c->tj != NULL)
		tjDestroy(c->tj);
	c->tj = NULL;
	rv_jroi_free(c);
}

static const char *const exts[] = { "jpg", "jpeg", "jpe", "jfif", NULL };

const struct rv_format rv_format_jpeg = {
	.name = "JPEG", .ext = exts, .dtype = RV_DT_JPEG, .sniff = sniff, .info = info,
	.decode = decode, .release = release,
};
