/*
 * PNG decoding through libpng's classic API, which (unlike the simplified
 * one) can drop alpha without compositing and skip gamma handling, so the
 * pixels are the file's own, as ImageMagick and Pillow give them.  Every
 * layout becomes 8-bit grey or RGB; any damage, truncation or CRC error
 * is an error.
 */
#include "codec/codec.h"

#include <png.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "base/err.h"
#include "codec/codec_impl.h"
#include "stream/record.h"

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/*
 * The IHDR, read by hand: the size is known (and refused if too large)
 * before libpng allocates anything.  *ch is what a decode keeps: 1 for
 * grey and grey+alpha, 3 for palette, RGB and RGBA.
 *
 * A side over RV_PNG_MAX_SIDE is refused here, for info() as for a
 * decode: libpng spends about 60 ns on every row whatever its width (a
 * 1 x 178000000 image, under the pixel limit, took 11 s where a square
 * one of as many pixels takes 0.1 s), and its row buffers grow with the
 * width at up to 6 bytes a pixel besides the image.
 */
static int
ihdr(const unsigned char *p, size_t n, uint32_t *h, uint32_t *w,
    uint32_t *ch)
{
	if (n < 33)
		return rv_seterr("truncated PNG data");
	if (be32(p + 8) != 13 || memcmp(p + 12, "IHDR", 4) != 0)
		return rv_seterr("corrupt PNG: IHDR not first");
	if (crc32(0, p + 12, 17) != be32(p + 29))
		return rv_seterr("corrupt PNG: CRC error");
	*w = be32(p + 16);
	*h = be32(p + 20);
	if (*w == 0 || *h == 0 || *w > PNG_UINT_31_MAX || *h > PNG_UINT_31_MAX)
		return rv_seterr("corrupt PNG: bad image size %ux%u", *w, *h);
	if (*w > RV_PNG_MAX_SIDE || *h > RV_PNG_MAX_SIDE)
		return rv_seterr("image is %ux%u, over the PNG side limit of "
		    "%u pixels", *w, *h, RV_PNG_MAX_SIDE);
	switch (p[25]) {
	case PNG_COLOR_TYPE_GRAY:
	case PNG_COLOR_TYPE_GRAY_ALPHA:
		*ch = 1;
		break;
	case PNG_COLOR_TYPE_RGB:
	case PNG_COLOR_TYPE_PALETTE:
	case PNG_COLOR_TYPE_RGB_ALPHA:
		*ch = 3;
		break;
	default:
		return rv_seterr("corrupt PNG: bad colour type %d", p[25]);
	}
	return 0;
}

static int
sniff(const unsigned char *p, size_t n)
{
	static const unsigned char sig[8] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'
	};

	return n >= sizeof(sig) && memcmp(p, sig, sizeof(sig)) == 0;
}

static int
info(struct rv_codec *c, const unsigned char *p, size_t n, uint32_t *h,
    uint32_t *w, uint32_t *ch)
{
	return ihdr(p, n, h, w, ch);
}

static void
read_mem(png_structp png, png_bytep data, size_t len)
{
	struct rv_pngio *io = png_get_io_ptr(png);

	if (len > io->n - io->off) {
		io->truncated = 1;
		png_error(png, "truncated");
	}
	memcpy(data, io->p + io->off, len);
	io->off += len;
}

static void
on_error(png_structp png, png_const_charp msg)
{
	struct rv_pngio *io = png_get_error_ptr(png);

	snprintf(io->msg, sizeof(io->msg), "%s", msg);
	png_longjmp(png, 1);
}

/* The library never prints; recoverable oddities are not errors. */
static void
on_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

/* libpng's message in our words ("corrupt PNG: not enough image data"). */
static int
png_fail(const struct rv_pngio *io)
{
	if (io->truncated)
		return rv_seterr("truncated PNG data");
	return rv_codec_err("corrupt PNG", io->msg);
}

/*
 * Every chunk's length and CRC, up to IEND, before any decoding: libpng
 * inflates an IDAT before it reaches the CRC, so a damaged one would read
 * as some zlib complaint; here it is "CRC error", and truncation anywhere
 * is "truncated".  libpng is then spared computing the CRCs again.
 */
static int
check_chunks(const unsigned char *p, size_t n)
{
	size_t off = 8;
	uint32_t len;

	for (;;) {
		if (n - off < 12)
			return rv_seterr("truncated PNG data");
		len = be32(p + off);
		if (len > PNG_UINT_31_MAX)
			return rv_seterr("corrupt PNG: bad chunk length");
		if (n - off - 12 < len)
			return rv_seterr("truncated PNG data");
		if (crc32(0, p + off + 4, len + 4) != be32(p + off + 8 + len))
			return rv_seterr("corrupt PNG: CRC error");
		if (memcmp(p + off + 4, "IEND", 4) == 0)
			return 0;
		off += 12 + (size_t)len;
	}
}

static int
decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out)
{
	struct rv_pngio *io = &c->png;
	png_structp png;
	png_infop info;
	unsigned char *buf;
	uint32_t h, w, ch, th, tw, dc, y;
	int direct, npass, pass;

	if (ihdr(p, n, &h, &w, &ch) != 0 ||
	    rv_check_pixels(h, w, o->max_pixels) != 0 ||
	    check_chunks(p, n) != 0)
		return -1;
	rv_fit_max_side(h, w, o->max_side, &th, &tw);

	io->p = p;
	io->n = n;
	io->off = 0;
	io->truncated = 0;
	io->msg[0] = '\0';
	png = png_create_read_struct(PNG_LIBPNG_VER_STRING, io, on_error,
	    on_warning);
	if (png == NULL)
		return rv_seterr("cannot start libpng");
	info = png_create_info_struct(png);
	if (info == NULL) {
		png_destroy_read_struct(&png, NULL, NULL);
		return rv_seterr("cannot start libpng");
	}
	/* Only png and info, set above and never changed, are used after a
	 * longjmp; the rest of the state is in the codec (heap). */
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_read_struct(&png, &info, NULL);
		return png_fail(io);
	}
	png_set_read_fn(png, io, read_mem);
	png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
	/* Our own check came first, with libpng's default as its limit. */
	png_set_user_limits(png, RV_PNG_MAX_SIDE, RV_PNG_MAX_SIDE);
	png_read_info(png, info);

	/*
	 * To 8-bit grey or RGB: palette and low bit depths expanded, 16 bits
	 * rounded to the nearest 8-bit value, v * 255 / 65535 (Pillow takes
	 * the high byte, ImageMagick 6 truncates v / 257), alpha and tRNS
	 * dropped, no gamma.  Grey for an RGB output is replicated by libpng
	 * when no resize follows (one pass less).
	 */
	png_set_expand(png);
	png_set_scale_16(png);
	png_set_strip_alpha(png);
	if (ch == 1 && o->channels == 3 && th == h && tw == w)
		png_set_gray_to_rgb(png);
	npass = png_set_interlace_handling(png);
	png_read_update_info(png, info);
	dc = png_get_channels(png, info);
	if (png_get_bit_depth(png, info) != 8 || (dc != 1 && dc != 3) ||
	    png_get_rowbytes(png, info) != (size_t)w * dc)
		png_error(png, "Unexpected pixel layout after transforms");

	/*
	 * Without a resize the image goes straight into out, never through
	 * a second full-size copy: whole when the channels agree; RGB for a
	 * grey output row by row through one row of scratch, or, interlaced
	 * (its passes need the whole image), whole at 3 bytes a pixel and
	 * narrowed in place.  A resize reads the image whole into scratch.
	 * Rows are read one by one, each pass over every row for an
	 * interlaced image as png_read_image() does, but with no array of
	 * row pointers: 8 bytes a row, which for a thin image is many
	 * times the pixels.
	 */
	buf = rv_img_direct(out, h, w, dc, o);
	direct = buf != NULL;
	if (direct && dc != o->channels &&
	    png_get_interlace_type(png, info) == PNG_INTERLACE_NONE) {
		unsigned char *row = rv_scratch_get(&c->rows, (size_t)w * dc);

		for (y = 0; y < h; y++) {
			png_read_row(png, row, NULL);
			rv_rgb_to_grey(buf + (size_t)y * w, row, w);
		}
		out->c = o->channels;
	} else {
		if (!direct)
			buf = rv_scratch_get(&c->pix, (size_t)h * w * dc);
		for (pass = 0; pass < npass; pass++)
			for (y = 0; y < h; y++)
				png_read_row(png, buf + (size_t)y * w * dc,
				    NULL);
	}
	/* On to IEND, so damage after the image data is found too. */
	png_read_end(png, NULL);
	png_destroy_read_struct(&png, &info, NULL);

	if (direct)
		rv_img_narrow(out, o->channels);
	else
		rv_img_finish(buf, h, w, dc, o->channels, th, tw, out, &c->rs);
	return 0;
}

static const char *const exts[] = { "png", NULL };

const struct rv_format rv_format_png = {
	.name = "PNG", .ext = exts, .dtype = RV_DT_PNG, .sniff = sniff, .info = info,
	.decode = decode, .release = NULL,
};
