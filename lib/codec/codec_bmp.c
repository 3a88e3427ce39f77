/*
 * BMP decoding, by hand (no Debian library reads BMP on its own): the
 * file header, an OS/2 1.x (12-byte) or Windows (40, 52, 56, 108 or
 * 124-byte) DIB header, a palette, and pixels at 1, 4 or 8 bits (palette,
 * RLE4 and RLE8 too), 16 bits (5-5-5, or bit fields), 24 bits, or 32 bits
 * (BGRX, or bit fields), rows bottom-up or top-down.  Alpha is dropped;
 * embedded JPEG or PNG bodies and OS/2 2.x headers are refused.
 *
 * Every field is hostile: sizes are checked against the file before a
 * byte is read, the pixel count against max_pixels before anything is
 * allocated, and RLE runs are clipped to the image.  fuzz/codec.c runs
 * this parser.
 */
#include "codec/codec.h"

#include <string.h>

#include "base/err.h"
#include "codec/codec_impl.h"
#include "stream/record.h"

enum {
	BI_RGB = 0,
	BI_RLE8 = 1,
	BI_RLE4 = 2,
	BI_BITFIELDS = 3,
	BI_ALPHABITFIELDS = 6,
};

struct bmp {
	uint32_t w, h;		/* h is |biHeight| */
	int topdown;
	uint32_t bpp, comp;
	uint32_t off;		/* pixel data */
	uint32_t mask[3];	/* R, G, B bit fields (16 and 32 bits) */
	uint32_t npal;		/* palette entries read */
	unsigned char pal[256][3];
	int grey;		/* every palette entry is grey */
};

static uint32_t
le16(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t
le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* Parse and check every header field; nothing is decoded. */
static int
parse(const unsigned char *p, size_t n, struct bmp *b)
{
	uint32_t hs, palat, entry, want, i;
	int32_t sh;

	memset(b, 0, sizeof(*b));
	if (n < 18)
		return rv_seterr("truncated BMP data");
	if (p[0] != 'B' || p[1] != 'M')
		return rv_seterr("corrupt BMP: no BM signature");
	b->off = le32(p + 10);
	hs = le32(p + 14);
	if (hs != 12 && hs != 40 && hs != 52 && hs != 56 && hs != 108 &&
	    hs != 124)
		return rv_seterr("unsupported BMP: %u-byte header", hs);
	if (n < 14 + (size_t)hs)
		return rv_seterr("truncated BMP data");
	if (hs == 12) {
		b->w = le16(p + 18);
		b->h = le16(p + 20);
		b->bpp = le16(p + 24);
		b->comp = BI_RGB;
		entry = 3;
	} else {
		int32_t sw = (int32_t)le32(p + 18);

		sh = (int32_t)le32(p + 22);
		if (sw <= 0 || sh == 0 || sh == INT32_MIN)
			return rv_seterr("corrupt BMP: bad image size %dx%d",
			    sw, sh);
		b->w = (uint32_t)sw;
		b->topdown = sh < 0;
		b->h = (uint32_t)(sh < 0 ? -sh : sh);
		b->bpp = le16(p + 28);
		b->comp = le32(p + 30);
		b->npal = le32(p + 46);
		entry = 4;
	}
	if (b->w == 0 || b->h == 0)
		return rv_seterr("corrupt BMP: bad image size %ux%u", b->w,
		    b->h);
	palat = 14 + hs;
	switch (b->comp) {
	case BI_RGB:
		if (b->bpp != 1 && b->bpp != 4 && b->bpp != 8 &&
		    b->bpp != 16 && b->bpp != 24 && b->bpp != 32)
			return rv_seterr("corrupt BMP: %u bits per pixel",
			    b->bpp);
		if (b->bpp == 16) {
			b->mask[0] = 0x7c00;
			b->mask[1] = 0x03e0;
			b->mask[2] = 0x001f;
		} else if (b->bpp == 32) {
			b->mask[0] = 0x00ff0000;
			b->mask[1] = 0x0000ff00;
			b->mask[2] = 0x000000ff;
		}
		break;
	case BI_RLE8:
	case BI_RLE4:
		if (b->bpp != (b->comp == BI_RLE8 ? 8u : 4u))
			return rv_seterr("corrupt BMP: RLE%u with %u bits "
			    "per pixel", b->comp == BI_RLE8 ? 8 : 4, b->bpp);
		if (b->topdown)
			return rv_seterr("corrupt BMP: top-down RLE");
		break;
	case BI_BITFIELDS:
	case BI_ALPHABITFIELDS:
		if (b->bpp != 16 && b->bpp != 32)
			return rv_seterr("corrupt BMP: bit fields with %u "
			    "bits per pixel", b->bpp);
		/* A 40-byte header has the masks after it; later headers
		 * hold them. */
		if (hs == 40) {
			uint32_t k = b->comp == BI_ALPHABITFIELDS ? 16 : 12;

			if (n < (size_t)palat + k)
				return rv_seterr("truncated BMP data");
			palat += k;
		}
		b->mask[0] = le32(p + 54);
		b->mask[1] = le32(p + 58);
		b->mask[2] = le32(p + 62);
		break;
	default:
		return rv_seterr("unsupported BMP compression %u%s", b->comp,
		    b->comp == 4 ? " (JPEG)" : b->comp == 5 ? " (PNG)" : "");
	}
	if (b->bpp <= 8) {
		want = 1u << b->bpp;
		if (b->npal == 0 || b->npal > want)
			b->npal = want;
		/* The palette lies between the headers and the pixels; a
		 * short one leaves the other entries black. */
		if (b->off >= palat && (b->off - palat) / entry < b->npal)
			b->npal = (b->off - palat) / entry;
		if ((size_t)palat + (size_t)b->npal * entry > n)
			return rv_seterr("truncated BMP data");
		b->grey = 1;
		for (i = 0; i < b->npal; i++) {
			const unsigned char *e = p + palat + (size_t)i * entry;

			b->pal[i][0] = e[2];
			b->pal[i][1] = e[1];
			b->pal[i][2] = e[0];
			b->grey &= e[0] == e[1] && e[1] == e[2];
		}
	} else {
		b->npal = 0;
	}
	if (b->off < palat || b->off > n)
		return b->off > n ? rv_seterr("truncated BMP data") :
		    rv_seterr("corrupt BMP: pixel data at %u, inside the "
		    "headers", b->off);
	return 0;
}

/* "BM" alone is two letters of text: the DIB header's size must be one of
 * the known ones too, when it is there. */
static int
sniff(const unsigned char *p, size_t n)
{
	uint32_t k;

	if (n < 2 || p[0] != 'B' || p[1] != 'M')
		return 0;
	k = n >= 18 ? le32(p + 14) : 40;
	return k == 12 || k == 16 || k == 40 || k == 52 || k == 56 ||
	    k == 64 || k == 108 || k == 124;
}

static int
info(struct rv_codec *c, const unsigned char *p, size_t n, uint32_t *h,
    uint32_t *w, uint32_t *ch)
{
	struct bmp b;

	if (parse(p, n, &b) != 0)
		return -1;
	*h = b.h;
	*w = b.w;
	*ch = b.bpp <= 8 && b.grey ? 1 : 3;
	return 0;
}

/* A bit field's value at 8 bits, v * 255 / max truncated as Pillow
 * unpacks 5-5-5 and 5-6-5; an empty mask reads 0. */
struct field {
	uint32_t mask, shift, max;
};

static void
field_init(struct field *f, uint32_t mask)
{
	f->mask = mask;
	f->shift = 0;
	f->max = 0;
	if (mask == 0)
		return;
	while (!(mask >> f->shift & 1))
		f->shift++;
	f->max = mask >> f->shift;
}

static unsigned char
field_get(const struct field *f, uint32_t v)
{
	uint64_t x;

	if (f->max == 0)
		return 0;
	x = (v & f->mask) >> f->shift;
	return (unsigned char)(x * 255 / f->max);
}

/* One pixel of oc bytes (3 or 1), with constant-size copies. */
static inline void
put_px(unsigned char *d, const unsigned char *s, uint32_t oc)
{
	if (oc == 3)
		memcpy(d, s, 3);
	else
		d[0] = s[0];
}

/*
 * Uncompressed rows into dst (top row first) at oc bytes a pixel: 3 (RGB)
 * or 1 (grey, from a palette already reduced to luma, or through row, a
 * w x 3 buffer, for 16, 24 and 32 bits).
 */
static int
rows_plain(const unsigned char *p, size_t n, const struct bmp *b,
    unsigned char *dst, uint32_t oc, unsigned char *row)
{
	uint64_t stride = ((uint64_t)b->w * b->bpp + 31) / 32 * 4;
	struct field f[3];
	uint32_t x, y;
	int k;

	if (stride > (n - b->off) / b->h)
		return rv_seterr("truncated BMP data");
	for (k = 0; k < 3; k++)
		field_init(&f[k], b->mask[k]);
	for (y = 0; y < b->h; y++) {
		const unsigned char *s = p + b->off + (size_t)stride *
		    (b->topdown ? y : b->h - 1 - y);
		unsigned char *o = dst + (size_t)y * b->w * oc;
		unsigned char *d = b->bpp > 8 && oc == 1 ? row : o;
		uint32_t dc = b->bpp > 8 ? 3 : oc;

		for (x = 0; x < b->w; x++, d += dc) {
			uint32_t v, idx;

			switch (b->bpp) {
			case 1:
				idx = s[x >> 3] >> (7 - (x & 7)) & 1;
				put_px(d, b->pal[idx], oc);
				break;
			case 4:
				idx = s[x >> 1] >> (x & 1 ? 0 : 4) & 15;
				put_px(d, b->pal[idx], oc);
				break;
			case 8:
				put_px(d, b->pal[s[x]], oc);
				break;
			case 24:
				d[0] = s[3 * x + 2];
				d[1] = s[3 * x + 1];
				d[2] = s[3 * x];
				break;
			case 16:
				v = le16(s + 2 * (size_t)x);
				for (k = 0; k < 3; k++)
					d[k] = field_get(&f[k], v);
				break;
			default:	/* 32 */
				v = le32(s + 4 * (size_t)x);
				for (k = 0; k < 3; k++)
					d[k] = field_get(&f[k], v);
				break;
			}
		}
		if (b->bpp > 8 && oc == 1)
			rv_rgb_to_grey(o, row, b->w);
	}
	return 0;
}

/*
 * RLE8 or RLE4 into dst (top row first, oc bytes a pixel from the
 * palette), bottom-up as the format is.  Pixels no run reaches keep palette entry 0, as in Pillow; runs
 * past the right edge are clipped, and the data ends at end-of-bitmap,
 * past the top row, or at the end of the file.
 */
static int
rows_rle(const unsigned char *p, size_t n, const struct bmp *b,
    unsigned char *dst, uint32_t oc)
{
	const unsigned char *s = p + b->off, *e = p + n;
	int rle4 = b->comp == BI_RLE4;
	uint32_t x = 0, y = 0;	/* y counts from the bottom row */
	size_t i;

	for (i = 0; i < (size_t)b->w * b->h; i++)
		put_px(dst + oc * i, b->pal[0], oc);

#define PUT(idx) do {							\
	if (x < b->w && y < b->h)					\
		put_px(dst + oc * ((size_t)(b->h - 1 - y) * b->w + x),	\
		    b->pal[(idx)], oc);					\
	x++;								\
} while (0)

	while (y < b->h) {
		uint32_t cnt, k;

		if (e - s < 2)
			return rv_seterr("truncated BMP data");
		cnt = s[0];
		if (cnt > 0) {
			unsigned v = s[1];

			for (k = 0; k < cnt && x < b->w; k++)
				PUT(rle4 ? (k & 1 ? v & 15 : v >> 4) : v);
			s += 2;
			continue;
		}
		switch (s[1]) {
		case 0:		/* end of line */
			x = 0;
			y++;
			s += 2;
			break;
		case 1:		/* end of bitmap */
			return 0;
		case 2:		/* delta */
			if (e - s < 4)
				return rv_seterr("truncated BMP data");
			x += s[2];
			y += s[3];
			s += 4;
			break;
		default: {	/* absolute run, padded to 16 bits */
			size_t bytes;

			cnt = s[1];
			bytes = rle4 ? (cnt + 1) / 2 : cnt;
			bytes += bytes & 1;
			s += 2;
			if ((size_t)(e - s) < bytes)
				return rv_seterr("truncated BMP data");
			for (k = 0; k < cnt; k++)
				PUT(rle4 ? (k & 1 ? s[k / 2] & 15 :
				    s[k / 2] >> 4) : s[k]);
			s += bytes;
			break;
		}
		}
		/* A delta may jump right past the image; x grows by at most
		 * 255 a step, so it cannot wrap. */
		if (x > b->w)
			x = b->w;
	}
#undef PUT
	return 0;
}

static int
decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out)
{
	struct bmp b;
	unsigned char *buf, *row = NULL;
	uint32_t oc = o->channels, i;
	int rc, direct;

	if (parse(p, n, &b) != 0 || rv_check_pixels(b.h, b.w,
	    o->max_pixels) != 0)
		return -1;
	/* Without a resize, straight into out at the output's channels (a
	 * grey palette entry is the luma of its RGB); else RGB in scratch.
	 * Never a second full-size copy. */
	buf = rv_img_direct(out, b.h, b.w, oc, o);
	direct = buf != NULL;
	if (!direct) {
		oc = 3;
		buf = rv_scratch_get(&c->pix, (size_t)b.h * b.w * 3);
	}
	if (oc == 1) {
		unsigned char grey[256];

		rv_rgb_to_grey(grey, &b.pal[0][0], 256);
		for (i = 0; i < 256; i++)
			b.pal[i][0] = grey[i];
		row = rv_scratch_get(&c->rows, (size_t)b.w * 3);
	}
	if (b.comp == BI_RLE8 || b.comp == BI_RLE4)
		rc = rows_rle(p, n, &b, buf, oc);
	else
		rc = rows_plain(p, n, &b, buf, oc, row);
	if (rc != 0)
		return -1;
	if (!direct)
		rv_img_deliver(c, buf, b.h, b.w, 3, o, out);
	return 0;
}

static const char *const exts[] = { "bmp", NULL };

const struct rv_format rv_format_bmp = {
	.name = "BMP", .ext = exts, .dtype = RV_DT_NONE, .sniff = sniff, .info = info,
	.decode = decode, .release = NULL,
};
