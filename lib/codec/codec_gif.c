/*
 * GIF decoding through giflib's line API: the first frame only, as
 * Pillow's Image.open() gives it, drawn on the logical screen (grown to
 * hold the frame if the frame overhangs it) filled with the background
 * colour.  Transparency is ignored, like PNG alpha: a transparent pixel
 * shows its palette colour.  Nothing past the first frame is read.
 */
#include "codec/codec.h"

#include <gif_lib.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "codec/codec_impl.h"
#include "stream/record.h"

struct gifmem {
	const unsigned char *p;
	size_t n, off;
};

static int
gif_read(GifFileType *g, GifByteType *buf, int len)
{
	struct gifmem *m = g->UserData;
	size_t k = len > 0 ? (size_t)len : 0;

	if (k > m->n - m->off)
		k = m->n - m->off;
	memcpy(buf, m->p + m->off, k);
	m->off += k;
	return (int)k;
}

/* giflib's error code in our words; any failure once the data has run
 * out is the truncation. */
static int
gif_err(const struct gifmem *m, int code)
{
	const char *s;

	if (m->off >= m->n && code != D_GIF_ERR_NOT_GIF_FILE)
		return rv_seterr("truncated GIF data");
	switch (code) {
	case D_GIF_ERR_READ_FAILED:
		return rv_seterr("truncated GIF data");
	case D_GIF_ERR_NOT_ENOUGH_MEM:
		return rv_seterr("corrupt GIF: out of memory");
	case D_GIF_ERR_NO_IMAG_DSCR:
		return rv_seterr("corrupt GIF: no image in the file");
	}
	s = GifErrorString(code);
	return rv_codec_err("corrupt GIF", s ? s : "unknown error");
}

/*
 * Open the GIF and read up to the first frame's descriptor, skipping
 * extensions; the canvas size in *h, *w.  Returns the open file, or NULL
 * with errmsg set.
 */
static GifFileType *
open_first(struct gifmem *m, uint32_t *h, uint32_t *w)
{
	GifFileType *g;
	GifRecordType rt;
	GifByteType *ext;
	int err = 0, code;

	if ((g = DGifOpen(m, gif_read, &err)) == NULL) {
		gif_err(m, err);
		return NULL;
	}
	for (;;) {
		if (DGifGetRecordType(g, &rt) != GIF_OK)
			goto fail;
		if (rt == IMAGE_DESC_RECORD_TYPE)
			break;
		if (rt == TERMINATE_RECORD_TYPE) {
			g->Error = D_GIF_ERR_NO_IMAG_DSCR;
			goto fail;
		}
		if (rt != EXTENSION_RECORD_TYPE) {
			g->Error = D_GIF_ERR_WRONG_RECORD;
			goto fail;
		}
		if (DGifGetExtension(g, &code, &ext) != GIF_OK)
			goto fail;
		while (ext != NULL)
			if (DGifGetExtensionNext(g, &ext) != GIF_OK)
				goto fail;
	}
	if (DGifGetImageDesc(g) != GIF_OK)
		goto fail;
	if (g->Image.Width <= 0 || g->Image.Height <= 0 ||
	    g->Image.Left < 0 || g->Image.Top < 0) {
		rv_seterr("corrupt GIF: bad frame size %dx%d",
		    g->Image.Width, g->Image.Height);
		DGifCloseFile(g, &err);
		return NULL;
	}
	/* Both are 16-bit fields: no overflow. */
	*w = (uint32_t)g->Image.Left + (uint32_t)g->Image.Width;
	*h = (uint32_t)g->Image.Top + (uint32_t)g->Image.Height;
	if (g->SWidth > 0 && (uint32_t)g->SWidth > *w)
		*w = (uint32_t)g->SWidth;
	if (g->SHeight > 0 && (uint32_t)g->SHeight > *h)
		*h = (uint32_t)g->SHeight;
	return g;
fail:
	gif_err(m, g->Error);
	DGifCloseFile(g, &err);
	return NULL;
}

static int
sniff(const unsigned char *p, size_t n)
{
	return n >= 6 && (memcmp(p, "GIF87a", 6) == 0 ||
	    memcmp(p, "GIF89a", 6) == 0);
}

static int
info(struct rv_codec *c, const unsigned char *p, size_t n, uint32_t *h,
    uint32_t *w, uint32_t *ch)
{
	struct gifmem m = { p, n, 0 };
	GifFileType *g;
	int err;

	if ((g = open_first(&m, h, w)) == NULL)
		return -1;
	DGifCloseFile(g, &err);
	*ch = 3;
	return 0;
}

static int
decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out)
{
	/* First row and step of the four interlace passes, then of the
	 * one pass of a plain frame. */
	static const uint32_t start[5] = { 0, 4, 2, 1, 0 };
	static const uint32_t step[5] = { 8, 8, 4, 2, 1 };
	struct gifmem m = { p, n, 0 };
	unsigned char pal[256][3], bg[3] = { 0, 0, 0 }, *canvas, *line;
	const ColorMapObject *cm;
	GifFileType *g;
	uint32_t h, w, fw, fh, fl, ft, y, x, pass, last, oc;
	size_t i;
	int err, k, direct;

	if ((g = open_first(&m, &h, &w)) == NULL)
		return -1;
	if (rv_check_pixels(h, w, o->max_pixels) != 0) {
		DGifCloseFile(g, &err);
		return -1;
	}
	fw = (uint32_t)g->Image.Width;
	fh = (uint32_t)g->Image.Height;
	fl = (uint32_t)g->Image.Left;
	ft = (uint32_t)g->Image.Top;
	/* The frame's palette, else the global one, else a grey ramp;
	 * indices past the palette's end are black. */
	memset(pal, 0, sizeof(pal));
	cm = g->Image.ColorMap ? g->Image.ColorMap : g->SColorMap;
	if (cm && cm->Colors) {
		for (k = 0; k < cm->ColorCount && k < 256; k++) {
			pal[k][0] = cm->Colors[k].Red;
			pal[k][1] = cm->Colors[k].Green;
			pal[k][2] = cm->Colors[k].Blue;
		}
	} else {
		for (k = 0; k < 256; k++)
			pal[k][0] = pal[k][1] = pal[k][2] = (unsigned char)k;
	}
	if (g->SColorMap && g->SColorMap->Colors && g->SBackGroundColor >= 0 &&
	    g->SBackGroundColor < g->SColorMap->ColorCount) {
		const GifColorType *b =
		    &g->SColorMap->Colors[g->SBackGroundColor];
		bg[0] = b->Red;
		bg[1] = b->Green;
		bg[2] = b->Blue;
	}

	/*
	 * Without a resize the canvas is out itself, at the output's
	 * channels: for grey, the palette is reduced to its luma first, so
	 * a pixel is one byte from the start (the same value as the luma of
	 * its RGB).  Never a second full-size copy.
	 */
	oc = o->channels;
	canvas = rv_img_direct(out, h, w, oc, o);
	direct = canvas != NULL;
	if (!direct) {
		oc = 3;
		canvas = rv_scratch_get(&c->pix, (size_t)h * w * 3);
	} else if (oc == 1) {
		unsigned char grey[256];

		rv_rgb_to_grey(grey, &pal[0][0], 256);
		for (k = 0; k < 256; k++)
			pal[k][0] = grey[k];
		rv_rgb_to_grey(bg, bg, 1);
	}
	line = rv_scratch_get(&c->rows, fw);
	if (fw != w || fh != h)
		for (i = 0; i < (size_t)h * w; i++)
			memcpy(canvas + oc * i, bg, oc);
	last = g->Image.Interlace ? 3 : 4;
	for (pass = g->Image.Interlace ? 0 : 4; pass <= last; pass++) {
		for (y = start[pass]; y < fh; y += step[pass]) {
			if (DGifGetLine(g, line, (int)fw) != GIF_OK) {
				gif_err(&m, g->Error);
				DGifCloseFile(g, &err);
				return -1;
			}
			unsigned char *d = canvas + oc * ((size_t)(ft + y) *
			    w + fl);

			/* Constant sizes, so the copies are inlined. */
			if (oc == 3)
				for (x = 0; x < fw; x++)
					memcpy(d + 3 * x, pal[line[x]], 3);
			else
				for (x = 0; x < fw; x++)
					d[x] = pal[line[x]][0];
		}
	}
	DGifCloseFile(g, &err);
	if (!direct)
		rv_img_deliver(c, canvas, h, w, 3, o, out);
	return 0;
}

static const char *const exts[] = { "gif", NULL };

const struct rv_format rv_format_gif = {
	.name = "GIF", .ext = exts, .dtype = RV_DT_NONE, .sniff = sniff, .info = info,
	.decode = decode, .release = NULL,
};
