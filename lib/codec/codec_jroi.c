/*
 * The window decoder: only the part of a JPEG that a crop keeps, through
 * libjpeg's own API (TurboJPEG 2.1 has no cropping).  Rows above the
 * window are entropy-decoded and skipped (jpeg_skip_scanlines: no IDCT,
 * no upsampling, no colour conversion), columns beside it are never
 * transformed (jpeg_crop_scanline), rows below it are not read at all.
 * The decompressor is set up as TurboJPEG's tjDecompress2 sets up its
 * own (accurate integer IDCT, fancy upsampling, every warning fatal, at
 * most 500 progressive scans), so the pixels are the same.
 *
 * libjpeg's crop and skip are exact inside the decoded area but not at
 * its edges: the chroma upsampler replicates the first and last decoded
 * column (and the first row after a skip) where the full image has a
 * neighbour.  So the area asked for is the window plus MARGIN pixels on
 * every side the image has them, and skips end on an iMCU row boundary
 * (libjpeg-turbo 2.1's skip is not exact when it ends inside a row group).
 * tests/unit/t_jroi.c compares every pixel of many windows against the
 * full decode, for 4:2:0, 4:2:2, 4:4:0, 4:4:4, grey, progressive and
 * restart-interval files.
 */
#include "codec/codec.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "base/err.h"
#include "codec/codec_impl.h"

#define MARGIN		2
#define MAX_SCANS	500	/* TurboJPEG's TJFLAG_LIMITSCANS */

struct jroi {
	struct jpeg_decompress_struct d;
	struct jpeg_error_mgr em;
	struct jpeg_progress_mgr pm;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX];
	int ok;				/* d was created */
};

static void
on_error(j_common_ptr ci)
{
	struct jroi *j = ci->client_data;

	(*ci->err->format_message)(ci, j->msg);
	longjmp(j->jb, 1);
}

/* Warnings (level < 0) are errors, as with TJFLAG_STOPONWARNING; trace
 * messages are dropped. */
static void
on_message(j_common_ptr ci, int level)
{
	if (level < 0)
		on_error(ci);
}

static void
on_progress(j_common_ptr ci)
{
	struct jroi *j = ci->client_data;

	if (j->d.input_scan_number > MAX_SCANS) {
		snprintf(j->msg, sizeof(j->msg), "Progressive JPEG image has "
		    "more than %d scans", MAX_SCANS);
		longjmp(j->jb, 1);
	}
}

static struct jroi *
jroi_get(struct rv_codec *c)
{
	struct jroi *j = c->jroi;

	if (j != NULL)
		return j;
	j = calloc(1, sizeof(*j));
	if (j == NULL) {
		rv_seterr("out of memory");
		return NULL;
	}
	j->d.err = jpeg_std_error(&j->em);
	j->em.error_exit = on_error;
	j->em.emit_message = on_message;
	j->d.client_data = j;
	if (setjmp(j->jb) != 0) {
		rv_seterr("cannot start libjpeg: %s", j->msg);
		free(j);
		return NULL;
	}
	jpeg_create_decompress(&j->d);
	j->ok = 1;
	j->pm.progress_monitor = on_progress;
	c->jroi = j;
	return j;
}

void
rv_jroi_free(struct rv_codec *c)
{
	struct jroi *j = c->jroi;

	if (j == NULL)
		return;
	if (j->ok)
		jpeg_destroy_decompress(&j->d);
	free(j);
	c->jroi = NULL;
}

/* The file ends with its EOI marker (FF D9): not cut short. */
static int
has_eoi(const unsigned char *p, size_t n)
{
	return n >= 4 && p[n - 2] == 0xff && p[n - 1] == 0xd9;
}

static uint32_t
udiv_up(uint32_t a, uint32_t b)
{
	return (uint32_t)(((uint64_t)a + b - 1) / b);
}

/* The decode itself, between the caller's setjmp and its abort. */
static int
decode(struct jroi *j, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, unsigned denom, const uint32_t win[4],
    struct rv_img *out, uint32_t org[2], uint32_t full[2])
{
	struct jpeg_decompress_struct *d = &j->d;
	uint32_t sh, sw, y0, y1, x0, x1, ih, skip, rows, dc;
	JDIMENSION xoff, xw;

	jpeg_mem_src(d, p, (unsigned long)n);
	d->progress = &j->pm;
	jpeg_read_header(d, TRUE);
	full[0] = d->image_height;
	full[1] = d->image_width;
	if (d->image_width == 0 || d->image_height == 0)
		return rv_seterr("corrupt JPEG data: empty image");
	if (rv_check_pixels(d->image_height, d->image_width,
	    o->max_pixels) != 0)
		return -1;
	if (d->jpeg_color_space == JCS_CMYK || d->jpeg_color_space ==
	    JCS_YCCK)
		return 0;
	if ((uint64_t)win[0] + win[2] > d->image_height ||
	    (uint64_t)win[1] + win[3] > d->image_width || win[2] == 0 ||
	    win[3] == 0)
		return rv_seterr("window %ux%u at (%u, %u) outside the %ux%u "
		    "JPEG", win[3], win[2], win[1], win[0], d->image_width,
		    d->image_height);
	if (d->jpeg_color_space == JCS_GRAYSCALE && o->channels == 1) {
		d->out_color_space = JCS_GRAYSCALE;
		dc = 1;
	} else {
		d->out_color_space = JCS_EXT_RGB;
		dc = 3;
	}
	d->scale_num = 1;
	d->scale_denom = denom;
	d->dct_method = JDCT_ISLOW;
	d->do_fancy_upsampling = TRUE;
	jpeg_start_decompress(d);
	sh = d->output_height;
	sw = d->output_width;

	/* The window in scaled pixels, rounded outwards, plus the margin. */
	y0 = win[0] / denom;
	y1 = udiv_up(win[0] + win[2], denom);
	x0 = win[1] / denom;
	x1 = udiv_up(win[1] + win[3], denom);
	y0 = y0 > MARGIN ? y0 - MARGIN : 0;
	x0 = x0 > MARGIN ? x0 - MARGIN : 0;
	y1 = y1 + MARGIN < sh ? y1 + MARGIN : sh;
	x1 = x1 + MARGIN < sw ? x1 + MARGIN : sw;

	xoff = x0;
	xw = x1 - x0;
	if (xoff > 0 || xw < sw)
		jpeg_crop_scanline(d, &xoff, &xw);
	/* Skips end on an iMCU row (max_v_samp_factor rows of blocks). */
	ih = (uint32_t)d->max_v_samp_factor * (uint32_t)d->min_DCT_scaled_size;
	skip = ih > 0 ? y0 / ih * ih : 0;
	if (skip > 0 && jpeg_skip_scanlines(d, skip) != skip)
		return rv_seterr("truncated JPEG data");
	rows = y1 - skip;
	rv_img_reserve(out, rows, (uint32_t)xw, dc);
	while (d->output_scanline < skip + rows) {
		JSAMPROW row = out->data + (size_t)(d->output_scanline - skip) *
		    xw * dc;

		if (jpeg_read_scanlines(d, &row, 1) != 1)
			return rv_seterr("truncated JPEG data");
	}
	out->h = rows;
	out->w = (uint32_t)xw;
	out->c = dc;
	org[0] = skip;
	org[1] = (uint32_t)xoff;
	return 1;
}

/* setjmp's frame: none of its locals changes after the setjmp. */
static int
run(struct jroi *j, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, unsigned denom, const uint32_t win[4],
    struct rv_img *out, uint32_t org[2], uint32_t full[2])
{
	int r;

	if (setjmp(j->jb) != 0) {
		jpeg_abort_decompress(&j->d);
		return rv_jpeg_msg_error(j->msg);
	}
	r = decode(j, p, n, o, denom, win, out, org, full);
	jpeg_abort_decompress(&j->d);
	return r;
}

int
rv_codec_decode_window(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, unsigned denom, const uint32_t win[4],
    struct rv_img *out, uint32_t org[2], uint32_t full[2])
{
	struct jroi *j;
	int r;

	if (denom != 1 && denom != 2 && denom != 4 && denom != 8)
		return rv_seterr("DCT scale 1/%u unsupported", denom);
	if (!rv_format_jpeg.sniff(p, n))
		return 0;
	p = rv_jpeg_drop_junk(c, p, &n);
	if (!has_eoi(p, n))
		return 0;
	if ((j = jroi_get(c)) == NULL)
		return -1;
	r = run(j, p, n, o, denom, win, out, org, full);
	if (r == 1 && out->c == 3 && o->channels == 1)
		rv_img_narrow(out, 1);
	return r;
}
