/*
 * TIFF decoding through libtiff's RGBA interface, from memory: the first
 * image of the file, whatever its layout (strips or tiles, contiguous or
 * planar, 1 to 16 bits, grey, palette, RGB, YCbCr, CMYK, Lab) and
 * compression, as 8-bit RGB with alpha dropped (16-bit samples keep
 * their high byte, as in Pillow).  libtiff's messages go
 * to a handler of this open only (libtiff >= 4.5), so nothing is printed
 * and threads do not share state; its allocations are capped from the
 * pixel limit, so a hostile directory cannot ask for more.
 */
#include "codec/codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <tiffio.h>

#include "base/err.h"
#include "codec/codec_impl.h"
#include "stream/record.h"

struct tiffmem {
	const unsigned char *p;
	uint64_t n, off;
	char msg[200];		/* libtiff's first error */
};

static tmsize_t
t_read(thandle_t h, void *buf, tmsize_t len)
{
	struct tiffmem *m = h;
	uint64_t k;

	if (len <= 0 || m->off >= m->n)
		return 0;
	k = m->n - m->off;
	if ((uint64_t)len < k)
		k = (uint64_t)len;
	memcpy(buf, m->p + m->off, (size_t)k);
	m->off += k;
	return (tmsize_t)k;
}

static tmsize_t
t_write(thandle_t h, void *buf, tmsize_t len)
{
	(void)h;
	(void)buf;
	(void)len;
	return -1;
}

static toff_t
t_seek(thandle_t h, toff_t off, int whence)
{
	struct tiffmem *m = h;
	uint64_t base;

	switch (whence) {
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = m->off; break;
	case SEEK_END: base = m->n; break;
	default: return (toff_t)-1;
	}
	/* toff_t is unsigned: SEEK_CUR back is a wrapped add. */
	m->off = base + off;
	return m->off;
}

static int
t_close(thandle_t h)
{
	(void)h;
	return 0;
}

static toff_t
t_size(thandle_t h)
{
	return ((struct tiffmem *)h)->n;
}

/* The bytes are already in memory: libtiff reads strips in place. */
static int
t_map(thandle_t h, void **base, toff_t *size)
{
	struct tiffmem *m = h;

	*base = (void *)(uintptr_t)m->p;
	*size = m->n;
	return 1;
}

static void
t_unmap(thandle_t h, void *base, toff_t size)
{
	(void)h;
	(void)base;
	(void)size;
}

static int
on_error(TIFF *tif, void *user, const char *module, const char *fmt,
    va_list ap)
{
	struct tiffmem *m = user;

	(void)tif;
	(void)module;
	if (m->msg[0] == '\0')
		vsnprintf(m->msg, sizeof(m->msg), fmt, ap);
	return 1;
}

static int
on_warning(TIFF *tif, void *user, const char *module, const char *fmt,
    va_list ap)
{
	(void)tif;
	(void)user;
	(void)module;
	(void)fmt;
	(void)ap;
	return 1;
}

static int
tiff_fail(const struct tiffmem *m, const char *what)
{
	if (m->msg[0] == '\0')
		return rv_seterr("corrupt TIFF: %s", what);
	/* libtiff says "Read error at row 7, col 0, tile 0; got 2 bytes,
	 * expected 64" and the like for data that stops short. */
	if (strstr(m->msg, "Read error") != NULL ||
	    strstr(m->msg, "Cannot read") != NULL ||
	    strstr(m->msg, "Unexpected end") != NULL ||
	    strstr(m->msg, "past end") != NULL)
		return rv_codec_err("truncated TIFF data", m->msg);
	return rv_codec_err("corrupt TIFF", m->msg);
}

/* Does the header point the first directory past the end of the data?
 * (ImageMagick and others write it after the pixels, so a cut file
 * loses it first.) */
static int
ifd_cut(const unsigned char *p, uint64_t n)
{
	uint64_t off = 0;
	int le = p[0] == 'I', big = (le ? p[2] : p[3]) == 43, k;
	int len = big ? 8 : 4, at = big ? 8 : 4;

	if (n < (uint64_t)at + len)
		return 1;
	for (k = 0; k < len; k++)
		off |= (uint64_t)p[at + (le ? k : len - 1 - k)] << (8 * k);
	return off >= n || n - off < (big ? 8u : 2u);
}

/* Open from memory; NULL with errmsg set on failure. */
static TIFF *
open_mem(struct tiffmem *m, uint64_t max_pixels)
{
	TIFFOpenOptions *opts;
	TIFF *tif;
	uint64_t cap;

	if ((opts = TIFFOpenOptionsAlloc()) == NULL) {
		rv_seterr("cannot start libtiff");
		return NULL;
	}
	/* 8 bytes a pixel (4 samples of 16 bits) in one strip, plus room
	 * for the directories. */
	if (max_pixels == 0)
		max_pixels = RV_MAX_PIXELS_DEFAULT;
	cap = max_pixels > (UINT64_MAX >> 5) ? UINT64_MAX >> 4 :
	    max_pixels * 8 + ((uint64_t)16 << 20);
	if (cap > (uint64_t)INT64_MAX)
		cap = (uint64_t)INT64_MAX;
	TIFFOpenOptionsSetMaxSingleMemAlloc(opts, (tmsize_t)cap);
	TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, m);
	TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, m);
	tif = TIFFClientOpenExt("tiff", "r", (thandle_t)m, t_read, t_write,
	    t_seek, t_close, t_size, t_map, t_unmap, opts);
	TIFFOpenOptionsFree(opts);
	if (tif == NULL) {
		if (ifd_cut(m->p, m->n))
			rv_seterr("truncated TIFF data");
		else
			tiff_fail(m, "cannot read the header");
	}
	return tif;
}

static int
tiff_size(TIFF *tif, const struct tiffmem *m, uint32_t *h, uint32_t *w)
{
	if (TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, w) != 1 ||
	    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, h) != 1)
		return tiff_fail(m, "no image size");
	if (*w == 0 || *h == 0)
		return rv_seterr("corrupt TIFF: bad image size %ux%u", *w, *h);
	return 0;
}

/* Classic TIFF (42) and BigTIFF (43), either byte order. */
static int
sniff(const unsigned char *p, size_t n)
{
	return n >= 4 && ((p[0] == 'I' && p[1] == 'I' && (p[2] == 42 ||
	    p[2] == 43) && p[3] == 0) || (p[0] == 'M' && p[1] == 'M' &&
	    p[2] == 0 && (p[3] == 42 || p[3] == 43)));
}

static int
info(struct rv_codec *c, const unsigned char *p, size_t n, uint32_t *h,
    uint32_t *w, uint32_t *ch)
{
	struct tiffmem m = { p, n, 0, "" };
	uint16_t photo = 0, spp = 1, extra = 0, *extras = NULL;
	TIFF *tif;
	int rc;

	if ((tif = open_mem(&m, 0)) == NULL)
		return -1;
	rc = tiff_size(tif, &m, h, w);
	TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
	TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &extra, &extras);
	if (TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photo) != 1)
		photo = spp - extra == 1 ? PHOTOMETRIC_MINISBLACK :
		    PHOTOMETRIC_RGB;
	*ch = (photo == PHOTOMETRIC_MINISBLACK ||
	    photo == PHOTOMETRIC_MINISWHITE) && spp - extra == 1 ? 1 : 3;
	TIFFClose(tif);
	return rc;
}

/*
 * libtiff's RGBA reader premultiplies unassociated alpha into the colour;
 * rv drops alpha and keeps the stored colours (as for PNG and WebP, and
 * as Pillow's convert("RGB") does), so the first extra sample is declared
 * associated (stored as is) on the in-memory directory before the reader
 * starts.  Nothing is written back.
 */
static int
keep_colours(TIFF *tif)
{
	uint16_t n = 0, *info = NULL, v[64];

	if (TIFFGetField(tif, TIFFTAG_EXTRASAMPLES, &n, &info) != 1 ||
	    n == 0 || info == NULL || info[0] != EXTRASAMPLE_UNASSALPHA)
		return 0;
	if (n > 64)
		return rv_seterr("unsupported TIFF: %u extra samples", n);
	memcpy(v, info, n * sizeof(*v));
	v[0] = EXTRASAMPLE_ASSOCALPHA;
	return TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, n, v) == 1 ? 0 :
	    rv_seterr("corrupt TIFF: bad extra samples");
}

static int
decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out)
{
	struct tiffmem m = { p, n, 0, "" };
	TIFFRGBAImage img;
	char emsg[1024];
	uint32_t h, w, *raster;
	unsigned char *rgb;
	size_t i, px;
	TIFF *tif;
	int ok, direct;

	if ((tif = open_mem(&m, o->max_pixels)) == NULL)
		return -1;
	if (tiff_size(tif, &m, &h, &w) != 0 ||
	    rv_check_pixels(h, w, o->max_pixels) != 0 ||
	    keep_colours(tif) != 0) {
		TIFFClose(tif);
		return -1;
	}
	emsg[0] = '\0';
	if (!TIFFRGBAImageOK(tif, emsg) ||
	    !TIFFRGBAImageBegin(&img, tif, 1, emsg)) {
		TIFFClose(tif);
		if (m.msg[0] == '\0')
			return rv_codec_err("unsupported TIFF", emsg);
		return tiff_fail(&m, emsg);
	}
	/* 16-bit samples to 8 by their high byte, as Pillow does, not by
	 * libtiff's rounding; rows top first. */
	if (img.Bitdepth16To8 != NULL)
		for (i = 0; i < 65536; i++)
			img.Bitdepth16To8[i] = (uint8_t)(i >> 8);
	img.req_orientation = ORIENTATION_TOPLEFT;
	px = (size_t)h * w;
	/* Without a resize the raster is out's own buffer, narrowed in place
	 * below: 4 bytes a pixel in all, never a second full-size copy. */
	raster = (uint32_t *)(void *)rv_img_direct(out, h, w, 4, o);
	direct = raster != NULL;
	if (!direct)
		raster = rv_scratch_get(&c->pix, px * 4);
	ok = img.width == w && img.height == h &&
	    TIFFRGBAImageGet(&img, raster, w, h);
	TIFFRGBAImageEnd(&img);
	TIFFClose(tif);
	if (!ok)
		return tiff_fail(&m, "cannot read the image");
	/* ABGR words (TIFFGetR: the low byte) to RGB bytes, in place:
	 * byte 3i+k is written after word i was read. */
	rgb = (unsigned char *)raster;
	for (i = 0; i < px; i++) {
		uint32_t v = raster[i];

		rgb[3 * i] = (unsigned char)TIFFGetR(v);
		rgb[3 * i + 1] = (unsigned char)TIFFGetG(v);
		rgb[3 * i + 2] = (unsigned char)TIFFGetB(v);
	}
	if (direct) {
		out->c = 3;
		rv_img_narrow(out, o->channels);
	} else {
		rv_img_deliver(c, rgb, h, w, 3, o, out);
	}
	return 0;
}

static const char *const exts[] = { "tif", "tiff", NULL };

const struct rv_format rv_format_tiff = {
	.name = "TIFF", .ext = exts, .dtype = RV_DT_NONE, .sniff = sniff, .info = info,
	.decode = decode, .release = NULL,
};
