/*
 * Samples encoded for storage (rv-encode): u8 pixels as JPEG through
 * TurboJPEG or as PNG through libpng, into the stream's jpeg and png
 * dtypes, which every stage that needs pixels decodes as it does
 * rv-decode --encoded samples.
 *
 * JPEG: baseline, the accurate integer DCT, grey as one component and
 * colour as YCbCr with 4:2:0 chroma (what Pillow, OpenCV and FFCV write by
 * default), Huffman tables optimised off: the bytes depend only on the
 * pixels and the quality, never on the thread or the machine's SIMD.
 * PNG: libpng's defaults (zlib level 6, adaptive filters), lossless.
 */
#include "codec/encode.h"

#include <string.h>
#include <turbojpeg.h>

#include "base/err.h"
#include "stream/record.h"

int
rv_encode_format(const char *s, int *dtype)
{
	if (strcmp(s, "jpeg") == 0 || strcmp(s, "jpg") == 0)
		*dtype = RV_DT_JPEG;
	else if (strcmp(s, "png") == 0)
		*dtype = RV_DT_PNG;
	else
		return rv_seterr("'%s': not a format rv-encode writes (jpeg, "
		    "png)", s);
	return 0;
}

int
rv_encode_subsample(const char *s, int *subsample)
{
	if (strcmp(s, "420") == 0 || strcmp(s, "444") == 0) {
		*subsample = s[1] == '2' ? 420 : 444;
		return 0;
	}
	return rv_seterr("'%s': not a chroma subsampling (420 or 444)", s);
}

int
rv_encoder_init(struct rv_encoder *e, const struct rv_encode_conf *c)
{
	memset(e, 0, sizeof(*e));
	e->conf = *c;
	if (c->dtype != RV_DT_JPEG && c->dtype != RV_DT_PNG)
		return rv_seterr("encode: dtype %d: not jpeg or png", c->dtype);
	if (c->quality < 1 || c->quality > 100)
		return rv_seterr("encode: quality %d: not in 1..100",
		    c->quality);
	if (c->subsample != 0 && c->subsample != 420 && c->subsample != 444)
		return rv_seterr("encode: subsampling %d: not 420 or 444",
		    c->subsample);
	if (c->dtype == RV_DT_JPEG && (e->tj = tjInitCompress()) == NULL)
		return rv_seterr("cannot start TurboJPEG: %s",
		    tjGetErrorStr2(NULL));
	return 0;
}

void
rv_encoder_release(struct rv_encoder *e)
{
	if (e->tj != NULL)
		tjDestroy(e->tj);
	memset(e, 0, sizeof(*e));
}

/* px (h x w x c, c 1 or 3) as a JPEG appended to out. */
static int
jpeg(struct rv_encoder *e, const unsigned char *px, uint32_t h, uint32_t w,
    uint32_t c, struct rv_buf *out)
{
	int sub = c == 1 ? TJSAMP_GRAY : e->conf.subsample == 444 ?
	    TJSAMP_444 : TJSAMP_420;
	unsigned long cap, n;
	unsigned char *dst;

	if (c != 1 && c != 3)
		return rv_seterr("%u channels: a JPEG holds 1 or 3 (use "
		    "--format png)", c);
	if (w > 65535 || h > 65535)
		return rv_seterr("%ux%u: over JPEG's side limit of 65535",
		    w, h);
	cap = tjBufSize((int)w, (int)h, sub);
	if (cap == (unsigned long)-1)
		return rv_seterr("%ux%u: too large for a JPEG", w, h);
	rv_buf_reserve(out, (size_t)cap);
	dst = out->data + out->len;
	n = cap;
	if (tjCompress2(e->tj, px, (int)w, (int)(w * c), (int)h,
	    c == 1 ? TJPF_GRAY : TJPF_RGB, &dst, &n, sub, e->conf.quality,
	    TJFLAG_NOREALLOC | TJFLAG_ACCURATEDCT) != 0)
		return rv_seterr("jpeg: %s", tjGetErrorStr2(e->tj));
	out->len += (size_t)n;
	return 0;
}

int
rv_encode_sample(struct rv_encoder *e, struct rv_coder *k,
    const struct rv_rec *rec, const unsigned char *payload,
    struct rv_rec *hdr, struct rv_buf *out)
{
	const unsigned char *px = payload;
	uint32_t h = rec->height, w = rec->width, c = rec->channels;
	struct rv_decode_opts o;
	int dt;

	out->len = 0;
	if (rec->dtype == e->conf.dtype)
		return 1;	/* already so: written as it came */
	if (rec->dtype == RV_DT_JPEG || rec->dtype == RV_DT_PNG) {
		/* another format: its pixels at full size, grey kept grey */
		if (c == 0 && rv_codec_info(k->codec, payload,
		    (size_t)rec->payload_len, &dt, &h, &w, &c) < 0)
			return -1;
		memset(&o, 0, sizeof(o));
		o.channels = c == 1 ? 1 : 3;
		if (rv_codec_decode(k->codec, payload,
		    (size_t)rec->payload_len, &o, &k->img) < 0)
			return -1;
		px = k->img.data;
		h = k->img.h;
		w = k->img.w;
		c = k->img.c;
	} else if (rec->dtype != RV_DT_U8) {
		return rv_seterr("sample of dtype '%s' has no pixels",
		    rv_dtype_name(rec->dtype));
	} else if (h == 0 || w == 0 || c == 0) {
		return rv_seterr("sample is %ux%ux%u", w, h, c);
	} else if (rec->payload_len != (uint64_t)h * w * c) {
		return rv_seterr("payload of %llu bytes for %ux%ux%u pixels",
		    (unsigned long long)rec->payload_len, w, h, c);
	}
	if ((e->conf.dtype == RV_DT_JPEG ? jpeg(e, px, h, w, c, out) :
	    rv_png_encode(px, h, w, c, out)) < 0)
		return -1;
	*hdr = *rec;
	hdr->dtype = (uint8_t)e->conf.dtype;
	hdr->height = h;
	hdr->width = w;
	hdr->channels = c;
	hdr->payload_len = out->len;
	hdr->payload = NULL;
	return 0;
}
